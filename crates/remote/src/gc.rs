//! `snap gc --remote`: what no workspace's newest ref reaches leaves the remote, in two
//! phases with a grace period, never under a lock.
//!
//! Kept: each workspace's newest ref; the records those refs name, but for ids listed
//! under `expunged/` (dead whatever a stale ref says: [`live_records`]); every indexed pack
//! holding an object their trees reach, or a base or block the remote copy of such an object
//! is stored against (the index names them, so the remote's own frames decide, not how the
//! local store holds the object now). The reach is computed by the caller from a store that
//! holds every such tree (so after a push and a pull).
//!
//! Everything else is first *marked*: `trash/<key>` is written (create-only) with the time.
//! A later collection deletes a marked object whose mark is older than the grace period and
//! that is still unreached (a pack's index first, so no reader counts it, then the pack),
//! then the mark; a marked object reached again loses its mark. Pushes treat the objects of
//! marked packs as absent, so no push that starts after a mark relies on them; the grace
//! period is what a push that planned before the mark has to finish. Older refs of a
//! workspace go at once: nothing reads them (a push numbers its ref after the newest).

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use snap_store::ObjectId;

use crate::backend::Remote;
use crate::names::Folder;
use crate::state::RemoteState;
use crate::{RemoteError, retry};

/// What stays: the objects the newest refs' trees reach (without bases: those come from the
/// remote's indexes), and the records those refs name.
#[derive(Debug, Default)]
pub struct Live {
    /// Objects reached.
    pub objects: HashSet<ObjectId>,
    /// Snapshot records named.
    pub records: HashSet<ObjectId>,
}

/// What a collection did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Older refs deleted.
    pub refs_deleted: usize,
    /// Packs and records marked now.
    pub marked: usize,
    /// Packs and records deleted (their marks past the grace period).
    pub deleted: usize,
    /// Bytes deleted.
    pub bytes_deleted: u64,
    /// Marked ones reached again, their marks removed.
    pub rescued: usize,
    /// Marked ones still within the grace period.
    pub waiting: usize,
}

/// The records the newest refs name (their snapshots, HEAD and redo: a push writes a HEAD
/// an expunge renamed as its new id, which `snapshots` need not hold) that no expunge
/// renamed away: the ones whose trees a collection's reach starts from.
pub fn live_records(
    remote: &dyn Remote,
    state: &RemoteState,
) -> Result<HashSet<ObjectId>, RemoteError> {
    state.refuse_unreadable()?;
    let mut records = HashSet::new();
    for workspace in state.refs.keys() {
        let Some(doc) = state.read_ref(remote, workspace)? else {
            continue;
        };
        records.extend(state.named_live(&doc));
        let history = doc.head.iter().chain(&doc.redo);
        let ids = history.filter_map(|h| ObjectId::from_hex(h));
        records.extend(ids.filter(|id| !state.is_expunged(id)));
    }
    Ok(records)
}

/// One collection (see the module's documentation); `now_ns` is the time marks are given.
/// The remote's leftovers of killed puts are swept first ([`Remote::sweep_stale`]).
pub fn collect(
    remote: &dyn Remote,
    state: &RemoteState,
    live: &Live,
    grace: Duration,
    now_ns: i64,
) -> Result<GcReport, RemoteError> {
    state.refuse_unreadable()?;
    let mut report = GcReport::default();
    remote.sweep_stale(crate::backend::STALE_TMP_AGE)?;
    delete_old_refs(remote, &mut report)?;
    let marks = read_marks(remote)?;
    let names = &state.names;
    let mut judge = Judge {
        remote,
        marks: &marks,
        grace_ns: i64::try_from(grace.as_nanos()).unwrap_or(i64::MAX),
        now_ns,
        report: &mut report,
    };
    let kept = packs_reached(state, live);
    for (pack, size) in &state.pack_files {
        let key = names.pack(pack);
        let index = names.index(pack);
        judge.judge(&key, !kept.contains(pack), &[&index, &key], *size)?;
    }
    for stray in &state.stray_packs {
        judge.judge(&stray.key, true, &[&stray.key], stray.size)?;
    }
    let live_records: HashSet<String> = live.records.iter().map(|r| names.record(r)).collect();
    let expunged_folder = names.folder(Folder::Expunged);
    let snapshots_folder = names.folder(Folder::Snapshots);
    for key in &state.record_keys {
        let token = key.strip_prefix(&snapshots_folder).unwrap_or(key);
        let expunged = state
            .expunged_keys
            .contains(&format!("{expunged_folder}{token}"));
        judge.judge(key, !live_records.contains(key) || expunged, &[key], 0)?;
    }
    // Marks whose object is gone already (a collection killed after its deletes).
    let present: HashSet<String> = (state.pack_files.keys().map(|p| names.pack(p)))
        .chain(state.stray_packs.iter().map(|s| s.key.clone()))
        .chain(state.record_keys.iter().cloned())
        .collect();
    for key in marks.keys().filter(|k| !present.contains(*k)) {
        retry(|| remote.delete(&names.trash(key)))?;
    }
    Ok(report)
}

