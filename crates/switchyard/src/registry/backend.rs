//! A resolved backend: every field with the layer it came from, the URL each dialect is
//! called at, and how its key is found.

use std::collections::BTreeMap;

use serde::Serialize;

use super::types::{Auth, DeveloperRole, Dialect, Kind, Layer, MaxTokensField, Price, Resolved};
use super::url_template;
use crate::env::EnvSource;

/// One resolved backend.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Backend {
    /// Its name, the first segment of a reference.
    pub name: String,
    /// How it is reached.
    pub kind: Resolved<Kind>,
    /// The OpenAI-compatible root (normally ending in `/v1`); may hold `{VARIABLE}`
    /// placeholders. `None` for kinds other than `http`.
    pub base_url: Option<Resolved<String>>,
    /// The variable holding the key (default `<NAME>_API_KEY`).
    pub api_key_env: Resolved<String>,
    /// `false` for a server that needs no key.
    pub key_required: Resolved<bool>,
    /// The dialects served.
    pub apis: Resolved<Vec<Dialect>>,
    /// Whether `apis` lists `embeddings`: the backend serves embeddings in its family's
    /// shape ([`Backend::embed_shape`]). Shown only when it does.
    #[serde(skip_serializing_if = "not_set")]
    pub embeddings: Resolved<bool>,
    /// Root of the Anthropic Messages API, when set (else derived from `base_url`).
    pub messages_url: Option<Resolved<String>>,
    /// Root of the native Gemini API (before `/models/{model}:generateContent`), when set
    /// (else derived from `base_url`).
    pub gemini_url: Option<Resolved<String>>,
    /// How the key is sent.
    pub auth: Resolved<Auth>,
    /// Prices by model id.
    pub prices: BTreeMap<String, Resolved<Price>>,
    /// Fields added to every request body of the backend's main dialect (the first in
    /// `apis`): see [`Backend::extra_body_for`].
    pub extra_body: BTreeMap<String, Resolved<serde_json::Value>>,
    /// Context window in tokens, when known.
    pub context_window: Option<Resolved<u64>>,
    /// The most tokens one reply may hold, when known (what a budget reserves for a
    /// call that states no output limit).
    pub max_output_tokens: Option<Resolved<u64>>,
    /// The character after which a model id carries options (the mock's `+`:
    /// `mock-large+cache` is the model `mock-large` with an option): aliases and prices
    /// apply to the part before it.
    pub model_options: Option<Resolved<String>>,
    /// The model a reference naming only this backend (`vertex`) gets, with the layer
    /// that set it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_model: Option<Resolved<String>>,
    /// What to do with the `developer` role.
    pub developer_role: Resolved<DeveloperRole>,
    /// The field a chat request's output limit goes in.
    pub max_tokens_field: Resolved<MaxTokensField>,
    /// Aliases: short name to model id.
    pub models: BTreeMap<String, Resolved<String>>,
    /// The backend this one was copied from.
    pub from: Option<Resolved<String>>,
    /// For `claude-code` and `codex`: the program to run (and arguments put before
    /// Switchyard's own), when not the CLI's usual name on `PATH`.
    pub command: Option<Resolved<Vec<String>>>,
    /// For `replay`: the recorded run's call log (`<run_dir>/llm_log`, or the run
    /// directory itself).
    pub log: Option<Resolved<String>>,
    /// LiteLLM's route prefix for this backend (`hosted_vllm`, `fireworks_ai`), for handing
    /// a reference to a program that calls models through `litellm` ([`Backend::litellm`]).
    pub litellm: Option<Resolved<String>>,
    /// Every layer that contributed to this backend, lowest first.
    pub layers: Vec<Layer>,
}

