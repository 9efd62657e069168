//! What the steps of a move hand one another: the target of a restore, the scan, what was
//! saved first, how a target is unfolded, and the small sums they share.

use super::MoveOutcome;
use crate::capture::cascade::Capture;
use crate::capture::memo::WalkBasis;
use crate::error::TreeError;
use crate::flat::{self, Change, FlatTree, Node, UNBUILT};
use crate::record::After;
use crate::restore::Plan;
use crate::snapshot::Snapshot;
use snap_store::{EntryKind, ObjectId, ObjectWriter, SnapshotKind, StatKey};

/// What a restore moves the tree to: the root, the plan from the current tree, the target's
/// entries the plan needs (all of them when only some paths are restored), the changes it
/// records and the whole tree's files and bytes.
pub(crate) struct RestoreTarget {
    pub(crate) root: ObjectId,
    pub(crate) plan: Plan,
    pub(crate) flat: FlatTree,
    pub(crate) changes: Vec<(Vec<u8>, Change)>,
    pub(crate) totals: (u64, u64),
}

/// The automatic snapshot a move takes of unsaved changes before it writes anything, and
/// what it does to HEAD: an undo's is its first step back (HEAD advances to it), a redo's
/// leaves the redo stack whole (detached), a restore's is the parent of the restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AutoSave {
    /// Before an undo.
    Undo,
    /// Before a redo.
    Redo,
    /// Before a restore.
    Restore,
}

impl AutoSave {
    /// The kind of the automatic snapshot.
    pub(crate) fn kind(self) -> SnapshotKind {
        match self {
            AutoSave::Undo => SnapshotKind::AutoBeforeUndo,
            AutoSave::Redo => SnapshotKind::AutoBeforeRedo,
            AutoSave::Restore => SnapshotKind::AutoBeforeRestore,
        }
    }

    /// Whether HEAD moves to the automatic snapshot.
    pub(crate) fn after(self) -> After {
        match self {
            AutoSave::Redo => After::Detached,
            AutoSave::Undo | AutoSave::Restore => After::Advance,
        }
    }
}

/// A move's writer after the unsaved changes were saved first (or were not: clean, or a
/// preview), with the snapshot that saved them.
pub(crate) struct SavedFirst<'s> {
    pub(crate) writer: ObjectWriter<'s>,
    pub(crate) saved: Option<Snapshot>,
}

/// What a restore plans from: the capture of the working tree, and what saving its unsaved
/// changes first left.
pub(crate) struct RestoreStart<'s> {
    pub(crate) cap: Capture,
    pub(crate) first: SavedFirst<'s>,
}

/// How much of a stored tree a move plans from: where a target tree differs from it, or
/// along the paths a restore of some paths replaces.
#[derive(Clone, Copy)]
pub(crate) enum Unfold<'a> {
    Against(&'a ObjectId),
    Along(&'a [Vec<u8>]),
}

/// The working tree as a move's scan found it.
pub(crate) struct Scanned<'a> {
    /// Every tracked path.
    pub(crate) flat: &'a FlatTree,
    /// Each regular file's stat, in no particular order.
    pub(crate) stats: &'a [(Vec<u8>, StatKey)],
    /// The root tree of `flat`, in the store.
    pub(crate) root: ObjectId,
    /// The snapshot whose tree is `root` (the unsaved changes', or HEAD).
    pub(crate) parent: Option<&'a Snapshot>,
    /// What the walk memo of the tree after the move is made from, if anything.
    pub(crate) basis: Option<&'a WalkBasis>,
}

/// The working tree `base` with everything at or under each of `paths` taken from `source`.
pub(crate) fn merge_paths(
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
pub(crate) fn saved_root_is(outcome: &MoveOutcome, root: &ObjectId) -> bool {
    outcome
        .auto_saved
        .as_ref()
        .is_some_and(|s| s.record.root == *root)
}

/// The files and bytes of `flat` at and below `paths` (none within another); `None` when
/// a directory there may be folded (its files not listed).
pub(crate) fn totals_under(flat: &FlatTree, paths: &[Vec<u8>]) -> Option<(u64, u64)> {
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
