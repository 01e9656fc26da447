//! The HTTP backend: encodes the canonical request in the backend's dialect, sends it
//! with the backend's auth over a pooled connection (`send`: the one send path, which
//! the gateway's pass-through uses too), and decodes the reply or stream (`stream`).

mod client;
pub mod edits;
mod history;
mod limits;
mod send;
mod stream;

pub use client::{new_client, HttpClient, POOL_IDLE};
pub use limits::ReplyLimits;
pub use send::{error_chain, header_pairs, RawRequest, RawResponse};
pub(crate) use stream::decode_stream;
pub use stream::{decode_error, stream_error};

use super::auth::Credential;
use super::{Backend, Call};
use crate::error::{Error, Result};
use crate::reply_stream::ReplyStream;
use async_trait::async_trait;
use bytes::Bytes;
use serde_json::{Map, Value};
use std::time::Duration;
use switchyard_wire::{codec, Dialect, EncodeOptions, Reply};

/// Where a backend's dialect is called for its model: parsed once, when the backend is
/// built, not on every call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL of a whole reply.
    pub complete: url::Url,
    /// The URL of a streamed reply (differs only for Gemini).
    pub stream: url::Url,
}

impl Endpoint {
    /// One URL for both.
    pub fn fixed(url: url::Url) -> Self {
        Endpoint {
            complete: url.clone(),
            stream: url,
        }
    }

    /// The URL to call.
    pub fn url(&self, stream: bool) -> &url::Url {
        if stream {
            &self.stream
        } else {
            &self.complete
        }
    }
}

/// The waits of a call; `None` waits forever. `Timeouts::default()` is
/// [`Timeouts::DEFAULT`], the waits every call gets unless a run says otherwise.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timeouts {
    /// Opening a connection.
    pub connect: Option<Duration>,
    /// From sending the request to the reply's headers.
    pub first_byte: Option<Duration>,
    /// Between two chunks of a stream (or of a body).
    pub idle: Option<Duration>,
    /// The whole call.
    pub total: Option<Duration>,
}

impl Timeouts {
    /// The waits used unless a run says otherwise: a connection that takes 30 s or a
    /// stream silent for 5 minutes is taken as lost; a long generation is not cut short.
    pub const DEFAULT: Timeouts = Timeouts {
        connect: Some(Duration::from_secs(30)),
        first_byte: None,
        idle: Some(Duration::from_secs(300)),
        total: None,
    };

    /// No wait is ever cut short.
    pub const NONE: Timeouts = Timeouts {
        connect: None,
        first_byte: None,
        idle: None,
        total: None,
    };
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts::DEFAULT
    }
}

/// Everything an HTTP backend needs, resolved from the registry.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// The backend's name.
    pub name: String,
    /// The dialect to speak.
    pub dialect: Dialect,
    /// Where to send it (for Gemini the model is in the URL: one backend per model).
    pub endpoint: Endpoint,
    /// The credential.
    pub auth: Credential,
    /// The variable that would hold the key, when none was sent because it is unset (a
    /// backend whose key is optional): a refusal for want of one then says so.
    pub unsent_key: Option<String>,
    /// Fields merged into every request body (top level; these win): the backend's
    /// `extra_body` when `dialect` is its main one (see `connect`), else none.
    pub extra_body: Map<String, Value>,
    /// Send `developer` messages as `system` (for endpoints that refuse the role).
    pub developer_as_system: bool,
    /// Send a chat request's output limit as `max_tokens` (what OpenAI-compatible servers
    /// know; the default) instead of `max_completion_tokens` (OpenAI's reasoning models).
    pub legacy_max_tokens: bool,
    /// Waits.
    pub timeouts: Timeouts,
    /// How much of an answer is read ([`ReplyLimits::DEFAULT`] unless set; the gateway's
    /// `limits:` sets them for its backends, [`HttpBackend::with_limits`] for a program's).
    pub limits: ReplyLimits,
}

/// An HTTP backend with its own connection pool.
pub struct HttpBackend {
    config: HttpConfig,
    client: HttpClient,
}

/// The Anthropic API version sent with every Messages request.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";

impl HttpBackend {
    /// A backend with a fresh connection pool.
    pub fn new(config: HttpConfig) -> Result<Self> {
        let client = new_client(&config.name, config.timeouts.connect)?;
        Ok(HttpBackend::with_client(config, client))
    }

