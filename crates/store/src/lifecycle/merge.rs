//! Automatic merging of small packs, as git's `gc --auto` repacks once loose packs pile up.
//!
//! Every save seals its own pack, so an agent's session of one-file saves leaves thousands of
//! pack files of a few hundred bytes, each taking a filesystem block and a directory entry.
//! Past [`AUTO_MERGE_PACKS`] packs, a writing command ends by copying the frames of the
//! smallest packs, as they are stored, into one new pack. It reads no tree and decides nothing
//! about liveness (that is gc's work), so its cost is bounded by the bytes it copies.
//!
//! Crash safety is gc's protocol: the new pack is synced and renamed into place, the catalog
//! commit points every copied object at it and drops the old packs, and only then are the old
//! files deleted. A crash before the commit leaves an unnamed pack; one after it, unnamed old
//! packs; both are deleted by the next merge or gc. Nothing committed is ever unreachable.

use std::collections::HashSet;

use crate::catalog::Commit;
use crate::lifecycle::SMALL_PACK;
use crate::pack::{EncodedObject, PackReader};
use crate::{ObjectId, Store, StoreError};

/// A writing command merges small packs once the catalog names more than this many packs
/// (git's `gc.autoPackLimit` is 50).
pub const AUTO_MERGE_PACKS: u64 = 32;
/// One merge copies at most this many bytes of packs, so that it stays a small cost at the
/// end of a save; the smallest packs go first.
pub const AUTO_MERGE_BYTES: u64 = 32 << 20;
/// Only packs of at most this many objects are merged: those of a few saves each. A pack a
/// first save left is full of small files' slices, and re-pointing each of its objects in
/// the catalog would rewrite most of the `objects` table's pages (their ids are random), so
/// that redb's file would double for the length of the commit.
pub const MERGE_MAX_PACK_OBJECTS: u64 = 512;
/// One merge re-points at most this many objects, which bounds the catalog pages it
/// rewrites.
pub const MERGE_MAX_OBJECTS: u64 = 1024;

/// What a merge did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MergeReport {
    /// Packs whose frames were copied into the new pack, then deleted.
    pub packs_merged: usize,
    /// Frames copied.
    pub objects_copied: usize,
    /// Bytes of the packs merged.
    pub bytes_merged: u64,
}

impl Store {
    /// Merges the smallest packs into one when the catalog names more than
    /// [`AUTO_MERGE_PACKS`] and more than that many are under [`SMALL_PACK`]; `None` when
    /// nothing was due. Cheap when nothing is due: a count of the catalog's `packs` table.
    pub fn merge_small_packs(&self) -> Result<Option<MergeReport>, StoreError> {
        if self.catalog.pack_count()? <= AUTO_MERGE_PACKS {
            return Ok(None);
        }
        let chosen = self.packs_to_merge()?;
        if chosen.len() < 2 {
            return Ok(None);
        }
        self.merge(&chosen).map(Some)
    }

    /// The small packs to merge, smallest first: empty unless more than
    /// [`AUTO_MERGE_PACKS`] are small. See [`geometric_split`] for which.
    fn packs_to_merge(&self) -> Result<Vec<(ObjectId, u64)>, StoreError> {
        // The object count is in the catalog; only packs it lets through are stat-ed, so a
        // store of many large packs costs a save one catalog read, not a stat per pack.
        let mut few: Vec<(ObjectId, u64)> = self.catalog.packs()?;
        few.retain(|&(_, objects)| objects <= MERGE_MAX_PACK_OBJECTS);
        if (few.len() as u64) <= AUTO_MERGE_PACKS {
            return Ok(Vec::new());
        }
        let mut small = Vec::new();
        for (pack, objects) in few {
            // A pack that cannot be looked at (gone, unreadable) is left to verify to name.
            let Ok(meta) = std::fs::metadata(self.pack_path(&pack)) else {
                continue;
            };
            if meta.len() < SMALL_PACK {
                small.push((pack, meta.len(), objects));
            }
        }
        if (small.len() as u64) <= AUTO_MERGE_PACKS {
            return Ok(Vec::new());
        }
        small.sort_unstable_by_key(|&(pack, size, _)| (size, pack));
        let sizes: Vec<u64> = small.iter().map(|&(_, size, _)| size).collect();
        small.truncate(geometric_split(&sizes, AUTO_MERGE_BYTES));
        let mut objects = 0;
        small.retain(|&(_, _, n)| {
            objects += n;
            objects <= MERGE_MAX_OBJECTS
        });
        Ok(small
            .into_iter()
            .map(|(pack, size, _)| (pack, size))
            .collect())
    }

