//! The response cache (`docs/routing.md`, *The cache*): an identical call is answered
//! from the call log instead of the provider. The config ([`config`]), the key
//! ([`key`]), the entries ([`index`]) and the answer ([`serve`]).

mod config;
mod index;
mod key;
pub(crate) mod serve;

pub(crate) use config::read_cache;
pub use config::{CacheConfig, CacheMode};
pub use index::CacheIndex;
pub(crate) use index::Entry;
pub use key::{cache_key, cacheable};
