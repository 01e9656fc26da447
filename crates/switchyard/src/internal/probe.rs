//! Checking what a backend claims before a run spends anything: its model list, one short
//! request in each dialect it lists, and for `responses` one more carrying a `namespace`
//! tool (what Codex sends for MCP servers, refused by some servers).
//!
//! Each step is its own function so that a caller can show progress between them;
//! [`check`] runs them all. The environment is `Sync`, so that a check is a `Send` future
//! a caller may run on any runtime (the Python package's).

use crate::connect;
use crate::env::EnvSource;
use crate::error::ErrorKind;
use crate::registry::{self, Auth};
use crate::Backend as _;
use std::time::{Duration, Instant};
use switchyard_wire::{Dialect, Part, Request, Tool};

/// The longest one step may take.
pub const STEP_TIMEOUT: Duration = Duration::from_secs(60);

/// The namespace of the tool sent with the `responses` namespace check.
pub const CHECK_NAMESPACE: &str = "mcp__switchyard_check__";

/// The result of `GET <base_url>/models`.
#[derive(Debug, Clone)]
pub struct ModelsCheck {
    /// The URL asked.
    pub url: String,
    /// How long it took.
    pub elapsed: Duration,
    /// The model ids listed, or why there is no list.
    pub result: Result<Vec<String>, String>,
}

impl ModelsCheck {
    /// Whether `model` is among the ids listed (`None` without a list).
    pub fn lists(&self, model: &str) -> Option<bool> {
        self.result.as_ref().ok().map(|ids| {
            ids.iter()
                .any(|id| id == model || id.strip_prefix("models/") == Some(model))
        })
    }
}

/// One request tried.
#[derive(Debug, Clone)]
pub struct Attempt {
    /// The dialect it was sent in.
    pub dialect: Dialect,
    /// True for the `responses` request carrying a `namespace` tool.
    pub namespace_tool: bool,
    /// How long it took.
    pub elapsed: Duration,
    /// The reply's text (shortened), or the error.
    pub result: Result<String, AttemptError>,
}

impl Attempt {
    /// `chat`, `responses`, or `responses + namespace tool`.
    pub fn label(&self) -> String {
        if self.namespace_tool {
            format!("{} + namespace tool", self.dialect)
        } else {
            self.dialect.to_string()
        }
    }
}

/// Why a request failed.
#[derive(Debug, Clone)]
pub struct AttemptError {
    /// The error's kind (`None` for a check of the reply itself).
    pub kind: Option<ErrorKind>,
    /// The message.
    pub message: String,
}

/// Everything [`check`] found.
#[derive(Debug, Clone)]
pub struct Report {
    /// The backend.
    pub backend: String,
    /// The model id.
    pub model: String,
    /// The model list.
    pub models: ModelsCheck,
    /// The requests, in order.
    pub attempts: Vec<Attempt>,
}

impl Report {
    /// True when every claimed dialect answered.
    pub fn claims_hold(&self) -> bool {
        self.attempts.iter().all(|a| a.result.is_ok())
    }
}

/// Lists the backend's models: `GET <base_url>/models` with its key, reading OpenAI's
/// `{"data":[{"id":…}]}` or Google's `{"models":[{"name":…}]}`.
pub async fn list_models(backend: &registry::Backend, env: &(dyn EnvSource + Sync)) -> ModelsCheck {
    let started = Instant::now();
    let (url, result) = match models_request(backend, env) {
        Ok((url, request)) => {
            let result = match tokio::time::timeout(STEP_TIMEOUT, request.send()).await {
                Err(_) => Err(format!("no answer within {} s", STEP_TIMEOUT.as_secs())),
                Ok(Err(e)) => Err(format!("could not reach it: {e}")),
                Ok(Ok(response)) => read_models(response).await,
            };
            (url, result)
        }
        Err(e) => (String::new(), Err(e)),
    };
    ModelsCheck {
        url,
        elapsed: started.elapsed(),
        result,
    }
}

