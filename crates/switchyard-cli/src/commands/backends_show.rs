//! `switchyard backends show <reference>`: one resolved reference, field by field with layers.

use super::CliEnv;
use serde_json::{json, Value};
use switchyard::env::EnvSource;
use switchyard::registry::{Backend, Config, Dialect, Resolved};
use switchyard::Reference;

use super::{table, to_json};
use crate::cli::ShowArgs;

/// The model of a backend shown without one (`backends show mock`).
const MODEL_LEFT_OPEN: &str = "{model}";

/// The URL and auth of one dialect: filled from the environment when its placeholders are
/// set, else the template and what it needs.
fn endpoint_text(b: &Backend, d: Dialect, model: &str, env: &dyn EnvSource) -> String {
    if model == MODEL_LEFT_OPEN {
        // The placeholder goes into a URL path, which escapes its braces.
        return b
            .endpoint_template(d, model, false)
            .unwrap_or_else(|e| e.to_string())
            .replace("%7Bmodel%7D", MODEL_LEFT_OPEN);
    }
    match b.endpoint(d, model, false, env) {
        Ok(u) => u.to_string(),
        Err(_) => b
            .endpoint_template(d, model, false)
            .unwrap_or_else(|e| e.to_string()),
    }
}

fn row<T: std::fmt::Display>(name: &str, r: &Resolved<T>) -> Vec<String> {
    vec![name.to_string(), r.value.to_string(), r.layer.to_string()]
}

fn opt_row<T: std::fmt::Display>(name: &str, r: &Option<Resolved<T>>, none: &str) -> Vec<String> {
    match r {
        Some(r) => row(name, r),
        None => vec![name.to_string(), none.to_string(), String::new()],
    }
}

fn text(config: &Config, r: &Reference, b: &Backend) -> String {
    let env = CliEnv;
    let mut rows: Vec<Vec<String>> = Vec::new();
    rows.push(vec![
        "reference".into(),
        format!("{}/{}", r.backend, r.requested_model),
        String::new(),
    ]);
    rows.push(vec![
        "backend".into(),
        b.name.clone(),
        super::backends_list::layers_text(b),
    ]);
    match b.models.get(&r.requested_model) {
        Some(alias) => rows.push(vec![
            "model".into(),
            r.model.clone(),
            format!("alias `{}` from {}", r.requested_model, alias.layer),
        ]),
        None => rows.push(vec!["model".into(), r.model.clone(), String::new()]),
    }
    // What a reference naming only the backend (`vertex`) calls, and which layer said so.
    if let Some(m) = &b.default_model {
        rows.push(row("default_model", m));
    }
    rows.push(row("kind", &b.kind));
    rows.push(opt_row("base_url", &b.base_url, "-"));
    if let Some(m) = &b.messages_url {
        rows.push(row("messages_url", m));
    }
    if let Some(g) = &b.gemini_url {
        rows.push(row("gemini_url", g));
    }
    rows.push(vec![
        "apis".into(),
        super::backends_list::dialects_text(b),
        b.apis.layer.to_string(),
    ]);
    for d in &b.apis.value {
        rows.push(vec![
            format!("  {d}"),
            endpoint_text(b, *d, &r.model, &env),
            format!("auth {}", b.auth_for(*d)),
        ]);
    }
    rows.push(row("auth", &b.auth));
    if b.uses_no_key() {
        rows.push(vec![
            "api_key_env".into(),
            "- (not needed)".into(),
            String::new(),
        ]);
    } else {
        rows.push(vec![
            "api_key_env".into(),
            format!("{} ({})", b.api_key_env.value, b.key_status(&env).as_str()),
            b.api_key_env.layer.to_string(),
        ]);
        rows.push(row("key_required", &b.key_required));
    }
    match b.price(&r.model) {
        Some(p) => {
            let v = p.value;
            let mut s = format!("input {} / output {}", v.input, v.output);
            if let Some(c) = v.cached_input {
                s.push_str(&format!(" / cached_input {c}"));
            }
            if let Some(w) = v.cache_write {
                s.push_str(&format!(" / cache_write {w}"));
            }
            s.push_str(" USD per million tokens");
            rows.push(vec!["price".into(), s, p.layer.to_string()]);
        }
        None => rows.push(vec!["price".into(), "unknown".into(), String::new()]),
    }
    rows.push(opt_row("context_window", &b.context_window, "unknown"));
    rows.push(opt_row(
        "max_output_tokens",
        &b.max_output_tokens,
        "unknown",
    ));
    if let Some(o) = &b.model_options {
        rows.push(row("model_options", o));
    }
    rows.push(row("developer_role", &b.developer_role));
    rows.push(row("max_tokens_field", &b.max_tokens_field));
    for (k, v) in &b.extra_body {
        rows.push(vec![
            format!("extra_body.{k}"),
            v.value.to_string(),
            v.layer.to_string(),
        ]);
    }
    if let Some(f) = &b.from {
        rows.push(row("from", f));
    }
    if let Some(c) = &b.command {
        rows.push(vec![
            "command".into(),
            c.value.join(" "),
            c.layer.to_string(),
        ]);
    }
    if let Some(l) = &b.litellm {
        rows.push(row("litellm", l));
    }
    let mut out = table::render(&rows);
    if let Some(date) = config.registry.prices_date() {
        if b.price(&r.model)
            .is_some_and(|p| p.layer.origin() == &switchyard::Layer::Builtin)
        {
            out.push_str(&format!("(built-in prices taken {date})\n"));
        }
    }
    out
}

