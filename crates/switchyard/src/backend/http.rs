//! The HTTP backend: encodes the canonical request in the backend's dialect, sends it
//! with the backend's auth over a pooled connection, and decodes the reply or stream.

use super::auth::Credential;
use super::{Backend, Call};
use crate::classify;
use crate::error::{Error, ProviderDetails, Result, TimeoutPhase};
use crate::reply_stream::{Chunk, ReplyStream};
use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use serde_json::{Map, Value};
use std::time::Duration;
use switchyard_wire::{
    codec, ByteStreamDecoder, DecodeError, Dialect, EncodeOptions, Event, Reply, Request, Role,
    StreamError,
};

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

/// The waits of a call; `None` waits forever.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
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
    /// Fields merged into every request body (top level; these win).
    pub extra_body: Map<String, Value>,
    /// Send `developer` messages as `system` (for endpoints that refuse the role).
    pub developer_as_system: bool,
    /// Send a chat request's output limit as `max_tokens` (for OpenAI-compatible
    /// servers that know only the older field) instead of `max_completion_tokens`.
    pub legacy_max_tokens: bool,
    /// Waits.
    pub timeouts: Timeouts,
}

/// An HTTP backend with its own connection pool.
pub struct HttpBackend {
    config: HttpConfig,
    client: reqwest::Client,
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
    pub fn with_client(config: HttpConfig, client: reqwest::Client) -> Self {
        HttpBackend { config, client }
    }

    /// The resolved configuration.
    pub fn config(&self) -> &HttpConfig {
        &self.config
    }

    /// The body that would be sent for a call (for records and `--dry-run`).
    pub fn encode_body(&self, call: &Call, stream: bool) -> Result<Map<String, Value>> {
        let request = if self.config.developer_as_system {
            developer_to_system(&call.request)
        } else {
            call.request.clone()
        };
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
        if self.config.legacy_max_tokens && self.config.dialect == Dialect::Chat {
            legacy_max_tokens(&mut body);
        }
        for (key, value) in &self.config.extra_body {
            body.insert(key.clone(), value.clone());
        }
        Ok(body)
    }

