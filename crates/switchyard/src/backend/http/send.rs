//! The one send path of the HTTP backend: bytes in, a 2xx answer or a typed error out,
//! with the backend's URL, credential and timeouts. Encoded calls (`complete`, `stream`)
//! and the gateway's pass-through (a client's body sent as it came) both go through
//! [`HttpBackend::send_raw`], so a timeout, a refusal or a broken connection reads the
//! same on every path.

use super::client::{Failed, TransportError};
use super::limits::{head_of, Counter, Reading};
use super::{answers_whole, HttpBackend, ANTHROPIC_VERSION};
use crate::error::{Error, Result, TimeoutPhase};
use crate::internal::classify;
use crate::internal::redact::Redacted;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, USER_AGENT};
use std::time::Duration;
use switchyard_wire::Dialect;
use tokio::time::Instant;

/// The `User-Agent` of every request.
const USER_AGENT_VALUE: &str = concat!("switchyard/", env!("CARGO_PKG_VERSION"));

/// A request body to send exactly as it is, with headers of the caller's own (an
/// `anthropic-version` or `anthropic-beta` a client sent); the backend adds its URL, its
/// credential, the content type and, for a stream, `accept: text/event-stream`.
#[derive(Debug, Clone)]
pub struct RawRequest {
    /// The body, as sent.
    pub body: Bytes,
    /// Whether a stream is asked for (Gemini streams at another URL).
    pub stream: bool,
    /// Extra headers; one named like a default (`anthropic-version`) replaces it, and a
    /// name given twice is sent with both values.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl RawRequest {
    /// A body with no extra header.
    pub fn new(body: Bytes, stream: bool) -> Self {
        RawRequest {
            body,
            stream,
            headers: Vec::new(),
        }
    }
}

/// A 2xx answer whose body is read chunk by chunk under the backend's idle and total
/// timeouts. Non-2xx answers never get here: they are typed errors.
pub struct RawResponse {
    /// The status (2xx).
    pub status: u16,
    /// Every response header.
    pub headers: HeaderMap,
    body: TimedBody,
    redacted: Redacted,
}

impl std::fmt::Debug for RawResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RawResponse")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl RawResponse {
    /// The next chunk of the body as it came off the network; `None` at its end. A
    /// silence longer than the idle timeout, or the total deadline passing, is
    /// `Error::Timeout`; a broken connection is `Error::Transport`; a stream past its
    /// size bounds (`max_stream_bytes`, `max_event_bytes`) is `Error::ReplyTooLarge`.
    pub async fn chunk(&mut self) -> Option<Result<Bytes>> {
        self.body.next().await
    }

    /// The whole body, at most `max_reply_bytes` of it: a `Content-Length` past the bound
    /// is refused before a byte is read, and a body without one as it passes the bound
    /// (`Error::ReplyTooLarge`; the connection is closed, not drained).
    pub async fn bytes(mut self) -> Result<Bytes> {
        self.body.counter.read_whole();
        let announced = self
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.trim().parse::<u64>().ok());
        if let Some(bound) = self.body.counter.announced(announced) {
            return Err(self.body.counter.error(&self.body.backend, bound));
        }
        let mut chunks: Vec<Bytes> = Vec::new();
        while let Some(chunk) = self.body.next().await {
            match chunk {
                Ok(c) => chunks.push(c),
                // What came before the bound was passed: its head, to show what it was.
                Err(Error::ReplyTooLarge {
                    backend,
                    bound,
                    limit,
                    ..
                }) => {
                    return Err(Error::ReplyTooLarge {
                        backend,
                        bound,
                        limit,
                        head: head_of(&chunks),
                    })
                }
                Err(e) => return Err(e),
            }
        }
        Ok(match chunks.len() {
            0 => Bytes::new(),
            1 => chunks.swap_remove(0),
            _ => Bytes::from(chunks.concat()),
        })
    }

    /// The keys the body's chunks were redacted under where they entered: an exit handed
    /// them may skip searching them again ([`redact_shared_since`]).
    ///
    /// [`redact_shared_since`]: crate::internal::redact::redact_shared_since
    pub fn redacted(&self) -> Redacted {
        self.redacted
    }

    /// The body as a stream of chunks (the timeouts still apply).
    pub fn into_stream(self) -> BoxStream<'static, Result<Bytes>> {
        self.body.into_stream()
    }

    /// The headers as name/value pairs (values that are not text left out).
    pub fn header_pairs(&self) -> Vec<(String, String)> {
        header_pairs(&self.headers)
    }
}