fn resolved_json<T: serde::Serialize>(r: &Resolved<T>) -> Value {
    serde_json::to_value(r).unwrap_or(Value::Null)
}

fn json_of(r: &Reference, b: &Backend, env: &dyn EnvSource) -> Value {
    let mut endpoints = serde_json::Map::new();
    for d in &b.apis.value {
        endpoints.insert(
            d.to_string(),
            json!({ "url": endpoint_text(b, *d, &r.model, env), "auth": b.auth_for(*d).as_str() }),
        );
    }
    json!({
        "reference": format!("{}/{}", r.backend, r.requested_model),
        "backend": b.name,
        "model": r.model,
        "requested_model": r.requested_model,
        "alias": b.models.get(&r.requested_model).map(resolved_json),
        "kind": resolved_json(&b.kind),
        "base_url": b.base_url.as_ref().map(resolved_json),
        "messages_url": b.messages_url.as_ref().map(resolved_json),
        "gemini_url": b.gemini_url.as_ref().map(resolved_json),
        "apis": resolved_json(&b.apis),
        "endpoints": endpoints,
        "auth": resolved_json(&b.auth),
        "api_key_env": resolved_json(&b.api_key_env),
        "key_required": resolved_json(&b.key_required),
        "key": b.key_status(env).as_str(),
        "price": b.price(&r.model).map(resolved_json).unwrap_or_else(|| json!("unknown")),
        "context_window": b.context_window.as_ref().map(resolved_json).unwrap_or_else(|| json!("unknown")),
        "max_output_tokens": b.max_output_tokens.as_ref().map(resolved_json).unwrap_or_else(|| json!("unknown")),
        "model_options": b.model_options.as_ref().map(resolved_json),
        "default_model": b.default_model.as_ref().map(resolved_json),
        "developer_role": resolved_json(&b.developer_role),
        "max_tokens_field": resolved_json(&b.max_tokens_field),
        "extra_body": serde_json::to_value(&b.extra_body).unwrap_or(Value::Null),
        "from": b.from.as_ref().map(resolved_json),
        "command": b.command.as_ref().map(resolved_json),
        "litellm": litellm_json(r, b, env),
        "layers": b.layers.iter().map(|l| l.to_string()).collect::<Vec<_>>(),
    })
}

