//! Serving one model call in any dialect: pick the behaviour from the model name (or a
//! scenario step), decide whether its fault applies to this attempt, and answer with an
//! error body or a reply encoded by the dialect's codec.

use crate::answer::{self, ReplyIds};
use crate::behaviour::{self, Behaviour, Fault, FaultSpec};
use crate::body::{self, Ending, StreamPlan};
use crate::faults::{self, ErrorResponse};
use crate::rules;
use crate::scenario::{Per, ScriptedReply};
use crate::state::{self, Shared};
use crate::stateful;
use axum::body::Body;
use axum::http::{header, HeaderName, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use serde_json::Value;
use switchyard_wire::{codec, DecodedRequest, Dialect, ServerContext};

/// What the route knows before the body is read.
pub(crate) struct CallRoute {
    /// The dialect of the endpoint.
    pub dialect: Dialect,
    /// Gemini: the model from the URL and whether the method streams.
    pub url_model: Option<(String, bool)>,
    /// Gemini stream without `alt=sse` (a JSON array).
    pub json_array: bool,
    /// The credential the request carried (`Authorization`'s bearer value, `x-api-key`,
    /// `x-goog-api-key` or the `key` query parameter), for the `echo-key` fault.
    pub credential: Option<String>,
}

/// The credential of a request: what `echo-key` repeats.
pub(crate) fn credential(headers: &axum::http::HeaderMap, query: Option<&str>) -> Option<String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    header("authorization")
        .map(|v| match v.split_once(' ') {
            Some((scheme, rest)) if scheme.eq_ignore_ascii_case("bearer") => rest.to_string(),
            _ => v,
        })
        .or_else(|| header("x-api-key"))
        .or_else(|| header("x-goog-api-key"))
        // Keys are plain tokens: the parameter's value is repeated as it came.
        .or_else(|| {
            query?
                .split('&')
                .find_map(|p| p.strip_prefix("key="))
                .map(str::to_string)
        })
}

/// Ids of this response.
struct Ids {
    request_id: String,
    response_id: String,
}

fn ids_for(dialect: Dialect, n: u64) -> Ids {
    let response_id = match dialect {
        Dialect::Chat => format!("chatcmpl-mock-{n}"),
        Dialect::Responses => format!("resp_mock_{n}"),
        Dialect::Messages => format!("msg_mock_{n}"),
        Dialect::Gemini => format!("mock-{n}"),
    };
    Ids {
        request_id: format!("req_mock_{n}"),
        response_id,
    }
}

