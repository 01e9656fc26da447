//! The response cache (`docs/routing.md`, *The cache*): an identical call is answered
//! from the call log instead of the provider. The config, the key and the entries are
//! the library's ([`switchyard::cache`]), shared with a run's cache; the answer in the
//! client's dialect is the gateway's (`serve`).

pub(crate) use switchyard::cache::read_cache;
pub use switchyard::cache::{cache_key, cacheable, CacheConfig, CacheMode, CacheScope};
