//! From a loaded config to resolved roles: the model by precedence, the backend (from the
//! registry or an inline endpoint), the dialect, the settings checked against what the
//! backend takes, and every problem that would stop a role from working.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use serde_yaml_ng::Value;

use super::precedence::{self, Candidates, ModelSource, MODEL_VAR};
use super::role_backend::RoleBackend;
use super::roles::{self, InlineKind, Located, RoleEntry, RoleForm};
use super::settings::{self, Settings};
use crate::backend::Backend as CallableBackend;
use crate::budget::Budget;
use crate::config_error::{ConfigError, ConfigProblem, Location};
use crate::connect::ClientPool;
use crate::env::EnvSource;
use crate::internal::suggest::nearest;
use crate::llm::Llm;
use crate::policy::CallPolicy;
use crate::registry::patch::{BackendPatch, LayerSource};
use crate::registry::spans::SpanIndex;
use crate::registry::{Auth, Backend, Config, Dialect, KeyStatus, Kind, Layer, Resolved};

/// A role, resolved.
#[derive(Debug, Clone, Serialize)]
pub struct RoleInfo {
    /// The role's name.
    pub name: String,
    /// How it is written.
    pub form: RoleForm,
    /// The reference it resolves to (`anthropic/claude-opus-4-5`; an inline endpoint is
    /// `role:<name>/<model>`).
    pub reference: String,
    /// Where the model came from.
    pub model_from: ModelSource,
    /// The backend, with the role's price, context window and `extra_body` folded in.
    #[serde(skip)]
    pub backend: Backend,
    /// The model id on the backend (after aliases).
    pub model: String,
    /// The dialect it is called in (HTTP backends).
    pub dialect: Option<Dialect>,
    /// The settings every request gets unless it sets its own.
    pub settings: Settings,
    /// The call log a replay role answers from.
    pub replay_log: Option<String>,
    /// Retries, timeouts and the context check: the run's `retry:` and `timeouts:` with
    /// the role's own fields laid over them.
    pub policy: CallPolicy,
    /// The route the role's model names, if it names one; the fields above are then its
    /// first member's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<crate::registry::Route>,
    /// For a route, each member resolved as the role would be on its own (the role's
    /// settings checked against each member's backend).
    #[serde(skip)]
    pub members: Vec<RoleInfo>,
}

/// A problem found while resolving, with the role it belongs to.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    pub role: Option<String>,
    pub error: ConfigError,
}

/// Everything resolved from one config.
pub(crate) struct Prepared {
    pub config: Option<Config>,
    pub roles: Vec<RoleInfo>,
    /// Every role named in the config, including those that failed to resolve.
    pub role_names: Vec<String>,
    pub llms: BTreeMap<String, Llm>,
    pub problems: Vec<Found>,
    /// False when the run config could not be read or parsed (its roles are unknown).
    pub file_read: bool,
}

/// The top-level `model:` of the file and where it is.
fn top_level_model(
    config: &Config,
    label: &str,
    spans: &SpanIndex,
    problems: &mut Vec<Found>,
) -> Option<Located<String>> {
    let v = config.sections.get("model")?;
    let loc = match spans.find(&["model"]) {
        Some((l, c)) => Location::at(label, l, c),
        None => Location::source(label),
    };
    match v.as_str() {
        Some(s) if !s.is_empty() => Some(Located {
            value: s.to_string(),
            loc,
        }),
        _ => {
            problems.push(Found {
                role: None,
                error: ConfigError::new(
                    loc,
                    ConfigProblem::WrongType {
                        field: "model".into(),
                        expected: "a reference `<backend>/<model>`".into(),
                        found: json_type(v).into(),
                    },
                ),
            });
            None
        }
    }
}

fn json_type(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "nothing",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "a list",
        serde_json::Value::Object(_) => "a mapping",
    }
}

/// A section of the run config with the overrides of that section applied.
pub(crate) fn effective_section(config: &Config, name: &str) -> Option<serde_json::Value> {
    let mut value = config.sections.get(name).cloned();
    for o in config.overrides.iter().filter(|o| o.path[0] == name) {
        set_path(
            value.get_or_insert(serde_json::Value::Null),
            &o.path[1..],
            o.value.clone(),
        );
    }
    value
}

fn set_path(slot: &mut serde_json::Value, path: &[String], v: serde_json::Value) {
    let Some((first, rest)) = path.split_first() else {
        *slot = v;
        return;
    };
    if !slot.is_object() {
        *slot = serde_json::Value::Object(Default::default());
    }
    if let Some(map) = slot.as_object_mut() {
        let next = map.entry(first.clone()).or_insert(serde_json::Value::Null);
        set_path(next, rest, v);
    }
}

