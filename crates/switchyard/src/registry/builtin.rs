//! The built-in backends: `builtins.yaml`, compiled in and parsed by the same loader as a
//! user's file.

use std::sync::OnceLock;

use super::load::{parse_backends_file, BackendsFile};
use super::types::Layer;
use crate::config_error::ConfigError;

/// The text of the built-in backends file.
pub const BUILTINS_YAML: &str = include_str!("builtins.yaml");

/// The built-in backends (errors are a bug in `builtins.yaml`, caught by a test).
///
/// The text is compiled in, so it is parsed once per process and copied after that:
/// every [`Config::load`](super::Config::load) starts from it, and parsing it cost more
/// than the rest of a small run config's load.
pub(crate) fn builtin_file(errors: &mut Vec<ConfigError>) -> BackendsFile {
    static PARSED: OnceLock<(BackendsFile, Vec<ConfigError>)> = OnceLock::new();
    let (file, found) = PARSED.get_or_init(|| {
        let mut found = Vec::new();
        let file = parse_backends_file(
            BUILTINS_YAML,
            "built-in backends",
            Layer::Builtin,
            &mut found,
        );
        (file, found)
    });
    errors.extend(found.iter().cloned());
    file.clone()
}
