//! `switchyard backends list`: every backend in a table or JSON.

use super::CliEnv;
use switchyard::env::EnvSource;
use switchyard::registry::{Backend, Config, Layer};

use super::{table, to_json};
use crate::cli::ListArgs;

/// The layers a backend comes from, defaults left out.
pub(super) fn layers_text(b: &Backend) -> String {
    let names: Vec<String> = b
        .layers
        .iter()
        .filter(|l| **l != Layer::Default)
        .map(Layer::to_string)
        .collect();
    if names.is_empty() {
        "default".into()
    } else {
        names.join(", ")
    }
}

/// The dialects, comma-separated, or `-`.
pub(super) fn dialects_text(b: &Backend) -> String {
    if b.apis.value.is_empty() {
        return "-".into();
    }
    b.apis
        .value
        .iter()
        .map(|d| d.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

/// `s` cut to `max` characters with a trailing `…` (the full value is in `--json` and `show`).
fn shorten(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// `backends list --json` as a value (the Python package's `backends.list`).
pub(crate) fn list_json(config: &Config, env: &dyn EnvSource) -> Result<serde_json::Value, String> {
    let registry = &config.registry;
    let mut items = Vec::new();
    for b in registry.backends() {
        let mut v = serde_json::to_value(b).map_err(|e| e.to_string())?;
        if let Some(obj) = v.as_object_mut() {
            obj.insert("key".into(), b.key_status(env).as_str().into());
        }
        items.push(v);
    }
    Ok(serde_json::json!({
        "prices_date": registry.prices_date(),
        "backends": items,
    }))
}

pub(super) fn run(config: &Config, args: &ListArgs) -> Result<(), String> {
    let env = CliEnv;
    let registry = &config.registry;
    if args.json {
        println!("{}", to_json(&list_json(config, &env)?)?);
        return Ok(());
    }
    let mut rows = vec![vec![
        "NAME".to_string(),
        "KIND".into(),
        "BASE URL".into(),
        "DIALECTS".into(),
        "KEY".into(),
        "LAYER".into(),
    ]];
    for b in registry.backends() {
        let key = if b.uses_no_key() {
            "not needed".to_string()
        } else {
            format!("{} ({})", b.api_key_env.value, b.key_status(&env).as_str())
        };
        rows.push(vec![
            b.name.clone(),
            b.kind.value.to_string(),
            b.base_url
                .as_ref()
                .map(|u| shorten(&u.value, 60))
                .unwrap_or_else(|| "-".into()),
            dialects_text(b),
            key,
            layers_text(b),
        ]);
    }
    print!("{}", table::render(&rows));
    Ok(())
}
