//! Undo and redo, and the move protocol every move shares (`move_to`: marker, guarded
//! apply, HEAD, marker removed; docs/SAFETY.md). Restore's planning lives in `restoring`,
//! what a move keeps in `kept`, and the apply with its saving first and roll-back in `apply`.

use super::{
    After, Capture, CaptureMode, Change, Commit, EntryKind, Event, FlatTree, HistoryState, Marker,
    Node, ObjectId, ObjectWriter, Op, PathChange, Plan, Run, Snapshot, SnapshotKind,
    StatCacheUpdate, StatKey, TreeError, UNBUILT, Unsaved, WalkBasis, Workspace, flat, restore,
};

/// The result of an undo, redo or restore (or of its preview).
#[derive(Clone, Debug)]
pub struct MoveOutcome {
    /// Undo, redo or restore.
    pub op: Op,
    /// True for a preview: nothing was written.
    pub dry_run: bool,
    /// The unsaved changes saved before moving (not in a preview).
    pub auto_saved: Option<Snapshot>,
    /// True when the working tree had unsaved changes.
    pub was_dirty: bool,
    /// The snapshot the working tree now matches (HEAD), or would match.
    pub target: Snapshot,
    /// For restore: the new snapshot recording it.
    pub created: Option<Snapshot>,
    /// Snapshots stepped over, nearest to where we started first.
    pub passed: Vec<Snapshot>,
    /// Paths that differ between the working tree and the target, in path order.
    pub changes: Vec<PathChange>,
    /// Planned paths left exactly as they were (docs/SAFETY.md): ignored, excluded, oversize or
    /// special files, directories still holding such files, and files that changed again
    /// after being saved. In path order. A preview names those the ignore rules keep.
    pub kept: Vec<Vec<u8>>,
}

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

/// What a restore moves the tree to: the root, the plan from the current tree, the target's
/// entries the plan needs (all of them when only some paths are restored), the changes it
/// records and the whole tree's files and bytes.
pub(super) struct RestoreTarget {
    pub(super) root: ObjectId,
    pub(super) plan: Plan,
    pub(super) flat: FlatTree,
    pub(super) changes: Vec<(Vec<u8>, Change)>,
    pub(super) totals: (u64, u64),
}

/// How a move records unsaved changes: the automatic snapshot's kind, and whether HEAD moves
/// to it (undo: it is the first step back) or not (redo: the stack stays whole).
pub(super) struct MoveSteps {
    pub(super) kind: SnapshotKind,
    pub(super) after: After,
}

/// How much of a stored tree a move plans from: where a target tree differs from it, or
/// along the paths a restore of some paths replaces.
#[derive(Clone, Copy)]
pub(super) enum Unfold<'a> {
    Against(&'a ObjectId),
    Along(&'a [Vec<u8>]),
}

const UNDO_STEPS: MoveSteps = MoveSteps {
    kind: SnapshotKind::AutoBeforeUndo,
    after: After::Advance,
};

const REDO_STEPS: MoveSteps = MoveSteps {
    kind: SnapshotKind::AutoBeforeRedo,
    after: After::Detached,
};

pub(super) const RESTORE_STEPS: MoveSteps = MoveSteps {
    kind: SnapshotKind::AutoBeforeRestore,
    after: After::Advance,
};

impl MoveOutcome {
    /// The outcome as planned, before anything is saved or written.
    pub(super) fn planned(
        op: Op,
        dry_run: bool,
        was_dirty: bool,
        target: Snapshot,
        passed: Vec<Snapshot>,
        changes: Vec<PathChange>,
    ) -> MoveOutcome {
        MoveOutcome {
            op,
            dry_run,
            auto_saved: None,
            was_dirty,
            target,
            created: None,
            passed,
            changes,
            kept: Vec::new(),
        }
    }
}

/// The working tree as a move's scan found it.
pub(super) struct Scanned<'a> {
    /// Every tracked path.
    pub(super) flat: &'a FlatTree,
    /// Each regular file's stat, in no particular order.
    pub(super) stats: &'a [(Vec<u8>, StatKey)],
    /// The root tree of `flat`, in the store.
    pub(super) root: ObjectId,
    /// The snapshot whose tree is `root` (the unsaved changes', or HEAD).
    pub(super) parent: Option<&'a Snapshot>,
    /// What the walk memo of the tree after the move is made from, if anything.
    pub(super) basis: Option<&'a WalkBasis>,
}

