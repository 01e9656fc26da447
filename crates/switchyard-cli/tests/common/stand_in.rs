//! Stand-in `claude` and `codex` executables: shell scripts that record how they were run.

#[path = "../../../switchyard/tests/common/executable.rs"]
mod executable;
use executable::write_executable;
use std::path::{Path, PathBuf};

/// A stand-in CLI in `<dir>/bin/<name>` that records its argv (one per line), environment
/// and working directory in `<dir>/rec/`, runs `body` (shell) and exits with `code`.
/// Returns the `bin` directory, to put first on PATH.
pub(crate) fn stand_in(dir: &Path, name: &str, body: &str, code: i32) -> PathBuf {
    let bin = dir.join("bin");
    let rec = dir.join("rec");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::create_dir_all(&rec).unwrap();
    let script = format!(
        "#!/bin/sh\nrec='{rec}'\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$rec/argv\"\nenv > \"$rec/env\"\npwd > \"$rec/cwd\"\n{body}\nexit {code}\n",
        rec = rec.display()
    );
    write_executable(&bin.join(name), &script);
    bin
}

/// What a stand-in recorded: `argv`, `env` or `cwd`.
pub(crate) fn rec(dir: &Path, what: &str) -> String {
    std::fs::read_to_string(dir.join("rec").join(what)).unwrap_or_default()
}

/// A variable's value in a recorded `env`.
pub(crate) fn env_var(env: &str, name: &str) -> Option<String> {
    env.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}=")).map(str::to_string))
}
