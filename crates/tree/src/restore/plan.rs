//! Planning a move: the steps that turn one flat tree (or the working tree's scan) into a
//! target, read from the stored trees only where their ids differ.

use std::collections::{HashMap, HashSet};

use super::{Path, TreeError, scan};
use crate::flat::{
    Change, FlatTree, Node, Paired, children, flatten, join, modes_differ, pair_by_name,
};
use snap_store::{EntryKind, ObjectId, StatKey, Store, StoreError, TreeEntry};

/// What a restore does, computed before anything is touched.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Files and symlinks the target lacks or has as a directory.
    pub remove_files: Vec<Vec<u8>>,
    /// Deepest first.
    pub remove_dirs: Vec<Vec<u8>>,
    /// Shallowest first.
    pub make_dirs: Vec<Vec<u8>>,
    /// Files and symlinks the working tree lacks or holds with another kind, content or mode.
    pub write: Vec<(Vec<u8>, Node)>,
    /// Directories to give the target's permission bits, once everything is written.
    pub set_modes: Vec<(Vec<u8>, u16)>,
}

/// True when `path` names a `.gitignore` or `.snapignore`.
pub fn is_rule_file(path: &[u8]) -> bool {
    let name = crate::flat::split(path).1;
    name == crate::scan::rules::GITIGNORE.as_bytes() || name == scan::SNAPIGNORE.as_bytes()
}

impl Plan {
    /// The steps that turn `current` into `target`.
    pub fn new(current: &FlatTree, target: &FlatTree) -> Plan {
        let mut plan = Plan::default();
        for (path, cur) in current {
            let want = target.get(path);
            match (
                cur.kind == EntryKind::Dir,
                want.map(|w| w.kind == EntryKind::Dir),
            ) {
                (true, Some(true)) => {}
                (true, _) => plan.remove_dirs.push(path.clone()),
                (false, None | Some(true)) => plan.remove_files.push(path.clone()),
                (false, Some(false)) => {}
            }
        }
        for (path, want) in target {
            let cur = current.get(path);
            if want.kind == EntryKind::Dir {
                let made = cur.is_none_or(|c| c.kind != EntryKind::Dir);
                if made {
                    plan.make_dirs.push(path.clone());
                }
                plan.dir_mode(path, cur.map(|c| c.mode).filter(|_| !made), want.mode);
            } else if cur.is_none_or(|c| {
                c.kind != want.kind || c.id != want.id || modes_differ(c.mode, want.mode)
            }) {
                plan.write.push((path.clone(), *want));
            }
        }
        // A path sorts before everything inside it, so reverse order empties children first.
        plan.remove_dirs.reverse();
        plan
    }