/// The working tree `base` with everything at or under each of `paths` taken from `source`.
pub(super) fn merge_paths(
    base: &FlatTree,
    source: &FlatTree,
    paths: &[Vec<u8>],
    seq: u64,
) -> Result<FlatTree, TreeError> {
    let under = |p: &[u8], prefix: &[u8]| {
        p == prefix || (p.starts_with(prefix) && p.get(prefix.len()) == Some(&b'/'))
    };
    for path in paths {
        if !source.keys().chain(base.keys()).any(|p| under(p, path)) {
            return Err(TreeError::PathNotInSnapshot(
                String::from_utf8_lossy(path).into_owned(),
                format!("#{seq} or the working tree"),
            ));
        }
    }
    let mut out: FlatTree = base
        .iter()
        .filter(|(p, _)| !paths.iter().any(|q| under(p, q)))
        .map(|(p, n)| (p.clone(), *n))
        .collect();
    for (path, node) in source
        .iter()
        .filter(|(p, _)| paths.iter().any(|q| under(p, q)))
    {
        out.insert(path.clone(), *node);
        let mut ancestor = flat::split(path).0;
        while !ancestor.is_empty() {
            // Rebuilt, with the source's mode (the restored paths come from there).
            let dir = Node {
                kind: EntryKind::Dir,
                size: 0,
                id: UNBUILT,
                mode: source.get(ancestor).and_then(|n| n.mode),
            };
            out.insert(ancestor.to_vec(), dir);
            ancestor = flat::split(ancestor).0;
        }
    }
    Ok(out)
}

