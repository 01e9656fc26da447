//! The `llm:` section: each role in one of three forms, read layer by layer (the run
//! config, then the overrides) with every problem placed at `file:line:col`.
//!
//! - a reference: `planner: anthropic/claude-opus-4-5`;
//! - a mapping: `planner: {model: <reference>, price: {...}, extra_body: {...}, <settings>}`;
//! - an inline endpoint: `planner: {backend: <kind>, model, base_url, api_key_env, <settings>}`,
//!   which becomes an anonymous backend `role:<name>`, validated by the registry's own
//!   field parser; the older form without `backend:`, `{base_url, model, api_key_env}`, is
//!   an `openai_compatible` one.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_yaml_ng::Value;

use super::resolve::Found;
use super::settings;
use crate::config_error::{ConfigError, ConfigProblem, Location};
use crate::internal::suggest::nearest;
use crate::registry::patch::{self, key_text, type_name, BackendPatch, LayerSource};
use crate::registry::{Dialect, Kind, Override, Price};
use crate::secrets;

/// How a role is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RoleForm {
    /// `planner: <backend>/<model>`.
    Reference,
    /// `planner: {model: <reference>, <settings>}` (the model may come from the defaults).
    Mapping,
    /// `planner: {backend: <kind>, model, base_url, api_key_env, <settings>}`.
    Inline,
}

macro_rules! inline_kinds {
    ($($variant:ident = $text:literal, $kind:expr, $dialect:expr, $home:expr;)+) => {
        /// The kinds an inline endpoint names with `backend:`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
        pub enum InlineKind {
            $(
                #[doc = concat!("`", $text, "`")]
                #[serde(rename = $text)]
                $variant
            ),+
        }

        impl InlineKind {
            /// Every accepted spelling.
            pub const ALL: &'static [&'static str] = &[$($text),+];

            /// Parses the config spelling.
            pub fn parse(s: &str) -> Option<Self> {
                match s {
                    $($text => Some(InlineKind::$variant),)+
                    _ => None,
                }
            }

            /// The config spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(InlineKind::$variant => $text),+
                }
            }

            /// The registry kind.
            pub fn kind(self) -> Kind {
                match self {
                    $(InlineKind::$variant => $kind),+
                }
            }

            /// The dialect an HTTP kind speaks.
            pub fn dialect(self) -> Option<Dialect> {
                match self {
                    $(InlineKind::$variant => $dialect),+
                }
            }

            /// The built-in backend whose URL, key variable, prices and context window are
            /// the defaults of an endpoint of this kind.
            pub fn home(self) -> Option<&'static str> {
                match self {
                    $(InlineKind::$variant => $home),+
                }
            }
        }
    };
}

inline_kinds! {
    OpenaiCompatible = "openai_compatible", Kind::Http, Some(Dialect::Chat), None;
    OpenaiResponses = "openai_responses", Kind::Http, Some(Dialect::Responses), Some("openai");
    Anthropic = "anthropic", Kind::Http, Some(Dialect::Messages), Some("anthropic");
    Gemini = "gemini", Kind::Http, Some(Dialect::Gemini), Some("gemini");
    ClaudeCode = "claude_code", Kind::ClaudeCode, None, Some("claude-code");
    Codex = "codex", Kind::Codex, None, Some("codex");
    Replay = "replay", Kind::Replay, None, None;
}

/// The keys of a role mapping besides the settings.
pub const MAPPING_KEYS: &[&str] = &["model", "price", "dialect", "context_window"];

/// The keys of an inline endpoint besides the settings (`log` for `replay` only).
pub const INLINE_KEYS: &[&str] = &[
    "backend",
    "model",
    "base_url",
    "api_key_env",
    "price",
    "context_window",
    "developer_role",
    "max_tokens_field",
    "command",
    "log",
];

/// Inline keys that are backend fields, parsed by the registry's own field parser.
const BACKEND_FIELDS: &[&str] = &[
    "base_url",
    "api_key_env",
    "context_window",
    "developer_role",
    "max_tokens_field",
    "command",
];

