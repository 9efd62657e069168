//! Carrying out a move's plan around the guarded apply: the files found changed and the
//! versions other processes wrote are saved first, the saved copy of everything replaced is
//! read back beforehand, and a failed plan is rolled back (docs/SAFETY.md).

use super::steps::Scanned;
use crate::capture::Snapshotter;
use crate::error::TreeError;
use crate::flat::FlatTree;
use crate::marker::{Marker, Op};
use crate::moves::Mover;
use crate::observer::{Event, Phase, Ticker};
use crate::record::FoundFile;
use crate::record::Recorder;
use crate::restore::{self, Plan};
use crate::scan;
use crate::snapshot::Snapshot;
use rayon::iter::{IntoParallelIterator, ParallelIterator};
use snap_store::{Commit, EntryKind, HistoryState, ObjectId, StatCacheUpdate};

impl Mover<'_> {
    /// Carries out `plan` guarded, for the operation `marker` records; then saves the files
    /// found holding neither side, and the versions other processes wrote that the steps
    /// displaced (as a snapshot of `parent`'s tree with them, listed by `log --all`), and
    /// carries out the found files' steps too. Returns what was touched, and every path kept.
    pub(crate) fn apply_saving_first(
        &self,
        marker: &Marker,
        plan: &Plan,
        sides: restore::Sides<'_>,
        parent: (Option<&Snapshot>, &FlatTree),
    ) -> Result<restore::Applied, TreeError> {
        let tree = self.parts.work_tree(marker.op_id());
        let ticker = Ticker::new(
            self.parts.observer.0.as_ref(),
            Phase::Restore,
            plan.len() as u64,
        );
        let mut applied = restore::apply_with(tree, plan, sides, &|| ticker.tick())?;
        let differs = std::mem::take(&mut applied.differs);
        let displaced = std::mem::take(&mut applied.displaced);
        if differs.is_empty() && displaced.is_empty() {
            return Ok(applied);
        }
        let found = FoundFile::list(&differs, &displaced);
        let saved =
            Recorder::new(self.parts).save_found(marker.op, &found, sides.before, parent)?;
        restore::drop_displaced(&self.parts.root, &displaced)?;
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
            Recorder::new(self.parts).save_found(marker.op, &found, &saved, parent)?;
            restore::drop_displaced(&self.parts.root, &second.displaced)?;
            applied
                .saved_first
                .extend(found.into_iter().map(|f| f.path));
        }
        applied.saved_first.sort_unstable();
        applied.saved_first.dedup();
        applied.touched += second.touched;
        applied.vouched.extend(second.vouched);
        applied.vouched.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Changed again between the save and the write: left as it is (nothing is lost).
        applied
            .kept
            .extend(second.kept.into_iter().chain(second.differs));
        applied.kept.sort_unstable();
        Ok(applied)
    }

    /// Checks what `plan` left against what each of its steps was to leave
    /// ([`restore::unfinished`]), before the move says it finished: a step found undone
    /// (after a kill, a directory the plan removes may still hold the operation's own
    /// temporary file) is taken once more, guarded, and what is still not as the plan
    /// leaves it is named as kept. `applied` gathers both passes.
    pub(crate) fn complete(
        &self,
        marker: &Marker,
        plan: &Plan,
        sides: restore::Sides<'_>,
        parent: (Option<&Snapshot>, &FlatTree),
        applied: &mut restore::Applied,
    ) -> Result<(), TreeError> {
        let named: Vec<Vec<u8>> = (applied.kept.iter().chain(&marker.kept).cloned()).collect();
        let undone = restore::unfinished(&self.parts.root, plan, &named)?;
        if undone.is_empty() {
            return Ok(());
        }
        let mut rest = plan.clone();
        rest.keep_only(&undone);
        let again = self.apply_saving_first(marker, &rest, sides, parent)?;
        applied.touched += again.touched;
        applied.vouched.extend(again.vouched);
        applied.vouched.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        applied.saved_first.extend(again.saved_first);
        applied.saved_first.sort_unstable();
        applied.saved_first.dedup();
        applied.kept.extend(again.kept);
        let named: Vec<Vec<u8>> = (applied.kept.iter().chain(&marker.kept).cloned()).collect();
        applied
            .kept
            .extend(restore::unfinished(&self.parts.root, &rest, &named)?);
        applied.kept.sort_unstable();
        applied.kept.dedup();
        Ok(())
    }

    /// Reads back, before anything is touched, the saved copy of every file and symlink
    /// `plan` replaces or removes (docs/SAFETY.md): the catalog naming an object does not make it
    /// readable, as a pack can rot after it was written. A copy that cannot be read is
    /// written again from the working tree (which the scan found holding it), so that the
    /// move never destroys the last sound copy of anything; a file that no longer hashes to
    /// it has changed since the scan, and the move is refused.
    pub(crate) fn keep_sound_copies(
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
            .filter(|(id, _)| self.parts.store.check_file(id).is_err())
            .collect();
        if copies.is_empty() {
            return Ok(());
        }
        let writer = self.parts.store.rewriting_writer();
        for (id, path) in &copies {
            if scan::store_path(&self.parts.root, path, &writer)?.id != *id {
                return Err(TreeError::ChangedDuringMove {
                    path: scan::abs(&self.parts.root, path),
                });
            }
        }
        let packs = writer.finish()?;
        self.parts.store.commit(&Commit {
            packs,
            ..Commit::default()
        })?;
        Ok(())
    }

    /// Puts back the paths a failed `plan` touched, guarded as the plan was: a path is
    /// returned to its `before` state only while it holds the target's. Nothing else is
    /// touched (judged from the scan, not from the ignore rules the failed move may have
    /// half changed).
    pub(crate) fn roll_back(
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
        let applied = restore::apply(self.parts.work_tree(op), &back, sides)?;
        // A version another process wrote while the failed move ran is kept, not dropped.
        if !applied.displaced.is_empty() {
            let found = FoundFile::list(&[], &applied.displaced);
            Recorder::new(self.parts).save_found(
                Op::Restore,
                &found,
                full.before,
                (None, full.before),
            )?;
            restore::drop_displaced(&self.parts.root, &applied.displaced)?;
        }
        Ok(())
    }

    /// After a step of `plan` failed with `e`: the operation's own temporary names are
    /// swept first (a version another process wrote that a step displaced waits under one,
    /// and is stored; none is left holding a directory the way back removes), then the
    /// touched paths are put back and the lifted modes given back. The marker goes only when
    /// all of that succeeded; otherwise the next writing command rolls the move forward.
    /// Returns `e`, or the marker's own error.
    fn abandon(
        &self,
        marker: &Marker,
        plan: &Plan,
        sides: restore::Sides<'_>,
        parent: (Option<&Snapshot>, &FlatTree),
        e: TreeError,
    ) -> TreeError {
        let swept = self.sweep_leftovers(marker, plan, sides, parent).is_ok();
        let back = self.roll_back(marker.op_id(), plan, sides).is_ok();
        let modes = restore::put_back(&self.parts.root, &marker.lifted, &Plan::default()).is_ok();
        if swept
            && back
            && modes
            && let Err(removed) = marker.remove(self.parts.store.dir())
        {
            return removed;
        }
        e
    }

    /// The §7 protocol: marker, working tree, HEAD, marker removed, guarded by §14: new
    /// paths the ignore rules leave out are kept before anything is touched, each path is
    /// changed only while it holds what the scan saw, and a file found changed anyway is
    /// saved first. If the working tree cannot be changed, the paths the plan touched are put
    /// back and the marker removed, so the store stays usable. Returns the paths kept.
    pub(crate) fn move_to(
        &self,
        op: Op,
        target: &Snapshot,
        redo: Vec<ObjectId>,
        scanned: Scanned<'_>,
        (plan, target_flat): (&Plan, &FlatTree),
    ) -> Result<Vec<Vec<u8>>, TreeError> {
        restore::check_unchanged(&self.parts.root, plan, scanned.stats)?;
        let mut plan = plan.clone();
        let mut ruled_out = self.keep_ruled_out(&mut plan, scanned.flat);
        // Read-only directories it must fill are lifted; one snap may not chmod is kept.
        let read_only = restore::read_only_dirs(&self.parts.root, &plan)?;
        plan.leave_out(&read_only.refused);
        ruled_out.extend(read_only.refused);
        ruled_out.sort_unstable();
        self.keep_sound_copies(&plan, scanned.flat)?;
        let marker = Marker {
            op,
            head: target.id,
            redo,
            from: Some(scanned.root),
            kept: ruled_out.clone(),
            op_id: Some(restore::OpId::new()),
            lifted: read_only.lift,
        };
        marker.write(self.parts.store.dir())?;
        snap_store::failpoint!("marker-written");
        restore::lift(&self.parts.root, &marker.lifted)?;
        let sides = restore::Sides {
            before: scanned.flat,
            after: target_flat,
        };
        let parent = (scanned.parent, scanned.flat);
        let applied = (self.apply_saving_first(&marker, &plan, sides, parent)).and_then(|mut a| {
            self.complete(&marker, &plan, sides, parent, &mut a)
                .map(|()| a)
        });
        let applied = match applied {
            Ok(applied) => applied,
            // Asked to stop: the marker stays, and the next writing command finishes.
            Err(TreeError::Interrupted) => return Err(TreeError::Interrupted),
            Err(e) => return Err(self.abandon(&marker, &plan, sides, parent, e)),
        };
        restore::put_back(&self.parts.root, &marker.lifted, &plan)?;
        // Only a move that left every planned path as the target has it leaves a memo.
        let memo = (scanned.basis)
            .filter(|_| applied.kept.is_empty() && ruled_out.is_empty())
            .and_then(|basis| {
                Snapshotter::new(self.parts).memo_after_move(basis, &plan, &target.record.root)
            });
        snap_store::failpoint!("before-head-commit");
        self.parts.store.commit(&Commit {
            history: Some(HistoryState {
                head: Some(marker.head),
                redo: marker.redo.clone(),
            }),
            stat_cache: StatCacheUpdate {
                walk: memo,
                put: vouched_rows(&applied.vouched),
                ..StatCacheUpdate::default()
            },
            ..Commit::default()
        })?;
        snap_store::failpoint!("after-head-commit");
        marker.remove(self.parts.store.dir())?;
        self.parts.emit(Event::Restored {
            op,
            head: target,
            paths_touched: applied.touched,
        });
        let mut kept = applied.kept;
        kept.extend(ruled_out);
        kept.extend(self.made_visible(&plan, target)?);
        kept.extend(self.left_hollow(&plan, &target.record.root)?);
        kept.sort_unstable();
        kept.dedup();
        Ok(kept)
    }
}

/// The stat cache rows a move vouches for: the large files it wrote (`restore::Applied`).
fn vouched_rows(vouched: &[(Vec<u8>, snap_store::StatEntry)]) -> snap_store::StatRows {
    let mut rows = snap_store::StatRows::default();
    for (path, entry) in vouched {
        rows.push(path, entry);
    }
    rows
}
