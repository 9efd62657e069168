//! Recording snapshots: committing packs, line counts, snapshot records, and the automatic
//! snapshots that keep unsaved work before a move.

use crate::diff;
use crate::error::TreeError;
use crate::flat::{self, Change, FlatTree, Node, UNBUILT, count_changes, diff_files};
use crate::marker::Op;
use crate::observer::Event;
use crate::parts::Parts;
use crate::parts::now_ns;
use crate::restore;
use crate::scan;
use crate::snapshot::{PathChange, Snapshot};
use snap_store::{
    ChangeStats, Commit, EntryKind, HistoryState, ObjectId, ObjectKind, ObjectWriter, SnapshotKind,
    SnapshotRecord, StatCacheUpdate,
};

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

/// Commits snapshots to the catalog: one commit from a `NewSnapshot`.
#[derive(Clone, Copy)]
pub(crate) struct Recorder<'a> {
    pub(crate) parts: &'a Parts,
}

impl<'a> Recorder<'a> {
    pub(crate) fn new(parts: &'a Parts) -> Recorder<'a> {
        Recorder { parts }
    }
}

/// A capture's tree and cache entries, with whether it differs from HEAD.
pub(super) struct Unsaved<'a> {
    pub(super) dirty: bool,
    pub(super) root: ObjectId,
    pub(super) flat: &'a FlatTree,
    pub(super) cache: StatCacheUpdate,
    /// The changes from the parent and its entries of the changed paths, when `flat` lists
    /// only the changed directories (a pruned capture): the totals then follow from the
    /// parent's. `None`: `flat` is the whole tree.
    pub(super) diff: Option<flat::StoredDiff>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum After {
    /// HEAD moves to the new snapshot and the redo stack is cleared.
    Advance,
    /// HEAD and the redo stack stay as they are.
    Detached,
}

/// Files (and symlinks) in a whole flat tree, and their bytes.
pub(super) fn flat_totals(flat: &FlatTree) -> (u64, u64) {
    let files = flat.values().filter(|n| n.kind != EntryKind::Dir);
    (files.clone().count() as u64, files.map(|n| n.size).sum())
}

/// The totals of a tree that is `parent`'s tree with `changes`: what a pruned scan, whose
/// flat tree holds only the changed directories, records.
pub(super) fn totals_after(
    parent: &ChangeStats,
    changes: &[PathChange],
    old: &FlatTree,
    new: &FlatTree,
) -> (u64, u64) {
    let size = |flat: &FlatTree, path: &[u8]| flat.get(path).map_or(0, |n| n.size);
    let (mut files, mut bytes) = (parent.files, parent.bytes);
    for (path, change) in changes {
        match change {
            Change::Added => files += 1,
            Change::Deleted => files = files.saturating_sub(1),
            Change::Modified => {}
        }
        bytes = (bytes + size(new, path)).saturating_sub(size(old, path));
    }
    (files, bytes)
}

/// What a new snapshot records, beside the objects and stat cache entries its commit carries.
pub(super) struct NewSnapshot<'a> {
    pub kind: SnapshotKind,
    pub opts: &'a SaveOptions,
    /// The root tree, and the flat tree it was built from.
    pub root: ObjectId,
    pub flat: &'a FlatTree,
    /// Files and bytes in the whole tree.
    pub totals: (u64, u64),
    /// The parent snapshot (`None` for the first), and as much of its flat tree as the
    /// changed paths need for line counts.
    pub parent: Option<&'a Snapshot>,
    pub parent_flat: &'a FlatTree,
    pub changes: &'a [PathChange],
    /// Whether HEAD moves to the new snapshot.
    pub after: After,
}

/// A file a move found holding neither side of its plan, to be saved before it is replaced:
/// recorded at `path`, read from `read` (the path itself, or the temporary name a step
/// displaced it to).
#[derive(Clone, Debug)]
pub(super) struct FoundFile {
    pub(super) path: Vec<u8>,
    pub(super) read: Vec<u8>,
}

impl FoundFile {
    /// The files found at their paths (`at`), then those displaced to temporary names.
    pub(super) fn list(at: &[Vec<u8>], displaced: &[restore::DisplacedFile]) -> Vec<FoundFile> {
        let here = at.iter().map(|p| FoundFile {
            path: p.clone(),
            read: p.clone(),
        });
        let moved = displaced.iter().map(|d| FoundFile {
            path: d.path.clone(),
            read: d.temp.clone(),
        });
        here.chain(moved).collect()
    }
}

