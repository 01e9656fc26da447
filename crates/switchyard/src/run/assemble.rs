//! One assembly: how every door turns what it was given into a call.
//!
//! A program reaches Switchyard through several doors — a run's roles ([`Run`](super::Run)),
//! `switchyard ask`, the Python package, `switchyard bind`, the gateway's library handles.
//! Each of them must make the *same* call from the same inputs, so they go through the one
//! assembly of this module and `resolve`. Today [`Run`](super::Run),
//! `switchyard ask` and the Python package's `llm()` (a one-call run, [`OneCall`]) do; the
//! gateway (and `bind` through it) resolves a client's model name
//! with [`default_reference`], makes its handles with [`model_handle`] and prices with
//! [`Llm::cost`](crate::Llm::cost)'s rule and reads `cache:` with the library's reader, but
//! reads `retry:`/`timeouts:` itself (into the library's types, with its own longer
//! timeouts).
//!
//!
//! **Inputs**
//! - the registry's layers: the built-in backends, the user's backends file, the run
//!   config's `backends:`, the environment's `<NAME>_BASE_URL`, the overrides
//!   `backends.<name>.<field>=…` ([`Config::load_all`](crate::registry::Config::load_all));
//! - the run config (a file, or none): `llm:` (the roles), `model:`, `retry:`,
//!   `timeouts:`, `cache:`, `budget:`, `unknown_cost`, `log:`, `otel:`;
//! - a role or none: a door that makes one call ([`OneCall`]) names the role it calls as
//!   (`ask --role planner`), or none (the role `""`, a call made by no role);
//! - overrides (`llm.planner.max_tokens=…`, `model=…`, `log=…`), laid over the file;
//! - the environment ([`EnvSource`]): keys, `SWITCHYARD_MODEL`,
//!   `SWITCHYARD_BACKEND`, `<NAME>_BASE_URL`, `OTEL_EXPORTER_OTLP_*`;
//! - the door's own options: a reference given to the door (`ask mock/echo …`), which
//!   is the role's model override, and settings given to it (read as a role's); `--log <dir>`
//!   (over `log:`); `--resume`; `--replay <run_dir>` (the recorded run answers, with
//!   its reference, model and prices); whether the door exports traces itself; a backend
//!   of its own for a role (`backend_for_role`).
//!
//! **The resolved call** (one [`RoleInfo`](super::RoleInfo) and its [`Llm`](crate::Llm)):
//! - the reference, by the precedence of `precedence`, a reference naming only
//!   a backend completed with its default model ([`default_reference`]);
//! - the backend (registry or inline endpoint) with the role's price, context window and
//!   `extra_body` laid over it, and the dialect;
//! - the settings, each checked by one reader ([`super::settings`]) against what that
//!   backend and dialect take, with one error message whatever the door;
//! - retry and timeouts: the run's `retry:`/`timeouts:` with the role's own over them;
//! - the route, when the model names one, each member resolved as the role would be;
//! - the cache (`cache:`, answering from the run directory), the budget (`budget:`,
//!   shared by every role of the run and carried across `--resume`), the recorder
//!   (`log:` or the door's log directory), and the prices the budget and records count.
//!
//! `switchyard ask` is a run of one role: [`RunBuilder::one_call`](super::RunBuilder::one_call)
//! keeps the role it names (or makes it, when the config has none of that name) and drops
//! the others, and everything else is what [`Run`](super::Run) does.

use std::collections::BTreeMap;

use super::precedence::MODEL_VAR;
use super::resolve::Found;
use super::roles::{Located, RoleEntry, RoleForm};
use crate::config_error::Location;
use crate::env::EnvSource;
use crate::registry::Registry;

/// Where the door's own settings are said to come from in a problem.
const SETTINGS_GIVEN: &str = "the settings given";

/// The environment variable naming the backend a call made with no model uses (its
/// default model): below `SWITCHYARD_MODEL` and any model named.
pub const BACKEND_VAR: &str = "SWITCHYARD_BACKEND";

/// What a door that makes one call asks for: the role it calls as, and a reference given to
/// the door itself (which wins over the role's model, as the override
/// `llm.<role>.model=…` would).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OneCall {
    /// The role of the run config to call as; `None` is a call made by no role.
    pub role: Option<String>,
    /// The model given to the door (`ask mock/echo …`, `llm("mock/echo")`).
    pub reference: Option<String>,
    /// Settings given to the door (Python's `llm("mock/echo", max_tokens=100)`), laid over
    /// the role's own and read by the reader of a role's settings: a setting the backend
    /// does not take is refused with the message a run config gets.
    pub settings: Vec<(String, serde_json::Value)>,
}

impl OneCall {
    /// The role's name in the run (`""` for none).
    pub(crate) fn name(&self) -> &str {
        self.role.as_deref().unwrap_or("")
    }

