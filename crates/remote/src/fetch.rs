//! `clone` and `pull`: history taken from a remote into a store: the packs holding objects
//! the store lacks, downloaded whole and checked, and the records the refs name, committed
//! by [`snap_store::Store::take_incoming`]. A clone takes one workspace's history as its
//! own (HEAD and redo too); a pull takes the other workspaces' snapshots apart, as pulled
//! ones (`REMOTE#N`), and never moves HEAD.
//!
//! Neither takes a snapshot whose id the remote lists as expunged (`expunged/`, pushed by
//! the workspace that expunged it) or this store's `expunged` table names: each is refused
//! and counted. A clone takes in its place the snapshot it was renamed to, when the
//! remote holds that record, and moves HEAD and the redo stack the same way.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use snap_store::{
    HistoryState, Incoming, IncomingPurge, IncomingReport, ObjectId, ObjectKind, Pulled,
    SnapshotRecord, Store, WORKSPACE_ID_LEN,
};

use crate::backend::Remote;
use crate::layout::RefDoc;
use crate::state::RemoteState;
use crate::{RemoteError, retry};

/// What a fetch downloaded and took.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FetchReport {
    /// The workspace taken.
    pub workspace: String,
    /// The ref it was taken at.
    pub ref_n: u64,
    /// Bytes downloaded (packs and records).
    pub bytes: u64,
    /// What the store took.
    pub taken: IncomingReport,
}

/// Chooses the workspace to take: `named` (a unique prefix of its id), or the only one.
pub fn choose_workspace(
    remote: &dyn Remote,
    state: &RemoteState,
    named: Option<&str>,
) -> Result<String, RemoteError> {
    let url = remote.describe();
    let ids: Vec<String> = state.refs.keys().cloned().collect();
    match named {
        Some(prefix) => {
            let found: Vec<&String> = ids.iter().filter(|id| id.starts_with(prefix)).collect();
            match found.as_slice() {
                [one] => Ok((*one).clone()),
                [] => Err(RemoteError::NoWorkspace {
                    url,
                    id: prefix.to_string(),
                }),
                _ => Err(RemoteError::WhichWorkspace { url, ids }),
            }
        }
        None => match ids.as_slice() {
            [] => state
                .refuse_unreadable()
                .and(Err(RemoteError::Empty { url })),
            [one] => Ok(one.clone()),
            _ => Err(RemoteError::WhichWorkspace { url, ids }),
        },
    }
}

/// Takes `workspace`'s history, as its newest ref says, into `store`, with HEAD and the redo
/// stack the ref's: what a clone does to its new, empty store. Downloads go to `staging`.
pub fn fetch_workspace(
    remote: &dyn Remote,
    state: &RemoteState,
    workspace: &str,
    store: &Store,
    staging: &Path,
    progress: &dyn Fn(u64),
) -> Result<FetchReport, RemoteError> {
    let doc = state
        .read_ref(remote, workspace)?
        .ok_or_else(|| RemoteError::NoWorkspace {
            url: remote.describe(),
            id: workspace.to_string(),
        })?;
    let mut report = FetchReport {
        workspace: workspace.to_string(),
        ref_n: doc.n,
        ..FetchReport::default()
    };
    let packs = packs_lacking(store, state)?;
    let fetched = (|| {
        let taking = Resolved::of(remote, state, &doc)?;
        let mut incoming = Incoming {
            packs: download_packs(remote, &packs, staging, &mut report.bytes, progress)?,
            history: Some(taking.history),
            purge: purge_of(state),
            ..Incoming::default()
        };
        for id in &taking.snapshots {
            incoming
                .records
                .push(download_record(remote, id, &mut report.bytes)?);
        }
        Ok::<_, RemoteError>((incoming, taking.refused))
    })();
    let taken = fetched.and_then(|(incoming, refused)| {
        let mut taken = store.take_incoming(incoming)?;
        taken.refused += refused;
        Ok(taken)
    });
    let _ = std::fs::remove_dir_all(staging);
    report.taken = taken?;
    Ok(report)
}

/// A ref's history with every id the remote lists as expunged replaced by the id it was
/// renamed to (when the remote holds that record) or left out.
struct Resolved {
    /// The records to take, the ref's order, each once.
    snapshots: Vec<ObjectId>,
    /// HEAD and the redo stack, among them.
    history: HistoryState,
    /// Ids the ref names that the remote lists as expunged.
    refused: usize,
}

