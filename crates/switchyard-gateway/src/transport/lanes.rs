//! The lanes connections are served on: threads of one single-threaded tokio runtime
//! each. An accepted connection goes to the lane serving the fewest connections, the
//! first of them on a tie, and is served there to its end (see
//! `switchyard::internal::lanes` for why). Unless told not to, the lanes are pinned one to
//! a core and the background threads kept off the first lane's
//! (`switchyard::internal::placement`).
//!
//! A lane's runtime stops when [`Lanes`] is dropped, after the listener's drain: by then
//! no connection is left on it, only the idle upstream connections of its pools, which
//! close with it.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use switchyard::internal::lanes;
use switchyard::internal::placement::Placement;
use tokio::runtime::Handle;
use tokio::sync::oneshot;

/// The running lanes.
pub(crate) struct Lanes {
    lanes: Vec<Lane>,
    /// Where they run, when pinned. Dropped with the lanes, after [`Drop`] has joined
    /// their threads: the background threads may then run on the first lane's core again.
    _placement: Option<Arc<Placement>>,
}

struct Lane {
    handle: Handle,
    /// Connections served on it now.
    open: Arc<AtomicUsize>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// A connection's place on its lane, given up when the connection ends.
pub(crate) struct Place(Arc<AtomicUsize>);

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Lanes {
    /// Starts `count` lanes (at least one), each a thread named `switchyard-lane-N`, and
    /// returns once every one of them runs (so a lane never shows up late, unnamed, to
    /// whoever counts the process's threads). With `pin`, each runs on a core of its own
    /// where [`Placement::pin`] finds that safe.
    pub(crate) fn start(count: usize, pin: bool) -> io::Result<Lanes> {
        let placement = if pin {
            Placement::pin().map(Arc::new)
        } else {
            None
        };
        let mut started = Vec::with_capacity(count.max(1));
        let (running, all_running) = std::sync::mpsc::channel::<()>();
        for lane in 0..count.max(1) {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            let handle = runtime.handle().clone();
            let (stop, stopped) = oneshot::channel::<()>();
            let running = running.clone();
            let placement = placement.clone();
            let thread = std::thread::Builder::new()
                .name(format!("switchyard-lane-{lane}"))
                .spawn(move || {
                    lanes::enter(lane);
                    if let Some(placement) = &placement {
                        placement.enter(lane);
                    }
                    let _ = running.send(());
                    drop(running);
                    runtime.block_on(async {
                        let _ = stopped.await;
                    });
                })?;
            started.push(Lane {
                handle,
                open: Arc::default(),
                stop: Some(stop),
                thread: Some(thread),
            });
        }
        drop(running);
        // Each lane's thread sends once; a thread that died before sending has dropped
        // its sender, which ends the wait rather than hanging it.
        for _ in 0..started.len() {
            if all_running.recv().is_err() {
                break;
            }
        }
        Ok(Lanes {
            lanes: started,
            _placement: placement,
        })
    }

    /// Where the next connection goes: the runtime of the lane with the fewest, and its
    /// place there (to drop when the connection ends).
    pub(crate) fn choose(&self) -> (&Handle, Place) {
        let lane = self
            .lanes
            .iter()
            .min_by_key(|l| l.open.load(Ordering::Relaxed))
            .unwrap_or_else(|| unreachable!("a Lanes has at least one lane"));
        lane.open.fetch_add(1, Ordering::Relaxed);
        (&lane.handle, Place(lane.open.clone()))
    }

    /// How many connections each lane serves now.
    #[cfg(test)]
    pub(crate) fn open(&self) -> Vec<usize> {
        self.lanes
            .iter()
            .map(|l| l.open.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        for lane in &mut self.lanes {
            if let Some(stop) = lane.stop.take() {
                let _ = stop.send(());
            }
        }
        for lane in &mut self.lanes {
            if let Some(thread) = lane.thread.take() {
                let _ = thread.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use switchyard::internal::placement;

    /// What `probe` returns on each of the first `n` lanes connections are given (each
    /// place kept: the next goes to the next lane).
    fn on_each_lane<T: Send + 'static>(lanes: &Lanes, n: usize, probe: fn() -> T) -> Vec<T> {
        (0..n)
            .map(|_| {
                let (handle, place) = lanes.choose();
                let (tx, rx) = std::sync::mpsc::channel();
                handle.spawn(async move {
                    let _ = tx.send(probe());
                });
                std::mem::forget(place);
                rx.recv().unwrap()
            })
            .collect()
    }

    #[test]
    fn a_connection_goes_to_the_lane_serving_the_fewest() {
        let lanes = Lanes::start(2, false).unwrap();
        let mut places: Vec<Place> = (0..4).map(|_| lanes.choose().1).collect();
        assert_eq!(lanes.open(), [2, 2]);
        drop(places.remove(0));
        assert_eq!(lanes.open(), [1, 2]);
        let _fifth = lanes.choose();
        assert_eq!(lanes.open(), [2, 2]);
    }

    /// Pinned lanes run on a core each, in order; on a machine where the placement
    /// declines to pin (one core, a CPU quota), they run where they were.
    #[test]
    fn pinned_lanes_run_one_to_a_core() {
        let before = placement::cores_of_this_thread();
        let planned = Placement::pin();
        let lanes = Lanes::start(3, true).unwrap();
        let seen = on_each_lane(&lanes, 3, placement::cores_of_this_thread);
        let expected: Vec<_> = (0..3)
            .map(|lane| match &planned {
                Some(p) => Some(vec![p.core(lane)]),
                None => before.clone(),
            })
            .collect();
        assert_eq!(seen, expected);
    }

    #[test]
    fn a_task_on_a_lane_runs_on_that_lanes_thread() {
        let lanes = Lanes::start(2, false).unwrap();
        let seen = on_each_lane(&lanes, 2, || {
            (
                lanes::current(),
                std::thread::current().name().map(str::to_owned),
            )
        });
        assert_eq!(
            seen,
            [
                (Some(0), Some("switchyard-lane-0".to_owned())),
                (Some(1), Some("switchyard-lane-1".to_owned()))
            ]
        );
        // Dropping the lanes stops their threads (and returns).
        drop(lanes);
    }

    #[test]
    fn zero_lanes_asked_is_one_lane() {
        assert_eq!(Lanes::start(0, false).unwrap().open(), [0]);
    }
}