    /// Keeps only the called role among `entries` (made when the config has no role of
    /// that name: a name for the caller in records, budgets and replay), with the door's
    /// reference as its model override; drops the problems of the other roles.
    pub(crate) fn select(
        &self,
        entries: &mut BTreeMap<String, RoleEntry>,
        problems: &mut Vec<Found>,
    ) {
        let name = self.name().to_string();
        let mut entry = entries.remove(&name).unwrap_or_else(|| {
            RoleEntry::new(
                &name,
                RoleForm::Reference,
                Location::source("the command line"),
            )
        });
        if let Some(reference) = &self.reference {
            entry.model_override = Some(Located {
                value: reference.clone(),
                loc: Location::source("the reference given"),
            });
        }
        self.read_settings(&mut entry, problems);
        // The other roles' own problems go with them; a problem naming a role the config
        // lacks (an override `llm.plannr.…`) is the call's, and stays.
        let others: Vec<String> = std::mem::take(entries).into_keys().collect();
        entries.insert(name.clone(), entry);
        problems.retain(|p| p.role.as_ref().is_none_or(|r| !others.contains(r)));
    }

    /// Reads the door's settings into `entry`, as the mapping `{<setting>: <value>…}` of an
    /// override of the role.
    fn read_settings(&self, entry: &mut RoleEntry, problems: &mut Vec<Found>) {
        if self.settings.is_empty() {
            return;
        }
        let mut mapping = serde_yaml_ng::Mapping::new();
        for (key, value) in &self.settings {
            match serde_yaml_ng::to_value(value) {
                Ok(v) => {
                    mapping.insert(serde_yaml_ng::Value::String(key.clone()), v);
                }
                Err(e) => problems.push(Found {
                    role: Some(entry.name.clone()),
                    error: crate::config_error::ConfigError::new(
                        Location::source(SETTINGS_GIVEN),
                        crate::config_error::ConfigProblem::Invalid {
                            field: key.clone(),
                            message: format!("`{key}` cannot be read as a setting: {e}"),
                        },
                    ),
                }),
            }
        }
        let src = crate::registry::patch::LayerSource {
            layer: crate::registry::Layer::Override,
            label: SETTINGS_GIVEN.to_string(),
            spans: None,
            prefix: Vec::new(),
        };
        let mut errors = Vec::new();
        // The role's form is kept: the door's settings are not an inline endpoint.
        let form = entry.form;
        super::roles::parse_role(
            entry,
            &serde_yaml_ng::Value::Mapping(mapping),
            &src,
            true,
            &mut errors,
        );
        if entry.form == RoleForm::Mapping && form == RoleForm::Reference {
            entry.form = form;
        }
        problems.extend(errors.into_iter().map(|error| Found {
            role: Some(entry.name.clone()),
            error,
        }));
    }

    /// The error of a one-call run that cannot open. A call made by no role has no role
    /// to place its own problems at, and a run with no config file no file: their
    /// problems say just what is wrong. A config's problems are listed as a run lists them.
    pub(crate) fn error_text(&self, report: &super::CheckReport) -> String {
        let unnamed = |p: &super::Problem| p.role.as_deref() == Some("") && self.role.is_none();
        let no_file = report.config == super::resolve::NO_FILE;
        if report.problems.is_empty() || !(no_file || report.problems.iter().all(unnamed)) {
            return report.problems_text();
        }
        let lines: Vec<String> = report
            .problems
            .iter()
            .map(|p| match p.message.strip_prefix("role ``: ") {
                // Where the model came from, when the environment named it.
                Some(message) if unnamed(p) && p.location.starts_with("environment variable ") => {
                    format!("{message} (from {})", p.location)
                }
                Some(message) if unnamed(p) => message.to_string(),
                // `role `planner`: role `planner` has no model…` says it once.
                _ if said_twice(&p.message).is_some() => {
                    said_twice(&p.message).unwrap_or_default().to_string()
                }
                _ if p.location == super::resolve::NO_FILE => p.message.clone(),
                _ => p.to_string(),
            })
            .collect();
        match lines.as_slice() {
            [one] => one.clone(),
            many => format!("{} problems:\n  {}", many.len(), many.join("\n  ")),
        }
    }

    /// The message for a call that names no model and gets none from the defaults.
    pub(crate) fn no_model_message(&self) -> String {
        match &self.role {
            Some(role) => super::precedence::no_model_message(role),
            None => format!(
                "no model: give a reference (`mock/echo`, `openai/gpt-5`), or name one with the override `model=…`, \
                 the environment variable {MODEL_VAR}, {BACKEND_VAR} (a backend, called with its default model) \
                 or `model:` in the run config"
            ),
        }
    }
}

/// The message of a role problem whose text names the role again (`role `planner`: role
/// `planner` has no model…`), without the first naming.
fn said_twice(message: &str) -> Option<&str> {
    let (head, rest) = message.split_once(": ")?;
    (head.starts_with("role `") && rest.starts_with(head)).then_some(rest)
}

