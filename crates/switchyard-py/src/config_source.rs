//! A run config as a Python program gives it: a path (str or `os.PathLike`), or a dict
//! held in memory (the campaign library's `Campaign(config, ...)`), read by the library's
//! own loader either way.

use std::path::{Path, PathBuf};

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use switchyard::env::EnvSource;
use switchyard::registry::{Config, LoadOptions, Loaded};

use crate::errors::IntoPy;
use crate::json::{to_json, type_name};

/// What a dict config is called in messages and in the check report.
pub(crate) const DICT_LABEL: &str = "<config dict>";

/// A run config: a file, or a dict's text (JSON, which the YAML loader reads).
pub(crate) enum ConfigSource {
    /// A file to read.
    File(PathBuf),
    /// A dict, as JSON text.
    Text(String),
}

impl ConfigSource {
    /// `value` as a config: a dict, else a path; anything else is a `TypeError`.
    pub(crate) fn extract(value: &Bound<'_, PyAny>) -> PyResult<ConfigSource> {
        if value.is_instance_of::<PyDict>() {
            let json = to_json(value, "the config")?;
            // Pretty: a problem's line and column then point at one key of the dict.
            let text = serde_json::to_string_pretty(&json)
                .map_err(|e| PyTypeError::new_err(format!("the config dict: {e}")))?;
            return Ok(ConfigSource::Text(text));
        }
        value
            .extract::<PathBuf>()
            .map(ConfigSource::File)
            .map_err(|_| {
                PyTypeError::new_err(format!(
                    "a run config is a path (str or os.PathLike) or a dict, not {}",
                    type_name(value)
                ))
            })
    }

    /// The path that names it: the file, or [`DICT_LABEL`].
    pub(crate) fn path(&self) -> &Path {
        match self {
            ConfigSource::File(p) => p,
            ConfigSource::Text(_) => Path::new(DICT_LABEL),
        }
    }

    /// Its text, when it is held in memory.
    pub(crate) fn text(&self) -> Option<&str> {
        match self {
            ConfigSource::File(_) => None,
            ConfigSource::Text(t) => Some(t),
        }
    }

    /// Every layer loaded with this run config and `overrides`, past problems
    /// (`Loaded::into_result` gives the error).
    pub(crate) fn load(&self, env: &dyn EnvSource, overrides: &[String]) -> Loaded {
        let mut opts = LoadOptions::new(env);
        opts.overrides = overrides.to_vec();
        match self {
            ConfigSource::File(path) => {
                opts.run_config = Some(path.clone());
                Config::load_all(&opts)
            }
            ConfigSource::Text(text) => {
                Config::load_all_run_config_text(&opts, Path::new(DICT_LABEL), text)
            }
        }
    }
}

/// The registry and sections as the CLI loads them: the built-ins, the user's file, the
/// environment, `config` (a path or a dict, when given) and `overrides`; every problem
/// as one `ConfigError`.
pub(crate) fn load_config(
    config: Option<&Bound<'_, PyAny>>,
    env: &dyn EnvSource,
    overrides: Vec<String>,
) -> PyResult<Config> {
    let loaded = match config {
        Some(c) => ConfigSource::extract(c)?.load(env, &overrides),
        None => {
            let mut opts = LoadOptions::new(env);
            opts.overrides = overrides;
            Config::load_all(&opts)
        }
    };
    loaded
        .into_result()
        .map_err(|e| switchyard::Error::Config(e.to_string()))
        .py_err()
}
