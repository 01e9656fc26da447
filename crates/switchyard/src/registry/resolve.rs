//! Folding the layers' patches into resolved backends: field by field, `from` copies,
//! defaults, and the checks that need every layer (unknown `from`, cycles, missing URL).

use std::collections::BTreeMap;

use super::backend::Backend;
use super::patch::BackendPatch;
use super::types::{Auth, DeveloperRole, Dialect, Kind, Layer, MaxTokensField, Resolved};
use crate::config_error::{ConfigError, ConfigProblem, Location};
use crate::env::env_stem;
use crate::internal::suggest::nearest;

/// A backend being built: `None` means "not set by any layer yet".
#[derive(Debug, Clone, Default)]
struct Draft {
    kind: Option<Resolved<Kind>>,
    base_url: Option<Resolved<String>>,
    api_key_env: Option<Resolved<String>>,
    key_required: Option<Resolved<bool>>,
    apis: Option<Resolved<Vec<Dialect>>>,
    embeddings: Option<Resolved<bool>>,
    messages_url: Option<Resolved<String>>,
    gemini_url: Option<Resolved<String>>,
    auth: Option<Resolved<Auth>>,
    prices: BTreeMap<String, Resolved<super::types::Price>>,
    extra_body: BTreeMap<String, Resolved<serde_json::Value>>,
    context_window: Option<Resolved<u64>>,
    max_output_tokens: Option<Resolved<u64>>,
    model_options: Option<Resolved<String>>,
    default_model: Option<Resolved<String>>,
    developer_role: Option<Resolved<DeveloperRole>>,
    max_tokens_field: Option<Resolved<MaxTokensField>>,
    models: BTreeMap<String, Resolved<String>>,
    from: Option<Resolved<String>>,
    command: Option<Resolved<Vec<String>>>,
    log: Option<Resolved<String>>,
    litellm: Option<Resolved<String>>,
    layers: Vec<Layer>,
}

fn set<T: Clone>(slot: &mut Option<Resolved<T>>, value: &Option<T>, layer: &Layer) {
    if let Some(v) = value {
        *slot = Some(Resolved::new(v.clone(), layer.clone()));
    }
}

fn merge<T: Clone>(
    map: &mut BTreeMap<String, Resolved<T>>,
    add: &BTreeMap<String, T>,
    layer: &Layer,
) {
    for (k, v) in add {
        map.insert(k.clone(), Resolved::new(v.clone(), layer.clone()));
    }
}

/// A value copied by `from:` from the backend `from`.
fn copied<T: Clone>(r: &Resolved<T>, from: &str) -> Resolved<T> {
    Resolved::new(
        r.value.clone(),
        Layer::Copied {
            from: from.to_string(),
            layer: Box::new(r.layer.clone()),
        },
    )
}

fn copied_map<T: Clone>(
    map: &BTreeMap<String, Resolved<T>>,
    from: &str,
) -> BTreeMap<String, Resolved<T>> {
    map.iter()
        .map(|(k, v)| (k.clone(), copied(v, from)))
        .collect()
}

impl Draft {
    /// Starts a copy of `source` (a `from`): every field as the source has it, each
    /// marked as copied from it (`backends show` says `from <source> (<layer>)`).
    fn copy_of(source: &Backend) -> Self {
        let name = &source.name;
        let one = |r: &Resolved<_>| copied(r, name);
        Draft {
            kind: Some(copied(&source.kind, name)),
            base_url: source.base_url.as_ref().map(|r| copied(r, name)),
            api_key_env: Some(copied(&source.api_key_env, name)),
            key_required: Some(copied(&source.key_required, name)),
            apis: Some(copied(&source.apis, name)),
            embeddings: Some(copied(&source.embeddings, name)),
            messages_url: source.messages_url.as_ref().map(|r| copied(r, name)),
            gemini_url: source.gemini_url.as_ref().map(|r| copied(r, name)),
            auth: Some(copied(&source.auth, name)),
            prices: copied_map(&source.prices, name),
            extra_body: copied_map(&source.extra_body, name),
            context_window: source.context_window.as_ref().map(one),
            max_output_tokens: source.max_output_tokens.as_ref().map(one),
            model_options: source.model_options.as_ref().map(|r| copied(r, name)),
            default_model: source.default_model.as_ref().map(|r| copied(r, name)),
            developer_role: Some(copied(&source.developer_role, name)),
            max_tokens_field: Some(copied(&source.max_tokens_field, name)),
            models: copied_map(&source.models, name),
            from: None,
            command: source.command.as_ref().map(|r| copied(r, name)),
            log: source.log.as_ref().map(|r| copied(r, name)),
            litellm: source.litellm.as_ref().map(|r| copied(r, name)),
            layers: source
                .layers
                .iter()
                .map(|l| Layer::Copied {
                    from: name.clone(),
                    layer: Box::new(l.clone()),
                })
                .collect(),
        }
    }

