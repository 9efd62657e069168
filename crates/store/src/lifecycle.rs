//! Store lifecycle: retention (prune), mark-and-sweep garbage collection with repacking,
//! store statistics, and deleting every snapshot. Which pack files the catalog does not
//! name, and whether they may hold history, is [`crate::orphans`]'s.
//!
//! Every command holds the store lock for its whole run, so gc never races a save: a pack
//! that a save sealed is named in the catalog before that save releases the lock, and a pack
//! a crashed save left unnamed is garbage. gc writes new packs, commits the catalog, and only
//! then deletes old pack files, so a crash at any point loses nothing committed.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use crate::catalog::{Commit, HistoryState, Location, Locations};
use crate::delta::{DELTA_HEADER_LEN, DeltaHeader};
use crate::orphans::Orphan;
use crate::pack::{
    EncodedObject, FOOTER_LEN, FRAME_HEADER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, PackReader,
    pack_file_name,
};
use crate::{ChunkList, EntryKind, ObjectId, ObjectKind, SnapshotRecord, Store, StoreError};

/// A pack whose live bytes fall below this share of its size is rewritten by gc.
pub const REPACK_LIVE_SHARE: f64 = 0.5;
/// Packs under this size are small: each save seals its own, so gc merges them...
pub const SMALL_PACK: u64 = 4 << 20;
/// ...once there are more than this many.
pub const MAX_SMALL_PACKS: usize = 16;

/// Which snapshots prune keeps (HEAD, the undo chain and the redo stack are always kept).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// Keep the newest N snapshots.
    pub keep_last: u64,
    /// Keep every snapshot younger than this many nanoseconds.
    pub keep_within_ns: Option<i64>,
}

/// What prune removed (or would remove).
#[derive(Clone, Debug, Default)]
pub struct PruneReport {
    /// Snapshots dropped from the catalog (or that would be, in a dry run), oldest first.
    pub removed: Vec<(ObjectId, SnapshotRecord)>,
    /// Snapshots left in the catalog.
    pub kept: usize,
}

/// What gc did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    /// Size of the catalogued pack files before gc.
    pub bytes_before: u64,
    /// Size of the catalogued pack files after gc.
    pub bytes_after: u64,
    /// Packs with no live object, deleted whole.
    pub packs_deleted: usize,
    /// Sparse or small packs whose live objects were copied out before deletion.
    pub packs_repacked: usize,
    /// Dead objects dropped from the catalog.
    pub objects_removed: usize,
    /// Pack files the catalog does not name, deleted: left by a crash before a commit, or
    /// dropped by a commit of a gc or merge that stopped before deleting them.
    pub orphan_packs_deleted: usize,
    /// Pack files the catalog does not name that were kept, as they may hold history: those
    /// that do not read or are older than the catalog (unless a commit dropped them), and
    /// every one while the catalog names no pack, or a pack it names is missing, or one of
    /// them does not read or holds a snapshot the catalog lacks (see `delete_orphan_packs`).
    pub orphan_packs_kept: Vec<PathBuf>,
    /// Leftover files swept from `tmp/`.
    pub tmp_files_removed: usize,
    /// True when gc dropped nothing the catalog names, because packs it does not name may
    /// hold history it lacks: what the catalog calls dead may be that history's (see
    /// [`Store::history_may_be_outside`]). `snap repair` takes the history back.
    pub held_back: bool,
}

/// Sizes, for `snap log --stats`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Snapshot records in the catalog.
    pub snapshots: u64,
    /// Packs the catalog names.
    pub packs: usize,
    /// Total size of those pack files.
    pub pack_bytes: u64,
    /// Size of `catalog.redb`.
    pub catalog_bytes: u64,
    /// Bytes gc would give back now.
    pub reclaimable_bytes: u64,
}

/// gc's decision for the current catalog.
#[derive(Debug, Default)]
struct GcPlan {
    /// Packs with no live object: dropped whole.
    dead: Vec<ObjectId>,
    /// Packs mostly dead: their live objects are copied, then they are dropped.
    sparse: Vec<ObjectId>,
    /// Catalogued objects that live in dead or sparse packs and are not live.
    dead_objects: Vec<ObjectId>,
    /// Live objects in sparse packs, with where they are now.
    to_copy: Vec<Location>,
    /// Every object a snapshot needs.
    live: HashSet<ObjectId>,
    reclaimable: u64,
    pack_bytes: u64,
    /// The catalog named no pack as gc began (a lost catalog looks like that).
    catalog_lost: bool,
    /// History may be outside the catalog: nothing it names is dropped.
    held_back: bool,
}

impl Store {
    /// Drops snapshots outside `policy` from the catalog (their objects go at the next gc).
    pub fn prune(
        &self,
        policy: &Retention,
        now_ns: i64,
        dry_run: bool,
    ) -> Result<PruneReport, StoreError> {
        let all = self.snapshots()?;
        let keep = kept_snapshots(&all, &self.history()?, policy, now_ns);
        let removed: Vec<_> = all
            .iter()
            .filter(|(id, _)| !keep.contains(id))
            .cloned()
            .collect();
        if !dry_run && !removed.is_empty() {
            let remove_snapshots = removed.iter().map(|(id, _)| *id).collect();
            self.commit(&Commit {
                remove_snapshots,
                ..Commit::default()
            })?;
        }
        Ok(PruneReport {
            kept: all.len() - removed.len(),
            removed,
        })
    }

