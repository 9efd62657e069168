//! Moves: undo, redo, restore and revert, each planned from the working tree and written by
//! one protocol (`move_to`: marker, guarded apply, HEAD, marker removed; docs/SAFETY.md).
//!
//! [`undo`] holds undo and redo and what every move shares before and after writing (the
//! capture, saving unsaved changes first, finishing); [`restoring`] plans a restore of a
//! snapshot or of some paths, [`revert`] a restore taking back one snapshot's or turn's
//! change; [`apply`] writes a plan, saving what it displaces first, and rolls it back;
//! [`kept`] decides what a move leaves alone. This file holds the types they share.

mod apply;
mod kept;
mod restoring;
mod revert;
mod undo;

pub use revert::{RevertOf, RevertOutcome};

use crate::workspace::{
    After, Capture, Change, EntryKind, FlatTree, Node, ObjectId, ObjectWriter, Op, PathChange,
    Plan, Run, Snapshot, SnapshotKind, StatKey, TreeError, UNBUILT, WalkBasis, flat,
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

/// The automatic snapshot a move takes of unsaved changes before it writes anything, and
/// what it does to HEAD: an undo's is its first step back (HEAD advances to it), a redo's
/// leaves the redo stack whole (detached), a restore's is the parent of the restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum AutoSave {
    /// Before an undo.
    Undo,
    /// Before a redo.
    Redo,
    /// Before a restore.
    Restore,
}

impl AutoSave {
    /// The kind of the automatic snapshot.
    pub(super) fn kind(self) -> SnapshotKind {
        match self {
            AutoSave::Undo => SnapshotKind::AutoBeforeUndo,
            AutoSave::Redo => SnapshotKind::AutoBeforeRedo,
            AutoSave::Restore => SnapshotKind::AutoBeforeRestore,
        }
    }

    /// Whether HEAD moves to the automatic snapshot.
    pub(super) fn after(self) -> After {
        match self {
            AutoSave::Redo => After::Detached,
            AutoSave::Undo | AutoSave::Restore => After::Advance,
        }
    }
}

/// A move's writer after the unsaved changes were saved first (or were not: clean, or a
/// preview), with the snapshot that saved them.
pub(super) struct SavedFirst<'s> {
    pub(super) writer: ObjectWriter<'s>,
    pub(super) saved: Option<Snapshot>,
}

/// What a restore plans from: the capture of the working tree, and what saving its unsaved
/// changes first left.
pub(super) struct RestoreStart<'s> {
    pub(super) cap: Capture,
    pub(super) first: SavedFirst<'s>,
}

/// How much of a stored tree a move plans from: where a target tree differs from it, or
/// along the paths a restore of some paths replaces.
#[derive(Clone, Copy)]
pub(super) enum Unfold<'a> {
    Against(&'a ObjectId),
    Along(&'a [Vec<u8>]),
}

impl MoveOutcome {
    /// The outcome as planned, before anything is saved or written.
    pub(super) fn planned(
        op: Op,
        run: Run,
        was_dirty: bool,
        target: Snapshot,
        passed: Vec<Snapshot>,
        changes: Vec<PathChange>,
    ) -> MoveOutcome {
        MoveOutcome {
            op,
            dry_run: run == Run::DryRun,
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

/// True when the tree a move's capture found (`root`) was saved first, so is in the store.
pub(super) fn saved_root_is(outcome: &MoveOutcome, root: &ObjectId) -> bool {
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