/// Resolves every role of `config` (read from `path`), reading keys and
/// `SWITCHYARD_MODEL` from `env`. Roles in `custom` are called through the given backend.
///
/// `file_problems` are those the loader found (a key written in the file, an unknown
/// top-level key…): they come first, and the roles are checked all the same.
pub(crate) fn prepare(
    config: Config,
    file_problems: Vec<ConfigError>,
    path: Option<&Path>,
    env: &dyn EnvSource,
    custom: &BTreeMap<String, Arc<dyn CallableBackend>>,
    door: &Door<'_>,
) -> Prepared {
    let label = path.map_or(NO_FILE.to_string(), |p| p.display().to_string());
    // The file is read again for positions only: `Config` keeps the sections as values.
    let spans = path
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| SpanIndex::build(&t))
        .unwrap_or_default();
    let src = LayerSource {
        layer: path.map_or(Layer::Override, |p| Layer::RunConfig(p.to_path_buf())),
        label: label.clone(),
        spans: Some(&spans),
        prefix: vec!["llm".into()],
    };
    let llm_yaml: Option<Value> = config
        .sections
        .get("llm")
        .and_then(|j| serde_yaml_ng::to_value(j).ok());
    let mut role_problems = Vec::new();
    let mut entries = roles::parse_section(llm_yaml.as_ref(), &src, &mut role_problems);
    roles::apply_overrides(&mut entries, &config.overrides, &mut role_problems);
    if let Some(one) = door.one {
        one.select(&mut entries, &mut role_problems);
        if door.replaying {
            entries.clear();
        }
    }
    let mut problems: Vec<Found> = file_problems
        .into_iter()
        .map(|error| Found {
            role: role_of(&error).filter(|r| entries.contains_key(r)),
            error,
        })
        .collect();
    problems.extend(role_problems);
    let budget = read_budget(&config, &label, &spans, &mut problems);
    read_cache_section(&config, door.log_given, &label, &spans, &mut problems);
    read_otel_section(&config, env, &label, &spans, &mut problems);

    for name in custom.keys() {
        if !entries.contains_key(name) {
            let known: Vec<&str> = entries.keys().map(String::as_str).collect();
            problems.push(Found {
                role: Some(name.clone()),
                error: ConfigError::new(
                    Location::source("a custom backend given in code"),
                    ConfigProblem::Role {
                        role: name.clone(),
                        message: format!(
                            "a backend was given for this role, but the config has no such role{}; roles: {}",
                            nearest(name, known.iter().copied())
                                .map(|n| format!(" (did you mean `{n}`?)"))
                                .unwrap_or_default(),
                            known.join(", ")
                        ),
                    },
                ),
            });
        }
    }

    let defaults = Defaults {
        model_override: roles::model_override(&config.overrides),
        env_var: env.var(MODEL_VAR).map(|v| Located {
            value: v,
            loc: Location::source(format!("environment variable {MODEL_VAR}")),
        }),
        top_level: top_level_model(&config, &label, &spans, &mut problems),
        backend_var: env.var(super::assemble::BACKEND_VAR).map(|v| Located {
            value: v,
            loc: Location::source(format!(
                "environment variable {}",
                super::assemble::BACKEND_VAR
            )),
        }),
    };
    // A dollar budget needs every role it counts priced (as `Budget::check_prices` says).
    let max_usd = budget
        .as_ref()
        .filter(|b| !b.allow_unknown_cost)
        .and_then(|b| b.max_usd);
    let counted = |role: &str| {
        budget
            .as_ref()
            .is_some_and(|b| !b.exclude_roles.contains(role))
    };

    let run_policy = run_policy(&config, &label, &spans, &mut problems);
    // One connection pool for the run: roles on the same backend share connections.
    let pool = ClientPool::new();
    let mut roles_out = Vec::new();
    let mut llms = BTreeMap::new();
    for entry in entries.values() {
        let mut found = Vec::new();
        let info = resolve_role(&config, entry, &defaults, &run_policy, door, &mut found);
        if let Some(info) = info {
            let custom_backend = custom.get(&info.name).cloned();
            // A route's role is each of its members on its own.
            let each: Vec<&RoleInfo> = if info.members.is_empty() {
                vec![&info]
            } else {
                info.members.iter().collect()
            };
            if custom_backend.is_none() {
                for m in &each {
                    connection_problems(m, &entry.loc, env, &mut found);
                }
            }
            if let Some(limit) = max_usd.filter(|_| counted(&info.name)) {
                for m in each.iter().filter(|m| m.backend.price(&m.model).is_none()) {
                    let info = *m;
                    found.push(role_problem(
                        entry.loc.clone(),
                        &info.name,
                        format!(
                            "the run has a dollar budget (budget.max_usd: {limit}) but the price of `{}` is unknown; \
                             give the role a `price: {{input, output}}` (USD per million tokens), add the model to the \
                             backend's `prices`, or write `unknown_cost: allow`",
                            info.reference
                        ),
                    ));
                }
            }
            if found.is_empty() {
                match build_llm(&info, env, custom_backend, &pool) {
                    Ok(llm) => {
                        llms.insert(info.name.clone(), llm);
                    }
                    Err(e) => {
                        found.push(role_problem(entry.loc.clone(), &info.name, e.to_string()))
                    }
                }
            }
            roles_out.push(info);
        }
        problems.extend(found.into_iter().map(|error| Found {
            role: Some(entry.name.clone()),
            error,
        }));
    }
    Prepared {
        role_names: entries.keys().cloned().collect(),
        config: Some(config),
        roles: roles_out,
        llms,
        problems,
        file_read: true,
    }
}

