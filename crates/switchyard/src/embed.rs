//! Embeddings: the [`Embedder`] trait a handle calls for [`crate::Llm::embed`], and the
//! HTTP one, which speaks the backend's family's shape (OpenAI's `/embeddings` or
//! Gemini's `batchEmbedContents`, see `registry/embeddings.rs`) through the HTTP
//! backend's one send path (its credential, timeouts and error classification).

use crate::backend::http::{decode_error, HttpBackend, RawRequest, Timeouts};
use crate::backend::CallNotes;
use crate::connect::ClientPool;
use crate::env::EnvSource;
use crate::error::{Error, Result};
use crate::registry;
use async_trait::async_trait;
use bytes::Bytes;
use std::sync::Arc;
use switchyard_wire::embed::{gemini, openai, EmbedRequest, EmbedShape, Embeddings};

/// One embeddings call: the model id on the backend, the request, the calling handle's
/// role, and where the embedder notes the body it sent.
#[derive(Debug, Clone)]
pub struct EmbedCall {
    /// The model id on the backend (after aliases).
    pub model: String,
    /// The request.
    pub request: EmbedRequest,
    /// The role of the handle making the call.
    pub role: Option<Arc<str>>,
    /// Where the embedder notes the body it sent ([`CallNotes::sent_body`]).
    pub notes: CallNotes,
}

/// What an embeddings call sent, for its record: the call, the shape it went in and
/// what the embedder noted.
pub(crate) struct EmbedSent {
    pub call: EmbedCall,
    pub shape: EmbedShape,
    pub sent: crate::backend::Sent,
}

/// Something that answers embeddings requests.
#[async_trait]
pub trait Embedder: Send + Sync {
    /// The backend's name, for messages and records.
    fn name(&self) -> &str;

    /// The wire shape spoken, for records.
    fn shape(&self) -> EmbedShape;

    /// Embeds the call's inputs, one vector per input, in their order.
    async fn embed(&self, call: &EmbedCall) -> Result<Embeddings>;
}

/// Embeddings over HTTP: the backend's URL for them and its credential.
pub struct HttpEmbedder {
    http: Arc<HttpBackend>,
    shape: EmbedShape,
    url: url::Url,
}

impl HttpEmbedder {
    /// The embedder of `model` on `backend`, which must list `embeddings` in its `apis`.
    pub fn connect(
        backend: &registry::Backend,
        model: &str,
        env: &dyn EnvSource,
        timeouts: Timeouts,
        pool: &ClientPool,
    ) -> Result<HttpEmbedder> {
        let url = backend
            .embed_url(model, env)
            .map_err(crate::connect::endpoint_error)?;
        let shape = backend.embed_shape().ok_or_else(|| {
            Error::Unsupported(format!(
                "backend `{}` does not serve embeddings: its `apis` does not list `embeddings`",
                backend.name
            ))
        })?;
        // The credential and timeouts of the family's dialect; a backend that serves
        // embeddings alone (`apis: [embeddings]`) is given that dialect for the purpose.
        let dialect = registry::Backend::embed_dialect(shape);
        let mut family = backend.clone();
        if !family.serves(dialect) {
            family.apis.value.push(dialect);
        }
        let http = crate::connect::http_backend_pooled(
            &family,
            model,
            Some(dialect),
            env,
            timeouts,
            pool,
        )?;
        Ok(HttpEmbedder {
            http: Arc::new(http),
            shape,
            url,
        })
    }

    /// The embedder with other size bounds on what it reads (a reply body: its
    /// `max_reply_bytes`). Call it on an embedder just connected: one whose backend is
    /// already shared keeps its bounds.
    pub fn with_limits(mut self, limits: crate::backend::http::ReplyLimits) -> Self {
        if let Some(http) = Arc::get_mut(&mut self.http) {
            http.set_limits(limits);
        }
        self
    }

    /// The URL called.
    pub fn url(&self) -> &url::Url {
        &self.url
    }

    /// The HTTP backend whose send path is used (the gateway sends a client's bytes
    /// through it).
    pub fn http(&self) -> &Arc<HttpBackend> {
        &self.http
    }

