//! Running a CLI agent once with its standard output read as the program writes it: the
//! same isolated run as `process::run`, handed out chunk by chunk,
//! then how the program ended.

use super::process::{self, Finished, Invocation, Scratch};
use crate::error::Result;
use bytes::Bytes;
use futures::stream::BoxStream;
use futures::StreamExt;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, ChildStdout};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The most read from standard output at once.
const READ_SIZE: usize = 64 * 1024;

/// What a running program gives, in order.
#[derive(Debug)]
pub enum Output {
    /// Bytes of standard output, as written.
    Stdout(Bytes),
    /// The program exited; `stdout` is empty (it was all handed out before).
    Exited(Finished),
}

/// Output of one run: standard output as it comes, then [`Output::Exited`]; past the
/// invocation's timeout, a `Timeout` error (and the child killed). Dropping the stream
/// kills the child and removes `scratch`, whose `work/` directory the program runs in.
pub fn stream(inv: &Invocation, scratch: Scratch) -> Result<BoxStream<'static, Result<Output>>> {
    let mut child = process::spawn(inv, &scratch.work())?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take().map(|e| tokio::spawn(read_all(e)));
    let running = Running {
        inv: inv.clone(),
        deadline: inv.timeout.map(|t| Instant::now() + t),
        child,
        stdout,
        stderr,
        _scratch: scratch,
        done: false,
        redactor: crate::internal::redact::StreamRedactor::new(),
    };
    Ok(futures::stream::unfold(running, |mut running| async move {
        let item = running.next().await?;
        Some((item, running))
    })
    .boxed())
}

struct Running {
    inv: Invocation,
    deadline: Option<Instant>,
    child: Child,
    stdout: Option<ChildStdout>,
    stderr: Option<JoinHandle<Vec<u8>>>,
    /// Kept until the stream is dropped: the program's working directory.
    _scratch: Scratch,
    done: bool,
    /// Every key the process holds, out of the output as it is read (a program that
    /// prints its key in an error, say).
    redactor: crate::internal::redact::StreamRedactor,
}

impl Running {
    async fn next(&mut self) -> Option<Result<Output>> {
        if self.done {
            return None;
        }
        let item = self.step().await;
        if !matches!(item, Ok(Output::Stdout(_))) {
            self.done = true;
            if item.is_err() {
                // A timeout or a lost pipe: the child is not left running while the
                // caller still holds the stream.
                let _ = self.child.start_kill();
            }
        }
        Some(item)
    }

    async fn step(&mut self) -> Result<Output> {
        while let Some(stdout) = &mut self.stdout {
            let mut buf = vec![0u8; READ_SIZE];
            let n = within(self.deadline, &self.inv, stdout.read(&mut buf))
                .await?
                .map_err(|e| process::lost(&self.inv, &e))?;
            let out = if n > 0 {
                buf.truncate(n);
                self.redactor.push(Bytes::from(buf))
            } else {
                self.stdout = None;
                self.redactor.finish()
            };
            if !out.is_empty() {
                return Ok(Output::Stdout(out));
            }
        }
        let status = within(self.deadline, &self.inv, self.child.wait())
            .await?
            .map_err(|e| process::lost(&self.inv, &e))?;
        let stderr = match self.stderr.take() {
            Some(task) => within(self.deadline, &self.inv, task)
                .await?
                .unwrap_or_default(),
            None => Vec::new(),
        };
        Ok(Output::Exited(Finished {
            code: status.code(),
            stdout: Vec::new(),
            stderr: crate::internal::redact::redact_bytes(&stderr).into_owned(),
        }))
    }
}

/// `fut`, or the run's `Timeout` error once its deadline passes.
async fn within<F: std::future::Future>(
    deadline: Option<Instant>,
    inv: &Invocation,
    fut: F,
) -> Result<F::Output> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at, fut)
            .await
            .map_err(|_| process::timed_out(inv, inv.timeout.unwrap_or_default())),
        None => Ok(fut.await),
    }
}

async fn read_all(mut pipe: impl AsyncRead + Unpin) -> Vec<u8> {
    let mut out = Vec::new();
    // What was read before a broken pipe is still the program's standard error.
    let _ = pipe.read_to_end(&mut out).await;
    out
}
