//! Parsing one layer's backend entries into [`BackendPatch`]es, collecting every problem with
//! its position.

use std::collections::BTreeMap;

use serde_yaml_ng::Value;

use super::spans::SpanIndex;
use super::types::{Auth, DeveloperRole, Dialect, Kind, Layer, MaxTokensField, Price};
use super::url_template;
use crate::config_error::{ConfigError, ConfigProblem, Location};
use crate::internal::suggest::nearest;
use crate::secrets;

/// Every field a backend accepts.
pub const FIELDS: &[&str] = &[
    "kind",
    "base_url",
    "api_key_env",
    "key_required",
    "apis",
    "messages_url",
    "gemini_url",
    "auth",
    "prices",
    "extra_body",
    "context_window",
    "max_output_tokens",
    "model_options",
    "default_model",
    "developer_role",
    "max_tokens_field",
    "models",
    "from",
    "command",
    "log",
    "litellm",
];

/// Every field a price accepts.
pub const PRICE_FIELDS: &[&str] = &["input", "cached_input", "cache_write", "output"];

/// The fields one layer sets on one backend.
#[derive(Debug, Clone)]
pub(crate) struct BackendPatch {
    pub name: String,
    pub layer: Layer,
    pub kind: Option<Kind>,
    pub base_url: Option<String>,
    pub api_key_env: Option<String>,
    pub key_required: Option<bool>,
    pub apis: Option<Vec<Dialect>>,
    /// `embeddings` listed in `apis` (set whenever `apis` is, so a layer's `apis`
    /// replaces the lower one's whole).
    pub embeddings: Option<bool>,
    pub messages_url: Option<String>,
    pub gemini_url: Option<String>,
    pub auth: Option<Auth>,
    pub prices: BTreeMap<String, Price>,
    pub extra_body: BTreeMap<String, serde_json::Value>,
    pub context_window: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub model_options: Option<String>,
    /// `default_model`: the model a reference naming only this backend gets.
    pub default_model: Option<String>,
    pub developer_role: Option<DeveloperRole>,
    pub max_tokens_field: Option<MaxTokensField>,
    pub models: BTreeMap<String, String>,
    pub from: Option<(String, Location)>,
    pub command: Option<Vec<String>>,
    pub log: Option<String>,
    pub litellm: Option<String>,
}

impl BackendPatch {
    /// An empty patch of `name` in `layer`.
    pub(crate) fn empty(name: &str, layer: Layer) -> Self {
        BackendPatch {
            name: name.to_string(),
            layer,
            kind: None,
            base_url: None,
            api_key_env: None,
            key_required: None,
            apis: None,
            embeddings: None,
            messages_url: None,
            gemini_url: None,
            auth: None,
            prices: BTreeMap::new(),
            extra_body: BTreeMap::new(),
            context_window: None,
            max_output_tokens: None,
            model_options: None,
            default_model: None,
            developer_role: None,
            max_tokens_field: None,
            models: BTreeMap::new(),
            from: None,
            command: None,
            log: None,
            litellm: None,
        }
    }
}

/// One layer's source: its layer, its label for error locations and where its keys are.
pub(crate) struct LayerSource<'a> {
    /// The layer values are tagged with.
    pub layer: Layer,
    /// The `source` of error locations (a path, or `override '…'`).
    pub label: String,
    /// Positions of keys in the source text, when there is one.
    pub spans: Option<&'a SpanIndex>,
    /// The key path of the backends mapping inside the source (`["backends"]`).
    pub prefix: Vec<String>,
}

impl LayerSource<'_> {
    /// The location of `path` (below the prefix), as precise as the index allows.
    pub(crate) fn loc(&self, path: &[&str]) -> Location {
        let mut full: Vec<&str> = self.prefix.iter().map(String::as_str).collect();
        full.extend_from_slice(path);
        match self.spans.and_then(|s| s.find(&full)) {
            Some((line, col)) => Location::at(self.label.clone(), line, col),
            None => Location::source(self.label.clone()),
        }
    }

    fn err(&self, path: &[&str], problem: ConfigProblem) -> ConfigError {
        ConfigError::new(self.loc(path), problem)
    }
}

/// A YAML value's type in words.
pub(crate) fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Sequence(_) => "a list",
        Value::Mapping(_) => "a mapping",
        Value::Tagged(_) => "a tagged value",
    }
}