    /// The steps that turn `current` (a scan whose directory nodes carry built tree ids) into
    /// the stored tree `target_root`, reading only the directories whose ids differ: the cost
    /// is the changed directories, not the whole tree. Also returns the target's entries at
    /// every path the plan writes or replaces, which is all of the target [`apply`] needs.
    /// Equal to `Plan::new(current, &flatten(target_root))`.
    pub fn to_stored(
        store: &Store,
        target_root: &ObjectId,
        current: &FlatTree,
    ) -> Result<(Plan, FlatTree), StoreError> {
        let mut out = (Plan::default(), FlatTree::new());
        plan_dir(store, target_root, current, &[], &mut out)?;
        let (plan, _) = &mut out;
        plan.remove_files.sort_unstable();
        plan.make_dirs.sort_unstable();
        plan.remove_dirs.sort_unstable_by(|a, b| b.cmp(a));
        plan.write.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        plan.set_modes.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Sets directory `path` to mode `want` when that is known and `had` (`None`: a new
    /// directory) is not already it.
    pub(super) fn dir_mode(&mut self, path: &[u8], had: Option<Option<u16>>, want: Option<u16>) {
        if let Some(want) = want
            && had.is_none_or(|had| modes_differ(had, Some(want)))
        {
            self.set_modes.push((path.to_vec(), want));
        }
    }

    /// The file changes the plan makes to `current`, in path order, as `diff_files(current,
    /// target)` reports them.
    pub fn changes(&self, current: &FlatTree) -> Vec<(Vec<u8>, Change)> {
        let mut out: Vec<_> = self
            .write
            .iter()
            .map(|(path, _)| match current.get(path) {
                Some(c) if c.kind != EntryKind::Dir => (path.clone(), Change::Modified),
                _ => (path.clone(), Change::Added),
            })
            .chain(
                self.remove_files
                    .iter()
                    .map(|p| (p.clone(), Change::Deleted)),
            )
            .collect();
        out.sort();
        out
    }

    /// Drops every step at or under one of `kept`.
    pub fn leave_out(&mut self, kept: &[Vec<u8>]) {
        if kept.is_empty() {
            return;
        }
        let out = |p: &[u8]| kept.iter().any(|k| crate::flat::is_within(p, k));
        self.retain(|p| !out(p));
    }

    /// Keeps only the steps at exactly the paths `only` (sorted).
    pub fn keep_only(&mut self, only: &[Vec<u8>]) {
        self.retain(|p| only.binary_search_by(|o| o.as_slice().cmp(p)).is_ok());
    }

    pub(super) fn retain(&mut self, keep: impl Fn(&[u8]) -> bool) {
        self.remove_files.retain(|p| keep(p));
        self.remove_dirs.retain(|p| keep(p));
        self.make_dirs.retain(|p| keep(p));
        self.write.retain(|(p, _)| keep(p));
        self.set_modes.retain(|(p, _)| keep(p));
    }

    /// True when the plan writes, removes or makes a `.gitignore` or `.snapignore`: after
    /// it, the ignore rules (and so what a walk tracks) may differ anywhere below.
    pub fn changes_rules(&self) -> bool {
        self.paths().iter().any(|p| is_rule_file(p))
    }

    /// Every path the plan touches.
    pub fn paths(&self) -> Vec<&[u8]> {
        let (files, dirs) = (self.remove_files.iter(), self.remove_dirs.iter());
        let made = self.make_dirs.iter();
        let written = self.write.iter().map(|(p, _)| p);
        let moded = self.set_modes.iter().map(|(p, _)| p);
        files
            .chain(dirs)
            .chain(made)
            .chain(written)
            .chain(moded)
            .map(Vec::as_slice)
            .collect()
    }

    /// How many paths the plan changes.
    pub fn len(&self) -> usize {
        self.remove_files.len()
            + self.remove_dirs.len()
            + self.make_dirs.len()
            + self.write.len()
            + self.set_modes.len()
    }

    /// True when the working tree already matches.
    pub fn is_empty(&self) -> bool {
        self.remove_files.is_empty()
            && self.remove_dirs.is_empty()
            && self.make_dirs.is_empty()
            && self.write.is_empty()
            && self.set_modes.is_empty()
    }
}

/// Refuses a plan whose files another process changed after the scan that saved them: a
/// tracked file the plan replaces or removes whose stat is no longer the one in `stats` (the
/// scan's, in any order). Checked just before anything is touched, so the refused command
/// changes nothing and the other process's work is kept. (A path that was not a tracked file
/// at the scan, an ignored file say, is not checked: the scan has no stat to compare.)
pub fn check_unchanged(
    root: &Path,
    plan: &Plan,
    stats: &[(Vec<u8>, StatKey)],
) -> Result<(), TreeError> {
    let written = plan.write.iter().map(|(p, _)| p);
    let touched: Vec<&Vec<u8>> = plan.remove_files.iter().chain(written).collect();
    if touched.is_empty() {
        return Ok(());
    }
    // One pass over the stats (in any order) for the few paths a move usually touches.
    let wanted: HashSet<&[u8]> = touched.iter().map(|p| p.as_slice()).collect();
    let scanned: HashMap<&[u8], StatKey> = (stats.iter())
        .filter(|(p, _)| wanted.contains(p.as_slice()))
        .map(|(p, key)| (p.as_slice(), *key))
        .collect();
    for path in touched {
        let now = std::fs::symlink_metadata(scan::abs(root, path)).ok();
        let expected = scanned.get(path.as_slice()).copied();
        let changed = match (now, expected) {
            (Some(meta), Some(key)) => scan::stat_key(&meta) != key,
            _ => false,
        };
        if changed {
            return Err(TreeError::ChangedDuringMove {
                path: scan::abs(root, path),
            });
        }
    }
    Ok(())
}

/// A plan being built, and the target entries it needs.
pub(super) type Planning = (Plan, FlatTree);

/// Plans directory `dir`: its stored target tree `target_id` against its entries in `current`.
pub(super) fn plan_dir(
    store: &Store,
    target_id: &ObjectId,
    current: &FlatTree,
    dir: &[u8],
    out: &mut Planning,
) -> Result<(), StoreError> {
    let target = store.read_tree(target_id)?.entries;
    for pair in pair_by_name(&target, &children(current, dir)) {
        match pair {
            Paired::Stored(t) => add_target(store, t, &join(dir, &t.name), out)?,
            Paired::Scanned(name, node) => remove_current(current, &join(dir, name), node, out),
            Paired::Both(t, node) => {
                plan_entry(store, t, current, &join(dir, &t.name), node, out)?;
            }
        }
    }
    Ok(())
}

/// Plans one path present on both sides.
pub(super) fn plan_entry(
    store: &Store,
    target: &TreeEntry,
    current: &FlatTree,
    path: &[u8],
    node: &Node,
    out: &mut Planning,
) -> Result<(), StoreError> {
    let same_mode = !modes_differ(target.mode, node.mode);
    match (target.kind == EntryKind::Dir, node.kind == EntryKind::Dir) {
        (true, true) => {
            out.0.dir_mode(path, Some(node.mode), target.mode);
            if target.id != node.id {
                plan_dir(store, &target.id, current, path, out)
            } else {
                Ok(())
            }
        }
        (false, false) if target.kind == node.kind && target.id == node.id && same_mode => Ok(()),
        (false, false) => add_target(store, target, path, out),
        (true, false) => {
            out.0.remove_files.push(path.to_vec());
            add_target(store, target, path, out)
        }
        (false, true) => {
            remove_current(current, path, node, out);
            add_target(store, target, path, out)
        }
    }
}

/// The target has `entry` at `path`: write it, or make the directory and all it holds.
pub(super) fn add_target(
    store: &Store,
    entry: &TreeEntry,
    path: &[u8],
    (plan, target): &mut Planning,
) -> Result<(), StoreError> {
    let node = Node::from(entry);
    target.insert(path.to_vec(), node);
    if entry.kind != EntryKind::Dir {
        plan.write.push((path.to_vec(), node));
        return Ok(());
    }
    plan.make_dirs.push(path.to_vec());
    plan.dir_mode(path, None, entry.mode);
    for (sub, node) in flatten(store, &entry.id)? {
        let full = join(path, &sub);
        match node.kind {
            EntryKind::Dir => {
                plan.make_dirs.push(full.clone());
                plan.dir_mode(&full, None, node.mode);
            }
            _ => plan.write.push((full.clone(), node)),
        }
        target.insert(full, node);
    }
    Ok(())
}

/// The target lacks `path`: remove it, and everything under it if it is a directory.
pub(super) fn remove_current(
    current: &FlatTree,
    path: &[u8],
    node: &Node,
    (plan, _): &mut Planning,
) {
    if node.kind != EntryKind::Dir {
        plan.remove_files.push(path.to_vec());
        return;
    }
    plan.remove_dirs.push(path.to_vec());
    for (p, n) in crate::flat::below(current, path) {
        match n.kind {
            EntryKind::Dir => plan.remove_dirs.push(p.clone()),
            _ => plan.remove_files.push(p.clone()),
        }
    }
}
