//! Client keys: who is calling. Keys are held only as SHA-256 digests, so comparing them
//! leaks nothing through timing and no key is kept in memory longer than a request.

use crate::account::limits::{Concurrency, RateLimiter};
use crate::config::{KeySecret, KeySpec};
use axum::http::HeaderMap;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use switchyard::env::EnvSource;

/// A configured key, after its secret was read.
#[derive(Debug)]
pub struct Key {
    /// Its name (what metrics and records show).
    pub name: String,
    /// The models it may use (empty: all).
    pub models: Vec<String>,
    /// Its request and token rates.
    pub limiter: RateLimiter,
    /// Its cap on calls in flight.
    pub concurrency: Concurrency,
    /// Its budget in USD per period, counted with the calls' cost.
    pub budget: Option<crate::account::budgets::KeyBudget>,
    /// `role: admin`: it opens the web console.
    pub admin: bool,
}

impl Key {
    /// The name what a client keeps is kept under (`crate::conversations`): its key's, or
    /// `""` when the gateway asks no key.
    pub(crate) fn owner(key: Option<&Key>) -> &str {
        key.map_or("", |k| k.name.as_str())
    }

    /// True when the key may use `requested` (the name the client sent) resolving to
    /// `reference`.
    pub fn allows(&self, requested: &str, reference: &str) -> bool {
        self.models.is_empty()
            || self
                .models
                .iter()
                .any(|m| matches(m, requested) || matches(m, reference))
    }
}

fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => pattern == name,
    }
}

/// Every key, by digest.
#[derive(Debug, Default)]
pub struct Keys {
    by_digest: HashMap<[u8; 32], Arc<Key>>,
}

/// Why a request was not let in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyRefusal {
    /// No key in any accepted header.
    Missing,
    /// A key that matches none configured.
    Unknown,
}

impl Keys {
    /// Reads every key's secret; lists every `key_env` variable that is unset.
    pub fn load(specs: &[KeySpec], env: &dyn EnvSource) -> Result<Keys, Vec<String>> {
        let mut keys = Keys::default();
        let mut errors = Vec::new();
        for spec in specs {
            let digest = match &spec.secret {
                KeySecret::Sha256(d) => *d,
                KeySecret::Env(var) => match env.var(var) {
                    Some(value) => {
                        // Only the digest is kept for comparing; the value is registered
                        // for redaction, so no reply, record or log shows it.
                        switchyard::internal::redact::register(
                            &value,
                            &format!("client key `{}` (in {var})", spec.name),
                        );
                        digest(value.as_bytes())
                    }
                    None => {
                        errors.push(format!(
                            "key `{}`: the variable {var} named by key_env is unset or empty",
                            spec.name
                        ));
                        continue;
                    }
                },
            };
            let key = Arc::new(Key {
                name: spec.name.clone(),
                models: spec.models.clone(),
                limiter: RateLimiter::new(spec.rpm, spec.tpm),
                concurrency: Concurrency::new(spec.max_in_flight),
                budget: spec.budget_usd.map(|usd| {
                    crate::account::budgets::KeyBudget::new(
                        usd,
                        spec.budget_period
                            .unwrap_or(crate::config::BudgetPeriod::Total),
                        spec.unknown_cost_allowed,
                    )
                }),
                admin: spec.admin,
            });
            if let Some(other) = keys.by_digest.insert(digest, key) {
                errors.push(format!(
                    "keys `{}` and `{}` are the same key; give each client its own",
                    other.name, spec.name
                ));
            }
        }
        if errors.is_empty() {
            Ok(keys)
        } else {
            Err(errors)
        }
    }

