//! Mark-and-sweep garbage collection: what is live (snapshots, trees, chunk lists, chunks and
//! the bases they are stored against), which packs are dead or sparse, the copy of live
//! objects out of sparse packs, and the removal of packs no commit names.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::orphans::Orphan;
use super::{GcReport, MAX_SMALL_PACKS, REPACK_LIVE_SHARE, SMALL_PACK, StoreStats};
use crate::catalog::{Commit, Location, Locations};
use crate::fs::remove_if_present;
use crate::pack::delta::{DELTA_HEADER_LEN, DeltaHeader};
use crate::pack::{
    EncodedObject, FOOTER_LEN, FRAME_HEADER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, PackReader,
    pack_file_name,
};
use crate::{ChunkList, EntryKind, ObjectId, ObjectKind, Store, StoreError};

/// Which packs holding dead frames gc rewrites.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Repack {
    /// Those mostly dead (live bytes under [`REPACK_LIVE_SHARE`]) and small ones.
    Sparse,
    /// Every one, so that the pack files hold live frames only (`gc_compacting`).
    EveryDeadFrame,
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
    /// What the store holds and what gc would give back.
    pub fn stats(&self) -> Result<StoreStats, StoreError> {
        let plan = self.plan_gc(Repack::Sparse)?;
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

    /// Every object reachable from the catalog's snapshots: the snapshot objects, their trees,
    /// chunk lists and chunks. Fails if a reachable tree or chunk list cannot be read, since
    /// deleting on an incomplete mark would lose data.
    pub(crate) fn live_objects(
        &self,
        locations: &Locations,
    ) -> Result<HashSet<ObjectId>, StoreError> {
        let mut live = self.reachable_objects(locations)?;
        self.mark_bases(locations, &mut live)?;
        Ok(live)
    }

    /// The objects the catalog's snapshots reach (as [`Store::live_objects`], without the
    /// bases they are stored against): what a purge keeps.
    pub(crate) fn reachable_objects(
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
        // Pulled snapshots' records are in no pack; what they reach stays.
        for pulled in self.pulled()? {
            if live.insert(pulled.record.root) {
                trees.push(pulled.record.root);
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
    pub(crate) fn base_of(&self, loc: &Location) -> Result<ObjectId, StoreError> {
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

    /// What gc would do now, rewriting the packs `repack` names.
    fn plan_gc(&self, repack: Repack) -> Result<GcPlan, StoreError> {
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
                && (repack == Repack::EveryDeadFrame
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

    /// Deletes packs with nothing live, rewrites mostly-dead ones, removes pack files no commit
    /// names, and sweeps `tmp/`.
    pub fn gc(&self) -> Result<GcReport, StoreError> {
        self.gc_with_progress(&|_, _| {})
    }

    /// As [`Store::gc`], calling `progress(done, total)` as live objects are copied.
    pub fn gc_with_progress(&self, progress: &dyn Fn(u64, u64)) -> Result<GcReport, StoreError> {
        self.gc_planned(self.plan_gc(Repack::Sparse)?, progress)
    }

    /// As [`Store::gc`], also rewriting every pack that holds a dead frame, however few:
    /// afterwards the packs hold only what the snapshots need (retention by size measures
    /// that).
    pub fn gc_compacting(&self) -> Result<GcReport, StoreError> {
        self.gc_planned(self.plan_gc(Repack::EveryDeadFrame)?, &|_, _| {})
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
        report.tmp_files_removed = sweep_tmp(self)?;
        crate::fs::io::sync_dir(&self.dir().join("packs"))?;
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
        let (gone, kept) = self.judge_orphans(catalog_lost)?;
        for orphan in &gone {
            remove_if_present(&orphan.path)?;
        }
        Ok((gone.len(), kept))
    }

    /// The pack files the catalog does not name that gc would keep (see
    /// [`Store::delete_orphan_packs`]), deleting nothing: an expunge refuses while there are
    /// any, since its purge could neither delete them nor vouch for what they hold.
    pub fn unnamed_packs_kept(&self) -> Result<Vec<PathBuf>, StoreError> {
        Ok(self.judge_orphans(false)?.1)
    }

    /// The orphans gc would delete, and the paths of those it would keep, sorted.
    fn judge_orphans(&self, catalog_lost: bool) -> Result<(Vec<Orphan>, Vec<PathBuf>), StoreError> {
        let (mut gone, orphans) = self.orphans_by_drop()?;
        if self.history_may_be_outside(catalog_lost, &orphans)? {
            // The dropped packs too: the history may be a line that a repair took back and
            // saved on from, reusing what they hold, before this catalog was put back.
            let mut kept: Vec<PathBuf> =
                (gone.into_iter().chain(orphans)).map(|o| o.path).collect();
            kept.sort();
            return Ok((Vec::new(), kept));
        }
        let mut kept = Vec::new();
        for orphan in orphans {
            if orphan.trailer.is_err() || orphan.before_catalog {
                kept.push(orphan.path);
            } else {
                gone.push(orphan);
            }
        }
        kept.sort();
        Ok((gone, kept))
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
}

/// Sweeps the store's `tmp/` (see [`sweep_dir`]), and the staging directories of
/// processes that are gone (`fs/staging.rs`).
pub(super) fn sweep_tmp(store: &Store) -> Result<usize, StoreError> {
    let tmp = store.dir().join("tmp");
    Ok(sweep_dir(&tmp)? + crate::fs::staging::sweep_stale(&tmp)?)
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
