//! Command-line overrides: `backends.<name>.<field>=<value>` (values parsed as YAML), and the
//! other sections' `<section>[.<key>...]=<value>` kept for the later parts of a run config.

use serde_yaml_ng::Value;

use super::patch::{is_backend_name, parse_backends, BackendPatch, LayerSource};
use super::types::Layer;
use crate::config_error::{ConfigError, ConfigProblem, Location};

/// Top-level sections of a run config, also the accepted first segments of an override.
pub const SECTIONS: &[&str] = &[
    "model",
    "backends",
    "llm",
    "budget",
    "log",
    "retry",
    "keys",
    "models",
    "listen",
    "store",
    "unknown_cost",
    "timeouts",
    "limits",
    "routes",
    "cache",
    "otel",
    "conversations",
];

/// One command-line override.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    /// The argument as written.
    pub text: String,
    /// The key path: `["llm", "planner", "model"]`. For `backends`, the path is
    /// `["backends", name]` (a whole backend, `backends.<name>={…}`), or
    /// `["backends", name, field]` plus one map key (which may hold dots, like a model id)
    /// for `prices`, `models` and `extra_body`.
    pub path: Vec<String>,
    /// The value, parsed as YAML and held as JSON.
    pub value: serde_json::Value,
    yaml: Value,
}

/// True when `arg` has the shape of an override (`a.b=c` or `a=c` with a known section),
/// so a command line can tell overrides from other positional arguments.
pub fn looks_like_override(arg: &str) -> bool {
    arg.split_once('=').is_some_and(|(k, _)| {
        let first = k.split('.').next().unwrap_or("");
        SECTIONS.contains(&first)
    })
}

