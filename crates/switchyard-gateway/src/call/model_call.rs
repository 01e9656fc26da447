//! A model call as the pipeline's [`Case`]: chat completions, Responses, Messages or
//! Gemini, passed through when the member speaks the client's dialect (and the body
//! carries no envelope of another backend's state), translated otherwise; token counts
//! answered aside; the cache asked in the client's dialect.

use crate::account::budgets::{self, CallBound};
use crate::call::cache_hit::{self, Lookup};
use crate::call::case::Case;
use crate::call::failure::Failure;
use crate::call::translate::envelope::StateKey;
use crate::call::upstream::{without_retries, Target, Upstreams};
use crate::call::{count_tokens, passthrough, translate};
use crate::errors::{ApiError, Category};
use crate::meter::{Books, Meter};
use crate::raw::RawBody;
use axum::http::HeaderMap;
use axum::response::Response;
use bytes::Bytes;
use std::sync::Arc;
use switchyard::{Dialect, Reference};

/// One model call, as the client sent it.
pub(crate) struct ModelCall<'a> {
    /// The client's dialect.
    pub dialect: Dialect,
    /// The body, read at its top level.
    pub raw: &'a RawBody<'a>,
    /// The body's bytes.
    pub bytes: &'a Bytes,
    /// The request's headers (`anthropic-version`, `anthropic-beta` go upstream).
    pub headers: &'a HeaderMap,
    /// Whether the client asked for a stream.
    pub stream: bool,
    /// `count_tokens` rather than a reply.
    pub count_tokens: bool,
    /// What envelopes of a backend's opaque state are opened and sealed with.
    pub state_key: &'a StateKey,
    /// Whether the body may be passed through: it carries no envelope of another
    /// backend's state to open (that takes translation, even to its own dialect).
    pub may_pass: bool,
}

impl ModelCall<'_> {
    /// Whether the call to `target` is passed through: the same dialect, and a body
    /// that may pass.
    fn passes(&self, target: &Target) -> bool {
        target.dialect == self.dialect && self.may_pass
    }
}

impl ModelCall<'_> {
    /// The refusal of an Anthropic message thread (`"thread": {…}` in a Messages body)
    /// that no server on this call would hold: the gateway keeps none, and only the
    /// first-party Anthropic API, the body passed through to it, keeps its own. Refused
    /// with the signal Anthropic's SDKs fall back on (400, `error.details.error_code:
    /// "thread_unsupported_request"`: the whole history again, without `thread`), where
    /// dropping the field would send a lone tool result upstream.
    fn unheld_thread(&self, target: &Target) -> Option<ApiError> {
        if self.dialect != Dialect::Messages {
            return None;
        }
        self.raw.raw("thread").filter(|v| *v != "null")?;
        if self.passes(target) && target.anthropic_first_party {
            return None;
        }
        let refusal = ApiError::new(
            Category::BadRequest,
            format!(
                "`thread`: this gateway keeps no message threads, and backend `{}` is not the Anthropic API that keeps its own; send the whole conversation without `thread`",
                target.backend
            ),
        );
        Some(refusal.with_error_code("thread_unsupported_request"))
    }
}

impl Case for ModelCall<'_> {
    type Target = Target;

    fn target(
        &self,
        upstreams: &Upstreams,
        reference: &Reference,
        retries: bool,
    ) -> Result<Arc<Target>, ApiError> {
        let target = upstreams.target(reference, self.dialect)?;
        Ok(match retries {
            true => target,
            false => without_retries(&target),
        })
    }

    fn reference_of(target: &Target) -> &str {
        &target.reference
    }

    fn aim(&self, target: &Arc<Target>, meter: &mut Meter) {
        let stream = self.stream && !self.count_tokens;
        meter.set_target(target, stream, self.passes(target));
    }

    fn bound(&self, target: &Target) -> Option<CallBound> {
        target.price.as_ref().map(|price| {
            CallBound::new(
                price,
                self.bytes.len(),
                budgets::stated_output_limit(self.dialect, self.raw),
                target.output_limit,
            )
        })
    }

    fn too_large_for(&self, target: &Target) -> Option<(u64, u64)> {
        // The library's low estimate of a prompt's tokens: its JSON bytes ÷ 4.
        let estimate = self.bytes.len() as u64 / 4;
        let window = target.context_window.filter(|w| estimate > *w)?;
        Some((estimate, window))
    }

    fn streams(&self) -> bool {
        self.stream
    }

    async fn answer_aside(
        &self,
        target: &Arc<Target>,
        meter: &mut Meter,
    ) -> Option<Result<Response, ApiError>> {
        if !self.count_tokens {
            return None;
        }
        meter.not_recorded();
        Some(
            count_tokens::answer(
                target,
                self.raw,
                self.bytes,
                self.headers,
                self.dialect,
                meter,
            )
            .await,
        )
    }

    async fn cached(
        &self,
        books: &Books,
        state_key: &StateKey,
        name: &str,
        meter: &mut Meter,
    ) -> Option<Response> {
        let found = cache_hit::lookup(
            books,
            state_key,
            name,
            self.dialect,
            self.bytes,
            self.stream,
            meter,
        );
        match found.await {
            Lookup::Hit(response) => return Some(response),
            Lookup::Miss(Some(k)) => meter.set_cache_key(k),
            Lookup::Miss(None) => {}
        }
        None
    }

    async fn on(&self, target: &Arc<Target>, meter: &mut Meter) -> Result<Response, Failure> {
        if let Some(refusal) = self.unheld_thread(target) {
            return Err(Failure::Refused(refusal));
        }
        if self.passes(target) {
            passthrough::forward(
                target,
                self.raw,
                self.bytes,
                self.stream,
                self.dialect,
                self.headers,
                meter,
            )
            .await
        } else {
            translate::forward(
                target,
                self.bytes,
                self.stream,
                self.dialect,
                self.state_key,
                meter,
            )
            .await
        }
    }
}