/// What `litellm.completion(...)` needs to reach the endpoint a reference names: see
/// [`Backend::litellm`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LiteLlm {
    /// `<prefix>/<model id>`, LiteLLM's `model` argument (`hosted_vllm/qwen3`).
    pub model: String,
    /// LiteLLM's `api_base`: the root its route appends its path to; `None` where the
    /// route knows its provider's endpoint itself (`gemini`, `vertex_ai`).
    pub api_base: Option<String>,
    /// The environment variable whose value is LiteLLM's `api_key`; `None` when the
    /// backend sends no key (no-key auth, Google ADC).
    pub api_key_env: Option<String>,
}

/// Whether a backend's key variable is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum KeyStatus {
    /// The variable is set (its value is never shown).
    Set,
    /// The variable is unset and a key is required.
    Unset,
    /// No key is needed (no-key auth, a CLI kind, or `key_required: false` and unset).
    NotNeeded,
}

impl KeyStatus {
    /// `set`, `unset` or `not needed`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyStatus::Set => "set",
            KeyStatus::Unset => "unset",
            KeyStatus::NotNeeded => "not needed",
        }
    }
}

/// Why a call URL or a key could not be produced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EndpointError {
    /// The backend does not serve this dialect.
    #[error("backend `{backend}` does not serve the `{dialect}` dialect (it serves: {served})")]
    DialectNotServed {
        /// The backend.
        backend: String,
        /// The dialect asked for.
        dialect: Dialect,
        /// The dialects it serves, comma-separated.
        served: String,
    },
    /// Embeddings were asked of a backend whose `apis` does not list them.
    #[error(
        "backend `{backend}` does not serve embeddings: its `apis` does not list `embeddings`"
    )]
    EmbeddingsNotServed {
        /// The backend.
        backend: String,
    },
    /// The backend is not an HTTP backend (or has no base URL).
    #[error("backend `{backend}` is not reached over HTTP (kind `{kind}`)")]
    NotHttp {
        /// The backend.
        backend: String,
        /// Its kind.
        kind: Kind,
    },
    /// A `{VARIABLE}` in the URL is unset.
    #[error(
        "backend `{backend}`: the URL needs the environment variable {variable}, which is unset"
    )]
    UnsetVariable {
        /// The backend.
        backend: String,
        /// The unset variable.
        variable: String,
    },
    /// The URL after filling placeholders does not parse.
    #[error("backend `{backend}`: `{url}` is not a valid URL: {reason}")]
    BadUrl {
        /// The backend.
        backend: String,
        /// The URL.
        url: String,
        /// The parser's message.
        reason: String,
    },
    /// The model id cannot be sent (see [`crate::model_id`]).
    #[error("backend `{backend}`: {error}")]
    BadModelId {
        /// The backend.
        backend: String,
        /// The id and why it was refused.
        error: crate::model_id::BadModelId,
    },
    /// A required key is unset.
    #[error("backend `{backend}` needs a key: set the environment variable {variable}")]
    MissingKey {
        /// The backend.
        backend: String,
        /// The variable to set.
        variable: String,
    },
}

impl Backend {
    /// True when the backend serves `dialect`.
    pub fn serves(&self, dialect: Dialect) -> bool {
        self.apis.value.contains(&dialect)
    }

    /// The root the Messages API is under: `messages_url`, or `base_url` without a
    /// trailing `/v1`. Calls go to `<root>/v1/messages`.
    pub fn messages_root(&self) -> Option<String> {
        if let Some(m) = &self.messages_url {
            return Some(m.value.clone());
        }
        let base = &self.base_url.as_ref()?.value;
        Some(base.strip_suffix("/v1").unwrap_or(base).to_string())
    }

    /// The root of the native Gemini API: `gemini_url`, or `base_url` without a trailing
    /// `/openai` (Google's `…/v1beta/openai`), or `base_url` without `/v1` plus `/v1beta`.
    /// Calls go to `<root>/models/{model}:generateContent`.
    pub fn gemini_root(&self) -> Option<String> {
        if let Some(g) = &self.gemini_url {
            return Some(g.value.clone());
        }
        let base = &self.base_url.as_ref()?.value;
        if let Some(root) = base.strip_suffix("/openai") {
            return Some(root.to_string());
        }
        Some(format!(
            "{}/v1beta",
            base.strip_suffix("/v1").unwrap_or(base)
        ))
    }

