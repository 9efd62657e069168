//! Events a harness can observe instead of polling: snapshots created, working trees restored,
//! interrupted operations recovered, errors, and progress of long phases.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::TreeError;
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
}

/// The callback type: called from worker threads too, so it must be `Sync`.
pub type Observer = Box<dyn Fn(&Event<'_>) + Send + Sync>;

/// Counts items of a phase and reports every 64th (and the last) to the observer.
pub(crate) struct Ticker<'a> {
    observer: Option<&'a Observer>,
    phase: Phase,
    total: u64,
    done: AtomicU64,
}

impl<'a> Ticker<'a> {
    pub(crate) fn new(observer: Option<&'a Observer>, phase: Phase, total: u64) -> Ticker<'a> {
        let ticker = Ticker {
            observer,
            phase,
            total,
            done: AtomicU64::new(0),
        };
        ticker.report(0);
        ticker
    }

    pub(crate) fn tick(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        if done % 64 == 0 || done == self.total {
            self.report(done);
        }
    }

    fn report(&self, done: u64) {
        if let Some(observe) = self.observer {
            observe(&Event::Progress {
                phase: self.phase,
                done,
                total: self.total,
            });
        }
    }
}
