//! `switchyard check`: the check of a run config, as a table or JSON, and the preflight
//! every command that runs a config calls first.

use std::path::Path;

use switchyard::run::{self, CheckReport, RoleCheck};
use switchyard_gateway::GatewayConfig;

use super::{table, to_json, CliEnv};
use crate::cli::RunCheckArgs;

/// Runs `check`: prints the report; fails (exit 1) when there is any problem, the file's
/// own included.
pub(super) fn run(config: Option<&Path>, args: &RunCheckArgs) -> Result<(), String> {
    let Some(path) = config else {
        return Err(
            "error: `check` needs a run config: `switchyard check --config run.yaml [overrides...]`"
                .into(),
        );
    };
    let report = run::check(path, args.overrides.iter().cloned(), &CliEnv);
    let deprecated = gateway_deprecations(path, &args.overrides);
    if args.json {
        let mut value =
            serde_json::to_value(&report).map_err(|e| format!("error: cannot write JSON: {e}"))?;
        if let (Some(fields), false) = (value.as_object_mut(), deprecated.is_empty()) {
            fields.insert("deprecated".into(), deprecated.into());
        }
        println!("{}", to_json(&value)?);
    } else {
        print!("{}", text(&report));
        for note in &deprecated {
            println!("deprecated: {note}");
        }
    }
    if report.ok {
        Ok(())
    } else {
        Err(failure(&report))
    }
}

/// The old names the run config's gateway sections use, which still read
/// (`listen.body_timeout_secs: use listen.body_timeout_seconds`): shown, never a failure.
/// None when the config cannot be loaded (the report says why).
fn gateway_deprecations(path: &Path, overrides: &[String]) -> Vec<String> {
    match super::load(Some(path.to_path_buf()), overrides.to_vec()) {
        Ok(config) => GatewayConfig::read(&config.sections).deprecated,
        Err(_) => Vec::new(),
    }
}

/// Runs the check before a command that runs the config; refuses to start on a failure.
/// `log` is the run directory the command names itself (`ask --log`), over `log:`.
pub(super) fn preflight(
    path: &Path,
    overrides: &[String],
    log: Option<&Path>,
) -> Result<(), String> {
    let mut builder = run::Run::builder(path)
        .overrides(overrides.iter().cloned())
        .env(&CliEnv);
    if let Some(dir) = log {
        builder = builder.log(dir);
    }
    let report = builder.check();
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

/// The last line of a failed check: how many problems, and where they are.
fn failure(report: &CheckReport) -> String {
    format!("error: {}", summary(report))
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The counts of a failed check, each true: a file-level problem is not a role's, and a
/// role is counted when any problem is its own.
fn summary(report: &CheckReport) -> String {
    let problems = plural(report.problems.len(), "problem", "problems");
    if !report.config_read {
        return format!("{problems}: the run config cannot be read, so its roles are not checked");
    }
    let file = report.file_problems().count();
    let failing = report.failing_roles();
    let mut parts = Vec::new();
    if file > 0 {
        parts.push(format!("{file} in the file as a whole"));
    }
    let total = report.roles.len();
    parts.push(match total {
        0 => "no roles".to_string(),
        _ => format!(
            "{failing} of {} cannot work",
            plural(total, "role", "roles")
        ),
    });
    format!("{problems} ({})", parts.join("; "))
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
pub(super) fn text(report: &CheckReport) -> String {
    let mut out = format!("run config {}\n\n", report.config);
    if !report.config_read {
        out.push_str("roles not checked: the run config cannot be read (see the problems below)\n");
    } else if report.roles.is_empty() {
        out.push_str(if report.problems.is_empty() {
            "no roles (the config has no `llm:` section)\n"
        } else {
            "no roles (no `llm:` section, or none that could be read: see the problems below)\n"
        });
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
        for r in &report.roles {
            if r.members.is_empty() {
                rows.push(row(r));
                continue;
            }
            // A route's role: its name and status, then a row per member.
            let mut first = vec!["-".to_string(); 11];
            first[0] = r.role.clone();
            first[1] = r.reference.clone().unwrap_or_default();
            first[2] = row(r)[2].clone();
            first[3] = format!("route of {}", r.members.len());
            first[10] = row(r)[10].clone();
            rows.push(first);
            for (i, m) in r.members.iter().enumerate() {
                let mut member = row(m);
                member[0] = format!("  member {}", i + 1);
                member[2] = "-".into();
                member[10] = "".into();
                rows.push(member);
            }
        }
        out.push_str(&table::render(&rows));
    }
    out.push('\n');
    if report.problems.is_empty() {
        out.push_str("no problems: every role can work\n");
    } else {
        out.push_str(&format!("{}:\n", summary(report)));
        for p in &report.problems {
            out.push_str(&format!("  {p}\n"));
        }
    }
    out
}