/// A mapping key as text.
pub(crate) fn key_text(k: &Value) -> String {
    match k {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".to_string(),
        other => format!("<{}>", type_name(other)),
    }
}

/// True for a valid environment variable name.
fn is_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// True for a valid backend name.
pub(crate) fn is_backend_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

/// Parses the backends mapping of one layer.
pub(crate) fn parse_backends(
    src: &LayerSource<'_>,
    value: &Value,
    errors: &mut Vec<ConfigError>,
) -> Vec<BackendPatch> {
    let mut out = Vec::new();
    let map = match value {
        Value::Null => return out,
        Value::Mapping(m) => m,
        other => {
            errors.push(src.err(
                &[],
                ConfigProblem::WrongType {
                    field: "backends".into(),
                    expected: "a mapping of backend names to their fields".into(),
                    found: type_name(other).into(),
                },
            ));
            return out;
        }
    };
    for (k, v) in map {
        let name = key_text(k);
        if !is_backend_name(&name) {
            errors.push(src.err(&[&name], ConfigProblem::BadName { name: name.clone() }));
            continue;
        }
        let mut patch = BackendPatch::empty(&name, src.layer.clone());
        match v {
            Value::Null => {}
            Value::Mapping(fields) => {
                for (fk, fv) in fields {
                    let field = key_text(fk);
                    parse_field(src, &name, &field, fv, &mut patch, errors);
                }
            }
            other => errors.push(src.err(
                &[&name],
                ConfigProblem::WrongType {
                    field: name.clone(),
                    expected: "a mapping of backend fields".into(),
                    found: type_name(other).into(),
                },
            )),
        }
        out.push(patch);
    }
    out
}

fn wrong(src: &LayerSource<'_>, path: &[&str], expected: &str, v: &Value) -> ConfigError {
    src.err(
        path,
        ConfigProblem::WrongType {
            field: path[1..].join("."),
            expected: expected.into(),
            found: type_name(v).into(),
        },
    )
}

fn closed<T>(
    src: &LayerSource<'_>,
    path: &[&str],
    what: &str,
    v: &Value,
    accepted: &[&str],
    parse: fn(&str) -> Option<T>,
    errors: &mut Vec<ConfigError>,
) -> Option<T> {
    let Value::String(s) = v else {
        errors.push(wrong(
            src,
            path,
            &format!("one of {}", accepted.join(", ")),
            v,
        ));
        return None;
    };
    let parsed = parse(s);
    if parsed.is_none() {
        errors.push(src.err(
            path,
            ConfigProblem::UnknownValue {
                what: what.into(),
                field: path[1..].join("."),
                value: s.clone(),
                accepted: accepted.iter().map(|a| a.to_string()).collect(),
                nearest: nearest(s, accepted.iter().copied()),
            },
        ));
    }
    parsed
}

fn url_field(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    let Value::String(s) = v else {
        errors.push(wrong(src, path, "a URL string", v));
        return None;
    };
    if secrets::looks_like_key(s) {
        return None; // reported by the key scan
    }
    match url_template::validate(s) {
        Ok(u) => Some(u),
        Err(reason) => {
            errors.push(src.err(
                path,
                ConfigProblem::InvalidUrl {
                    field: path[1..].join("."),
                    value: s.clone(),
                    reason,
                },
            ));
            None
        }
    }
}