/// The role a problem the loader found belongs to: a key-looking value written under
/// `llm.<role>` (in its `extra_body`, say) breaks that role.
fn role_of(e: &ConfigError) -> Option<String> {
    match e.problem.as_ref() {
        ConfigProblem::KeyValue { field } | ConfigProblem::KeyField { field } => field
            .strip_prefix("llm.")
            .and_then(|rest| rest.split('.').next())
            .map(str::to_string),
        _ => None,
    }
}

/// The run's `budget:` (and top-level `unknown_cost`), with its overrides, read by the
/// reader every command uses ([`Budget::read`]), each problem placed at its key. A field
/// refused is left out of the budget returned, so no other problem follows from it.
fn read_budget(
    config: &Config,
    label: &str,
    spans: &SpanIndex,
    problems: &mut Vec<Found>,
) -> Option<Budget> {
    let mut sections = BTreeMap::new();
    for name in ["budget", "unknown_cost"] {
        if let Some(v) = effective_section(config, name) {
            sections.insert(name.to_string(), v);
        }
    }
    let (budget, found) = Budget::read(&sections);
    for p in found {
        let path: Vec<&str> = p.path.iter().map(String::as_str).collect();
        // The key itself, else the section (an override may name a key the file lacks).
        let loc = spans
            .find(&path)
            .or_else(|| spans.find(&path[..1]))
            .map(|(l, c)| Location::at(label, l, c))
            .unwrap_or_else(|| Location::source(label));
        problems.push(Found {
            role: None,
            error: ConfigError::new(
                loc,
                ConfigProblem::Invalid {
                    field: p.path.join("."),
                    message: p.message,
                },
            ),
        });
    }
    budget
}

/// The run's `cache:`, with its overrides: each problem placed at the section, and a
/// cache that reads refused without `log:` (it answers from the run's call log).
fn read_cache_section(
    config: &Config,
    log_given: bool,
    label: &str,
    spans: &SpanIndex,
    problems: &mut Vec<Found>,
) {
    let Some(value) = effective_section(config, "cache") else {
        return;
    };
    let mut errors = Vec::new();
    let cache = crate::cache::read_cache(&value, &mut errors);
    if cache.reads()
        && !log_given
        && !matches!(
            effective_section(config, "log"),
            Some(serde_json::Value::String(_))
        )
    {
        errors.push(
            "cache: answers from the run's call log, and the run records nowhere: add `log: <dir>` (or the override log=<dir>), or set `cache: off`".to_string(),
        );
    }
    let loc = spans
        .find(&["cache"])
        .map(|(l, c)| Location::at(label, l, c))
        .unwrap_or_else(|| Location::source(label));
    for message in errors {
        let (field, message) = match message.split_once(": ") {
            Some((field, rest)) => (field.to_string(), rest.to_string()),
            None => ("cache".to_string(), message),
        };
        problems.push(Found {
            role: None,
            error: ConfigError::new(loc.clone(), ConfigProblem::Invalid { field, message }),
        });
    }
}

/// The run's `otel:` (with its overrides and the `OTEL_EXPORTER_OTLP_*` variables): each
/// problem placed at the section.
fn read_otel_section(
    config: &Config,
    env: &dyn EnvSource,
    label: &str,
    spans: &SpanIndex,
    problems: &mut Vec<Found>,
) {
    let value = effective_section(config, "otel");
    let Err(errors) = crate::trace::resolve(value.as_ref(), env) else {
        return;
    };
    let section = spans
        .find(&["otel"])
        .map(|(l, c)| Location::at(label, l, c))
        .unwrap_or_else(|| Location::source(label));
    for message in errors {
        // `otel.<key>: …`: placed at the key when the file has it; the message keeps
        // the field's name (the error's text is the message alone).
        let field = message
            .split_once(": ")
            .map_or("otel", |(f, _)| f)
            .to_string();
        let loc = field
            .strip_prefix("otel.")
            .and_then(|key| spans.find(&["otel", key]))
            .map(|(l, c)| Location::at(label, l, c))
            .unwrap_or_else(|| section.clone());
        problems.push(Found {
            role: None,
            error: ConfigError::new(loc, ConfigProblem::Invalid { field, message }),
        });
    }
}