    /// Copies every frame the catalog locates in `packs` into a new pack, commits, then
    /// deletes the old pack files.
    fn merge(&self, packs: &[(ObjectId, u64)]) -> Result<MergeReport, StoreError> {
        let writer = self.writer();
        let mut report = MergeReport::default();
        let mut merged = Vec::new();
        for &(pack, size) in packs {
            // A pack that cannot be read whole stays as it is, for verify to name and repair
            // to mend. It is read before anything of it is written, so that a failed write
            // (a full disk) ends the merge before its commit instead of passing for a
            // damaged pack: a pack is dropped only once every frame of it is copied.
            let Ok(frames) = self.located_frames(&pack) else {
                continue;
            };
            for frame in &frames {
                writer.copy(frame)?;
            }
            report.objects_copied += frames.len();
            report.packs_merged += 1;
            report.bytes_merged += size;
            merged.push(pack);
        }
        let written = writer.finish()?;
        // A merged pack can come out byte for byte equal to one it replaces (one pack with
        // frames, the rest with none the catalog points at), and so under the same name.
        let names: HashSet<ObjectId> = written.iter().map(|(id, _)| *id).collect();
        let remove_packs: Vec<ObjectId> = (merged.into_iter())
            .filter(|p| !names.contains(p))
            .collect();
        self.commit(&Commit {
            packs: written,
            remove_packs: remove_packs.clone(),
            ..Commit::default()
        })?;
        crate::failpoint!("merge-after-commit");
        self.forget_readers();
        for pack in &remove_packs {
            crate::fs::remove_if_present(&self.pack_path(pack))?;
        }
        crate::fs::io::sync_dir(&self.dir().join("packs"))?;
        Ok(report)
    }

    /// Reads, as stored, each frame of `pack` that the catalog locates there (a frame it
    /// locates elsewhere, or not at all, is garbage left by gc or a crash). A small pack's
    /// frames fit in memory: packs under [`SMALL_PACK`] are the only ones merged.
    fn located_frames(&self, pack: &ObjectId) -> Result<Vec<EncodedObject>, StoreError> {
        let reader = PackReader::open(&self.pack_path(pack))?;
        let (index, _, _) = reader.read_trailer()?;
        let mut frames = Vec::new();
        for (id, offset) in index {
            let located = self.catalog.locate(&id)?;
            if !located.is_some_and(|l| l.pack == *pack && l.frame.offset == offset) {
                continue;
            }
            let (info, payload) = reader.read_frame(offset, id)?;
            frames.push(EncodedObject::stored(info, payload));
        }
        Ok(frames)
    }
}

/// How many of `sizes` (ascending) to merge: as git's `repack --geometric=2`, the packs left
/// must each be at least twice the size of all smaller packs together, so that the packs
/// form a geometric progression. The merged pack is then merged again only once the packs
/// after it add up to half its size: each byte is copied O(log n) times over n saves, never
/// once per save. At most `budget` bytes are taken.
fn geometric_split(sizes: &[u64], budget: u64) -> usize {
    let mut below = 0u64;
    let mut split = 0;
    for (i, &size) in sizes.iter().enumerate() {
        if size < below.saturating_mul(2) {
            split = i + 1;
        }
        below = below.saturating_add(size);
    }
    let mut total = 0u64;
    sizes[..split]
        .iter()
        .take_while(|&&size| {
            total = total.saturating_add(size);
            total <= budget
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::geometric_split;

    #[test]
    fn merges_until_the_rest_is_geometric() {
        // 33 one-save packs under a first save's pack: the small ones are merged.
        let mut sizes = vec![1500; 33];
        sizes.push(2_000_000);
        assert_eq!(geometric_split(&sizes, u64::MAX), 33);
        // Their merge, and 33 more: the old merge is too small beside them and goes too.
        let mut sizes = vec![1500; 33];
        sizes.extend([49_500, 2_000_000]);
        assert_eq!(geometric_split(&sizes, u64::MAX), 34);
        // Already geometric: nothing.
        assert_eq!(geometric_split(&[1000, 2000, 6000, 18000], u64::MAX), 0);
        assert_eq!(geometric_split(&[], u64::MAX), 0);
    }

    #[test]
    fn a_merge_stays_within_its_budget() {
        let sizes = vec![1 << 20; 40];
        assert_eq!(geometric_split(&sizes, u64::MAX), 40);
        assert_eq!(geometric_split(&sizes, 8 << 20), 8);
    }
}