impl Recorder<'_> {
    /// Saves what `found` hold now, over `base`, as a snapshot of kind auto-before-`op`
    /// (detached: HEAD does not move); returns `base` with their new entries.
    pub(crate) fn save_found(
        &self,
        op: Op,
        found: &[FoundFile],
        base: &FlatTree,
        (parent, parent_flat): (Option<&Snapshot>, &FlatTree),
    ) -> Result<FlatTree, TreeError> {
        let writer = self.parts.store.writer();
        let mut flat = base.clone();
        for FoundFile { path, read } in found {
            let node = scan::store_path(&self.parts.root, read, &writer)?;
            let mut ancestor = flat::split(path).0;
            while !ancestor.is_empty() {
                // Rebuilt (its id unbuilt), keeping the mode it had.
                let mode = flat.get(ancestor).and_then(|n| n.mode);
                flat.insert(
                    ancestor.to_vec(),
                    Node {
                        kind: EntryKind::Dir,
                        size: 0,
                        id: UNBUILT,
                        mode,
                    },
                );
                ancestor = flat::split(ancestor).0;
            }
            // The path may have been a directory in `base` (a roll-forward finds the file
            // a move wrote where one was): a file has nothing below it.
            flat::remove_within(&mut flat, path);
            flat.insert(path.clone(), node);
        }
        // `base` may be unfolded only where a move's target differs (`flat::unfold_against`):
        // a directory left folded keeps its id and is taken as built, and the totals follow
        // from the parent's and the changes, not from counting `built`.
        let mut built = flat.clone();
        let root = flat::build_trees_reusing(&writer, &mut built, &|_| None)?;
        let changes = diff_files(parent_flat, &built);
        let totals = match parent {
            Some(p) => totals_after(&p.record.stats, &changes, parent_flat, &built),
            None => flat_totals(&built),
        };
        let opts = SaveOptions {
            message: format!(
                "files changed during {}, saved before replacing them",
                op.as_str()
            ),
            ..SaveOptions::default()
        };
        let kind = match op {
            Op::Undo => SnapshotKind::AutoBeforeUndo,
            Op::Redo => SnapshotKind::AutoBeforeRedo,
            Op::Restore => SnapshotKind::AutoBeforeRestore,
        };
        self.record_snapshot(
            writer,
            StatCacheUpdate::default(),
            NewSnapshot {
                kind,
                opts: &opts,
                root,
                flat: &built,
                totals,
                parent,
                parent_flat,
                changes: &changes,
                after: After::Detached,
            },
        )?;
        Ok(flat)
    }

    pub(crate) fn commit_packs(
        &self,
        writer: ObjectWriter<'_>,
        stat_cache: StatCacheUpdate,
    ) -> Result<(), TreeError> {
        let packs = writer.finish()?;
        if !packs.is_empty() || !stat_cache.is_empty() {
            self.parts.store.commit(&Commit {
                packs,
                stat_cache,
                ..Commit::default()
            })?;
        }
        Ok(())
    }

    /// Text lines added and removed by `changes`, when few enough files changed to count them
    /// cheaply. Old content comes from the store; new content from the store or, for objects
    /// this command has not committed yet, from the working tree it was just read from.
    pub(crate) fn line_stats(
        &self,
        old: &FlatTree,
        new: &FlatTree,
        changes: &[PathChange],
    ) -> Option<(u64, u64)> {
        if changes.len() > diff::MAX_LINE_STAT_FILES {
            return None;
        }
        let content = |flat: &FlatTree, path: &[u8]| -> Option<Vec<u8>> {
            let node = flat
                .get(path)
                .filter(|n| matches!(n.kind, EntryKind::File | EntryKind::Executable))?;
            self.parts.store.read_file(&node.id).ok().or_else(|| {
                crate::inside::read_file(&self.parts.root, path, diff::MAX_DIFF_BYTES as u64).ok()
            })
        };
        let mut total = (0, 0);
        // Over the line-diff limit counts as binary (no lines), and is never read whole.
        let too_large = |flat: &FlatTree, path: &[u8]| {
            flat.get(path)
                .is_some_and(|n| n.size > diff::MAX_DIFF_BYTES as u64)
        };
        for (path, _) in changes {
            if too_large(old, path) || too_large(new, path) {
                continue;
            }
            let (a, r) =
                diff::line_counts(content(old, path).as_deref(), content(new, path).as_deref());
            total = (total.0 + a, total.1 + r);
        }
        Some(total)
    }

    /// Writes the snapshot `new` describes and commits it with what `writer` stored and the
    /// stat cache changes.
    pub(crate) fn record_snapshot(
        &self,
        writer: ObjectWriter<'_>,
        stat_cache: StatCacheUpdate,
        new: NewSnapshot<'_>,
    ) -> Result<Snapshot, TreeError> {
        let after = new.after;
        let record = self.new_record(new)?;
        self.commit_record(writer, stat_cache, record, after)
    }

    /// The record of the snapshot `new` describes: the only step that reads its flat trees.
    pub(crate) fn new_record(&self, new: NewSnapshot<'_>) -> Result<SnapshotRecord, TreeError> {
        let NewSnapshot {
            kind,
            opts,
            root,
            flat,
            totals: (files, bytes),
            parent,
            parent_flat,
            changes,
            after: _,
        } = new;
        let (added, modified, deleted) = count_changes(changes);
        let stats = ChangeStats {
            added,
            modified,
            deleted,
            files,
            bytes,
            lines: self.line_stats(parent_flat, flat, changes),
        };
        Ok(SnapshotRecord {
            seq: self.parts.store.next_seq()?,
            root,
            parent: parent.map(|p| p.id),
            time_ns: now_ns(),
            kind,
            message: opts.message.clone(),
            step: opts.step,
            session: opts.session.clone(),
            meta: opts.meta.clone(),
            stats,
        })
    }

    /// Writes `record` and commits it with what `writer` stored and the stat cache changes;
    /// with [`After::Advance`], HEAD moves to it and the redo stack empties.
    pub(crate) fn commit_record(
        &self,
        writer: ObjectWriter<'_>,
        stat_cache: StatCacheUpdate,
        record: SnapshotRecord,
        after: After,
    ) -> Result<Snapshot, TreeError> {
        let id = writer.put(ObjectKind::Snapshot, &record.encode())?;
        let packs = writer.finish()?;
        let history = (after == After::Advance).then(|| HistoryState {
            head: Some(id),
            redo: Vec::new(),
        });
        self.parts.store.commit(&Commit {
            packs,
            snapshots: vec![(id, record.clone())],
            history,
            stat_cache,
            ..Commit::default()
        })?;
        let snapshot = Snapshot { id, record };
        self.parts.emit(Event::SnapshotCreated(&snapshot));
        Ok(snapshot)
    }

    /// Commits what a capture wrote: when the tree had unsaved changes, as an automatic
    /// snapshot of them (child of `parent`), so no undo, redo or restore ever loses work;
    /// otherwise only its packs and stat cache entries.
    pub(crate) fn keep_unsaved(
        &self,
        writer: ObjectWriter<'_>,
        unsaved: Unsaved<'_>,
        parent: Option<&Snapshot>,
        kind: SnapshotKind,
        after: After,
    ) -> Result<Option<Snapshot>, TreeError> {
        if !unsaved.dirty {
            self.commit_packs(writer, unsaved.cache)?;
            return Ok(None);
        }
        // The capture's directories carry built ids, so only those that differ from the
        // parent's are read; the parent's entries of the changed paths are all the line
        // counts need.
        let ((changes, parent_flat), totals) = match (parent, unsaved.diff) {
            (Some(p), Some(diff)) => {
                let totals = totals_after(&p.record.stats, &diff.0, &diff.1, unsaved.flat);
                (diff, totals)
            }
            (Some(p), None) => (
                flat::diff_stored(&self.parts.store, &p.record.root, unsaved.flat)?,
                flat_totals(unsaved.flat),
            ),
            (None, _) => (
                (diff_files(&FlatTree::new(), unsaved.flat), FlatTree::new()),
                flat_totals(unsaved.flat),
            ),
        };
        let before = match kind {
            SnapshotKind::AutoBeforeRedo => "redo",
            SnapshotKind::AutoBeforeRestore => "restore",
            _ => "undo",
        };
        let opts = SaveOptions {
            message: format!("unsaved changes before {before}"),
            ..SaveOptions::default()
        };
        let snapshot = self.record_snapshot(
            writer,
            unsaved.cache,
            NewSnapshot {
                kind,
                opts: &opts,
                root: unsaved.root,
                flat: unsaved.flat,
                totals,
                parent,
                parent_flat: &parent_flat,
                changes: &changes,
                after,
            },
        )?;
        Ok(Some(snapshot))
    }
}
