//! One call's life through the gateway, whatever door it came through, in this order:
//!
//! 1. [`handle`]: the meter starts ([`crate::meter`]); whatever ends the call, it is
//!    answered in the client's dialect and recorded.
//! 2. Admission ([`admission`]), once for every kind of call: the client's key, the body
//!    read under its bounds ([`request_body`]), the model it names resolved to its final
//!    id and checked against the key, the key's rates and the shared store, then — unless
//!    a token count ([`Case::answer_aside`]) or the cache ([`cache_hit`]) answers — the
//!    key's place in flight and its budget hold.
//! 3. Failover ([`failover`]): the members of what the model names (a plain reference is
//!    a route of one), tried in turn until one answers.
//! 4. The case ([`case`]): a model call ([`model_call`]) passed through in the client's
//!    dialect ([`passthrough`]) or translated ([`translate`]), or an embedding
//!    ([`embeddings`]); its reply goes out through [`respond`] or a relayed stream, and
//!    its failure is answered by [`failure`].

pub(crate) mod admission;
pub(crate) mod cache_hit;
pub(crate) mod case;
pub(crate) mod client_model;
pub(crate) mod count_tokens;
pub(crate) mod embeddings;
pub(crate) mod failover;
pub(crate) mod failure;
pub(crate) mod model_call;
pub(crate) mod passthrough;
pub(crate) mod request_body;
pub(crate) mod respond;
pub(crate) mod top_level;
pub(crate) mod translate;
pub(crate) mod upstream;

use crate::account::keys::Key;
use crate::call::case::Case;
use crate::call::embeddings::{Client, Embedding};
use crate::call::failover::Members;
use crate::call::model_call::ModelCall;
use crate::conversations::prior::Prior;
use crate::errors::{ApiError, Category};
use crate::meter::Meter;
use crate::raw::RawBody;
use crate::shared::Shared;
use axum::extract::Request;
use axum::response::Response;
use std::sync::Arc;
use std::time::Instant;
use switchyard::Dialect;

/// What an endpoint knows about a call before reading its body.
#[derive(Debug, Clone)]
pub(crate) enum Inbound {
    /// A model call.
    Model {
        /// The client's dialect.
        dialect: Dialect,
        /// For Gemini, the model and the streaming choice come from the URL.
        gemini: Option<(String, bool)>,
        /// `POST /v1/messages/count_tokens` or Gemini's `:countTokens`.
        count_tokens: bool,
    },
    /// An embeddings call.
    Embedding(Client),
}

impl Inbound {
    /// A model call in `dialect` whose model and stream flag are in the body.
    pub(crate) fn body(dialect: Dialect) -> Self {
        Inbound::Model {
            dialect,
            gemini: None,
            count_tokens: false,
        }
    }

    /// The dialect whose shapes the client reads, errors included.
    fn dialect(&self) -> Dialect {
        match self {
            Inbound::Model { dialect, .. } => *dialect,
            Inbound::Embedding(client) => client.dialect(),
        }
    }
}

/// Serves one call; every failure is answered in the client's dialect.
pub(crate) async fn handle(shared: Arc<Shared>, inbound: Inbound, request: Request) -> Response {
    let dialect = inbound.dialect();
    let mut meter = Meter::new(shared.books.clone(), dialect, Instant::now());
    meter.set_headers(request.headers());
    match read(&shared, &inbound, request, &mut meter).await {
        Ok(response) => response,
        Err(e) => refused(e, dialect, &mut meter),
    }
}

/// A call the gateway refused or could not serve: recorded with its error (unless the
/// meter already holds the provider's), answered in the client's dialect.
fn refused(e: ApiError, dialect: Dialect, meter: &mut Meter) -> Response {
    meter.outcome(e.status.as_u16(), Some(format!("gateway:{:?}", e.category)));
    let draft = meter.draft();
    if draft.error.is_none() {
        draft.error = Some(switchyard::record::ErrorRecord {
            kind: format!("gateway:{:?}", e.category),
            message: e.message.clone(),
            provider: None,
            fields: serde_json::Map::new(),
        });
    }
    meter.complete();
    let (status, headers, body) = e.parts_for(dialect);
    respond::whole(status, headers, body, meter)
}

