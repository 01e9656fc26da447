//! `switchyard backends shell <reference>`: a backend's origin and path as shell
//! assignments, for putting a meter or relay in front of it.

use super::CliEnv;
use switchyard::bind::shell_quote;
use switchyard::registry::Config;

use crate::cli::ShellArgs;

/// Runs `backends shell`.
pub(super) fn run(config: &Config, args: &ShellArgs) -> Result<(), String> {
    let registry = &config.registry;
    let name = match args.reference.split_once('/') {
        Some(_) => {
            registry
                .require_reference(&args.reference)
                .map_err(|e| format!("error: {e}"))?
                .backend
        }
        None => args.reference.clone(),
    };
    let backend = registry.backend(&name).ok_or_else(|| {
        format!(
            "error: no backend `{name}`; known backends: {}",
            registry.names().collect::<Vec<_>>().join(", ")
        )
    })?;
    let Some(base) = &backend.base_url else {
        return Err(format!(
            "error: backend `{name}` is of kind `{}` and has no URL to put a relay in front of",
            backend.kind.value
        ));
    };
    let env = CliEnv;
    let fill = |t: &str| backend.fill_url(t, &env).map_err(|e| format!("error: {e}"));
    let base = fill(&base.value)?;
    let origin = base.origin().ascii_serialization();
    let mut words = vec![
        format!("origin={}", shell_quote(&origin)),
        format!("path={}", shell_quote(base.path().trim_end_matches('/'))),
    ];
    // The roots of the other dialects, when set apart from base_url: a path on the same
    // origin, else the whole URL.
    for (label, root) in [
        ("messages", backend.messages_url.as_ref()),
        ("gemini", backend.gemini_url.as_ref()),
    ] {
        let Some(root) = root else { continue };
        let url = fill(&root.value)?;
        if url.origin().ascii_serialization() == origin {
            words.push(format!(
                "{label}_path={}",
                shell_quote(url.path().trim_end_matches('/'))
            ));
        } else {
            words.push(format!("{label}_url={}", shell_quote(url.as_str())));
        }
    }
    println!("{}", words.join(" "));
    Ok(())
}