    /// False when [`Store::prune`] with `policy` would drop nothing now, answered from a count
    /// and the oldest snapshot instead of every record: a save asks this after each commit
    /// once the store is past its threshold, and an agent's week of saves is all inside
    /// `keep_within`. True means prune may drop something (HEAD or the redo stack may still
    /// hold it). Assumes times grow with sequence numbers; a clock set back only delays
    /// automatic pruning until the oldest snapshot leaves the window (never drops more).
    pub fn prune_due(&self, policy: &Retention, now_ns: i64) -> Result<bool, StoreError> {
        if self.snapshot_count()? <= policy.keep_last {
            return Ok(false);
        }
        let Some(within) = policy.keep_within_ns else {
            return Ok(true);
        };
        let cutoff = now_ns.saturating_sub(within);
        Ok(self
            .catalog
            .oldest_snapshot()?
            .is_some_and(|oldest| oldest.time_ns < cutoff))
    }

    /// Every object reachable from the catalog's snapshots: the snapshot objects, their trees,
    /// chunk lists and chunks. Fails if a reachable tree or chunk list cannot be read, since
    /// deleting on an incomplete mark would lose data.
    pub(crate) fn live_objects(
        &self,
        locations: &Locations,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        // At most every catalogued object (and the few missing ones a tree names), reserved
        // at once: grown by doubling, the set held its old and new tables together.
        let mut live = HashSet::with_capacity(locations.len());
        let mut trees = Vec::new();
        for (id, record) in self.snapshots()? {
            live.insert(id);
            if live.insert(record.root) {
                trees.push(record.root);
            }
        }
        while let Some(tree) = trees.pop() {
            for entry in self.read_tree(&tree)?.entries {
                if !live.insert(entry.id) {
                    continue;
                }
                match entry.kind {
                    EntryKind::Dir => trees.push(entry.id),
                    EntryKind::Symlink => {}
                    EntryKind::File | EntryKind::Executable => {
                        self.mark_chunks(&entry.id, locations, &mut live)?
                    }
                }
            }
        }
        self.mark_bases(locations, &mut live)?;
        Ok(live)
    }

    /// Adds the base of every live object stored as a delta, and theirs in turn, and the block
    /// of every live slice: an object no snapshot names stays while a live object needs it.
    fn mark_bases(
        &self,
        locations: &Locations,
        live: &mut HashSet<ObjectId>,
    ) -> Result<(), StoreError> {
        let with_base =
            |id: &ObjectId| locations.get(id).filter(|l| l.frame.compression.has_base());
        // One pass over the locations marks the bases of what was live before it; only the
        // bases it makes live wait in `pending`, not every live slice (at a million files
        // listing them all first was a large share of gc's peak).
        let mut pending: Vec<Location> = Vec::new();
        for loc in locations.iter() {
            if loc.frame.compression.has_base() && live.contains(&loc.frame.id) {
                pending.push(loc);
            }
            while let Some(loc) = pending.pop() {
                let base = self.base_of(&loc)?;
                if live.insert(base) {
                    pending.extend(with_base(&base));
                }
            }
        }
        Ok(())
    }

    /// The bases, and theirs in turn, of the dead delta and slice frames in packs gc keeps
    /// whole. Those frames stay catalogued (a later save may name them again), so their bases
    /// must stay readable too: a block dropped from under a dead slice would leave a frame
    /// that verify, repair and any reuse find broken. The pinned bases are copied out of the
    /// packs gc drops, and go once the frames naming them do.
    fn bases_in_kept_packs(
        &self,
        locations: &Locations,
        live: &HashSet<ObjectId>,
        dropped: &HashSet<ObjectId>,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        let mut pinned = HashSet::new();
        let kept_dead_with_base = locations.iter().filter(|l| {
            l.frame.compression.has_base()
                && !dropped.contains(&l.pack)
                && !live.contains(&l.frame.id)
        });
        for mut loc in kept_dead_with_base {
            loop {
                let base = self.base_of(&loc)?;
                // A live base has its own bases marked live already.
                if live.contains(&base) || !pinned.insert(base) {
                    break;
                }
                match locations.get(&base) {
                    Some(next) if next.frame.compression.has_base() => loc = next,
                    _ => break,
                }
            }
        }
        Ok(pinned)
    }

    /// The object `loc`'s delta or slice frame names as its base.
    fn base_of(&self, loc: &Location) -> Result<ObjectId, StoreError> {
        let payload = (self.reader(&loc.pack)?)
            .read_at(loc.frame.offset + FRAME_HEADER_LEN, DELTA_HEADER_LEN as u64)?;
        let header = DeltaHeader::parse(&payload).map_err(|why| StoreError::CorruptObject {
            id: loc.frame.id,
            why,
        })?;
        Ok(header.base)
    }

