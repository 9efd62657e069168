//! `push`: the snapshots the remote lacks, and the objects they reach that it lacks, packed
//! anew and uploaded create-only, then the workspace's ref.
//!
//! Planned under the store's lock ([`plan_push`]), carried out after it is released
//! ([`upload`]): the plan holds the pack files it reads open. Uploads go packs, then each
//! pack's index, then records, then the ref, so a killed push leaves only objects nothing
//! reaches, and the next push finds the packs it already sent (packs are built in a fixed
//! order, so a pack sent whole before the kill has the same name again).
//!
//! Expunges travel too: every row of the store's `expunged` table the remote lacks is
//! written as `expunged/<old id>` before the ref, and after the ref the records of every
//! expunged id (this store's or another's) are deleted. No push sends a record the remote
//! lists as expunged, and a ref never names one: `snapshots` and `redo` leave them out, and
//! a HEAD an expunge renamed away is written as the id the remote's `expunged/` objects
//! lead to (none, when they say it was dropped).

use std::collections::HashSet;
use std::path::Path;

use snap_store::{ObjectId, Outgoing, SealedPack, Store};

use crate::backend::{Put, Remote};
use crate::layout::{self, Indexed, RefDoc};
use crate::names::Folder;
use crate::state::RemoteState;
use crate::{RemoteError, retry};

/// Remote packs are sealed once they pass this many bytes (so they are 24-32 MiB but the
/// last): large enough that a push is few requests, small enough to retry one cheaply.
pub const REMOTE_PACK_TARGET: u64 = 24 << 20;

/// Times a push tries its ref again after another push of the workspace took the number.
const REF_ATTEMPTS: u32 = 5;

/// A push planned under the store's lock.
#[derive(Debug)]
pub struct PushPlan {
    outgoing: Outgoing,
    doc: RefDoc,
    /// HEAD, when the remote lists it as expunged: the ref names what it was renamed to,
    /// resolved when the ref is written.
    renamed_head: Option<ObjectId>,
    /// The store's expunged ids the remote does not list yet.
    expunge: Vec<Renamed>,
    /// The keys of records of expunged ids the remote still holds: deleted after the ref.
    doomed: Vec<String>,
    /// True when the remote's newest ref already says what this one would.
    pub up_to_date: bool,
}

/// One row of the store's `expunged` table, as a push records it on the remote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Renamed {
    old: ObjectId,
    new: ObjectId,
}

/// What a push sent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PushReport {
    /// Packs uploaded (those a killed push had sent already are not counted).
    pub packs: usize,
    /// Objects in them.
    pub objects: usize,
    /// Bytes of packs and indexes uploaded.
    pub bytes: u64,
    /// Snapshot records uploaded.
    pub records: usize,
    /// The ref written (`None` when the remote was up to date).
    pub ref_n: Option<u64>,
    /// `expunged/` objects written: this store's expunged ids the remote learnt.
    pub expunged: usize,
    /// Records of expunged ids deleted from the remote.
    pub records_deleted: usize,
}

impl PushPlan {
    /// Objects the push sends.
    pub fn objects(&self) -> usize {
        self.outgoing.objects()
    }

    /// Their bytes as stored locally.
    pub fn frame_bytes(&self) -> u64 {
        self.outgoing.frame_bytes()
    }

    /// Snapshot records the push sends.
    pub fn records(&self) -> usize {
        self.outgoing.records.len()
    }

    /// Expunged ids the push records on the remote.
    pub fn expunged(&self) -> usize {
        self.expunge.len()
    }
}

/// Plans pushing every snapshot of `store` (its whole history, HEAD and redo stack) as
/// `workspace`, against what `state` says the remote holds.
pub fn plan_push(
    store: &Store,
    state: &RemoteState,
    workspace: &str,
    newest: Option<&RefDoc>,
) -> Result<PushPlan, RemoteError> {
    // A record a remote gc marked counts as absent: its snapshot's objects are looked over
    // again and sent where they are not readable there (see `upload_all` for the record).
    let absent =
        |id: &ObjectId| !state.has_record(id) || state.marked.contains(&state.names.record(id));
    // Ids the remote lists as expunged are left out by plan_push_of.
    let send: Vec<ObjectId> = (store.snapshots()?.iter())
        .map(|(id, _)| *id)
        .filter(|id| absent(id))
        .collect();
    plan_push_of(store, state, workspace, newest, &send)
}