    /// Applies one layer's patch, field by field. A `base_url` that moves the backend drops
    /// the `messages_url` and `gemini_url` set below it, unless the same patch sets them.
    fn apply(&mut self, p: &BackendPatch) {
        let layer = &p.layer;
        if let Some(new_base) = &p.base_url {
            let moved = self.base_url.as_ref().is_some_and(|b| &b.value != new_base);
            if moved {
                if p.messages_url.is_none() {
                    self.messages_url = None;
                }
                if p.gemini_url.is_none() {
                    self.gemini_url = None;
                }
            }
        }
        set(&mut self.kind, &p.kind, layer);
        set(&mut self.base_url, &p.base_url, layer);
        set(&mut self.api_key_env, &p.api_key_env, layer);
        set(&mut self.key_required, &p.key_required, layer);
        set(&mut self.apis, &p.apis, layer);
        set(&mut self.embeddings, &p.embeddings, layer);
        set(&mut self.messages_url, &p.messages_url, layer);
        set(&mut self.gemini_url, &p.gemini_url, layer);
        set(&mut self.auth, &p.auth, layer);
        set(&mut self.context_window, &p.context_window, layer);
        set(&mut self.max_output_tokens, &p.max_output_tokens, layer);
        set(&mut self.model_options, &p.model_options, layer);
        set(&mut self.default_model, &p.default_model, layer);
        set(&mut self.developer_role, &p.developer_role, layer);
        set(&mut self.max_tokens_field, &p.max_tokens_field, layer);
        set(&mut self.command, &p.command, layer);
        set(&mut self.log, &p.log, layer);
        set(&mut self.litellm, &p.litellm, layer);
        merge(&mut self.prices, &p.prices, layer);
        merge(&mut self.extra_body, &p.extra_body, layer);
        merge(&mut self.models, &p.models, layer);
        if let Some((from, _)) = &p.from {
            self.from = Some(Resolved::new(from.clone(), layer.clone()));
        }
        if !self.layers.contains(layer) {
            self.layers.push(layer.clone());
        }
    }

    fn finish(self, name: &str) -> Backend {
        let kind = self
            .kind
            .unwrap_or_else(|| Resolved::default_value(Kind::Http));
        let http = kind.value == Kind::Http;
        let default_auth = if http { Auth::Bearer } else { Auth::None };
        let default_apis = if http {
            vec![Dialect::Chat]
        } else {
            Vec::new()
        };
        Backend {
            name: name.to_string(),
            kind,
            base_url: self.base_url,
            api_key_env: self
                .api_key_env
                .unwrap_or_else(|| Resolved::default_value(format!("{}_API_KEY", env_stem(name)))),
            key_required: self
                .key_required
                .unwrap_or_else(|| Resolved::default_value(true)),
            apis: self
                .apis
                .unwrap_or_else(|| Resolved::default_value(default_apis)),
            embeddings: self
                .embeddings
                .unwrap_or_else(|| Resolved::default_value(false)),
            messages_url: self.messages_url,
            gemini_url: self.gemini_url,
            auth: self
                .auth
                .unwrap_or_else(|| Resolved::default_value(default_auth)),
            prices: self.prices,
            extra_body: self.extra_body,
            context_window: self.context_window,
            max_output_tokens: self.max_output_tokens,
            model_options: self.model_options,
            default_model: self.default_model,
            developer_role: self
                .developer_role
                .unwrap_or_else(|| Resolved::default_value(DeveloperRole::Keep)),
            max_tokens_field: self
                .max_tokens_field
                .unwrap_or_else(|| Resolved::default_value(MaxTokensField::MaxTokens)),
            models: self.models,
            from: self.from,
            command: self.command,
            log: self.log,
            litellm: self.litellm,
            layers: self.layers,
        }
    }
}

struct Resolver<'a> {
    patches: BTreeMap<&'a str, Vec<&'a BackendPatch>>,
    done: BTreeMap<String, Backend>,
    failed: Vec<String>,
    errors: Vec<ConfigError>,
}