/// Serves one call.
pub(crate) async fn serve_call(shared: &Shared, route: CallRoute, body: Bytes) -> Response {
    let dialect = route.dialect;
    let ids = ids_for(dialect, shared.next_number());
    let reject = |status: u16, message: &str| {
        error_response(
            dialect,
            &ids.request_id,
            faults::client_error(dialect, status, message, &ids.request_id),
        )
    };

    let (model, stream) = match &route.url_model {
        Some((model, stream)) => (model.clone(), *stream),
        None => match model_and_stream(&body) {
            Ok(found) => found,
            Err(message) => return reject(400, &message),
        },
    };
    let name = behaviour::strip_prefix(&model).to_string();
    let decoded = codec(dialect).decode_request(&body);
    let (prompt, conversation) = match &decoded {
        Ok(d) => (
            state::prompt_digest(&d.request),
            state::conversation_digest(&d.request),
        ),
        Err(_) => {
            let d = state::digest_bytes(&body);
            (d, d)
        }
    };

    // The behaviour: a scenario step, or the model-name grammar.
    let (behaviour, script, counter_name) = match shared.config.scenarios.get(&name) {
        Some(scenario) => {
            let key = match scenario.per {
                Per::Conversation => conversation,
                Per::Prompt => prompt,
                Per::Model => 0,
            };
            let n = shared.bump(&format!("{name}\0scenario"), key);
            let index = n.min(scenario.steps.len() as u64 - 1);
            let step = scenario.step(n);
            (
                step.behaviour.clone(),
                step.reply.clone(),
                format!("{name}\0step{index}\0{dialect}"),
            )
        }
        None => match behaviour::parse(&name) {
            Ok(b) => (b, None, format!("{name}\0{dialect}")),
            Err(e) => {
                return reject(404, &format!("unknown mock model `{model}`: {e}"));
            }
        },
    };

    let fault = behaviour.fault.clone().filter(|f| match f.times {
        None => true,
        Some(n) => shared.bump(&counter_name, prompt) < n,
    });

    if !behaviour.first_byte_delay.is_zero() {
        tokio::time::sleep(behaviour.first_byte_delay).await;
    }

    let mut behaviour = behaviour;
    // A Gemini 3 model by its name, whether a grammar label or a scenario's name.
    behaviour.gemini3 |= name.contains("gemini-3");
    let call = Call {
        shared,
        body: &body,
        credential: route.credential.as_deref(),
        dialect,
        model: &model,
        stream: stream && !behaviour.ignore_stream,
        json_array: route.json_array,
        ids: &ids,
        behaviour: &behaviour,
        script: script.as_ref(),
        digest: prompt,
    };
    match fault {
        Some(f) => call.fault(&f, decoded).await,
        None => call.success(decoded, Ending::Normal, |_| {}).await,
    }
}

/// Reads `model` and `stream` from a JSON body.
fn model_and_stream(body: &[u8]) -> Result<(String, bool), String> {
    let value: Value =
        serde_json::from_slice(body).map_err(|e| format!("the request body is not JSON: {e}"))?;
    let model = value
        .get("model")
        .and_then(Value::as_str)
        .ok_or("the request body has no `model` string; name a mock behaviour such as \"echo\"")?;
    let stream = value
        .get("stream")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    Ok((model.to_string(), stream))
}

struct Call<'a> {
    shared: &'a Shared,
    body: &'a [u8],
    credential: Option<&'a str>,
    dialect: Dialect,
    model: &'a str,
    stream: bool,
    json_array: bool,
    ids: &'a Ids,
    behaviour: &'a Behaviour,
    script: Option<&'a ScriptedReply>,
    digest: u64,
}

