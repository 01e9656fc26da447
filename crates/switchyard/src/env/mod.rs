//! Reading environment variables through a trait, so that loading and key lookup can be
//! tested without touching the process environment.

pub mod file;

use std::collections::HashMap;

/// A source of environment variables.
pub trait EnvSource {
    /// The value of `name`, if set and valid Unicode. An empty value counts as unset.
    fn var(&self, name: &str) -> Option<String>;

    /// The variables this source holds beyond the process environment (an env file's, a
    /// map's), in order, a later one winning: what a subprocess (a CLI agent) must be
    /// given explicitly to see the same environment, since it inherits only the
    /// process's. Empty for the process environment itself.
    fn explicit_vars(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProcessEnv;

impl EnvSource for ProcessEnv {
    fn var(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

/// A fixed set of variables (for tests and embedding).
#[derive(Debug, Clone, Default)]
pub struct MapEnv(pub HashMap<String, String>);

impl MapEnv {
    /// An environment holding exactly `pairs`.
    pub fn new<K: Into<String>, V: Into<String>>(pairs: impl IntoIterator<Item = (K, V)>) -> Self {
        MapEnv(
            pairs
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        )
    }
}

impl EnvSource for MapEnv {
    fn var(&self, name: &str) -> Option<String> {
        self.0.get(name).filter(|v| !v.is_empty()).cloned()
    }

    fn explicit_vars(&self) -> Vec<(String, String)> {
        let mut vars: Vec<(String, String)> = self
            .0
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        vars.sort();
        vars
    }
}

/// `name` upper-cased with `-` turned into `_`: the stem of `<NAME>_API_KEY` and
/// `<NAME>_BASE_URL`.
pub fn env_stem(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c == '-' {
                '_'
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}