/// The model a call made by no role gets (`switchyard ask` without a reference): by the
/// precedence of a role that names none — the `model=` override, `SWITCHYARD_MODEL`, the
/// run config's top-level `model:`.
pub fn default_model(config: &Config, env: &dyn EnvSource) -> Option<String> {
    let model_override = roles::model_override(&config.overrides);
    let env_var = env.var(MODEL_VAR);
    let backend_var = env.var(super::assemble::BACKEND_VAR);
    let candidates = Candidates {
        model_override: model_override.as_ref().map(|m| m.value.as_str()),
        env_var: env_var.as_deref(),
        top_level: config.sections.get("model").and_then(|m| m.as_str()),
        backend_var: backend_var.as_deref(),
        ..Candidates::default()
    };
    precedence::choose(&candidates).map(|(model, _)| {
        // A backend with no default model is left as named: resolving it says so.
        super::assemble::default_reference(&config.registry, model)
            .unwrap_or_else(|| model.to_string())
    })
}

/// What the label of a run with no config file says where a problem is.
pub(crate) const NO_FILE: &str = "the command line";

/// The door's own options that change how roles resolve (see [`super::assemble`]).
#[derive(Default)]
pub(crate) struct Door<'a> {
    /// A door making one call: only that role is resolved.
    pub one: Option<&'a super::assemble::OneCall>,
    /// The door names the run directory itself (`ask --log`), so `cache:` has one.
    pub log_given: bool,
    /// The one call answers from a recorded run: its role is not resolved here.
    pub replaying: bool,
}

struct Defaults {
    model_override: Option<Located<String>>,
    env_var: Option<Located<String>>,
    top_level: Option<Located<String>>,
    /// `SWITCHYARD_BACKEND`: the backend whose default model a role naming none gets.
    backend_var: Option<Located<String>>,
}

fn role_problem(loc: Location, role: &str, message: impl Into<String>) -> ConfigError {
    ConfigError::new(
        loc,
        ConfigProblem::Role {
            role: role.to_string(),
            message: message.into(),
        },
    )
}

fn resolve_role(
    config: &Config,
    entry: &RoleEntry,
    defaults: &Defaults,
    run_policy: &serde_json::Map<String, serde_json::Value>,
    door: &Door<'_>,
    found: &mut Vec<ConfigError>,
) -> Option<RoleInfo> {
    let name = &entry.name;
    for (key, loc) in &entry.stray_backend_keys {
        found.push(role_problem(
            loc.clone(),
            name,
            format!(
                "`{key}` belongs to an inline endpoint: add `backend: <kind>` ({}) to make the role one, \
                 or set it on the backend the model names (`backends.<name>.{key}`)",
                InlineKind::ALL.join(", ")
            ),
        ));
    }
    let Target {
        backend,
        model,
        reference,
        model_from,
        replay_log,
        route,
    } = match &entry.inline {
        Some(inline) => inline_target(config, entry, inline, found)?,
        None if entry.form == RoleForm::Inline => return None, // its kind was refused
        None => reference_target(config, entry, defaults, door, found)?,
    };

    let (backend, dialect, resolved) = fold_role(config, entry, backend, &model, found);
    let policy = match role_policy(run_policy, &resolved.policy) {
        Ok(p) => p,
        Err(e) => {
            found.push(role_problem(
                entry.loc.clone(),
                name,
                format!("its call policy (the run's `retry:`/`timeouts:` with the role's own) cannot be read: {e}"),
            ));
            CallPolicy::default()
        }
    };

    let mut info = RoleInfo {
        policy,
        name: name.clone(),
        form: entry.form,
        reference,
        model_from,
        backend,
        model,
        dialect,
        settings: resolved,
        replay_log,
        route: None,
        members: Vec::new(),
    };
    if let Some(route) = route {
        info.members = route_members(config, entry, &info, &route, found);
        info.route = Some(route);
    }
    Some(info)
}

/// A route's members as the role would be on each: the first is the role's own
/// resolution, the others are folded and checked the same way.
fn route_members(
    config: &Config,
    entry: &RoleEntry,
    info: &RoleInfo,
    route: &crate::registry::Route,
    found: &mut Vec<ConfigError>,
) -> Vec<RoleInfo> {
    let mut out = Vec::new();
    for (i, m) in route.members.iter().enumerate() {
        let mut member = if i == 0 {
            info.clone()
        } else {
            // Members were checked when the registry loaded; one that fails here failed there.
            let Ok(r) = config.registry.require_reference(&m.reference) else {
                continue;
            };
            let Some(backend) = config.registry.backend(&r.backend) else {
                continue;
            };
            let (backend, dialect, settings) =
                fold_role(config, entry, backend.clone(), &r.model, found);
            RoleInfo {
                backend,
                model: r.model.clone(),
                dialect,
                settings,
                ..info.clone()
            }
        };
        member.reference = m.reference.clone();
        out.push(member);
    }
    out
}

