//! `switchyard backends check <reference> | --all`: what a backend claims against what it
//! answers, before a run spends anything. The findings as a table, or as JSON
//! (`--json`, and [`check_json`] for the Python package's `switchyard.backends.check`).

use std::fmt;
use std::io::Write;
use std::time::Duration;

use super::CliEnv;
use serde_json::{json, Value};
use switchyard::env::EnvSource;
use switchyard::error::fmt_duration;
use switchyard::internal::probe::{self, Attempt, AttemptError, ModelsCheck, Report};
use switchyard::registry::{Backend, Config, Dialect, KeyStatus, Kind};
use switchyard::ReferenceError;

use super::table;
use crate::cli::CheckArgs;

/// Why a reference cannot be checked.
#[derive(Debug)]
pub enum Uncheckable {
    /// It names no backend, or no model.
    Reference(ReferenceError),
    /// Its backend runs a program (a CLI agent, a replay): there is no dialect to try.
    NotHttp {
        /// The backend.
        backend: String,
        /// Its kind.
        kind: Kind,
    },
}

impl fmt::Display for Uncheckable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uncheckable::Reference(e) => write!(f, "{e}"),
            Uncheckable::NotHttp { backend, kind } => write!(
                f,
                "backend `{backend}` is of kind `{kind}`: there are no dialects to check (it runs a program)"
            ),
        }
    }
}

impl From<Uncheckable> for switchyard::Error {
    fn from(e: Uncheckable) -> Self {
        match e {
            Uncheckable::Reference(e) => e.into(),
            Uncheckable::NotHttp { .. } => switchyard::Error::Unsupported(e.to_string()),
        }
    }
}

/// The http backend and model (after aliases) `text` names.
fn target<'c>(config: &'c Config, text: &str) -> Result<(&'c Backend, String), Uncheckable> {
    let registry = &config.registry;
    let r = registry
        .require_reference(text)
        .map_err(Uncheckable::Reference)?;
    let backend = registry.backend(&r.backend).ok_or_else(|| {
        Uncheckable::Reference(ReferenceError::UnknownBackend {
            text: text.to_string(),
            name: r.backend.clone(),
            known: registry.names().map(str::to_string).collect(),
            nearest: None,
        })
    })?;
    if backend.kind.value != Kind::Http {
        return Err(Uncheckable::NotHttp {
            backend: backend.name.clone(),
            kind: backend.kind.value,
        });
    }
    Ok((backend, r.model))
}

/// `backends check <reference> --json` as a value: the reference resolved (backend,
/// model, base URL, key variable and whether it is set), the model list, and for every
/// dialect whether it is claimed and whether it answered. The checks are made as the
/// command makes them, without its progress lines.
pub(crate) async fn check_json(
    config: &Config,
    reference: &str,
    env: &(dyn EnvSource + Sync),
) -> Result<Value, Uncheckable> {
    let (backend, model) = target(config, reference)?;
    let report = probe::check(backend, &model, env).await;
    Ok(report_json(backend, &report, env))
}

/// Runs `backends check`.
pub(super) fn run(config: &Config, args: &CheckArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    let targets: Vec<(&Backend, String)> = if args.all {
        all_targets(config)?
    } else {
        let text = args.reference.as_deref().unwrap_or_default();
        vec![target(config, text).map_err(|e| format!("error: {e}"))?]
    };
    let total = targets.len();
    let mut failed: Vec<String> = Vec::new();
    let mut reports: Vec<Value> = Vec::new();
    for (i, (backend, model)) in targets.iter().enumerate() {
        if total > 1 {
            eprintln!("[{}/{total}] {}/{model}", i + 1, backend.name);
        }
        let report = runtime.block_on(check_one(backend, model));
        if args.json {
            reports.push(report_json(backend, &report, &CliEnv));
        } else {
            print_report(&report);
            if total > 1 && i + 1 < total {
                println!();
            }
        }
        let failures: Vec<String> = report
            .attempts
            .iter()
            .filter(|a| a.result.is_err())
            .map(Attempt::label)
            .collect();
        if !failures.is_empty() {
            failed.push(format!(
                "{}/{model} ({})",
                backend.name,
                failures.join(", ")
            ));
        }
    }
    if args.json {
        let value = match (args.all, reports.pop()) {
            (false, Some(one)) => one,
            (_, last) => Value::Array(reports.into_iter().chain(last).collect()),
        };
        println!("{}", super::to_json(&value)?);
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "error: a claimed dialect does not work on {}",
            failed.join("; ")
        ))
    }
}

/// Every http backend whose key is set, with the model to check it with.
fn all_targets(config: &Config) -> Result<Vec<(&Backend, String)>, String> {
    let env = CliEnv;
    let mut targets = Vec::new();
    let mut keyless = Vec::new();
    let mut no_model = Vec::new();
    for b in config.registry.backends() {
        if b.kind.value != Kind::Http {
            continue;
        }
        match b.key_status(&env) {
            KeyStatus::Set => match probe::default_model(b) {
                Some(model) => targets.push((b, model)),
                None => no_model.push(b.name.as_str()),
            },
            KeyStatus::NotNeeded => keyless.push(b.name.as_str()),
            KeyStatus::Unset => {}
        }
    }
    if !keyless.is_empty() {
        eprintln!(
            "skipping backends that need no key (local servers may not be running; check one with `switchyard backends check <backend>/<model>`): {}",
            keyless.join(", ")
        );
    }
    if !no_model.is_empty() {
        eprintln!(
            "skipping backends with no alias or priced model to check with (check them by reference): {}",
            no_model.join(", ")
        );
    }
    if targets.is_empty() {
        return Err(
            "error: no backend to check: `--all` checks the http backends whose key variable is set, and none is"
                .into(),
        );
    }
    Ok(targets)
}