    /// The URL `dialect` is called at for `model`, with `{VARIABLE}` placeholders left in
    /// (for display). `stream` selects Gemini's streaming method; the other dialects use
    /// one URL for both.
    ///
    /// | dialect | URL |
    /// |---|---|
    /// | chat | `base_url` + `/chat/completions` |
    /// | responses | `base_url` + `/responses` |
    /// | messages | [`messages_root`](Self::messages_root) + `/v1/messages` |
    /// | gemini | [`gemini_root`](Self::gemini_root) + `/models/{model}:generateContent` (`:streamGenerateContent?alt=sse` when streaming) |
    ///
    /// In Gemini's URL the model is one path segment, every byte but the unreserved ones
    /// escaped ([`crate::model_id::escape_segment`]: `a/b` goes as `a%2Fb`). A model id that
    /// [`crate::model_id::check`] refuses is an error for every dialect, whether or not its
    /// URL holds the id: one rule for what may be sent.
    pub fn endpoint_template(
        &self,
        dialect: Dialect,
        model: &str,
        stream: bool,
    ) -> Result<String, EndpointError> {
        self.check_model_id(model)?;
        let Some(base) = self
            .base_url
            .as_ref()
            .filter(|_| self.kind.value == Kind::Http)
        else {
            return Err(EndpointError::NotHttp {
                backend: self.name.clone(),
                kind: self.kind.value,
            });
        };
        if !self.serves(dialect) {
            return Err(EndpointError::DialectNotServed {
                backend: self.name.clone(),
                dialect,
                served: self
                    .apis
                    .value
                    .iter()
                    .map(|d| d.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let base = &base.value;
        Ok(match dialect {
            Dialect::Chat => format!("{base}/chat/completions"),
            Dialect::Responses => format!("{base}/responses"),
            Dialect::Messages => format!(
                "{}/v1/messages",
                self.messages_root().unwrap_or_else(|| base.clone())
            ),
            Dialect::Gemini => {
                let root = self.gemini_root().unwrap_or_else(|| base.clone());
                let model = crate::model_id::escape_segment(model);
                if stream {
                    format!("{root}/models/{model}:streamGenerateContent?alt=sse")
                } else {
                    format!("{root}/models/{model}:generateContent")
                }
            }
        })
    }

    /// The URL to call `dialect` at for `model`, placeholders filled from `env`.
    pub fn endpoint(
        &self,
        dialect: Dialect,
        model: &str,
        stream: bool,
        env: &dyn EnvSource,
    ) -> Result<url::Url, EndpointError> {
        self.fill_url(&self.endpoint_template(dialect, model, stream)?, env)
    }

    /// A root URL of this backend (`base_url`, `messages_url`…) with its placeholders
    /// filled from `env`.
    pub fn fill_url(&self, template: &str, env: &dyn EnvSource) -> Result<url::Url, EndpointError> {
        let filled = url_template::expand(template, env).map_err(|variable| {
            EndpointError::UnsetVariable {
                backend: self.name.clone(),
                variable,
            }
        })?;
        let filled = vertex_global_host(&filled);
        url::Url::parse(&filled).map_err(|e| EndpointError::BadUrl {
            backend: self.name.clone(),
            url: filled.clone(),
            reason: e.to_string(),
        })
    }

    /// The `extra_body` fields a `dialect` body gets: all of them in the backend's main
    /// dialect (the first in `apis`, the one its fields are written for: a chat server's
    /// `chat_template_kwargs` would be refused in a Responses body), none in another.
    pub fn extra_body_for(
        &self,
        dialect: Dialect,
    ) -> impl Iterator<Item = (&String, &Resolved<serde_json::Value>)> {
        let main = self.apis.value.first() == Some(&dialect);
        self.extra_body.iter().filter(move |_| main)
    }

    /// The fields of this backend that make its request encoding change a `dialect` body
    /// after the codec wrote it (`developer_role: system`, `max_tokens_field: max_tokens`,
    /// `extra_body`): a program that sends such a body itself (a bound CLI) must send it
    /// through the gateway, which applies them.
    pub fn body_edits(&self, dialect: Dialect) -> Vec<&'static str> {
        let mut edits = Vec::new();
        if self.developer_role.value == DeveloperRole::System
            && matches!(dialect, Dialect::Chat | Dialect::Responses)
        {
            edits.push("developer_role: system");
        }
        if self.max_tokens_field.value == MaxTokensField::MaxTokens && dialect == Dialect::Chat {
            edits.push("max_tokens_field: max_tokens");
        }
        if self.extra_body_for(dialect).next().is_some() {
            edits.push("extra_body");
        }
        edits
    }

    /// How the key is sent when calling `dialect`. The native Gemini API takes an API key
    /// only as `x-goog-api-key`, so a `bearer` backend (Google AI Studio's OpenAI-compatible
    /// chat) sends its key that way for `gemini`; every other case is `auth` as configured.
    pub fn auth_for(&self, dialect: Dialect) -> Auth {
        match (dialect, self.auth.value) {
            (Dialect::Gemini, Auth::Bearer) => Auth::XGoogApiKey,
            (_, auth) => auth,
        }
    }

    /// True when this backend never sends a key from `api_key_env`.
    pub fn uses_no_key(&self) -> bool {
        self.kind.value != Kind::Http || matches!(self.auth.value, Auth::None | Auth::GoogleAdc)
    }

    /// Whether the key variable is set, unset, or not needed. Never reveals the value.
    pub fn key_status(&self, env: &dyn EnvSource) -> KeyStatus {
        if self.uses_no_key() {
            return KeyStatus::NotNeeded;
        }
        match env.var(&self.api_key_env.value) {
            Some(_) => KeyStatus::Set,
            None if !self.key_required.value => KeyStatus::NotNeeded,
            None => KeyStatus::Unset,
        }
    }

    /// The key to send: `Ok(Some(key))` when set, `Ok(None)` when none is needed (no-key
    /// auth, or `key_required: false` with the variable unset), `Err(MissingKey)` naming
    /// the variable otherwise.
    pub fn api_key(&self, env: &dyn EnvSource) -> Result<Option<String>, EndpointError> {
        if self.uses_no_key() {
            return Ok(None);
        }
        match env.var(&self.api_key_env.value) {
            Some(k) => {
                // Registered here, where its variable is known, for the warning a key too
                // short to redact gets.
                crate::internal::redact::register(
                    &k,
                    &format!("the key in {}", self.api_key_env.value),
                );
                Ok(Some(k))
            }
            None if !self.key_required.value => Ok(None),
            None => Err(EndpointError::MissingKey {
                backend: self.name.clone(),
                variable: self.api_key_env.value.clone(),
            }),
        }
    }

    /// The model id an alias names on this backend, or `model` itself. With
    /// `model_options`, an alias before the options is expanded too (`large+cache` →
    /// `mock-large+cache`).
    pub fn expand_alias(&self, model: &str) -> String {
        expand_alias(model, self.options(), |m| self.alias(m))
    }

    /// The price of `model` (after aliases), if known: its own, else — with
    /// `model_options` — that of the model before its options.
    pub fn price(&self, model: &str) -> Option<&Resolved<Price>> {
        price_of(
            model,
            self.options(),
            |m| self.alias(m),
            |m| self.prices.get(m),
        )
    }

    /// The LiteLLM hand-off for `model` (an alias is expanded): `None` when the backend has
    /// no `litellm` prefix. `api_base` is the root LiteLLM's route expects: the chat root
    /// (`base_url`) for OpenAI-compatible routes, the Messages root for `anthropic`, the
    /// server's origin (no `/v1`) for `ollama`/`ollama_chat`, none for `gemini` and
    /// `vertex_ai`. Placeholders in the URL are filled from `env`.
    pub fn litellm(
        &self,
        model: &str,
        env: &dyn EnvSource,
    ) -> Result<Option<LiteLlm>, EndpointError> {
        let Some(prefix) = &self.litellm else {
            return Ok(None);
        };
        let prefix = prefix.value.as_str();
        let root = match prefix {
            "gemini" | "vertex_ai" => None,
            "anthropic" => self.messages_root(),
            "ollama" | "ollama_chat" => self
                .base_url
                .as_ref()
                .map(|b| b.value.strip_suffix("/v1").unwrap_or(&b.value).to_string()),
            _ => self.base_url.as_ref().map(|b| b.value.clone()),
        };
        let api_base = match root {
            Some(template) => {
                let filled = url_template::expand(&template, env).map_err(|variable| {
                    EndpointError::UnsetVariable {
                        backend: self.name.clone(),
                        variable,
                    }
                })?;
                Some(filled)
            }
            None => None,
        };
        Ok(Some(LiteLlm {
            model: format!("{prefix}/{}", self.expand_alias(model)),
            api_base,
            api_key_env: (!self.uses_no_key()).then(|| self.api_key_env.value.clone()),
        }))
    }

    /// Refuses a model id that is not data (see [`crate::model_id::check`]): every URL
    /// built for a model checks it, whoever asked.
    pub(super) fn check_model_id(&self, model: &str) -> Result<(), EndpointError> {
        crate::model_id::check(model).map_err(|error| EndpointError::BadModelId {
            backend: self.name.clone(),
            error,
        })
    }

    fn alias(&self, model: &str) -> Option<String> {
        self.models.get(model).map(|r| r.value.clone())
    }

    fn options(&self) -> Option<&str> {
        self.model_options.as_ref().map(|o| o.value.as_str())
    }
}

/// The model id an alias names, or `model` itself; with an options separator, an alias
/// before the options is expanded too. The rule apart from where the tables live: a
/// resolved backend and a recorded run's `run.yaml` both apply it.
pub(crate) fn expand_alias(
    model: &str,
    options: Option<&str>,
    alias: impl Fn(&str) -> Option<String>,
) -> String {
    if let Some(id) = alias(model) {
        return id;
    }
    split_options(model, options)
        .and_then(|(base, rest)| Some(alias(base)? + rest))
        .unwrap_or_else(|| model.to_string())
}

/// The price of `model` after its alias: its own, else that of the model before its
/// options (the same rule for a backend and a recorded run, as [`expand_alias`]).
pub(crate) fn price_of<P>(
    model: &str,
    options: Option<&str>,
    alias: impl Fn(&str) -> Option<String>,
    price: impl Fn(&str) -> Option<P>,
) -> Option<P> {
    let model = expand_alias(model, options, alias);
    price(&model).or_else(|| price(split_options(&model, options)?.0))
}

/// `model` cut before its options (`("mock-large", "+cache")`), when there is a separator
/// and the model carries some.
fn split_options<'a>(model: &'a str, options: Option<&str>) -> Option<(&'a str, &'a str)> {
    let at = model.find(options?)?;
    Some((&model[..at], &model[at..]))
}

/// Vertex AI's `global` location has no regional host: `global-aiplatform.googleapis.com`
/// does not exist, the endpoint is `aiplatform.googleapis.com` (the one Gemini 3 models
/// need). Every other location keeps its `<location>-aiplatform` host.
fn vertex_global_host(url: &str) -> String {
    url.replacen(
        "://global-aiplatform.googleapis.com",
        "://aiplatform.googleapis.com",
        1,
    )
}

fn not_set(r: &Resolved<bool>) -> bool {
    !r.value
}
