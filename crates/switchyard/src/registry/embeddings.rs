//! Which backends serve embeddings, in which shape, at which URL.
//!
//! Embeddings are declared by listing `embeddings` in a backend's `apis`, beside its
//! dialects. They are not a dialect of their own (no messages, no stream, no tools, and a
//! `Dialect` variant would reach every match on one): the wire shape follows the
//! backend's family instead — Gemini's `batchEmbedContents` when its preferred dialect
//! (the first of `apis` among chat, responses and gemini) is `gemini`, else OpenAI's
//! `/embeddings` under `base_url` (an embeddings-only server, `apis: [embeddings]`,
//! is OpenAI-compatible).

use super::backend::{Backend, EndpointError};
use super::types::{Dialect, Kind};
use crate::env::EnvSource;
use switchyard_wire::embed::EmbedShape;

impl Backend {
    /// The shape this backend's embeddings are called in, `None` when `apis` does not
    /// list `embeddings`.
    pub fn embed_shape(&self) -> Option<EmbedShape> {
        if !self.embeddings.value {
            return None;
        }
        let family = self
            .apis
            .value
            .iter()
            .find(|d| matches!(d, Dialect::Chat | Dialect::Responses | Dialect::Gemini));
        Some(match family {
            Some(Dialect::Gemini) => EmbedShape::Gemini,
            _ => EmbedShape::Openai,
        })
    }

    /// The dialect whose URL root and credential embeddings in `shape` use: `chat` for
    /// OpenAI's shape, `gemini` for Gemini's (whose key goes as `x-goog-api-key`).
    pub fn embed_dialect(shape: EmbedShape) -> Dialect {
        match shape {
            EmbedShape::Openai => Dialect::Chat,
            EmbedShape::Gemini => Dialect::Gemini,
        }
    }

    /// The URL embeddings of `model` are called at, placeholders left in: `base_url` +
    /// `/embeddings`, or the Gemini root + `/models/{model}:batchEmbedContents`.
    pub fn embed_url_template(&self, model: &str) -> Result<String, EndpointError> {
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
        match self.embed_shape() {
            None => Err(EndpointError::EmbeddingsNotServed {
                backend: self.name.clone(),
            }),
            Some(EmbedShape::Openai) => Ok(format!("{}/embeddings", base.value)),
            Some(EmbedShape::Gemini) => Ok(format!(
                "{}/models/{}:batchEmbedContents",
                self.gemini_root().unwrap_or_else(|| base.value.clone()),
                crate::model_id::escape_segment(model)
            )),
        }
    }

    /// [`Backend::embed_url_template`] with its placeholders filled from `env`.
    pub fn embed_url(&self, model: &str, env: &dyn EnvSource) -> Result<url::Url, EndpointError> {
        self.fill_url(&self.embed_url_template(model)?, env)
    }
}
