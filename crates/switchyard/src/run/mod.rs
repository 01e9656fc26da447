//! A run: one config naming a model and settings for each role (planner, proposer,
//! reviewer…), resolved once, before the first call, with every problem listed.
//!
//! ```no_run
//! # fn demo() -> switchyard::Result<()> {
//! use switchyard::run::Run;
//!
//! // model: mock/echo
//! // llm:
//! //   planner: {model: mock/think, max_tokens: 2000}
//! //   reviewer: mock/echo
//! let run = Run::open("run.yaml")?;
//! let planner = run.llm("planner")?;
//! # let _ = planner;
//! # Ok(()) }
//! ```
//!
//! See `docs/configuration.md` for the three forms of a role, the settings each backend
//! kind takes and the precedence of models.

pub mod assemble;
mod check;
mod precedence;
mod replay_call;
mod resolve;
mod role_backend;
mod roles;
pub mod settings;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use assemble::{
    default_reference, model_from_env, model_handle, no_default_model, OneCall, BACKEND_VAR,
};
pub use check::{CheckReport, Problem, RoleCheck};
pub use precedence::{ModelSource, MODEL_VAR};
pub use resolve::{call_policy, default_model, RoleInfo};
pub use role_backend::RoleBackend;
pub use roles::{InlineKind, RoleForm, INLINE_KEYS, MAPPING_KEYS};
pub use settings::{accepted as accepted_settings, SettingSpec, Settings, ValueShape, SETTINGS};

use crate::backend::Backend;
use crate::budget::{Budget, BudgetTracker};
use crate::env::{EnvSource, ProcessEnv};
use crate::error::{Error, Result};
use crate::internal::suggest::nearest;
use crate::llm::Llm;
use crate::record::{Recorder, RecorderOptions, RunInfo};
use crate::registry::{Config, LoadOptions};