/// What every door says of `text` naming a backend that declares no default model
/// ([`default_reference`] gave `None`).
pub fn no_default_model(text: &str) -> String {
    format!(
        "`{text}` names a backend that declares no default model: name one (`{text}/<model id>`), \
         or give the backend `default_model: <model id>`"
    )
}

/// The reference a call is made with when `text` names only a backend (`vertex`,
/// `mock`): that backend's default model; any other text is returned as it is.
///
/// `None` when `text` is a backend without a default model (the caller's error then says
/// to name one).
pub fn default_reference(registry: &Registry, text: &str) -> Option<String> {
    if text.contains('/') || registry.route(text).is_some() {
        return Some(text.to_string());
    }
    match registry.backend(text) {
        Some(b) => b
            .default_model
            .as_ref()
            .map(|m| format!("{}/{}", b.name, m.value)),
        None => Some(text.to_string()),
    }
}

/// The handle of `model` on the registry's `backend`, called through `inner`, with what
/// the registry says of that model: its price (what records, budgets and
/// [`Llm::cost`](crate::Llm::cost) count) and its context window.
///
/// Every door's handle of a model is made here: a run's roles (and so `ask`) and the
/// gateway's upstream targets, so that a model is priced and bounded alike whichever door
/// calls it.
pub fn model_handle(
    label: impl Into<String>,
    inner: std::sync::Arc<dyn crate::backend::Backend>,
    backend: &crate::registry::Backend,
    model: &str,
) -> crate::Llm {
    crate::Llm::new(label, inner, model.to_string())
        .with_price(backend.price(model).map(|p| p.value))
        .with_context_window(backend.context_window.as_ref().map(|w| w.value))
}

/// The model a caller that names none gets from the environment, by the seeds'
/// precedence: an explicit `model` first, then `SWITCHYARD_MODEL`, then
/// `SWITCHYARD_BACKEND` (its default model); a text naming only a backend becomes that
/// backend's default model. `Ok(None)` when nothing names one.
///
/// A one-call run follows the same precedence in its resolver (a role naming no model);
/// this is it for a caller holding only a registry ([`crate::run::llm_with`]).
pub fn model_from_env(
    registry: &Registry,
    model: Option<&str>,
    env: &dyn EnvSource,
) -> crate::Result<Option<String>> {
    let named = model
        .map(str::to_string)
        .filter(|m| !m.is_empty())
        .or_else(|| env.var(MODEL_VAR).filter(|m| !m.is_empty()))
        .or_else(|| env.var(BACKEND_VAR).filter(|m| !m.is_empty()));
    let Some(text) = named else {
        return Ok(None);
    };
    default_reference(registry, &text)
        .map(Some)
        .ok_or_else(|| crate::Error::Config(no_default_model(&text)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::MapEnv;
    use crate::registry::LoadOptions;

    fn registry() -> Registry {
        let env = MapEnv::default();
        let mut opts = LoadOptions::new(&env);
        opts.user_file = false;
        Registry::load(&opts).unwrap()
    }

    #[test]
    fn a_model_given_wins_then_switchyard_model_then_switchyard_backend() {
        let r = registry();
        let none = MapEnv::default();
        assert_eq!(model_from_env(&r, None, &none).unwrap(), None);
        let backend = MapEnv::new([(BACKEND_VAR, "vertex")]);
        assert_eq!(
            model_from_env(&r, None, &backend).unwrap().as_deref(),
            Some("vertex/gemini-2.5-flash")
        );
        let both = MapEnv::new([(BACKEND_VAR, "vertex"), (MODEL_VAR, "mock/mock-small")]);
        assert_eq!(
            model_from_env(&r, None, &both).unwrap().as_deref(),
            Some("mock/mock-small")
        );
        assert_eq!(
            model_from_env(&r, Some("mock"), &both).unwrap().as_deref(),
            Some("mock/echo")
        );
        assert_eq!(
            model_from_env(&r, Some("openai/gpt-5"), &both)
                .unwrap()
                .as_deref(),
            Some("openai/gpt-5")
        );
        let e = model_from_env(&r, Some("openai"), &none).unwrap_err();
        assert_eq!(e.to_string(), no_default_model("openai"));
    }

    #[test]
    fn default_reference_completes_only_a_backend_named_alone() {
        let r = registry();
        assert_eq!(
            default_reference(&r, "vertex").as_deref(),
            Some("vertex/gemini-2.5-flash")
        );
        assert_eq!(default_reference(&r, "mock/x").as_deref(), Some("mock/x"));
        assert_eq!(default_reference(&r, "openai"), None);
        // Not a backend: left for the resolver to refuse with its own message.
        assert_eq!(default_reference(&r, "nope").as_deref(), Some("nope"));
    }
}