    fn mark_chunks(
        &self,
        id: &ObjectId,
        locations: &Locations,
        live: &mut HashSet<ObjectId>,
    ) -> Result<(), StoreError> {
        let loc = locations
            .get(id)
            .ok_or(StoreError::MissingObject { id: *id })?;
        if loc.frame.kind == ObjectKind::ChunkList {
            let list = ChunkList::decode(*id, &self.read_kind(id, ObjectKind::ChunkList)?)?;
            live.extend(list.chunks.iter().map(|c| c.id));
        }
        Ok(())
    }

    /// What gc would do now; with `compact`, every pack holding a dead frame is rewritten,
    /// so that the pack files hold live frames only.
    fn plan_gc(&self, compact: bool) -> Result<GcPlan, StoreError> {
        let locations = self.catalog.locations()?;
        let live = self.live_objects(&locations)?;
        let mut live_bytes: HashMap<ObjectId, u64> = HashMap::new();
        for loc in locations.iter().filter(|l| live.contains(&l.frame.id)) {
            *live_bytes.entry(loc.pack).or_default() +=
                FRAME_HEADER_LEN + u64::from(loc.frame.stored_len);
        }
        let named = self.catalog.packs()?;
        let mut plan = GcPlan {
            catalog_lost: named.is_empty(),
            held_back: self.gc_would_hold_back()?,
            ..GcPlan::default()
        };
        let mut small = Vec::new();
        // Packs chosen for their dead frames, with their size and framed and live bytes.
        let mut chosen: HashMap<ObjectId, (u64, u64, u64)> = HashMap::new();
        for (pack, frames) in named {
            let size = std::fs::metadata(self.pack_path(&pack))
                .map(|m| m.len())
                .unwrap_or(0);
            let alive = live_bytes.get(&pack).copied().unwrap_or(0);
            // Header and trailer are not garbage: compare the live frames with all frames, so a
            // small pack whose frames are all live is never "repacked" into an identical copy.
            let framed = size.saturating_sub(HEADER_LEN + frames * INDEX_ENTRY_LEN + FOOTER_LEN);
            plan.pack_bytes += size;
            if plan.held_back {
                continue;
            }
            // A small pack with any dead frame is rewritten too: copying it is cheap, and the
            // automatic merge mixes a save's first pack with later ones, whose frames prune
            // leaves dead.
            let sparse = alive < framed
                && (compact
                    || size < SMALL_PACK
                    || (alive as f64) < REPACK_LIVE_SHARE * framed as f64);
            if alive == 0 || sparse {
                chosen.insert(pack, (size, framed, alive));
            } else if size < SMALL_PACK {
                small.push(pack);
            }
        }
        let dropped: HashSet<ObjectId> = chosen.keys().copied().collect();
        let pinned = self.bases_in_kept_packs(&locations, &live, &dropped)?;
        let mut pinned_bytes: HashMap<ObjectId, u64> = HashMap::new();
        for loc in locations.iter().filter(|l| pinned.contains(&l.frame.id)) {
            *pinned_bytes.entry(loc.pack).or_default() +=
                FRAME_HEADER_LEN + u64::from(loc.frame.stored_len);
        }
        for (pack, (size, framed, alive)) in chosen {
            let kept = alive + pinned_bytes.get(&pack).copied().unwrap_or(0);
            // Every frame live or a base a kept frame needs: a copy would be the same pack
            // again, at every gc. A small one still counts toward the merge of small packs.
            if kept >= framed {
                if size < SMALL_PACK {
                    small.push(pack);
                }
                continue;
            }
            plan.reclaimable += size - kept.min(size);
            match kept {
                0 => plan.dead.push(pack),
                _ => plan.sparse.push(pack),
            }
        }
        if small.len() > MAX_SMALL_PACKS {
            plan.sparse.extend(small);
        }
        let dropped: HashSet<ObjectId> = plan.dead.iter().chain(&plan.sparse).copied().collect();
        for loc in locations.iter().filter(|l| dropped.contains(&l.pack)) {
            if live.contains(&loc.frame.id) || pinned.contains(&loc.frame.id) {
                plan.to_copy.push(loc);
            } else {
                plan.dead_objects.push(loc.frame.id);
            }
        }
        plan.live = live;
        Ok(plan)
    }

    pub(crate) fn pack_path(&self, pack: &ObjectId) -> std::path::PathBuf {
        self.dir().join("packs").join(pack_file_name(pack))
    }

