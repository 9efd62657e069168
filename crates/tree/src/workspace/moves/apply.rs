//! Carrying out a move's plan around the guarded apply: the files found changed and the
//! versions other processes wrote are saved first, the saved copy of everything replaced is
//! read back beforehand, and a failed plan is rolled back (docs/SAFETY.md).

use super::{
    Commit, EntryKind, FlatTree, FoundFile, Marker, ObjectId, Op, Phase, Plan, Snapshot, Ticker,
    TreeError, Workspace, restore, scan,
};
use rayon::iter::{IntoParallelIterator, ParallelIterator};

impl Workspace {
    /// Carries out `plan` guarded, for the operation `marker` records; then saves the files
    /// found holding neither side, and the versions other processes wrote that the steps
    /// displaced (as a snapshot of `parent`'s tree with them, listed by `log --all`), and
    /// carries out the found files' steps too. Returns what was touched, and every path kept.
    pub(super) fn apply_saving_first(
        &self,
        marker: &Marker,
        plan: &Plan,
        sides: restore::Sides<'_>,
        parent: (Option<&Snapshot>, &FlatTree),
    ) -> Result<restore::Applied, TreeError> {
        let tree = self.work_tree(marker.op_id());
        let ticker = Ticker::new(self.observer.0.as_ref(), Phase::Restore, plan.len() as u64);
        let mut applied = restore::apply_with(tree, plan, sides, &|| ticker.tick())?;
        let differs = std::mem::take(&mut applied.differs);
        let displaced = std::mem::take(&mut applied.displaced);
        if differs.is_empty() && displaced.is_empty() {
            return Ok(applied);
        }
        let found = FoundFile::list(&differs, &displaced);
        let saved = self.save_found(marker.op, &found, sides.before, parent)?;
        restore::drop_displaced(&self.root, &displaced)?;
        applied.saved_first = found.into_iter().map(|f| f.path).collect();
        if differs.is_empty() {
            return Ok(applied);
        }
        let mut rest = plan.clone();
        rest.keep_only(&differs);
        // What was found may be content saved long ago, in a pack that has rotted since.
        self.keep_sound_copies(&rest, &saved)?;
        let again = restore::Sides {
            before: &saved,
            after: sides.after,
        };
        let second = restore::apply(tree, &rest, again)?;
        if !second.displaced.is_empty() {
            let found = FoundFile::list(&[], &second.displaced);
            self.save_found(marker.op, &found, &saved, parent)?;
            restore::drop_displaced(&self.root, &second.displaced)?;
            applied
                .saved_first
                .extend(found.into_iter().map(|f| f.path));
        }
        applied.saved_first.sort_unstable();
        applied.saved_first.dedup();
        applied.touched += second.touched;
        // Changed again between the save and the write: left as it is (nothing is lost).
        applied
            .kept
            .extend(second.kept.into_iter().chain(second.differs));
        applied.kept.sort_unstable();
        Ok(applied)
    }

    /// Reads back, before anything is touched, the saved copy of every file and symlink
    /// `plan` replaces or removes (docs/SAFETY.md): the catalog naming an object does not make it
    /// readable, as a pack can rot after it was written. A copy that cannot be read is
    /// written again from the working tree (which the scan found holding it), so that the
    /// move never destroys the last sound copy of anything; a file that no longer hashes to
    /// it has changed since the scan, and the move is refused.
    pub(super) fn keep_sound_copies(
        &self,
        plan: &Plan,
        before: &FlatTree,
    ) -> Result<(), TreeError> {
        let replaced = plan.write.iter().map(|(path, _)| path);
        let mut copies: Vec<(ObjectId, &[u8])> = (plan.remove_files.iter().chain(replaced))
            .filter_map(|path| before.get(path).map(|node| (node, path)))
            .filter(|(node, _)| node.kind != EntryKind::Dir)
            .map(|(node, path)| (node.id, path.as_slice()))
            .collect();
        copies.sort_unstable();
        copies.dedup_by_key(|(id, _)| *id);
        let copies: Vec<(ObjectId, &[u8])> = (copies.into_par_iter())
            .filter(|(id, _)| self.store.check_file(id).is_err())
            .collect();
        if copies.is_empty() {
            return Ok(());
        }
        let writer = self.store.rewriting_writer();
        for (id, path) in &copies {
            if scan::store_path(&self.root, path, &writer)?.id != *id {
                return Err(TreeError::ChangedDuringMove {
                    path: scan::abs(&self.root, path),
                });
            }
        }
        let packs = writer.finish()?;
        self.store.commit(&Commit {
            packs,
            ..Commit::default()
        })?;
        Ok(())
    }

    /// Puts back the paths a failed `plan` touched, guarded as the plan was: a path is
    /// returned to its `before` state only while it holds the target's. Nothing else is
    /// touched (judged from the scan, not from the ignore rules the failed move may have
    /// half changed).
    pub(super) fn roll_back(
        &self,
        op: restore::OpId,
        plan: &Plan,
        sides: restore::Sides<'_>,
    ) -> Result<(), TreeError> {
        let paths = plan.paths();
        let only = |flat: &FlatTree| -> FlatTree {
            paths
                .iter()
                .filter_map(|p| flat.get(*p).map(|n| (p.to_vec(), *n)))
                .collect()
        };
        let (now, then) = (only(sides.after), only(sides.before));
        let back = Plan::new(&now, &then);
        let full = sides;
        let sides = restore::Sides {
            before: &now,
            after: &then,
        };
        let applied = restore::apply(self.work_tree(op), &back, sides)?;
        // A version another process wrote while the failed move ran is kept, not dropped.
        if !applied.displaced.is_empty() {
            let found = FoundFile::list(&[], &applied.displaced);
            self.save_found(Op::Restore, &found, full.before, (None, full.before))?;
            restore::drop_displaced(&self.root, &applied.displaced)?;
        }
        Ok(())
    }
}
