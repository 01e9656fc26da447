//! Embeddings: `POST /v1/embeddings` (OpenAI's shape) and Gemini's
//! `models/{model}:embedContent` / `:batchEmbedContents`, behind the gateway's keys,
//! models, rates, in-flight caps and budgets like a model call. An OpenAI client of an
//! OpenAI-shaped backend is passed through (its bytes, the model id spliced in, the
//! provider's bytes back); every other pair is translated through the canonical request
//! (a Gemini-family backend is always called with `batchEmbedContents`), the reply
//! written in the client's shape and, for OpenAI, the encoding it asked (base64 of
//! little-endian `f32`s, or floats). Metered and recorded with the input tokens and
//! their cost; a provider that reports no usage (Gemini's developer API) is billed an
//! estimate, said so in the record.
//!
//! The path mirrors `call.rs` step for step rather than sharing it: an embedding has no
//! stream, no dialect target and no translation of history, and keeping it apart leaves
//! the chat path as it was.

use crate::call::cache_hit::EmbedLookup;
use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::raw::RawBody;
use crate::state::State;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;
use std::time::Instant;
use switchyard::backend::http::RawRequest;
use switchyard::embed::{Embedder, HttpEmbedder};
use switchyard::record::EmbedRecord;
use switchyard::registry::Price;
use switchyard::wire::embed::{
    gemini, openai, EmbedRequest, EmbedShape, Embeddings, EncodingFormat,
};
use switchyard::{Dialect, Llm, Usage};

/// Where one embeddings call goes.
pub(crate) struct EmbedTarget {
    /// The backend's name.
    pub backend: String,
    /// The model id on the backend.
    pub model: String,
    /// `<backend>/<model>`.
    pub reference: String,
    /// The backend's embeddings URL and credential.
    pub embedder: HttpEmbedder,
    /// A handle with the gateway's retry policy, for `Llm::retrying`.
    pub llm: Llm,
    /// The model's price, when known.
    pub price: Option<Price>,
}

/// Who is asking, in which shape.
#[derive(Debug, Clone)]
pub(crate) enum Client {
    /// `POST /v1/embeddings`.
    Openai,
    /// Gemini's routes: the model from the path, and whether it is `:embedContent` (one
    /// input) rather than `:batchEmbedContents`.
    Gemini {
        /// The model named in the path.
        model: String,
        /// `:embedContent`.
        single: bool,
    },
}

impl Client {
    /// The dialect whose error shape the client reads.
    fn dialect(&self) -> Dialect {
        match self {
            Client::Openai => Dialect::Chat,
            Client::Gemini { .. } => Dialect::Gemini,
        }
    }

    /// The model asked for and the canonical request.
    fn decode(&self, bytes: &[u8]) -> Result<(String, EmbedRequest), ApiError> {
        let bad =
            |e: switchyard::wire::DecodeError| ApiError::new(Category::BadRequest, e.to_string());
        match self {
            Client::Openai => openai::decode_request(bytes)
                .map(|d| (d.model, d.request))
                .map_err(bad),
            Client::Gemini {
                model,
                single: true,
            } => gemini::decode_single_request(bytes)
                .map(|r| (model.clone(), r))
                .map_err(bad),
            Client::Gemini {
                model,
                single: false,
            } => gemini::decode_batch_request(bytes)
                .map(|r| (model.clone(), r))
                .map_err(bad),
        }
    }

    /// The reply in the client's shape.
    fn encode(&self, embeddings: &Embeddings, request: &EmbedRequest, requested: &str) -> Bytes {
        match self {
            Client::Openai => openai::encode_reply(
                embeddings,
                request.encoding_format.unwrap_or(EncodingFormat::Float),
                requested,
            ),
            Client::Gemini { single: true, .. } => gemini::encode_single_reply(embeddings),
            Client::Gemini { single: false, .. } => gemini::encode_batch_reply(embeddings),
        }
    }
}

/// Serves one embeddings request from `client`.
pub(crate) async fn handle(state: Arc<State>, client: Client, request: Request) -> Response {
    let dialect = client.dialect();
    let mut meter = Meter::new(state.clone(), dialect, Instant::now());
    meter.set_headers(request.headers());
    match run(&state, &client, request, &mut meter).await {
        Ok(response) => response,
        Err(e) => crate::call::refused(e, dialect, &mut meter),
    }
}

