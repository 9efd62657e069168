//! Events a harness can observe instead of polling: snapshots created, working trees restored,
//! interrupted operations recovered, errors, and progress of long phases.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::TreeError;
use crate::marker::Op;
use crate::snapshot::{Recovered, Snapshot};

/// A long-running phase that reports progress.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Reading and hashing the working tree (`total` = paths found).
    Scan,
    /// Writing and removing paths of the working tree (`total` = paths to change).
    Restore,
    /// Copying live objects out of sparse packs.
    Gc,
    /// Checking objects.
    Verify,
}

/// Something that happened in a [`crate::Workspace`].
#[derive(Debug)]
pub enum Event<'a> {
    /// A snapshot was committed (saves, automatic saves before undo/redo/restore, restores).
    SnapshotCreated(&'a Snapshot),
    /// The working tree was made to match `head` by an undo, redo or restore.
    Restored {
        /// Undo, redo or restore.
        op: Op,
        /// The snapshot now HEAD.
        head: &'a Snapshot,
        /// Paths written or removed.
        paths_touched: usize,
    },
    /// An interrupted operation was finished (reported when the observer is set).
    Recovered(&'a Recovered),
    /// An operation failed.
    Error(&'a TreeError),
    /// `done` of `total` items of `phase` are through.
    Progress {
        /// The phase reporting.
        phase: Phase,
        /// Items through so far.
        done: u64,
        /// Items the phase will handle.
        total: u64,
    },
    /// A capture finished one of its steps, `elapsed` after it began: for measuring
    /// (`SNAP_TIMING=1` prints these), never needed to use snap.
    Timing {
        /// What was done, with its counts (`tree walked (12 directories read)`).
        step: &'a str,
        /// Time since the capture began.
        elapsed: std::time::Duration,
    },
}

/// The callback type: called from worker threads too, so it must be `Sync`.
pub type Observer = Box<dyn Fn(&Event<'_>) + Send + Sync>;

/// Counts items of a phase and reports every 64th to the observer, and the total when the
/// phase ends (when the ticker is dropped, whether or not every item ticked: a file that
/// vanished or a path that was kept is still through).
///
/// Reports never go backwards, though threads tick at once: a report is made under the lock
/// that holds the last count reported, and only when it is larger.
pub(crate) struct Ticker<'a> {
    observer: Option<&'a Observer>,
    phase: Phase,
    total: u64,
    done: AtomicU64,
    reported: Mutex<Option<u64>>,
}

impl<'a> Ticker<'a> {
    pub(crate) fn new(observer: Option<&'a Observer>, phase: Phase, total: u64) -> Ticker<'a> {
        let ticker = Ticker {
            observer,
            phase,
            total,
            done: AtomicU64::new(0),
            reported: Mutex::new(None),
        };
        ticker.report(0);
        ticker
    }

    pub(crate) fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if done.is_multiple_of(64) || done == self.total {
            self.report(done);
        }
    }

    fn report(&self, done: u64) {
        let Some(observe) = self.observer else {
            return;
        };
        let done = done.min(self.total);
        let mut reported = self.reported.lock().unwrap_or_else(|p| p.into_inner());
        if reported.is_none_or(|last| done > last) {
            *reported = Some(done);
            observe(&Event::Progress {
                phase: self.phase,
                done,
                total: self.total,
            });
        }
    }
}

impl Drop for Ticker<'_> {
    fn drop(&mut self) {
        self.report(self.total);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;

    use super::*;

    /// Ticks from many threads, more or fewer than the total: the reports rise strictly and
    /// the last is the total.
    #[test]
    fn progress_never_goes_backwards_and_ends_at_the_total() {
        for ticks in [0u64, 1000, 5000, 7000] {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let log = Arc::clone(&seen);
            let observer: Observer = Box::new(move |event| {
                if let Event::Progress { done, total, .. } = *event {
                    log.lock().unwrap().push((done, total));
                }
            });
            {
                let ticker = Ticker::new(Some(&observer), Phase::Scan, 5000);
                std::thread::scope(|scope| {
                    for _ in 0..4 {
                        scope.spawn(|| (0..ticks / 4).for_each(|_| ticker.tick()));
                    }
                });
            }
            let seen = seen.lock().unwrap();
            assert!(
                seen.windows(2).all(|w| w[0].0 < w[1].0),
                "{ticks}: {seen:?}"
            );
            assert_eq!(seen.first(), Some(&(0, 5000)));
            assert_eq!(seen.last(), Some(&(5000, 5000)), "{ticks} ticks");
        }
    }
}
