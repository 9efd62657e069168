//! `clone` and `pull`: a workspace's history taken from a remote into a store: the packs
//! holding objects the store lacks, downloaded whole and checked, and the records a ref
//! names, committed at once ([`snap_store::Store::take_incoming`]).

use std::path::{Path, PathBuf};

use snap_store::{HistoryState, Incoming, IncomingReport, ObjectId, Store};

use crate::backend::Remote;
use crate::layout::{self, RefDoc};
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
            [] => Err(RemoteError::Empty { url }),
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
    let history = history_of(&doc);
    let mut report = FetchReport {
        workspace: workspace.to_string(),
        ref_n: doc.n,
        ..FetchReport::default()
    };
    std::fs::create_dir_all(staging).map_err(|e| RemoteError::io(staging, e))?;
    let fetched = download(
        remote,
        state,
        &doc,
        store,
        staging,
        &mut report.bytes,
        progress,
    );
    let taken = fetched.and_then(|incoming| {
        Ok(store.take_incoming(Incoming {
            history: Some(history),
            ..incoming
        })?)
    });
    let _ = std::fs::remove_dir_all(staging);
    report.taken = taken?;
    Ok(report)
}

/// Downloads the packs holding objects the store lacks, and the ref's records.
fn download(
    remote: &dyn Remote,
    state: &RemoteState,
    doc: &RefDoc,
    store: &Store,
    staging: &Path,
    bytes: &mut u64,
    progress: &dyn Fn(u64),
) -> Result<Incoming, RemoteError> {
    let mut incoming = Incoming::default();
    for (pack, ids) in &state.packs {
        if !lacks_any(store, ids)? {
            continue;
        }
        let key = layout::pack_key(pack);
        let body = retry(|| remote.get(&key, None))?.ok_or_else(|| missing(&key))?;
        *bytes += body.len() as u64;
        incoming.packs.push(write_staged(staging, pack, &body)?);
        progress(*bytes);
    }
    for id in doc.snapshot_ids() {
        let key = layout::record_key(&id);
        let raw = retry(|| remote.get(&key, None))?.ok_or_else(|| missing(&key))?;
        if ObjectId::of(snap_store::ObjectKind::Snapshot, &raw) != id {
            return Err(RemoteError::Corrupt {
                key,
                why: "its bytes do not hash to its id".into(),
            });
        }
        *bytes += raw.len() as u64;
        incoming.records.push(raw);
    }
    Ok(incoming)
}

fn lacks_any(store: &Store, ids: &[ObjectId]) -> Result<bool, RemoteError> {
    for id in ids {
        if !store.contains(id)? {
            return Ok(true);
        }
    }
    Ok(false)
}

fn write_staged(staging: &Path, pack: &ObjectId, body: &[u8]) -> Result<PathBuf, RemoteError> {
    let path = staging.join(format!("{}.pack", pack.to_hex()));
    std::fs::write(&path, body).map_err(|e| RemoteError::io(&path, e))?;
    std::fs::File::open(&path)
        .and_then(|f| f.sync_all())
        .map_err(|e| RemoteError::io(&path, e))?;
    Ok(path)
}

fn missing(key: &str) -> RemoteError {
    RemoteError::Corrupt {
        key: key.to_string(),
        why: "a ref or index names it, and it is absent".into(),
    }
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
