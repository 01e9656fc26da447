//! `switchyard check`: the check of a run config, as a table or JSON, and the preflight
//! every command that runs a config calls first.

use std::path::Path;

use switchyard::run::{self, CheckReport, RoleCheck};

use super::{table, to_json, CliEnv};
use crate::cli::RunCheckArgs;

/// Runs `check`: prints the report; fails (exit 1) when a role cannot work.
pub fn run(config: Option<&Path>, args: &RunCheckArgs) -> Result<(), String> {
    let Some(path) = config else {
        return Err(
            "error: `check` needs a run config: `switchyard check --config run.yaml [overrides...]`"
                .into(),
        );
    };
    let report = run::check(path, args.overrides.iter().cloned(), &CliEnv);
    if args.json {
        let value =
            serde_json::to_value(&report).map_err(|e| format!("error: cannot write JSON: {e}"))?;
        println!("{}", to_json(&value)?);
    } else {
        print!("{}", text(&report));
    }
    if report.ok {
        Ok(())
    } else {
        Err(failure(&report))
    }
}

/// Runs the check before a command that runs the config; refuses to start on a failure.
pub fn preflight(path: &Path, overrides: &[String]) -> Result<(), String> {
    let report = run::check(path, overrides.iter().cloned(), &CliEnv);
    if report.ok {
        Ok(())
    } else {
        Err(format!(
            "error: {}\n(`switchyard check --config {}` shows every role)",
            report.problems_text(),
            path.display()
        ))
    }
}

fn failure(report: &CheckReport) -> String {
    let failing = report.roles.iter().filter(|r| !r.ok).count();
    let n = report.problems.len();
    format!(
        "error: {n} problem{} ({failing} role{} cannot work)",
        if n == 1 { "" } else { "s" },
        if failing == 1 { "" } else { "s" }
    )
}

fn yes_no(b: Option<bool>) -> String {
    match b {
        Some(true) => "yes".into(),
        Some(false) => "NO".into(),
        None => "-".into(),
    }
}

fn row(r: &RoleCheck) -> Vec<String> {
    let dash = || "-".to_string();
    let key = match (&r.key_variable, r.key) {
        _ if r.custom_backend => "custom backend".into(),
        (Some(var), Some(status)) => format!("{var} ({})", status.as_str()),
        (None, Some(status)) => status.as_str().to_string(),
        _ => dash(),
    };
    vec![
        r.role.clone(),
        r.reference.clone().unwrap_or_else(dash),
        r.model_from
            .map(|m| m.describe().to_string())
            .unwrap_or_else(dash),
        r.backend.clone().unwrap_or_else(dash),
        r.kind.map(|k| k.to_string()).unwrap_or_else(dash),
        r.dialect.map(|d| d.to_string()).unwrap_or_else(dash),
        yes_no(r.served),
        key,
        match r.price_known {
            Some(true) => "known".into(),
            Some(false) => "unknown".into(),
            None => dash(),
        },
        r.context_window.map(|c| c.to_string()).unwrap_or_else(dash),
        if r.ok { "ok".into() } else { "FAILS".into() },
    ]
}

/// The report as text: a table of roles, then every problem.
pub fn text(report: &CheckReport) -> String {
    let mut out = format!("run config {}\n\n", report.config);
    if report.roles.is_empty() {
        out.push_str("no roles (the config has no `llm:` section)\n");
    } else {
        let mut rows = vec![[
            "ROLE",
            "REFERENCE",
            "MODEL FROM",
            "BACKEND",
            "KIND",
            "DIALECT",
            "SERVED",
            "KEY",
            "PRICE",
            "CONTEXT",
            "STATUS",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()];
        rows.extend(report.roles.iter().map(row));
        out.push_str(&table::render(&rows));
    }
    out.push('\n');
    if report.problems.is_empty() {
        out.push_str("no problems: every role can work\n");
    } else {
        let n = report.problems.len();
        out.push_str(&format!("{n} problem{}:\n", if n == 1 { "" } else { "s" }));
        for p in &report.problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    out
}