    async fn send(&self, call: &Call, stream: bool) -> Result<reqwest::Response> {
        let body = Bytes::from(
            serde_json::to_vec(&self.encode_body(call, stream)?).map_err(|e| {
                Error::Unsupported(format!("the request could not be serialised: {e}"))
            })?,
        );
        super::note_sent_body(self.recordable(&body));
        let url = self.config.endpoint.url(stream);
        let mut request = self
            .client
            .post(url.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if stream {
            request = request.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        if self.config.dialect == Dialect::Messages {
            request = request.header("anthropic-version", ANTHROPIC_VERSION);
        }
        let request = self.config.auth.apply(request).await?;
        let sending = request.send();
        let response = match self.config.timeouts.first_byte {
            Some(limit) => tokio::time::timeout(limit, sending)
                .await
                .map_err(|_| self.timeout(TimeoutPhase::FirstByte, limit))?,
            None => sending.await,
        }
        .map_err(|e| self.transport_error(e))?;
        if response.status().is_success() {
            Ok(response)
        } else {
            Err(self.error_response(response).await)
        }
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

    async fn error_response(&self, response: reqwest::Response) -> Error {
        let status = response.status().as_u16();
        let headers = header_pairs(response.headers());
        let body = response.bytes().await.unwrap_or_default();
        let (details, _) = classify::details(&self.config.name, status, &headers, body);
        classify::classify(details)
    }

    fn timeout(&self, phase: TimeoutPhase, after: Duration) -> Error {
        Error::Timeout {
            backend: self.config.name.clone(),
            phase,
            after,
        }
    }

    fn transport_error(&self, e: reqwest::Error) -> Error {
        if e.is_timeout() && e.is_connect() {
            if let Some(after) = self.config.timeouts.connect {
                return self.timeout(TimeoutPhase::Connect, after);
            }
        }
        Error::Transport {
            backend: self.config.name.clone(),
            message: error_chain(&e),
        }
    }

    async fn complete_inner(&self, call: &Call) -> Result<Reply> {
        let response = self.send(call, false).await?;
        let status = response.status().as_u16();
        let headers = header_pairs(response.headers());
        let body = self.read_body(response).await?;
        codec(self.config.dialect)
            .decode_reply(&body)
            .map_err(|e| self.decode_error(e, status, &headers, body))
    }

    async fn read_body(&self, response: reqwest::Response) -> Result<Bytes> {
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        loop {
            let next = match self.config.timeouts.idle {
                Some(limit) => tokio::time::timeout(limit, chunks.next())
                    .await
                    .map_err(|_| self.timeout(TimeoutPhase::Idle, limit))?,
                None => chunks.next().await,
            };
            match next {
                Some(Ok(chunk)) => body.extend_from_slice(&chunk),
                Some(Err(e)) => return Err(self.transport_error(e)),
                None => return Ok(Bytes::from(body)),
            }
        }
    }

    fn decode_error(
        &self,
        error: DecodeError,
        status: u16,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Error {
        match error {
            DecodeError::Malformed(reason) => Error::ProviderReplyMalformed {
                backend: self.config.name.clone(),
                reason,
                attempts: 1,
                body,
            },
            DecodeError::Provider(e) => self.stream_error(e, status, headers, body),
        }
    }

    fn stream_error(
        &self,
        e: StreamError,
        status: u16,
        headers: &[(String, String)],
        body: Bytes,
    ) -> Error {
        let (mut details, _) = classify::details(&self.config.name, status, headers, body);
        // An error inside a 200 body has the status it names, or none: not the 200.
        details.status = e.status.unwrap_or(0);
        details.kind = e.kind.or(details.kind);
        details.code = e.code.or(details.code);
        details.message = e.message;
        classify::classify(details)
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
        match self.config.timeouts.total {
            Some(limit) => tokio::time::timeout(limit, self.complete_inner(call))
                .await
                .map_err(|_| self.timeout(TimeoutPhase::Total, limit))?,
            None => self.complete_inner(call).await,
        }
    }

    async fn stream(&self, call: &Call) -> Result<ReplyStream> {
        let started = tokio::time::Instant::now();
        // The total covers the wait for the headers too.
        let response = match self.config.timeouts.total {
            Some(limit) => tokio::time::timeout(limit, self.send(call, true))
                .await
                .map_err(|_| self.timeout(TimeoutPhase::Total, limit))??,
            None => self.send(call, true).await?,
        };
        let headers = header_pairs(response.headers());
        let bytes = response
            .bytes_stream()
            .map({
                let name = self.config.name.clone();
                move |r| {
                    r.map_err(|e| Error::Transport {
                        backend: name.clone(),
                        message: format!("the stream broke: {}", error_chain(&e)),
                    })
                }
            })
            .boxed();
        let deadline = self.config.timeouts.total.map(|t| started + t);
        Ok(decode_stream(
            &self.config.name,
            self.config.dialect,
            headers,
            self.config.timeouts,
            deadline,
            bytes,
        ))
    }
}

/// A stream of bytes (network chunks, or the error that broke it) decoded in
/// `dialect` into a [`ReplyStream`], with in-stream errors typed as the HTTP backend
/// types them. Replay feeds recorded bytes through it, so a replayed stream decodes
/// exactly as the live one did.
pub(crate) fn decode_stream(
    name: &str,
    dialect: Dialect,
    headers: Vec<(String, String)>,
    timeouts: Timeouts,
    deadline: Option<tokio::time::Instant>,
    bytes: futures::stream::BoxStream<'static, Result<Bytes>>,
) -> ReplyStream {
    let state = StreamState {
        bytes,
        decoder: ByteStreamDecoder::new(codec(dialect)),
        name: name.to_string(),
        timeouts,
        deadline,
        headers,
        received: Vec::new(),
        done: false,
        backend: StreamErrors {
            name: name.to_string(),
        },
    };
    ReplyStream::new(futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let item = state.next_chunk().await;
        if item.is_err() {
            state.done = true;
        }
        Some((item, state))
    }))
}

/// Builds typed errors for a stream without borrowing the backend.
struct StreamErrors {
    name: String,
}

struct StreamState {
    bytes: futures::stream::BoxStream<'static, Result<Bytes>>,
    decoder: ByteStreamDecoder,
    name: String,
    timeouts: Timeouts,
    deadline: Option<tokio::time::Instant>,
    headers: Vec<(String, String)>,
    /// Every byte so far, for error details.
    received: Vec<u8>,
    done: bool,
    backend: StreamErrors,
}

impl StreamState {
    async fn next_chunk(&mut self) -> Result<Chunk> {
        let wait = match (self.timeouts.idle, self.deadline) {
            (Some(idle), Some(deadline)) => {
                let now = tokio::time::Instant::now();
                Some((
                    idle.min(deadline.saturating_duration_since(now)),
                    deadline <= now + idle,
                ))
            }
            (Some(idle), None) => Some((idle, false)),
            (None, Some(deadline)) => Some((
                deadline.saturating_duration_since(tokio::time::Instant::now()),
                true,
            )),
            (None, None) => None,
        };
        let next = match wait {
            Some((limit, is_total)) => match tokio::time::timeout(limit, self.bytes.next()).await {
                Ok(next) => next,
                Err(_) => {
                    let (phase, after) = if is_total {
                        (TimeoutPhase::Total, self.timeouts.total.unwrap_or(limit))
                    } else {
                        (TimeoutPhase::Idle, limit)
                    };
                    return Err(Error::Timeout {
                        backend: self.name.clone(),
                        phase,
                        after,
                    });
                }
            },
            None => self.bytes.next().await,
        };
        match next {
            Some(Ok(bytes)) => {
                self.received.extend_from_slice(&bytes);
                let events = self
                    .decoder
                    .push(&bytes)
                    .map_err(|e| self.decode_error(e))?;
                self.check_events(&events)?;
                Ok(Chunk { raw: bytes, events })
            }
            Some(Err(e)) => Err(e),
            None => {
                self.done = true;
                let events = self.decoder.finish().map_err(|e| self.decode_error(e))?;
                self.check_events(&events)?;
                Ok(Chunk {
                    raw: Bytes::new(),
                    events,
                })
            }
        }
    }

    /// An error event inside the stream ends it with a typed error.
    fn check_events(&self, events: &[Event]) -> Result<()> {
        match events.iter().find_map(|e| match e {
            Event::Error(err) => Some(err.clone()),
            _ => None,
        }) {
            Some(err) => Err(self.provider_error(err)),
            None => Ok(()),
        }
    }

    fn provider_error(&self, e: StreamError) -> Error {
        let details = ProviderDetails {
            backend: self.backend.name.clone(),
            // An error inside a 200 stream has the status it names, or none.
            status: e.status.unwrap_or(0),
            request_id: self
                .headers
                .iter()
                .find(|(k, _)| k == "x-request-id" || k == "request-id")
                .map(|(_, v)| v.clone()),
            kind: e.kind,
            code: e.code,
            message: e.message,
            headers: self
                .headers
                .iter()
                .filter(|(k, _)| classify::is_kept_header(k))
                .cloned()
                .collect(),
            body: Bytes::copy_from_slice(&self.received),
        };
        classify::classify(details)
    }

    fn decode_error(&self, e: DecodeError) -> Error {
        match e {
            DecodeError::Malformed(reason) => Error::ProviderReplyMalformed {
                backend: self.name.clone(),
                reason: format!("stream: {reason}"),
                attempts: 1,
                body: Bytes::copy_from_slice(&self.received),
            },
            DecodeError::Provider(err) => self.provider_error(err),
        }
    }
}

/// An HTTP client (a connection pool) for a backend: rustls, `TCP_NODELAY`, the connect
/// timeout. Redirects are not followed: an API answers where it is called, and a
/// redirected POST would send the prompt (re-sent, or turned into a GET) somewhere the
/// registry does not name; the 3xx comes back as the provider's error instead.
pub fn new_client(backend: &str, connect_timeout: Option<Duration>) -> Result<reqwest::Client> {
    let mut builder = reqwest::Client::builder()
        .user_agent(concat!("switchyard/", env!("CARGO_PKG_VERSION")))
        .redirect(reqwest::redirect::Policy::none())
        .tcp_nodelay(true);
    if let Some(connect) = connect_timeout {
        builder = builder.connect_timeout(connect);
    }
    builder.build().map_err(|e| Error::Transport {
        backend: backend.to_string(),
        message: format!("could not build an HTTP client: {e}"),
    })
}

/// Moves a chat body's `max_completion_tokens` to `max_tokens` (`max_tokens_field:
/// max_tokens`); a body that already has `max_tokens` keeps it.
pub fn legacy_max_tokens(body: &mut Map<String, Value>) {
    if let Some(limit) = body.remove("max_completion_tokens") {
        body.entry("max_tokens").or_insert(limit);
    }
}

/// The request with `developer` messages sent as `system`.
fn developer_to_system(request: &Request) -> Request {
    let mut request = request.clone();
    for message in &mut request.messages {
        if message.role == Role::Developer {
            message.role = Role::System;
        }
    }
    request
}

fn header_pairs(headers: &reqwest::header::HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// An error and its causes on one line: reqwest's own message alone says little.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = cause.source();
    }
    out
}