    /// What the store holds and what gc would give back.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let plan = self.plan_gc(false)?;
        let catalog_bytes = std::fs::metadata(self.dir().join("catalog.redb"))
            .map(|m| m.len())
            .unwrap_or(0);
        Ok(StoreStats {
            snapshots: self.catalog.snapshot_count()?,
            packs: self.catalog.packs()?.len(),
            pack_bytes: plan.pack_bytes,
            catalog_bytes,
            reclaimable_bytes: plan.reclaimable,
        })
    }

    /// Deletes packs with nothing live, rewrites mostly-dead ones, removes pack files no commit
    /// names, and sweeps `tmp/`.
    pub fn gc(&self) -> Result<GcReport, StoreError> {
        self.gc_with_progress(&|_, _| {})
    }

    /// As [`Store::gc`], calling `progress(done, total)` as live objects are copied.
    pub fn gc_with_progress(&self, progress: &dyn Fn(u64, u64)) -> Result<GcReport, StoreError> {
        self.gc_planned(self.plan_gc(false)?, progress)
    }

    /// As [`Store::gc`], also rewriting every pack that holds a dead frame, however few:
    /// afterwards the packs hold only what the snapshots need (retention by size measures
    /// that).
    pub fn gc_compacting(&self) -> Result<GcReport, StoreError> {
        self.gc_planned(self.plan_gc(true)?, &|_, _| {})
    }

    fn gc_planned(
        &self,
        plan: GcPlan,
        progress: &dyn Fn(u64, u64),
    ) -> Result<GcReport, StoreError> {
        let mut report = GcReport {
            bytes_before: plan.pack_bytes,
            ..GcReport::default()
        };
        let writer = self.writer();
        let total = plan.to_copy.len() as u64;
        for (done, loc) in plan.to_copy.iter().enumerate() {
            progress(done as u64 + 1, total);
            let reader = PackReader::open(&self.pack_path(&loc.pack))?;
            let (info, payload) = reader.read_frame(loc.frame.offset, loc.frame.id)?;
            writer.copy(&EncodedObject::stored(info, payload))?;
        }
        let packs = writer.finish()?;
        // A rewritten pack can come out byte for byte equal to one it replaces, and so under
        // the same name: such a pack is kept, never removed from the catalog or deleted.
        let written: HashSet<ObjectId> = packs.iter().map(|(id, _)| *id).collect();
        let remove_packs: Vec<ObjectId> = plan
            .dead
            .iter()
            .chain(&plan.sparse)
            .filter(|p| !written.contains(p))
            .copied()
            .collect();
        // The caches may name objects this gc drops: only rows naming live objects stay (the
        // next save reads the files whose rows went, and builds their trees again).
        let stat_cache = crate::StatCacheUpdate {
            only_live: Some(plan.live),
            ..Default::default()
        };
        self.commit(&Commit {
            packs,
            remove_objects: plan.dead_objects.clone(),
            remove_packs: remove_packs.clone(),
            stat_cache,
            ..Commit::default()
        })?;
        crate::failpoint!("gc-after-commit");
        self.forget_readers();
        for pack in &remove_packs {
            remove_if_present(&self.pack_path(pack))?;
        }
        report.packs_deleted = plan.dead.len();
        report.packs_repacked = plan.sparse.len();
        report.objects_removed = plan.dead_objects.len();
        report.held_back = plan.held_back;
        (report.orphan_packs_deleted, report.orphan_packs_kept) =
            self.delete_orphan_packs(plan.catalog_lost)?;
        report.tmp_files_removed = sweep_dir(&self.dir().join("tmp"))?;
        crate::fsio::sync_dir(&self.dir().join("packs"))?;
        report.bytes_after = self
            .catalog
            .packs()?
            .iter()
            .map(|(p, _)| {
                std::fs::metadata(self.pack_path(p))
                    .map(|m| m.len())
                    .unwrap_or(0)
            })
            .sum();
        Ok(report)
    }

    /// Deletes the pack files the catalog does not name, left by a save or gc that crashed
    /// before its commit (or a gc or merge after it); returns how many, and the orphans
    /// kept. A pack a commit dropped (`meta["dropped"]`) is deleted whatever it holds,
    /// unless another orphan may hold history. Of the others, those that may hold the only
    /// copy of history are kept, and `snap repair` rebuilds the catalog from them:
    /// - a pack whose trailer does not read (repair skips it; only a person can tell what it
    ///   held);
    /// - a pack older than the catalog (written before it was made: a lost catalog's history,
    ///   never a crashed save's);
    /// - every orphan with `catalog_lost` (the catalog named no pack when the command began);
    /// - every orphan, when one does not read or holds a snapshot the catalog does not know,
    ///   or a pack the catalog names is missing.
    ///   That is what a catalog put back from an older copy sees: the newer history is in
    ///   packs it does not name, and the packs sealed before that history's last one hold no
    ///   snapshot but are its trees and chunks. (A save whose commit failed or was killed
    ///   after its last seal looks the same, and its packs are kept too: a repair adopts
    ///   that snapshot.)
    pub(crate) fn delete_orphan_packs(
        &self,
        catalog_lost: bool,
    ) -> Result<(usize, Vec<PathBuf>), StoreError> {
        let (mut gone, orphans) = self.orphans_by_drop()?;
        if self.history_may_be_outside(catalog_lost, &orphans)? {
            // The dropped packs too: the history may be a line that a repair took back and
            // saved on from, reusing what they hold, before this catalog was put back.
            let mut kept: Vec<PathBuf> =
                (gone.into_iter().chain(orphans)).map(|o| o.path).collect();
            kept.sort();
            return Ok((0, kept));
        }
        let mut kept = Vec::new();
        for orphan in orphans {
            if orphan.trailer.is_err() || orphan.before_catalog {
                kept.push(orphan.path);
            } else {
                gone.push(orphan);
            }
        }
        for orphan in &gone {
            remove_if_present(&orphan.path)?;
        }
        kept.sort();
        Ok((gone.len(), kept))
    }

    /// The pack files the catalog does not name: those a commit dropped
    /// (`meta["dropped"]`), and the others.
    pub(crate) fn orphans_by_drop(&self) -> Result<(Vec<Orphan>, Vec<Orphan>), StoreError> {
        let dropped: HashSet<String> = (self.catalog.dropped_packs()?.iter())
            .map(pack_file_name)
            .collect();
        let listed = |o: &Orphan| {
            (o.path.file_name()).is_some_and(|n| dropped.contains(&*n.to_string_lossy()))
        };
        Ok(self.orphan_packs()?.into_iter().partition(listed))
    }

    /// Removes every snapshot and clears HEAD and the redo stack, then collects the garbage.
    pub fn delete_all(&self) -> Result<(usize, GcReport), StoreError> {
        let all = self.snapshots()?;
        let remove_snapshots = all.iter().map(|(id, _)| *id).collect();
        self.commit(&Commit {
            remove_snapshots,
            history: Some(HistoryState::default()),
            ..Commit::default()
        })?;
        Ok((all.len(), self.gc()?))
    }
}

