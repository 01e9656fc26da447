//! The backend registry: every backend, resolved from layers (built-ins, the user's file,
//! the run config, `<NAME>_BASE_URL`, command-line overrides), each field remembering its
//! layer.
//!
//! ```
//! use switchyard::env::MapEnv;
//! use switchyard::registry::{Config, LoadOptions};
//! use switchyard::{Dialect, Parsed};
//!
//! let env = MapEnv::new([("VLLM_BASE_URL", "http://gpu-box:8000/v1")]);
//! let config = Config::load(&LoadOptions::new(&env)).unwrap();
//! let registry = &config.registry;
//! let Ok(Parsed::Reference(r)) = registry.parse_reference("vllm/Qwen/Qwen3-8B") else { panic!() };
//! let backend = registry.backend(&r.backend).unwrap();
//! let url = backend.endpoint(Dialect::Chat, &r.model, false, &env).unwrap();
//! assert_eq!(url.as_str(), "http://gpu-box:8000/v1/chat/completions");
//! ```

pub(crate) mod backend;
mod builtin;
mod embeddings;
mod load;
mod overrides;
pub(crate) mod patch;
pub(crate) mod resolve;
mod route;
pub(crate) mod spans;
mod types;
mod url_template;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use backend::{Backend, EndpointError, KeyStatus, LiteLlm};
pub use builtin::BUILTINS_YAML;
pub use load::{user_file_path, BACKENDS_FILE_KEYS};
pub use overrides::{looks_like_override, parse_override, redacted, Override, SECTIONS};
pub use patch::{FIELDS, PRICE_FIELDS};
pub use route::{
    FallbackKind, Member, Pick, Route, DEFAULT_COOLDOWN, DEFAULT_MAX_WAIT, ROUTE_FIELDS,
};
pub use types::{Auth, DeveloperRole, Dialect, Kind, Layer, MaxTokensField, Price, Resolved};

use crate::config_error::{ConfigError, ConfigErrors};
use crate::env::EnvSource;

/// What to load.
pub struct LoadOptions<'a> {
    /// The environment (the user's file location, `<NAME>_BASE_URL`).
    pub env: &'a dyn EnvSource,
    /// The run config (`--config FILE`), if any.
    pub run_config: Option<PathBuf>,
    /// Command-line overrides as written (`backends.vllm.apis=[chat]`, `model=...`).
    pub overrides: Vec<String>,
    /// Read the user's file (default true; false for hermetic tests).
    pub user_file: bool,
}

impl<'a> LoadOptions<'a> {
    /// Built-ins, the user's file and the environment; no run config, no overrides.
    pub fn new(env: &'a dyn EnvSource) -> Self {
        LoadOptions {
            env,
            run_config: None,
            overrides: Vec::new(),
            user_file: true,
        }
    }
}

/// Every backend, resolved.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    backends: BTreeMap<String, Backend>,
    routes: BTreeMap<String, Route>,
    prices_date: Option<String>,
}

/// Everything loaded: the registry and the parts of the run config and overrides that later
/// parts of Switchyard read.
#[derive(Debug, Clone)]
pub struct Config {
    /// The backends.
    pub registry: Registry,
    /// The user's file that was read, if it existed.
    pub user_file: Option<PathBuf>,
    /// The run config given, if any.
    pub run_config: Option<PathBuf>,
    /// The run config's sections other than `backends`, unvalidated (by section name).
    pub sections: BTreeMap<String, serde_json::Value>,
    /// The overrides other than `backends.*`, in order.
    pub overrides: Vec<Override>,
}

/// What [`Config::load_all`] could read, and every problem found on the way.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// The config as far as it could be read: every backend that resolved, the run
    /// config's sections that were read.
    pub config: Config,
    /// Every problem, in the order found (empty when the config is sound).
    pub problems: Vec<ConfigError>,
    /// True when the run config (if one was given) was read and parsed as a mapping;
    /// false when it is missing, unreadable, not YAML or not a mapping, so that nothing
    /// in it (roles included) could be checked.
    pub run_config_read: bool,
}

impl Loaded {
    /// The config when nothing was wrong, else every problem.
    pub fn into_result(self) -> Result<Config, ConfigErrors> {
        if self.problems.is_empty() {
            Ok(self.config)
        } else {
            Err(ConfigErrors(self.problems))
        }
    }
}

impl Config {
    /// Loads every layer and resolves the backends, reporting every problem found.
    ///
    /// Precedence, lowest first: built-ins, the user's file, the run config's `backends:`,
    /// `<NAME>_BASE_URL` in the environment, command-line overrides.
    pub fn load(opts: &LoadOptions<'_>) -> Result<Config, ConfigErrors> {
        Config::load_all(opts).into_result()
    }

    /// Loads as [`Config::load`] does, with the run config given as `text` instead of read
    /// from `opts.run_config`; `path` names it (in errors and in [`Config::run_config`]).
    /// No file is read but the user's file, and that only when `opts.user_file`: for a
    /// config held in memory, and for fuzzing the loader.
    pub fn load_run_config_text(
        opts: &LoadOptions<'_>,
        path: &Path,
        text: &str,
    ) -> Result<Config, ConfigErrors> {
        Config::load_layers(opts, Some((path, Ok(text.to_string())))).into_result()
    }

