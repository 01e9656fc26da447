//! The built-in backends: `builtins.yaml`, compiled in and parsed by the same loader as a
//! user's file.

use super::load::{parse_backends_file, BackendsFile};
use super::types::Layer;
use crate::config_error::ConfigError;

/// The text of the built-in backends file.
pub const BUILTINS_YAML: &str = include_str!("builtins.yaml");

/// Parses the built-in backends (errors are a bug in `builtins.yaml`, caught by a test).
pub(crate) fn builtin_file(errors: &mut Vec<ConfigError>) -> BackendsFile {
    parse_backends_file(BUILTINS_YAML, "built-in backends", Layer::Builtin, errors)
}
