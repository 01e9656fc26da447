//! A call's Python arguments → the library's canonical `Request`: a prompt string or a
//! list of messages (canonical parts, OpenAI-style `{"role", "content"}` dicts, tool
//! results, or a previous `Reply`), tools, and the per-call options.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};
use serde_json::{json, Value};
use switchyard::wire::request::{Reasoning, Tool, ToolChoice};
use switchyard::{Message, Request, Role};

use crate::json::{to_json, type_name};
use crate::reply::Reply;

/// The options every call method takes, by name.
const OPTIONS: &[&str] = &[
    "system",
    "tools",
    "tool_choice",
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "reasoning_effort",
    "thinking_budget",
];

/// The request for `prompt` with `options` (the call's keyword arguments).
pub(crate) fn build(
    prompt: &Bound<'_, PyAny>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Request> {
    let mut request = Request {
        messages: messages(prompt)?,
        ..Request::default()
    };
    let Some(options) = options else {
        return Ok(request);
    };
    let mut reasoning = Reasoning::default();
    for (key, value) in options.iter() {
        let key: String = key.extract()?;
        if value.is_none() {
            continue;
        }
        match key.as_str() {
            "system" => {
                let text: String = extract(&value, "system", "a str")?;
                request
                    .messages
                    .insert(0, Message::text(Role::System, text));
            }
            "tools" => request.tools = tools(&value)?,
            "tool_choice" => request.tool_choice = Some(tool_choice(&value)?),
            "max_tokens" => request.max_tokens = Some(extract(&value, "max_tokens", "an int ≥ 1")?),
            "temperature" => request.temperature = Some(extract(&value, "temperature", "a float")?),
            "top_p" => request.top_p = Some(extract(&value, "top_p", "a float")?),
            "stop" => {
                request.stop = if value.is_instance_of::<PyString>() {
                    vec![value.extract()?]
                } else {
                    extract(&value, "stop", "a str or a list of str")?
                }
            }
            "reasoning_effort" => {
                reasoning.effort = Some(extract(&value, "reasoning_effort", "a str")?)
            }
            "thinking_budget" => {
                reasoning.budget_tokens = Some(extract(&value, "thinking_budget", "an int")?)
            }
            other => return Err(unknown_option(other)),
        }
    }
    if reasoning != Reasoning::default() {
        request.reasoning = Some(reasoning);
    }
    Ok(request)
}

fn unknown_option(name: &str) -> PyErr {
    let hint = switchyard::internal::suggest::nearest(name, OPTIONS.iter().copied())
        .map(|n| format!(" (did you mean `{n}`?)"))
        .unwrap_or_default();
    PyTypeError::new_err(format!(
        "unexpected keyword argument `{name}`{hint}; accepted: {}",
        OPTIONS.join(", ")
    ))
}

fn extract<'py, T: FromPyObject<'py>>(
    value: &Bound<'py, PyAny>,
    name: &str,
    expected: &str,
) -> PyResult<T> {
    value.extract().map_err(|_| {
        PyTypeError::new_err(format!(
            "`{name}` must be {expected}, not {} ({value})",
            type_name(value)
        ))
    })
}

/// A prompt string, or a list of messages.
fn messages(prompt: &Bound<'_, PyAny>) -> PyResult<Vec<Message>> {
    if let Ok(text) = prompt.downcast::<PyString>() {
        return Ok(vec![Message::text(Role::User, &*text.to_cow()?)]);
    }
    if prompt.is_instance_of::<PyDict>() || !is_sequence(prompt) {
        return Err(PyTypeError::new_err(format!(
            "the prompt must be a str or a list of messages, not {}",
            type_name(prompt)
        )));
    }
    let mut out = Vec::new();
    for (i, item) in prompt.try_iter()?.enumerate() {
        let item = item?;
        out.push(message(&item, i)?);
    }
    if out.is_empty() {
        return Err(PyValueError::new_err("the list of messages is empty"));
    }
    Ok(out)
}

fn is_sequence(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<pyo3::types::PyList>() || obj.is_instance_of::<pyo3::types::PyTuple>()
}

/// One message: a `Reply` (the assistant's turn, its state kept), or a dict.
fn message(item: &Bound<'_, PyAny>, i: usize) -> PyResult<Message> {
    if let Ok(reply) = item.downcast::<Reply>() {
        return Ok(reply.get().message());
    }
    let what = format!("messages[{i}]");
    let Value::Object(mut map) = to_json(item, &what)? else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be a dict such as {{\"role\": \"user\", \"content\": \"hello\"}} or a Reply, not {}",
            type_name(item)
        )));
    };
    // OpenAI's tool-result message: {"role": "tool", "tool_call_id": …, "content": "…"}.
    if let Some(call_id) = map.remove("tool_call_id") {
        let content = map
            .remove("content")
            .unwrap_or(Value::String(String::new()));
        let content = parts(content);
        map.insert(
            "content".into(),
            json!([{"type": "tool_result", "call_id": call_id, "content": content}]),
        );
    }
    if let Some(content) = map.remove("content") {
        map.insert("content".into(), Value::Array(parts(content)));
    }
    serde_json::from_value(Value::Object(map)).map_err(|e| {
        PyValueError::new_err(format!(
            "{what}: {e} (a message is {{\"role\": \"system\" | \"user\" | \"assistant\" | \"tool\", \"content\": str or a list of parts}})"
        ))
    })
}

/// Content as a list of parts: a string is one text part; a list keeps its parts, a
/// bare string inside it being a text part too.
fn parts(content: Value) -> Vec<Value> {
    match content {
        Value::String(text) => vec![json!({"type": "text", "text": text})],
        Value::Array(items) => items
            .into_iter()
            .map(|p| match p {
                Value::String(text) => json!({"type": "text", "text": text}),
                other => other,
            })
            .collect(),
        other => vec![other],
    }
}

/// Tools: `{"name", "description", "parameters"}`, or OpenAI's
/// `{"type": "function", "function": {…}}`.
fn tools(value: &Bound<'_, PyAny>) -> PyResult<Vec<Tool>> {
    let Value::Array(items) = to_json(value, "tools")? else {
        return Err(PyTypeError::new_err("`tools` must be a list of dicts"));
    };
    items
        .into_iter()
        .enumerate()
        .map(|(i, tool)| {
            let tool = match tool {
                Value::Object(mut m) if m.contains_key("function") => {
                    m.remove("function").unwrap_or_default()
                }
                other => other,
            };
            serde_json::from_value(tool).map_err(|e| {
                PyValueError::new_err(format!(
                    "tools[{i}]: {e} (a tool is {{\"name\": str, \"description\": str, \"parameters\": a JSON schema}})"
                ))
            })
        })
        .collect()
}

fn tool_choice(value: &Bound<'_, PyAny>) -> PyResult<ToolChoice> {
    let text: String = extract(
        value,
        "tool_choice",
        "\"auto\", \"none\", \"required\" or a tool's name",
    )?;
    Ok(match text.as_str() {
        "auto" => ToolChoice::Auto,
        "none" => ToolChoice::None,
        "required" => ToolChoice::Required,
        _ => ToolChoice::Tool(text),
    })
}