    /// [`load_all`](Self::load_all) with the run config given as `text`, named `path`
    /// (a config held in memory: a Python program's dict).
    pub fn load_all_run_config_text(opts: &LoadOptions<'_>, path: &Path, text: &str) -> Loaded {
        Config::load_layers(opts, Some((path, Ok(text.to_string()))))
    }

    /// Like [`load`](Self::load), but goes on past problems: the config is what could be
    /// read, beside every problem. This is what the run check builds on, so that one
    /// mistake in a file (an unknown key, a key written in it) does not hide the others.
    pub fn load_all(opts: &LoadOptions<'_>) -> Loaded {
        let run_config = opts.run_config.as_deref().map(|path| {
            (
                path,
                std::fs::read_to_string(path).map_err(|e| e.to_string()),
            )
        });
        Config::load_layers(opts, run_config)
    }

    /// Loads every layer, with the run config's text (or why it could not be read) given.
    fn load_layers(
        opts: &LoadOptions<'_>,
        run_config: Option<(&Path, Result<String, String>)>,
    ) -> Loaded {
        let mut errors: Vec<ConfigError> = Vec::new();
        let builtins = builtin::builtin_file(&mut errors);
        let mut patches = builtins.patches;
        let mut route_patches = builtins.routes;

        let mut user_file = None;
        if opts.user_file {
            if let Some(path) = user_file_path(opts.env) {
                match load::read_optional(&path) {
                    Ok(Some(text)) => {
                        let label = path.display().to_string();
                        let f = load::parse_backends_file(
                            &text,
                            &label,
                            Layer::UserFile(path.clone()),
                            &mut errors,
                        );
                        patches.extend(f.patches);
                        route_patches.extend(f.routes);
                        user_file = Some(path);
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(e),
                }
            }
        }

        let mut sections = BTreeMap::new();
        let mut run_config_read = true;
        let run_config_path = run_config.as_ref().map(|(path, _)| path.to_path_buf());
        if let Some((path, text)) = run_config {
            match text {
                Ok(text) => {
                    let rc = load::parse_run_config(&text, path, &mut errors);
                    patches.extend(rc.patches);
                    route_patches.extend(rc.routes);
                    sections = rc.sections;
                    run_config_read = rc.parsed;
                }
                Err(message) => {
                    run_config_read = false;
                    errors.push(ConfigError::new(
                        crate::config_error::Location::source(path.display().to_string()),
                        crate::config_error::ConfigProblem::Io { message },
                    ))
                }
            }
        }

        let parsed_overrides = match overrides::parse_overrides(&opts.overrides) {
            Ok(o) => o,
            Err(e) => {
                errors.extend(e);
                Vec::new()
            }
        };
        let (override_patches, override_routes, other_overrides) =
            load::split_overrides(&parsed_overrides, &mut errors);
        route_patches.extend(override_routes);

        let mut names: Vec<&str> = patches
            .iter()
            .chain(override_patches.iter())
            .map(|p| p.name.as_str())
            .collect();
        names.sort_unstable();
        names.dedup();
        let env_patches = load::env_patches(names.into_iter(), opts.env, &mut errors);
        patches.extend(env_patches);
        patches.extend(override_patches);

        // The backends resolve from the patches that could be read. Resolving problems
        // are reported only when the layers read cleanly: a field refused above leaves
        // its backend short of it, and "no base_url" after "invalid base_url" would say
        // the same thing twice.
        let (backends, resolve_errors) = resolve::resolve_partial(&patches);
        if errors.is_empty() {
            errors = resolve_errors;
        }
        let mut registry = Registry {
            backends,
            routes: BTreeMap::new(),
            prices_date: builtins.prices_date,
        };
        // Routes are checked against the backends that resolved: a member naming a
        // backend that failed to resolve is refused beside that backend's own problem.
        registry.routes = route::resolve_routes(&route_patches, &registry, &mut errors);
        Loaded {
            config: Config {
                registry,
                user_file,
                run_config: run_config_path,
                sections,
                overrides: other_overrides,
            },
            problems: errors,
            run_config_read,
        }
    }
}

impl Registry {
    /// Loads the registry (see [`Config::load`]).
    pub fn load(opts: &LoadOptions<'_>) -> Result<Registry, ConfigErrors> {
        Config::load(opts).map(|c| c.registry)
    }

    /// The built-in backends alone.
    pub fn builtin() -> Result<Registry, ConfigErrors> {
        let env = crate::env::MapEnv::default();
        let mut opts = LoadOptions::new(&env);
        opts.user_file = false;
        Registry::load(&opts)
    }

    /// The backend called `name`.
    pub fn backend(&self, name: &str) -> Option<&Backend> {
        self.backends.get(name)
    }

    /// Every backend, by name.
    pub fn backends(&self) -> impl Iterator<Item = &Backend> {
        self.backends.values()
    }

    /// Every backend name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.backends.keys().map(String::as_str)
    }

    /// The route called `name`.
    pub fn route(&self, name: &str) -> Option<&Route> {
        self.routes.get(name)
    }

    /// Every route, by name.
    pub fn routes(&self) -> impl Iterator<Item = &Route> {
        self.routes.values()
    }

    /// The date the built-in prices were taken (`prices_date` in `builtins.yaml`).
    pub fn prices_date(&self) -> Option<&str> {
        self.prices_date.as_deref()
    }
}