/// The role's own price, context window and body fields laid over `backend` (at the run
/// config's layer), its dialect, and its settings checked against what the backend takes.
fn fold_role(
    config: &Config,
    entry: &RoleEntry,
    mut backend: Backend,
    model: &str,
    found: &mut Vec<ConfigError>,
) -> (Backend, Option<Dialect>, Settings) {
    let layer = config
        .run_config
        .clone()
        .map(Layer::RunConfig)
        .unwrap_or(Layer::Override);
    if let Some(p) = &entry.price {
        backend
            .prices
            .insert(model.to_string(), Resolved::new(p.value, layer.clone()));
    }
    if let Some(cw) = entry.context_window {
        backend.context_window = Some(Resolved::new(cw, layer.clone()));
    }
    let dialect = role_dialect(entry, &backend, found);
    let resolved = role_settings(entry, &backend, dialect, found);
    let other_served =
        dialect.filter(|d| backend.apis.value.first() != Some(d) && backend.apis.value.contains(d));
    if let Some(d) = other_served {
        // The role calls a dialect other than the backend's main one: the backend's
        // `extra_body`, written for its main dialect, is not sent (see
        // `Backend::extra_body_for`); the role's own, written for the role's, is. The
        // role's copy of the backend lists the role's dialect first, as its main one.
        backend.extra_body.clear();
        backend.apis.value.retain(|a| *a != d);
        backend.apis.value.insert(0, d);
    }
    for (k, v) in &resolved.extra_body {
        backend
            .extra_body
            .insert(k.clone(), Resolved::new(v.clone(), layer.clone()));
    }
    (backend, dialect, resolved)
}

/// What a role calls: the backend (its own copy, to lay the role's fields over), the model
/// id on it, the reference as written, where the model came from, and a replay's log.
struct Target {
    backend: Backend,
    model: String,
    reference: String,
    model_from: ModelSource,
    replay_log: Option<String>,
    route: Option<crate::registry::Route>,
}

/// The target of an inline endpoint (`backend: <kind>` in the role).
fn inline_target(
    config: &Config,
    entry: &RoleEntry,
    inline: &roles::Inline,
    found: &mut Vec<ConfigError>,
) -> Option<Target> {
    let name = &entry.name;
    let Some(model) = entry.model_override.as_ref().or(entry.model.as_ref()) else {
        found.push(role_problem(
            entry.loc.clone(),
            name,
            "an inline endpoint needs `model`: the model id on that endpoint",
        ));
        return None;
    };
    let from = if entry.model_override.is_some() {
        ModelSource::RoleOverride
    } else {
        ModelSource::RoleEntry
    };
    if inline.implied {
        // The older form's model is the endpoint's own id; one that reads as a reference
        // to a configured backend may mean that backend instead: not guessed.
        let named = model.value.split_once('/').map(|(b, _)| b);
        if let Some(b) = named.filter(|b| config.registry.backend(b).is_some()) {
            found.push(role_problem(
                model.loc.clone(),
                name,
                format!(
                    "`base_url` with `model: {m}`, which names backend `{b}`, says two places \
                     to call: to call `{m}` as a model id at `base_url`, add `backend: \
                     openai_compatible`; to call backend `{b}`, drop `base_url` (and set it on \
                     the backend: `backends.{b}.base_url`)",
                    m = model.value
                ),
            ));
            return None;
        }
    }
    let backend = inline_backend(config, entry, inline, found)?;
    if inline.kind.value == InlineKind::Replay && inline.log.is_none() {
        found.push(role_problem(
            inline.kind.loc.clone(),
            name,
            "a replay endpoint needs `log`: the recorded run's call log (`<run_dir>/llm_log`)",
        ));
    }
    let reference = format!("{}/{}", backend.name, model.value);
    Some(Target {
        backend,
        model: model.value.clone(),
        reference,
        model_from: from,
        replay_log: inline.log.as_ref().map(|l| l.value.clone()),
        route: None,
    })
}