/// A resolved run: a handle per role.
pub struct Run {
    config: Config,
    roles: Vec<RoleInfo>,
    llms: BTreeMap<String, Llm>,
    report: CheckReport,
    recorder: Option<Arc<Recorder>>,
    /// Set when the run was opened for one call.
    one: Option<OneCall>,
    /// The recorded run a one-call run answers from.
    replayed: Option<PathBuf>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("config", &self.report.config)
            .field("roles", &self.llms.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Run {
    /// Loads `path` (with the built-ins, your backends file and the process environment),
    /// resolves every role and checks that each can work; the error lists every problem.
    pub fn open(path: impl AsRef<Path>) -> Result<Run> {
        Run::builder(path).open()
    }

    /// Like [`open`](Self::open), with overrides (`llm.planner.model=…`, `model=…`,
    /// `backends.vllm.base_url=…`) and the environment to read keys and
    /// `SWITCHYARD_MODEL` from.
    pub fn open_with<S: Into<String>>(
        path: impl AsRef<Path>,
        overrides: impl IntoIterator<Item = S>,
        env: &dyn EnvSource,
    ) -> Result<Run> {
        Run::builder(path).overrides(overrides).env(env).open()
    }

    /// A run with more options: overrides, an environment, a backend of your own for a role.
    pub fn builder<'a>(path: impl AsRef<Path>) -> RunBuilder<'a> {
        RunBuilder::new(Some(path.as_ref().to_path_buf()))
    }

    /// A run with no config file: the built-ins, your backends file, the overrides and
    /// the environment only (what `switchyard ask` without `--config` runs).
    pub fn builder_without_config<'a>() -> RunBuilder<'a> {
        RunBuilder::new(None)
    }

    /// The handle of a run opened for one call ([`RunBuilder::one_call`]): the role it
    /// calls as, or none.
    pub fn call_llm(&self) -> Result<Llm> {
        let name = self
            .one
            .as_ref()
            .map(|o| o.name().to_string())
            .unwrap_or_default();
        let llm = self.llm(&name)?;
        // A call made by no role is recorded with none.
        Ok(if name.is_empty() {
            llm.without_role()
        } else {
            llm
        })
    }

    /// The handle of `role`. An unknown role is an error listing the roles.
    pub fn llm(&self, role: &str) -> Result<Llm> {
        self.llms.get(role).cloned().ok_or_else(|| {
            let hint = nearest(role, self.llms.keys().map(String::as_str))
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            Error::Config(format!(
                "the run config {} has no role `{role}`{hint}; roles: {}",
                self.report.config,
                self.role_names().join(", ")
            ))
        })
    }

    /// Every role, resolved, sorted by name.
    pub fn roles(&self) -> &[RoleInfo] {
        &self.roles
    }

    /// The role called `name`.
    pub fn role(&self, name: &str) -> Option<&RoleInfo> {
        self.roles.iter().find(|r| r.name == name)
    }

    /// The roles' names, sorted.
    pub fn role_names(&self) -> Vec<&str> {
        self.roles.iter().map(|r| r.name.as_str()).collect()
    }

    /// The loaded config (backends, sections, overrides).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The check made when the run was opened (every role fine).
    pub fn report(&self) -> &CheckReport {
        &self.report
    }

    /// The recorder of the run directory, when the run records (`log:`).
    pub fn recorder(&self) -> Option<&Arc<Recorder>> {
        self.recorder.as_ref()
    }

    /// Gives every role's handle the run's budget and, with `log:`, the recorder.
    fn attach_budget_and_log(&mut self, resume: bool, door_log: Option<PathBuf>) -> Result<()> {
        // The door's own run directory (`ask --log`) wins over `log:` and `log=`.
        let dir = match door_log {
            Some(dir) => Some(dir),
            None => log_dir(&self.config)?,
        };
        if let Some(budget) = Budget::from_sections(&self.config.sections)? {
            // A replaying handle's prices are the recorded run's, checked here (a role's
            // were checked when it was resolved).
            if self.replayed.is_some() {
                budget.check_prices(self.llms.values().map(|l| ("", l.label(), l.price())))?;
            }
            let resumed = dir.as_deref().filter(|_| resume);
            let tracker = Arc::new(BudgetTracker::for_run(budget, resumed)?);
            for llm in self.llms.values_mut() {
                *llm = llm.clone().with_budget(tracker.clone());
            }
        }
        let Some(dir) = dir else {
            return Ok(());
        };
        let mut info = RunInfo::new().settings(&self.config.sections);
        for role in &self.roles {
            // The registry's backend as configured; an inline endpoint's own (`role:<name>`).
            let backend = self
                .config
                .registry
                .backend(&role.backend.name)
                .unwrap_or(&role.backend);
            info = info.role_of(&role.name, &role.reference, &role.model, backend);
        }
        if let (Some(replayed), Some(one)) = (&self.replayed, &self.one) {
            info = replay_call::replay_info(info, replayed, one);
        }
        // A replay answers from its recorded run, not from this run's cache.
        let cache = match self.replayed {
            Some(_) => None,
            None => self.cache_over(&dir)?,
        };
        let recorder = Recorder::create(
            &dir,
            &info,
            RecorderOptions {
                resume,
                cache: cache.as_ref().map(|c| c.index().clone()),
                ..RecorderOptions::default()
            },
        )?;
        if let Some(cache) = &cache {
            // After the recorder opened the index (and caught it up with the log).
            cache.load(false);
        }
        for llm in self.llms.values_mut() {
            let mut with = llm.clone().with_recorder(recorder.clone());
            if let Some(cache) = &cache {
                with = with.with_cache(cache.clone());
            }
            *llm = with;
        }
        self.recorder = Some(recorder);
        Ok(())
    }
}

impl Run {
    /// The run's response cache over `dir` (`cache:`; `None` when off), its scope `run`
    /// unless the config says `store`.
    fn cache_over(&self, dir: &Path) -> Result<Option<Arc<crate::cache::Cache>>> {
        let Some(value) = resolve::effective_section(&self.config, "cache") else {
            return Ok(None);
        };
        let mut errors = Vec::new();
        let config = crate::cache::read_cache(&value, &mut errors);
        if !errors.is_empty() {
            return Err(Error::Config(errors.join("; ")));
        }
        Ok(config
            .reads()
            .then(|| crate::cache::Cache::new(config, dir, crate::cache::CacheScope::Run)))
    }
}

/// Options of a [`Run`].
pub struct RunBuilder<'a> {
    path: Option<PathBuf>,
    overrides: Vec<String>,
    env: Option<&'a dyn EnvSource>,
    user_file: bool,
    custom: BTreeMap<String, Arc<dyn Backend>>,
    resume: bool,
    one: Option<OneCall>,
    log: Option<PathBuf>,
    trace: bool,
    replay: Option<PathBuf>,
    /// The run config's text when it is held in memory (`path` then only names it).
    text: Option<String>,
}

impl<'a> RunBuilder<'a> {
    fn new(path: Option<PathBuf>) -> Self {
        RunBuilder {
            path,
            overrides: Vec::new(),
            env: None,
            user_file: true,
            custom: BTreeMap::new(),
            resume: false,
            one: None,
            log: None,
            trace: true,
            replay: None,
            text: None,
        }
    }

