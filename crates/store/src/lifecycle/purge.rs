//! The purge that follows an expunge: the packs are made to hold only what the snapshots
//! reach, so the bytes of the paths an expunge took out of history are gone from `.snap/`.
//!
//! gc keeps a block while any slice of it is live and the base of every live delta, so a
//! forgotten file's bytes can survive inside other objects; the purge keeps neither. Kept are
//! exactly the objects the catalog's snapshots reach (snapshot objects, trees, chunk lists,
//! chunks). A kept frame stored against a base that is not kept (a tree delta against a
//! tree that named the path, a slice of a block, a file delta against an expunged version)
//! is re-encoded whole; its id and raw bytes stay the same, so nothing that reads it changes.
//! Every pack holding a frame not kept, or a frame to re-encode, or bytes no frame the
//! catalog locates covers, is rewritten; the others stay as they are.
//!
//! Crash safety: the expunge's rewrite commits `meta["purge"] = pending`; this commit puts the
//! new packs in and the old out and sets the row to the packs to unlink; the files go only
//! after it, then the row. A killed purge is finished by the next writing command
//! ([`Store::finish_purge`]), from whichever phase the row names.

use std::collections::{HashMap, HashSet};

use crate::catalog::{Commit, Location, PurgeRow};
use crate::fs::remove_if_present;
use crate::pack::{
    EncodedObject, FOOTER_LEN, FRAME_HEADER_LEN, HEADER_LEN, INDEX_ENTRY_LEN, PackReader,
};
use crate::{ObjectId, Store, StoreError};

/// What a purge did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    /// Pack files rewritten (and their old files deleted).
    pub packs_rewritten: usize,
    /// Frames dropped: objects no snapshot reaches any more.
    pub objects_removed: usize,
    /// Kept frames re-encoded whole because their base went.
    pub objects_reencoded: usize,
    /// Pack bytes before and after.
    pub bytes_before: u64,
    /// Pack bytes after.
    pub bytes_after: u64,
}

/// The purge's decision: which packs go, what of them is copied, what re-encoded.
#[derive(Debug, Default)]
struct PurgePlan {
    keep: HashSet<ObjectId>,
    packs: HashSet<ObjectId>,
    copy: Vec<Location>,
    reencode: Vec<Location>,
    remove: Vec<ObjectId>,
}

impl Store {
    /// Finishes a purge an expunge left pending (or a kill interrupted); nothing without one.
    /// First a transfer's staging a dead process left is swept, and an expunge or intake
    /// killed before its commit is rolled back (crate::lifecycle::intent).
    pub fn finish_purge(&self) -> Result<Option<PurgeReport>, StoreError> {
        self.sweep_staging()?;
        self.abort_pack_intent()?;
        match self.catalog.purge_row()? {
            None | Some(PurgeRow::Done) => Ok(None),
            Some(PurgeRow::Pending) => self.purge().map(Some),
            Some(PurgeRow::Unlink(packs)) => {
                self.unlink_purged(&packs)?;
                Ok(Some(PurgeReport::default()))
            }
        }
    }

    /// Commits an expunge's rewrite: its new snapshots, renamings and history, with the purge
    /// row pending, so that a kill from here on leaves the purge to the next writing command.
    /// Pulled snapshots are forgotten with it: their trees may hold what it takes out.
    pub fn commit_expunge(&self, mut commit: Commit) -> Result<(), StoreError> {
        commit.purge = Some(PurgeRow::Pending);
        commit.pulled = crate::PulledChange::Forget;
        self.commit(&commit)?;
        // Its packs are named now: the intent has nothing left to undo.
        self.end_pack_intent()?;
        crate::failpoint!("expunge-after-rewrite");
        Ok(())
    }