impl Call<'_> {
    fn context(&self) -> ServerContext {
        ServerContext {
            created: self.shared.config.created,
            fallback_id: self.ids.response_id.clone(),
        }
    }

    fn error(&self, e: ErrorResponse) -> Response {
        error_response(self.dialect, &self.ids.request_id, e)
    }

    async fn fault(
        &self,
        spec: &FaultSpec,
        decoded: Result<DecodedRequest, switchyard_wire::DecodeError>,
    ) -> Response {
        let (d, rid) = (self.dialect, self.ids.request_id.as_str());
        match spec.fault {
            Fault::Status(status) => {
                self.error(faults::status_error(d, status, self.model, spec.retry, rid))
            }
            Fault::Quota(kind) => self.error(faults::quota_error(d, kind, self.model, rid)),
            Fault::ContextOverflow(kind) => self.error(faults::context_error(d, kind, rid)),
            Fault::NullBody { blank } => {
                let body: &'static [u8] = if blank { b"\n\n\n\nnull" } else { b"null" };
                if self.stream {
                    self.raw(200, "text/event-stream", Body::from("data: null\n\n"))
                } else {
                    self.raw(200, "application/json", Body::from(body))
                }
            }
            Fault::NotJson => {
                if self.stream {
                    let text = "data: this is not json\n\n";
                    self.raw(200, "text/event-stream", Body::from(text))
                } else {
                    let html = "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center></body></html>\n";
                    self.raw(200, "application/json", Body::from(html))
                }
            }
            Fault::NoText => {
                self.success(decoded, Ending::Normal, |r| r.content.clear())
                    .await
            }
            Fault::NoUsage => {
                self.success(decoded, Ending::Normal, |r| r.usage = None)
                    .await
            }
            Fault::CutStream { reset } => {
                self.success(decoded, Ending::Cut { reset }, |_| {}).await
            }
            Fault::ErrorMidStream(status) => {
                let status = status.unwrap_or_else(|| faults::default_stream_error_status(d));
                if self.stream {
                    self.success(decoded, Ending::Error(status), |_| {}).await
                } else {
                    // A non-streamed call gets the error object in a 200 body.
                    let body = faults::status_body(d, status, self.model, spec.retry, rid);
                    self.raw(200, "application/json", Body::from(body.to_string()))
                }
            }
            Fault::EchoKey(status) => self.echo_key(status, decoded).await,
            Fault::Hang => {
                if self.stream {
                    self.success(decoded, Ending::Hang, |_| {}).await
                } else {
                    body::wait_for_shutdown(self.shared.shutdown.clone()).await;
                    self.raw(
                        503,
                        "text/plain",
                        Body::from("switchyard-mock: shutting down"),
                    )
                }
            }
        }
    }

    /// `echo-key`: the credential in the headers (`www-authenticate`, and the request id
    /// a client sees relayed), and in an error's message or, with 200, the reply's text
    /// (one delta, so a stream carries it whole in one event).
    async fn echo_key(
        &self,
        status: Option<u16>,
        decoded: Result<DecodedRequest, switchyard_wire::DecodeError>,
    ) -> Response {
        let key = self.credential.unwrap_or("(no key was sent)");
        let mut response = match status.unwrap_or(401) {
            200 => {
                let behaviour = Behaviour {
                    content: behaviour::Content::Say(format!("The key you sent is {key}.")),
                    chunk_chars: 0,
                    ..self.behaviour.clone()
                };
                let call = Call {
                    behaviour: &behaviour,
                    ..*self
                };
                call.success(decoded, Ending::Normal, |_| {}).await
            }
            status => {
                // The status's own error (its type, code and headers), its message
                // quoting the key.
                let mut e = faults::status_error(
                    self.dialect,
                    status,
                    self.model,
                    None,
                    &self.ids.request_id,
                );
                let message = format!(
                    "Incorrect API key provided: {key}. You can find your API key in your account settings."
                );
                if let Ok(mut body) = serde_json::from_slice::<Value>(&e.body) {
                    if let Some(m) = body.pointer_mut("/error/message") {
                        *m = Value::String(message);
                    }
                    e.body = body.to_string().into_bytes();
                }
                self.error(e)
            }
        };
        set(
            &mut response,
            "www-authenticate",
            &format!("Bearer realm=\"switchyard-mock\", error=\"invalid_token\", key=\"{key}\""),
        );
        set_request_id(
            &mut response,
            self.dialect,
            &format!("{} {key}", self.ids.request_id),
        );
        response
    }

    async fn success(
        &self,
        decoded: Result<DecodedRequest, switchyard_wire::DecodeError>,
        ending: Ending,
        alter: impl FnOnce(&mut switchyard_wire::Reply),
    ) -> Response {
        if self.shared.config.enforce_history && !self.behaviour.lenient {
            if let Some(refusal) = rules::check(
                self.dialect,
                self.body,
                self.behaviour,
                &self.ids.request_id,
            ) {
                return self.error(refusal);
            }
        }
        let decoded = match decoded {
            Ok(d) => d,
            Err(e) => {
                let message = format!(
                    "switchyard-mock could not read the {} request: {e}",
                    self.dialect
                );
                return self.error(faults::client_error(
                    self.dialect,
                    400,
                    &message,
                    &self.ids.request_id,
                ));
            }
        };
        let ids = ReplyIds {
            dialect: self.dialect,
            model: self.model.to_string(),
            response_id: self.ids.response_id.clone(),
            digest: self.digest,
        };
        let mut reply = answer::build_reply(self.behaviour, self.script, &decoded.request, &ids);
        alter(&mut reply);
        let context = self.context();
        let mut response = self.reply_response(&reply, &context, ending).await;
        // A reply the client receives whole is what a stateful route stores.
        if ending == Ending::Normal {
            response
                .extensions_mut()
                .insert(stateful::BuiltReply(std::sync::Arc::new(reply)));
        }
        response
    }

    /// The response carrying `reply`, streamed or whole, ending as `ending` says.
    async fn reply_response(
        &self,
        reply: &switchyard_wire::Reply,
        context: &ServerContext,
        ending: Ending,
    ) -> Response {
        if self.stream {
            let plan = StreamPlan {
                dialect: self.dialect,
                reply,
                context,
                chunk_chars: self.behaviour.chunk_chars,
                delay: self.behaviour.delay,
                ending,
                model: self.model,
                json_array: self.json_array,
            };
            let mut chunks = body::stream_chunks(&plan);
            if reply.usage.is_none() && !self.json_array {
                chunks = body::strip_usage_sse(chunks);
            }
            let content_type = if self.json_array {
                "application/json"
            } else {
                "text/event-stream"
            };
            let body = body::chunked_body(chunks, ending, self.shared.shutdown.clone());
            self.raw(200, content_type, body)
        } else {
            // A non-streamed reply takes as long as streaming it would have.
            let deltas = switchyard_wire::reply_events(reply, self.behaviour.chunk_chars)
                .iter()
                .filter(|e| {
                    matches!(
                        e,
                        switchyard_wire::Event::TextDelta { .. }
                            | switchyard_wire::Event::ThinkingDelta { .. }
                            | switchyard_wire::Event::ToolCallDelta { .. }
                    )
                })
                .count();
            let generation = self.behaviour.delay * u32::try_from(deltas).unwrap_or(u32::MAX);
            if !generation.is_zero() {
                tokio::time::sleep(generation).await;
            }
            let mut full = codec(self.dialect).encode_reply(reply, context);
            if reply.usage.is_none() {
                full = body::strip_usage_json(&full).unwrap_or(full);
            }
            match ending {
                Ending::Cut { reset } => {
                    let body = body::chunked_body(
                        body::cut_body(&full),
                        Ending::Cut { reset },
                        self.shared.shutdown.clone(),
                    );
                    self.raw(200, "application/json", body)
                }
                _ => self.raw(200, "application/json", Body::from(full)),
            }
        }
    }

    fn raw(&self, status: u16, content_type: &str, body: Body) -> Response {
        let mut response = Response::new(body);
        *response.status_mut() = status_code(status);
        set(&mut response, header::CONTENT_TYPE.as_str(), content_type);
        if content_type == "text/event-stream" {
            set(&mut response, "cache-control", "no-cache");
        }
        set_request_id(&mut response, self.dialect, &self.ids.request_id);
        response
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn set(response: &mut Response, name: &str, value: &str) {
    if let (Ok(n), Ok(v)) = (
        HeaderName::from_bytes(name.as_bytes()),
        HeaderValue::from_str(value),
    ) {
        response.headers_mut().insert(n, v);
    }
}

fn set_request_id(response: &mut Response, dialect: Dialect, request_id: &str) {
    match dialect {
        Dialect::Chat | Dialect::Responses => set(response, "x-request-id", request_id),
        Dialect::Messages => set(response, "request-id", request_id),
        Dialect::Gemini => {}
    }
}

/// An error body with its status and headers.
pub(crate) fn error_response(dialect: Dialect, request_id: &str, e: ErrorResponse) -> Response {
    let mut response = Response::new(Body::from(e.body));
    *response.status_mut() = status_code(e.status);
    set(&mut response, "content-type", "application/json");
    for (k, v) in &e.headers {
        set(&mut response, k, v);
    }
    set_request_id(&mut response, dialect, request_id);
    response
}