fn non_negative(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<f64> {
    let Some(n) = v.as_f64() else {
        errors.push(wrong(src, path, "a number (USD per million tokens)", v));
        return None;
    };
    if n < 0.0 || !n.is_finite() {
        errors.push(src.err(
            path,
            ConfigProblem::Negative {
                field: path[1..].join("."),
                value: n.to_string(),
            },
        ));
        return None;
    }
    Some(n)
}

fn string_map(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    what: &str,
    errors: &mut Vec<ConfigError>,
) -> Vec<(String, Value)> {
    match v {
        Value::Null => Vec::new(),
        Value::Mapping(m) => m.iter().map(|(k, v)| (key_text(k), v.clone())).collect(),
        other => {
            errors.push(wrong(src, path, what, other));
            Vec::new()
        }
    }
}

pub(crate) fn parse_price(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<Price> {
    let entries = string_map(
        src,
        path,
        v,
        "a mapping {input, cached_input, cache_write, output}",
        errors,
    );
    if !matches!(v, Value::Mapping(_)) {
        return None;
    }
    let (mut input, mut cached, mut write, mut output) = (None, None, None, None);
    let mut ok = true;
    for (k, pv) in &entries {
        let mut p = path.to_vec();
        p.push(k);
        let slot = match k.as_str() {
            "input" => &mut input,
            "cached_input" => &mut cached,
            "cache_write" => &mut write,
            "output" => &mut output,
            _ => {
                errors.push(src.err(
                    &p,
                    ConfigProblem::UnknownField {
                        what: "price field".into(),
                        field: k.clone(),
                        accepted: PRICE_FIELDS.iter().map(|s| s.to_string()).collect(),
                        nearest: nearest(k, PRICE_FIELDS.iter().copied()),
                    },
                ));
                ok = false;
                continue;
            }
        };
        match non_negative(src, &p, pv, errors) {
            Some(n) => *slot = Some(n),
            None => ok = false,
        }
    }
    for (name, val) in [("input", input), ("output", output)] {
        if val.is_none() && ok {
            let mut p = path.to_vec();
            p.push(name);
            errors.push(src.err(
                path,
                ConfigProblem::WrongType {
                    field: p[1..].join("."),
                    expected: "a number (a price needs both `input` and `output`)".into(),
                    found: "nothing".into(),
                },
            ));
            ok = false;
        }
    }
    match (ok, input, output) {
        (true, Some(input), Some(output)) => Some(Price {
            input,
            cached_input: cached,
            cache_write: write,
            output,
        }),
        _ => None,
    }
}

pub(crate) fn parse_field(
    src: &LayerSource<'_>,
    name: &str,
    field: &str,
    v: &Value,
    patch: &mut BackendPatch,
    errors: &mut Vec<ConfigError>,
) {
    let path: [&str; 2] = [name, field];
    match field {
        "kind" => patch.kind = closed(src, &path, "kind", v, Kind::ALL, Kind::parse, errors),
        "auth" => patch.auth = closed(src, &path, "auth", v, Auth::ALL, Auth::parse, errors),
        "developer_role" => {
            patch.developer_role = closed(
                src,
                &path,
                "developer_role",
                v,
                DeveloperRole::ALL,
                DeveloperRole::parse,
                errors,
            )
        }
        "max_tokens_field" => {
            patch.max_tokens_field = closed(
                src,
                &path,
                "max_tokens_field",
                v,
                MaxTokensField::ALL,
                MaxTokensField::parse,
                errors,
            )
        }
        "base_url" => patch.base_url = url_field(src, &path, v, errors),
        "messages_url" => patch.messages_url = url_field(src, &path, v, errors),
        "gemini_url" => patch.gemini_url = url_field(src, &path, v, errors),
        "api_key_env" => patch.api_key_env = api_key_env_field(src, &path, v, errors),
        "key_required" => match v {
            Value::Bool(b) => patch.key_required = Some(*b),
            other => errors.push(wrong(src, &path, "true or false", other)),
        },
        "apis" => {
            if let Some((apis, embeddings)) = apis_field(src, &path, v, errors) {
                patch.apis = Some(apis);
                patch.embeddings = Some(embeddings);
            }
        }
        "prices" => prices_field(src, name, v, &mut patch.prices, errors),
        "models" => models_field(src, name, v, &mut patch.models, errors),
        "extra_body" => extra_body_field(src, name, v, &mut patch.extra_body, errors),
        "context_window" => patch.context_window = token_count(src, &path, field, v, errors),
        "max_output_tokens" => patch.max_output_tokens = token_count(src, &path, field, v, errors),
        "command" => patch.command = command_field(src, &path, v, errors),
        "default_model" => match v {
            Value::String(s) if !s.is_empty() && !s.contains('/') => {
                patch.default_model = Some(s.clone())
            }
            other => errors.push(wrong(
                src,
                &path,
                "the model id a reference naming only this backend gets (`gemini-2.5-flash`), without the backend's name",
                other,
            )),
        },
        "model_options" => match v {
            Value::String(s) if s.chars().count() == 1 && s != "/" => {
                patch.model_options = Some(s.clone())
            }
            other => errors.push(wrong(
                src,
                &path,
                "one character after which a model id carries options (the mock's `+`), not `/`",
                other,
            )),
        },
        "litellm" => match v {
            Value::String(s)
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') =>
            {
                patch.litellm = Some(s.clone())
            }
            other => errors.push(wrong(
                src,
                &path,
                "LiteLLM's route prefix for this backend, as in `hosted_vllm` or `fireworks_ai`",
                other,
            )),
        },
        "log" => match v {
            Value::String(s) if !s.trim().is_empty() => patch.log = Some(s.clone()),
            other => errors.push(wrong(
                src,
                &path,
                "the path of a recorded call log (`<run_dir>/llm_log`, or the run directory)",
                other,
            )),
        },
        "from" => match v {
            Value::String(s) => patch.from = Some((s.clone(), src.loc(&path))),
            other => errors.push(wrong(src, &path, "the name of another backend", other)),
        },
        _ if secrets::is_key_field(field) => errors.push(src.err(
            &path,
            ConfigProblem::KeyField {
                field: field.into(),
            },
        )),
        _ => errors.push(src.err(
            &path,
            ConfigProblem::UnknownField {
                what: "backend field".into(),
                field: field.into(),
                accepted: FIELDS.iter().map(|s| s.to_string()).collect(),
                nearest: nearest(field, FIELDS.iter().copied()),
            },
        )),
    }
}

/// `api_key_env`: the name of an environment variable (a key written there instead is
/// reported by the key scan, not here, so that it is not echoed).
fn api_key_env_field(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    match v {
        Value::String(s) if is_var_name(s) => Some(s.clone()),
        Value::String(s) if secrets::looks_like_key(s) => None,
        other => {
            errors.push(wrong(
                src,
                path,
                "the name of an environment variable (letters, digits, `_`), such as OPENAI_API_KEY",
                other,
            ));
            None
        }
    }
}

/// What `apis` accepts: the dialects, and `embeddings` (not a dialect: see
/// `registry/embeddings.rs`).
const API_NAMES: &[&str] = &["chat", "responses", "messages", "gemini", "embeddings"];

/// `apis`: a dialect or a list of them, each once, and whether `embeddings` is among
/// them; `None` when any is neither.
fn apis_field(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<(Vec<Dialect>, bool)> {
    let items: Vec<&Value> = match v {
        Value::Sequence(s) => s.iter().collect(),
        Value::String(_) => vec![v],
        other => {
            errors.push(wrong(
                src,
                path,
                "a list of dialects (chat, responses, messages, gemini) and `embeddings`",
                other,
            ));
            return None;
        }
    };
    let mut apis = Vec::new();
    let mut embeddings = false;
    let mut ok = true;
    for item in items {
        if item.as_str() == Some("embeddings") {
            embeddings = true;
            continue;
        }
        match closed(
            src,
            path,
            "dialect",
            item,
            API_NAMES,
            Dialect::parse,
            errors,
        ) {
            Some(d) if !apis.contains(&d) => apis.push(d),
            Some(_) => {}
            None => ok = false,
        }
    }
    ok.then_some((apis, embeddings))
}

/// `prices`: model id → price.
fn prices_field(
    src: &LayerSource<'_>,
    name: &str,
    v: &Value,
    prices: &mut BTreeMap<String, Price>,
    errors: &mut Vec<ConfigError>,
) {
    let path = [name, "prices"];
    for (model, pv) in string_map(src, &path, v, "a mapping of model ids to prices", errors) {
        let p = [name, "prices", model.as_str()];
        if let Some(price) = parse_price(src, &p, &pv, errors) {
            prices.insert(model.clone(), price);
        }
    }
}

/// `models`: alias → model id.
fn models_field(
    src: &LayerSource<'_>,
    name: &str,
    v: &Value,
    models: &mut BTreeMap<String, String>,
    errors: &mut Vec<ConfigError>,
) {
    let path = [name, "models"];
    for (alias, target) in string_map(src, &path, v, "a mapping of aliases to model ids", errors) {
        match target {
            Value::String(id) if !id.is_empty() => {
                models.insert(alias, id);
            }
            other => errors.push(wrong(
                src,
                &[name, "models", alias.as_str()],
                "a model id (a non-empty string)",
                &other,
            )),
        }
    }
}

/// `extra_body`: body fields sent with every request, as JSON.
fn extra_body_field(
    src: &LayerSource<'_>,
    name: &str,
    v: &Value,
    extra_body: &mut BTreeMap<String, serde_json::Value>,
    errors: &mut Vec<ConfigError>,
) {
    let path = [name, "extra_body"];
    for (k, ev) in string_map(src, &path, v, "a mapping of body fields", errors) {
        match serde_json::to_value(&ev) {
            Ok(j) => {
                extra_body.insert(k, j);
            }
            Err(e) => errors.push(src.err(
                &[name, "extra_body", k.as_str()],
                ConfigProblem::WrongType {
                    field: format!("extra_body.{k}"),
                    expected: "a JSON-compatible value".into(),
                    found: e.to_string(),
                },
            )),
        }
    }
}

/// `command`: a program (a name looked up on `PATH`, or a path), or a list of a program and
/// the arguments put before Switchyard's own (`[npx, -y, @openai/codex]`).
/// A whole number of tokens (`context_window`, `max_output_tokens`); a negative or
/// fractional number, or another type, is the located error.
fn token_count(
    src: &LayerSource<'_>,
    path: &[&str],
    field: &str,
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<u64> {
    let expected = "a whole number of tokens";
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                return Some(u);
            }
            if n.as_f64().is_some_and(|f| f < 0.0) {
                errors.push(src.err(
                    path,
                    ConfigProblem::Negative {
                        field: field.into(),
                        value: n.to_string(),
                    },
                ));
            } else {
                errors.push(wrong(src, path, expected, v));
            }
        }
        other => errors.push(wrong(src, path, expected, other)),
    }
    None
}

fn command_field(
    src: &LayerSource<'_>,
    path: &[&str],
    v: &Value,
    errors: &mut Vec<ConfigError>,
) -> Option<Vec<String>> {
    const EXPECTED: &str =
        "a program (a name on PATH or a path) or a non-empty list of a program and its first arguments";
    let words: Vec<String> = match v {
        Value::String(s) => vec![s.clone()],
        Value::Sequence(items) => {
            let mut words = Vec::new();
            for item in items {
                match item {
                    Value::String(s) => words.push(s.clone()),
                    other => {
                        errors.push(wrong(src, path, EXPECTED, other));
                        return None;
                    }
                }
            }
            words
        }
        other => {
            errors.push(wrong(src, path, EXPECTED, other));
            return None;
        }
    };
    let bad =
        words.first().is_none_or(|p| p.trim().is_empty()) || words.iter().any(|w| w.contains('\0'));
    if bad {
        errors.push(src.err(
            path,
            ConfigProblem::WrongType {
                field: path[1..].join("."),
                expected: EXPECTED.into(),
                found: "an empty program name".into(),
            },
        ));
        return None;
    }
    if words.iter().any(|w| secrets::looks_like_key(w)) {
        return None; // reported by the key scan
    }
    Some(words)
}

/// Reports every string value under `value` that looks like a provider key, and every key
/// field outside the backends mapping (e.g. in other sections of a run config). `path` is
/// the key path of `value` in the source; `loc` places a path.
pub(crate) fn scan_for_keys(
    value: &Value,
    path: &mut Vec<String>,
    loc: &dyn Fn(&[&str]) -> Location,
    errors: &mut Vec<ConfigError>,
) {
    match value {
        Value::String(s) if secrets::looks_like_key(s) => {
            let parent_is_key_field = path.last().is_some_and(|k| secrets::is_key_field(k));
            if !parent_is_key_field {
                let p: Vec<&str> = path.iter().map(String::as_str).collect();
                errors.push(ConfigError::new(
                    loc(&p),
                    ConfigProblem::KeyValue {
                        field: path.join("."),
                    },
                ));
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(i.to_string());
                scan_for_keys(item, path, loc, errors);
                path.pop();
            }
        }
        Value::Mapping(m) => {
            for (k, v) in m {
                path.push(key_text(k));
                scan_for_keys(v, path, loc, errors);
                path.pop();
            }
        }
        Value::Tagged(t) => scan_for_keys(&t.value, path, loc, errors),
        _ => {}
    }
}