/// The LiteLLM hand-off as JSON: `{model, api_base, api_key_env}`, `null` without a
/// `litellm` prefix (or with the model left open), the error text when a URL placeholder is
/// unset.
fn litellm_json(r: &Reference, b: &Backend, env: &dyn EnvSource) -> Value {
    if r.model == MODEL_LEFT_OPEN {
        return Value::Null;
    }
    match b.litellm(&r.model, env) {
        Ok(Some(l)) => serde_json::to_value(l).unwrap_or(Value::Null),
        Ok(None) => Value::Null,
        Err(e) => json!({ "error": e.to_string() }),
    }
}

/// The reference `text` names, or — for a backend's name alone — the backend with its
/// model left open (`true` then).
fn reference_of(config: &Config, text: &str) -> Result<(Reference, bool), String> {
    let registry = &config.registry;
    match registry.require_reference(text) {
        Ok(r) => Ok((r, false)),
        Err(switchyard::ReferenceError::EmptyModel { backend, .. })
            if registry.backend(&backend).is_some() =>
        {
            Ok((
                Reference {
                    backend,
                    model: MODEL_LEFT_OPEN.into(),
                    requested_model: MODEL_LEFT_OPEN.into(),
                },
                true,
            ))
        }
        Err(e) => Err(format!("error: {e}")),
    }
}

/// `backends show --json` of `text` as a value (the Python package's `backends.show`).
pub(crate) fn show_json(config: &Config, text: &str, env: &dyn EnvSource) -> Result<Value, String> {
    let (reference, _) = reference_of(config, text)?;
    let backend = config
        .registry
        .backend(&reference.backend)
        .ok_or_else(|| format!("error: no backend `{}`", reference.backend))?;
    Ok(json_of(&reference, backend, env))
}

/// `backends show --litellm`: the hand-off, or why there is none.
fn litellm_text(r: &Reference, b: &Backend, json: bool) -> Result<String, String> {
    if r.model == MODEL_LEFT_OPEN {
        return Err(format!(
            "error: `--litellm` needs a model: `switchyard backends show {}/<model id> --litellm`",
            b.name
        ));
    }
    let Some(l) = b
        .litellm(&r.model, &CliEnv)
        .map_err(|e| format!("error: {e}"))?
    else {
        return Err(format!(
            "error: backend `{}` has no `litellm` route prefix; set one in its entry (`litellm: openai` sends an OpenAI-compatible server's calls to its api_base)",
            b.name
        ));
    };
    if json {
        return to_json(&serde_json::to_value(&l).map_err(|e| e.to_string())?).map(|s| s + "\n");
    }
    let rows = vec![
        vec!["model".to_string(), l.model],
        vec![
            "api_base".into(),
            l.api_base.unwrap_or_else(|| "- (LiteLLM's own)".into()),
        ],
        vec![
            "api_key_env".into(),
            l.api_key_env.unwrap_or_else(|| "- (not needed)".into()),
        ],
    ];
    Ok(table::render(&rows))
}

pub(super) fn run(config: &Config, args: &ShowArgs) -> Result<(), String> {
    let (reference, bare) = reference_of(config, &args.reference)?;
    let backend = config
        .registry
        .backend(&reference.backend)
        .ok_or_else(|| format!("error: no backend `{}`", reference.backend))?;
    if args.litellm {
        print!("{}", litellm_text(&reference, backend, args.json)?);
        return Ok(());
    }
    if bare {
        match &backend.default_model {
            Some(m) => eprintln!(
                "note: `{}` is a backend; named alone it calls its default model `{}/{}` (default_model, from {}). The backend itself:",
                reference.backend, reference.backend, m.value, m.layer
            ),
            None => eprintln!(
                "note: `{}` is a backend; a reference is `{}/<model id>`. The backend itself:",
                reference.backend, reference.backend
            ),
        }
    }
    if args.json {
        println!("{}", to_json(&json_of(&reference, backend, &CliEnv))?);
    } else {
        print!("{}", text(config, &reference, backend));
    }
    Ok(())
}