/// HEAD, the redo stack, the newest `keep_last`, those within `keep_within`, and HEAD's
/// ancestors back to the oldest of those, so undo never runs into a hole.
fn kept_snapshots(
    all: &[(ObjectId, SnapshotRecord)],
    history: &HistoryState,
    policy: &Retention,
    now_ns: i64,
) -> HashSet<ObjectId> {
    let mut keep: HashSet<ObjectId> = all
        .iter()
        .rev()
        .take(policy.keep_last as usize)
        .map(|(id, _)| *id)
        .collect();
    if let Some(within) = policy.keep_within_ns {
        keep.extend(
            all.iter()
                .filter(|(_, r)| r.time_ns >= now_ns.saturating_sub(within))
                .map(|(id, _)| *id),
        );
    }
    keep.extend(history.head);
    keep.extend(history.redo.iter().copied());
    let by_id: HashMap<ObjectId, &SnapshotRecord> = all.iter().map(|(id, r)| (*id, r)).collect();
    let oldest = all
        .iter()
        .filter(|(id, _)| keep.contains(id))
        .map(|(_, r)| r.seq)
        .min()
        .unwrap_or(0);
    let mut next = history.head;
    while let Some(record) = next
        .and_then(|id| by_id.get(&id))
        .filter(|r| r.seq >= oldest)
    {
        keep.extend(next);
        next = record.parent;
    }
    keep
}

pub(crate) fn remove_if_present(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}

