//! `switchyard backends check <reference> | --all`: what a backend claims against what it
//! answers, before a run spends anything.

use std::io::Write;

use super::CliEnv;
use switchyard::error::fmt_duration;
use switchyard::internal::probe::{self, Attempt, ModelsCheck};
use switchyard::registry::{Backend, Config, Dialect, KeyStatus, Kind};

use super::table;
use crate::cli::CheckArgs;

/// Runs `backends check`.
pub(super) fn run(config: &Config, args: &CheckArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("error: cannot start the async runtime: {e}"))?;
    let registry = &config.registry;
    let targets: Vec<(&Backend, String)> = if args.all {
        all_targets(config)?
    } else {
        let text = args.reference.as_deref().unwrap_or_default();
        let r = registry
            .require_reference(text)
            .map_err(|e| format!("error: {e}"))?;
        let backend = registry
            .backend(&r.backend)
            .ok_or_else(|| format!("error: no backend `{}`", r.backend))?;
        if backend.kind.value != Kind::Http {
            return Err(format!(
                "error: backend `{}` is of kind `{}`: there are no dialects to check (it runs a program)",
                backend.name, backend.kind.value
            ));
        }
        vec![(backend, r.model)]
    };
    let total = targets.len();
    let mut failed: Vec<String> = Vec::new();
    for (i, (backend, model)) in targets.iter().enumerate() {
        if total > 1 {
            eprintln!("[{}/{total}] {}/{model}", i + 1, backend.name);
        }
        let failures = runtime.block_on(check_one(backend, model));
        if !failures.is_empty() {
            failed.push(format!(
                "{}/{model} ({})",
                backend.name,
                failures.join(", ")
            ));
        }
        if total > 1 && i + 1 < total {
            println!();
        }
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

/// Checks one backend, printing progress to standard error and the table to standard
/// output; returns the labels of the claims that failed.
async fn check_one(backend: &Backend, model: &str) -> Vec<String> {
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
    println!("{}/{model}", backend.name);
    println!("models: {}", models_text(&models, model));
    let mut rows = vec![vec![
        "DIALECT".to_string(),
        "CLAIMED".into(),
        "WORKING".into(),
        "TIME".into(),
        "DETAIL".into(),
    ]];
    for dialect in Dialect::ALL {
        let tried: Vec<&Attempt> = attempts.iter().filter(|a| a.dialect == dialect).collect();
        if tried.is_empty() {
            rows.push(vec![
                dialect.to_string(),
                "no".into(),
                "-".into(),
                "-".into(),
                "not claimed, not tried".into(),
            ]);
        }
        for a in tried {
            let (working, detail) = match &a.result {
                Ok(text) => ("yes".to_string(), format!("replied {text:?}")),
                Err(e) => ("NO".to_string(), e.message.clone()),
            };
            rows.push(vec![
                a.label(),
                "yes".into(),
                working,
                fmt_duration(a.elapsed),
                detail,
            ]);
        }
    }
    print!("{}", table::render(&rows));
    attempts
        .iter()
        .filter(|a| a.result.is_err())
        .map(Attempt::label)
        .collect()
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