    /// The body sent for `request` to `model`.
    pub fn encode_body(&self, request: &EmbedRequest, model: &str) -> Result<Bytes> {
        let body = match self.shape {
            EmbedShape::Openai => openai::encode_request(request, model),
            EmbedShape::Gemini => gemini::encode_batch_request(request, model).map_err(|e| {
                Error::Unsupported(format!(
                    "the embeddings request cannot be sent to `{}`: {e}",
                    self.http.config().name
                ))
            })?,
        };
        serde_json::to_vec(&body)
            .map(Bytes::from)
            .map_err(|e| Error::Unsupported(format!("the request could not be serialised: {e}")))
    }
}

/// The embeddings in a reply body of `shape`, checked to hold one vector per input.
pub fn decode_reply(
    backend: &str,
    shape: EmbedShape,
    headers: &[(String, String)],
    body: Bytes,
    inputs: usize,
) -> Result<Embeddings> {
    let decoded = match shape {
        EmbedShape::Openai => openai::decode_reply(&body),
        EmbedShape::Gemini => gemini::decode_reply(&body),
    };
    let embeddings = decoded.map_err(|e| decode_error(backend, headers, e, body.clone()))?;
    if embeddings.vectors.len() != inputs {
        return Err(Error::ProviderReplyMalformed {
            backend: backend.to_string(),
            reason: format!(
                "{} vectors came back for {inputs} inputs",
                embeddings.vectors.len()
            ),
            attempts: 1,
            body,
        });
    }
    Ok(embeddings)
}

#[async_trait]
impl Embedder for HttpEmbedder {
    fn name(&self) -> &str {
        &self.http.config().name
    }

    fn shape(&self) -> EmbedShape {
        self.shape
    }

    async fn embed(&self, call: &EmbedCall) -> Result<Embeddings> {
        let body = self.encode_body(&call.request, &call.model)?;
        call.notes.sent_body(body.clone());
        let response = self
            .http
            .send_raw_to(self.url.clone(), &RawRequest::new(body, false))
            .await?;
        let headers = response.header_pairs();
        let bytes = response.bytes().await?;
        decode_reply(
            self.name(),
            self.shape,
            &headers,
            bytes,
            call.request.input.len(),
        )
    }
}

/// The embedder of `model` on `backend` when it serves embeddings over HTTP; `None`
/// when it declares none (its handle's `embed` then says so).
pub(crate) fn embedder_for(
    backend: &registry::Backend,
    model: &str,
    env: &dyn EnvSource,
    timeouts: Timeouts,
) -> Result<Option<Arc<dyn Embedder>>> {
    if backend.embed_shape().is_none() || backend.kind.value != registry::Kind::Http {
        return Ok(None);
    }
    let embedder = HttpEmbedder::connect(backend, model, env, timeouts, &ClientPool::new())?;
    Ok(Some(Arc::new(embedder)))
}

/// The callable backend of a handle: [`crate::connect::backend_with`], or, for a backend
/// that serves embeddings alone (`apis: [embeddings]`), one that says so to any chat
/// call, so that its handles can still embed.
pub(crate) fn callable_for(
    backend: &registry::Backend,
    model: &str,
    env: &dyn EnvSource,
    timeouts: Timeouts,
) -> Result<Arc<dyn crate::backend::Backend>> {
    if backend.apis.value.is_empty()
        && backend.embed_shape().is_some()
        && backend.kind.value == registry::Kind::Http
    {
        return Ok(Arc::new(EmbeddingsOnly {
            name: backend.name.clone(),
        }));
    }
    crate::connect::backend_with(backend, model, env, timeouts)
}

/// A backend that serves embeddings and no dialect: chat calls are refused, naming it.
struct EmbeddingsOnly {
    name: String,
}

#[async_trait]
impl crate::backend::Backend for EmbeddingsOnly {
    fn name(&self) -> &str {
        &self.name
    }

    async fn complete(&self, _call: &crate::backend::Call) -> Result<switchyard_wire::Reply> {
        Err(Error::Unsupported(format!(
            "backend `{}` serves embeddings only (`apis: [embeddings]`): call `embed`, or list a dialect in its `apis`",
            self.name
        )))
    }
}
