//! A client's model naming a route of two members or more (a route of one is its
//! reference, see `Upstreams::resolve`): the library's router plans the members, and each
//! is called as a plain reference would be — passed through when it speaks the client's
//! dialect, translated otherwise — until one answers. A member's failure goes back to the
//! route only while nothing reached the client (the meter's gate, see
//! `Meter::fall_back`): a stream cut after its first byte ends with the dialect's error
//! event and is recorded as cut, as on every path.
//!
//! The key's checks are made once for the call: the route's name against the key's
//! models, its rate limits, its place in flight, and a budget reservation for the most
//! expensive member that may serve.

use crate::call::upstream::Target;
use crate::call::{admit, bound, check_model, dispatch, enter, Inbound, Prepared};
use crate::errors::{ApiError, Category};
use crate::meter::{Gate, Meter};
use crate::state::State;
use axum::response::Response;
use std::sync::Arc;
use switchyard::record::AttemptRecord;
use switchyard::router::{Plan, Router};

/// Serves a call through `router`'s route.
pub(crate) async fn run(
    state: &Arc<State>,
    inbound: &Inbound,
    router: &Arc<Router>,
    call: Prepared<'_>,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let dialect = inbound.dialect;
    let route = router.route();
    if let Some(key) = &call.key {
        check_model(key, call.requested, &route.name)?;
    }
    let upstreams = &state.upstreams;
    let targets = route
        .members
        .iter()
        .map(|m| {
            let reference = upstreams
                .registry()
                .require_reference(&m.reference)
                .map_err(|e| ApiError::new(Category::NotFound, e.to_string()))?;
            let target = upstreams.target(&reference, dialect)?;
            Ok(match route.retry_each {
                true => target,
                // Straight to the next member at the first listed failure.
                false => crate::call::upstream::without_retries(&target),
            })
        })
        .collect::<Result<Vec<Arc<Target>>, ApiError>>()?;
    meter.draft().route = Some(route.name.clone());
    let first = &targets[0];
    let may_pass = !crate::call::translate::envelope::may_carry(call.bytes);
    meter.set_target(
        first,
        call.stream && !inbound.count_tokens,
        first.dialect == dialect && may_pass,
    );
    admit(state, call.key.as_deref()).await?;
    if inbound.count_tokens {
        meter.not_recorded();
        return crate::call::count_tokens::answer(
            first,
            call.raw,
            call.bytes,
            call.headers,
            dialect,
            meter,
        )
        .await;
    }
    // A route's entries are under its name: any member's reply to it serves.
    match crate::call::cache_hit::lookup(
        state,
        &route.name,
        dialect,
        call.bytes,
        call.stream,
        meter,
    )
    .await
    {
        crate::call::cache_hit::Lookup::Hit(response) => return Ok(response),
        crate::call::cache_hit::Lookup::Miss(Some(k)) => meter.set_cache_key(k),
        crate::call::cache_hit::Lookup::Miss(_) => {}
    }
    if let Some(key) = &call.key {
        enter(key, meter)?;
        if let Some(budget) = &key.budget {
            // The dearest member that may serve; a member without a price makes the
            // call's cost unknown.
            let bounds: Option<Vec<_>> = targets
                .iter()
                .map(|t| bound(t, dialect, call.raw, call.bytes.len()))
                .collect();
            let dearest = bounds.and_then(|b| b.into_iter().max_by(|x, y| x.usd.total_cmp(&y.usd)));
            meter.set_reservation(
                crate::account::budgets::hold(state, key, budget, &route.name, dearest).await?,
                dearest,
            );
        }
    }
    let order = plan(router, upstreams.sleeper().as_ref(), meter).await?;
    // The library's low estimate of a prompt's tokens: its JSON bytes ÷ 4.
    let estimate = call.bytes.len() as u64 / 4;
    let mut handed_back = None;
    let last = order.len().saturating_sub(1);
    for (k, i) in order.into_iter().enumerate() {
        let target = &targets[i];
        if let Some(window) = target.context_window.filter(|w| estimate > *w) {
            skipped(meter, target, estimate, window);
            continue;
        }
        let passthrough = target.dialect == dialect && may_pass;
        meter.set_target(target, call.stream, passthrough);
        let busy = router.enter(i);
        meter.set_gate(Some(Box::new(Gate {
            router: router.clone(),
            member: i,
            hand_back: k < last,
            failed: None,
        })));
        let answered = dispatch(state, target, passthrough, &call, dialect, meter).await;
        match meter.take_gate().and_then(|g| g.failed) {
            Some(e) => {
                tracing::warn!(
                    route = %route.name,
                    member = %target.reference,
                    kind = e.kind().as_str(),
                    "route {}: {} failed ({}); trying the next member: {e}",
                    route.name,
                    target.reference,
                    e.kind()
                );
                handed_back = Some(e);
            }
            // A stream stays in flight on its member until its body is done with.
            None if call.stream => return answered.map(|r| holding(r, busy)),
            None => return answered,
        }
    }
    // The members left were all too small for the prompt: the last failure handed back,
    // else the window refusal, is the answer.
    let error = match handed_back {
        Some(e) => {
            meter.draft().error = Some(switchyard::record::ErrorRecord::new(&e));
            meter.outcome(0, Some(e.kind().as_str().to_string()));
            ApiError::from_upstream(&e)
        }
        None => ApiError::new(
            Category::ContextLength,
            format!(
                "the prompt (about {estimate} tokens) is larger than the context window of every member of route `{}`",
                route.name
            ),
        ),
    };
    Err(error)
}

/// The members to try, after waiting once for a cooling member when every one is
/// cooling and the first is back within the route's `max_wait`.
pub(crate) async fn plan(
    router: &Router,
    sleeper: &dyn switchyard::Sleeper,
    meter: &mut Meter,
) -> Result<Vec<usize>, ApiError> {
    let mut waited = false;
    loop {
        match router.plan() {
            Plan::Try(order) => return Ok(order),
            Plan::Wait { member, .. } if waited => return Ok(vec![member]),
            Plan::Wait { member, wait } => {
                waited = true;
                sleeper.sleep(wait).await;
                router.clear(member);
            }
            Plan::Unavailable(e) => {
                meter.draft().error = Some(switchyard::record::ErrorRecord::new(&e));
                meter.outcome(0, Some(e.kind().as_str().to_string()));
                return Err(ApiError::from_upstream(&e));
            }
        }
    }
}

/// `response` keeping `busy` until its body is dropped (for `least_busy`).
fn holding(response: Response, busy: switchyard::router::Busy) -> Response {
    use futures::StreamExt;
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().map(move |chunk| {
        let _held = &busy;
        chunk
    });
    Response::from_parts(parts, axum::body::Body::from_stream(body))
}

/// A member skipped for its window, in the record's attempts.
fn skipped(meter: &mut Meter, target: &Target, estimate: u64, window: u64) {
    let attempts = &mut meter.draft().attempts;
    attempts.push(AttemptRecord {
        number: attempts.len() as u32 + 1,
        wait_before_ms: 0.0,
        started_at: switchyard::record::timestamp(std::time::SystemTime::now()),
        duration_ms: 0.0,
        status: None,
        error_kind: Some("ContextLengthExceeded".into()),
        error: Some(format!(
            "skipped: the prompt (about {estimate} tokens) is larger than {}'s context window ({window} tokens)",
            target.reference
        )),
        reference: Some(target.reference.clone()),
    });
}
