//! Model references: `<backend>/<model id>`, where the model id keeps its own slashes and a
//! backend's aliases are expanded.

use serde::Serialize;

use crate::internal::suggest::nearest;
use crate::registry::Registry;

/// A resolved reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Reference {
    /// The backend's name (the first segment).
    pub backend: String,
    /// The model id on that backend, after aliases (slashes kept).
    pub model: String,
    /// The model as written, before aliases.
    pub requested_model: String,
}

impl std::fmt::Display for Reference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.backend, self.model)
    }
}

/// What a model string is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// Its first segment names a backend.
    Reference(Reference),
    /// Its first segment is no backend's name: a model of some other provider (for a CLI
    /// agent, a model of the CLI's own provider, e.g. `gpt-5.4`). Holds the string as given.
    NotAReference(String),
}

/// Why a string is not a usable reference.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReferenceError {
    /// The first segment names no backend.
    #[error("`{text}` is not a model reference: no backend is called `{name}`{}; known backends: {}. A reference is `<backend>/<model id>`", .nearest.as_ref().map(|n| format!(" (did you mean `{n}`?)")).unwrap_or_default(), .known.join(", "))]
    UnknownBackend {
        /// The string as given.
        text: String,
        /// Its first segment.
        name: String,
        /// Every backend's name.
        known: Vec<String>,
        /// The nearest backend name, if one is close.
        nearest: Option<String>,
    },
    /// `<backend>/` with nothing after it.
    #[error("`{text}` names backend `{backend}` but no model: write `{backend}/<model id>`")]
    EmptyModel {
        /// The string as given.
        text: String,
        /// The backend.
        backend: String,
    },
    /// The model id, after aliases, is not one that can be sent (see
    /// [`crate::model_id`]): checked here so that every door refuses it the same way.
    #[error("`{backend}/…`: {error}")]
    BadModelId {
        /// The backend.
        backend: String,
        /// The id (after aliases) and why it was refused.
        error: crate::model_id::BadModelId,
    },
}

impl Registry {
    /// Reads `text` as a reference if its first segment names a backend; otherwise says it is
    /// not a reference. Aliases of the backend are expanded. `Err` for `<backend>/` with an
    /// empty model, and for a model id (after aliases: the id that would be sent) that
    /// [`crate::model_id::check`] refuses.
    pub fn parse_reference(&self, text: &str) -> Result<Parsed, ReferenceError> {
        let Some((name, model)) = text.split_once('/') else {
            return Ok(Parsed::NotAReference(text.to_string()));
        };
        let Some(backend) = self.backend(name) else {
            return Ok(Parsed::NotAReference(text.to_string()));
        };
        if model.is_empty() {
            return Err(ReferenceError::EmptyModel {
                text: text.to_string(),
                backend: name.to_string(),
            });
        }
        let id = backend.expand_alias(model);
        crate::model_id::check(&id).map_err(|error| ReferenceError::BadModelId {
            backend: name.to_string(),
            error,
        })?;
        Ok(Parsed::Reference(Reference {
            backend: name.to_string(),
            model: id,
            requested_model: model.to_string(),
        }))
    }

    /// Reads `text` as a reference where one is required: a string naming no backend is an
    /// error listing the known backends and the nearest match.
    pub fn require_reference(&self, text: &str) -> Result<Reference, ReferenceError> {
        match self.parse_reference(text)? {
            Parsed::Reference(r) => Ok(r),
            // A backend's name alone: the model is what is missing, not the backend.
            Parsed::NotAReference(_) if !text.contains('/') && self.backend(text).is_some() => {
                Err(ReferenceError::EmptyModel {
                    text: text.to_string(),
                    backend: text.to_string(),
                })
            }
            Parsed::NotAReference(_) => {
                let name = text.split('/').next().unwrap_or(text).to_string();
                Err(ReferenceError::UnknownBackend {
                    text: text.to_string(),
                    nearest: nearest(&name, self.names()),
                    name,
                    known: self.names().map(str::to_string).collect(),
                })
            }
        }
    }
}
