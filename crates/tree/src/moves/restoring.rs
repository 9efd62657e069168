//! `restore`: the working tree (or some paths of it) made to match a snapshot, recorded as
//! a new snapshot so that undo returns to the state before; what it records at paths it
//! keeps is what a save right after would. The move itself is `move_to` (in `apply`).

use super::MoveOutcome;
use super::steps::{
    AutoSave, RestoreStart, RestoreTarget, SavedFirst, Scanned, Unfold, merge_paths, totals_under,
};
use crate::capture::Snapshotter;
use crate::capture::cascade::CaptureMode;
use crate::capture::cascade::Heed;
use crate::error::TreeError;
use crate::flat::{self, FlatTree, diff_files};
use crate::history::query::Reader;
use crate::marker::Op;
use crate::moves::Mover;
use crate::parts::Run;
use crate::record::Recorder;
use crate::record::{After, NewSnapshot, SaveOptions, Unsaved, flat_totals, totals_after};
use crate::restore::Plan;
use crate::snapshot::Snapshot;
use snap_store::{ChangeStats, ObjectWriter, SnapshotKind, StatCacheUpdate};

impl Mover<'_> {
    pub(crate) fn restore(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<MoveOutcome, TreeError> {
        self.parts
            .observed(self.restore_inner(reference, paths, run))
    }

    pub(crate) fn restore_inner(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<MoveOutcome, TreeError> {
        let source = Reader::new(self.parts).resolve(reference)?;
        let head = Reader::new(self.parts).head()?;
        let whole = paths.is_empty() || paths.iter().any(|p| p.is_empty());
        // Planned as undo is, from HEAD's tree (or the unsaved changes', saved first) where
        // the walk memo or the tree cache vouches for it, unfolded where the restore needs.
        let unfold = match whole {
            true => Unfold::Against(&source.record.root),
            false => Unfold::Along(paths),
        };
        let start = self.restore_start(
            self.parts.writer(run),
            head.as_ref(),
            (unfold, Heed::Source),
        )?;
        let target = if whole {
            self.restore_whole(&start.cap.flat, &source)?
        } else {
            self.restore_paths(&start, head.as_ref(), &source, paths)?
        };
        let message = match format!("#{}", source.record.seq) {
            seq if seq == reference => format!("restore {seq}"),
            seq => format!("restore {reference} ({seq})"),
        };
        let opts = SaveOptions {
            message,
            ..SaveOptions::default()
        };
        self.finish_restore(run, (head, start), target, source, &opts)
    }

    /// The capture a restore plans from, the dirty tree saved first (not in a dry run);
    /// `source` says whether the change source may name what to read.
    pub(crate) fn restore_start<'s>(
        &'s self,
        writer: ObjectWriter<'s>,
        head: Option<&Snapshot>,
        (unfold, source): (Unfold<'_>, Heed),
    ) -> Result<RestoreStart<'s>, TreeError> {
        if let Some(head) = head {
            return self.capture_for_restore(writer, head, (unfold, source));
        }
        let mode = CaptureMode::BeforeMove {
            head: None,
            prune: false,
            source: Heed::Walk,
        };
        let cap = Snapshotter::new(self.parts).capture(&writer, mode)?;
        let first = SavedFirst {
            writer,
            saved: None,
        };
        Ok(RestoreStart { cap, first })
    }

    /// Records and writes a planned restore: what the rules keep is left out, the unsaved
    /// changes are saved (again, if the disk differs from what was saved first), and the
    /// tree is moved to `target`, recorded as a `restore` snapshot with `opts`. `source` is
    /// what the outcome names as restored from.
    pub(crate) fn finish_restore(
        &self,
        run: Run,
        (head, start): (Option<Snapshot>, RestoreStart<'_>),
        target: RestoreTarget,
        source: Snapshot,
        opts: &SaveOptions,
    ) -> Result<MoveOutcome, TreeError> {
        let RestoreStart {
            cap,
            first: SavedFirst { writer, saved },
        } = start;
        let dirty = saved.is_some() || head.as_ref().is_none_or(|h| h.record.root != cap.root);
        let target = self.without_ruled_out(&writer, target, &cap.flat)?;
        let mut outcome =
            MoveOutcome::planned(Op::Restore, run, dirty, source, Vec::new(), target.changes);
        if run == Run::DryRun {
            outcome.kept = self.keep_ruled_out(&mut target.plan.clone(), &cap.flat);
            return Ok(outcome);
        }
        // Saved first, or not; and saved (again) if the disk differs from that.
        let base = saved.clone().or(head.clone());
        let unsaved = Unsaved {
            dirty: base.as_ref().is_none_or(|b| b.record.root != cap.root),
            root: cap.root,
            flat: &cap.flat,
            cache: cap.cache,
            diff: None,
        };
        let kept = Recorder::new(self.parts).keep_unsaved(
            writer,
            unsaved,
            base.as_ref(),
            AutoSave::Restore.kind(),
            AutoSave::Restore.after(),
        )?;
        outcome.auto_saved = kept.or(saved);
        // The tree already matches: HEAD now names it (the unsaved changes' snapshot, if any).
        // What the rules leave out is named as kept all the same.
        if target.root == cap.root {
            outcome.kept = self.keep_ruled_out(&mut target.plan.clone(), &cap.flat);
            return Ok(outcome);
        }
        let parent = outcome.auto_saved.clone().or(head);
        let created = Recorder::new(self.parts).record_snapshot(
            self.parts.store.writer(),
            StatCacheUpdate::default(),
            NewSnapshot {
                kind: SnapshotKind::Restore,
                opts,
                root: target.root,
                flat: &target.flat,
                totals: target.totals,
                parent: parent.as_ref(),
                parent_flat: &cap.flat,
                changes: &outcome.changes,
                after: After::Detached,
            },
        )?;
        let scanned = Scanned {
            flat: &cap.flat,
            stats: &cap.stats,
            root: cap.root,
            parent: parent.as_ref(),
            basis: cap.basis.as_ref(),
        };
        outcome.kept = self.move_to(
            Op::Restore,
            &created,
            Vec::new(),
            scanned,
            (&target.plan, &target.flat),
        )?;
        outcome.target = created.clone();
        outcome.created = Some(created);
        Ok(outcome)
    }

    /// What restoring all of `source` moves the tree `current` to: planned from the stored
    /// trees, reading only where they differ from `current`'s.
    fn restore_whole(
        &self,
        current: &FlatTree,
        source: &Snapshot,
    ) -> Result<RestoreTarget, TreeError> {
        let (plan, part) = Plan::to_stored(&self.parts.store, &source.record.root, current)?;
        let stats = &source.record.stats;
        Ok(RestoreTarget {
            root: source.record.root,
            changes: plan.changes(current),
            plan,
            flat: part,
            totals: (stats.files, stats.bytes),
        })
    }

    /// What restoring `paths` of `source` moves the captured tree to: those paths merged
    /// into it. The capture is whole, or unfolded along `paths` (its other directories single
    /// nodes whose trees are in the store); its totals are those of the snapshot it is.
    pub(crate) fn restore_paths(
        &self,
        start: &RestoreStart<'_>,
        head: Option<&Snapshot>,
        source: &Snapshot,
        paths: &[Vec<u8>],
    ) -> Result<RestoreTarget, TreeError> {
        let (current, writer) = (&start.cap.flat, &start.first.writer);
        // The totals follow from those of the snapshot the capture's tree is, if any.
        let known = (start.first.saved.as_ref().or(head))
            .filter(|s| s.record.root == start.cap.root)
            .map(|s| &s.record.stats);
        let totals: Option<&ChangeStats> = known;
        let source_part = flat::unfold_along(&self.parts.store, &source.record.root, paths)?;
        let mut merged = merge_paths(current, &source_part, paths, source.record.seq)?;
        // Every directory above a restored path is rebuilt (also where the path is only
        // taken away); any other with an id is unchanged below and taken as built.
        for path in paths {
            flat::unbuild_above(&mut merged, path);
        }
        let root = flat::build_trees_reusing(writer, &mut merged, &|_| None)?;
        let changes = diff_files(current, &merged);
        let totals = match totals {
            Some(stats) => totals_after(stats, &changes, current, &merged),
            None => flat_totals(&merged),
        };
        Ok(RestoreTarget {
            root,
            plan: Plan::new(current, &merged),
            changes,
            totals,
            flat: merged,
        })
    }

    /// A restore records what a save right after it would (docs/SAFETY.md): where it keeps a
    /// path because the ignore rules leave it out, or because it holds what no save can
    /// record (an oversize, special or unreadable file), the new snapshot holds what the tree
    /// holds there (nothing tracked), not the source's. Under a plan that changes the rules
    /// only the second kind is taken out: the move's own rules decide for the first, and such
    /// paths are named as made visible.
    fn without_ruled_out(
        &self,
        writer: &ObjectWriter<'_>,
        mut target: RestoreTarget,
        current: &FlatTree,
    ) -> Result<RestoreTarget, TreeError> {
        let mut kept = match target.plan.changes_rules() {
            true => Vec::new(),
            false => self.keep_ruled_out_now(&mut target.plan.clone(), current),
        };
        let in_the_way: Vec<Vec<u8>> = (target.plan.write.iter())
            .map(|(path, _)| path)
            .filter(|p| !current.contains_key(*p) && !kept.iter().any(|k| flat::is_within(p, k)))
            .filter(|p| self.untrackable_on_disk(p))
            .cloned()
            .collect();
        kept.extend(in_the_way);
        kept.sort_unstable();
        // Each kept path is listed in the target (the plan writes it), so every directory
        // above it is unfolded and may be rebuilt; a directory in the tree there is left as
        // it is, since its totals are not known here.
        let listed = kept.iter().all(|k| target.flat.contains_key(k));
        let (Some(gone), Some(back), true) = (
            totals_under(&target.flat, &kept),
            totals_under(current, &kept),
            listed && !kept.is_empty(),
        ) else {
            return Ok(target);
        };
        // The new root is built from the target's tree listed along the kept paths (every
        // sibling folded under its id): the plan's part of the target, which a whole restore
        // holds, lists only what the plan touches. A target built for a restore of some paths
        // is not in the store yet, and its part is then the whole tree.
        let mut whole = match flat::unfold_along(&self.parts.store, &target.root, &kept) {
            Ok(along) => along,
            Err(_) => target.flat.clone(),
        };
        for flat in [&mut target.flat, &mut whole] {
            for path in &kept {
                flat::remove_within(flat, path);
                flat.extend(flat::within(current, path).map(|(p, n)| (p.clone(), *n)));
                flat::unbuild_above(flat, path);
            }
        }
        target.root = flat::build_trees_reusing(writer, &mut whole, &|_| None)?;
        (target.changes).retain(|(p, _)| !kept.iter().any(|k| flat::is_within(p, k)));
        let (files, bytes) = target.totals;
        target.totals = (
            files.saturating_sub(gone.0).saturating_add(back.0),
            bytes.saturating_sub(gone.1).saturating_add(back.1),
        );
        Ok(target)
    }
}