    /// A backend sharing an existing connection pool (one per backend: every handle on
    /// the same backend reuses its connections).
    pub fn with_client(config: HttpConfig, client: HttpClient) -> Self {
        HttpBackend { config, client }
    }

    /// The backend with other size bounds on what it reads from its provider.
    pub fn with_limits(mut self, limits: ReplyLimits) -> Self {
        self.set_limits(limits);
        self
    }

    /// Sets the size bounds on what the backend reads from its provider.
    pub fn set_limits(&mut self, limits: ReplyLimits) {
        self.config.limits = limits;
    }

    /// The resolved configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The body that would be sent for a call (for records and `--dry-run`).
    pub fn encode_body(&self, call: &Call, stream: bool) -> Result<Map<String, Value>> {
        let mut request = call.request.clone();
        // Signatures and encrypted reasoning another backend issued would be refused here.
        request.drop_state_not_from(&self.config.name);
        history::fit(&mut request, self.config.dialect, &call.model);
        let mut body = codec(self.config.dialect)
            .encode_request(
                &request,
                &EncodeOptions {
                    model: &call.model,
                    stream,
                },
            )
            .map_err(|e| {
                Error::Unsupported(format!(
                    "the request cannot be sent in the {} dialect: {e}",
                    self.config.dialect
                ))
            })?;
        edits::apply(&self.config, self.config.dialect, &mut body);
        Ok(body)
    }

    /// Encodes and sends a call, noting the body as sent for the call's record.
    async fn send(&self, call: &Call, stream: bool) -> Result<RawResponse> {
        let body = Bytes::from(
            serde_json::to_vec(&self.encode_body(call, stream)?).map_err(|e| {
                Error::Unsupported(format!("the request could not be serialised: {e}"))
            })?,
        );
        call.notes.sent_body(self.recordable(&body));
        self.send_raw(&RawRequest::new(body, stream)).await
    }

    /// The body as a record may keep it: an `extra_body` field named like a key (a user
    /// who put a secret there) is redacted; otherwise the very bytes sent.
    fn recordable(&self, body: &Bytes) -> Bytes {
        if !self
            .config
            .extra_body
            .keys()
            .any(|k| crate::secrets::is_key_field(k))
        {
            return body.clone();
        }
        let Ok(Value::Object(mut map)) = serde_json::from_slice::<Value>(body) else {
            return Bytes::new();
        };
        for (k, v) in map.iter_mut() {
            if crate::secrets::is_key_field(k) && !v.is_null() {
                *v = Value::String("<redacted>".into());
            }
        }
        serde_json::to_vec(&map)
            .map(Bytes::from)
            .unwrap_or_default()
    }
}

#[async_trait]
impl Backend for HttpBackend {
    fn name(&self) -> &str {
        &self.config.name
    }

    fn dialect(&self) -> Option<Dialect> {
        Some(self.config.dialect)
    }

    async fn complete(&self, call: &Call) -> Result<Reply> {
        let response = self.send(call, false).await?;
        let headers = response.header_pairs();
        let body = response.bytes().await?;
        let mut reply = codec(self.config.dialect)
            .decode_reply(&body)
            .map_err(|e| decode_error(&self.config.name, &headers, e, body))?;
        reply.tag_state(&self.config.name);
        Ok(reply)
    }

    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        let response = self.send(call, true).await?;
        let headers = response.header_pairs();
        if answers_whole(&response.headers) {
            // A server that ignores `stream: true` (LiteLLM's proxy on a mocked model)
            // answers one whole JSON body: a whole reply, delivered as its events, not a
            // stream cut off before its first event (and asked again for nothing). An
            // error object in it is still the provider's error.
            let body = response.bytes().await?;
            let mut reply = codec(self.config.dialect)
                .decode_reply(&body)
                .map_err(|e| decode_error(&self.config.name, &headers, e, body))?;
            reply.tag_state(&self.config.name);
            return Ok(ReplyStream::from_reply(reply));
        }
        Ok(decode_stream(
            &self.config.name,
            self.config.dialect,
            headers,
            response.into_stream(),
        ))
    }
}

/// Whether a reply to a streamed request came as one JSON body rather than a stream: its
/// content type says JSON (`application/json`, `…+json`) and not `text/event-stream`.
pub fn answers_whole(headers: &reqwest::header::HeaderMap) -> bool {
    let Some(kind) = headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let kind = kind
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    kind == "application/json" || kind.ends_with("+json")
}

pub use edits::legacy_max_tokens;
