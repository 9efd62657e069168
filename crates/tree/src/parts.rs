//! `Parts`: what every phase of a workspace borrows (the root, the open store, the config,
//! the observer, the stop flag, the change source), and the few things each phase does with
//! them alone. A phase type ([`crate::capture::Snapshotter`], [`crate::record::Recorder`],
//! [`crate::moves::Mover`], [`crate::history::query::Reader`], [`crate::upkeep::Upkeep`])
//! holds `&Parts` and nothing else; [`crate::Workspace`] owns the one `Parts` of an open
//! workspace and lends it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{SystemTime, UNIX_EPOCH};

use snap_store::{ObjectWriter, Store};

use crate::config::Config;
use crate::error::TreeError;
use crate::observer::{Event, Observer};
use crate::restore::{OpId, WorkTree};
use crate::source::ChangeSource;

/// A working tree with its store open (and locked), and how its work is heard and stopped.
#[derive(Debug)]
pub(crate) struct Parts {
    pub(crate) root: PathBuf,
    pub(crate) store: Store,
    pub(crate) config: Config,
    pub(crate) observer: ObserverSlot,
    /// A stop request moves check between files (see `interrupt`).
    pub(crate) stop: Option<Arc<AtomicBool>>,
    /// What a save may ask instead of walking the whole tree (a watcher).
    pub(crate) source: Option<Arc<dyn ChangeSource>>,
}

/// Holds the observer; exists so that `Parts` can derive `Debug`.
#[derive(Default)]
pub(crate) struct ObserverSlot(pub(crate) Option<Observer>);

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(observer)"
        } else {
            "None"
        })
    }
}

/// Whether a command changes anything, or only reports what it would change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// Carry it out.
    Apply,
    /// Change nothing; report what would change (`--dry-run`).
    DryRun,
}

impl Run {
    /// `DryRun` when `dry_run`, as a command-line flag gives it.
    pub fn dry_run_if(dry_run: bool) -> Run {
        if dry_run { Run::DryRun } else { Run::Apply }
    }
}

impl Parts {
    pub(crate) fn emit(&self, event: Event<'_>) {
        if let Some(observe) = &self.observer.0 {
            observe(&event);
        }
    }

    /// Reports an error to the observer on its way out.
    pub(crate) fn observed<T>(&self, result: Result<T, TreeError>) -> Result<T, TreeError> {
        if let Err(e) = &result {
            self.emit(Event::Error(e));
        }
        result
    }

    /// The working tree as a plan is carried out in it.
    pub(crate) fn work_tree(&self, op: OpId) -> WorkTree<'_> {
        WorkTree {
            root: &self.root,
            store: &self.store,
            max_file_size: self.config.max_file_size,
            stop: self.stop.as_deref(),
            op,
        }
    }

    /// The writer a command stores objects with: one that stores nothing for a dry run.
    pub(crate) fn writer(&self, run: Run) -> ObjectWriter<'_> {
        if run == Run::DryRun {
            self.store.dry_writer()
        } else {
            self.store.writer()
        }
    }
}

/// Nanoseconds since the epoch, as records keep time (0 before it).
pub(crate) fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// `dir` made canonical, the error naming it.
pub(crate) fn canonical(dir: &Path) -> Result<PathBuf, TreeError> {
    dir.canonicalize().map_err(|e| TreeError::io(dir, e))
}