/// [`plan_push`] sending the snapshots `send` (less those the remote lists as expunged)
/// and every object they reach that `state` says the remote lacks (crate::repair sends
/// them all).
pub(crate) fn plan_push_of(
    store: &Store,
    state: &RemoteState,
    workspace: &str,
    newest: Option<&RefDoc>,
    send: &[ObjectId],
) -> Result<PushPlan, RemoteError> {
    let live = |id: &ObjectId| !state.is_expunged(id);
    let send: Vec<ObjectId> = send.iter().copied().filter(live).collect();
    let snapshots = store.snapshots()?;
    let history = store.history()?;
    let outgoing = store.outgoing(&send, &|id| state.objects.contains(id))?;
    let renamed_head = history.head.filter(|id| !live(id));
    let doc = RefDoc {
        format: 1,
        workspace: workspace.to_string(),
        n: state.next_ref(workspace),
        head: history.head.filter(live).map(|id| id.to_hex()),
        redo: history
            .redo
            .iter()
            .filter(|id| live(id))
            .map(ObjectId::to_hex)
            .collect(),
        snapshots: (snapshots.iter().map(|(id, _)| *id))
            .filter(live)
            .map(|id| id.to_hex())
            .collect(),
        pushed_ns: now_ns(),
    };
    let ExpungePlan { expunge, doomed } = expunge_plan(store, state)?;
    // Doomed records alone need no new ref: a push killed after its ref left them, and the
    // retry only deletes them (its ref would say what the newest says).
    let up_to_date = send.is_empty()
        && expunge.is_empty()
        && newest.is_some_and(|r| same_history(r, &doc, renamed_head.is_some(), state));
    Ok(PushPlan {
        outgoing,
        doc,
        renamed_head,
        expunge,
        doomed,
        up_to_date,
    })
}

/// True when the newest ref `old` says what `new` would. A HEAD the remote lists as
/// expunged is resolved only when a ref is written: an `old` head that is no expunged id
/// is taken for the one an earlier push resolved.
fn same_history(old: &RefDoc, new: &RefDoc, head_renamed: bool, state: &RemoteState) -> bool {
    let head_same = match head_renamed {
        false => old.head == new.head,
        true => (old.head.as_deref().and_then(ObjectId::from_hex))
            .is_some_and(|h| !state.is_expunged(&h)),
    };
    head_same && old.redo == new.redo && old.snapshots == new.snapshots
}

/// What a push does about expunges.
struct ExpungePlan {
    /// The store's expunged ids the remote does not list.
    expunge: Vec<Renamed>,
    /// The keys of the records of expunged ids (the store's or the remote's) the remote
    /// still holds.
    doomed: Vec<String>,
}

/// See [`ExpungePlan`].
fn expunge_plan(store: &Store, state: &RemoteState) -> Result<ExpungePlan, RemoteError> {
    let renames = store.expunged_renames()?;
    let mut expunge: Vec<Renamed> = (renames.iter())
        .filter(|(old, _)| !state.is_expunged(old))
        .map(|(&old, &new)| Renamed { old, new })
        .collect();
    expunge.sort_by_key(|r| r.old);
    // A record and its expunged mark share the id's token, whatever the layout.
    let names = &state.names;
    let (snapshots, expunged) = (
        names.folder(Folder::Snapshots),
        names.folder(Folder::Expunged),
    );
    let renamed: HashSet<String> = renames.keys().map(|id| names.record(id)).collect();
    let gone = |key: &String| {
        let token = key.strip_prefix(&snapshots).unwrap_or(key);
        renamed.contains(key) || state.expunged_keys.contains(&format!("{expunged}{token}"))
    };
    let mut doomed: Vec<String> = state
        .record_keys
        .iter()
        .filter(|k| gone(k))
        .cloned()
        .collect();
    doomed.sort();
    Ok(ExpungePlan { expunge, doomed })
}

