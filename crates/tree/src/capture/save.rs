//! `save`, `status` and `diff`: the working tree against HEAD, found as a save finds it.

use crate::capture::Snapshotter;
use crate::capture::cascade::{Capture, CaptureMode};
use crate::capture::large::{LargeFile, large_added};
use crate::diff::{self, DiffEntry, FileDiff, Side, TreeDiff};
use crate::error::TreeError;
use crate::flat::{self, FlatTree, Node, diff_files};
use crate::history::query::Reader;
use crate::record::Recorder;
use crate::record::{After, NewSnapshot, SaveOptions, flat_totals, totals_after};
use crate::scan::ScanReport;
use crate::snapshot::{PathChange, Snapshot};
use crate::upkeep::Upkeep;
use snap_store::UntrackedFile;
use snap_store::{GcReport, ObjectId, ObjectWriter, PruneReport, SnapshotKind, StatCacheUpdate};
use std::collections::HashSet;

/// The result of a save.
#[derive(Clone, Debug)]
pub struct SaveOutcome {
    /// `None` when nothing changed.
    pub snapshot: Option<Snapshot>,
    /// Paths changed against HEAD, in path order; empty when nothing was saved.
    pub changes: Vec<PathChange>,
    /// Files the scan skipped or saw vanish.
    pub report: ScanReport,
    /// Snapshots pruned (and what gc gave back) by the automatic retention this save ran.
    pub retention: Option<(PruneReport, GcReport)>,
    /// The upkeep after the commit that failed (merging small packs), when it did: the
    /// snapshot is saved all the same, and the next save tries the upkeep again.
    pub upkeep_error: Option<String>,
    /// Files of at least `large_file_size` bytes this save took for the first time.
    pub large_added: Vec<LargeFile>,
    /// Files no snapshot holds (over `max_file_size`, or excluded by path) that the last
    /// save saw on disk and that are gone now: nothing can bring them back.
    pub untracked_removed: Vec<UntrackedFile>,
}

/// The working tree against HEAD.
#[derive(Clone, Debug)]
pub struct Status {
    /// HEAD's snapshot; `None` before the first.
    pub head: Option<Snapshot>,
    /// Paths that differ from HEAD's tree, in path order.
    pub changes: Vec<PathChange>,
    /// Directory-level changes a save would also record, in path order: empty directories
    /// added or removed, directories whose mode changed.
    pub dirs: Vec<PathChange>,
    /// Files the scan skipped or saw vanish.
    pub report: ScanReport,
    /// Snapshots on the redo stack.
    pub redo_depth: usize,
    /// Files of at least `large_file_size` bytes the next save would take for the first time.
    pub large_added: Vec<LargeFile>,
    /// The exact renames among `changes` (a deletion and an addition of one content).
    pub renames: Vec<flat::Rename>,
}

/// The working tree against HEAD (see `Workspace::against_head`).
pub(super) struct AgainstHead {
    /// Changed paths in path order.
    pub(super) changes: Vec<PathChange>,
    /// The working tree's root tree id.
    pub(super) root: ObjectId,
    /// HEAD's entries of at least the changed paths.
    pub(super) old: FlatTree,
    /// The working tree's entries of at least the changed paths.
    pub(super) new: FlatTree,
    /// Directories `new` lists only as themselves, their trees known (`Capture::pruned`).
    pub(super) pruned: HashSet<Vec<u8>>,
    pub(super) report: ScanReport,
}

