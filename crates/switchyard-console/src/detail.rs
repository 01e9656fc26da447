//! One call in full, as the call page shows it: the record itself (it holds no key), the
//! request to send again through the gateway, and for a `ReplayExhausted` failure its
//! prompt beside the nearest recorded call's, line by line.

use serde_json::{json, Value};
use switchyard::record::{self, CallRecord};
use switchyard::Dialect;

/// The gateway request that makes the call again: method, path and body (the body as
/// sent, its model set to the call's reference, which the gateway resolves the same way).
pub(crate) fn replay(r: &CallRecord) -> Value {
    if r.body.is_none() {
        return json!({"available": false, "why": "the call sent no HTTP body (a CLI agent or a program's own backend): nothing to send again"});
    }
    // The library's reader: bounded by the record depth, not serde_json's default.
    let Some(mut body) = record::body_json(r) else {
        return json!({"available": false, "why": "the recorded body is not JSON"});
    };
    let reference = &r.reference;
    // In a Gemini path the reference is one segment, escaped as the gateway sends ids
    // upstream (it decodes the path once): a space, `:` or `/` in it stays the model's.
    let segment = switchyard::model_id::escape_segment(reference);
    let path = if r.embedding.is_some() {
        match r.dialect {
            Some(Dialect::Gemini) => format!("/v1beta/models/{segment}:batchEmbedContents"),
            _ => "/v1/embeddings".to_string(),
        }
    } else {
        match r.dialect {
            Some(Dialect::Chat) => "/v1/chat/completions".to_string(),
            Some(Dialect::Responses) => "/v1/responses".to_string(),
            Some(Dialect::Messages) => "/v1/messages".to_string(),
            Some(Dialect::Gemini) if r.stream => {
                format!("/v1beta/models/{segment}:streamGenerateContent?alt=sse")
            }
            Some(Dialect::Gemini) => format!("/v1beta/models/{segment}:generateContent"),
            None => {
                return json!({"available": false, "why": "the call spoke no HTTP dialect"});
            }
        }
    };
    // Gemini names the model in the path; the others in the body.
    if let (Some(map), false) = (body.as_object_mut(), r.dialect == Some(Dialect::Gemini)) {
        map.insert("model".into(), json!(reference));
    }
    json!({
        "available": true,
        "method": "POST",
        "path": path,
        "body": serde_json::to_string_pretty(&body).unwrap_or_default(),
        "stream": r.stream,
    })
}

/// The number of the nearest recorded call a `ReplayExhausted` error names (`call N: …`).
pub(crate) fn nearest_number(r: &CallRecord) -> Option<u64> {
    let e = r.error.as_ref().filter(|e| e.kind == "ReplayExhausted")?;
    let text = e.fields.get("nearest")?.as_str()?;
    let rest = text.strip_prefix("call ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// The two prompts side by side: the failing request's lines against the recorded
/// call's, aligned by their longest common subsequence.
pub(crate) fn nearest_diff(failed: &CallRecord, recorded: &CallRecord) -> Value {
    let now = record::prompt_lines(&failed.request);
    let then = record::prompt_lines(&recorded.request);
    json!({
        "number": recorded.number,
        "short": failed.error.as_ref().and_then(|e| e.fields.get("nearest")).cloned(),
        "rows": line_diff(&then, &now),
    })
}

/// The most lines diffed on each side (the diff costs their product).
const MOST_LINES: usize = 2000;

/// Rows `{op, left, right}`: `same`, `removed` (left only), `added` (right only).
fn line_diff(left: &[String], right: &[String]) -> Vec<Value> {
    let (a, b) = (
        &left[..left.len().min(MOST_LINES)],
        &right[..right.len().min(MOST_LINES)],
    );
    // lcs[i][j]: the common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut rows) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            rows.push(json!({"op": "same", "left": a[i], "right": b[j]}));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            rows.push(json!({"op": "added", "left": null, "right": b[j]}));
            j += 1;
        } else {
            rows.push(json!({"op": "removed", "left": a[i], "right": null}));
            i += 1;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &[&str]) -> Vec<String> {
        s.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn lines_align_on_what_they_share() {
        let rows = line_diff(&lines(&["a", "b", "c"]), &lines(&["a", "x", "c", "d"]));
        let ops: Vec<&str> = rows.iter().map(|r| r["op"].as_str().unwrap()).collect();
        assert_eq!(ops, ["same", "added", "removed", "same", "added"]);
    }
}