    /// Rewrites the packs so they hold only what the snapshots reach, then deletes the old
    /// ones and clears the purge row (see the module's documentation).
    pub fn purge(&self) -> Result<PurgeReport, StoreError> {
        let plan = self.plan_purge()?;
        let mut report = PurgeReport {
            bytes_before: self.pack_bytes()?,
            objects_removed: plan.remove.len(),
            objects_reencoded: plan.reencode.len(),
            ..PurgeReport::default()
        };
        let writer = self.rewriting_writer();
        for loc in &plan.copy {
            let reader = PackReader::open(&self.pack_path(&loc.pack))?;
            let (info, payload) = reader.read_frame(loc.frame.offset, loc.frame.id)?;
            writer.copy(&EncodedObject::stored(info, payload))?;
        }
        for loc in &plan.reencode {
            // Read through its base while the base is still there; stored whole (no base).
            let (kind, raw) = self.read(&loc.frame.id)?;
            writer.put(kind, &raw)?;
        }
        let packs = writer.finish()?;
        let written: HashSet<ObjectId> = packs.iter().map(|(id, _)| *id).collect();
        let gone: Vec<ObjectId> = (plan.packs.iter())
            .filter(|p| !written.contains(p))
            .copied()
            .collect();
        self.commit(&Commit {
            packs,
            remove_objects: plan.remove,
            remove_packs: gone.clone(),
            stat_cache: crate::StatCacheUpdate {
                only_live: Some(plan.keep),
                ..Default::default()
            },
            purge: Some(PurgeRow::Unlink(gone.clone())),
            ..Commit::default()
        })?;
        crate::failpoint!("purge-after-commit");
        self.unlink_purged(&gone)?;
        report.packs_rewritten = gone.len();
        report.bytes_after = self.pack_bytes()?;
        Ok(report)
    }

    fn plan_purge(&self) -> Result<PurgePlan, StoreError> {
        let locations = self.catalog.locations()?;
        let keep = self.reachable_objects(&locations)?;
        let mut plan = PurgePlan::default();
        let mut located: HashMap<ObjectId, u64> = HashMap::new();
        for loc in locations.iter() {
            *located.entry(loc.pack).or_default() +=
                FRAME_HEADER_LEN + u64::from(loc.frame.stored_len);
            if !keep.contains(&loc.frame.id) || self.base_goes(&loc, &keep)? {
                plan.packs.insert(loc.pack);
            }
        }
        // Bytes no located frame covers: frames a rewrite or a forgotten write left behind.
        for (pack, frames) in self.catalog.packs()? {
            let size = std::fs::metadata(self.pack_path(&pack))
                .map(|m| m.len())
                .unwrap_or(0);
            let framed = size.saturating_sub(HEADER_LEN + frames * INDEX_ENTRY_LEN + FOOTER_LEN);
            if located.get(&pack).copied().unwrap_or(0) < framed {
                plan.packs.insert(pack);
            }
        }
        for loc in locations.iter().filter(|l| plan.packs.contains(&l.pack)) {
            let id = loc.frame.id;
            if !keep.contains(&id) {
                plan.remove.push(id);
            } else if self.base_goes(&loc, &keep)? {
                plan.reencode.push(loc);
            } else {
                plan.copy.push(loc);
            }
        }
        plan.keep = keep;
        Ok(plan)
    }

    /// True when `loc` is stored against a base the purge does not keep.
    fn base_goes(&self, loc: &Location, keep: &HashSet<ObjectId>) -> Result<bool, StoreError> {
        Ok(loc.frame.compression.has_base() && !keep.contains(&self.base_of(loc)?))
    }

    /// Deletes the purged packs' files, the packs no commit names (a purge must leave none
    /// that could hold what it took out), and `tmp/`'s leftovers; then clears the row.
    fn unlink_purged(&self, packs: &[ObjectId]) -> Result<(), StoreError> {
        self.forget_readers();
        for pack in packs {
            remove_if_present(&self.pack_path(pack))?;
        }
        let (_, kept) = self.delete_orphan_packs(false)?;
        if let Some(path) = kept.first() {
            return Err(StoreError::io(
                path,
                std::io::Error::other(
                    "an unnamed pack may hold history: run `snap repair`, then `snap gc`, and expunge again",
                ),
            ));
        }
        super::gc::sweep_tmp(self)?;
        crate::fs::io::sync_dir(&self.dir().join("packs"))?;
        self.commit(&Commit {
            purge: Some(PurgeRow::Done),
            ..Commit::default()
        })
    }

    fn pack_bytes(&self) -> Result<u64, StoreError> {
        Ok((self.catalog.packs()?.iter())
            .map(|(p, _)| {
                std::fs::metadata(self.pack_path(p))
                    .map(|m| m.len())
                    .unwrap_or(0)
            })
            .sum())
    }
}
