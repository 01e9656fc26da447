//! A handle's calls through the run's response cache (`cache:` in the run config): an
//! identical call is answered from the call log, recorded as a hit at no cost, and never
//! counted against the budget.

use super::Llm;
use crate::attempt::CallOutcome;
use crate::backend::Call;
use crate::cache::{Cache, Hit, Lookup};
use crate::record::{Observed, Outcome};
use crate::reply_stream::ReplyStream;
use std::sync::Arc;
use switchyard_wire::embed::{EmbedRequest, EmbedShape, Embeddings};
use switchyard_wire::{Reply, Request};

impl Llm {
    /// The handle answering from `cache` what it was asked before (`cache:` in the run
    /// config; a run gives it to every role's handle).
    pub fn with_cache(mut self, cache: Arc<Cache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// The handle's cache, if any.
    pub fn cache(&self) -> Option<&Arc<Cache>> {
        self.cache.as_ref()
    }

    /// What the handle's calls are cached under: a route's name, else
    /// `<backend>/<model id>` (as the gateway keys a reference), so two names for one
    /// model share entries.
    fn cache_name(&self) -> String {
        match &self.routed {
            Some(routed) => routed.name().to_string(),
            None => format!("{}/{}", self.backend.name(), self.model),
        }
    }

    /// The cache's answer to a call, when the handle has a cache.
    pub(super) fn cache_lookup(&self, request: &Request, stream: bool) -> Option<Lookup> {
        let cache = self.cache.as_ref()?;
        Some(cache.lookup(&self.cache_name(), request, None, stream))
    }

    /// The recorded reply, whole, recorded as a hit.
    pub(super) async fn cached_complete(
        &self,
        request: Request,
        hit: Box<Hit>,
    ) -> CallOutcome<Reply> {
        let number = hit.record.number;
        let result = crate::backend::replay::recorded_reply(self.backend.name(), &hit.record).await;
        let run = hit.other_run.as_ref().map(|d| d.display().to_string());
        let observed = Observed::begin_hit(&self.observer(), &self.model, false, number, run);
        let call = Call::new(self.model.clone(), request).with_role(self.role.clone());
        if let Some(o) = observed {
            let seen = match &result {
                Ok(r) => Outcome::Reply(r),
                Err(e) => Outcome::Failed(e, None),
            };
            o.end(call, None, seen, None, &[]).await;
        }
        answered(result)
    }

    /// The recorded reply, streamed (as it was recorded, when it was), recorded as a hit
    /// when the stream ends.
    pub(super) fn cached_stream(
        &self,
        request: Request,
        hit: Box<Hit>,
    ) -> CallOutcome<ReplyStream> {
        let number = hit.record.number;
        let result = crate::backend::replay::recorded_stream(self.backend.name(), &hit.record);
        let run = hit.other_run.as_ref().map(|d| d.display().to_string());
        let observed = Observed::begin_hit(&self.observer(), &self.model, true, number, run);
        let call = Call::new(self.model.clone(), request).with_role(self.role.clone());
        let result = match (result, observed) {
            (Ok(stream), Some(o)) => Ok(stream.on_end(Box::new(move |reply, end, first_byte| {
                o.end(call, None, Outcome::of_stream(reply, end), first_byte, &[])
            }))),
            (result, _) => result,
        };
        answered(result)
    }
}

impl Llm {
    /// The cache's answer to an embeddings call, when the handle has a cache.
    pub(super) fn embed_cache_lookup(&self, request: &EmbedRequest) -> Option<Lookup> {
        let cache = self.cache.as_ref()?;
        Some(cache.lookup_embedding(&self.cache_name(), request))
    }

    /// The recorded vectors, decoded from the recorded bytes in their recorded shape,
    /// recorded as a hit.
    pub(super) async fn cached_embed(
        &self,
        request: EmbedRequest,
        hit: Box<Hit>,
    ) -> CallOutcome<Embeddings> {
        let record = &hit.record;
        let shape = record
            .embedding
            .as_ref()
            .map_or(EmbedShape::Openai, |e| e.shape);
        let result = record.raw_bytes().and_then(|raw| {
            crate::embed::decode_reply(self.backend.name(), shape, &[], raw, request.input.len())
        });
        let run = hit.other_run.as_ref().map(|d| d.display().to_string());
        let observed =
            Observed::begin_hit(&self.observer(), &self.model, false, record.number, run);
        let call = crate::embed::EmbedCall {
            model: self.model.clone(),
            request,
            role: self.role.clone(),
            notes: Default::default(),
        };
        if let Some(o) = observed {
            let sent = call.notes.take();
            o.end_embedding(call, shape, sent, result.as_ref(), &[])
                .await;
        }
        answered(result)
    }
}

fn answered<T>(result: crate::Result<T>) -> CallOutcome<T> {
    CallOutcome {
        result,
        attempts: Vec::new(),
        sent_body: None,
        member: None,
    }
}
