//! Embeddings in both shapes: OpenAI's `POST /v1/embeddings` and Gemini's
//! `models/{m}:embedContent` / `:batchEmbedContents`.
//!
//! Vectors are derived from the input text alone, so a test can compute them: component
//! `i` of a text's vector is the signed byte `i % 32` of SHA-256 of `"{text}#{i / 32}"`,
//! divided by 128 (exact in `f32`). A token-id input embeds as its ids written in decimal,
//! joined by single spaces. The length is `dimensions` (`outputDimensionality`) when
//! asked, else [`DEFAULT_DIMENSIONS`]. Usage is the chat routes' estimate: a quarter of a
//! text's characters, at least one token (a token list: its length), summed.
//!
//! The model-name grammar's faults apply as on the chat routes (`fault-429-then-ok`,
//! `quota`, `context-overflow`, `null-body`, `not-json`, `no-usage`, `hang`, counted per
//! input); a name the grammar does not know (`text-embedding-3-small`) simply embeds.

use crate::behaviour::{self, Fault};
use crate::call::error_response;
use crate::faults::{self, ErrorResponse};
use crate::state::{self, Shared};
use axum::body::Body;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use sha2::{Digest, Sha256};
use switchyard_wire::embed::{
    gemini, openai, EmbedInput, EmbedRequest, Embeddings, EncodingFormat,
};
use switchyard_wire::Dialect;

/// A vector's length when the request asks none.
pub const DEFAULT_DIMENSIONS: u32 = 8;

/// The most components a vector may have (what a request may ask for).
pub const MAX_DIMENSIONS: u32 = 8192;

/// Which route a call came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EmbedRoute {
    /// `POST /v1/embeddings`.
    Openai,
    /// `models/{m}:embedContent`.
    GeminiSingle,
    /// `models/{m}:batchEmbedContents`.
    GeminiBatch,
}

impl EmbedRoute {
    fn dialect(self) -> Dialect {
        match self {
            EmbedRoute::Openai => Dialect::Chat,
            EmbedRoute::GeminiSingle | EmbedRoute::GeminiBatch => Dialect::Gemini,
        }
    }
}

/// The mock's vector for `text`, `dimensions` long (see the module doc).
pub fn vector(text: &str, dimensions: u32) -> Vec<f32> {
    let mut out = Vec::with_capacity(dimensions as usize);
    let mut block = [0u8; 32];
    for i in 0..dimensions as usize {
        if i % 32 == 0 {
            block = Sha256::digest(format!("{text}#{}", i / 32).as_bytes()).into();
        }
        out.push(f32::from(block[i % 32] as i8) / 128.0);
    }
    out
}

/// The text a token-id list embeds as.
pub fn tokens_text(ids: &[u32]) -> String {
    ids.iter().map(u32::to_string).collect::<Vec<_>>().join(" ")
}

/// The embeddings the mock answers `request` with.
pub fn answer(request: &EmbedRequest) -> Embeddings {
    let dims = request.dimensions.unwrap_or(DEFAULT_DIMENSIONS);
    let (vectors, tokens) = match &request.input {
        EmbedInput::Texts(texts) => (
            texts.iter().map(|t| vector(t, dims)).collect(),
            texts
                .iter()
                .map(|t| crate::answer::tokens(t.chars().count()))
                .sum(),
        ),
        EmbedInput::Tokens(lists) => (
            lists
                .iter()
                .map(|ids| vector(&tokens_text(ids), dims))
                .collect(),
            lists.iter().map(|ids| ids.len() as u64).sum(),
        ),
    };
    Embeddings {
        vectors,
        input_tokens: Some(tokens),
        model: None,
        raw: Bytes::new(),
    }
}

/// Serves one embeddings call; `url_model` is Gemini's model from the path.
pub(crate) async fn serve(
    shared: &Shared,
    route: EmbedRoute,
    url_model: Option<&str>,
    body: Bytes,
) -> Response {
    let dialect = route.dialect();
    let request_id = format!("req_mock_{}", shared.next_number());
    let reject = |status: u16, message: &str| {
        error_response(
            dialect,
            &request_id,
            faults::client_error(dialect, status, message, &request_id),
        )
    };
    let decoded = match route {
        EmbedRoute::Openai => openai::decode_request(&body).map(|d| (d.model, d.request)),
        EmbedRoute::GeminiSingle => gemini::decode_single_request(&body)
            .map(|r| (url_model.unwrap_or_default().to_string(), r)),
        EmbedRoute::GeminiBatch => gemini::decode_batch_request(&body)
            .map(|r| (url_model.unwrap_or_default().to_string(), r)),
    };
    let (model, request) = match decoded {
        Ok(found) => found,
        Err(e) => {
            return reject(
                400,
                &format!("switchyard-mock could not read the embeddings request: {e}"),
            )
        }
    };
    if let Some(d) = request.dimensions.filter(|d| *d > MAX_DIMENSIONS) {
        return reject(
            400,
            &format!("dimensions {d} is more than the mock's {MAX_DIMENSIONS}"),
        );
    }
    let name = behaviour::strip_prefix(&model).to_string();
    let behaviour = behaviour::parse(&name).unwrap_or_default();
    let digest = state::digest_bytes(format!("{:?}", request.input).as_bytes());
    let fault = behaviour.fault.clone().filter(|f| match f.times {
        None => true,
        Some(n) => shared.bump(&format!("{name}\0embed\0{dialect}"), digest) < n,
    });
    if !behaviour.first_byte_delay.is_zero() {
        tokio::time::sleep(behaviour.first_byte_delay).await;
    }
    let mut embeddings = answer(&request);
    if let Some(spec) = fault {
        let error = |e: ErrorResponse| error_response(dialect, &request_id, e);
        match spec.fault {
            Fault::Status(status) => {
                return error(faults::status_error(
                    dialect,
                    status,
                    &model,
                    spec.retry,
                    &request_id,
                ))
            }
            Fault::Quota(kind) => {
                return error(faults::quota_error(dialect, kind, &model, &request_id))
            }
            Fault::ContextOverflow(kind) => {
                return error(faults::context_error(dialect, kind, &request_id))
            }
            Fault::NullBody { .. } => return raw(200, Body::from("null")),
            Fault::NotJson => {
                return raw(200, Body::from("<html><body>502 Bad Gateway</body></html>"))
            }
            Fault::NoUsage => embeddings.input_tokens = None,
            Fault::Hang => {
                crate::body::wait_for_shutdown(shared.shutdown.clone()).await;
                return raw(503, Body::from("switchyard-mock: shutting down"));
            }
            // Faults of text and streams have no meaning for a vector; `echo-key` is
            // served by the chat routes only.
            Fault::NoText
            | Fault::CutStream { .. }
            | Fault::ErrorMidStream(_)
            | Fault::EchoKey(_) => {}
        }
    }
    let out = match route {
        EmbedRoute::Openai => openai::encode_reply(
            &embeddings,
            request.encoding_format.unwrap_or(EncodingFormat::Float),
            &model,
        ),
        EmbedRoute::GeminiSingle => gemini::encode_single_reply(&embeddings),
        EmbedRoute::GeminiBatch => gemini::encode_batch_reply(&embeddings),
    };
    raw(200, Body::from(out))
}

fn raw(status: u16, body: Body) -> Response {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(if status == 200 {
            "application/json"
        } else {
            "text/plain"
        }),
    );
    response
}
