//! The members a call is tried on, in order, until one answers: a plain reference is a
//! route of one. A member's failure goes to the next member only when the route lists
//! its kind (`on:`), the member is not the last, and nothing reached the client: a stream
//! cut after its first byte ends with the dialect's error event and is recorded as cut,
//! as on every path. A plain loop over `Result`s; the meter only records.

use crate::call::admission::Named;
use crate::call::case::Case;
use crate::call::failure::{Failure, UpstreamFailure};
use crate::call::upstream::Upstreams;
use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use axum::response::Response;
use std::sync::Arc;
use switchyard::record::AttemptRecord;
use switchyard::router::{Plan, Router};

/// The targets a call may be served by, under the name it is known by.
pub(crate) struct Members<T> {
    /// The route's name, or the reference.
    pub name: String,
    /// The route's router (`None`: one reference).
    pub router: Option<Arc<Router>>,
    /// The first member's target.
    first: Arc<T>,
    /// The other members' targets, in the route's order (none for a reference: a plain
    /// call allocates no list).
    rest: Vec<Arc<T>>,
}

impl<T> Members<T> {
    /// The members of what the model names, their targets built for `case`.
    pub(crate) fn of<C: Case<Target = T>>(
        named: Named,
        name: String,
        upstreams: &Upstreams,
        case: &C,
    ) -> Result<Self, ApiError> {
        match named {
            Named::Reference(reference) => Ok(Members {
                name,
                router: None,
                first: case.target(upstreams, &reference, true)?,
                rest: Vec::new(),
            }),
            Named::Route(router) => {
                let route = router.route();
                let mut targets = route
                    .members
                    .iter()
                    .map(|m| {
                        let reference = upstreams
                            .registry()
                            .require_reference(&m.reference)
                            .map_err(|e| ApiError::new(Category::NotFound, e.to_string()))?;
                        case.target(upstreams, &reference, route.retry_each)
                    })
                    .collect::<Result<Vec<_>, ApiError>>()?;
                if targets.is_empty() {
                    return Err(ApiError::new(
                        Category::Internal,
                        format!("route `{name}` has no member"),
                    ));
                }
                let first = targets.remove(0);
                Ok(Members {
                    name,
                    router: Some(router),
                    first,
                    rest: targets,
                })
            }
        }
    }

    /// The member the call is first aimed at.
    pub(crate) fn first(&self) -> &Arc<T> {
        &self.first
    }

    /// Member `i`'s target, in the route's order.
    fn get(&self, i: usize) -> Option<&Arc<T>> {
        match i {
            0 => Some(&self.first),
            _ => self.rest.get(i - 1),
        }
    }

    /// Every member's target.
    pub(crate) fn targets(&self) -> impl Iterator<Item = &Arc<T>> {
        std::iter::once(&self.first).chain(&self.rest)
    }
}

/// Serves the call on its members in turn.
pub(crate) async fn serve<C: Case>(
    members: &Members<C::Target>,
    case: &C,
    sleeper: &dyn switchyard::Sleeper,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let order = match &members.router {
        Some(router) => plan(router, sleeper, meter).await?,
        None => vec![0],
    };
    let last = order.len().saturating_sub(1);
    let mut handed_back: Option<UpstreamFailure> = None;
    let mut too_large = None;
    for (k, i) in order.into_iter().enumerate() {
        let Some(target) = members.get(i) else {
            continue;
        };
        if members.router.is_some() {
            if let Some((estimate, window)) = case.too_large_for(target) {
                skipped(meter, C::reference_of(target), estimate, window);
                too_large = Some(estimate);
                continue;
            }
        }
        // The pipeline aimed the call at the first member before admission.
        if k > 0 || i > 0 {
            case.aim(target, meter);
        }
        let busy = members.router.as_ref().map(|r| r.enter(i));
        let failed = match case.on(target, meter).await {
            // A stream stays in flight on its member until its body is done with.
            Ok(response) => {
                return Ok(match busy {
                    Some(busy) if case.streams() => holding(response, busy),
                    _ => response,
                })
            }
            Err(Failure::Refused(e)) => return Err(e),
            Err(Failure::Upstream(failed)) => failed,
        };
        // A listed failure cools the member down, the last one's too (it is answered).
        let listed = members
            .router
            .as_ref()
            .is_some_and(|r| r.failed(i, &failed.error));
        if !listed || k == last {
            return failed.answer(meter);
        }
        let e = &failed.error;
        tracing::warn!(
            route = %members.name,
            member = %C::reference_of(target),
            kind = e.kind().as_str(),
            "route {}: {} failed ({}); trying the next member: {e}",
            members.name,
            C::reference_of(target),
            e.kind()
        );
        handed_back = Some(failed);
    }
    // The members left were all too small for the prompt: the last failure handed back,
    // else the window refusal, is the answer.
    match (handed_back, too_large) {
        (Some(failed), _) => failed.answer(meter),
        (None, Some(estimate)) => Err(ApiError::new(
            Category::ContextLength,
            format!(
                "the prompt (about {estimate} tokens) is larger than the context window of every member of route `{}`",
                members.name
            ),
        )),
        (None, None) => Err(ApiError::new(
            Category::Internal,
            format!("route `{}` has no member to try", members.name),
        )),
    }
}

/// The members to try, after waiting once for a cooling member when every one is
/// cooling and the first is back within the route's `max_wait`.
async fn plan(
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
fn skipped(meter: &mut Meter, reference: &str, estimate: u64, window: u64) {
    let attempts = &mut meter.draft().attempts;
    attempts.push(AttemptRecord {
        number: attempts.len() as u32 + 1,
        wait_before_ms: 0.0,
        started_at: switchyard::record::timestamp(std::time::SystemTime::now()),
        duration_ms: 0.0,
        status: None,
        error_kind: Some("ContextLengthExceeded".into()),
        error: Some(format!(
            "skipped: the prompt (about {estimate} tokens) is larger than {reference}'s context window ({window} tokens)"
        )),
        reference: Some(reference.to_string()),
    });
}
