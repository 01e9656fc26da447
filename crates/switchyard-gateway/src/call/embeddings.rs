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
//! It is one [`Case`] of the call pipeline: admission, the cache and failover are the
//! pipeline's; what is here is the embedding's own — its shapes, its target, its bound
//! (its input only) and its one upstream call.

use crate::account::budgets::CallBound;
use crate::call::cache_hit::{self, EmbedLookup};
use crate::call::case::Case;
use crate::call::client_model;
use crate::call::failure::{Failure, UpstreamFailure};
use crate::call::translate::envelope::StateKey;
use crate::call::upstream::{EmbedTarget, Upstreams};
use crate::errors::{ApiError, Category};
use crate::meter::{Books, Meter};
use crate::raw::RawBody;
use axum::http::StatusCode;
use axum::response::Response;
use bytes::Bytes;
use std::sync::Arc;
use switchyard::backend::http::RawRequest;
use switchyard::embed::Embedder;
use switchyard::record::EmbedRecord;
use switchyard::wire::embed::{
    gemini, openai, EmbedRequest, EmbedShape, Embeddings, EncodingFormat,
};
use switchyard::{Dialect, Reference, Usage};

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
    pub(crate) fn dialect(&self) -> Dialect {
        match self {
            Client::Openai => Dialect::Chat,
            Client::Gemini { .. } => Dialect::Gemini,
        }
    }

    /// The model asked for and the canonical request.
    pub(crate) fn decode(&self, bytes: &[u8]) -> Result<(String, EmbedRequest), ApiError> {
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

/// One embeddings call, as the client asked it.
pub(crate) struct Embedding<'a> {
    /// Who asks, in which shape.
    pub client: &'a Client,
    /// The body's bytes.
    pub bytes: &'a Bytes,
    /// The canonical request.
    pub request: &'a EmbedRequest,
    /// The model as the client named it.
    pub requested: &'a str,
}

impl Case for Embedding<'_> {
    type Target = EmbedTarget;

    fn target(
        &self,
        upstreams: &Upstreams,
        reference: &Reference,
        _retries: bool,
    ) -> Result<Arc<EmbedTarget>, ApiError> {
        upstreams.embed_target(reference).map(Arc::new)
    }

    fn reference_of(target: &EmbedTarget) -> &str {
        &target.reference
    }

    fn aim(&self, target: &Arc<EmbedTarget>, meter: &mut Meter) {
        meter.set_embed_target(target);
    }

    fn bound(&self, target: &EmbedTarget) -> Option<CallBound> {
        // An embedding's whole cost is its input: no output to reserve for.
        target
            .price
            .as_ref()
            .map(|p| CallBound::new(p, self.bytes.len(), Some(0), Some(0)))
    }

    fn streams(&self) -> bool {
        false
    }

    async fn cached(
        &self,
        books: &Books,
        _state_key: &StateKey,
        name: &str,
        meter: &mut Meter,
    ) -> Option<Response> {
        match cache_hit::embedding(books, name, self.request).await? {
            EmbedLookup::Hit(record, call) => {
                meter.draft().cache_hit_call = call;
                Some(answer_hit(
                    self.client,
                    self.request,
                    self.requested,
                    *record,
                    meter,
                ))
            }
            EmbedLookup::Miss(Some(k)) => {
                meter.set_cache_key(k);
                None
            }
            EmbedLookup::Miss(None) => None,
        }
    }

    /// The call made on `target` under its retries; the answer, or the error after them.
    async fn on(&self, target: &Arc<EmbedTarget>, meter: &mut Meter) -> Result<Response, Failure> {
        let upstream = |e| Failure::Upstream(UpstreamFailure::new(e));
        let (client, request) = (self.client, self.request);
        let shape = target.embedder.shape();
        let passthrough = matches!(client, Client::Openai) && shape == EmbedShape::Openai;
        let upstream_body = match passthrough {
            true => passthrough_body(self.bytes, &target.model)
                .map_err(|e| upstream(switchyard::Error::Unsupported(e.message)))?,
            false => target
                .embedder
                .encode_body(request, &target.model)
                .map_err(upstream)?,
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
        meter.attempts(&outcome.attempts);
        let (raw, embeddings) = outcome.result.map_err(upstream)?;

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
            // The provider's bytes as they came (the record keeps them so), but for the
            // model: named as the client named it.
            client_model::whole(Dialect::Chat, raw, self.requested)
        } else {
            let billed = Embeddings {
                input_tokens: Some(usage.input),
                ..embeddings
            };
            client.encode(&billed, request, &client_model::written(self.requested))
        };
        meter.outcome(200, None);
        meter.complete();
        let mut headers = crate::call::respond::json_headers();
        client_model::name_reference(&mut headers, &target.reference);
        Ok(crate::call::respond::whole(
            StatusCode::OK,
            headers,
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
        client_model::whole(Dialect::Chat, raw, requested)
    } else {
        match switchyard::embed::decode_reply("cache", shape, &[], raw, request.input.len()) {
            Ok(embeddings) => {
                client.encode(&embeddings, request, &client_model::written(requested))
            }
            Err(_) => Bytes::new(),
        }
    };
    meter.outcome(200, None);
    meter.complete();
    let mut headers = crate::call::respond::json_headers();
    if let Ok(v) = axum::http::HeaderValue::from_str(&format!("hit; call={}", record.number)) {
        headers.insert("x-switchyard-cache", v);
    }
    let reference = format!("{}/{}", record.backend, record.model);
    client_model::name_reference(&mut headers, &reference);
    crate::call::respond::whole(StatusCode::OK, headers, out, meter)
}

/// The client's body with the model id the backend knows spliced in.
fn passthrough_body(bytes: &Bytes, model: &str) -> Result<Bytes, ApiError> {
    let raw = RawBody::parse(bytes).map_err(|m| ApiError::new(Category::BadRequest, m))?;
    if raw.string("model").as_deref() == Some(model) {
        return Ok(bytes.clone());
    }
    Ok(Bytes::from(raw.patched(&[(
        "model",
        switchyard_wire::json::quoted(model),
    )])))
}
