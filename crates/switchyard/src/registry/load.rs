//! Reading the layers: the built-ins, the user's file, the run config, the environment's
//! `<NAME>_BASE_URL` and the command-line overrides.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_yaml_ng::Value;

use super::overrides::{self, Override, SECTIONS};
use super::patch::{self, key_text, type_name, BackendPatch, LayerSource};
use super::route::{self, RoutePatch};
use super::spans::SpanIndex;
use super::types::Layer;
use super::url_template;
use crate::config_error::{ConfigError, ConfigProblem, Location};
use crate::env::{env_stem, EnvSource};
use crate::internal::suggest::nearest;

/// Top-level keys of a backends file (the built-ins and the user's file) in its sectioned
/// form; a file with none of them is the bare form, a mapping of backends.
pub const BACKENDS_FILE_KEYS: &[&str] = &["backends", "routes", "prices_date"];

/// The user's backends file: `$SWITCHYARD_BACKENDS`, else
/// `$XDG_CONFIG_HOME/switchyard/backends.yaml`, else `~/.config/switchyard/backends.yaml`.
/// `None` when no home can be found.
pub fn user_file_path(env: &dyn EnvSource) -> Option<PathBuf> {
    if let Some(p) = env.var("SWITCHYARD_BACKENDS") {
        return Some(PathBuf::from(p));
    }
    if let Some(x) = env.var("XDG_CONFIG_HOME") {
        return Some(Path::new(&x).join("switchyard").join("backends.yaml"));
    }
    env.var("HOME").map(|h| {
        Path::new(&h)
            .join(".config")
            .join("switchyard")
            .join("backends.yaml")
    })
}

/// Parses YAML text, turning a syntax error into a located [`ConfigError`].
fn parse_yaml(text: &str, label: &str) -> Result<Value, ConfigError> {
    serde_yaml_ng::from_str::<Value>(text).map_err(|e| {
        let loc = match e.location() {
            Some(l) => Location::at(label, l.line(), l.column()),
            None => Location::source(label),
        };
        ConfigError::new(
            loc,
            ConfigProblem::Yaml {
                message: e.to_string(),
            },
        )
    })
}

/// A parsed file: its top-level mapping as (key, value) pairs, and its span index.
struct ParsedFile {
    top: Vec<(String, Value)>,
    spans: SpanIndex,
}

fn parse_file(text: &str, label: &str, errors: &mut Vec<ConfigError>) -> Option<ParsedFile> {
    let value = match parse_yaml(text, label) {
        Ok(v) => v,
        Err(e) => {
            errors.push(e);
            return None;
        }
    };
    let spans = SpanIndex::build(text);
    let top = match value {
        Value::Null => Vec::new(),
        Value::Mapping(m) => m.into_iter().map(|(k, v)| (key_text(&k), v)).collect(),
        other => {
            errors.push(ConfigError::new(
                Location::at(label, 1, 1),
                ConfigProblem::WrongType {
                    field: "the file".into(),
                    expected: "a mapping of sections".into(),
                    found: type_name(&other).into(),
                },
            ));
            return None;
        }
    };
    // Keys written anywhere in the file.
    for (k, v) in &top {
        let mut path = vec![k.clone()];
        let loc = |p: &[&str]| match spans.find(p) {
            Some((l, c)) => Location::at(label, l, c),
            None => Location::source(label),
        };
        patch::scan_for_keys(v, &mut path, &loc, errors);
    }
    Some(ParsedFile { top, spans })
}

fn unknown_top(label: &str, spans: &SpanIndex, key: &str, accepted: &[&str]) -> ConfigError {
    let loc = match spans.find(&[key]) {
        Some((l, c)) => Location::at(label, l, c),
        None => Location::source(label),
    };
    ConfigError::new(
        loc,
        ConfigProblem::UnknownField {
            what: "top-level key".into(),
            field: key.to_string(),
            accepted: accepted.iter().map(|s| s.to_string()).collect(),
            nearest: nearest(key, accepted.iter().copied()),
        },
    )
}