/// The target of a reference, from the role or the defaults by precedence.
fn reference_target(
    config: &Config,
    entry: &RoleEntry,
    defaults: &Defaults,
    door: &Door<'_>,
    found: &mut Vec<ConfigError>,
) -> Option<Target> {
    let name = &entry.name;
    let c = Candidates {
        role_override: entry.model_override.as_ref().map(|m| m.value.as_str()),
        role_entry: entry.model.as_ref().map(|m| m.value.as_str()),
        model_override: defaults.model_override.as_ref().map(|m| m.value.as_str()),
        env_var: defaults.env_var.as_ref().map(|m| m.value.as_str()),
        top_level: defaults.top_level.as_ref().map(|m| m.value.as_str()),
        backend_var: defaults.backend_var.as_ref().map(|m| m.value.as_str()),
    };
    let Some((text, from)) = precedence::choose(&c) else {
        let message = match door.one {
            Some(one) => one.no_model_message(),
            None => precedence::no_model_message(name),
        };
        found.push(role_problem(entry.loc.clone(), name, message));
        return None;
    };
    let loc = match from {
        ModelSource::RoleOverride => entry.model_override.as_ref().map(|m| &m.loc),
        ModelSource::RoleEntry => entry.model.as_ref().map(|m| &m.loc),
        ModelSource::ModelOverride => defaults.model_override.as_ref().map(|m| &m.loc),
        ModelSource::EnvVar => defaults.env_var.as_ref().map(|m| &m.loc),
        ModelSource::TopLevel => defaults.top_level.as_ref().map(|m| &m.loc),
        ModelSource::BackendVar => defaults.backend_var.as_ref().map(|m| &m.loc),
    }
    .cloned()
    .unwrap_or_else(|| entry.loc.clone());
    // A reference naming only a backend (`vertex`) is that backend's default model.
    let Some(completed) = super::assemble::default_reference(&config.registry, text) else {
        found.push(role_problem(
            loc,
            name,
            super::assemble::no_default_model(text),
        ));
        return None;
    };
    let text = completed.as_str();
    // A route: the role's fields are its first member's; each member is resolved beside.
    let route = config.registry.route(text).cloned();
    let member = route
        .as_ref()
        .map_or(text, |r| r.members[0].reference.as_str());
    let r = match config.registry.require_reference(member) {
        Ok(r) => r,
        Err(e) => {
            found.push(role_problem(loc, name, e.to_string()));
            return None;
        }
    };
    let Some(backend) = config.registry.backend(&r.backend) else {
        found.push(role_problem(
            loc,
            name,
            format!("backend `{}` vanished", r.backend),
        ));
        return None;
    };
    Some(Target {
        backend: backend.clone(),
        model: r.model.clone(),
        reference: text.to_string(),
        model_from: from,
        replay_log: None,
        route,
    })
}

/// The dialect a role calls in: its own `dialect` (HTTP backends only), else the backend's
/// preferred one.
fn role_dialect(
    entry: &RoleEntry,
    backend: &Backend,
    found: &mut Vec<ConfigError>,
) -> Option<Dialect> {
    let name = &entry.name;
    // The dialect.
    match (backend.kind.value, &entry.dialect) {
        (Kind::Http, Some(d)) => Some(d.value),
        (Kind::Http, None) => crate::connect::preferred_dialect(backend),
        (kind, Some(d)) => {
            found.push(role_problem(
                d.loc.clone(),
                name,
                format!(
                    "`dialect` applies to HTTP backends; backend `{}` is of kind `{kind}`",
                    backend.name
                ),
            ));
            None
        }
        (_, None) => None,
    }
}

/// The role's settings, each checked against what its backend and dialect take.
fn role_settings(
    entry: &RoleEntry,
    backend: &Backend,
    dialect: Option<Dialect>,
    found: &mut Vec<ConfigError>,
) -> Settings {
    let name = &entry.name;
    // The settings, each checked against what this backend takes.
    let mut resolved = Settings::default();
    for (setting, value, loc) in &entry.settings {
        match settings::not_taken(name, setting, backend, dialect) {
            None => resolved.set(setting, value),
            Some(problem) => found.push(ConfigError::new(loc.clone(), problem)),
        }
    }
    resolved
}