/// A value and where it was written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Located<T> {
    pub value: T,
    pub loc: Location,
}

/// An inline endpoint as written.
#[derive(Debug, Clone)]
pub(crate) struct Inline {
    pub kind: Located<InlineKind>,
    /// The backend fields, one patch per layer, lowest first.
    pub patches: Vec<BackendPatch>,
    /// `log:` of a replay endpoint.
    pub log: Option<Located<String>>,
    /// Written in the older form, without `backend:` (`{base_url, model, api_key_env}`).
    pub implied: bool,
}

/// One role, every layer merged.
#[derive(Debug, Clone)]
pub(crate) struct RoleEntry {
    pub name: String,
    pub form: RoleForm,
    /// Where the role is written (the file, or the override that made it).
    pub loc: Location,
    /// The model of the role's own entry.
    pub model: Option<Located<String>>,
    /// The model from `llm.<role>.model=…` or `llm.<role>=…` in code or on the command line.
    pub model_override: Option<Located<String>>,
    pub inline: Option<Inline>,
    pub dialect: Option<Located<Dialect>>,
    pub price: Option<Located<Price>>,
    pub context_window: Option<u64>,
    /// Settings in the order written, lowest layer first (a later one wins).
    pub settings: Vec<(String, serde_json::Value, Location)>,
    /// Backend-only keys written on a role that is not an inline endpoint.
    pub stray_backend_keys: Vec<(String, Location)>,
}

impl RoleEntry {
    pub(crate) fn new(name: &str, form: RoleForm, loc: Location) -> Self {
        RoleEntry {
            name: name.to_string(),
            form,
            loc,
            model: None,
            model_override: None,
            inline: None,
            dialect: None,
            price: None,
            context_window: None,
            settings: Vec::new(),
            stray_backend_keys: Vec::new(),
        }
    }
}

fn role_error(loc: Location, role: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new(
        loc,
        ConfigProblem::Role {
            role: role.to_string(),
            message: message.into(),
        },
    )
}

fn accepted_keys(inline: bool) -> Vec<String> {
    let base = if inline { INLINE_KEYS } else { MAPPING_KEYS };
    base.iter()
        .chain(settings::SETTINGS.iter().map(|s| &s.name))
        .map(|s| s.to_string())
        .collect()
}

/// Each problem with the role it belongs to, so that the check counts that role as
/// broken: a role with an unknown key or a written `api_key` cannot work as written.
fn for_role(role: &str, errors: Vec<ConfigError>, out: &mut Vec<Found>) {
    out.extend(errors.into_iter().map(|error| Found {
        role: Some(role.to_string()),
        error,
    }));
}

fn not_for_role(error: ConfigError) -> Found {
    Found { role: None, error }
}

/// Reads the `llm:` section of the run config.
pub(crate) fn parse_section(
    llm: Option<&Value>,
    src: &LayerSource<'_>,
    errors: &mut Vec<Found>,
) -> BTreeMap<String, RoleEntry> {
    let mut roles = BTreeMap::new();
    let map = match llm {
        None | Some(Value::Null) => return roles,
        Some(Value::Mapping(m)) => m,
        Some(other) => {
            errors.push(not_for_role(ConfigError::new(
                src.loc(&[]),
                ConfigProblem::WrongType {
                    field: "llm".into(),
                    expected: "a mapping of role names to their models".into(),
                    found: type_name(other).into(),
                },
            )));
            return roles;
        }
    };
    for (k, v) in map {
        let name = key_text(k);
        let mut found = Vec::new();
        if !patch::is_backend_name(&name) {
            found.push(role_error(
                src.loc(&[&name]),
                &name,
                "a role name is letters, digits, `-` and `_`, starting with a letter",
            ));
            for_role(&name, found, errors);
            continue;
        }
        let mut entry = RoleEntry::new(&name, RoleForm::Mapping, src.loc(&[&name]));
        parse_role(&mut entry, v, src, false, &mut found);
        for_role(&name, found, errors);
        roles.insert(name, entry);
    }
    roles
}