async fn run(
    state: &Arc<State>,
    client: &Client,
    request: Request,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let key = crate::call::authenticate(state, &parts, meter)?;
    let bytes = crate::call::request_body::read(body, &parts.headers, state).await?;
    meter.set_client_body(&bytes);
    let (requested, request) = client.decode(&bytes)?;
    meter.set_requested(&requested);
    let router = state.upstreams.router(&requested).cloned();
    // What the call is cached and limited under: the route's name, or the reference.
    let (name, targets) = match &router {
        Some(router) => {
            let route = router.route();
            let targets = route
                .members
                .iter()
                .map(|m| {
                    let reference = state
                        .upstreams
                        .registry()
                        .require_reference(&m.reference)
                        .map_err(|e| ApiError::new(Category::NotFound, e.to_string()))?;
                    state.upstreams.embed_target(&reference)
                })
                .collect::<Result<Vec<_>, ApiError>>()?;
            meter.draft().route = Some(route.name.clone());
            (route.name.clone(), targets)
        }
        None => {
            let reference = state.upstreams.resolve(&requested)?;
            let target = state.upstreams.embed_target(&reference)?;
            (reference.to_string(), vec![target])
        }
    };
    if let Some(key) = &key {
        crate::call::check_model(key, &requested, &name)?;
    }
    meter.set_embed_target(&targets[0]);
    crate::call::admit(state, key.as_deref()).await?;
    match crate::call::cache_hit::embedding(state, &name, &request).await {
        Some(EmbedLookup::Hit(record, call)) => {
            meter.draft().cache_hit_call = call;
            return Ok(answer_hit(client, &request, &requested, *record, meter));
        }
        Some(EmbedLookup::Miss(Some(k))) => meter.set_cache_key(k),
        _ => {}
    }
    if let Some(key) = &key {
        crate::call::enter(key, meter)?;
        if let Some(budget) = &key.budget {
            // An embedding's whole cost is its input: no output to reserve for. Through
            // a route, the dearest member's (unknown when any member has no price).
            let bounds: Option<Vec<_>> = targets
                .iter()
                .map(|t| {
                    t.price.as_ref().map(|p| {
                        crate::account::budgets::CallBound::new(p, bytes.len(), Some(0), Some(0))
                    })
                })
                .collect();
            let dearest = bounds.and_then(|b| b.into_iter().max_by(|x, y| x.usd.total_cmp(&y.usd)));
            meter.set_reservation(
                crate::account::budgets::hold(state, key, budget, &name, dearest).await?,
                dearest,
            );
        }
    }
    let order = match &router {
        Some(router) => {
            crate::call::failover::plan(router, state.upstreams.sleeper().as_ref(), meter).await?
        }
        None => vec![0],
    };
    let mut attempts = Vec::new();
    let mut last_error = None;
    for (k, i) in order.iter().copied().enumerate() {
        let target = &targets[i];
        meter.set_embed_target(target);
        let _busy = router.as_ref().map(|r| r.enter(i));
        let call = Embedding {
            client,
            bytes: &bytes,
            request: &request,
            requested: &requested,
        };
        match call
            .on(target, router.is_some(), &mut attempts, meter)
            .await
        {
            Ok(response) => return Ok(response),
            Err(e) => {
                let more = k + 1 < order.len();
                if more && router.as_ref().is_some_and(|r| r.failed(i, &e)) {
                    tracing::warn!(
                        route = %name,
                        member = %target.reference,
                        kind = e.kind().as_str(),
                        "route {name}: {} failed ({}); trying the next member: {e}",
                        target.reference,
                        e.kind()
                    );
                    last_error = Some(e);
                    continue;
                }
                if !more {
                    if let Some(r) = &router {
                        r.failed(i, &e);
                    }
                }
                return Err(failed(meter, e));
            }
        }
    }
    let e = last_error.unwrap_or_else(|| {
        switchyard::Error::Unsupported(format!("route `{name}` has no member to try"))
    });
    Err(failed(meter, e))
}

/// An upstream failure noted on the meter and its record, answered.
fn failed(meter: &mut Meter, e: switchyard::Error) -> ApiError {
    meter.outcome(0, Some(e.kind().as_str().to_string()));
    let draft = meter.draft();
    if let Some(d) = e.provider_details() {
        draft.keep(&d.body);
    }
    draft.error = Some(switchyard::record::ErrorRecord::new(&e));
    ApiError::from_upstream(&e)
}

/// One embeddings call, as the client asked it.
struct Embedding<'a> {
    client: &'a Client,
    bytes: &'a Bytes,
    request: &'a EmbedRequest,
    requested: &'a str,
}