/// Carries out `plan`: packs are written in `staging` (made, then emptied) and uploaded one
/// by one as they are sealed; `progress` hears the bytes uploaded so far. First the remote's
/// leftovers of killed puts are swept ([`Remote::sweep_stale`]).
pub fn upload(
    remote: &dyn Remote,
    plan: PushPlan,
    state: &RemoteState,
    staging: &Path,
    progress: &dyn Fn(u64),
) -> Result<PushReport, RemoteError> {
    let mut report = PushReport::default();
    remote.sweep_stale(crate::backend::STALE_TMP_AGE)?;
    if plan.up_to_date {
        delete_doomed(remote, &plan.doomed, &mut report)?;
        return Ok(report);
    }
    claim_layout(remote)?;
    let done = upload_all(remote, plan, state, staging, progress, &mut report);
    let _ = std::fs::remove_dir_all(staging);
    done?;
    Ok(report)
}

fn upload_all(
    remote: &dyn Remote,
    plan: PushPlan,
    state: &RemoteState,
    staging: &Path,
    progress: &dyn Fn(u64),
    report: &mut PushReport,
) -> Result<(), RemoteError> {
    // Objects this push counts on that a remote gc had marked: their marks go before the
    // ref, and once the ref is in, each is looked for and put again if a collection that
    // read its mark before took it meanwhile.
    let mut reused: Vec<(String, Vec<u8>)> = Vec::new();
    let mut on_sealed = |pack: SealedPack| -> Result<(), RemoteError> {
        let sent = send_pack(remote, state, &pack);
        let reuses = matches!(sent, Ok(Sent::ReusedMarked));
        if reuses {
            let body = std::fs::read(&pack.path).map_err(|e| RemoteError::io(&pack.path, e))?;
            reused.push((state.names.pack(&pack.id), body));
        }
        let _ = std::fs::remove_file(&pack.path);
        snap_store::failpoint!("push-after-pack");
        if sent? == Sent::Uploaded {
            report.packs += 1;
            report.objects += pack.objects.len();
            report.bytes += pack.bytes;
            progress(report.bytes);
        }
        Ok(())
    };
    plan.outgoing
        .write_packs(staging, REMOTE_PACK_TARGET, &mut on_sealed)?;
    for (id, raw) in &plan.outgoing.records {
        let key = state.names.record(id);
        if retry(|| remote.put_if_absent(&key, raw))? == Put::Created {
            report.records += 1;
        } else if state.marked.contains(&key) {
            retry(|| remote.delete(&state.names.trash(&key)))?;
            reused.push((key, raw.clone()));
        }
    }
    for renamed in &plan.expunge {
        let key = state.names.expunged(&renamed.old);
        let body = layout::encode_expunged(Some(&renamed.new));
        if retry(|| remote.put_if_absent(&key, &body))? == Put::Created {
            report.expunged += 1;
        }
    }
    snap_store::failpoint!("push-before-ref");
    let mut doc = plan.doc;
    if let Some(old) = plan.renamed_head {
        doc.head = state.resolve(remote, &old)?.map(|id| id.to_hex());
    }
    report.ref_n = Some(put_ref(remote, doc)?);
    for (key, body) in &reused {
        if retry(|| remote.get(key, Some(0..1)))?.is_none() {
            retry(|| remote.put_if_absent(key, body))?;
        }
    }
    delete_doomed(remote, &plan.doomed, report)
}

/// Deletes the records of expunged ids, after a ref that no longer names them.
fn delete_doomed(
    remote: &dyn Remote,
    doomed: &[String],
    report: &mut PushReport,
) -> Result<(), RemoteError> {
    for key in doomed {
        retry(|| remote.delete(key))?;
        report.records_deleted += 1;
    }
    Ok(())
}

/// What [`send_pack`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Sent {
    /// Uploaded the pack (its index too, or after).
    Uploaded,
    /// The pack was there already, byte for byte (a killed push's); only its index went.
    Reused,
    /// As `Reused`, and a remote gc had marked it: the mark was taken away.
    ReusedMarked,
}