impl Resolved {
    fn of(remote: &dyn Remote, state: &RemoteState, doc: &RefDoc) -> Result<Resolved, RemoteError> {
        let mut out = Resolved {
            snapshots: Vec::new(),
            history: HistoryState::default(),
            refused: 0,
        };
        let mut seen = HashSet::new();
        for id in doc.snapshot_ids() {
            let taken = out.take(remote, state, &id)?;
            if let Some(id) = taken.filter(|id| seen.insert(*id)) {
                out.snapshots.push(id);
            }
        }
        // HEAD and redo, each as it is now: a ref a push wrote after the expunge names
        // HEAD's new id, which its `snapshots` need not hold.
        let named = history_of(doc);
        for id in named.head.iter().chain(&named.redo) {
            let now = state.resolve(remote, id)?;
            let held = now.filter(|n| state.has_record(n));
            if let Some(now) = held.filter(|n| seen.insert(*n)) {
                out.snapshots.push(now);
            }
        }
        let now = |id: &ObjectId| state.resolve(remote, id);
        out.history.head = named.head.as_ref().map(now).transpose()?.flatten();
        out.history.head = out.history.head.filter(|h| seen.contains(h));
        for id in &named.redo {
            out.history
                .redo
                .extend(now(id)?.filter(|r| seen.contains(r)));
        }
        Ok(out)
    }

    /// The id to take for `id`: itself, or, when expunged (and counted), what it became.
    fn take(
        &mut self,
        remote: &dyn Remote,
        state: &RemoteState,
        id: &ObjectId,
    ) -> Result<Option<ObjectId>, RemoteError> {
        if !state.is_expunged(id) {
            return Ok(Some(*id));
        }
        self.refused += 1;
        let now = state.resolve(remote, id)?;
        Ok(now.filter(|n| state.has_record(n)))
    }
}

/// What a pull will take, planned while the store is open.
#[derive(Clone, Debug, Default)]
pub struct PullPlan {
    /// Packs holding an object the store lacks.
    pub packs: Vec<ObjectId>,
    /// The snapshots to take, each with the workspace (hex) whose ref names it.
    pub snapshots: Vec<(String, ObjectId)>,
    /// The snapshots refused: an expunge (in this store, or one the remote lists under
    /// `expunged/`) renamed their ids away, so their trees may hold what it took out.
    pub refused: Vec<(String, ObjectId)>,
    /// Whether the store purges the packs it takes: always when the remote lists expunged
    /// ids, since a pack downloaded whole may hold what only their snapshots reached.
    pub purge: IncomingPurge,
}

/// [`IncomingPurge::Always`] when the remote lists expunged ids.
fn purge_of(state: &RemoteState) -> IncomingPurge {
    match state.expunged_keys.is_empty() {
        true => IncomingPurge::IfExpungedHere,
        false => IncomingPurge::Always,
    }
}

/// Plans pulling every snapshot of the remote's other workspaces (all but `own`) that the
/// store has neither made nor pulled, refusing those an expunge renamed away: here (the
/// `expunged` table) or in any workspace that pushed to the remote (`expunged/`).
pub fn plan_pull(
    remote: &dyn Remote,
    state: &RemoteState,
    store: &Store,
    own: &str,
) -> Result<PullPlan, RemoteError> {
    let mut have: HashSet<ObjectId> = store.snapshots()?.into_iter().map(|(id, _)| id).collect();
    have.extend(store.pulled()?.into_iter().map(|p| p.id));
    state.refuse_unreadable()?;
    let expunged = store.expunged_ids()?;
    let mut plan = PullPlan {
        purge: purge_of(state),
        ..PullPlan::default()
    };
    for workspace in state.refs.keys().filter(|w| w.as_str() != own) {
        let Some(doc) = state.read_ref(remote, workspace)? else {
            continue;
        };
        for id in doc.snapshot_ids().into_iter().filter(|id| have.insert(*id)) {
            match expunged.contains(&id) || state.is_expunged(&id) {
                true => plan.refused.push((workspace.clone(), id)),
                false => plan.snapshots.push((workspace.clone(), id)),
            }
        }
    }
    if !plan.snapshots.is_empty() {
        plan.packs = packs_lacking(store, state)?;
    }
    Ok(plan)
}