/// Checks one backend, step by step as [`probe::check`] does, printing each step's
/// progress to standard error.
async fn check_one(backend: &Backend, model: &str) -> Report {
    let env = CliEnv;
    eprint!("  GET /models … ");
    let _ = std::io::stderr().flush();
    let models = probe::list_models(backend, &env).await;
    eprintln!("{}", models_text(&models, model));
    let mut attempts: Vec<Attempt> = Vec::new();
    for (dialect, ns) in probe::plan(backend) {
        eprint!(
            "  {}{} … ",
            dialect,
            if ns { " + namespace tool" } else { "" }
        );
        let _ = std::io::stderr().flush();
        let attempt = probe::try_dialect(backend, model, dialect, ns, &env).await;
        eprintln!(
            "{} ({})",
            if attempt.result.is_ok() {
                "ok"
            } else {
                "FAILED"
            },
            fmt_duration(attempt.elapsed)
        );
        attempts.push(attempt);
    }
    Report {
        backend: backend.name.clone(),
        model: model.to_string(),
        models,
        attempts,
    }
}

/// One line of the claimed-vs-working table: a request tried, or a dialect not claimed.
struct Row<'a> {
    dialect: Dialect,
    label: String,
    namespace_tool: bool,
    tried: Option<&'a Attempt>,
}

/// Every dialect in order, each request tried for it, or the dialect alone when it is not
/// claimed.
fn rows(report: &Report) -> Vec<Row<'_>> {
    let mut rows = Vec::new();
    for dialect in Dialect::ALL {
        let tried: Vec<&Attempt> = report
            .attempts
            .iter()
            .filter(|a| a.dialect == dialect)
            .collect();
        if tried.is_empty() {
            rows.push(Row {
                dialect,
                label: dialect.to_string(),
                namespace_tool: false,
                tried: None,
            });
        }
        for a in tried {
            rows.push(Row {
                dialect,
                label: a.label(),
                namespace_tool: a.namespace_tool,
                tried: Some(a),
            });
        }
    }
    rows
}

/// Prints one backend's findings: the model list and the claimed-vs-working table.
fn print_report(report: &Report) {
    let model = &report.model;
    println!("{}/{model}", report.backend);
    println!("models: {}", models_text(&report.models, model));
    let mut lines = vec![vec![
        "DIALECT".to_string(),
        "CLAIMED".into(),
        "WORKING".into(),
        "TIME".into(),
        "DETAIL".into(),
    ]];
    for row in rows(report) {
        lines.push(match row.tried {
            None => vec![
                row.label,
                "no".into(),
                "-".into(),
                "-".into(),
                "not claimed, not tried".into(),
            ],
            Some(a) => {
                let (working, detail) = match &a.result {
                    Ok(text) => ("yes".to_string(), format!("replied {text:?}")),
                    Err(e) => ("NO".to_string(), e.message.clone()),
                };
                vec![
                    row.label,
                    "yes".into(),
                    working,
                    fmt_duration(a.elapsed),
                    detail,
                ]
            }
        });
    }
    print!("{}", table::render(&lines));
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// One backend's findings as JSON (`--json`, `switchyard.backends.check`).
fn report_json(backend: &Backend, report: &Report, env: &dyn EnvSource) -> Value {
    let model = &report.model;
    let m = &report.models;
    let (ids, list_error) = match &m.result {
        Ok(ids) => (Some(ids), None),
        Err(e) => (None, Some(e)),
    };
    let dialects: Vec<Value> = rows(report)
        .into_iter()
        .map(|row| {
            let (reply, error): (Option<&String>, Option<&AttemptError>) = match row.tried {
                Some(Attempt { result: Ok(t), .. }) => (Some(t), None),
                Some(Attempt { result: Err(e), .. }) => (None, Some(e)),
                None => (None, None),
            };
            json!({
                "dialect": row.dialect.as_str(),
                "label": row.label,
                "namespace_tool": row.namespace_tool,
                "claimed": row.tried.is_some(),
                "working": row.tried.map(|a| a.result.is_ok()),
                "ms": row.tried.map(|a| ms(a.elapsed)),
                "reply": reply,
                "error": error.map(|e| e.message.as_str()),
                "error_kind": error.and_then(|e| e.kind).map(|k| k.as_str()),
            })
        })
        .collect();
    let key = backend.key_status(env);
    json!({
        "reference": format!("{}/{model}", backend.name),
        "backend": backend.name,
        "model": model,
        "base_url": backend.base_url.as_ref().map(|b| b.value.as_str()),
        // The variable's name (never its value); none for a backend that sends no key.
        "api_key_env": (!backend.uses_no_key()).then_some(backend.api_key_env.value.as_str()),
        "key": key.as_str(),
        "models": {
            "url": m.url,
            "ms": ms(m.elapsed),
            "ids": ids,
            "listed": m.lists(model),
            "error": list_error,
        },
        "dialects": dialects,
        "ok": report.claims_hold(),
    })
}

fn models_text(m: &ModelsCheck, model: &str) -> String {
    match &m.result {
        Ok(ids) => {
            let listed = if m.lists(model) == Some(true) {
                format!("`{model}` is listed")
            } else {
                format!("`{model}` is NOT listed")
            };
            let mut shown: Vec<&str> = ids.iter().map(String::as_str).take(8).collect();
            if ids.len() > 8 {
                shown.push("…");
            }
            format!(
                "{} ids ({}); {listed} ({})",
                ids.len(),
                shown.join(", "),
                fmt_duration(m.elapsed)
            )
        }
        Err(e) => format!("no list: {e} ({})", fmt_duration(m.elapsed)),
    }
}