/// A body read under an idle timeout (between two chunks), a deadline (the call's total
/// timeout, counted from sending) and the size bounds of [`super::ReplyLimits`].
pub(crate) struct TimedBody {
    inner: BoxStream<'static, std::result::Result<Bytes, TransportError>>,
    backend: String,
    idle: Option<Duration>,
    deadline: Option<(Instant, Duration)>,
    counter: Counter,
    done: bool,
}

impl TimedBody {
    pub(crate) async fn next(&mut self) -> Option<Result<Bytes>> {
        if self.done {
            return None;
        }
        let backend = &self.backend;
        let broke = |e: TransportError| transport(backend, "the reply broke off", e.as_ref());
        let item = match self.limit() {
            Some((limit, phase, after)) => {
                match tokio::time::timeout(limit, self.inner.next()).await {
                    Ok(item) => item.map(|r| r.map_err(broke)),
                    Err(_) => Some(Err(timeout(backend, phase, after))),
                }
            }
            None => self.inner.next().await.map(|r| r.map_err(broke)),
        };
        if !matches!(item, Some(Ok(_))) {
            self.done = true;
        }
        if let Some(Ok(bytes)) = &item {
            if let Some(bound) = self.counter.take(bytes) {
                // Past a bound: the body is dropped unread, which closes the connection.
                self.inner = futures::stream::empty().boxed();
                self.done = true;
                return Some(Err(self.counter.error(backend, bound)));
            }
        }
        item
    }

    /// The wait for the next chunk: the idle timeout, or what is left of the total when
    /// that is shorter, with the phase and duration a timeout names.
    fn limit(&self) -> Option<(Duration, TimeoutPhase, Duration)> {
        let total = self.deadline.map(|(at, total)| {
            (
                at.saturating_duration_since(Instant::now()),
                TimeoutPhase::Total,
                total,
            )
        });
        let idle = self.idle.map(|d| (d, TimeoutPhase::Idle, d));
        match (idle, total) {
            (Some(i), Some(t)) => Some(if t.0 <= i.0 { t } else { i }),
            (i, t) => i.or(t),
        }
    }

    fn into_stream(self) -> BoxStream<'static, Result<Bytes>> {
        futures::stream::unfold(self, |mut body| async move {
            let item = body.next().await?;
            Some((item, body))
        })
        .boxed()
    }
}

impl HttpBackend {
    /// Sends `request`'s bytes as they are to the backend's URL for its dialect, with its
    /// credential and timeouts: the first-byte timeout (to the answer's head), then the
    /// idle and total timeouts as the body is read. A non-2xx answer is the typed [`Error`]
    /// its status and body say, its body read in full; a connection that fails is
    /// `Error::Transport`, a wait that runs out `Error::Timeout`. Nothing is
    /// retried here: retries are the caller's ([`crate::Llm::retrying`]).
    pub async fn send_raw(&self, request: &RawRequest) -> Result<RawResponse> {
        let url = self.config().endpoint.url(request.stream).clone();
        self.send_raw_to(url, request).await
    }

