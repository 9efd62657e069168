//! The push and pull protocols, whole, for any front end: what the CLI's `snap push` and
//! `snap pull` (and an expunge's push) run, over a store the caller opens for one step at
//! a time ([`Local`]), so that the store's lock is held while planning and committing and
//! never while objects cross the network (hook saves do not wait for it).
//!
//! A push: the remote's state is read; with `--repair` its damaged packs are deleted first;
//! the plan is made under the store (only what the remote lacks); then it is uploaded. A
//! pull: the plan is made under the store (other workspaces' snapshots this store has
//! neither made nor pulled, refusing expunged ones); the packs and records are downloaded
//! into the store's staging directory; the store takes them in one commit.

use std::path::PathBuf;

use snap_store::{ObjectId, Staging, Store, StoreError};

use crate::backend::{Reach, Remote};
use crate::error::RemoteError;
use crate::fetch::{download_pull, plan_pull};
use crate::push::{PushReport, plan_push, upload};
use crate::repair::{drop_damaged, plan_repair};
use crate::state::RemoteState;

/// The store a protocol works with, opened by the caller for each step and closed after it.
pub trait Local {
    /// What opening the store can fail with; a protocol's own errors convert into it.
    type Error: From<RemoteError> + From<StoreError>;

    /// Runs `step` with the store open for reading.
    fn reading<T>(
        &self,
        step: impl FnOnce(&Store) -> Result<T, RemoteError>,
    ) -> Result<T, Self::Error>;

    /// Runs `step` with the store open for writing (a pull's commit).
    fn writing<T>(
        &self,
        step: impl FnOnce(&Store) -> Result<T, StoreError>,
    ) -> Result<T, Self::Error>;
}

/// What a protocol tells its caller while it runs (a progress bar, a line of stderr).
pub trait Heard {
    /// A damaged pack was deleted; what it held is sent again.
    fn repairing(&self, _pack: &ObjectId) {}
    /// The transfer begins: `total` bytes to move.
    fn started(&self, _total: u64) {}
    /// `done` bytes of them have moved.
    fn moved(&self, _done: u64) {}
}

/// What a push sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushMode {
    /// What the remote lacks, as its listing and indexes say.
    Missing,
    /// First every pack is read and hashed; a damaged one is deleted and what it held is
    /// sent again (`--repair`).
    Repair,
}

/// What [`push`] did.
#[derive(Debug)]
pub struct Pushed {
    /// Objects and records planned, and the objects' bytes as stored here.
    pub objects: usize,
    /// Snapshot records planned.
    pub records: usize,
    /// The planned objects' bytes as this store holds them.
    pub local_bytes: u64,
    /// Damaged packs deleted (`--repair`).
    pub repaired: Vec<ObjectId>,
    /// What the upload did.
    pub report: PushReport,
}

/// Pushes the store's history, as `workspace`, to `remote`. Only `snap push` itself may
/// make a new remote (`reach`); an expunge's push never does.
pub fn push<L: Local>(
    local: &L,
    remote: &dyn Remote,
    workspace: &str,
    mode: PushMode,
    reach: Reach,
    heard: &dyn Heard,
) -> Result<Pushed, L::Error> {
    let mut state = match reach {
        Reach::Create => RemoteState::read(remote)?,
        Reach::Existing => RemoteState::read_existing(remote)?,
    };
    let repaired = match mode {
        PushMode::Repair => drop_damaged(remote, &mut state)?,
        PushMode::Missing => Vec::new(),
    };
    for pack in &repaired {
        heard.repairing(pack);
    }
    let newest = state.read_ref(remote, workspace)?;
    let (plan, staging) = local.reading(|store| {
        store.sweep_staging()?;
        let plan = match repaired.is_empty() {
            true => plan_push(store, &state, workspace, newest.as_ref())?,
            false => plan_repair(store, &state, workspace, newest.as_ref())?,
        };
        Ok((plan, store.staging(Staging::Push)))
    })?;
    let (objects, records, local_bytes) = (plan.objects(), plan.records(), plan.frame_bytes());
    heard.started(local_bytes);
    let report = upload(remote, plan, &state, &staging, &|done| heard.moved(done))?;
    Ok(Pushed {
        objects,
        records,
        local_bytes,
        repaired,
        report,
    })
}

/// What [`pull`] did.
#[derive(Debug, Default)]
pub struct PulledFrom {
    /// Snapshots taken.
    pub pulled: usize,
    /// Bytes downloaded.
    pub bytes: u64,
    /// Packs taken.
    pub packs: usize,
    /// Snapshots refused because an expunge renamed their ids away.
    pub refused: usize,
}

/// Pulls the other workspaces' snapshots (all but `own`) from `remote` into the store, as
/// pulled from `name`: never HEAD, never a working tree.
pub fn pull<L: Local>(
    local: &L,
    remote: &dyn Remote,
    name: &str,
    own: &str,
    heard: &dyn Heard,
) -> Result<PulledFrom, L::Error> {
    let state = RemoteState::read_existing(remote)?;
    let (plan, staging) = local.reading(|store| {
        store.sweep_staging()?;
        let plan = plan_pull(remote, &state, store, own)?;
        Ok((plan, store.staging(Staging::Pull)))
    })?;
    let mut done = PulledFrom {
        refused: plan.refused.len(),
        ..PulledFrom::default()
    };
    if plan.snapshots.is_empty() {
        return Ok(done);
    }
    let total = (plan.packs.iter())
        .filter_map(|p| state.pack_files.get(p))
        .sum();
    heard.started(total);
    let progress = |moved| heard.moved(moved);
    let fetched = download_pull(remote, &plan, name, &staging, &mut done.bytes, &progress);
    let taken = match fetched {
        Ok(incoming) => local.writing(|store| store.take_incoming(incoming)),
        Err(e) => Err(L::Error::from(e)),
    };
    remove_staging(&staging);
    let taken = taken?;
    done.pulled = taken.pulled;
    done.packs = taken.packs;
    done.refused += taken.refused;
    Ok(done)
}

/// Removes a transfer's staging directory; one left behind is swept by the next transfer.
fn remove_staging(staging: &PathBuf) {
    let _ = std::fs::remove_dir_all(staging);
}
