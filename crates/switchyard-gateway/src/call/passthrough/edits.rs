//! The few edits a passed-through body gets, spliced into its bytes where possible: the
//! model id, the backend's `extra_body`, `stream_options.include_usage` for a chat
//! stream (so the call can be metered), and — parsed and written again, only for the
//! backends configured to want them — `developer` messages as `system` and a chat
//! output limit as `max_tokens`.

use crate::call::upstream::Target;
use crate::raw::RawBody;
use bytes::Bytes;
use serde_json::{json, Map, Value};
use switchyard::Dialect;
use switchyard_wire::json::quoted;

/// The body to send, and whether the usage-only chunk must be kept from the client (it
/// did not ask for it; the gateway did, to meter the call).
pub(super) struct Edited {
    /// The body as it goes upstream.
    pub body: Bytes,
    /// Drop the chat usage-only chunk from the client's stream.
    pub hide_usage: bool,
}

/// The `stream_options` a chat stream is sent with when its client sent none of its own.
const INCLUDE_USAGE: &str = r#"{"include_usage":true}"#;

/// Applies the edits `target` needs to the client's body.
pub(super) fn edit(
    target: &Target,
    raw: &RawBody<'_>,
    bytes: &Bytes,
    stream: bool,
    dialect: Dialect,
) -> Edited {
    let config = target.http.config();
    let mut edits: Vec<(&str, String)> = Vec::new();
    if dialect != Dialect::Gemini && raw.string("model").as_deref() != Some(&target.model) {
        edits.push(("model", quoted(&target.model)));
    }
    for (k, v) in &config.extra_body {
        edits.push((k.as_str(), v.to_string()));
    }
    let mut hide_usage = false;
    if dialect == Dialect::Chat && stream {
        let options = raw
            .raw("stream_options")
            .and_then(|r| serde_json::from_str::<Value>(r).ok());
        if options
            .as_ref()
            .and_then(|o| o.get("include_usage"))
            .and_then(Value::as_bool)
            != Some(true)
        {
            let options = match options {
                // The client's other options kept beside it.
                Some(Value::Object(mut o)) => {
                    o.insert("include_usage".into(), json!(true));
                    Value::Object(o).to_string()
                }
                // Nearly every stream: the client sent none.
                _ => INCLUDE_USAGE.to_string(),
            };
            edits.push(("stream_options", options));
            hide_usage = true;
        }
    }
    let mut body = if edits.is_empty() {
        bytes.clone()
    } else {
        Bytes::from(raw.patched(&edits))
    };
    let rename_developer = config.developer_as_system
        && matches!(dialect, Dialect::Chat | Dialect::Responses)
        && memchr::memmem::find(&body, b"\"developer\"").is_some();
    let legacy_limit = config.legacy_max_tokens
        && dialect == Dialect::Chat
        && raw.raw("max_completion_tokens").is_some();
    if rename_developer || legacy_limit {
        body = reserialised(&body, |v| {
            if rename_developer {
                switchyard::backend::http::edits::developer_as_system(v, dialect);
            }
            if legacy_limit {
                switchyard::backend::http::legacy_max_tokens(v);
            }
        })
        .unwrap_or(body);
    }
    Edited { body, hide_usage }
}

/// The body parsed, changed by `edit` and written again: for the edits that need more
/// than a top-level splice, made only for the backends configured to want them.
fn reserialised(body: &[u8], edit: impl FnOnce(&mut Map<String, Value>)) -> Option<Bytes> {
    let mut v: Map<String, Value> = serde_json::from_slice(body).ok()?;
    edit(&mut v);
    serde_json::to_vec(&v).ok().map(Bytes::from)
}
