//! The walk memo a move leaves behind (FORMAT 6.4), so that the undo, redo or save after it
//! finds the tree the move made without matching every file against the stat cache.
//!
//! The walk before the move gave each directory's own share of the digest. A move changes
//! only the directories its plan touches: those are read again from disk, as the walk reads
//! them, and each must list exactly what the target's stored tree lists there; every other
//! directory keeps its share. The memo keeps the clock of the walk before the move, so that
//! everything the move wrote (and anything changed since that walk) is newer than the memo's
//! clock: the racy rule then makes a save read it, and a move read it again and compare it
//! with HEAD's tree, rather than trust its stat. A memo that cannot be vouched for this way
//! is simply not written; the next command then walks as after any other change.

use std::collections::BTreeSet;

use crate::capture::Snapshotter;
use crate::flat;
use crate::restore::Plan;
use crate::scan;
use crate::scan::walk::WalkSum;
use snap_store::{EntryKind, ObjectId, WalkMemo};
use std::collections::{HashMap, HashSet};

/// What a move needs to leave a walk memo for the tree it makes: each directory's own share
/// of the digest of the walk that found the tree before it, and the clock that walk's
/// verdicts rest on.
pub(crate) struct WalkBasis {
    pub(super) shares: HashMap<Vec<u8>, WalkSum>,
    pub(super) written_ns: i64,
}

impl WalkBasis {
    /// The basis of `walk`, whose verdicts rest on clock `written_ns`; `None` when the walk
    /// does not pin the tree down (a symlink could not be stat-ed).
    pub(super) fn of(walk: &scan::Walk, written_ns: i64) -> Option<WalkBasis> {
        let shares = walk.tallies.iter().map(|(p, sum, _)| (p.clone(), *sum));
        (!walk.inexact).then(|| WalkBasis {
            shares: shares.collect(),
            written_ns,
        })
    }
}

impl Snapshotter<'_> {
    /// The walk memo of the tree a move just made to `target_root` by carrying out `plan`,
    /// from `basis`, the walk before it; `None` when it cannot be vouched for (the plan
    /// changed an ignore file, a directory it touched does not list what the target lists,
    /// or could not be read). The memo only saves work, so no error of its own stops a move.
    pub(crate) fn memo_after_move(
        &self,
        basis: &WalkBasis,
        plan: &Plan,
        target_root: &ObjectId,
    ) -> Option<WalkMemo> {
        if plan.changes_rules() {
            return None;
        }
        let paths = plan.paths();
        let removed: HashSet<&[u8]> = plan.remove_dirs.iter().map(Vec::as_slice).collect();
        let mut touched: BTreeSet<&[u8]> = paths.iter().map(|p| flat::split(p).0).collect();
        touched.extend(plan.make_dirs.iter().map(Vec::as_slice));
        touched.extend(plan.set_modes.iter().map(|(p, _)| p.as_slice()));
        touched.retain(|dir| !removed.contains(dir));
        let mut digest = WalkSum::default();
        for (dir, share) in &basis.shares {
            if !removed.contains(dir.as_slice()) && !touched.contains(dir.as_slice()) {
                digest.merge(share);
            }
        }
        for dir in touched {
            digest.merge(&self.share_as_target(dir, target_root)?);
        }
        Some(WalkMemo {
            digest: digest.to_bytes(),
            root: *target_root,
            written_ns: basis.written_ns,
        })
    }

    /// Directory `dir`'s share of a walk now, when it holds what the tree `root` holds there:
    /// the same tracked names with the same kinds, its own mode the one recorded, and nothing
    /// that makes the walk drop it (only left-out entries).
    fn share_as_target(&self, dir: &[u8], root: &ObjectId) -> Option<WalkSum> {
        let skip = Some(self.parts.store.dir());
        let share = crate::scan::walker::dir_share(&self.parts.root, &self.parts.config, skip, dir)
            .ok()??;
        let hollow = share.left_out && share.tracked.is_empty() && !dir.is_empty();
        if share.inexact || hollow {
            return None;
        }
        let tree = if dir.is_empty() {
            *root
        } else {
            let node = flat::entry_at(&self.parts.store, root, dir).ok()??;
            let moded = node.mode == Some(share.mode);
            (node.kind == EntryKind::Dir && moded).then_some(node.id)?
        };
        let entries = self.parts.store.read_tree(&tree).ok()?.entries;
        let mut want: Vec<(&[u8], EntryKind)> = entries
            .iter()
            .map(|e| (e.name.as_slice(), e.kind))
            .collect();
        let mut found: Vec<(&[u8], EntryKind)> = share
            .tracked
            .iter()
            .map(|(name, kind)| (name.as_slice(), *kind))
            .collect();
        // Names are unique in a directory.
        want.sort_unstable_by_key(|e| e.0);
        found.sort_unstable_by_key(|e| e.0);
        (want == found).then_some(share.sum)
    }
}