/// The indexed packs to keep: for each reached object, and each base the chosen copy of a
/// reached object (or of a base, down each chain) is stored against, the pack of one copy.
/// The copy chosen is one in a present, unmarked pack where there is one, so a pack a
/// repack superseded (marked, its objects sent again, crate::repack) stays unreached and
/// goes after the grace; where every copy is in marked packs, one of those is kept.
fn packs_reached(state: &RemoteState, live: &Live) -> HashSet<ObjectId> {
    let mut copies: HashMap<ObjectId, Vec<PackCopy>> = HashMap::new();
    for (pack, objects) in &state.packs {
        for object in objects {
            let copy = PackCopy {
                pack: *pack,
                base: object.base,
            };
            copies.entry(object.id).or_default().push(copy);
        }
    }
    let worse = |pack: &ObjectId| {
        let absent = !state.pack_files.contains_key(pack);
        (absent, state.marked.contains(&state.names.pack(pack)))
    };
    let mut kept = HashSet::new();
    let mut needed: HashSet<ObjectId> = live.objects.clone();
    let mut pending: Vec<ObjectId> = needed.iter().copied().collect();
    while let Some(id) = pending.pop() {
        let chosen = copies.get(&id).and_then(|list| {
            (list.iter()).min_by_key(|c| (worse(&c.pack), !kept.contains(&c.pack), c.pack))
        });
        let Some(copy) = chosen else { continue };
        kept.insert(copy.pack);
        if let Some(base) = copy.base
            && needed.insert(base)
        {
            pending.push(base);
        }
    }
    kept
}

/// One copy of an object on the remote: the pack holding it, and the base its frame is
/// stored against.
#[derive(Clone, Copy, Debug)]
struct PackCopy {
    pack: ObjectId,
    base: Option<ObjectId>,
}

/// Deletes every ref of a workspace numbered below its newest, as a fresh listing shows it:
/// a ref landed since the state was read is newer, never older, so it stays.
fn delete_old_refs(remote: &dyn Remote, report: &mut GcReport) -> Result<(), RemoteError> {
    let folder = remote.names().folder(Folder::Refs);
    let listed = retry(|| remote.list(&folder))?;
    let parsed: Vec<(&str, &str, u64)> = (listed.iter())
        .filter_map(|l| {
            let (workspace, n) = l.key.strip_prefix(&folder)?.split_once('/')?;
            Some((l.key.as_str(), workspace, n.parse().ok()?))
        })
        .collect();
    let mut newest: HashMap<&str, u64> = HashMap::new();
    for &(_, workspace, n) in &parsed {
        let top = newest.entry(workspace).or_insert(n);
        *top = (*top).max(n);
    }
    for &(key, workspace, n) in &parsed {
        if newest.get(workspace).is_some_and(|top| n < *top) {
            retry(|| remote.delete(key))?;
            report.refs_deleted += 1;
        }
    }
    Ok(())
}

