//! Running a CLI agent once: from a fresh empty directory, the prompt on standard input,
//! the whole output collected, the child killed when the wait runs out. (A run whose
//! output is read as it comes is `output_stream.rs`.)

use crate::error::{Error, Result, TimeoutPhase};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::AsyncWriteExt;

/// One run of a program. Its `Debug` shows the names of the variables set, never their
/// values (an env file's keys are among them).
#[derive(Clone)]
pub struct Invocation {
    /// The backend, for messages.
    pub backend: String,
    /// The program (a path found beforehand).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<OsString>,
    /// Variables set in the child's environment (on top of the inherited one).
    pub env: Vec<(OsString, OsString)>,
    /// Variables removed from the child's environment.
    pub env_remove: Vec<OsString>,
    /// What is written to standard input (then closed).
    pub stdin: String,
    /// The most the run may take; the child is killed after it.
    pub timeout: Option<Duration>,
}

impl std::fmt::Debug for Invocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&OsString> = self.env.iter().map(|(k, _)| k).collect();
        f.debug_struct("Invocation")
            .field("backend", &self.backend)
            .field("program", &self.program)
            .field("args", &self.args)
            .field("env (names)", &names)
            .field("env_remove", &self.env_remove)
            .field("stdin bytes", &self.stdin.len())
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// What a finished run left.
#[derive(Debug, Clone)]
pub struct Finished {
    /// The exit code (`None` when killed by a signal).
    pub code: Option<i32>,
    /// Standard output.
    pub stdout: Vec<u8>,
    /// Standard error.
    pub stderr: Vec<u8>,
}

impl Finished {
    /// True when the program exited with 0.
    pub fn success(&self) -> bool {
        self.code == Some(0)
    }

    /// `exit status 2`, or `killed by a signal`.
    pub fn status_text(&self) -> String {
        match self.code {
            Some(c) => format!("exit status {c}"),
            None => "killed by a signal".to_string(),
        }
    }
}

/// A scratch directory for one run: an empty working directory (`work/`), and beside it
/// room for the CLI's own home (`home/`) when it needs one. Deleted when dropped.
pub struct Scratch {
    dir: tempfile::TempDir,
}

impl Scratch {
    /// A new scratch directory, `work/` created empty.
    pub fn new(backend: &str) -> Result<Scratch> {
        let dir = tempfile::Builder::new()
            .prefix("switchyard-cli-")
            .tempdir()
            .map_err(|e| scratch_error(backend, &e))?;
        std::fs::create_dir(dir.path().join("work")).map_err(|e| scratch_error(backend, &e))?;
        Ok(Scratch { dir })
    }

    /// The empty working directory.
    pub fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    /// A directory beside `work/`, created empty (a CLI's config home).
    pub fn subdir(&self, backend: &str, name: &str) -> Result<PathBuf> {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path).map_err(|e| scratch_error(backend, &e))?;
        Ok(path)
    }
}

fn scratch_error(backend: &str, e: &std::io::Error) -> Error {
    Error::Transport {
        backend: backend.to_string(),
        message: format!("could not create a temporary directory to run the CLI in: {e}"),
    }
}

/// Starts `inv` with `cwd` as working directory, its output piped, the prompt written to
/// its standard input by a task of its own (so a long prompt cannot deadlock against a
/// full pipe). Dropping the child kills it.
pub(crate) fn spawn(inv: &Invocation, cwd: &Path) -> Result<tokio::process::Child> {
    let mut command = tokio::process::Command::new(&inv.program);
    command
        .args(&inv.args)
        .current_dir(cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        // Dropping the child (a timeout, a cancelled call) kills it.
        .kill_on_drop(true);
    for name in &inv.env_remove {
        command.env_remove(name);
    }
    for (k, v) in &inv.env {
        command.env(k, v);
    }
    let mut child = command.spawn().map_err(|e| Error::Transport {
        backend: inv.backend.clone(),
        message: format!("could not start `{}`: {e}", inv.program.display()),
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        let prompt = inv.stdin.clone();
        tokio::spawn(async move {
            // A child that exits without reading its input is reported by its output
            // and exit status, not by a broken pipe here.
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
    }
    Ok(child)
}

/// The error of a run past its time limit.
pub(crate) fn timed_out(inv: &Invocation, limit: Duration) -> Error {
    Error::Timeout {
        backend: inv.backend.clone(),
        phase: TimeoutPhase::Total,
        after: limit,
    }
}

/// The error of a child lost while it ran (its pipes or its exit status unreadable).
pub(crate) fn lost(inv: &Invocation, e: &std::io::Error) -> Error {
    Error::Transport {
        backend: inv.backend.clone(),
        message: format!("lost `{}` while it ran: {e}", inv.program.display()),
    }
}

/// Runs `inv` with `cwd` as working directory and collects its whole output.
pub async fn run(inv: &Invocation, cwd: &Path) -> Result<Finished> {
    let child = spawn(inv, cwd)?;
    let waited = child.wait_with_output();
    let output = match inv.timeout {
        Some(limit) => match tokio::time::timeout(limit, waited).await {
            Ok(out) => out,
            // The future owned the child: dropping it killed the process.
            Err(_) => return Err(timed_out(inv, limit)),
        },
        None => waited.await,
    }
    .map_err(|e| lost(inv, &e))?;
    // Every key the process holds, out of what the program wrote (the records, errors
    // and replies made from it).
    let clean = |bytes: Vec<u8>| match crate::internal::redact::redact_bytes(&bytes) {
        std::borrow::Cow::Borrowed(_) => bytes,
        std::borrow::Cow::Owned(clean) => clean,
    };
    Ok(Finished {
        code: output.status.code(),
        stdout: clean(output.stdout),
        stderr: clean(output.stderr),
    })
}

/// Finds `program` the way a shell would: a path when it holds a `/`, else the first
/// executable file of that name in the directories of `path_var`.
pub fn find_program(program: &str, path_var: Option<&str>) -> Option<PathBuf> {
    if program.contains(std::path::MAIN_SEPARATOR) || program.contains('/') {
        let p = PathBuf::from(program);
        return is_executable(&p).then_some(p);
    }
    let path_var = path_var?;
    std::env::split_paths(path_var)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}