/// Downloads what `plan` names, into `staging`, as snapshots pulled from `name`; the store
/// takes it with [`Store::take_incoming`] (no store is open meanwhile).
pub fn download_pull(
    remote: &dyn Remote,
    plan: &PullPlan,
    name: &str,
    staging: &Path,
    bytes: &mut u64,
    progress: &dyn Fn(u64),
) -> Result<Incoming, RemoteError> {
    let mut incoming = Incoming {
        packs: download_packs(remote, &plan.packs, staging, bytes, progress)?,
        purge: plan.purge,
        ..Incoming::default()
    };
    for (workspace, id) in &plan.snapshots {
        let raw = download_record(remote, id, bytes)?;
        let key = remote.names().record(id);
        let corrupt = |why: String| RemoteError::Corrupt {
            key: key.clone(),
            why,
        };
        let record = SnapshotRecord::decode(*id, &raw).map_err(|e| corrupt(e.to_string()))?;
        incoming.pulled.push(Pulled {
            id: *id,
            remote: name.to_string(),
            workspace: workspace_bytes(workspace)
                .ok_or_else(|| corrupt("bad workspace id".into()))?,
            record,
        });
    }
    Ok(incoming)
}

/// The indexed packs holding an object the store lacks.
fn packs_lacking(store: &Store, state: &RemoteState) -> Result<Vec<ObjectId>, RemoteError> {
    let mut out = Vec::new();
    for (pack, objects) in &state.packs {
        for object in objects {
            if !store.contains(&object.id)? {
                out.push(*pack);
                break;
            }
        }
    }
    Ok(out)
}

fn download_packs(
    remote: &dyn Remote,
    packs: &[ObjectId],
    staging: &Path,
    bytes: &mut u64,
    progress: &dyn Fn(u64),
) -> Result<Vec<PathBuf>, RemoteError> {
    snap_store::fs::create_private_dir_all(staging)?;
    let mut out = Vec::with_capacity(packs.len());
    let names = remote.names();
    for pack in packs {
        let key = names.pack(pack);
        let body = retry(|| remote.get(&key, None))?.ok_or_else(|| missing(&key))?;
        *bytes += body.len() as u64;
        out.push(write_staged(staging, pack, &body)?);
        progress(*bytes);
    }
    Ok(out)
}

/// A record, checked against its id.
fn download_record(
    remote: &dyn Remote,
    id: &ObjectId,
    bytes: &mut u64,
) -> Result<Vec<u8>, RemoteError> {
    let key = remote.names().record(id);
    let raw = retry(|| remote.get(&key, None))?.ok_or_else(|| missing(&key))?;
    if ObjectId::of(ObjectKind::Snapshot, &raw) != *id {
        return Err(RemoteError::Corrupt {
            key,
            why: "its bytes do not hash to its id".into(),
        });
    }
    *bytes += raw.len() as u64;
    Ok(raw)
}

/// Writes a downloaded pack 0600, as a save writes its own, and syncs it.
fn write_staged(staging: &Path, pack: &ObjectId, body: &[u8]) -> Result<PathBuf, RemoteError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let path = staging.join(format!("{}.pack", pack.to_hex()));
    std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(snap_store::fs::PRIVATE_FILE_MODE)
        .open(&path)
        .and_then(|mut f| f.write_all(body).and_then(|()| f.sync_all()))
        .map_err(|e| RemoteError::io(&path, e))?;
    Ok(path)
}

fn missing(key: &str) -> RemoteError {
    RemoteError::Corrupt {
        key: key.to_string(),
        why: "a ref or index names it, and it is absent".into(),
    }
}

/// 32 hex digits as the 16 bytes of a workspace id.
fn workspace_bytes(hex: &str) -> Option<[u8; WORKSPACE_ID_LEN]> {
    let mut out = [0u8; WORKSPACE_ID_LEN];
    if hex.len() != 2 * WORKSPACE_ID_LEN {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// HEAD and the redo stack a ref names.
fn history_of(doc: &RefDoc) -> HistoryState {
    HistoryState {
        head: doc.head.as_deref().and_then(ObjectId::from_hex),
        redo: doc
            .redo
            .iter()
            .filter_map(|h| ObjectId::from_hex(h))
            .collect(),
    }
}
