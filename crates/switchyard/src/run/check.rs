//! The check of a run config, as data: per role what it resolves to and whether it can
//! work, and every problem found, all at once.
//!
//! Every command that runs a config runs this first and refuses to start when
//! [`CheckReport::ok`] is false ([`Run::open`](super::Run::open) does it for the library;
//! `switchyard check` prints it).

use serde::Serialize;

use super::precedence::ModelSource;
use super::resolve::{Found, Prepared};
use super::roles::RoleForm;
use super::settings::Settings;
use crate::env::EnvSource;
use crate::registry::{Dialect, KeyStatus, Kind};
use crate::secrets;

/// What a check found.
///
/// Nothing in it echoes a key written in the config: values that look like keys are shown
/// as `<redacted>`.
#[derive(Debug, Clone, Serialize)]
pub struct CheckReport {
    /// The run config checked.
    pub config: String,
    /// True when there is no problem at all: every role can work and the file is sound.
    pub ok: bool,
    /// False when the run config could not be read (missing, unreadable, not YAML, not a
    /// mapping): its roles are then unknown, and none is listed.
    pub config_read: bool,
    /// Every role, sorted by name.
    pub roles: Vec<RoleCheck>,
    /// Every problem, in the order found: those of the file as a whole first.
    pub problems: Vec<Problem>,
}

/// One role.
#[derive(Debug, Clone, Serialize)]
pub struct RoleCheck {
    /// The role's name.
    pub role: String,
    /// How it is written.
    pub form: RoleForm,
    /// The reference it resolves to (`None` when it could not be resolved).
    pub reference: Option<String>,
    /// Where the model came from.
    pub model_from: Option<ModelSource>,
    /// The backend.
    pub backend: Option<String>,
    /// The backend's kind.
    pub kind: Option<Kind>,
    /// The model id on the backend.
    pub model: Option<String>,
    /// The dialect it will be called in (HTTP backends).
    pub dialect: Option<Dialect>,
    /// Whether the backend serves that dialect (`None` for other kinds).
    pub served: Option<bool>,
    /// The variable holding the key, when one is used.
    pub key_variable: Option<String>,
    /// Whether that variable is set.
    pub key: Option<KeyStatus>,
    /// Whether the model's price is known.
    pub price_known: Option<bool>,
    /// The context window, when known.
    pub context_window: Option<u64>,
    /// The role is called through a backend given in code.
    pub custom_backend: bool,
    /// The role's settings.
    pub settings: Settings,
    /// True when the role has no problem.
    pub ok: bool,
    /// The route the role's model names, when it names one (the fields above are then
    /// its first member's).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route: Option<String>,
    /// A route's members, each as the role resolves on it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<RoleCheck>,
}

/// One problem.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    /// The role it belongs to, when it belongs to one (`None`: the file as a whole, such
    /// as an unknown top-level key, a YAML error or a `budget:` field).
    pub role: Option<String>,
    /// Where: `file:line:col`, an override, an environment variable, or `role \`x\``.
    pub location: String,
    /// What is wrong and what is accepted.
    pub message: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.location, self.message)
    }
}

impl CheckReport {
    /// The roles that cannot work.
    pub fn failing_roles(&self) -> usize {
        self.roles.iter().filter(|r| !r.ok).count()
    }

    /// The problems that belong to no role listed: the file as a whole (a YAML error, an
    /// unknown top-level key, `budget:`), or an override or custom backend naming a role
    /// the config lacks.
    pub fn file_problems(&self) -> impl Iterator<Item = &Problem> {
        self.problems.iter().filter(|p| match &p.role {
            None => true,
            Some(role) => !self.roles.iter().any(|r| &r.role == role),
        })
    }

    /// The problems as lines, for an error message.
    pub fn problems_text(&self) -> String {
        let n = self.problems.len();
        let mut out = format!(
            "the run config {} has {n} problem{}:",
            self.config,
            if n == 1 { "" } else { "s" }
        );
        for p in &self.problems {
            out.push_str("\n  ");
            out.push_str(&p.to_string());
        }
        out
    }

    pub(crate) fn from_prepared(
        config: String,
        p: &Prepared,
        custom: &dyn Fn(&str) -> bool,
        env: &dyn EnvSource,
    ) -> Self {
        let problems: Vec<Problem> = p.problems.iter().map(problem).collect();
        let failing = |role: &str| problems.iter().any(|x| x.role.as_deref() == Some(role));
        let mut roles = Vec::new();
        for name in &p.role_names {
            let info = p.roles.iter().find(|r| &r.name == name);
            let Some(info) = info else {
                roles.push(RoleCheck {
                    role: name.clone(),
                    form: RoleForm::Mapping,
                    reference: None,
                    model_from: None,
                    backend: None,
                    kind: None,
                    model: None,
                    dialect: None,
                    served: None,
                    key_variable: None,
                    key: None,
                    price_known: None,
                    context_window: None,
                    custom_backend: custom(name),
                    settings: Settings::default(),
                    ok: false,
                    route: None,
                    members: Vec::new(),
                });
                continue;
            };
            let ok = !failing(name);
            let mut check = role_check(info, custom(name), ok, env);
            check.members = info
                .members
                .iter()
                .map(|m| role_check(m, false, ok, env))
                .collect();
            roles.push(check);
        }
        CheckReport {
            config,
            ok: problems.is_empty(),
            config_read: p.file_read,
            roles,
            problems,
        }
    }
}

/// What the check shows of one resolved role (or one member of a route's role).
fn role_check(
    info: &super::resolve::RoleInfo,
    custom_backend: bool,
    ok: bool,
    env: &dyn EnvSource,
) -> RoleCheck {
    let name = &info.name;
    let b = &info.backend;
    RoleCheck {
        role: name.clone(),
        form: info.form,
        reference: Some(secrets::redact_words(&info.reference)),
        model_from: Some(info.model_from),
        backend: Some(b.name.clone()),
        kind: Some(b.kind.value),
        model: Some(secrets::redact_words(&info.model)),
        dialect: info.dialect,
        served: match (b.kind.value, info.dialect) {
            (Kind::Http, Some(d)) => Some(b.serves(d)),
            (Kind::Http, None) => Some(false),
            _ => None,
        },
        key_variable: (!b.uses_no_key()).then(|| b.api_key_env.value.clone()),
        key: Some(b.key_status(env)),
        price_known: Some(b.price(&info.model).is_some()),
        context_window: b.context_window.as_ref().map(|c| c.value),
        custom_backend,
        settings: redacted_settings(&info.settings),
        ok,
        route: info.route.as_ref().map(|r| r.name.clone()),
        members: Vec::new(),
    }
}

/// A problem as shown: a message may quote a value as written (an unknown dialect, a
/// budget that is not a number), and a key written in the config must not come back.
fn problem(f: &Found) -> Problem {
    Problem {
        role: f.role.clone(),
        location: secrets::redact_words(&f.error.location.to_string()),
        message: secrets::redact_words(&f.error.problem.to_string()),
    }
}

/// The settings as shown: a key written in `extra_body` (refused, and reported) is not
/// printed back by `check --json`.
fn redacted_settings(settings: &Settings) -> Settings {
    let mut s = settings.clone();
    for stop in &mut s.stop {
        *stop = secrets::redact_words(stop);
    }
    s.extra_body.values_mut().for_each(secrets::redact_json);
    s.policy.values_mut().for_each(secrets::redact_json);
    s
}
