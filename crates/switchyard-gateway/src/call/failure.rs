//! How one upstream call fails, and how a failure is answered. A member's call ends
//! either with the gateway's own refusal ([`Failure::Refused`]: a body that does not
//! translate), answered as it is, or with the upstream's failure before anything reached
//! the client ([`Failure::Upstream`]), which a route may answer by trying its next member
//! (`failover.rs`) and which is otherwise answered here, the same way on every path.

use crate::call::respond;
use crate::errors::ApiError;
use crate::meter::Meter;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use switchyard::record::ErrorRecord;
use switchyard::Error;

/// How one member's call failed.
pub(crate) enum Failure {
    /// The gateway refused the call itself: answered as it is, never failed over.
    Refused(ApiError),
    /// The upstream failed before anything reached the client.
    Upstream(UpstreamFailure),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Refused(e)
    }
}

/// An upstream call that failed after its retries, before anything reached the client.
pub(crate) struct UpstreamFailure {
    /// The library's typed error.
    pub error: Error,
    /// Whether the provider's own refusal goes back as it wrote it: a passed-through
    /// call whose last attempt was refused with an HTTP error status, the client
    /// speaking the provider's dialect.
    pub relay: bool,
}

impl UpstreamFailure {
    /// A failure answered in the gateway's words.
    pub(crate) fn new(error: Error) -> Self {
        UpstreamFailure {
            error,
            relay: false,
        }
    }

    /// A failure in the client's dialect, `status` the last attempt's refusal status (0
    /// when it had none): relayed as the provider wrote it when that is a refusal (≥ 400),
    /// except a refusal of the gateway's own credentials (401, 403), the operator's
    /// problem and not the client's key.
    pub(crate) fn in_dialect(error: Error, status: u16) -> Self {
        let relay = status >= 400 && !matches!(error, Error::Auth(_));
        UpstreamFailure { error, relay }
    }

    /// Answers the failure and notes it on the meter and its record: the provider's
    /// refusal as it wrote it when relayed, else the gateway's error in the client's
    /// dialect (a timeout, a broken connection, a malformed reply, an error inside a 200).
    pub(crate) fn answer(self, meter: &mut Meter) -> Result<Response, ApiError> {
        let e = self.error;
        meter.draft().error = Some(ErrorRecord::new(&e));
        match e.provider_details().filter(|_| self.relay) {
            Some(d) => {
                meter.draft().keep(&d.body);
                meter.outcome(d.status, Some(e.kind().as_str().to_string()));
                let mut headers = HeaderMap::new();
                headers.insert("content-type", HeaderValue::from_static("application/json"));
                for (k, v) in &d.headers {
                    if let (Ok(k), Ok(v)) =
                        (HeaderName::try_from(k.as_str()), HeaderValue::from_str(v))
                    {
                        if kept_header(k.as_str()) {
                            headers.insert(k, v);
                        }
                    }
                }
                meter.complete();
                meter.head();
                let status = StatusCode::from_u16(d.status).unwrap_or(StatusCode::BAD_GATEWAY);
                Ok(respond::whole(status, headers, d.body.clone(), meter))
            }
            None => {
                if let Some(d) = e.provider_details() {
                    meter.draft().keep(&d.body);
                }
                if let Error::ReplyTooLarge { head, .. } = &e {
                    meter.draft().keep_head(head);
                }
                meter.outcome(0, Some(e.kind().as_str().to_string()));
                Err(ApiError::from_upstream(&e))
            }
        }
    }
}

/// Response headers worth passing back: the content type, retry hints, request ids and
/// rate-limit counters. Nothing else (no upstream cookies, no server banners).
pub(crate) fn kept_header(name: &str) -> bool {
    matches!(
        name,
        "content-type" | "retry-after" | "retry-after-ms" | "x-request-id" | "request-id"
    ) || name.starts_with("x-ratelimit-")
        || name.starts_with("anthropic-ratelimit-")
}