/// Uploads one pack unless a pack of that name (so of those bytes) is there, then its index
/// unless it is indexed.
pub(crate) fn send_pack(
    remote: &dyn Remote,
    state: &RemoteState,
    pack: &SealedPack,
) -> Result<Sent, RemoteError> {
    let key = state.names.pack(&pack.id);
    let sent = if !state.pack_files.contains_key(&pack.id) {
        // The first try takes the buffer; a retry (rare) reads the pack file again.
        let mut first = Some(read_with_room(&pack.path)?);
        retry(|| match first.take() {
            Some(body) => remote.put_owned(&key, body),
            None => remote.put_owned(&key, read_with_room(&pack.path)?),
        })?;
        Sent::Uploaded
    } else if state.marked.contains(&key) {
        retry(|| remote.delete(&state.names.trash(&key)))?;
        Sent::ReusedMarked
    } else {
        Sent::Reused
    };
    if !state.packs.contains_key(&pack.id) {
        let objects: Vec<Indexed> = (pack.objects.iter())
            .map(|&(id, base)| Indexed { id, base })
            .collect();
        let index = layout::encode_index(&pack.id, &objects);
        retry(|| remote.put_if_absent(&state.names.index(&pack.id), &index))?;
    }
    Ok(sent)
}

/// A pack file's bytes, in a buffer with room for a seal's overhead (crate::crypt), so an
/// encrypted remote seals it without a second buffer.
fn read_with_room(path: &Path) -> Result<Vec<u8>, RemoteError> {
    use std::io::Read;
    let mut file = std::fs::File::open(path).map_err(|e| RemoteError::io(path, e))?;
    let len = file.metadata().map_err(|e| RemoteError::io(path, e))?.len();
    let room = usize::try_from(len).unwrap_or(0) + crate::crypt::SEALED_OVERHEAD;
    let mut body = Vec::with_capacity(room);
    file.read_to_end(&mut body)
        .map_err(|e| RemoteError::io(path, e))?;
    Ok(body)
}

/// Writes the layout's version object (of the layout `remote` names objects by), or checks
/// the one there.
pub fn claim_layout(remote: &dyn Remote) -> Result<(), RemoteError> {
    let names = remote.names();
    let body = layout::marker_body(&names);
    if retry(|| remote.put_if_absent(layout::VERSION_KEY, body))? == Put::Created {
        return Ok(());
    }
    match layout::read_marker(remote)? {
        layout::Marker::Plain if !names.sealed() => Ok(()),
        layout::Marker::Sealed if names.sealed() => Ok(()),
        layout::Marker::Plain | layout::Marker::Sealed => Err(RemoteError::Encryption {
            url: remote.describe(),
            why: "a push of the other layout made it meanwhile".into(),
        }),
        // Created by a racing push and deleted since: only a person does that.
        layout::Marker::Absent => Err(RemoteError::Corrupt {
            key: layout::VERSION_KEY.into(),
            why: "the marker vanished while this push ran".into(),
        }),
    }
}

/// Writes the ref create-only under the next free number; returns the number.
fn put_ref(remote: &dyn Remote, mut doc: RefDoc) -> Result<u64, RemoteError> {
    for _ in 0..REF_ATTEMPTS {
        let key = remote.names().ref_key(&doc.workspace, doc.n);
        if retry(|| remote.put_if_absent(&key, &doc.encode()))? == Put::Created {
            return Ok(doc.n);
        }
        // Another push of this workspace took the number (the same store pushed from two
        // places): this ref is the store's whole history as of now, so it goes after theirs.
        let listed = retry(|| remote.list(&remote.names().refs_prefix(&doc.workspace)))?;
        let newest = (listed.iter())
            .filter_map(|l| l.key.rsplit('/').next()?.parse::<u64>().ok())
            .max()
            .unwrap_or(0);
        doc.n = newest + 1;
    }
    Err(RemoteError::Raced {
        workspace: doc.workspace,
    })
}

fn now_ns() -> i64 {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    since.map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}
