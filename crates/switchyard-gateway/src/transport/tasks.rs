//! The listener's tasks — one per connection, and one per HTTP/2 stream (hyper runs each
//! stream's request on a task of its own, through [`TaskExecutor`]) — counted, so the
//! drain can wait for them, and abortable all at once when the drain deadline passes:
//! an aborted task drops its request's future and response body, and with them the
//! call's meter, which records the call.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::runtime::Handle;
use tokio::sync::{watch, Notify};

/// Every task the listener started and has not seen end.
pub(crate) struct Tasks {
    live: AtomicUsize,
    emptied: Notify,
    abort: watch::Sender<bool>,
}

impl Tasks {
    /// No tasks yet.
    pub(crate) fn new() -> Arc<Tasks> {
        Arc::new(Tasks {
            live: AtomicUsize::new(0),
            emptied: Notify::new(),
            abort: watch::channel(false).0,
        })
    }

    /// Runs `task` until it ends or [`Tasks::abort`] is called, on the current runtime.
    pub(crate) fn spawn<F>(self: &Arc<Self>, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.spawn_on(&Handle::current(), task);
    }

    /// [`Tasks::spawn`] on the runtime of `runtime`.
    pub(crate) fn spawn_on<F>(self: &Arc<Self>, runtime: &Handle, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        self.live.fetch_add(1, Ordering::AcqRel);
        let live = Live(self.clone());
        let mut abort = self.abort.subscribe();
        runtime.spawn(async move {
            // Dropped last, after the task's future: whatever it held is gone by then.
            let _live = live;
            tokio::select! {
                biased;
                _ = task => {}
                _ = abort.wait_for(|a| *a) => {}
            }
        });
    }

    /// Tasks running.
    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Acquire)
    }

    /// Returns once no task is running.
    pub(crate) async fn all_done(&self) {
        loop {
            // Made before the check, so an end between the check and the wait is not missed.
            let emptied = self.emptied.notified();
            if self.live() == 0 {
                return;
            }
            emptied.await;
        }
    }

    /// Stops every task: each drops its future at its next poll.
    pub(crate) fn abort(&self) {
        self.abort.send_replace(true);
    }
}

struct Live(Arc<Tasks>);

impl Drop for Live {
    fn drop(&mut self) {
        if self.0.live.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.emptied.notify_waiters();
        }
    }
}

/// hyper's executor for HTTP/2 streams: each stream's task is one of the [`Tasks`].
#[derive(Clone)]
pub(crate) struct TaskExecutor(pub Arc<Tasks>);

impl<F> hyper::rt::Executor<F> for TaskExecutor
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    fn execute(&self, task: F) {
        self.0.spawn(async move {
            let _ = task.await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn aborted_tasks_are_dropped_before_all_done_returns() {
        let tasks = Tasks::new();
        let (tx, mut rx) = tokio::sync::mpsc::channel::<()>(4);
        for _ in 0..3 {
            let tx = tx.clone();
            tasks.spawn(async move {
                let _held = tx;
                std::future::pending::<()>().await;
            });
        }
        drop(tx);
        tasks.spawn(async {});
        assert!(
            tokio::time::timeout(Duration::from_millis(50), tasks.all_done())
                .await
                .is_err(),
            "pending tasks counted as done"
        );
        tasks.abort();
        tasks.all_done().await;
        assert_eq!(tasks.live(), 0);
        // Every sender the tasks held is gone.
        assert_eq!(rx.recv().await, None);
    }
}
