//! What a backend's request encoding changes in a body of its dialect, after the codec
//! wrote it: `developer` messages as `system` (`developer_role: system`), a chat output
//! limit as `max_tokens` (`max_tokens_field`), the backend's `extra_body`. One place, so
//! that a call the library encodes and a body the gateway passes through (or a CLI bound
//! through it) reach the backend alike.

use serde_json::{json, Map, Value};
use switchyard_wire::Dialect;

use super::HttpConfig;

/// Applies every edit `config` asks for to a `dialect` body.
pub fn apply(config: &HttpConfig, dialect: Dialect, body: &mut Map<String, Value>) {
    if config.developer_as_system {
        developer_as_system(body, dialect);
    }
    if config.legacy_max_tokens && dialect == Dialect::Chat {
        legacy_max_tokens(body);
    }
    for (key, value) in &config.extra_body {
        body.insert(key.clone(), value.clone());
    }
}

/// Renames `developer` messages to `system` (for backends configured with
/// `developer_role: system`; the role exists in chat's `messages` and Responses' `input`
/// only, so other dialects are left alone).
pub fn developer_as_system(body: &mut Map<String, Value>, dialect: Dialect) {
    let list = match dialect {
        Dialect::Chat => "messages",
        Dialect::Responses => "input",
        _ => return,
    };
    let Some(messages) = body.get_mut(list).and_then(Value::as_array_mut) else {
        return;
    };
    for m in messages {
        if m.get("role").and_then(Value::as_str) == Some("developer") {
            m["role"] = json!("system");
        }
    }
}

/// Moves a chat body's `max_completion_tokens` to `max_tokens` (`max_tokens_field:
/// max_tokens`, the default); a body that already has `max_tokens` keeps it.
pub fn legacy_max_tokens(body: &mut Map<String, Value>) {
    if let Some(limit) = body.remove("max_completion_tokens") {
        body.entry("max_tokens").or_insert(limit);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn developer_is_renamed_in_chat_and_responses_only() {
        for (dialect, list) in [(Dialect::Chat, "messages"), (Dialect::Responses, "input")] {
            let mut body = json!({list: [
                {"role": "developer", "content": "be brief"},
                {"role": "user", "content": "hi"}
            ]});
            developer_as_system(body.as_object_mut().unwrap(), dialect);
            assert_eq!(body[list][0]["role"], "system", "{dialect}");
            assert_eq!(body[list][1]["role"], "user", "{dialect}");
        }
        let mut body = json!({"messages": [{"role": "developer"}]});
        developer_as_system(body.as_object_mut().unwrap(), Dialect::Messages);
        assert_eq!(body["messages"][0]["role"], "developer");
    }
}
