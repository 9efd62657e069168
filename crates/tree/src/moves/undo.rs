//! Undo and redo, and what every move shares around its writing: the capture of the
//! working tree, the unsaved changes saved first, the plan, and the finish that moves HEAD.

use super::MoveOutcome;
use super::steps::{AutoSave, RestoreStart, SavedFirst, Scanned, Unfold, saved_root_is};
use crate::capture::Snapshotter;
use crate::capture::cascade::Heed;
use crate::capture::cascade::{Capture, CaptureMode};
use crate::error::TreeError;
use crate::flat::{self, FlatTree};
use crate::history::query::Reader;
use crate::marker::Op;
use crate::moves::Mover;
use crate::parts::Run;
use crate::record::Recorder;
use crate::record::Unsaved;
use crate::restore::Plan;
use crate::snapshot::Snapshot;
use snap_store::{ObjectId, ObjectWriter};

/// The redo stack after an undo that passed `outcome.passed`: saved unsaved changes start a
/// new line of history (the old stack goes) and are the first snapshot passed.
fn stack_after_undo(mut redo: Vec<ObjectId>, outcome: &mut MoveOutcome) -> Vec<ObjectId> {
    if let Some(auto) = &outcome.auto_saved {
        redo.clear();
        outcome.passed.insert(0, auto.clone());
    }
    redo.extend(outcome.passed.iter().map(|s| s.id));
    redo
}

/// An undo or redo planned but not yet written (see `Workspace::prepare_move`).
struct PreparedMove<'s> {
    writer: ObjectWriter<'s>,
    cap: Capture,
    plan: Plan,
    /// The parts of the target the plan needs (`Plan::to_stored`).
    target_part: FlatTree,
    outcome: MoveOutcome,
    /// The unsaved changes, when they were saved before planning (see `prepare_move`).
    saved: Option<Snapshot>,
}

