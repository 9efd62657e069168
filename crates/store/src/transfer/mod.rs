//! Transfer: objects leaving the store for another one, and sealed packs arriving from one.
//!
//! The layer owns what a remote (another crate) needs of a store and nothing of the remote
//! itself: [`outgoing`] finds the objects a set of snapshots reaches that the other side
//! lacks, with the bases their frames are stored against, opens the packs holding them so
//! the frames can be copied verbatim after the store (and its lock) is closed, and writes
//! them into new packs; [`incoming`] checks packs that arrived, moves them into `packs/`
//! and names them, with snapshot records and a history, in one commit. Snapshot records
//! never travel inside packs: a store that takes packs from a remote holding several
//! workspaces' history takes only the records it asks for (docs/FORMAT.md 9).
//! What is in flight is staged in `tmp/push-<pid>`, `tmp/pull-<pid>` or `tmp/clone-<pid>`
//! (`fs/staging.rs`), which the next transfer, gc or purge sweeps once that process is gone.

pub mod incoming;
pub mod outgoing;

pub use incoming::{Incoming, IncomingPurge, IncomingReport};
pub use outgoing::{Outgoing, SealedPack};

use std::path::PathBuf;

pub use crate::fs::staging::Staging;
use crate::{Store, StoreError};

impl Store {
    /// This process's staging directory of `kind` (made by whoever writes into it).
    pub fn staging(&self, kind: Staging) -> PathBuf {
        kind.path(&self.dir().join("tmp"))
    }

    /// Removes the staging directories whose process is gone (a killed push, pull or clone
    /// left them); nothing when this process may only read the store. Returns how many.
    pub fn sweep_staging(&self) -> Result<usize, StoreError> {
        match self.is_read_only() {
            true => Ok(0),
            false => crate::fs::staging::sweep_stale(&self.dir().join("tmp")),
        }
    }
}
