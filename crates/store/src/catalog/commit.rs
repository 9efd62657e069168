//! Committing to the catalog: one durable write transaction per command, the point where a
//! save, a move's HEAD or a gc exists. Removals run before insertions.

use std::collections::HashSet;
use std::sync::atomic::Ordering;

use redb::{ReadableTable, ReadableTableMetadata, WriteTransaction};

use crate::cache::stat::StatCacheUpdate;
use crate::pack::{FrameInfo, pack_file_name};
use crate::{ObjectId, SnapshotRecord, StoreError};

use super::rows::{HistoryState, Location, decode_ids, encode_location};
use super::tables::{
    CATALOG_VERSION, META, OBJECTS, PACK_IDS, PACK_NUMBERS, PACKS, SNAP_IDS, SNAPSHOTS,
};
use super::{Catalog, Locations};

/// Everything one command commits at once.
#[derive(Debug, Default)]
pub struct Commit {
    /// Newly sealed packs, each with the frames it holds.
    pub packs: Vec<(ObjectId, Vec<FrameInfo>)>,
    /// Snapshot records to add, with their ids.
    pub snapshots: Vec<(ObjectId, SnapshotRecord)>,
    /// New HEAD and redo stack; `None` leaves them as they are.
    pub history: Option<HistoryState>,
    /// Snapshots dropped from the catalog (prune).
    pub remove_snapshots: Vec<ObjectId>,
    /// Object locations dropped (gc).
    pub remove_objects: Vec<ObjectId>,
    /// Packs dropped (gc); their files are deleted only after this commit.
    pub remove_packs: Vec<ObjectId>,
    /// Stat cache changes.
    pub stat_cache: StatCacheUpdate,
    /// An expunge's renamings (and the `told` rows dropped).
    pub expunge: Option<super::ExpungeRows>,
    /// The purge row to write (or, with `Done`, to remove).
    pub purge: Option<super::PurgeRow>,
    /// Snapshots pulled from a remote, added or forgotten.
    pub pulled: super::PulledChange,
}

impl Catalog {
    /// Applies `commit` in one durable write transaction: the point where a save exists.
    /// Removals run before insertions, so a repack may drop a pack and re-add its objects.
    pub fn commit(&self, commit: &Commit) -> Result<(), StoreError> {
        *self.objects.lock().unwrap_or_else(|p| p.into_inner()) = None;
        let txn = self.begin_write()?;
        self.write_objects(&txn, commit)?;
        // Packs may hold what older readers take for damage, and an older gc would leave
        // `stat_dirs` rows naming objects it drops: either marks the catalog current.
        let writes_new = !commit.packs.is_empty() || !commit.stat_cache.is_empty();
        let upgrade = writes_new && self.format.load(Ordering::Relaxed) < CATALOG_VERSION;
        if upgrade {
            let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
            meta.insert("format", CATALOG_VERSION.to_le_bytes().as_slice())
                .map_err(|e| self.err(e))?;
        }
        self.write_snapshots(&txn, commit)?;
        if let Some(history) = &commit.history {
            self.write_history(&txn, history)?;
        }
        if !commit.stat_cache.is_empty() {
            self.write_stat_cache(&txn, &commit.stat_cache)?;
        }
        if let Some(rows) = &commit.expunge {
            self.write_expunged(&txn, rows)?;
        }
        if let Some(row) = &commit.purge {
            self.write_purge(&txn, row)?;
        }
        self.write_pulled(&txn, &commit.pulled)?;
        crate::failpoint!("before-commit");
        txn.commit().map_err(|e| self.err(e))?;
        if upgrade {
            self.format.store(CATALOG_VERSION, Ordering::Relaxed);
        }
        crate::failpoint!("after-commit");
        Ok(())
    }