/// An inline endpoint as an anonymous backend `role:<name>`: the kind's built-in backend
/// (if any) as the base, the kind's dialect and auth, then the fields as written.
fn inline_backend(
    config: &Config,
    entry: &RoleEntry,
    inline: &roles::Inline,
    found: &mut Vec<ConfigError>,
) -> Option<Backend> {
    let kind = inline.kind.value;
    let name = format!("role:{}", entry.name);
    let base = kind.home().and_then(|h| config.registry.backend(h));
    let mut defaults = BackendPatch::empty(&name, Layer::Default);
    defaults.kind = Some(kind.kind());
    if let Some(d) = kind.dialect() {
        defaults.apis = Some(vec![d]);
    }
    let sets_key_var = inline.patches.iter().any(|p| p.api_key_env.is_some());
    defaults.auth = Some(match kind {
        InlineKind::Anthropic => Auth::XApiKey,
        // A bare OpenAI-compatible endpoint without `api_key_env` is a keyless server.
        InlineKind::OpenaiCompatible if !sets_key_var => Auth::None,
        InlineKind::OpenaiCompatible | InlineKind::OpenaiResponses | InlineKind::Gemini => {
            Auth::Bearer
        }
        InlineKind::ClaudeCode | InlineKind::Codex | InlineKind::Replay => Auth::None,
    });
    let mut patches = vec![defaults];
    patches.extend(inline.patches.iter().cloned());
    // The native Gemini API's root is the base URL given (no `/openai` to strip).
    if kind == InlineKind::Gemini {
        if let Some(p) = inline.patches.iter().rev().find(|p| p.base_url.is_some()) {
            let mut g = BackendPatch::empty(&name, p.layer.clone());
            g.gemini_url = p.base_url.clone();
            patches.push(g);
        }
    }
    if kind == InlineKind::OpenaiCompatible && !patches.iter().any(|p| p.base_url.is_some()) {
        found.push(role_problem(
            inline.kind.loc.clone(),
            &entry.name,
            "an `openai_compatible` endpoint needs `base_url` (its OpenAI-compatible root, e.g. https://api.deepseek.com)",
        ));
        return None;
    }
    match crate::registry::resolve::resolve_one(&name, base, &patches) {
        Ok(b) => Some(b),
        Err(e) => {
            found.push(e);
            None
        }
    }
}

/// Problems that stop a configured backend from being called: a dialect not served, an
/// unset key, an unset URL variable.
fn connection_problems(
    info: &RoleInfo,
    loc: &Location,
    env: &dyn EnvSource,
    found: &mut Vec<ConfigError>,
) {
    let b = &info.backend;
    if b.kind.value == Kind::Http {
        match info.dialect {
            None => found.push(role_problem(
                loc.clone(),
                &info.name,
                format!(
                    "backend `{}` lists no dialect in `apis`; accepted: {}",
                    b.name,
                    Dialect::NAMES.join(", ")
                ),
            )),
            Some(d) => {
                if let Err(e) = b.endpoint(d, &info.model, false, env) {
                    found.push(role_problem(loc.clone(), &info.name, e.to_string()));
                }
            }
        }
    }
    if b.key_status(env) == KeyStatus::Unset {
        found.push(role_problem(
            loc.clone(),
            &info.name,
            if b.name.starts_with("role:") {
                format!(
                    "backend `{}` needs a key: set the environment variable {} (in the shell, or in an env file passed with `--env-file`)",
                    b.name, b.api_key_env.value
                )
            } else {
                format!(
                    "backend `{}` needs a key: set the environment variable {} (e.g. with `switchyard init --backend {} --env-file .env.switchyard`)",
                    b.name, b.api_key_env.value, b.name
                )
            },
        ));
    }
}

/// The handle of a role: its backend (configured or custom) with its settings and policy.
fn build_llm(
    info: &RoleInfo,
    env: &dyn EnvSource,
    custom: Option<Arc<dyn CallableBackend>>,
    pool: &ClientPool,
) -> crate::error::Result<Llm> {
    if let (Some(route), None) = (&info.route, &custom) {
        let members = info
            .members
            .iter()
            .map(|m| {
                build_llm(
                    &RoleInfo {
                        route: None,
                        ..m.clone()
                    },
                    env,
                    None,
                    pool,
                )
            })
            .collect::<crate::error::Result<Vec<_>>>()?;
        let router = Arc::new(crate::router::Router::new(route.clone()));
        return Ok(Llm::routed(router, members)?
            .with_role(info.name.clone())
            .with_settings(info.settings.clone())
            .with_policy(info.policy.clone()));
    }
    let timeouts = info.policy.timeouts();
    let (inner, total): (Arc<dyn CallableBackend>, _) = match custom {
        Some(c) => (c, info.policy.total_timeout),
        None => match (info.backend.kind.value, info.dialect) {
            // A replay answers for the role of the same name in the recorded run.
            (Kind::Replay, _) => (
                crate::connect::replay_backend(&info.backend, Some(&info.name))?,
                None,
            ),
            (Kind::Http, Some(d)) => (
                Arc::new(crate::connect::http_backend_pooled(
                    &info.backend,
                    &info.model,
                    Some(d),
                    env,
                    timeouts,
                    pool,
                )?),
                None,
            ),
            // The CLI backends keep their own run limit; the role's `timeout_seconds`
            // bounds each call here.
            _ => (
                crate::connect::backend_with(&info.backend, &info.model, env, timeouts)?,
                info.policy.total_timeout,
            ),
        },
    };
    let wrapped = Arc::new(RoleBackend::new(inner, info.settings.clone(), total));
    // A role whose backend serves embeddings embeds too (`Llm::embed`).
    let embedder = crate::embed::embedder_for(&info.backend, &info.model, env, timeouts)?;
    let llm =
        super::assemble::model_handle(info.reference.clone(), wrapped, &info.backend, &info.model)
            .with_role(info.name.clone())
            .with_settings(info.settings.clone())
            .with_policy(info.policy.clone());
    Ok(match embedder {
        Some(e) => llm.with_embedder(e),
        None => llm,
    })
}