/// Reads one layer of a role into `entry`.
pub(crate) fn parse_role(
    entry: &mut RoleEntry,
    value: &Value,
    src: &LayerSource<'_>,
    is_override: bool,
    errors: &mut Vec<ConfigError>,
) {
    let name = entry.name.clone();
    match value {
        Value::Null => {}
        Value::String(s) => {
            let model = Located {
                value: s.clone(),
                loc: src.loc(&[&name]),
            };
            if is_override {
                entry.model_override = Some(model);
            } else {
                entry.model = Some(model);
            }
            if entry.form != RoleForm::Inline {
                entry.form = RoleForm::Reference;
            }
        }
        Value::Mapping(m) => {
            let fields: Vec<(String, &Value)> = m.iter().map(|(k, v)| (key_text(k), v)).collect();
            let has = |key: &str| fields.iter().any(|(k, _)| k == key);
            if let Some((_, kind)) = fields.iter().find(|(k, _)| k == "backend") {
                start_inline(entry, kind, src, errors);
            } else if entry.form != RoleForm::Inline && has("base_url") && has("model") {
                // The older form of an endpoint, `{base_url, model, api_key_env}`: the model
                // is the endpoint's own id, as in an `openai_compatible` inline endpoint,
                // which it is. (`base_url` without `model` stays a stray key: over a role
                // naming a reference, which backend it would change is not said.)
                let kind = Value::String(InlineKind::OpenaiCompatible.as_str().into());
                start_inline(entry, &kind, src, errors);
                if let Some(inline) = entry.inline.as_mut() {
                    inline.implied = true;
                }
            } else if entry.form == RoleForm::Reference {
                entry.form = RoleForm::Mapping;
            }
            for (field, v) in fields {
                if field != "backend" {
                    parse_key(entry, &field, v, src, is_override, errors);
                }
            }
        }
        other => errors.push(ConfigError::new(
            src.loc(&[&name]),
            ConfigProblem::WrongType {
                field: format!("llm.{name}"),
                expected: "a reference (`<backend>/<model>`), a mapping `{model: <reference>, <settings>}` \
                           or an inline endpoint `{backend: <kind>, model, base_url, api_key_env, <settings>}`"
                    .into(),
                found: type_name(other).into(),
            },
        )),
    }
}

fn start_inline(
    entry: &mut RoleEntry,
    kind: &Value,
    src: &LayerSource<'_>,
    errors: &mut Vec<ConfigError>,
) {
    let name = entry.name.clone();
    let loc = src.loc(&[&name, "backend"]);
    let parsed = match kind {
        Value::String(s) => match InlineKind::parse(s) {
            Some(k) => Some(k),
            None => {
                errors.push(ConfigError::new(
                    loc.clone(),
                    ConfigProblem::UnknownValue {
                        what: "inline endpoint kind".into(),
                        field: format!("llm.{name}.backend"),
                        value: s.clone(),
                        accepted: InlineKind::ALL.iter().map(|s| s.to_string()).collect(),
                        nearest: nearest(s, InlineKind::ALL.iter().copied()),
                    },
                ));
                None
            }
        },
        other => {
            errors.push(ConfigError::new(
                loc.clone(),
                ConfigProblem::WrongType {
                    field: format!("llm.{name}.backend"),
                    expected: format!("one of {}", InlineKind::ALL.join(", ")),
                    found: type_name(other).into(),
                },
            ));
            None
        }
    };
    entry.form = RoleForm::Inline;
    if let Some(k) = parsed {
        let patches = entry.inline.take().map(|i| i.patches).unwrap_or_default();
        entry.inline = Some(Inline {
            kind: Located { value: k, loc },
            patches,
            log: None,
            implied: false,
        });
    }
}