    /// Every key.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Key>> {
        self.by_digest.values()
    }

    /// True when no key is configured (every caller is let in, on loopback only).
    pub fn is_empty(&self) -> bool {
        self.by_digest.is_empty()
    }

    /// The key a request carries: `Authorization: Bearer`, `x-api-key`, `x-goog-api-key`,
    /// or Gemini's `?key=` query parameter.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        query: Option<&str>,
    ) -> Result<Arc<Key>, KeyRefusal> {
        let presented = presented_keys(headers, query);
        if presented.is_empty() {
            return Err(KeyRefusal::Missing);
        }
        presented
            .iter()
            .find_map(|k| self.by_digest.get(&digest(k.as_bytes())).cloned())
            .ok_or(KeyRefusal::Unknown)
    }
}

fn presented_keys(headers: &HeaderMap, query: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(v) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        let v = v.trim();
        let token = v
            .strip_prefix("Bearer ")
            .or_else(|| v.strip_prefix("bearer "))
            .unwrap_or(v);
        out.push(token.trim().to_string());
    }
    for name in ["x-api-key", "x-goog-api-key"] {
        if let Some(v) = headers.get(name).and_then(|v| v.to_str().ok()) {
            out.push(v.trim().to_string());
        }
    }
    if let Some(q) = query {
        for pair in q.split('&') {
            if let Some(v) = pair.strip_prefix("key=") {
                out.push(v.to_string());
            }
        }
    }
    out.retain(|k| !k.is_empty());
    out
}

/// SHA-256 of a key.
pub fn digest(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::env::MapEnv;

    fn spec(name: &str, secret: KeySecret) -> KeySpec {
        KeySpec {
            models: vec!["mock/*".into(), "gpt-5.4".into()],
            ..KeySpec::new(name, secret)
        }
    }

    #[test]
    fn keys_are_found_in_every_accepted_header() {
        let env = MapEnv::new([("ALICE", "sk-alice")]);
        let keys = Keys::load(
            &[
                spec("alice", KeySecret::Env("ALICE".into())),
                spec("bob", KeySecret::Sha256(digest(b"sk-bob"))),
            ],
            &env,
        )
        .unwrap();
        let mut h = HeaderMap::new();
        h.insert("authorization", "Bearer sk-alice".parse().unwrap());
        assert_eq!(keys.authenticate(&h, None).unwrap().name, "alice");
        let mut h = HeaderMap::new();
        h.insert("x-api-key", "sk-bob".parse().unwrap());
        assert_eq!(keys.authenticate(&h, None).unwrap().name, "bob");
        let mut h = HeaderMap::new();
        h.insert("x-goog-api-key", "sk-bob".parse().unwrap());
        assert_eq!(keys.authenticate(&h, None).unwrap().name, "bob");
        assert_eq!(
            keys.authenticate(&HeaderMap::new(), Some("alt=sse&key=sk-alice"))
                .unwrap()
                .name,
            "alice"
        );
        assert_eq!(
            keys.authenticate(&HeaderMap::new(), None).unwrap_err(),
            KeyRefusal::Missing
        );
        let mut h = HeaderMap::new();
        h.insert("x-api-key", "sk-eve".parse().unwrap());
        assert_eq!(
            keys.authenticate(&h, None).unwrap_err(),
            KeyRefusal::Unknown
        );
    }

    #[test]
    fn an_unset_key_variable_is_named() {
        let e = Keys::load(
            &[spec("alice", KeySecret::Env("ALICE".into()))],
            &MapEnv::default(),
        )
        .unwrap_err();
        assert!(e[0].contains("ALICE named by key_env is unset"), "{e:?}");
    }

    #[test]
    fn model_patterns() {
        let k = Key {
            name: "k".into(),
            models: vec!["mock/*".into(), "gpt-5.4".into()],
            limiter: RateLimiter::new(None, None),
            concurrency: Concurrency::new(None),
            budget: None,
            admin: false,
        };
        assert!(k.allows("mock/echo", "mock/echo"));
        assert!(k.allows("gpt-5.4", "vllm/qwen"));
        assert!(!k.allows("openai/gpt-5.4", "openai/gpt-5.4"));
    }
}
