//! `save`, `status` and `diff`: the working tree against HEAD, found as a save finds it.

use super::large::{LargeFile, large_added};
use super::{
    After, Capture, CaptureMode, DiffEntry, EntryKind, FileDiff, FlatTree, GcReport, HashSet,
    NewSnapshot, Node, ObjectId, ObjectWriter, PathChange, PruneReport, ScanReport, Side, Snapshot,
    SnapshotKind, StatCacheUpdate, TreeDiff, TreeError, Workspace, diff, diff_files, flat,
    flat_totals, scan, totals_after,
};
use snap_store::UntrackedFile;

/// What `save` records besides the tree.
#[derive(Clone, Debug, Default)]
pub struct SaveOptions {
    /// Free text shown by `log`.
    pub message: String,
    /// Agent step (turn) number; makes the snapshot resolvable as `step:N`.
    pub step: Option<u64>,
    /// Agent session name.
    pub session: Option<String>,
    /// Free key=value metadata, kept in the order given.
    pub meta: Vec<(String, String)>,
    /// Make a snapshot even when nothing changed.
    pub allow_empty: bool,
}

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

impl Workspace {
    /// Snapshots the working tree if it differs from HEAD (or always, with `allow_empty`).
    pub fn save(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.observed(self.save_inner(opts))
    }

