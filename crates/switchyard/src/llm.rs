//! The handle a program calls: one model on one backend.

use crate::backend::{Backend, Call};
use crate::error::{Error, Result};
use crate::reply_stream::ReplyStream;
use std::sync::Arc;
use switchyard_wire::{FinishReason, Part, Reply, Request};

/// A model to call: a backend and the model id on it.
///
/// ```no_run
/// # async fn demo() -> switchyard::Result<()> {
/// use switchyard::{Llm, Request};
/// let llm = Llm::from_reference("mock/echo")?;
/// let reply = llm.complete(Request::user("hello")).await?;
/// println!("{} ({} tokens out)", reply.text(), reply.usage.unwrap_or_default().output);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Llm {
    label: String,
    model: String,
    backend: Arc<dyn Backend>,
}

impl std::fmt::Debug for Llm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Llm")
            .field("label", &self.label)
            .field("model", &self.model)
            .field("backend", &self.backend.name())
            .finish()
    }
}

impl Llm {
    /// A handle on `backend` for `model`; `label` names it in messages (usually the
    /// reference as written).
    pub fn new(
        label: impl Into<String>,
        backend: Arc<dyn Backend>,
        model: impl Into<String>,
    ) -> Self {
        Llm {
            label: label.into(),
            model: model.into(),
            backend,
        }
    }

    /// The reference or label the handle was made from.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The model id on the backend.
    pub fn model(&self) -> &str {
        &self.model
    }

    /// The backend.
    pub fn backend(&self) -> &Arc<dyn Backend> {
        &self.backend
    }

    /// Sends a request and waits for the whole reply.
    pub async fn complete(&self, request: Request) -> Result<Reply> {
        let call = Call {
            model: self.model.clone(),
            request,
        };
        let reply = self.backend.complete(&call).await?;
        check_reply(self.backend.name(), &reply)?;
        Ok(reply)
    }

    /// Sends a request and streams the reply.
    pub async fn stream(&self, request: Request) -> Result<ReplyStream> {
        let call = Call {
            model: self.model.clone(),
            request,
        };
        self.backend.stream(&call).await
    }
}

/// A success that is not a reply: no text and no tool calls (unless the output limit cut
/// it short while thinking), or no token usage.
pub fn check_reply(backend: &str, reply: &Reply) -> Result<()> {
    let has_answer = reply.content.iter().any(|p| match p {
        Part::Text { text, .. } => !text.is_empty(),
        Part::ToolCall(_) => true,
        _ => false,
    });
    let reason = if !has_answer && reply.finish != FinishReason::Length {
        "the reply has neither text nor tool calls"
    } else if reply.usage.is_none() {
        "the reply has no token usage"
    } else {
        return Ok(());
    };
    Err(Error::ProviderReplyMalformed {
        backend: backend.to_string(),
        reason: reason.to_string(),
        attempts: 1,
        body: reply.raw.clone(),
    })
}

impl Llm {
    /// A handle for a reference such as `mock/echo` or `openai/gpt-5.4`, resolved against
    /// the built-in backends, the user's file and the environment.
    pub fn from_reference(reference: &str) -> Result<Llm> {
        let env = crate::env::ProcessEnv;
        let registry = crate::registry::Registry::load(&crate::registry::LoadOptions::new(&env))
            .map_err(|e| Error::Config(e.to_string()))?;
        Llm::resolve(&registry, reference, &env)
    }

    /// A handle for a reference resolved against `registry`, reading keys from `env`.
    pub fn resolve(
        registry: &crate::registry::Registry,
        reference: &str,
        env: &dyn crate::env::EnvSource,
    ) -> Result<Llm> {
        let resolved = registry
            .require_reference(reference)
            .map_err(reference_error)?;
        let backend = registry
            .backend(&resolved.backend)
            .ok_or_else(|| Error::Config(format!("backend `{}` vanished", resolved.backend)))?;
        let callable = crate::connect::backend_for(backend, &resolved.model, env)?;
        Ok(Llm::new(reference, callable, resolved.model))
    }
}

fn reference_error(e: crate::reference::ReferenceError) -> Error {
    match e {
        crate::reference::ReferenceError::UnknownBackend {
            name,
            known,
            nearest,
            ..
        } => Error::UnknownBackend {
            name,
            known,
            nearest,
        },
        crate::reference::ReferenceError::EmptyModel { text, .. } => Error::NotAReference { text },
    }
}
