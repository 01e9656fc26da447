//! Which model a role gets.
//!
//! Highest first:
//! 1. an override of the role given in code or on the command line (`llm.planner.model=…`,
//!    `llm.planner=…`);
//! 2. the role's own entry in the config;
//! 3. a top-level `model=…` override — it moves every role that names no model of its own,
//!    and only those;
//! 4. the `SWITCHYARD_MODEL` environment variable;
//! 5. the config's top-level `model:`;
//! 6. the `SWITCHYARD_BACKEND` environment variable: that backend's default model.
//!
//! A model naming only a backend (`vertex`) is that backend's `default_model`.
//!
//! With none of them, the role has no model and that is an error that says so.

use serde::Serialize;

/// The environment variable naming the default model.
pub const MODEL_VAR: &str = "SWITCHYARD_MODEL";

/// Where a role's model came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ModelSource {
    /// `llm.<role>.model=…` (or `llm.<role>=…`) given in code or on the command line.
    RoleOverride,
    /// The role's own entry in the config.
    RoleEntry,
    /// A top-level `model=…` override.
    ModelOverride,
    /// The `SWITCHYARD_MODEL` environment variable.
    EnvVar,
    /// The config's top-level `model:`.
    TopLevel,
    /// The `SWITCHYARD_BACKEND` environment variable (the backend's default model).
    BackendVar,
}

impl ModelSource {
    /// How the source is named in reports.
    pub fn describe(self) -> &'static str {
        match self {
            ModelSource::RoleOverride => "role override",
            ModelSource::RoleEntry => "role entry",
            ModelSource::ModelOverride => "model= override",
            ModelSource::EnvVar => "SWITCHYARD_MODEL",
            ModelSource::TopLevel => "top-level model",
            ModelSource::BackendVar => "SWITCHYARD_BACKEND",
        }
    }
}

/// Every place a role's model can come from.
#[derive(Debug, Clone, Default)]
pub(crate) struct Candidates<'a> {
    /// `llm.<role>.model=…` given in code or on the command line.
    pub role_override: Option<&'a str>,
    /// The role's own entry.
    pub role_entry: Option<&'a str>,
    /// A top-level `model=…` override.
    pub model_override: Option<&'a str>,
    /// `SWITCHYARD_MODEL`.
    pub env_var: Option<&'a str>,
    /// The config's top-level `model:`.
    pub top_level: Option<&'a str>,
    /// `SWITCHYARD_BACKEND`.
    pub backend_var: Option<&'a str>,
}

/// The model a role gets and where it came from; `None` when nothing names one.
pub(crate) fn choose<'a>(c: &Candidates<'a>) -> Option<(&'a str, ModelSource)> {
    [
        (c.role_override, ModelSource::RoleOverride),
        (c.role_entry, ModelSource::RoleEntry),
        (c.model_override, ModelSource::ModelOverride),
        (c.env_var, ModelSource::EnvVar),
        (c.top_level, ModelSource::TopLevel),
        (c.backend_var, ModelSource::BackendVar),
    ]
    .into_iter()
    .find_map(|(m, s)| m.filter(|m| !m.is_empty()).map(|m| (m, s)))
}

/// The message for a role without a model.
pub(super) fn no_model_message(role: &str) -> String {
    format!(
        "role `{role}` has no model: give it one (`llm.{role}: <backend>/<model>` or `llm.{role}.model=…`), \
         or set a default with a top-level `model:`, the override `model=…` or the environment variable {MODEL_VAR}"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Candidates<'static> {
        Candidates {
            role_override: Some("a/override"),
            role_entry: Some("a/entry"),
            model_override: Some("a/model-override"),
            env_var: Some("a/env"),
            top_level: Some("a/top"),
            backend_var: Some("a"),
        }
    }

    #[test]
    fn each_rule_beats_the_ones_below() {
        let mut c = all();
        assert_eq!(choose(&c), Some(("a/override", ModelSource::RoleOverride)));
        c.role_override = None;
        assert_eq!(choose(&c), Some(("a/entry", ModelSource::RoleEntry)));
        c.role_entry = None;
        assert_eq!(
            choose(&c),
            Some(("a/model-override", ModelSource::ModelOverride))
        );
        c.model_override = None;
        assert_eq!(choose(&c), Some(("a/env", ModelSource::EnvVar)));
        c.env_var = Some("");
        assert_eq!(choose(&c), Some(("a/top", ModelSource::TopLevel)));
        c.top_level = None;
        assert_eq!(choose(&c), Some(("a", ModelSource::BackendVar)));
        c.backend_var = None;
        assert_eq!(choose(&c), None);
        assert!(no_model_message("planner").contains("SWITCHYARD_MODEL"));
    }
}