    pub(super) fn save_inner(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        let head = self.head()?;
        let writer = self.store.writer();
        let clean_root = head.as_ref().map(|h| h.record.root);
        let mut cap = self.capture_with(
            &writer,
            CaptureMode::Save {
                head: clean_root.filter(|_| !opts.allow_empty),
            },
        )?;
        let untracked = self.untracked(&cap.report.too_large)?;
        cap.cache.untracked = untracked.now;
        if head.as_ref().is_some_and(|h| h.record.root == cap.root) && !opts.allow_empty {
            self.commit_packs(writer, cap.cache)?;
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
        let large_added = large_added(&changes, &head_flat, &cap.flat, self.config.large_file_size);
        let totals = match (cap.pruned.is_empty(), &head) {
            (false, Some(h)) => totals_after(&h.record.stats, &changes, &head_flat, &cap.flat),
            _ => flat_totals(&cap.flat),
        };
        let record = self.new_record(NewSnapshot {
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
        let snapshot = self.commit_record(writer, cap.cache, record, After::Advance)?;
        let retention = self.auto_retention()?;
        // gc merges small packs itself; otherwise a save past the pack threshold ends with a
        // bounded merge, so one-file saves do not leave a pack file each. The snapshot is
        // committed: a failed merge is reported, never the save's failure.
        let merge = retention
            .as_ref()
            .is_none_or(|(p, _)| p.removed.is_empty())
            .then(|| self.store.merge_small_packs());
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

    /// Records a snapshot of an empty tree as HEAD's child, reading and touching no file:
    /// the empty baseline a new store can start from (as `git commit --allow-empty` on an
    /// empty index). The files on disk are then unsaved changes against it: the next save
    /// records them, and a move back to it saves them first, so nothing is lost.
    pub fn save_empty_tree(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        let head = self.head()?;
        let writer = self.store.writer();
        let mut empty = FlatTree::new();
        let root = flat::build_trees_reusing(&writer, &mut empty, &|_| None)?;
        let (changes, head_flat) = match &head {
            Some(h) => flat::diff_stored(&self.store, &h.record.root, &empty)?,
            None => (Vec::new(), FlatTree::new()),
        };
        let snapshot = self.record_snapshot(
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

    /// The working tree against HEAD; writes nothing.
    pub fn status(&self) -> Result<Status, TreeError> {
        let head = self.head()?;
        let against = self.against_head(head.as_ref())?;
        let redo_depth = self.store.history()?.redo.len();
        // Only status lists directory-level changes, so only status looks for them.
        let dirs = match &head {
            Some(h) if h.record.root == against.root => Vec::new(),
            _ => flat::dir_changes(
                &self.store,
                head.as_ref().map(|h| &h.record.root),
                &against.new,
            )?,
        };
        let threshold = self.config.large_file_size;
        let large_added = large_added(&against.changes, &against.old, &against.new, threshold);
        let renames = self.renames_among(
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
    pub(super) fn against_head(&self, head: Option<&Snapshot>) -> Result<AgainstHead, TreeError> {
        let writer = self.store.dry_writer();
        let mut cap = self.capture_with(
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
    pub(super) fn diff_from_head(
        &self,
        writer: &ObjectWriter<'_>,
        head: Option<&Snapshot>,
        cap: &mut Capture,
    ) -> Result<flat::StoredDiff, TreeError> {
        let Some(h) = head else {
            return Ok((diff_files(&FlatTree::new(), &cap.flat), FlatTree::new()));
        };
        let pruned = |dir: &[u8]| cap.pruned.contains(dir);
        match flat::diff_stored_pruned(&self.store, &h.record.root, &cap.flat, &pruned) {
            Ok(Some(diff)) => return Ok(diff),
            Ok(None) => {}
            Err(snap_store::StoreError::MissingObject { .. }) => {
                return self.diff_from_lost(writer, cap);
            }
            Err(e) => return Err(e.into()),
        }
        *cap = self.capture_with(writer, CaptureMode::Whole)?;
        match flat::diff_stored(&self.store, &h.record.root, &cap.flat) {
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
            *cap = self.capture_with(writer, CaptureMode::Whole)?;
        }
        Ok((diff_files(&FlatTree::new(), &cap.flat), FlatTree::new()))
    }

    /// The files that differ from `from` (default HEAD) to `to` (default the working tree),
    /// limited to `paths` (and what is under them) when any are given. Writes nothing.
    pub fn diff(
        &self,
        from: Option<&str>,
        to: Option<&str>,
        paths: &[Vec<u8>],
    ) -> Result<TreeDiff, TreeError> {
        let from_head = from.is_none();
        let from = match from {
            Some(r) => Side::Snapshot(Some(Box::new(self.resolve(r)?))),
            None => Side::Snapshot(self.head()?.map(Box::new)),
        };
        let to = match to {
            Some(r) => Side::Snapshot(Some(Box::new(self.resolve(r)?))),
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
                let (old, new) = flat::unfold_pair(&self.store, &a.record.root, &b.record.root)?;
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
        let head = self.head()?;
        let mut against = self.against_head(head.as_ref())?;
        match head {
            // The tree is HEAD's: two stored trees, each unfolded against the other.
            Some(h) if h.record.root == against.root => {
                let (old, new) = flat::unfold_pair(&self.store, &a.record.root, &h.record.root)?;
                let changes = diff_files(&old, &new);
                Ok((old, new, changes))
            }
            _ => {
                let pruned = |dir: &[u8]| against.pruned.contains(dir);
                flat::unfold_pruned(&self.store, &mut against.new, &pruned, &a.record.root)?;
                let (changes, old) = flat::diff_stored(&self.store, &a.record.root, &against.new)?;
                Ok((old, against.new, changes))
            }
        }
    }

    pub(super) fn side_flat(&self, side: &Side) -> Result<FlatTree, TreeError> {
        match side {
            Side::Snapshot(s) => self.flat_of(s.as_deref()),
            Side::WorkingTree => Ok(self.capture(&self.store.dry_writer())?.flat),
        }
    }

    /// The line diff of one entry of `diff` (symlinks diff their targets).
    pub fn file_diff(&self, diff: &TreeDiff, entry: &DiffEntry) -> Result<FileDiff, TreeError> {
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
            .map(|n| self.side_content(&diff.from, &entry.path, &n))
            .transpose()?;
        let new = entry
            .new
            .map(|n| self.side_content(&diff.to, &entry.path, &n))
            .transpose()?;
        Ok(diff::diff_files(old.as_deref(), new.as_deref()))
    }

    pub(super) fn side_content(
        &self,
        side: &Side,
        path: &[u8],
        node: &Node,
    ) -> Result<Vec<u8>, TreeError> {
        let abs = scan::abs(&self.root, path);
        match (side, node.kind) {
            (Side::Snapshot(_), _) => Ok(self.store.read_file(&node.id)?),
            // Beneath the root, following no link (see `crate::inside`).
            (Side::WorkingTree, EntryKind::Symlink) => {
                let root =
                    crate::inside::open_root(&self.root).map_err(|e| TreeError::io(&abs, e))?;
                crate::inside::read_link(&root, path).map_err(|e| TreeError::io(&abs, e))
            }
            (Side::WorkingTree, _) => {
                crate::inside::read_file(&self.root, path, diff::MAX_DIFF_BYTES as u64)
                    .map_err(|e| TreeError::io(&abs, e))
            }
        }
    }
}