impl Embedding<'_> {
    /// The call made on `target` under its retries, its attempts added to `attempts`
    /// (named by member when `routed`); the answer, or the error after the retries.
    async fn on(
        &self,
        target: &EmbedTarget,
        routed: bool,
        attempts: &mut Vec<switchyard::record::AttemptRecord>,
        meter: &mut Meter,
    ) -> Result<Response, switchyard::Error> {
        let (client, request) = (self.client, self.request);
        let shape = target.embedder.shape();
        let passthrough = matches!(client, Client::Openai) && shape == EmbedShape::Openai;
        let upstream_body = match passthrough {
            true => passthrough_body(self.bytes, &target.model)
                .map_err(|e| switchyard::Error::Unsupported(e.message))?,
            false => target.embedder.encode_body(request, &target.model)?,
        };
        meter.set_sent_body(Some(upstream_body.clone()));
        meter.draft().embedding = Some(EmbedRecord {
            shape,
            request: request.clone(),
        });
        meter.sent();
        let inputs = request.input.len();
        let http = target.embedder.http().clone();
        let url = target.embedder.url().clone();
        let outcome = target
            .llm
            .retrying(|| {
                let (http, url, body) = (http.clone(), url.clone(), upstream_body.clone());
                async move {
                    let response = http.send_raw_to(url, &RawRequest::new(body, false)).await?;
                    let headers = response.header_pairs();
                    let raw = response.bytes().await?;
                    let decoded = switchyard::embed::decode_reply(
                        http.config().name.as_str(),
                        shape,
                        &headers,
                        raw.clone(),
                        inputs,
                    )?;
                    Ok((raw, decoded))
                }
            })
            .await;
        meter.answered();
        let first = attempts.len() as u32;
        for mut a in crate::store::attempt_records(&outcome.attempts) {
            a.number += first;
            if routed {
                a.reference = Some(target.reference.clone());
            }
            attempts.push(a);
        }
        meter.draft().attempts = attempts.clone();
        let (raw, embeddings) = outcome.result?;
        meter.draft().keep(&raw);
        let usage = match embeddings.input_tokens {
            Some(input) => Usage {
                input,
                ..Usage::default()
            },
            None => {
                let chars = request.input.size();
                meter.draft().usage_estimated = Some(format!(
                    "input estimated from the {chars} characters embedded (÷ 4): the provider reported no usage"
                ));
                Usage {
                    input: (chars as u64).div_ceil(4),
                    ..Usage::default()
                }
            }
        };
        meter.usage(usage);
        let out = if passthrough {
            // The provider's bytes as they came.
            raw
        } else {
            let billed = Embeddings {
                input_tokens: Some(usage.input),
                ..embeddings
            };
            client.encode(&billed, request, self.requested)
        };
        meter.outcome(200, None);
        meter.complete();
        Ok(crate::call::respond::whole(
            StatusCode::OK,
            crate::call::respond::json_headers(),
            out,
            meter,
        ))
    }
}

/// An embeddings call answered from the cache: the recorded bytes as they came when the
/// client and the recorded call speak OpenAI's shape, else the recorded vectors in the
/// client's shape.
fn answer_hit(
    client: &Client,
    request: &EmbedRequest,
    requested: &str,
    record: switchyard::record::CallRecord,
    meter: &mut Meter,
) -> Response {
    let shape = record
        .embedding
        .as_ref()
        .map_or(EmbedShape::Openai, |e| e.shape);
    let raw = record
        .raw
        .as_ref()
        .and_then(|r| r.to_bytes().ok())
        .unwrap_or_default();
    meter.cache_hit(record.number);
    meter.draft().keep(&raw);
    meter.draft().embedding = record.embedding.clone();
    let out = if matches!(client, Client::Openai) && shape == EmbedShape::Openai {
        raw
    } else {
        match switchyard::embed::decode_reply("cache", shape, &[], raw, request.input.len()) {
            Ok(embeddings) => client.encode(&embeddings, request, requested),
            Err(_) => Bytes::new(),
        }
    };
    meter.outcome(200, None);
    meter.complete();
    let mut headers = crate::call::respond::json_headers();
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("hit; call={}", record.number)) {
        headers.insert("x-switchyard-cache", v);
    }
    crate::call::respond::whole(StatusCode::OK, headers, out, meter)
}

/// The client's body with the model id the backend knows spliced in.
fn passthrough_body(bytes: &Bytes, model: &str) -> Result<Bytes, ApiError> {
    let raw = RawBody::parse(bytes).map_err(|m| ApiError::new(Category::BadRequest, m))?;
    if raw.string("model").as_deref() == Some(model) {
        return Ok(bytes.clone());
    }
    Ok(Bytes::from(
        raw.patched(&[("model", Value::from(model).to_string())]),
    ))
}
