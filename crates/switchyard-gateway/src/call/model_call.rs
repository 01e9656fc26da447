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
use crate::conversations::plan::Aim;
use crate::conversations::prior::Prior;
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
    /// What the request names of kept state (`conversations/`): each member tried gets
    /// the body its history expands to, and the call's turn is kept.
    pub prior: &'a Prior,
}

impl ModelCall<'_> {
    /// Whether the call to `target` is passed through: the same dialect, and a body
    /// that may pass.
    fn passes(&self, target: &Target) -> bool {
        target.dialect == self.dialect && self.may_pass
    }
}

impl ModelCall<'_> {
    /// Passes `bytes` through when the member speaks the client's dialect and they may
    /// pass; translates them otherwise.
    async fn forward(
        &self,
        target: &Arc<Target>,
        raw: &RawBody<'_>,
        bytes: &Bytes,
        may_pass: bool,
        meter: &mut Meter,
    ) -> Result<Response, Failure> {
        if target.dialect == self.dialect && may_pass {
            passthrough::forward(
                target,
                raw,
                bytes,
                self.stream,
                self.dialect,
                self.headers,
                meter,
            )
            .await
        } else {
            translate::forward(
                target,
                bytes,
                self.stream,
                self.dialect,
                self.state_key,
                meter,
            )
            .await
        }
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
                self.bytes.len() + self.prior.history_bytes(),
                budgets::stated_output_limit(self.dialect, self.raw),
                target.output_limit,
            )
        })
    }

    fn too_large_for(&self, target: &Target) -> Option<(u64, u64)> {
        // The library's low estimate of a prompt's tokens: its JSON bytes ÷ 4.
        let sent = self.bytes.len() + self.prior.history_bytes();
        let estimate = sent as u64 / 4;
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
        let aim = Aim {
            backend: &target.backend,
            passes: target.dialect == self.dialect,
            keeps_state: target.keeps_state,
        };
        let plan = match self.prior.plan(self.bytes, aim) {
            Ok(plan) => plan,
            Err(e) => {
                if let (404, Some(books)) = (e.status.as_u16(), meter.books()) {
                    books.metrics.kept.not_found(self.prior.kind());
                }
                return Err(Failure::Refused(e));
            }
        };
        if let Some(keeping) = plan.keeping {
            meter.keep_turn(keeping);
        }
        let Some(body) = plan.body else {
            return self
                .forward(target, self.raw, self.bytes, self.may_pass, meter)
                .await;
        };
        // The history expanded from kept turns: sent as the client's body would be.
        if let Some(books) = meter.books() {
            books.metrics.kept.expanded(self.prior.kind());
        }
        let raw = RawBody::parse(&body).map_err(|m| {
            Failure::Refused(ApiError::new(
                Category::Internal,
                format!("an expanded history: {m}"),
            ))
        })?;
        let may_pass = !translate::envelope::may_carry(&body);
        self.forward(target, &raw, &body, may_pass, meter).await
    }
}