    /// Opens the run for one call (a door such as `switchyard ask`): only `call.role` is
    /// resolved — the config's role of that name, or a role made for the call when the
    /// config has none — with `call.reference` as its model override. Take the handle
    /// with [`Run::call_llm`].
    pub fn one_call(mut self, call: OneCall) -> Self {
        self.one = Some(call);
        self
    }

    /// Answers the one call ([`one_call`](Self::one_call)) from the recorded run in
    /// `run_dir` (`ask --replay`), with that run's reference, model and prices; the
    /// config's `retry:`, `timeouts:`, budget and run directory still apply.
    pub fn replay(mut self, run_dir: impl Into<PathBuf>) -> Self {
        self.replay = Some(run_dir.into());
        self
    }

    /// Records into `dir`, over the config's `log:` and the override `log=…`.
    pub fn log(mut self, dir: impl Into<PathBuf>) -> Self {
        self.log = Some(dir.into());
        self
    }

    /// Whether [`open`](Self::open) starts the trace export (default true; false for a
    /// door that starts and flushes it itself).
    pub fn trace(mut self, start: bool) -> Self {
        self.trace = start;
        self
    }

    fn label(&self) -> String {
        self.path
            .as_ref()
            .map_or(resolve::NO_FILE.to_string(), |p| p.display().to_string())
    }

    /// Adds overrides, as on the command line: `llm.planner.model=openai/gpt-5`,
    /// `llm.planner.max_tokens=4000`, `model=vllm/qwen`, `backends.vllm.base_url=…`.
    pub fn overrides<S: Into<String>>(mut self, overrides: impl IntoIterator<Item = S>) -> Self {
        self.overrides.extend(overrides.into_iter().map(Into::into));
        self
    }

    /// Gives `role` the model `reference` (the override `llm.<role>.model=<reference>`).
    pub fn model_for_role(mut self, role: &str, reference: &str) -> Self {
        self.overrides.push(format!("llm.{role}.model={reference}"));
        self
    }

    /// Reads keys, `<NAME>_BASE_URL`, `SWITCHYARD_MODEL` and the user's file location
    /// from `env` instead of the process environment.
    pub fn env(mut self, env: &'a dyn EnvSource) -> Self {
        self.env = Some(env);
        self
    }

    /// Reads the run config from `text` (YAML, or JSON) instead of the file: a config
    /// held in memory, such as a Python program's dict. The builder's path names it in
    /// messages and in the check report.
    pub fn config_text(mut self, text: impl Into<String>) -> Self {
        self.text = Some(text.into());
        self
    }

    /// Whether to read your backends file (default true; false for hermetic tests).
    pub fn user_file(mut self, read: bool) -> Self {
        self.user_file = read;
        self
    }

    /// Calls `role` through `backend` instead of the backend its config names. The model
    /// id still comes from the config, and the role's settings still apply; the configured
    /// backend's key and dialect are then not required.
    pub fn backend_for_role(mut self, role: &str, backend: Arc<dyn Backend>) -> Self {
        self.custom.insert(role.to_string(), backend);
        self
    }

    fn prepare(&self) -> resolve::Prepared {
        let process = ProcessEnv;
        let env: &dyn EnvSource = self.env.unwrap_or(&process);
        let mut opts = LoadOptions::new(env);
        opts.run_config = self.path.clone();
        opts.overrides = self.overrides.clone();
        opts.user_file = self.user_file;
        // Past the loader's problems: the roles are checked with what could be read, so
        // one mistake in the file does not hide the others.
        let loaded = match (&self.text, &self.path) {
            (Some(text), Some(path)) => Config::load_all_run_config_text(&opts, path, text),
            _ => Config::load_all(&opts),
        };
        let door = resolve::Door {
            one: self.one.as_ref(),
            log_given: self.log.is_some(),
            replaying: self.replay.is_some() && self.one.is_some(),
        };
        let mut p = resolve::prepare(
            loaded.config,
            loaded.problems,
            self.path.as_deref(),
            env,
            &self.custom,
            &door,
        );
        p.file_read = loaded.run_config_read;
        p
    }

    fn report(&self, p: &resolve::Prepared) -> CheckReport {
        let process = ProcessEnv;
        let env: &dyn EnvSource = self.env.unwrap_or(&process);
        CheckReport::from_prepared(self.label(), p, &|role| self.custom.contains_key(role), env)
    }

    /// Checks the config without opening the run: every role and every problem.
    pub fn check(&self) -> CheckReport {
        let p = self.prepare();
        self.report(&p)
    }

    /// Opens the run, or gives the check report when a role cannot work.
    pub fn open_checked(self) -> std::result::Result<Run, CheckReport> {
        let p = self.prepare();
        let report = self.report(&p);
        match p.config {
            // `ok` is false whenever any problem was found, the loader's included.
            Some(config) if report.ok => Ok(Run {
                config,
                roles: p.roles,
                llms: p.llms,
                report,
                recorder: None,
                one: self.one,
                replayed: None,
            }),
            _ => Err(report),
        }
    }