impl Workspace {
    /// Walks `steps` parents back from `from`: the snapshots passed (nearest first) and the target.
    pub(super) fn walk_back(
        &self,
        from: &Snapshot,
        steps: u64,
    ) -> Result<(Vec<Snapshot>, Snapshot), TreeError> {
        let mut passed = Vec::new();
        let mut current = from.clone();
        for taken in 0..steps {
            // A parent that prune removed ends the chain like a root does.
            let Some(parent) = self.parent_of(&current)? else {
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

    /// Moves HEAD `n` snapshots back and makes the working tree match. Unsaved changes are
    /// saved first (as an `auto-before-undo` snapshot, which then counts as the first step).
    pub fn undo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.observed(self.undo_inner(n, run == Run::DryRun))
    }

    pub(super) fn undo_inner(&self, n: u64, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        let head = self
            .head()?
            .ok_or_else(|| TreeError::NothingToUndo("there are no snapshots yet".into()))?;
        if n == 0 {
            return Err(TreeError::NothingToUndo(
                "the number of steps must be at least 1".into(),
            ));
        }
        let history = self.store.history()?;
        // Unsaved changes count as the first step back.
        let prepared = self.prepare_move(Op::Undo, dry_run, (&head, &UNDO_STEPS), |dirty| {
            self.walk_back(&head, if dirty { n - 1 } else { n })
        })?;
        self.finish_undo(&head, prepared, history.redo)
    }

    /// Moves HEAD back to `target`, an ancestor of HEAD (or HEAD itself, which then only
    /// puts aside unsaved changes), as an undo of that many steps: unsaved changes are saved
    /// first, and redo comes back the same way.
    pub fn undo_to(&self, target: &ObjectId, run: Run) -> Result<MoveOutcome, TreeError> {
        self.observed(self.undo_to_inner(target, run == Run::DryRun))
    }

    fn undo_to_inner(&self, target: &ObjectId, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        let head = self
            .head()?
            .ok_or_else(|| TreeError::NothingToUndo("there are no snapshots yet".into()))?;
        let steps = self.steps_back_to(&head, target)?;
        let history = self.store.history()?;
        let prepared = self.prepare_move(Op::Undo, dry_run, (&head, &UNDO_STEPS), |dirty| {
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
            let Some(parent) = self.parent_of(&current)? else {
                let why = format!("{} is not before HEAD #{}", target.short(), head.record.seq);
                return Err(TreeError::NothingToUndo(why));
            };
            current = parent;
            steps += 1;
        }
        Ok(steps)
    }

    /// Moves HEAD `n` snapshots forward along the redo stack. Unsaved changes are saved first
    /// as an `auto-before-redo` snapshot (kept, shown by `log --all`), leaving the stack whole.
    pub fn redo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.observed(self.redo_inner(n, run == Run::DryRun))
    }

    pub(super) fn redo_inner(&self, n: u64, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        let history = self.store.history()?;
        if n == 0 || history.redo.len() < n as usize {
            let why = format!("the redo stack holds {} snapshot(s)", history.redo.len());
            return Err(TreeError::NothingToRedo(why));
        }
        let head = self
            .head()?
            .ok_or_else(|| TreeError::NothingToRedo("there are no snapshots yet".into()))?;
        let keep = history.redo.len() - n as usize;
        let passed = history.redo[keep..]
            .iter()
            .rev()
            .map(|id| self.snapshot(*id))
            .collect::<Result<Vec<_>, _>>()?;
        let target = passed
            .last()
            .cloned()
            .ok_or_else(|| TreeError::NothingToRedo("empty".into()))?;
        let prepared = self.prepare_move(Op::Redo, dry_run, (&head, &REDO_STEPS), |_| {
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
        dry_run: bool,
        (head, steps): (&Snapshot, &MoveSteps),
        choose: impl FnOnce(bool) -> Result<(Vec<Snapshot>, Snapshot), TreeError>,
    ) -> Result<PreparedMove<'_>, TreeError> {
        let writer = self.writer(dry_run);
        let (mut cap, diff) = self.capture_before_move(&writer, head)?;
        // A tree that differs from HEAD only where no save can record what is on disk is
        // HEAD's as far as history can say: not saved first, not a step (see `kept`).
        let dirty = cap.root != head.record.root
            && !self.differs_only_where_untrackable(&cap, head, diff.as_ref())?;
        let (passed, target) = choose(dirty)?;
        let (writer, saved) = match dirty {
            true => self.save_first(writer, &mut cap, diff, (head, steps))?,
            false => (writer, None),
        };
        self.unfold_for_plan(
            &mut cap,
            &head.record.root,
            Unfold::Against(&target.record.root),
        )?;
        let (plan, target_part) = Plan::to_stored(&self.store, &target.record.root, &cap.flat)?;
        let changes = plan.changes(&cap.flat);
        let outcome = MoveOutcome::planned(op, dry_run, dirty, target, passed, changes);
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
    fn capture_before_move(
        &self,
        writer: &ObjectWriter<'_>,
        head: &Snapshot,
    ) -> Result<(Capture, Option<flat::StoredDiff>), TreeError> {
        let mode = |prune| CaptureMode::BeforeMove {
            head: Some(head.record.root),
            prune,
        };
        let cap = self.capture_with(writer, mode(true))?;
        if cap.pruned.is_empty() || writer.is_dry_run() {
            return Ok((cap, None));
        }
        let pruned = |dir: &[u8]| cap.pruned.contains(dir);
        match flat::diff_stored_pruned(&self.store, &head.record.root, &cap.flat, &pruned)? {
            Some(diff) => Ok((cap, Some(diff))),
            None => Ok((self.capture_with(writer, mode(false))?, None)),
        }
    }

    /// The capture a whole-tree restore plans from: as undo's, against HEAD's root so that
    /// the walk memo can vouch for the tree, with unsaved changes saved first, then unfolded
    /// where `target` differs. Both steps read HEAD's trees from the store (the capture
    /// compares racy files with them, and takes the directories it leaves out from them). A
    /// restore has never needed them, since it can read the tree on disk whole, so a HEAD
    /// whose pack is damaged or gone does not stop it: it reads the disk instead. Returns
    /// the capture, the writer to go on with, and the unsaved changes' snapshot.
    pub(super) fn capture_for_restore<'s>(
        &'s self,
        writer: ObjectWriter<'s>,
        head: &Snapshot,
        unfold: Unfold<'_>,
    ) -> Result<(Capture, ObjectWriter<'s>, Option<Snapshot>), TreeError> {
        let whole_disk = |writer: &ObjectWriter<'_>| {
            let mode = CaptureMode::BeforeMove {
                head: None,
                prune: false,
            };
            self.capture_with(writer, mode)
        };
        let (mut cap, diff) = match self.capture_before_move(&writer, head) {
            Err(TreeError::Store(_)) => return Ok((whole_disk(&writer)?, writer, None)),
            captured => captured?,
        };
        let (writer, saved) = self.save_first(writer, &mut cap, diff, (head, &RESTORE_STEPS))?;
        if self
            .unfold_for_plan(&mut cap, &head.record.root, unfold)
            .is_err()
        {
            // After a save first, the disk is the saved tree: read whole, it is that again.
            cap = whole_disk(&writer)?;
        }
        Ok((cap, writer, saved))
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
        (head, steps): (&Snapshot, &MoveSteps),
    ) -> Result<(ObjectWriter<'s>, Option<Snapshot>), TreeError> {
        if cap.root == head.record.root || writer.is_dry_run() {
            return Ok((writer, None));
        }
        let unsaved = Unsaved {
            dirty: true,
            root: cap.root,
            flat: &cap.flat,
            cache: std::mem::take(&mut cap.cache),
            diff,
        };
        let saved = self.keep_unsaved(writer, unsaved, Some(head), steps.kind, steps.after)?;
        Ok((self.writer(false), saved))
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
        let stored = vouched || self.store.contains(&cap.root)?;
        cap.flat = match (unfold, stored) {
            (Unfold::Against(target), true) => {
                flat::unfold_against(&self.store, &cap.root, target)?
            }
            (Unfold::Along(paths), true) => flat::unfold_along(&self.store, &cap.root, paths)?,
            (unfold, false) => {
                let mut flat = std::mem::take(&mut cap.flat);
                let pruned = |dir: &[u8]| cap.pruned.contains(dir);
                match unfold {
                    Unfold::Against(target) => {
                        flat::unfold_pruned(&self.store, &mut flat, &pruned, target)?
                    }
                    Unfold::Along(paths) => {
                        flat::unfold_pruned_along(&self.store, &mut flat, &pruned, paths)?
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
        self.commit_packs(writer, cap.cache)?;
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

    /// The §7 protocol: marker, working tree, HEAD, marker removed, guarded by §14: new
    /// paths the ignore rules leave out are kept before anything is touched, each path is
    /// changed only while it holds what the scan saw, and a file found changed anyway is
    /// saved first. If the working tree cannot be changed, the paths the plan touched are put
    /// back and the marker removed, so the store stays usable. Returns the paths kept.
    pub(super) fn move_to(
        &self,
        op: Op,
        target: &Snapshot,
        redo: Vec<ObjectId>,
        scanned: Scanned<'_>,
        (plan, target_flat): (&Plan, &FlatTree),
    ) -> Result<Vec<Vec<u8>>, TreeError> {
        restore::check_unchanged(&self.root, plan, scanned.stats)?;
        let mut plan = plan.clone();
        let mut ruled_out = self.keep_ruled_out(&mut plan, scanned.flat);
        // Read-only directories it must fill are lifted; one snap may not chmod is kept.
        let read_only = restore::read_only_dirs(&self.root, &plan)?;
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
        marker.write(self.store.dir())?;
        snap_store::failpoint!("marker-written");
        restore::lift(&self.root, &marker.lifted)?;
        let sides = restore::Sides {
            before: scanned.flat,
            after: target_flat,
        };
        let applied =
            match self.apply_saving_first(&marker, &plan, sides, (scanned.parent, scanned.flat)) {
                Ok(applied) => applied,
                // Asked to stop: the marker stays, and the next writing command finishes.
                Err(TreeError::Interrupted) => return Err(TreeError::Interrupted),
                Err(e) => {
                    // If even the way back fails, the marker stays: the next writing command
                    // rolls the move forward instead.
                    // A version another process wrote that a step displaced before the
                    // failure waits under the operation's own name: stored by the sweep.
                    let back = self.roll_back(marker.op_id(), &plan, sides);
                    let modes = restore::put_back(&self.root, &marker.lifted, &Plan::default());
                    let swept = back.is_ok()
                        && modes.is_ok()
                        && (self.sweep_leftovers(
                            &marker,
                            &plan,
                            sides,
                            (scanned.parent, scanned.flat),
                        ))
                        .is_ok();
                    if swept {
                        marker.remove(self.store.dir())?;
                    }
                    return Err(e);
                }
            };
        restore::put_back(&self.root, &marker.lifted, &plan)?;
        // Only a move that left every planned path as the target has it leaves a memo.
        let memo = (scanned.basis)
            .filter(|_| applied.kept.is_empty() && ruled_out.is_empty())
            .and_then(|basis| self.memo_after_move(basis, &plan, &target.record.root));
        snap_store::failpoint!("before-head-commit");
        self.store.commit(&Commit {
            history: Some(HistoryState {
                head: Some(marker.head),
                redo: marker.redo.clone(),
            }),
            stat_cache: StatCacheUpdate {
                walk: memo,
                ..StatCacheUpdate::default()
            },
            ..Commit::default()
        })?;
        snap_store::failpoint!("after-head-commit");
        marker.remove(self.store.dir())?;
        self.emit(Event::Restored {
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

/// True when the tree a move's capture found (`root`) was saved first, so is in the store.
fn saved_root_is(outcome: &MoveOutcome, root: &ObjectId) -> bool {
    outcome
        .auto_saved
        .as_ref()
        .is_some_and(|s| s.record.root == *root)
}

/// The files and bytes of `flat` at and below `paths` (none within another); `None` when
/// a directory there may be folded (its files not listed).
pub(super) fn totals_under(flat: &FlatTree, paths: &[Vec<u8>]) -> Option<(u64, u64)> {
    let mut totals = (0, 0);
    for (path, node) in paths.iter().flat_map(|p| flat::within(flat, p)) {
        match node.kind {
            EntryKind::Dir if node.id != UNBUILT && flat::below(flat, path).next().is_none() => {
                return None;
            }
            EntryKind::Dir => {}
            _ => totals = (totals.0 + 1, totals.1 + node.size),
        }
    }
    Some(totals)
}
