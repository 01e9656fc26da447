//! A call through a route in the library: the router's plan tried member by member, each
//! member a plain handle of its own (its backend, retries, context window, price), and one
//! record for the whole call listing every attempt on every member.
//!
//! A stream falls back only while nothing reached the caller: a member's stream is handed
//! out once its first output event is read ([`Llm::stream_detailed`]), and a failure after
//! that ends the stream with the error and is recorded as cut, never retried elsewhere.

use super::{Busy, Plan, Router};
use crate::attempt::{Attempt, CallOutcome};
use crate::backend::{Call, Sent};
use crate::error::{fmt_duration, Error, ErrorKind};
use crate::llm::Llm;
use crate::record::{Observed, Outcome};
use crate::reply_stream::ReplyStream;
use bytes::Bytes;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use switchyard_wire::embed::{EmbedRequest, Embeddings};
use switchyard_wire::{Reply, Request};

/// A route's router and its members' handles.
#[derive(Clone)]
pub(crate) struct Routed {
    pub router: Arc<Router>,
    pub members: Vec<Llm>,
}

/// What trying the members gave: the value and the member that gave it, every attempt,
/// the last body sent, the member last tried and its in-flight place.
struct Tried<T> {
    result: Result<T, Error>,
    attempts: Vec<Attempt>,
    sent_body: Option<Bytes>,
    member: Option<usize>,
    busy: Option<Busy>,
}

impl Routed {
    /// Tries the plan's members in turn with `call` (given the member's index), falling
    /// back on the route's kinds; a member too small for `request` (a model call's, not an
    /// embedding's) is skipped.
    async fn run<T, F, Fut>(&self, handle: &Llm, request: Option<&Request>, mut call: F) -> Tried<T>
    where
        F: FnMut(usize) -> Fut,
        Fut: Future<Output = CallOutcome<T>>,
    {
        let route = self.router.route();
        let mut tried = Tried {
            result: Err(Error::Config(format!(
                "route `{}` tried no member",
                route.name
            ))),
            attempts: Vec::new(),
            sent_body: None,
            member: None,
            busy: None,
        };
        let mut waited = Duration::ZERO;
        let mut has_waited = false;
        let order = loop {
            match self.router.plan() {
                Plan::Try(order) => break order,
                // Someone else's call cooled it again meanwhile: it is tried all the same.
                Plan::Wait { member, .. } if has_waited => break vec![member],
                Plan::Wait { member, wait } => {
                    has_waited = true;
                    tracing::warn!(
                        route = %route.name,
                        wait = %fmt_duration(wait),
                        "route {}: every member is cooling down; waiting {} for {}",
                        route.name,
                        fmt_duration(wait),
                        route.members[member].reference
                    );
                    tokio::select! {
                        biased;
                        _ = handle.cancellation().cancelled() => {
                            tried.result = Err(Error::Cancelled {
                                backend: format!("route {}", route.name),
                                during: format!("while waiting {} for a member's cooldown", fmt_duration(wait)),
                            });
                            return tried;
                        }
                        _ = handle.sleeper().sleep(wait) => {}
                    }
                    waited += wait;
                    self.router.clear(member);
                }
                Plan::Unavailable(e) => {
                    tried.result = Err(e);
                    return tried;
                }
            }
        };
        let mut wait_before = waited;
        let last = order.last().copied();
        for i in order {
            let member = &self.members[i];
            tried.member = Some(i);
            // A prompt too large for this member's window skips it: the next may be larger.
            if let Err(e) = request.map_or(Ok(()), |r| member.check_context(r)) {
                tried.attempts.push(Attempt {
                    number: tried.attempts.len() as u32 + 1,
                    wait_before: std::mem::take(&mut wait_before),
                    started_at: SystemTime::now(),
                    duration: Duration::ZERO,
                    first_output: None,
                    status: None,
                    error_kind: Some(ErrorKind::ContextLengthExceeded),
                    error: Some(format!("skipped: {e}")),
                    reference: Some(member.label().to_string()),
                });
                tried.result = Err(e);
                continue;
            }
            let busy = self.router.enter(i);
            let outcome = call(i).await;
            for (k, mut a) in outcome.attempts.into_iter().enumerate() {
                a.number = tried.attempts.len() as u32 + 1;
                if k == 0 {
                    a.wait_before += std::mem::take(&mut wait_before);
                }
                a.reference = Some(member.label().to_string());
                tried.attempts.push(a);
            }
            if outcome.sent_body.is_some() {
                tried.sent_body = outcome.sent_body;
            }
            match outcome.result {
                Ok(value) => {
                    tried.result = Ok(value);
                    tried.busy = Some(busy);
                    return tried;
                }
                Err(e) if matches!(e, Error::Cancelled { .. }) => {
                    tried.result = Err(e);
                    return tried;
                }
                Err(e) => {
                    let falls_back = self.router.failed(i, &e);
                    if falls_back && Some(i) != last {
                        tracing::warn!(
                            route = %route.name,
                            member = member.label(),
                            kind = e.kind().as_str(),
                            "route {}: {} failed ({}); trying the next member: {e}",
                            route.name,
                            member.label(),
                            e.kind()
                        );
                    }
                    tried.result = Err(e);
                    if !falls_back {
                        return tried;
                    }
                }
            }
        }
        tried
    }