impl Mover<'_> {
    /// Walks `steps` parents back from `from`: the snapshots passed (nearest first) and the target.
    pub(crate) fn walk_back(
        &self,
        from: &Snapshot,
        steps: u64,
    ) -> Result<(Vec<Snapshot>, Snapshot), TreeError> {
        let mut passed = Vec::new();
        let mut current = from.clone();
        for taken in 0..steps {
            // A parent that prune removed ends the chain like a root does.
            let Some(parent) = Reader::new(self.parts).parent_of(&current)? else {
                return Err(TreeError::NothingToUndo(format!(
                    "HEAD #{} has only {taken} snapshot(s) before it",
                    from.record.seq
                )));
            };
            passed.push(current);
            current = parent;
        }
        Ok((passed, current))
    }

    pub(crate) fn undo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.parts.observed(self.undo_inner(n, run))
    }

    pub(crate) fn undo_inner(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        let head = Reader::new(self.parts)
            .head()?
            .ok_or_else(|| TreeError::NothingToUndo("there are no snapshots yet".into()))?;
        if n == 0 {
            return Err(TreeError::NothingToUndo(
                "the number of steps must be at least 1".into(),
            ));
        }
        let history = self.parts.store.history()?;
        // Unsaved changes count as the first step back.
        let prepared = self.prepare_move(Op::Undo, run, (&head, AutoSave::Undo), |dirty| {
            self.walk_back(&head, if dirty { n - 1 } else { n })
        })?;
        self.finish_undo(&head, prepared, history.redo)
    }

    pub(crate) fn undo_to(&self, target: &ObjectId, run: Run) -> Result<MoveOutcome, TreeError> {
        self.parts.observed(self.undo_to_inner(target, run))
    }

    fn undo_to_inner(&self, target: &ObjectId, run: Run) -> Result<MoveOutcome, TreeError> {
        let head = Reader::new(self.parts)
            .head()?
            .ok_or_else(|| TreeError::NothingToUndo("there are no snapshots yet".into()))?;
        let steps = self.steps_back_to(&head, target)?;
        let history = self.parts.store.history()?;
        let prepared = self.prepare_move(Op::Undo, run, (&head, AutoSave::Undo), |dirty| {
            if steps == 0 && !dirty {
                let why = format!("HEAD is already #{}", head.record.seq);
                return Err(TreeError::NothingToUndo(why));
            }
            self.walk_back(&head, steps)
        })?;
        self.finish_undo(&head, prepared, history.redo)
    }

    /// How many parents back from `head` the snapshot `target` is.
    fn steps_back_to(&self, head: &Snapshot, target: &ObjectId) -> Result<u64, TreeError> {
        let mut current = head.clone();
        let mut steps = 0;
        while current.id != *target {
            let Some(parent) = Reader::new(self.parts).parent_of(&current)? else {
                let why = format!("{} is not before HEAD #{}", target.short(), head.record.seq);
                return Err(TreeError::NothingToUndo(why));
            };
            current = parent;
            steps += 1;
        }
        Ok(steps)
    }

    pub(crate) fn redo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.parts.observed(self.redo_inner(n, run))
    }

    pub(crate) fn redo_inner(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        let history = self.parts.store.history()?;
        if n == 0 || history.redo.len() < n as usize {
            let why = format!("the redo stack holds {} snapshot(s)", history.redo.len());
            return Err(TreeError::NothingToRedo(why));
        }
        let head = Reader::new(self.parts)
            .head()?
            .ok_or_else(|| TreeError::NothingToRedo("there are no snapshots yet".into()))?;
        let keep = history.redo.len() - n as usize;
        let passed = history.redo[keep..]
            .iter()
            .rev()
            .map(|id| Reader::new(self.parts).snapshot(*id))
            .collect::<Result<Vec<_>, _>>()?;
        let target = passed
            .last()
            .cloned()
            .ok_or_else(|| TreeError::NothingToRedo("empty".into()))?;
        let prepared = self.prepare_move(Op::Redo, run, (&head, AutoSave::Redo), |_| {
            Ok((passed, target))
        })?;
        self.finish_move(&head, prepared, |_| history.redo[..keep].to_vec())
    }

    /// What undo and redo share up to the point where they write: the capture, whether it
    /// differs from HEAD, the target `choose` picks given that (snapshots passed, target),
    /// and the plan from the tree to it. Unsaved changes are saved first (as `steps` says),
    /// so that a changed tree is read as a save reads it, only where it changed, and the
    /// plan unfolds the saved tree where the target differs.
    fn prepare_move(
        &self,
        op: Op,
        run: Run,
        (head, auto): (&Snapshot, AutoSave),
        choose: impl FnOnce(bool) -> Result<(Vec<Snapshot>, Snapshot), TreeError>,
    ) -> Result<PreparedMove<'_>, TreeError> {
        let writer = self.parts.writer(run);
        let (mut cap, diff) = self.capture_before_move(&writer, head, Heed::Source)?;
        // A tree that differs from HEAD only where no save can record what is on disk is
        // HEAD's as far as history can say: not saved first, not a step (see `kept`).
        let dirty = cap.root != head.record.root
            && !self.differs_only_where_untrackable(&cap, head, diff.as_ref())?;
        let (passed, target) = choose(dirty)?;
        let SavedFirst { writer, saved } = match dirty {
            true => self.save_first(writer, &mut cap, diff, (head, auto))?,
            false => SavedFirst {
                writer,
                saved: None,
            },
        };
        self.unfold_for_plan(
            &mut cap,
            &head.record.root,
            Unfold::Against(&target.record.root),
        )?;
        let (plan, target_part) =
            Plan::to_stored(&self.parts.store, &target.record.root, &cap.flat)?;
        let changes = plan.changes(&cap.flat);
        let outcome = MoveOutcome::planned(op, run, dirty, target, passed, changes);
        Ok(PreparedMove {
            writer,
            cap,
            plan,
            target_part,
            outcome,
            saved,
        })
    }

    /// The capture a move plans from. Where the walk memo cannot vouch for HEAD's tree, it
    /// leaves out what the tree cache vouches for, and returns the changes
    /// from HEAD that saving it first then records; when those would have to look under what
    /// it left out, it reads the tree whole instead. A dry run saves nothing, so needs none.
    /// `source` says whether the change source may name what to read.
    fn capture_before_move(
        &self,
        writer: &ObjectWriter<'_>,
        head: &Snapshot,
        source: Heed,
    ) -> Result<(Capture, Option<flat::StoredDiff>), TreeError> {
        let mode = |prune| CaptureMode::BeforeMove {
            head: Some(head.record.root),
            prune,
            source,
        };
        let cap = Snapshotter::new(self.parts).capture(writer, mode(true))?;
        if cap.pruned.is_empty() || writer.is_dry_run() {
            return Ok((cap, None));
        }
        let pruned = |dir: &[u8]| cap.pruned.contains(dir);
        match flat::diff_stored_pruned(&self.parts.store, &head.record.root, &cap.flat, &pruned)? {
            Some(diff) => Ok((cap, Some(diff))),
            None => Ok((
                Snapshotter::new(self.parts).capture(writer, mode(false))?,
                None,
            )),
        }
    }

    /// The capture a whole-tree restore plans from: as undo's, against HEAD's root so that
    /// the walk memo can vouch for the tree, with unsaved changes saved first, then unfolded
    /// where `target` differs. Both steps read HEAD's trees from the store (the capture
    /// compares racy files with them, and takes the directories it leaves out from them). A
    /// restore has never needed them, since it can read the tree on disk whole, so a HEAD
    /// whose pack is damaged or gone does not stop it: it reads the disk instead. Returns
    /// the capture, the writer to go on with, and the unsaved changes' snapshot.
    pub(crate) fn capture_for_restore<'s>(
        &'s self,
        writer: ObjectWriter<'s>,
        head: &Snapshot,
        (unfold, source): (Unfold<'_>, Heed),
    ) -> Result<RestoreStart<'s>, TreeError> {
        let whole_disk = |writer: &ObjectWriter<'_>| {
            let mode = CaptureMode::BeforeMove {
                head: None,
                prune: false,
                source: Heed::Walk,
            };
            Snapshotter::new(self.parts).capture(writer, mode)
        };
        let (mut cap, diff) = match self.capture_before_move(&writer, head, source) {
            Err(TreeError::Store(_)) => {
                let cap = whole_disk(&writer)?;
                let first = SavedFirst {
                    writer,
                    saved: None,
                };
                return Ok(RestoreStart { cap, first });
            }
            captured => captured?,
        };
        let first = self.save_first(writer, &mut cap, diff, (head, AutoSave::Restore))?;
        if self
            .unfold_for_plan(&mut cap, &head.record.root, unfold)
            .is_err()
        {
            // After a save first, the disk is the saved tree: read whole, it is that again.
            cap = whole_disk(&first.writer)?;
        }
        Ok(RestoreStart { cap, first })
    }

    /// Saves the unsaved changes `cap` holds, if any (not in a dry run), as `steps` says,
    /// before the move is planned: a capture that left out what the tree cache vouches for
    /// can then be unfolded from the store ([`Self::unfold_for_plan`]). `diff` is the changes
    /// from `head` such a capture needs recorded. Returns the writer to go on with, and the
    /// snapshot saved.
    fn save_first<'s>(
        &'s self,
        writer: ObjectWriter<'s>,
        cap: &mut Capture,
        diff: Option<flat::StoredDiff>,
        (head, auto): (&Snapshot, AutoSave),
    ) -> Result<SavedFirst<'s>, TreeError> {
        if cap.root == head.record.root || writer.is_dry_run() {
            return Ok(SavedFirst {
                writer,
                saved: None,
            });
        }
        let unsaved = Unsaved {
            dirty: true,
            root: cap.root,
            flat: &cap.flat,
            cache: std::mem::take(&mut cap.cache),
            diff,
        };
        let saved = Recorder::new(self.parts).keep_unsaved(
            writer,
            unsaved,
            Some(head),
            auto.kind(),
            auto.after(),
        )?;
        Ok(SavedFirst {
            writer: self.parts.writer(Run::Apply),
            saved,
        })
    }

    /// When `cap` does not list the whole tree (the walk memo vouched for HEAD's tree, `head`,
    /// and nothing was read; or the capture left out what the tree cache vouches for), its
    /// stored tree unfolded where the move needs: all that the plan and the guarded apply
    /// read. (A dirty capture's empty tree is not in the store yet.) Unsaved changes a dry
    /// run did not save are not in the store either: then only the directories the capture
    /// left out are read from it, where they differ from the target or lie along the paths
    /// restored.
    fn unfold_for_plan(
        &self,
        cap: &mut Capture,
        head: &ObjectId,
        unfold: Unfold<'_>,
    ) -> Result<(), snap_store::StoreError> {
        let vouched = cap.root == *head && cap.flat.is_empty();
        if cap.pruned.is_empty() && !vouched {
            return Ok(());
        }
        let stored = vouched || self.parts.store.contains(&cap.root)?;
        cap.flat = match (unfold, stored) {
            (Unfold::Against(target), true) => {
                flat::unfold_against(&self.parts.store, &cap.root, target)?
            }
            (Unfold::Along(paths), true) => {
                flat::unfold_along(&self.parts.store, &cap.root, paths)?
            }
            (unfold, false) => {
                let mut flat = std::mem::take(&mut cap.flat);
                let pruned = |dir: &[u8]| cap.pruned.contains(dir);
                match unfold {
                    Unfold::Against(target) => {
                        flat::unfold_pruned(&self.parts.store, &mut flat, &pruned, target)?
                    }
                    Unfold::Along(paths) => {
                        flat::unfold_pruned_along(&self.parts.store, &mut flat, &pruned, paths)?
                    }
                }
                flat
            }
        };
        cap.pruned.clear();
        Ok(())
    }

    /// The rest of an undo: unsaved changes are saved as the first step back (HEAD moves to
    /// them), and the redo stack is as [`stack_after_undo`] leaves it.
    fn finish_undo(
        &self,
        head: &Snapshot,
        prepared: PreparedMove<'_>,
        redo: Vec<ObjectId>,
    ) -> Result<MoveOutcome, TreeError> {
        self.finish_move(head, prepared, |outcome| stack_after_undo(redo, outcome))
    }

    /// The rest of an undo or redo: a preview names what the ignore rules would keep;
    /// otherwise (unsaved changes already saved by `prepare_move`) `redo` gives the new redo
    /// stack, and the tree is moved.
    fn finish_move(
        &self,
        head: &Snapshot,
        prepared: PreparedMove<'_>,
        redo: impl FnOnce(&mut MoveOutcome) -> Vec<ObjectId>,
    ) -> Result<MoveOutcome, TreeError> {
        let PreparedMove {
            writer,
            cap,
            plan,
            target_part,
            mut outcome,
            saved,
        } = prepared;
        if outcome.dry_run {
            outcome.kept = self.keep_ruled_out(&mut plan.clone(), &cap.flat);
            return Ok(outcome);
        }
        // Unsaved changes were saved in `prepare_move`; what is left is the capture's packs
        // and cache rows (a tree that was HEAD's).
        Recorder::new(self.parts).commit_packs(writer, cap.cache)?;
        outcome.auto_saved = saved;
        let redo = redo(&mut outcome);
        // The tree the marker names must be in the store: the unsaved changes' when they were
        // saved; else HEAD's, which differs from the capture only at untrackable paths,
        // which the guards keep.
        let from = if saved_root_is(&outcome, &cap.root) {
            cap.root
        } else {
            head.record.root
        };
        let scanned = Scanned {
            flat: &cap.flat,
            stats: &cap.stats,
            root: from,
            parent: Some(outcome.auto_saved.as_ref().unwrap_or(head)),
            basis: cap.basis.as_ref(),
        };
        outcome.kept = self.move_to(
            outcome.op,
            &outcome.target,
            redo,
            scanned,
            (&plan, &target_part),
        )?;
        Ok(outcome)
    }
}