    /// Appends to a run directory that already holds a run (`log:`), instead of refusing it.
    pub fn resume(mut self, resume: bool) -> Self {
        self.resume = resume;
        self
    }

    /// Opens the run; the error ([`Error::Config`]) lists every problem.
    ///
    /// The run's `budget:` is shared by every role's handle, and with `log:` (or the
    /// override `log=<dir>`) every call is recorded in that run directory, whose
    /// `run.yaml` is written now.
    ///
    /// With an `otel:` section or `OTEL_EXPORTER_OTLP_ENDPOINT`, the process's trace
    /// export is started ([`crate::trace::start`]); call [`crate::trace::shutdown`]
    /// before exiting.
    pub fn open(self) -> Result<Run> {
        let resume = self.resume;
        let door_log = self.log.clone();
        let trace = self.trace;
        let one = self.one.clone();
        let replay = self.replay.clone();
        let process = ProcessEnv;
        let env: &dyn EnvSource = self.env.unwrap_or(&process);
        let mut run = self.open_checked().map_err(|report| {
            Error::Config(match &one {
                Some(one) => one.error_text(&report),
                None => report.problems_text(),
            })
        })?;
        if let (Some(dir), Some(one)) = (&replay, &one) {
            let llm = replay_call::replaying(&run.config, dir, one)?;
            run.llms.insert(one.name().to_string(), llm);
            run.replayed = Some(dir.clone());
        }
        run.attach_budget_and_log(resume, door_log)?;
        if trace {
            let otel = resolve::effective_section(&run.config, "otel");
            crate::trace::start_from(otel.as_ref(), env).map_err(Error::Config)?;
        }
        Ok(run)
    }
}

/// The run directory a config records into: `log:`, with the override `log=<dir>` over it
/// (`None`: it records nowhere).
pub fn log_dir(config: &Config) -> Result<Option<PathBuf>> {
    match resolve::effective_section(config, "log") {
        None | Some(serde_json::Value::Null) => Ok(None),
        Some(serde_json::Value::String(dir)) => Ok(Some(PathBuf::from(dir))),
        Some(other) => Err(Error::Config(format!(
            "{}: `log` must be a directory path (e.g. `log: runs/today`), not {other}",
            config
                .run_config
                .as_ref()
                .map_or("the overrides".to_string(), |p| p.display().to_string())
        ))),
    }
}

/// A top-level section of `config` with its overrides applied (`otel.endpoint=…` over
/// the file's `otel:`), `None` when neither gives it.
pub fn section(config: &Config, name: &str) -> Option<serde_json::Value> {
    resolve::effective_section(config, name)
}

/// Checks a run config, as `switchyard check` does: the function every command that runs
/// a config calls first, refusing to start when the report is not [`ok`](CheckReport::ok).
pub fn check<S: Into<String>>(
    path: impl AsRef<Path>,
    overrides: impl IntoIterator<Item = S>,
    env: &dyn EnvSource,
) -> CheckReport {
    Run::builder(path).overrides(overrides).env(env).check()
}

/// A handle for a script with no run config: `reference`, or else the model named by the
/// `SWITCHYARD_MODEL` environment variable.
///
/// ```no_run
/// # async fn demo() -> switchyard::Result<()> {
/// // SWITCHYARD_MODEL=mock/echo
/// let llm = switchyard::llm(None)?;
/// let reply = llm.complete(switchyard::Request::user("hello")).await?;
/// # let _ = reply;
/// # Ok(()) }
/// ```
pub fn llm(reference: Option<&str>) -> Result<Llm> {
    llm_with(reference, &ProcessEnv)
}

/// [`llm`] reading the environment from `env`: `reference`, else `SWITCHYARD_MODEL`, else
/// `SWITCHYARD_BACKEND`'s default model ([`model_from_env`]).
pub fn llm_with(reference: Option<&str>, env: &dyn EnvSource) -> Result<Llm> {
    let registry = crate::registry::Registry::load(&LoadOptions::new(env))
        .map_err(|e| Error::Config(e.to_string()))?;
    let reference = model_from_env(&registry, reference, env)?.ok_or_else(|| {
        Error::Config(format!(
            "no model: set the environment variable {MODEL_VAR} to a reference such as `mock/echo` or `openai/gpt-5` \
             (or {BACKEND_VAR} to a backend with a default model, such as `vertex`), or pass one"
        ))
    })?;
    Llm::resolve(&registry, &reference, env)
}