    fn write_objects(&self, txn: &WriteTransaction, commit: &Commit) -> Result<(), StoreError> {
        let mut objects = txn.open_table(OBJECTS).map_err(|e| self.err(e))?;
        for id in &commit.remove_objects {
            objects.remove(id.0.as_slice()).map_err(|e| self.err(e))?;
        }
        self.remove_packs(txn, &commit.remove_packs)?;
        if !commit.remove_packs.is_empty() || !commit.packs.is_empty() {
            self.write_dropped(txn, commit)?;
        }
        // References, not copies: a first save of a million files locates a million frames.
        let mut located: Vec<(u32, &FrameInfo)> = Vec::new();
        for (pack, frames) in &commit.packs {
            let number = self.add_pack(txn, pack, frames.len() as u64)?;
            located.extend(frames.iter().map(|frame| (number, frame)));
        }
        // In key order, the B-tree fills its pages instead of splitting them at random, and a
        // first save's catalog is much smaller (docs/PERFORMANCE.md).
        located.sort_unstable_by_key(|(_, frame)| frame.id);
        for (number, frame) in located {
            objects
                .insert(
                    frame.id.0.as_slice(),
                    encode_location(number, frame).as_slice(),
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Drops `gone` from `packs` and their numbers. A number is never given again (see
    /// `add_pack`), so a row left naming one fails to decode instead of naming another pack.
    fn remove_packs(&self, txn: &WriteTransaction, gone: &[ObjectId]) -> Result<(), StoreError> {
        let mut packs = txn.open_table(PACKS).map_err(|e| self.err(e))?;
        let mut numbers = txn.open_table(PACK_NUMBERS).map_err(|e| self.err(e))?;
        let mut ids = txn.open_table(PACK_IDS).map_err(|e| self.err(e))?;
        for pack in gone {
            packs.remove(pack.0.as_slice()).map_err(|e| self.err(e))?;
            let number = numbers.remove(pack.0.as_slice()).map_err(|e| self.err(e))?;
            if let Some(number) = number.map(|n| n.value()) {
                ids.remove(number).map_err(|e| self.err(e))?;
            }
        }
        Ok(())
    }

    /// Records the packs `commit` drops in `meta["dropped"]`, beside those dropped before
    /// whose files are still there, less any pack a commit names again (a pack id is a hash
    /// of its bytes: a pack written again byte for byte holds new history). gc deletes such
    /// a pack's file when it finds it unnamed, whatever it holds, unless other unnamed packs
    /// may hold history (a gc or merge killed after its commit leaves the snapshots prune
    /// dropped in such packs, and they would otherwise keep every unnamed pack as history).
    fn write_dropped(&self, txn: &WriteTransaction, commit: &Commit) -> Result<(), StoreError> {
        let before = self.dropped_in(txn)?;
        if before.is_empty() && commit.remove_packs.is_empty() {
            return Ok(());
        }
        let packs_dir = self.path.parent().map(|store| store.join("packs"));
        let present = |id: &ObjectId| {
            (packs_dir.as_ref()).is_some_and(|dir| dir.join(pack_file_name(id)).exists())
        };
        let added: HashSet<ObjectId> = commit.packs.iter().map(|(p, _)| *p).collect();
        let mut dropped = before.clone();
        dropped.retain(|id| present(id) && !commit.remove_packs.contains(id));
        dropped.extend(commit.remove_packs.iter().copied());
        dropped.retain(|id| !added.contains(id));
        if dropped == before {
            return Ok(());
        }
        let value: Vec<u8> = dropped.iter().flat_map(|id| id.0).collect();
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        meta.insert("dropped", value.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn dropped_in(&self, txn: &WriteTransaction) -> Result<Vec<ObjectId>, StoreError> {
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let value = meta.get("dropped").map_err(|e| self.err(e))?;
        Ok(value.map_or_else(Vec::new, |v| decode_ids(v.value())))
    }

    /// The packs commits dropped whose files may still be there (`meta["dropped"]`).
    pub fn dropped_packs(&self) -> Result<Vec<ObjectId>, StoreError> {
        let txn = self.read()?;
        let meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let value = meta.get("dropped").map_err(|e| self.err(e))?;
        Ok(value.map_or_else(Vec::new, |v| decode_ids(v.value())))
    }

    /// Names `pack` in `packs` with its object count, and returns its number: the one it
    /// has, or the next never given (`meta["pack_next"]`, u32 LE).
    fn add_pack(
        &self,
        txn: &WriteTransaction,
        pack: &ObjectId,
        objects: u64,
    ) -> Result<u32, StoreError> {
        let mut packs = txn.open_table(PACKS).map_err(|e| self.err(e))?;
        packs
            .insert(pack.0.as_slice(), objects)
            .map_err(|e| self.err(e))?;
        let mut numbers = txn.open_table(PACK_NUMBERS).map_err(|e| self.err(e))?;
        if let Some(number) = numbers.get(pack.0.as_slice()).map_err(|e| self.err(e))? {
            return Ok(number.value());
        }
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        let next = match meta.get("pack_next").map_err(|e| self.err(e))? {
            Some(v) => u32::from_le_bytes(
                v.value()
                    .try_into()
                    .map_err(|_| self.err("bad pack_next record"))?,
            ),
            None => 0,
        };
        let after = next
            .checked_add(1)
            .ok_or_else(|| self.err("every pack number is taken"))?;
        meta.insert("pack_next", after.to_le_bytes().as_slice())
            .map_err(|e| self.err(e))?;
        numbers
            .insert(pack.0.as_slice(), next)
            .map_err(|e| self.err(e))?;
        let mut ids = txn.open_table(PACK_IDS).map_err(|e| self.err(e))?;
        ids.insert(next, pack.0.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(next)
    }

    fn write_snapshots(&self, txn: &WriteTransaction, commit: &Commit) -> Result<(), StoreError> {
        let mut snapshots = txn.open_table(SNAPSHOTS).map_err(|e| self.err(e))?;
        let mut ids = txn.open_table(SNAP_IDS).map_err(|e| self.err(e))?;
        for id in &commit.remove_snapshots {
            if let Some(seq) = ids
                .remove(id.0.as_slice())
                .map_err(|e| self.err(e))?
                .map(|v| v.value())
            {
                snapshots.remove(seq).map_err(|e| self.err(e))?;
            }
        }
        for (id, record) in &commit.snapshots {
            if ids.get(id.0.as_slice()).map_err(|e| self.err(e))?.is_some() {
                continue;
            }
            let key = self.free_key(&snapshots, record.seq)?;
            let mut row = id.0.to_vec();
            row.extend_from_slice(&record.encode());
            snapshots
                .insert(key, row.as_slice())
                .map_err(|e| self.err(e))?;
            ids.insert(id.0.as_slice(), key).map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// The `snapshots` key for a snapshot the catalog lacks, made as number `seq`: `seq`
    /// itself, unless another snapshot holds it, and then one past the largest key. Two snapshots share a
    /// number only when a repair joins two lines of history (a catalog put back from an
    /// older copy and saved on from there, beside the packs saved after that copy); one row
    /// over the other would lose a snapshot, and perhaps HEAD.
    fn free_key(&self, snapshots: &redb::Table<u64, &[u8]>, seq: u64) -> Result<u64, StoreError> {
        if snapshots.get(seq).map_err(|e| self.err(e))?.is_none() {
            return Ok(seq);
        }
        let last = snapshots.last().map_err(|e| self.err(e))?;
        Ok(last.map_or(seq, |(key, _)| key.value()).saturating_add(1))
    }

    fn write_history(
        &self,
        txn: &WriteTransaction,
        history: &HistoryState,
    ) -> Result<(), StoreError> {
        let mut meta = txn.open_table(META).map_err(|e| self.err(e))?;
        match history.head {
            Some(head) => meta.insert("head", head.0.as_slice()).map(drop),
            None => meta.remove("head").map(drop),
        }
        .map_err(|e| self.err(e))?;
        meta.insert("redo", history.encode_redo().as_slice())
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Every object location, by object id.
    pub(crate) fn locations(&self) -> Result<Locations, StoreError> {
        let txn = self.read()?;
        let packs = self.pack_ids(&txn)?;
        let table = txn.open_table(OBJECTS).map_err(|e| self.err(e))?;
        let rows = table.len().map_err(|e| self.err(e))?;
        let mut out = Locations::with_capacity(usize::try_from(rows).unwrap_or(0));
        for row in table.iter().map_err(|e| self.err(e))? {
            let (k, v) = row.map_err(|e| self.err(e))?;
            let id = ObjectId::from_slice(k.value())
                .ok_or_else(|| self.err("object key is not 32 bytes"))?;
            let location = Location::decode(id, v.value(), |n| packs.get(&n).copied())
                .ok_or_else(|| self.err(format!("bad location record for {id}")))?;
            out.insert(location);
        }
        Ok(out)
    }
}