fn models_request(
    backend: &registry::Backend,
    env: &dyn EnvSource,
) -> Result<(String, reqwest::RequestBuilder), String> {
    let base = backend
        .base_url
        .as_ref()
        .ok_or_else(|| format!("backend `{}` has no base_url", backend.name))?;
    let url = backend
        .fill_url(&base.value, env)
        .map_err(|e| e.to_string())?;
    let url = format!("{}/models", url.as_str().trim_end_matches('/'));
    let client = reqwest::Client::builder()
        .user_agent(concat!("switchyard/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| format!("could not build an HTTP client: {e}"))?;
    let mut request = client.get(&url);
    let key = backend.api_key(env).map_err(|e| e.to_string())?;
    match (backend.auth.value, key) {
        (Auth::GoogleAdc, _) => {
            return Err("not checked: the backend uses Google credentials, not a key".into())
        }
        (_, None) | (Auth::None, _) => {}
        (Auth::Bearer, Some(k)) => request = request.bearer_auth(k),
        (Auth::XApiKey, Some(k)) => {
            request = request
                .header("x-api-key", k)
                .header("anthropic-version", crate::backend::http::ANTHROPIC_VERSION)
        }
        (Auth::XGoogApiKey, Some(k)) => request = request.header("x-goog-api-key", k),
    }
    Ok((url, request))
}

async fn read_models(response: reqwest::Response) -> Result<Vec<String>, String> {
    let status = response.status();
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("the answer broke off: {e}"))?;
    // Not the send path: redacted here, as it is there.
    let body = crate::internal::redact::redact_shared(body);
    if !status.is_success() {
        return Err(format!(
            "HTTP {}: {}",
            status.as_u16(),
            crate::text::preview(&body, 200)
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&body).map_err(|_| {
        format!(
            "not a JSON model list: {}",
            crate::text::preview(&body, 200)
        )
    })?;
    let ids = |list: &serde_json::Value, field: &str| -> Option<Vec<String>> {
        Some(
            list.as_array()?
                .iter()
                .filter_map(|m| m.get(field).and_then(|i| i.as_str()).map(str::to_string))
                .collect(),
        )
    };
    ids(&v["data"], "id")
        .or_else(|| ids(&v["models"], "name"))
        .ok_or_else(|| {
            format!(
                "not a model list (no `data` or `models` array): {}",
                crate::text::preview(&body, 200)
            )
        })
}

/// The short request every dialect is sent.
pub fn short_request() -> Request {
    Request::user("Reply with the single word: ok").with_max_tokens(64)
}

/// The short request with one tool inside a `namespace` (as Codex sends MCP tools).
pub fn namespace_request() -> Request {
    let mut request = short_request();
    request.tools.push(Tool {
        name: "lookup".into(),
        description: Some("Looks a word up (a check by switchyard; no need to call it).".into()),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
            "additionalProperties": false
        }),
        kind: Default::default(),
        strict: None,
        namespace: Some(CHECK_NAMESPACE.into()),
    });
    request
}

/// Sends one short request in `dialect` (with the namespace tool when `namespace_tool`).
pub async fn try_dialect(
    backend: &registry::Backend,
    model: &str,
    dialect: Dialect,
    namespace_tool: bool,
    env: &(dyn EnvSource + Sync),
) -> Attempt {
    let started = Instant::now();
    let request = if namespace_tool {
        namespace_request()
    } else {
        short_request()
    };
    let result = send(backend, model, dialect, request, namespace_tool, env).await;
    Attempt {
        dialect,
        namespace_tool,
        elapsed: started.elapsed(),
        result,
    }
}

async fn send(
    backend: &registry::Backend,
    model: &str,
    dialect: Dialect,
    request: Request,
    namespace_tool: bool,
    env: &(dyn EnvSource + Sync),
) -> Result<String, AttemptError> {
    let typed = |e: crate::Error| AttemptError {
        kind: Some(e.kind()),
        message: e.to_string(),
    };
    let http = connect::http_backend(backend, model, Some(dialect), env).map_err(typed)?;
    let call = crate::Call::new(model, request);
    let reply = match tokio::time::timeout(STEP_TIMEOUT, http.complete(&call)).await {
        Err(_) => {
            return Err(AttemptError {
                kind: Some(ErrorKind::Timeout),
                message: format!("no reply within {} s", STEP_TIMEOUT.as_secs()),
            })
        }
        Ok(r) => r.map_err(typed)?,
    };
    crate::check_reply(&backend.name, &reply).map_err(typed)?;
    if namespace_tool {
        // A server that flattens the namespace answers with a name Codex cannot route.
        for part in &reply.content {
            if let Part::ToolCall(call) = part {
                if call.namespace.as_deref() != Some(CHECK_NAMESPACE) || call.name != "lookup" {
                    return Err(AttemptError {
                        kind: None,
                        message: format!(
                            "the tool call came back as `{}` in namespace {:?}, not `lookup` in \
                             `{CHECK_NAMESPACE}`: Codex would refuse it as an unsupported call",
                            call.name, call.namespace
                        ),
                    });
                }
            }
        }
    }
    let text = reply.text();
    let shown = if text.is_empty() && reply.tool_calls().next().is_some() {
        "(a tool call)".to_string()
    } else {
        crate::text::preview(text.as_bytes(), 40)
    };
    Ok(shown)
}

/// The requests [`check`] sends: each claimed dialect, then for `responses` the namespace
/// tool.
pub fn plan(backend: &registry::Backend) -> Vec<(Dialect, bool)> {
    let mut steps = Vec::new();
    for d in &backend.apis.value {
        steps.push((*d, false));
        if *d == Dialect::Responses {
            steps.push((*d, true));
        }
    }
    steps
}

/// Runs every step: the model list, then [`plan`], one after the other.
pub async fn check(
    backend: &registry::Backend,
    model: &str,
    env: &(dyn EnvSource + Sync),
) -> Report {
    let models = list_models(backend, env).await;
    let mut attempts = Vec::new();
    for (dialect, ns) in plan(backend) {
        attempts.push(try_dialect(backend, model, dialect, ns, env).await);
    }
    Report {
        backend: backend.name.clone(),
        model: model.to_string(),
        models,
        attempts,
    }
}

/// The model `--all` checks on a backend: its first alias's model, else its first priced
/// model.
pub fn default_model(backend: &registry::Backend) -> Option<String> {
    backend
        .models
        .values()
        .next()
        .map(|m| m.value.clone())
        .or_else(|| backend.prices.keys().next().cloned())
}