/// A top-level key of a backends file written with `backends:` that is none of its
/// sections: the file mixes the sectioned form and the bare one (backends at the top).
fn mixed_forms(label: &str, spans: &SpanIndex, key: &str) -> ConfigError {
    let loc = match spans.find(&[key]) {
        Some((l, c)) => Location::at(label, l, c),
        None => Location::source(label),
    };
    let hint = nearest(key, BACKENDS_FILE_KEYS.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    ConfigError::new(
        loc,
        ConfigProblem::Invalid {
            field: key.to_string(),
            message: format!(
                "unknown top-level key `{key}`{hint}; a backends file is either sectioned \
                 (top-level keys among: {}) or a bare mapping of backend names to their \
                 fields, not both: move `{key}` under `backends:` if it is a backend",
                BACKENDS_FILE_KEYS.join(", ")
            ),
        },
    )
}

/// A backends file (built-in or user): `backends:`, `routes:` and `prices_date:`, or a
/// bare mapping of backends.
#[derive(Clone)]
pub(crate) struct BackendsFile {
    pub patches: Vec<BackendPatch>,
    pub routes: Vec<RoutePatch>,
    pub prices_date: Option<String>,
}

/// Parses a backends file's text. `label` names it in errors.
pub(crate) fn parse_backends_file(
    text: &str,
    label: &str,
    layer: Layer,
    errors: &mut Vec<ConfigError>,
) -> BackendsFile {
    let mut out = BackendsFile {
        patches: Vec::new(),
        routes: Vec::new(),
        prices_date: None,
    };
    let Some(file) = parse_file(text, label, errors) else {
        return out;
    };
    // The bare form: a file of backends alone (`my-vllm: {base_url: …}` at the top), as
    // some programs write it. It is that form only when no key of the sectioned form is
    // present: a file mixing both is refused below, naming both ways to write it.
    let sectioned = file
        .top
        .iter()
        .any(|(k, _)| BACKENDS_FILE_KEYS.contains(&k.as_str()));
    if !sectioned && !file.top.is_empty() {
        let src = LayerSource {
            layer,
            label: label.to_string(),
            spans: Some(&file.spans),
            prefix: Vec::new(),
        };
        let mut map = serde_yaml_ng::Mapping::new();
        for (k, v) in &file.top {
            map.insert(Value::String(k.clone()), v.clone());
        }
        out.patches = patch::parse_backends(&src, &Value::Mapping(map), errors);
        return out;
    }
    for (k, v) in &file.top {
        match k.as_str() {
            "backends" => {
                let src = LayerSource {
                    layer: layer.clone(),
                    label: label.to_string(),
                    spans: Some(&file.spans),
                    prefix: vec!["backends".into()],
                };
                out.patches = patch::parse_backends(&src, v, errors);
            }
            "routes" => out.routes = routes_of(&layer, label, &file.spans, v, errors),
            "prices_date" => out.prices_date = Some(key_text(v)),
            other => errors.push(mixed_forms(label, &file.spans, other)),
        }
    }
    out
}

/// A run config: its `backends:` patches and its other sections, kept unvalidated for the
/// parts of Switchyard that define them.
pub(crate) struct RunConfigFile {
    pub patches: Vec<BackendPatch>,
    pub routes: Vec<RoutePatch>,
    pub sections: BTreeMap<String, serde_json::Value>,
    /// False when the text is not YAML or not a mapping: nothing in it could be read.
    pub parsed: bool,
}

pub(crate) fn parse_run_config(
    text: &str,
    path: &Path,
    errors: &mut Vec<ConfigError>,
) -> RunConfigFile {
    let label = path.display().to_string();
    let mut out = RunConfigFile {
        patches: Vec::new(),
        routes: Vec::new(),
        sections: BTreeMap::new(),
        parsed: false,
    };
    let Some(file) = parse_file(text, &label, errors) else {
        return out;
    };
    out.parsed = true;
    for (k, v) in &file.top {
        if k == "backends" {
            let src = LayerSource {
                layer: Layer::RunConfig(path.to_path_buf()),
                label: label.clone(),
                spans: Some(&file.spans),
                prefix: vec!["backends".into()],
            };
            out.patches = patch::parse_backends(&src, v, errors);
        } else if k == "routes" {
            let layer = Layer::RunConfig(path.to_path_buf());
            out.routes = routes_of(&layer, &label, &file.spans, v, errors);
        } else if SECTIONS.contains(&k.as_str()) {
            match serde_json::to_value(v) {
                Ok(j) => {
                    out.sections.insert(k.clone(), j);
                }
                Err(e) => errors.push(ConfigError::new(
                    Location::source(label.clone()),
                    ConfigProblem::WrongType {
                        field: k.clone(),
                        expected: "a JSON-compatible value".into(),
                        found: e.to_string(),
                    },
                )),
            }
        } else {
            errors.push(unknown_top(&label, &file.spans, k, SECTIONS));
        }
    }
    out
}

/// One file's `routes:` section.
fn routes_of(
    layer: &Layer,
    label: &str,
    spans: &SpanIndex,
    value: &Value,
    errors: &mut Vec<ConfigError>,
) -> Vec<RoutePatch> {
    let src = LayerSource {
        layer: layer.clone(),
        label: label.to_string(),
        spans: Some(spans),
        prefix: vec!["routes".into()],
    };
    route::parse_routes(&src, value, errors)
}

/// Reads a file; `Ok(None)` when it does not exist.
pub(crate) fn read_optional(path: &Path) -> Result<Option<String>, ConfigError> {
    match std::fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConfigError::new(
            Location::source(path.display().to_string()),
            ConfigProblem::Io {
                message: e.to_string(),
            },
        )),
    }
}

/// The `<NAME>_BASE_URL` patches for the backends in `names`.
pub(crate) fn env_patches<'a>(
    names: impl Iterator<Item = &'a str>,
    env: &dyn EnvSource,
    errors: &mut Vec<ConfigError>,
) -> Vec<BackendPatch> {
    let mut out = Vec::new();
    for name in names {
        let var = format!("{}_BASE_URL", env_stem(name));
        let Some(value) = env.var(&var) else { continue };
        match url_template::validate(&value) {
            Ok(url) => {
                let mut p = BackendPatch::empty(name, Layer::Env(var));
                p.base_url = Some(url);
                out.push(p);
            }
            Err(reason) => errors.push(ConfigError::new(
                Location::source(format!("environment variable {var}")),
                ConfigProblem::InvalidUrl {
                    field: var.clone(),
                    value,
                    reason,
                },
            )),
        }
    }
    out
}

/// The backend and route patches of the overrides, and the other overrides.
pub(crate) fn split_overrides(
    overrides: &[Override],
    errors: &mut Vec<ConfigError>,
) -> (Vec<BackendPatch>, Vec<RoutePatch>, Vec<Override>) {
    let patches = overrides::backend_patches(overrides, errors);
    let routes = route::override_patches(overrides, errors);
    let others = overrides
        .iter()
        .filter(|o| o.path[0] != "backends" && o.path[0] != "routes")
        .cloned()
        .collect();
    (patches, routes, others)
}