fn parse_key(
    entry: &mut RoleEntry,
    field: &str,
    v: &Value,
    src: &LayerSource<'_>,
    is_override: bool,
    errors: &mut Vec<ConfigError>,
) {
    let name = entry.name.clone();
    let loc = src.loc(&[&name, field]);
    // A call made by no role (the role ``) has no `llm.<role>.` to name.
    let path = match name.as_str() {
        "" => field.to_string(),
        _ => format!("llm.{name}.{field}"),
    };
    let wrong = |expected: &str| {
        ConfigError::new(
            loc.clone(),
            ConfigProblem::WrongType {
                field: path.clone(),
                expected: expected.into(),
                found: type_name(v).into(),
            },
        )
    };
    match field {
        "model" => match v {
            Value::String(s) if !s.is_empty() => {
                let m = Located {
                    value: s.clone(),
                    loc: loc.clone(),
                };
                if is_override {
                    entry.model_override = Some(m);
                } else {
                    entry.model = Some(m);
                }
            }
            _ => errors.push(wrong(if entry.form == RoleForm::Inline {
                "the model id on the endpoint (a non-empty string)"
            } else {
                "a reference `<backend>/<model>` (a non-empty string)"
            })),
        },
        "price" => {
            if let Some(p) = patch::parse_price(src, &[&name, field], v, errors) {
                entry.price = Some(Located {
                    value: p,
                    loc: loc.clone(),
                });
            }
        }
        "dialect" => match v.as_str().and_then(Dialect::parse) {
            Some(d) => {
                entry.dialect = Some(Located {
                    value: d,
                    loc: loc.clone(),
                })
            }
            None => errors.push(ConfigError::new(
                loc.clone(),
                ConfigProblem::UnknownValue {
                    what: "dialect".into(),
                    field: format!("llm.{name}.dialect"),
                    value: v
                        .as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| type_name(v).into()),
                    accepted: Dialect::NAMES.iter().map(|s| s.to_string()).collect(),
                    nearest: v
                        .as_str()
                        .and_then(|s| nearest(s, Dialect::NAMES.iter().copied())),
                },
            )),
        },
        "context_window" if entry.form != RoleForm::Inline => match v.as_u64() {
            Some(n) => entry.context_window = Some(n),
            None => errors.push(wrong("a whole number of tokens")),
        },
        "log" if entry.form == RoleForm::Inline => match v {
            Value::String(s) if !s.is_empty() => {
                if let Some(inline) = entry.inline.as_mut() {
                    inline.log = Some(Located {
                        value: s.clone(),
                        loc: loc.clone(),
                    });
                    // The anonymous backend carries it too, as a registry backend would.
                    let mut p = BackendPatch::empty(&format!("role:{name}"), src.layer.clone());
                    p.log = Some(s.clone());
                    inline.patches.push(p);
                }
            }
            _ => errors.push(wrong(
                "the path of a recorded call log (`<run_dir>/llm_log`)",
            )),
        },
        f if BACKEND_FIELDS.contains(&f) => {
            if entry.form != RoleForm::Inline {
                entry.stray_backend_keys.push((f.to_string(), loc.clone()));
                return;
            }
            let Some(inline) = entry.inline.as_mut() else {
                return; // the kind was refused; that is the error reported
            };
            let mut p = BackendPatch::empty(&format!("role:{name}"), src.layer.clone());
            patch::parse_field(src, &name, f, v, &mut p, errors);
            inline.patches.push(p);
        }
        // A typo of a setting (`max_token`) is a typo, said with the setting meant, not
        // a key written into the file.
        f if secrets::is_key_field(f) && !settings::one_edit_from_a_setting(f) => errors.push(
            ConfigError::new(loc.clone(), ConfigProblem::KeyField { field: f.into() }),
        ),
        f => match settings::spec(f) {
            Some(spec) => {
                let json = match serde_json::to_value(v) {
                    Ok(j) => j,
                    Err(e) => {
                        errors.push(wrong(&format!("a JSON-compatible value ({e})")));
                        return;
                    }
                };
                match settings::check_value(spec, &json) {
                    Ok(()) => entry.settings.push((f.to_string(), json, loc.clone())),
                    // The policy's reader says what is wrong and what is accepted.
                    Err(message) if spec.shape == settings::ValueShape::Policy => {
                        errors.push(role_error(loc.clone(), &name, format!("`{f}`: {message}")))
                    }
                    Err(expected) => errors.push(wrong(&expected)),
                }
            }
            None => {
                let inline = entry.form == RoleForm::Inline;
                let accepted = accepted_keys(inline);
                errors.push(ConfigError::new(
                    loc.clone(),
                    ConfigProblem::UnknownField {
                        what: if inline {
                            "inline endpoint key".into()
                        } else {
                            "role key".into()
                        },
                        field: f.into(),
                        nearest: nearest(f, accepted.iter().map(String::as_str)),
                        accepted,
                    },
                ))
            }
        },
    }
}