/// An override as it may be shown: its value is left out when any word of it looks like a
/// key, so an error never prints a secret.
pub fn redacted(text: &str) -> String {
    match text.split_once('=') {
        Some((k, v))
            if v.split(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
                .any(crate::secrets::looks_like_key) =>
        {
            format!("{k}=<redacted>")
        }
        _ => text.to_string(),
    }
}

fn bad(text: &str, reason: impl Into<String>) -> ConfigError {
    let shown = redacted(text);
    ConfigError::new(
        Location::source(format!("override `{shown}`")),
        ConfigProblem::BadOverride {
            text: shown,
            reason: reason.into(),
            accepted: SECTIONS.iter().map(|s| s.to_string()).collect(),
        },
    )
}

/// Why `name` is no backend name, with the right override for the anonymous backend of
/// an inline role (`role:<name>`), whose fields are the role's own.
fn backend_name_problem(name: &str) -> String {
    match name.strip_prefix("role:") {
        Some(role) if is_backend_name(role) => format!(
            "`{name}` is the backend of the inline role `{role}`, set by the role's own keys: \
             write `llm.{role}.<key>=<value>` (as `llm.{role}.command=/path/to/claude`)"
        ),
        _ => format!(
            "`{name}` is not a valid backend name (letters, digits, `-` and `_`, starting with \
             a letter)"
        ),
    }
}

/// Parses one override.
pub fn parse_override(text: &str) -> Result<Override, ConfigError> {
    let Some((key, raw)) = text.split_once('=') else {
        return Err(bad(text, "there is no `=`"));
    };
    let key = key.trim();
    let mut segments = key.split('.');
    let section = segments.next().unwrap_or("");
    if !SECTIONS.contains(&section) {
        let nearest = crate::internal::suggest::nearest(section, SECTIONS.iter().copied());
        let hint = nearest
            .map(|n| format!(" (did you mean `{n}`?)"))
            .unwrap_or_default();
        return Err(bad(text, format!("`{section}` is not a section{hint}")));
    }
    let path: Vec<String> = if section == "backends" {
        let rest = &key["backends".len()..];
        let rest = rest.strip_prefix('.').unwrap_or("");
        let mut parts = rest.splitn(3, '.');
        let name = parts.next().unwrap_or("");
        let field = parts.next().unwrap_or("");
        if name.is_empty() {
            return Err(bad(
                text,
                "a backends override names a backend: `backends.<name>.<field>=<value>`, \
                 or `backends.<name>={<field>: <value>, …}` for a whole backend",
            ));
        }
        if !is_backend_name(name) {
            return Err(bad(text, backend_name_problem(name)));
        }
        if field.is_empty() {
            // `backends.<name>={…}`: a whole backend, its fields as an inline YAML (or
            // JSON) mapping, laid over the lower layers field by field.
            if !raw.trim_start().starts_with('{') {
                return Err(bad(
                    text,
                    format!(
                        "`backends.{name}=` takes a whole backend as a mapping of its fields, \
                         `backends.{name}={{base_url: …, apis: [chat]}}`; to set one field \
                         write `backends.{name}.<field>=<value>`"
                    ),
                ));
            }
        }
        let mut p = vec!["backends".to_string(), name.to_string()];
        if !field.is_empty() {
            p.push(field.to_string());
        }
        if let Some(map_key) = parts.next() {
            if !matches!(field, "prices" | "models" | "extra_body") {
                return Err(bad(
                    text,
                    format!("`{field}` takes no sub-key (only prices, models and extra_body do)"),
                ));
            }
            p.push(map_key.to_string());
        }
        p
    } else {
        let p: Vec<String> = key.split('.').map(str::to_string).collect();
        if p.iter().any(String::is_empty) {
            return Err(bad(text, "an empty segment in the key"));
        }
        p
    };
    let yaml: Value = if raw.trim().is_empty() {
        Value::String(String::new())
    } else {
        serde_yaml_ng::from_str(raw)
            .map_err(|e| bad(text, format!("the value is not valid YAML: {e}")))?
    };
    let value = serde_json::to_value(&yaml)
        .map_err(|e| bad(text, format!("the value cannot be used: {e}")))?;
    Ok(Override {
        text: text.to_string(),
        path,
        value,
        yaml,
    })
}

/// Parses every override, collecting all problems.
pub(super) fn parse_overrides(args: &[String]) -> Result<Vec<Override>, Vec<ConfigError>> {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for a in args {
        match parse_override(a) {
            Ok(o) => out.push(o),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// The backend patches of the `backends.*` overrides, each its own patch in order; every
/// override's value is also checked for key-looking strings.
pub(super) fn backend_patches(
    overrides: &[Override],
    errors: &mut Vec<ConfigError>,
) -> Vec<BackendPatch> {
    let mut out = Vec::new();
    for o in overrides {
        let label = format!("override `{}`", redacted(&o.text));
        let mut path = o.path.clone();
        crate::registry::patch::scan_for_keys(
            &o.yaml,
            &mut path,
            &|_| Location::source(label.clone()),
            errors,
        );
        if o.path[0] != "backends" {
            continue;
        }
        // Build `{name: {field: value}}` or `{name: {field: {key: value}}}`.
        let mut value = o.yaml.clone();
        for seg in o.path[1..].iter().rev() {
            let mut m = serde_yaml_ng::Mapping::new();
            m.insert(Value::String(seg.clone()), value);
            value = Value::Mapping(m);
        }
        let src = LayerSource {
            layer: Layer::Override,
            label,
            spans: None,
            prefix: Vec::new(),
        };
        out.extend(parse_backends(&src, &value, errors));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paths_and_yaml_values() {
        let o = parse_override("backends.vllm.apis=[chat, messages]").unwrap();
        assert_eq!(o.path, ["backends", "vllm", "apis"]);
        assert_eq!(o.value, serde_json::json!(["chat", "messages"]));
        let o = parse_override("backends.openai.prices.gpt-5.4={input: 1, output: 2}").unwrap();
        assert_eq!(o.path, ["backends", "openai", "prices", "gpt-5.4"]);
        let o = parse_override("llm.planner.model=openai/gpt-5.4").unwrap();
        assert_eq!(o.path, ["llm", "planner", "model"]);
        assert_eq!(o.value, serde_json::json!("openai/gpt-5.4"));
        let o = parse_override("model=vllm/qwen").unwrap();
        assert_eq!(o.path, ["model"]);
    }

    #[test]
    fn redacts_key_values() {
        assert_eq!(redacted("backends.x.apis=[chat]"), "backends.x.apis=[chat]");
        assert_eq!(
            redacted("keys.x={k: sk-abcdefghijklmnopqrstuvwx}"),
            "keys.x=<redacted>"
        );
    }

    #[test]
    fn refuses_bad_overrides() {
        let e = parse_override("backendz.x.y=1").unwrap_err().to_string();
        assert!(e.contains("did you mean `backends`"), "{e}");
        assert!(parse_override("backends.vllm=1").is_err());
        assert!(parse_override("backends.vllm=[chat]").is_err());
        assert!(parse_override("backends.=1").is_err());
        assert!(parse_override("backends.vllm.base_url").is_err());
        assert!(parse_override("backends.vllm.base_url.x=1").is_err());
        assert!(parse_override("backends.vllm.apis=[chat").is_err());
    }
}