/// The call policy the run config gives a call made outside any role (`ask --config`):
/// its `retry:` and `timeouts:` sections with their overrides, read as the roles' are.
pub fn call_policy(config: &Config) -> crate::error::Result<CallPolicy> {
    let (label, spans) = match &config.run_config {
        Some(path) => (
            path.display().to_string(),
            std::fs::read_to_string(path)
                .map(|t| SpanIndex::build(&t))
                .unwrap_or_default(),
        ),
        None => ("the overrides".to_string(), SpanIndex::default()),
    };
    let mut problems = Vec::new();
    let fields = run_policy(config, &label, &spans, &mut problems);
    if let Some(found) = problems.into_iter().next() {
        return Err(crate::error::Error::Config(found.error.to_string()));
    }
    role_policy(&fields, &serde_json::Map::new())
        .map_err(|e| crate::error::Error::Config(format!("{label}: retry/timeouts: {e}")))
}

/// The run's policy fields: `retry:` as the retry schedules, and the fields of `timeouts:`
/// (`timeout_seconds`, `connect_timeout_seconds`, `first_byte_timeout_seconds`,
/// `idle_timeout_seconds`, `context_check`). Checked once here, so a mistake is reported
/// at the section rather than once per role.
fn run_policy(
    config: &Config,
    label: &str,
    spans: &SpanIndex,
    problems: &mut Vec<Found>,
) -> serde_json::Map<String, serde_json::Value> {
    let mut out = serde_json::Map::new();
    if let Some(retry) = effective_section(config, "retry") {
        out.insert("retry".into(), retry);
    }
    match effective_section(config, "timeouts") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::Object(m)) => {
            for (k, v) in m {
                if k == "retry" {
                    continue; // refused below as an unknown timeouts field
                }
                out.insert(k, v);
            }
        }
        Some(other) => problems.push(Found {
            role: None,
            error: ConfigError::new(
                section_loc(label, spans, "timeouts"),
                ConfigProblem::WrongType {
                    field: "timeouts".into(),
                    expected: "a mapping {timeout_seconds, connect_timeout_seconds, first_byte_timeout_seconds, idle_timeout_seconds, context_check}".into(),
                    found: json_type(&other).into(),
                },
            ),
        }),
    }
    // Each section checked on its own, so the error names the one at fault.
    let mut ok = true;
    let timeouts: serde_json::Map<_, _> = out
        .iter()
        .filter(|(k, _)| *k != "retry")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let checks = [
        (
            "retry",
            out.get("retry").map(|r| {
                serde_json::from_value::<crate::retry::RetryPolicy>(r.clone()).map(|_| ())
            }),
        ),
        (
            "timeouts",
            Some(
                serde_json::from_value::<CallPolicy>(serde_json::Value::Object(timeouts))
                    .map(|_| ()),
            ),
        ),
    ];
    for (section, result) in checks {
        if let Some(Err(e)) = result {
            ok = false;
            problems.push(Found {
                role: None,
                error: ConfigError::new(
                    section_loc(label, spans, section),
                    ConfigProblem::WrongType {
                        field: section.into(),
                        expected: "a call policy as docs/errors.md describes".into(),
                        found: e.to_string(),
                    },
                ),
            });
        }
    }
    if !ok {
        return serde_json::Map::new();
    }
    out
}

fn section_loc(label: &str, spans: &SpanIndex, section: &str) -> Location {
    match spans.find(&[section]) {
        Some((l, c)) => Location::at(label, l, c),
        None => Location::source(label),
    }
}

/// The run's policy fields with the role's laid over them (`retry` reason by reason).
fn role_policy(
    run: &serde_json::Map<String, serde_json::Value>,
    role: &serde_json::Map<String, serde_json::Value>,
) -> Result<CallPolicy, serde_json::Error> {
    let mut merged = run.clone();
    for (k, v) in role {
        match (merged.get_mut(k), v) {
            (Some(serde_json::Value::Object(have)), serde_json::Value::Object(add)) => {
                for (k, v) in add {
                    have.insert(k.clone(), v.clone());
                }
            }
            _ => {
                merged.insert(k.clone(), v.clone());
            }
        }
    }
    serde_json::from_value(serde_json::Value::Object(merged))
}
