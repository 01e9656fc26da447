//! What the gateway and the command line share with the library beyond its public API:
//! the background-work courtesy, the cores lanes and background threads run on, the
//! classification of provider errors, cost formatting, backend probes, name suggestions
//! and the redaction of keys. Public so the workspace's other crates can use them; not a
//! stable interface for programs.

pub mod background;
pub mod classify;
pub mod cost;
pub mod lanes;
pub mod placement;
pub mod probe;
pub mod redact;
pub mod suggest;
