//! `npm ci` in a test's package folder, for the tests that drive real JavaScript clients
//! and CLIs (js_clients.rs, agent_sessions.rs).

use std::path::Path;

/// Installs `dir`'s pinned packages; why it could not, when it could not.
pub(crate) fn ci(dir: &Path) -> Option<String> {
    let ci = std::process::Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(dir)
        .output();
    match ci {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "`npm ci` in {} failed: {}",
            dir.display(),
            String::from_utf8_lossy(&o.stderr)
        )),
        Err(e) => Some(format!("cannot run npm: {e}")),
    }
}