/// Deletes the packs left half-written in `dir` (tmp/: no writer is active while the lock is
/// held). Only files named as snap names them there: nothing else is snap's to delete.
fn sweep_dir(dir: &Path) -> Result<usize, StoreError> {
    let mut removed = 0;
    for entry in std::fs::read_dir(dir).map_err(|e| StoreError::io(dir, e))? {
        let path = entry.map_err(|e| StoreError::io(dir, e))?.path();
        // Packs being written, and spill files where the filesystem has no O_TMPFILE (named
        // `.tmp*` for the instant before they are unlinked).
        let name = path.file_name().map(|n| n.to_string_lossy());
        let ours = name.is_some_and(|n| n.starts_with(".tmp"));
        if ours && path.is_file() {
            remove_if_present(&path)?;
            removed += 1;
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChangeStats, SnapshotKind};

    fn chain(n: u64) -> Vec<(ObjectId, SnapshotRecord)> {
        let mut out: Vec<(ObjectId, SnapshotRecord)> = Vec::new();
        for seq in 1..=n {
            let record = SnapshotRecord {
                seq,
                root: ObjectId([0; 32]),
                parent: out.last().map(|(id, _)| *id),
                time_ns: seq as i64 * 1_000,
                kind: SnapshotKind::Save,
                message: String::new(),
                step: None,
                session: None,
                meta: Vec::new(),
                stats: ChangeStats::default(),
            };
            out.push((record.id(), record));
        }
        out
    }

    fn seqs(all: &[(ObjectId, SnapshotRecord)], keep: &HashSet<ObjectId>) -> Vec<u64> {
        all.iter()
            .filter(|(id, _)| keep.contains(id))
            .map(|(_, r)| r.seq)
            .collect()
    }

    #[test]
    fn keeps_the_newest_and_the_undo_chain() {
        let all = chain(10);
        let history = HistoryState {
            head: Some(all[9].0),
            redo: Vec::new(),
        };
        let keep = kept_snapshots(
            &all,
            &history,
            &Retention {
                keep_last: 3,
                keep_within_ns: None,
            },
            0,
        );
        assert_eq!(seqs(&all, &keep), vec![8, 9, 10]);
    }

    #[test]
    fn never_drops_head_or_the_redo_stack() {
        let all = chain(10);
        // After `undo 7`: HEAD is #3, the redo stack holds #10..#4.
        let history = HistoryState {
            head: Some(all[2].0),
            redo: all[3..].iter().rev().map(|(id, _)| *id).collect(),
        };
        let keep = kept_snapshots(
            &all,
            &history,
            &Retention {
                keep_last: 1,
                keep_within_ns: None,
            },
            0,
        );
        assert_eq!(seqs(&all, &keep), vec![3, 4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    fn prune_is_due_only_when_a_snapshot_could_go() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let all = chain(10);
        store
            .commit(&Commit {
                snapshots: all.clone(),
                history: Some(HistoryState {
                    head: Some(all[9].0),
                    redo: Vec::new(),
                }),
                ..Commit::default()
            })
            .unwrap();
        let policy = |keep_last, keep_within_ns| Retention {
            keep_last,
            keep_within_ns,
        };
        // #1 is at 1 us: inside a 10 us window at 10.5 us, outside a 2.5 us window at 10 us.
        let cases = [
            (policy(3, Some(10_000)), 10_500, false),
            (policy(3, Some(2_500)), 10_000, true),
            (policy(10, None), 10_000, false),
            (policy(9, None), 10_000, true),
        ];
        for (policy, now, due) in cases {
            assert_eq!(store.prune_due(&policy, now).unwrap(), due, "{policy:?}");
            let removed = store.prune(&policy, now, true).unwrap().removed;
            assert_eq!(!removed.is_empty(), due, "{policy:?}");
        }
    }

    /// A pack holding one chunk, committed: the catalog then names a pack.
    fn commit_chunk(store: &Store, content: &[u8]) {
        let writer = store.writer();
        writer.put(ObjectKind::Chunk, content).unwrap();
        crate::store::tests::commit_writer(store, writer);
    }

    /// Packs written and never committed.
    fn orphan_pack(store: &Store, content: &[u8]) -> PathBuf {
        orphan_pack_of(store, ObjectKind::Chunk, content)
    }

    /// gc deletes a crashed save's pack, but keeps a pack that does not read (it may be the
    /// only copy of history a repair skipped) and, beside it, every other orphan (they may
    /// hold that history's trees and chunks), every orphan when the catalog names no pack as
    /// it begins (a lost catalog looks like that), and a pack older than the catalog.
    #[test]
    fn gc_keeps_the_orphans_that_may_be_history() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let first = orphan_pack(&store, b"a save that crashed before its commit");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_kept, vec![first.clone()]);
        assert!(first.exists(), "the catalog names no pack: kept");
        // (Each gc drops the committed pack, which no snapshot needs.)
        commit_chunk(&store, b"committed");
        let rotten = store
            .dir()
            .join("packs")
            .join(format!("{}.pack", "0".repeat(64)));
        std::fs::write(&rotten, b"SNAPPACK and then nothing a pack has").unwrap();
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 0);
        let mut both = vec![first.clone(), rotten.clone()];
        both.sort();
        assert_eq!(report.orphan_packs_kept, both);
        let problems = store.verify(false).unwrap().problems;
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .what
                .contains("is not in the catalog and does not read")
        );
        std::fs::remove_file(&rotten).unwrap();
        commit_chunk(&store, b"committed again");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 1);
        assert!(
            !first.exists(),
            "a readable orphan is a crashed save's: deleted"
        );
        assert!(report.orphan_packs_kept.is_empty());
        // A readable orphan written before the catalog was made held a lost catalog's history.
        let old = orphan_pack(&store, b"history from before this catalog");
        let then = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1 << 30);
        std::fs::File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(then)
            .unwrap();
        commit_chunk(&store, b"committed a third time");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_kept, vec![old.clone()]);
        assert!(old.exists());
    }

    /// A gc killed after its commit and before it deleted the packs it dropped leaves the
    /// snapshots prune dropped in unnamed packs. The commit recorded those packs, so the
    /// next gc deletes them rather than keep them (and every other orphan) as history.
    #[test]
    fn gc_deletes_the_packs_a_commit_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        commit_chunk(&store, b"kept");
        let pruned = orphan_pack_of(&store, ObjectKind::Snapshot, b"a snapshot prune dropped");
        let id = ObjectId::of(ObjectKind::Snapshot, b"a snapshot prune dropped");
        let name = pruned.file_name().unwrap().to_string_lossy().into_owned();
        let pack = ObjectId::from_hex(name.trim_end_matches(".pack")).unwrap();
        store
            .commit(&Commit {
                remove_packs: vec![pack],
                ..Commit::default()
            })
            .unwrap();
        assert_eq!(store.catalog.dropped_packs().unwrap(), vec![pack]);
        assert!(store.catalog.snapshot(&id).unwrap().is_none());
        // Beside an orphan that may be history, it is kept too: that history may be a line
        // a repair took back and saved on from, reusing what the dropped pack holds.
        let newer = orphan_pack_of(
            &store,
            ObjectKind::Snapshot,
            b"a snapshot the catalog lacks",
        );
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 0, "{report:?}");
        assert_eq!(report.orphan_packs_kept.len(), 2);
        // (That gc dropped the committed pack, which no snapshot needs; a catalog naming no
        // pack would keep every orphan.)
        std::fs::remove_file(&newer).unwrap();
        commit_chunk(&store, b"kept again");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 1, "{report:?}");
        assert!(report.orphan_packs_kept.is_empty());
        assert!(!pruned.exists());
    }

    /// A catalog put back from an older copy may name packs a later merge replaced by one it
    /// does not name: the frames it locates in the missing packs are in that one. gc keeps
    /// every unnamed pack while a named one is missing.
    #[test]
    fn gc_keeps_the_orphans_while_a_named_pack_is_missing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        commit_chunk(&store, b"kept");
        let merged = orphan_pack(&store, b"the merged copy of a pack the catalog names");
        let writer = store.writer();
        writer
            .put(ObjectKind::Chunk, b"named, then merged away")
            .unwrap();
        let packs = writer.finish().unwrap();
        let named = store.pack_path(&packs[0].0);
        store
            .commit(&Commit {
                packs,
                ..Commit::default()
            })
            .unwrap();
        std::fs::remove_file(named).unwrap();
        let report = store.delete_orphan_packs(false).unwrap();
        assert_eq!(report, (0, vec![merged.clone()]));
        assert!(merged.exists());
    }

    /// A pack id is a hash of the pack's bytes: a pack a commit dropped and a later commit
    /// names again (written again byte for byte) holds history, and leaves the list.
    #[test]
    fn a_pack_named_again_is_no_longer_listed_as_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let writer = store.writer();
        writer.put(ObjectKind::Chunk, b"one pack").unwrap();
        let packs = writer.finish().unwrap();
        let pack = packs[0].0;
        let commit = |packs, remove_packs| Commit {
            packs,
            remove_packs,
            ..Commit::default()
        };
        store.commit(&commit(packs.clone(), Vec::new())).unwrap();
        store.commit(&commit(Vec::new(), vec![pack])).unwrap();
        assert_eq!(store.catalog.dropped_packs().unwrap(), vec![pack]);
        store.commit(&commit(packs, Vec::new())).unwrap();
        assert!(store.catalog.dropped_packs().unwrap().is_empty());
    }

    /// A catalog rolled back to an older copy does not name the packs of the history after
    /// it. gc keeps every orphan once one holds a snapshot the catalog lacks: the
    /// others may be that snapshot's trees and chunks, sealed before its last pack.
    #[test]
    fn gc_keeps_orphans_beside_a_snapshot_the_catalog_lacks() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        commit_chunk(&store, b"committed");
        let chunks = orphan_pack_of(&store, ObjectKind::Chunk, b"a newer snapshot's chunk");
        let snapshot = orphan_pack_of(&store, ObjectKind::Snapshot, b"a newer snapshot");
        let report = store.gc().unwrap();
        let mut both = vec![chunks.clone(), snapshot.clone()];
        both.sort();
        assert_eq!(report.orphan_packs_kept, both);
        assert_eq!(report.orphan_packs_deleted, 0);
        assert!(chunks.exists() && snapshot.exists());
        // Once the snapshot is gone, the chunk's pack is a crashed save's leftover again. (That
        // gc dropped the committed pack, which no snapshot needs; a catalog naming no pack
        // would keep every orphan.)
        std::fs::remove_file(&snapshot).unwrap();
        commit_chunk(&store, b"committed again");
        let report = store.gc().unwrap();
        assert_eq!(report.orphan_packs_deleted, 1);
        assert!(report.orphan_packs_kept.is_empty());
        assert!(!chunks.exists());
    }

    /// A dead delta frame in a pack gc keeps whole still names its base (a dead slice its
    /// block, the same way): gc keeps that base, copying it out of a pack it rewrites, so
    /// that nothing catalogued is left unreadable.
    #[test]
    fn gc_keeps_the_base_of_a_dead_frame_in_a_pack_it_keeps() {
        use crate::store::tests::tree;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(&dir.path().join("store")).unwrap();
        let writer = store.writer();
        let base = writer.put(ObjectKind::Tree, &tree(100, 7, 1)).unwrap();
        crate::store::tests::commit_writer(&store, writer);
        // One pack: a dead delta against `base`, and a live snapshot large enough that the
        // pack is neither small nor sparse.
        let writer = store.writer();
        let delta = (writer.put_against(ObjectKind::Tree, &tree(100, 7, 2), Some(base))).unwrap();
        let mut big = vec![0u8; (SMALL_PACK + (1 << 20)) as usize];
        blake3::Hasher::new().finalize_xof().fill(&mut big);
        let chunk = writer.put(ObjectKind::Chunk, &big).unwrap();
        let root = crate::Tree {
            entries: vec![crate::TreeEntry {
                name: b"big".to_vec(),
                kind: EntryKind::File,
                size: big.len() as u64,
                id: chunk,
                mode: Some(0o644),
            }],
        };
        let root = writer.put(ObjectKind::Tree, &root.encode()).unwrap();
        let record = SnapshotRecord {
            root,
            ..chain(1)[0].1.clone()
        };
        let id = writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        let packs = writer.finish().unwrap();
        assert_eq!(packs.len(), 1);
        store
            .commit(&Commit {
                packs,
                snapshots: vec![(id, record)],
                ..Commit::default()
            })
            .unwrap();
        let located = store.catalog.locate(&delta).unwrap().unwrap();
        assert!(located.frame.compression.has_base());
        // The base's pack holds nothing else: kept whole, not copied at every gc.
        for _ in 0..2 {
            let report = store.gc().unwrap();
            assert_eq!((report.packs_deleted, report.packs_repacked), (0, 0));
            let problems = store.verify(true).unwrap().problems;
            assert!(problems.is_empty(), "{problems:?}");
        }
        assert_eq!(store.read(&delta).unwrap().1, tree(100, 7, 2));
    }

    /// A snapshot prune dropped stays in its pack while the pack holds live frames. A repair
    /// of a catalog that still reads leaves it out: that catalog named the pack and no longer
    /// lists the snapshot. Without a catalog, or for a pack the old catalog does not name (a
    /// catalog put back from an older copy), every snapshot found is taken back.
    #[test]
    fn repair_leaves_out_the_snapshots_the_old_catalog_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        let store = Store::init(&path).unwrap();
        let snapshots = chain(3);
        let writer = store.writer();
        for (_, record) in &snapshots[..2] {
            writer.put(ObjectKind::Snapshot, &record.encode()).unwrap();
        }
        let packs = writer.finish().unwrap();
        let commit = |packs, snapshots: &[(ObjectId, SnapshotRecord)], remove| Commit {
            packs,
            snapshots: snapshots.to_vec(),
            remove_snapshots: remove,
            ..Commit::default()
        };
        store
            .commit(&commit(packs, &snapshots[..2], vec![]))
            .unwrap();
        store
            .commit(&commit(vec![], &[], vec![snapshots[0].0]))
            .unwrap();
        // An older copy taken while a command ran (not shut down cleanly), and one taken
        // while none did.
        let catalog = path.join("catalog.redb");
        let unclean = path.join("unclean.redb");
        std::fs::copy(&catalog, &unclean).unwrap();
        drop(store);
        let older = path.join("older.redb");
        std::fs::copy(&catalog, &older).unwrap();
        let store = Store::open(&path).unwrap();
        let writer = store.writer();
        (writer.put(ObjectKind::Snapshot, &snapshots[2].1.encode())).unwrap();
        let packs = writer.finish().unwrap();
        store
            .commit(&commit(packs, &snapshots[2..], vec![]))
            .unwrap();
        drop(store);
        let report = Store::repair(&path).unwrap();
        assert_eq!((report.snapshots, report.snapshots_left_dropped), (2, 1));
        // Put back from the older copy: the third snapshot's pack is unnamed, and taken back.
        for copy in [older, unclean] {
            std::fs::rename(&copy, &catalog).unwrap();
            let report = Store::repair(&path).unwrap();
            assert_eq!((report.snapshots, report.snapshots_left_dropped), (2, 1));
        }
        let leftovers = std::fs::read_dir(path.join("tmp")).unwrap().count();
        assert_eq!(
            leftovers, 0,
            "the unclean catalog was read through a copy, then removed"
        );
        std::fs::remove_file(&catalog).unwrap();
        let report = Store::repair(&path).unwrap();
        assert_eq!((report.snapshots, report.snapshots_left_dropped), (3, 0));
    }

    /// A pack written and never committed, its mtime a second ahead: the filesystem's clock
    /// ticks coarser than the catalog's `created`, and a pack written in the tick the
    /// catalog was made in would be taken for older than it.
    fn orphan_pack_of(store: &Store, kind: ObjectKind, content: &[u8]) -> PathBuf {
        let writer = store.writer();
        writer.put(kind, content).unwrap();
        let packs = writer.finish().unwrap();
        let path = store.pack_path(&packs[0].0);
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1);
        let file = std::fs::File::options().write(true).open(&path).unwrap();
        file.set_modified(later).unwrap();
        path
    }

    #[test]
    fn keep_within_counts_from_now() {
        let all = chain(10);
        let history = HistoryState {
            head: Some(all[9].0),
            redo: Vec::new(),
        };
        let keep = kept_snapshots(
            &all,
            &history,
            &Retention {
                keep_last: 0,
                keep_within_ns: Some(2_500),
            },
            10_000,
        );
        assert_eq!(seqs(&all, &keep), vec![8, 9, 10]);
    }
}
