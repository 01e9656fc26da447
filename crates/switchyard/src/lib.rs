//! placeholder

pub mod config_error;
pub mod env;
pub mod reference;
pub mod registry;
mod secrets;
mod suggest;

pub use config_error::{ConfigError, ConfigErrors, ConfigProblem, Location};
pub use reference::{Parsed, Reference, ReferenceError};
pub use registry::{Backend, Config, Dialect, Layer, LoadOptions, Registry, Resolved};