impl Snapshotter<'_> {
    pub(crate) fn save(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.parts.observed(self.save_inner(opts))
    }

    pub(crate) fn save_inner(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        let head = Reader::new(self.parts).head()?;
        let writer = self.parts.store.writer();
        let clean_root = head.as_ref().map(|h| h.record.root);
        let mut cap = self.capture(
            &writer,
            CaptureMode::Save {
                head: clean_root.filter(|_| !opts.allow_empty),
            },
        )?;
        let untracked = self.untracked(&cap.report.too_large)?;
        cap.cache.untracked = untracked.now;
        if head.as_ref().is_some_and(|h| h.record.root == cap.root) && !opts.allow_empty {
            Recorder::new(self.parts).commit_packs(writer, cap.cache)?;
            return Ok(SaveOutcome {
                snapshot: None,
                changes: Vec::new(),
                report: cap.report,
                retention: None,
                upkeep_error: None,
                large_added: Vec::new(),
                untracked_removed: untracked.removed,
            });
        }
        // `head_flat` holds just the old entries of the changed paths, which is all the line
        // counts need.
        let (changes, head_flat) = self.diff_from_head(&writer, head.as_ref(), &mut cap)?;
        let large_added = large_added(
            &changes,
            &head_flat,
            &cap.flat,
            self.parts.config.large_file_size,
        );
        let totals = match (cap.pruned.is_empty(), &head) {
            (false, Some(h)) => totals_after(&h.record.stats, &changes, &head_flat, &cap.flat),
            _ => flat_totals(&cap.flat),
        };
        let record = Recorder::new(self.parts).new_record(NewSnapshot {
            kind: SnapshotKind::Save,
            opts,
            root: cap.root,
            flat: &cap.flat,
            totals,
            parent: head.as_ref(),
            parent_flat: &head_flat,
            changes: &changes,
            after: After::Advance,
        })?;
        // The commit reads none of the working tree's entries: a first save of a million
        // files gives their memory back before its commit, which has its own peak.
        drop(std::mem::take(&mut cap.flat));
        let snapshot =
            Recorder::new(self.parts).commit_record(writer, cap.cache, record, After::Advance)?;
        let retention = Upkeep::new(self.parts).auto_retention()?;
        // gc merges small packs itself; otherwise a save past the pack threshold ends with a
        // bounded merge, so one-file saves do not leave a pack file each. The snapshot is
        // committed: a failed merge is reported, never the save's failure.
        let merge = retention
            .as_ref()
            .is_none_or(|(p, _)| p.removed.is_empty())
            .then(|| self.parts.store.merge_small_packs());
        let upkeep_error = merge.and_then(|m| m.err()).map(|e| e.to_string());
        Ok(SaveOutcome {
            snapshot: Some(snapshot),
            changes,
            report: cap.report,
            retention,
            upkeep_error,
            large_added,
            untracked_removed: untracked.removed,
        })
    }

    pub(crate) fn save_empty_tree(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        let head = Reader::new(self.parts).head()?;
        let writer = self.parts.store.writer();
        let mut empty = FlatTree::new();
        let root = flat::build_trees_reusing(&writer, &mut empty, &|_| None)?;
        let (changes, head_flat) = match &head {
            Some(h) => flat::diff_stored(&self.parts.store, &h.record.root, &empty)?,
            None => (Vec::new(), FlatTree::new()),
        };
        let snapshot = Recorder::new(self.parts).record_snapshot(
            writer,
            StatCacheUpdate::default(),
            NewSnapshot {
                kind: SnapshotKind::Save,
                opts,
                root,
                flat: &empty,
                totals: (0, 0),
                parent: head.as_ref(),
                parent_flat: &head_flat,
                changes: &changes,
                after: After::Advance,
            },
        )?;
        Ok(SaveOutcome {
            snapshot: Some(snapshot),
            changes,
            report: ScanReport::default(),
            retention: None,
            upkeep_error: None,
            large_added: Vec::new(),
            untracked_removed: Vec::new(),
        })
    }

    pub(crate) fn status(&self) -> Result<Status, TreeError> {
        let head = Reader::new(self.parts).head()?;
        let against = self.against_head(head.as_ref())?;
        let redo_depth = self.parts.store.history()?.redo.len();
        // Only status lists directory-level changes, so only status looks for them.
        let dirs = match &head {
            Some(h) if h.record.root == against.root => Vec::new(),
            _ => flat::dir_changes(
                &self.parts.store,
                head.as_ref().map(|h| &h.record.root),
                &against.new,
            )?,
        };
        let threshold = self.parts.config.large_file_size;
        let large_added = large_added(&against.changes, &against.old, &against.new, threshold);
        let renames = Reader::new(self.parts).renames_among(
            &Side::Snapshot(head.clone().map(Box::new)),
            &Side::WorkingTree,
            &against.changes,
            &against.old,
            &against.new,
        )?;
        Ok(Status {
            large_added,
            renames,
            changes: against.changes,
            dirs,
            head,
            report: against.report,
            redo_depth,
        })
    }

    /// What differs from `head` to the working tree, found as a save finds it (the walk
    /// memo, the pruned scan, a diff by tree ids); writes nothing.
    fn against_head(&self, head: Option<&Snapshot>) -> Result<AgainstHead, TreeError> {
        let writer = self.parts.store.dry_writer();
        let mut cap = self.capture(
            &writer,
            CaptureMode::Save {
                head: head.map(|h| h.record.root),
            },
        )?;
        let (changes, old) = match head {
            Some(h) if h.record.root == cap.root => (Vec::new(), FlatTree::new()),
            _ => self.diff_from_head(&writer, head, &mut cap)?,
        };
        Ok(AgainstHead {
            changes,
            root: cap.root,
            old,
            new: cap.flat,
            pruned: cap.pruned,
            report: cap.report,
        })
    }

    /// The changes from `head` to the capture `cap`, and HEAD's entries of the changed paths.
    /// Only the directories whose tree ids differ from HEAD's are read. When HEAD differs
    /// from the tree cache under a directory `cap` pruned, `cap` becomes a whole capture.
    pub(crate) fn diff_from_head(
        &self,
        writer: &ObjectWriter<'_>,
        head: Option<&Snapshot>,
        cap: &mut Capture,
    ) -> Result<flat::StoredDiff, TreeError> {
        let Some(h) = head else {
            return Ok((diff_files(&FlatTree::new(), &cap.flat), FlatTree::new()));
        };
        let pruned = |dir: &[u8]| cap.pruned.contains(dir);
        match flat::diff_stored_pruned(&self.parts.store, &h.record.root, &cap.flat, &pruned) {
            Ok(Some(diff)) => return Ok(diff),
            Ok(None) => {}
            Err(snap_store::StoreError::MissingObject { .. }) => {
                return self.diff_from_lost(writer, cap);
            }
            Err(e) => return Err(e.into()),
        }
        *cap = self.capture(writer, CaptureMode::Whole)?;
        match flat::diff_stored(&self.parts.store, &h.record.root, &cap.flat) {
            Err(snap_store::StoreError::MissingObject { .. }) => self.diff_from_lost(writer, cap),
            diff => Ok(diff?),
        }
    }

    /// The changes to `cap` from a HEAD whose trees the catalog no longer holds (a repair
    /// left out what had rotted): every path counts as added. Nothing missing can be taken
    /// for stored, so the save writes the trees it needs anew, and `cap` becomes a whole
    /// capture (what it left out was vouched for by HEAD's trees).
    fn diff_from_lost(
        &self,
        writer: &ObjectWriter<'_>,
        cap: &mut Capture,
    ) -> Result<flat::StoredDiff, TreeError> {
        if !cap.pruned.is_empty() {
            *cap = self.capture(writer, CaptureMode::Whole)?;
        }
        Ok((diff_files(&FlatTree::new(), &cap.flat), FlatTree::new()))
    }

    pub(crate) fn diff(
        &self,
        from: Option<&str>,
        to: Option<&str>,
        paths: &[Vec<u8>],
    ) -> Result<TreeDiff, TreeError> {
        let from_head = from.is_none();
        let from = match from {
            Some(r) => Side::Snapshot(Some(Box::new(Reader::new(self.parts).resolve(r)?))),
            None => Side::Snapshot(Reader::new(self.parts).head()?.map(Box::new)),
        };
        let to = match to {
            Some(r) => Side::Snapshot(Some(Box::new(Reader::new(self.parts).resolve(r)?))),
            None => Side::WorkingTree,
        };
        let (old, new, changes) = match (&from, &to) {
            // The default, HEAD against the working tree: only the changed paths are read.
            (Side::Snapshot(head), Side::WorkingTree) if from_head => {
                let against = self.against_head(head.as_deref())?;
                (against.old, against.new, against.changes)
            }
            // Another snapshot against the working tree, found as a save finds it: the
            // directories the tree cache vouches for are read from the store where they
            // differ from the snapshot's.
            (Side::Snapshot(Some(a)), Side::WorkingTree) => self.against_snapshot(a)?,
            // Two snapshots: only the directories whose trees differ are read.
            (Side::Snapshot(Some(a)), Side::Snapshot(Some(b))) => {
                let (old, new) =
                    flat::unfold_pair(&self.parts.store, &a.record.root, &b.record.root)?;
                let changes = diff_files(&old, &new);
                (old, new, changes)
            }
            _ => {
                let (old, new) = (self.side_flat(&from)?, self.side_flat(&to)?);
                let changes = diff_files(&old, &new);
                (old, new, changes)
            }
        };
        let wanted = |p: &[u8]| {
            paths.is_empty()
                || paths.iter().any(|q| {
                    q.is_empty()
                        || p == q.as_slice()
                        || (p.starts_with(q) && p.get(q.len()) == Some(&b'/'))
                })
        };
        let entries = changes
            .into_iter()
            .filter(|(p, _)| wanted(p))
            .map(|(path, change)| DiffEntry::between(&old, &new, path, change))
            .collect();
        Ok(TreeDiff { from, to, entries })
    }

    /// The old entries, the working tree's and the changes from snapshot `a` to the working
    /// tree, reading only the directories that differ.
    fn against_snapshot(
        &self,
        a: &Snapshot,
    ) -> Result<(FlatTree, FlatTree, Vec<PathChange>), TreeError> {
        let head = Reader::new(self.parts).head()?;
        let mut against = self.against_head(head.as_ref())?;
        match head {
            // The tree is HEAD's: two stored trees, each unfolded against the other.
            Some(h) if h.record.root == against.root => {
                let (old, new) =
                    flat::unfold_pair(&self.parts.store, &a.record.root, &h.record.root)?;
                let changes = diff_files(&old, &new);
                Ok((old, new, changes))
            }
            _ => {
                let pruned = |dir: &[u8]| against.pruned.contains(dir);
                flat::unfold_pruned(&self.parts.store, &mut against.new, &pruned, &a.record.root)?;
                let (changes, old) =
                    flat::diff_stored(&self.parts.store, &a.record.root, &against.new)?;
                Ok((old, against.new, changes))
            }
        }
    }

    pub(crate) fn side_flat(&self, side: &Side) -> Result<FlatTree, TreeError> {
        match side {
            Side::Snapshot(s) => Reader::new(self.parts).flat_of(s.as_deref()),
            Side::WorkingTree => Ok(self
                .capture(&self.parts.store.dry_writer(), CaptureMode::Whole)?
                .flat),
        }
    }

    pub(crate) fn file_diff(
        &self,
        diff: &TreeDiff,
        entry: &DiffEntry,
    ) -> Result<FileDiff, TreeError> {
        // Over the line-diff limit is binary by size: never read whole (files are streamed).
        let too_large = |n: &Option<Node>| n.is_some_and(|n| n.size > diff::MAX_DIFF_BYTES as u64);
        if too_large(&entry.old) || too_large(&entry.new) {
            return Ok(FileDiff::Binary {
                old_size: entry.old.map(|n| n.size),
                new_size: entry.new.map(|n| n.size),
            });
        }
        let old = entry
            .old
            .map(|n| Reader::new(self.parts).side_content(&diff.from, &entry.path, &n))
            .transpose()?;
        let new = entry
            .new
            .map(|n| Reader::new(self.parts).side_content(&diff.to, &entry.path, &n))
            .transpose()?;
        Ok(diff::diff_files(old.as_deref(), new.as_deref()))
    }
}