/// Every mark: the key it marks -> when (ns since the epoch; 0 for an unreadable one, which
/// is then past any grace period: a mark is only ever written by a collection).
fn read_marks(remote: &dyn Remote) -> Result<HashMap<String, i64>, RemoteError> {
    let mut out = HashMap::new();
    let trash = remote.names().folder(Folder::Trash);
    for listed in retry(|| remote.list(&trash))? {
        let Some(key) = listed.key.strip_prefix(&trash) else {
            continue;
        };
        // A mark that does not open reads as unreadable: past any grace, like a garbled one.
        let body = match retry(|| remote.get(&listed.key, None)) {
            Err(RemoteError::Corrupt { .. }) => None,
            read => read?,
        };
        let when = body.and_then(|b| String::from_utf8(b).ok()?.trim().parse().ok());
        out.insert(key.to_string(), when.unwrap_or(0));
    }
    Ok(out)
}

/// Whether the object `key` is there (one that does not open is).
fn still_there(remote: &dyn Remote, key: &str) -> Result<bool, RemoteError> {
    match retry(|| remote.get(key, Some(0..1))) {
        Ok(found) => Ok(found.is_some()),
        Err(RemoteError::Corrupt { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

/// The two phases, for one object.
struct Judge<'a> {
    remote: &'a dyn Remote,
    marks: &'a HashMap<String, i64>,
    grace_ns: i64,
    now_ns: i64,
    report: &'a mut GcReport,
}

impl Judge<'_> {
    /// Marks an unreached object, deletes one marked long enough (the keys in `deletes`, in
    /// order, then its mark), or unmarks one reached again.
    fn judge(
        &mut self,
        key: &str,
        unreached: bool,
        deletes: &[&str],
        size: u64,
    ) -> Result<(), RemoteError> {
        let mark = self.remote.names().trash(key);
        match (unreached, self.marks.get(key)) {
            (true, None) => {
                let when = self.now_ns.to_string();
                retry(|| self.remote.put_if_absent(&mark, when.as_bytes()))?;
                self.report.marked += 1;
            }
            (true, Some(&at)) if self.now_ns.saturating_sub(at) >= self.grace_ns => {
                // A push that rebuilt this very pack removed the mark to keep it: look again.
                if !still_there(self.remote, &mark)? {
                    return Ok(());
                }
                for doomed in deletes {
                    retry(|| self.remote.delete(doomed))?;
                }
                retry(|| self.remote.delete(&mark))?;
                self.report.deleted += 1;
                self.report.bytes_deleted += size;
            }
            (true, Some(_)) => self.report.waiting += 1,
            (false, Some(_)) => {
                retry(|| self.remote.delete(&mark))?;
                self.report.rescued += 1;
            }
            (false, None) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::Indexed;

    fn id(n: u8) -> ObjectId {
        ObjectId::of(snap_store::ObjectKind::Chunk, &[n])
    }

    fn indexed(n: u8, base: Option<u8>) -> Indexed {
        Indexed {
            id: id(n),
            base: base.map(id),
        }
    }

    #[test]
    fn a_collection_keeps_one_copy_preferring_unmarked_packs_and_follows_its_base() {
        // A (marked): 1 against 2; B: 1 whole; C: 2 whole.
        let (a, b, c) = (id(200), id(201), id(202));
        let mut state = RemoteState::default();
        for (pack, objects) in [
            (a, vec![indexed(1, Some(2))]),
            (b, vec![indexed(1, None)]),
            (c, vec![indexed(2, None)]),
        ] {
            state.pack_files.insert(pack, 1);
            state.packs.insert(pack, objects);
        }
        state.marked.insert(state.names.pack(&a));
        let live = Live {
            objects: [id(1)].into(),
            records: HashSet::new(),
        };
        assert_eq!(packs_reached(&state, &live), [b].into());
        // With B gone, the marked copy is the one there is: it stays, and its base with it.
        state.packs.remove(&b);
        assert_eq!(packs_reached(&state, &live), [a, c].into());
    }
}