    /// [`HttpBackend::send_raw`] to another URL of the same provider (Anthropic's
    /// `count_tokens` beside `messages`), with the same credential and timeouts.
    pub async fn send_raw_to(&self, url: url::Url, request: &RawRequest) -> Result<RawResponse> {
        let config = self.config();
        let started = Instant::now();
        let deadline = config.timeouts.total.map(|t| (started + t, t));
        let mut builder = http::Request::post(url.as_str())
            .header(USER_AGENT, HeaderValue::from_static(USER_AGENT_VALUE))
            .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        if request.stream {
            builder = builder.header(ACCEPT, HeaderValue::from_static("text/event-stream"));
        }
        if config.dialect == Dialect::Messages {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
        }
        if let Some((name, value)) = config.auth.header().await? {
            builder = builder.header(name, value);
        }
        let mut outgoing = builder.body(request.body.clone()).map_err(|e| {
            Error::Config(format!(
                "{}: the URL {url} cannot be sent to: {e}",
                config.name
            ))
        })?;
        // The caller's own headers replace a default of the same name; a name the caller
        // gives twice keeps both values.
        let headers = outgoing.headers_mut();
        for (name, _) in &request.headers {
            headers.remove(name);
        }
        for (name, value) in &request.headers {
            headers.append(name.clone(), value.clone());
        }
        let head = self.head_limit(deadline);
        let sending = self.client.send(outgoing);
        let answer = match head {
            Some((limit, phase, after)) => tokio::time::timeout(limit, sending)
                .await
                .map_err(|_| timeout(&config.name, phase, after))?,
            None => sending.await,
        }
        .map_err(|failed| self.transport_error(failed))?;
        let status = answer.status;
        // Every key the process holds is redacted here, where the answer enters: an
        // upstream that echoes the credential (in an error's text, a header, even a
        // reply's) cannot pass it on to an error, a record, a client or a span.
        let mut headers = answer.headers;
        crate::internal::redact::redact_headers(&mut headers);
        let reading = match request.stream && !answers_whole(&headers) {
            true => Reading::Events,
            false => Reading::Whole,
        };
        let (inner, redacted) = crate::internal::redact::redact_stream(answer.body);
        let body = TimedBody {
            inner,
            backend: config.name.clone(),
            idle: config.timeouts.idle,
            deadline,
            counter: Counter::new(config.limits, reading),
            done: false,
        };
        let mut answer = RawResponse {
            status,
            headers,
            body,
            redacted,
        };
        if (200..300).contains(&status) {
            return Ok(answer);
        }
        let pairs = answer.header_pairs();
        // An error body read under the same timeouts: a provider that stalls while
        // refusing is a timeout, not a hang. Only its head is read (`max_error_body_bytes`):
        // the rest is left unread and the connection closed with the answer.
        let most = usize::try_from(config.limits.max_error_body_bytes).unwrap_or(usize::MAX);
        let mut body = Vec::new();
        let mut cut = false;
        while let Some(chunk) = answer.chunk().await {
            match chunk {
                Ok(c) if body.len() + c.len() > most => {
                    body.extend_from_slice(&c[..most - body.len()]);
                    cut = true;
                    break;
                }
                Ok(c) => body.extend_from_slice(&c),
                Err(Error::Timeout { .. })
                | Err(Error::Transport { .. })
                | Err(Error::ReplyTooLarge { .. }) => break,
                Err(e) => return Err(e),
            }
        }
        drop(answer);
        let (mut details, _) = classify::details(&config.name, status, &pairs, Bytes::from(body));
        if cut {
            details.message = format!(
                "{} (the error body was longer than `max_error_body_bytes`, {}: only its head was read)",
                details.message,
                crate::error::fmt_bytes(config.limits.max_error_body_bytes)
            );
        }
        if let (Some(variable), 401 | 403) = (&config.unsent_key, status) {
            // The provider's own words say only "unauthorized": the cause is here.
            details.message = format!(
                "{} (no key was sent: {variable} is unset; set it to the backend's key)",
                details.message
            );
        }
        Err(classify::classify(details))
    }

    /// The wait for an answer's head: the first-byte timeout, or what is left of the
    /// total when that is shorter.
    fn head_limit(
        &self,
        deadline: Option<(Instant, Duration)>,
    ) -> Option<(Duration, TimeoutPhase, Duration)> {
        let first = self
            .config()
            .timeouts
            .first_byte
            .map(|d| (d, TimeoutPhase::FirstByte, d));
        let total = deadline.map(|(at, total)| {
            (
                at.saturating_duration_since(Instant::now()),
                TimeoutPhase::Total,
                total,
            )
        });
        match (first, total) {
            (Some(f), Some(t)) => Some(if t.0 <= f.0 { t } else { f }),
            (f, t) => f.or(t),
        }
    }

    fn transport_error(&self, failed: Failed) -> Error {
        let config = self.config();
        if failed.connect_timeout {
            if let Some(after) = config.timeouts.connect {
                return timeout(&config.name, TimeoutPhase::Connect, after);
            }
        }
        Error::Transport {
            backend: config.name.clone(),
            message: error_chain(failed.error.as_ref()),
        }
    }
}

fn timeout(backend: &str, phase: TimeoutPhase, after: Duration) -> Error {
    Error::Timeout {
        backend: backend.to_string(),
        phase,
        after,
    }
}

fn transport(backend: &str, what: &str, e: &(dyn std::error::Error + Send + Sync)) -> Error {
    Error::Transport {
        backend: backend.to_string(),
        message: format!("{what}: {}", error_chain(e)),
    }
}

/// The headers as name/value pairs (values that are not text left out).
pub fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
        .collect()
}

/// An error and its causes on one line: reqwest's own message alone says little.
pub fn error_chain(e: &dyn std::error::Error) -> String {
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