/// The model named by the overrides' top-level `model=…`, if any.
pub(crate) fn model_override(overrides: &[Override]) -> Option<Located<String>> {
    overrides
        .iter()
        .filter(|o| o.path.len() == 1 && o.path[0] == "model")
        .filter_map(|o| {
            o.value.as_str().map(|s| Located {
                value: s.to_string(),
                loc: Location::source(format!("override `{}`", o.text)),
            })
        })
        .next_back()
}

/// Applies the `llm.*` overrides, in order, over the roles of the file.
pub(crate) fn apply_overrides(
    roles: &mut BTreeMap<String, RoleEntry>,
    overrides: &[Override],
    errors: &mut Vec<Found>,
) {
    for o in overrides.iter().filter(|o| o.path[0] == "llm") {
        let label = format!("override `{}`", crate::registry::redacted(&o.text));
        let src = LayerSource {
            layer: crate::registry::Layer::Override,
            label: label.clone(),
            spans: None,
            prefix: Vec::new(),
        };
        let Some(role) = o.path.get(1) else {
            errors.push(not_for_role(ConfigError::new(
                Location::source(label),
                ConfigProblem::WrongType {
                    field: "llm".into(),
                    expected: "`llm.<role>=<reference>` or `llm.<role>.<key>=<value>`".into(),
                    found: "no role".into(),
                },
            )));
            continue;
        };
        let mut found = Vec::new();
        let value: Value = match serde_yaml_ng::to_value(&o.value) {
            Ok(v) => v,
            Err(_) => continue, // parsed from YAML in the first place
        };
        if o.path.len() == 2 {
            // `llm.<role>=…` replaces the whole role (and may add one).
            if !patch::is_backend_name(role) {
                found.push(role_error(
                    Location::source(label),
                    role,
                    "a role name is letters, digits, `-` and `_`, starting with a letter",
                ));
                for_role(role, found, errors);
                continue;
            }
            let mut entry = RoleEntry::new(role, RoleForm::Mapping, Location::source(label));
            parse_role(&mut entry, &value, &src, true, &mut found);
            for_role(role, found, errors);
            roles.insert(role.clone(), entry);
            continue;
        }
        let Some(entry) = roles.get_mut(role.as_str()) else {
            let known: Vec<&str> = roles.keys().map(String::as_str).collect();
            let hint = nearest(role, known.iter().copied())
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            found.push(role_error(
                Location::source(label),
                role,
                format!(
                    "the config has no such role{hint}; roles: {}. To add a role, write `llm.{role}=<reference>`",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                ),
            ));
            for_role(role, found, errors);
            continue;
        };
        // `llm.<role>.<key>[.<sub>…]=v` is the mapping `{key: {sub: … v}}` over the role.
        let mut nested = value;
        for seg in o.path[3..].iter().rev() {
            let mut m = serde_yaml_ng::Mapping::new();
            m.insert(Value::String(seg.clone()), nested);
            nested = Value::Mapping(m);
        }
        let mut m = serde_yaml_ng::Mapping::new();
        m.insert(Value::String(o.path[2].clone()), nested);
        parse_role(entry, &Value::Mapping(m), &src, true, &mut found);
        for_role(role, found, errors);
    }
}