    /// [`Llm::complete_detailed`] through the route.
    pub(crate) async fn complete(
        &self,
        handle: &Llm,
        request: Request,
        cache_key: Option<String>,
    ) -> CallOutcome<Reply> {
        let mut observed = match Observed::begin(&handle.observer(), handle.model(), false) {
            Ok(o) => o,
            Err(e) => return not_sent(e),
        };
        if let Some(o) = &mut observed {
            o.enter_cache(cache_key);
        }
        let tried = self
            .run(handle, Some(&request), |i| {
                self.members[i].plain_complete(request.clone())
            })
            .await;
        let member = tried.member.map(|i| &self.members[i]);
        let outcome = CallOutcome {
            result: tried.result,
            attempts: tried.attempts,
            sent_body: tried.sent_body,
            member: member.map(|m| m.label().to_string()),
        };
        let Some(mut observed) = observed else {
            return outcome;
        };
        let call = self.served(&mut observed, handle, member, request);
        let sent = Sent {
            body: outcome.sent_body.clone(),
            ..Sent::default()
        };
        let seen = match &outcome.result {
            Ok(r) => Outcome::Reply(r),
            Err(e) => Outcome::Failed(e, None),
        };
        observed
            .end(call, Some(sent), seen, None, &outcome.attempts)
            .await;
        outcome
    }

    /// [`Llm::stream_detailed`] through the route.
    pub(crate) async fn stream(
        &self,
        handle: &Llm,
        request: Request,
        cache_key: Option<String>,
    ) -> CallOutcome<ReplyStream> {
        let mut observed = match Observed::begin(&handle.observer(), handle.model(), true) {
            Ok(o) => o,
            Err(e) => return not_sent(e),
        };
        if let Some(o) = &mut observed {
            o.enter_cache(cache_key);
        }
        let tried = self
            .run(handle, Some(&request), |i| {
                self.members[i].plain_stream(request.clone())
            })
            .await;
        let member = tried.member.map(|i| &self.members[i]);
        let label = member.map(|m| m.label().to_string());
        // The member's place in flight lasts as long as its stream.
        let result = tried.result.map(|s| match tried.busy {
            Some(busy) => s.holding(Box::new(busy)),
            None => s,
        });
        let Some(mut observed) = observed else {
            return CallOutcome {
                result,
                attempts: tried.attempts,
                sent_body: tried.sent_body,
                member: label,
            };
        };
        let call = self.served(&mut observed, handle, member, request);
        let sent = Sent {
            body: tried.sent_body.clone(),
            ..Sent::default()
        };
        let result = match result {
            Ok(stream) => {
                let recorded = tried.attempts.clone();
                // Under a run budget, the stream's running cost is held and checked, at
                // the price of the member that serves.
                let stream = match observed.stream_guard(&call.request) {
                    Some(guard) => stream.guarded(guard),
                    None => stream,
                };
                Ok(stream.on_end(Box::new(move |reply, end, first_byte| {
                    let seen = Outcome::of_stream(reply, end);
                    observed.end(call, Some(sent), seen, first_byte, &recorded)
                })))
            }
            Err(e) => {
                observed
                    .end(
                        call,
                        Some(sent),
                        Outcome::Failed(&e, None),
                        None,
                        &tried.attempts,
                    )
                    .await;
                Err(e)
            }
        };
        CallOutcome {
            result,
            attempts: tried.attempts,
            sent_body: tried.sent_body,
            member: label,
        }
    }

    /// [`Llm::embed_detailed`] through the route: one record, every member's attempts,
    /// the cost at the price of the member that served.
    pub(crate) async fn embed(
        &self,
        handle: &Llm,
        request: EmbedRequest,
        cache_key: Option<String>,
    ) -> CallOutcome<Embeddings> {
        let mut observed = match Observed::begin(&handle.observer(), handle.model(), false) {
            Ok(o) => o,
            Err(e) => return not_sent(e),
        };
        if let Some(o) = &mut observed {
            o.enter_cache(cache_key);
        }
        // What the member last tried sent, for the record.
        let last = std::sync::Mutex::new(None);
        let tried = self
            .run(handle, None, |i| {
                let (last, request) = (&last, request.clone());
                async move {
                    let (outcome, sent) = self.members[i].plain_embed(request).await;
                    *last.lock().unwrap_or_else(|p| p.into_inner()) = Some(sent);
                    outcome
                }
            })
            .await;
        let member = tried.member.map(|i| &self.members[i]);
        let outcome = CallOutcome {
            result: tried.result,
            attempts: tried.attempts,
            sent_body: tried.sent_body,
            member: member.map(|m| m.label().to_string()),
        };
        let Some(mut observed) = observed else {
            return outcome;
        };
        if let Some(m) = member {
            observed.served_by(&m.observer(), m.model(), self.name());
        }
        let sent = last
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .unwrap_or_else(|| crate::embed::EmbedSent {
                call: crate::embed::EmbedCall {
                    model: handle.model().to_string(),
                    request,
                    role: handle.role().map(Arc::from),
                    notes: Default::default(),
                },
                shape: switchyard_wire::embed::EmbedShape::Openai,
                sent: Sent::default(),
            });
        observed
            .end_embedding(
                sent.call,
                sent.shape,
                sent.sent,
                outcome.result.as_ref(),
                &outcome.attempts,
            )
            .await;
        outcome
    }

    /// The route's name.
    pub(crate) fn name(&self) -> &str {
        &self.router.route().name
    }

    /// Points the record at the member that served (or was tried last) and gives the
    /// call its record keeps.
    fn served(
        &self,
        observed: &mut Observed,
        handle: &Llm,
        member: Option<&Llm>,
        request: Request,
    ) -> Call {
        let route = &self.router.route().name;
        let model = match member {
            Some(m) => {
                observed.served_by(&m.observer(), m.model(), route);
                m.model().to_string()
            }
            None => handle.model().to_string(),
        };
        Call::new(model, request).with_role(handle.role().map(Arc::from))
    }
}

fn not_sent<T>(error: Error) -> CallOutcome<T> {
    CallOutcome {
        result: Err(error),
        attempts: Vec::new(),
        sent_body: None,
        member: None,
    }
}