impl<'a> Resolver<'a> {
    fn resolve(&mut self, name: &str, stack: &mut Vec<String>) -> Option<Backend> {
        if let Some(b) = self.done.get(name) {
            return Some(b.clone());
        }
        if self.failed.iter().any(|f| f == name) {
            return None;
        }
        let patches = self.patches.get(name).cloned().unwrap_or_default();
        let from = patches.iter().rev().find_map(|p| p.from.clone());
        stack.push(name.to_string());
        let mut draft = match &from {
            None => Draft::default(),
            Some((source, loc)) => match self.copy_source(name, source, loc, stack) {
                Some(b) => Draft::copy_of(&b),
                None => {
                    stack.pop();
                    self.failed.push(name.to_string());
                    return None;
                }
            },
        };
        stack.pop();
        for p in &patches {
            draft.apply(p);
        }
        let backend = draft.finish(name);
        if let Some(e) = missing_base_url(&backend, patches.iter().copied()) {
            self.errors.push(e);
            self.failed.push(name.to_string());
            return None;
        }
        if let Some(command) = &backend.command {
            if !matches!(backend.kind.value, Kind::ClaudeCode | Kind::Codex) {
                self.errors.push(ConfigError::new(
                    Location::source(command.layer.to_string()),
                    ConfigProblem::FieldNotForKind {
                        backend: name.to_string(),
                        field: "command".into(),
                        kind: backend.kind.value.to_string(),
                        kinds: vec![Kind::ClaudeCode.to_string(), Kind::Codex.to_string()],
                    },
                ));
                self.failed.push(name.to_string());
                return None;
            }
        }
        if let Some(log) = &backend.log {
            if backend.kind.value != Kind::Replay {
                self.errors.push(ConfigError::new(
                    Location::source(log.layer.to_string()),
                    ConfigProblem::FieldNotForKind {
                        backend: name.to_string(),
                        field: "log".into(),
                        kind: backend.kind.value.to_string(),
                        kinds: vec![Kind::Replay.to_string()],
                    },
                ));
                self.failed.push(name.to_string());
                return None;
            }
        }
        self.done.insert(name.to_string(), backend.clone());
        Some(backend)
    }

    fn copy_source(
        &mut self,
        name: &str,
        source: &str,
        loc: &Location,
        stack: &mut Vec<String>,
    ) -> Option<Backend> {
        if !self.patches.contains_key(source) {
            let known: Vec<&str> = self.patches.keys().copied().collect();
            self.errors.push(ConfigError::new(
                loc.clone(),
                ConfigProblem::UnknownFrom {
                    backend: name.to_string(),
                    from: source.to_string(),
                    nearest: nearest(source, known),
                },
            ));
            return None;
        }
        if let Some(pos) = stack.iter().position(|s| s == source) {
            let mut cycle: Vec<String> = stack[pos..].to_vec();
            cycle.push(source.to_string());
            self.errors.push(ConfigError::new(
                loc.clone(),
                ConfigProblem::FromCycle { cycle },
            ));
            return None;
        }
        self.resolve(source, stack)
    }
}

/// Resolves every backend named by `patches` (given lowest layer first) that can be:
/// those that resolved, and the problems of the others.
pub(crate) fn resolve_partial(
    patches: &[BackendPatch],
) -> (BTreeMap<String, Backend>, Vec<ConfigError>) {
    let mut by_name: BTreeMap<&str, Vec<&BackendPatch>> = BTreeMap::new();
    for p in patches {
        by_name.entry(p.name.as_str()).or_default().push(p);
    }
    let names: Vec<String> = by_name.keys().map(|s| s.to_string()).collect();
    let mut r = Resolver {
        patches: by_name,
        done: BTreeMap::new(),
        failed: Vec::new(),
        errors: Vec::new(),
    };
    for name in names {
        r.resolve(&name, &mut Vec::new());
    }
    (r.done, r.errors)
}

/// One backend outside the registry (a run's inline endpoint): `patches` (lowest first)
/// applied over a copy of `base` (or over nothing), with the same defaults and checks as a
/// registry backend.
pub(crate) fn resolve_one(
    name: &str,
    base: Option<&Backend>,
    patches: &[BackendPatch],
) -> Result<Backend, ConfigError> {
    let mut draft = base.map(Draft::copy_of).unwrap_or_default();
    for p in patches {
        draft.apply(p);
    }
    let backend = draft.finish(name);
    match missing_base_url(&backend, patches.iter()) {
        Some(e) => Err(e),
        None => Ok(backend),
    }
}

/// The error of an HTTP backend left without a `base_url` by its layers (`patches`,
/// lowest first: the error names the last one's layer).
fn missing_base_url<'p>(
    backend: &Backend,
    patches: impl Iterator<Item = &'p BackendPatch>,
) -> Option<ConfigError> {
    if backend.kind.value != Kind::Http || backend.base_url.is_some() {
        return None;
    }
    let loc = patches
        .last()
        .map(|p| Location::source(p.layer.to_string()))
        .unwrap_or_else(|| Location::source("configuration"));
    Some(ConfigError::new(
        loc,
        ConfigProblem::MissingBaseUrl {
            backend: backend.name.clone(),
        },
    ))
}