/// Who is calling, and the body read under its bounds, decoded as far as the case needs.
async fn read(
    shared: &Arc<Shared>,
    inbound: &Inbound,
    request: Request,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let (parts, body) = request.into_parts();
    let key = admission::authenticate(&shared.keys, &parts, meter)?;
    let bytes =
        request_body::read(body, &parts.headers, &shared.body, &shared.books.metrics).await?;
    meter.set_client_body(&bytes);
    match inbound {
        Inbound::Model {
            dialect,
            gemini,
            count_tokens,
        } => {
            let raw = RawBody::parse(&bytes).map_err(|m| ApiError::new(Category::BadRequest, m))?;
            let (requested, stream) = match gemini {
                Some((model, stream)) => (model.clone(), *stream),
                None => {
                    let model = raw.string("model").ok_or_else(|| {
                        ApiError::new(
                            Category::BadRequest,
                            "the request has no `model` (a string): name a model from the gateway's models table or a reference `<backend>/<model id>`",
                        )
                    })?;
                    (model, raw.bool("stream").unwrap_or(false))
                }
            };
            // What the request names of kept state, read once for every member tried.
            let prior = match count_tokens {
                true => Prior::None,
                false => {
                    let owner = Key::owner(key.as_deref());
                    let kept = shared.books.conversations.as_deref();
                    let max = shared.body.max_bytes;
                    Prior::load(kept, owner, *dialect, &raw, &bytes, max).await?
                }
            };
            let case = ModelCall {
                dialect: *dialect,
                raw: &raw,
                bytes: &bytes,
                headers: &parts.headers,
                stream,
                count_tokens: *count_tokens,
                state_key: &shared.state_key,
                may_pass: !translate::envelope::may_carry(&bytes),
                prior: &prior,
            };
            serve(shared, key, &requested, &case, meter).await
        }
        Inbound::Embedding(client) => {
            let (requested, request) = client.decode(&bytes)?;
            let case = Embedding {
                client,
                bytes: &bytes,
                request: &request,
                requested: &requested,
            };
            // Boxed: an embedding's state is kept out of every model call's future.
            Box::pin(serve(shared, key, &requested, &case, meter)).await
        }
    }
}

/// Admission, then failover over the members of what `requested` names.
async fn serve<C: Case>(
    shared: &Shared,
    key: Option<Arc<Key>>,
    requested: &str,
    case: &C,
    meter: &mut Meter,
) -> Result<Response, ApiError> {
    let pg = shared.books.pg.as_deref();
    meter.set_requested(requested);
    let named = admission::resolve(&shared.upstreams, requested)?;
    let name = named.name();
    if let Some(key) = &key {
        admission::check_model(key, requested, &name)?;
    }
    let members = Members::of(named, name, &shared.upstreams, case)?;
    if members.router.is_some() {
        meter.draft().route = Some(members.name.clone());
    }
    case.aim(members.first(), meter);
    admission::admit(pg, key.as_deref()).await?;
    let name = &members.name;
    if let Some(answer) = case.answer_aside(members.first(), meter).await {
        return answer;
    }
    // A route's entries are under its name: any member's reply to it serves.
    if let Some(hit) = case
        .cached(&shared.books, &shared.state_key, name, meter)
        .await
    {
        return Ok(hit);
    }
    if let Some(key) = &key {
        let bound = || admission::dearest(members.targets().map(|t| case.bound(t)));
        admission::enter(pg, key, name, bound, meter).await?;
    }
    failover::serve(&members, case, shared.upstreams.sleeper().as_ref(), meter).await
}
