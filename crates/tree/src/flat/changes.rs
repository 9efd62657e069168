//! What changed between two trees: flat against flat, or a stored tree against a flat one
//! (descending only where ids differ), and the directory-level changes a save records.

use snap_store::{EntryKind, ObjectId, Store, StoreError, TreeEntry};

use super::{FlatTree, Node, flatten, is_within, join, modes_differ};

/// How one path differs between two flat trees.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    /// Absent (or a directory) on the old side.
    Added,
    /// On both sides, with a different kind or content.
    Modified,
    /// Absent (or a directory) on the new side.
    Deleted,
}

impl Change {
    /// `added`, `modified` or `deleted`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified => "modified",
            Change::Deleted => "deleted",
        }
    }
}

/// The changed non-directory paths from `old` to `new`, in path order. A file that became a
/// directory (or back) shows as deleted plus added of what is inside.
pub fn diff_files(old: &FlatTree, new: &FlatTree) -> Vec<(Vec<u8>, Change)> {
    let mut out = Vec::new();
    for (path, n) in new.iter().filter(|(_, n)| n.kind != EntryKind::Dir) {
        match old.get(path) {
            Some(o) if o.kind == EntryKind::Dir => out.push((path.clone(), Change::Added)),
            Some(o) if o.kind != n.kind || o.id != n.id || modes_differ(o.mode, n.mode) => {
                out.push((path.clone(), Change::Modified))
            }
            Some(_) => {}
            None => out.push((path.clone(), Change::Added)),
        }
    }
    for (path, _) in old.iter().filter(|(_, o)| o.kind != EntryKind::Dir) {
        if new.get(path).is_none_or(|n| n.kind == EntryKind::Dir) {
            out.push((path.clone(), Change::Deleted));
        }
    }
    out.sort();
    out
}

/// Counts of a diff, for snapshot records.
pub fn count_changes(changes: &[(Vec<u8>, Change)]) -> (u64, u64, u64) {
    let count = |c| changes.iter().filter(|(_, x)| *x == c).count() as u64;
    (
        count(Change::Added),
        count(Change::Modified),
        count(Change::Deleted),
    )
}

/// The direct children of `dir` in `flat`, in name order, found by seeking past each child's
/// descendants: O(children x log n), not O(subtree).
pub fn children<'a>(flat: &'a FlatTree, dir: &[u8]) -> Vec<(&'a [u8], &'a Node)> {
    use std::ops::Bound::{Excluded, Included, Unbounded};
    let prefix = if dir.is_empty() {
        Vec::new()
    } else {
        join(dir, b"")
    };
    let mut out = Vec::new();
    let mut from: std::ops::Bound<Vec<u8>> = Included(prefix.clone());
    while let Some((key, node)) = flat.range::<Vec<u8>, _>((from.clone(), Unbounded)).next() {
        let Some(rest) = key.strip_prefix(prefix.as_slice()) else {
            break;
        };
        match rest.iter().position(|&c| c == b'/') {
            // Inside a child directory already listed: seek past all of its descendants.
            Some(i) => from = Included([&key[..prefix.len() + i], b"0".as_slice()].concat()),
            None => {
                if !rest.is_empty() {
                    out.push((rest, node));
                }
                from = Excluded(key.clone());
            }
        }
    }
    out
}

/// One name of a directory: in its stored tree only, in the flat tree only, or in both.
pub(crate) enum Paired<'a> {
    /// Only the stored tree has it.
    Stored(&'a TreeEntry),
    /// Only the flat tree has it: its name and node.
    Scanned(&'a [u8], &'a Node),
    /// Both have it.
    Both(&'a TreeEntry, &'a Node),
}

/// A stored directory's entries and the same directory's children in a flat tree, both in
/// name order, paired by name.
pub(crate) fn pair_by_name<'a>(
    stored: &'a [TreeEntry],
    scanned: &[(&'a [u8], &'a Node)],
) -> Vec<Paired<'a>> {
    let (mut i, mut j) = (0, 0);
    let mut out = Vec::with_capacity(stored.len().max(scanned.len()));
    while i < stored.len() || j < scanned.len() {
        let order = match (stored.get(i), scanned.get(j)) {
            (Some(s), Some((name, _))) => s.name.as_slice().cmp(name),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        out.push(match order {
            std::cmp::Ordering::Less => Paired::Stored(&stored[i]),
            std::cmp::Ordering::Greater => Paired::Scanned(scanned[j].0, scanned[j].1),
            std::cmp::Ordering::Equal => Paired::Both(&stored[i], scanned[j].1),
        });
        i += usize::from(order.is_le());
        j += usize::from(order.is_ge());
    }
    out
}

/// Changed paths in order, and the old entries of those paths.
pub type StoredDiff = (Vec<(Vec<u8>, Change)>, FlatTree);

/// The changed files between the stored tree `old_root` and `new` (whose directory nodes carry
/// built tree ids), visiting only directories whose ids differ. Returns the changes in path
/// order and the old entries of the changed paths.
pub fn diff_stored(
    store: &Store,
    old_root: &ObjectId,
    new: &FlatTree,
) -> Result<StoredDiff, StoreError> {
    let whole = diff_stored_pruned(store, old_root, new, &|_| false)?;
    Ok(whole.unwrap_or_default())
}

/// As [`diff_stored`], for a `new` from which the entries under some directories were left
/// out (`pruned` says which: their tree ids are known, their contents are not in `new`).
/// `None` when the diff would have had to look under one of them.
pub fn diff_stored_pruned(
    store: &Store,
    old_root: &ObjectId,
    new: &FlatTree,
    pruned: &dyn Fn(&[u8]) -> bool,
) -> Result<Option<StoredDiff>, StoreError> {
    let mut differ = StoredDiffer {
        store,
        new,
        pruned,
        changes: Vec::new(),
        old_nodes: FlatTree::new(),
        blind: false,
    };
    differ.dir(old_root, &[])?;
    if differ.blind {
        return Ok(None);
    }
    differ.changes.sort();
    Ok(Some((differ.changes, differ.old_nodes)))
}

/// Directory-level changes from the stored tree `old_root` to `new`: empty directories added
/// or removed, and directories whose mode changed. [`diff_files`] gives the files'; the two
/// together are everything a save records. Reads only directories whose tree ids differ, so
/// a `new` whose unchanged directories were pruned (their ids known) is enough.
pub fn dir_changes(
    store: &Store,
    old_root: Option<&ObjectId>,
    new: &FlatTree,
) -> Result<Vec<(Vec<u8>, Change)>, StoreError> {
    let mut out = Vec::new();
    match old_root {
        Some(root) => dir_changes_in(store, root, new, &[], &mut out)?,
        None => {
            let tops = children(new, &[]);
            for (name, _) in tops.iter().filter(|(_, n)| n.kind == EntryKind::Dir) {
                out.extend(
                    empty_dirs(new, name)
                        .into_iter()
                        .map(|p| (p, Change::Added)),
                );
            }
        }
    }
    out.sort();
    Ok(out)
}

fn dir_changes_in(
    store: &Store,
    old_id: &ObjectId,
    new: &FlatTree,
    dir: &[u8],
    out: &mut Vec<(Vec<u8>, Change)>,
) -> Result<(), StoreError> {
    let old = store.read_tree(old_id)?.entries;
    for pair in pair_by_name(&old, &children(new, dir)) {
        let (was, now) = match pair {
            Paired::Stored(o) => (Some(o), None),
            Paired::Scanned(name, n) => (None, Some((name, n))),
            Paired::Both(o, n) => (Some(o), Some((o.name.as_slice(), n))),
        };
        let was = was.filter(|o| o.kind == EntryKind::Dir);
        let now = now.filter(|(_, n)| n.kind == EntryKind::Dir);
        match (was, now) {
            (Some(o), Some((_, n))) => {
                let path = join(dir, &o.name);
                if modes_differ(o.mode, n.mode) {
                    out.push((path.clone(), Change::Modified));
                }
                if o.id != n.id {
                    dir_changes_in(store, &o.id, new, &path, out)?;
                }
            }
            (Some(o), None) => {
                let gone = flatten(store, &o.id)?;
                let path = join(dir, &o.name);
                let empty = empty_dirs(&gone, &[]).into_iter().map(|p| join(&path, &p));
                out.extend(
                    empty
                        .chain(gone.is_empty().then(|| path.clone()))
                        .map(|p| (p, Change::Deleted)),
                );
            }
            (None, Some((name, _))) => {
                let path = join(dir, name);
                out.extend(
                    empty_dirs(new, &path)
                        .into_iter()
                        .map(|p| (p, Change::Added)),
                );
            }
            (None, None) => {}
        }
    }
    Ok(())
}

/// The directories at or under `dir` in `flat` that hold nothing (`dir` itself when it is
/// one; `""` stands for the whole tree, and is never returned itself).
fn empty_dirs(flat: &FlatTree, dir: &[u8]) -> Vec<Vec<u8>> {
    // Byte order puts `a-b` between `a` and `a/x`: scan every key with the prefix `dir`,
    // keep those within it.
    let dirs = flat
        .range(dir.to_vec()..)
        .take_while(|(p, _)| p.starts_with(dir))
        .filter(|(p, n)| n.kind == EntryKind::Dir && !p.is_empty() && is_within(p, dir));
    let holds = |path: &[u8]| {
        let below = join(path, b"");
        flat.range(below.clone()..)
            .next()
            .is_some_and(|(p, _)| p.starts_with(&below))
    };
    dirs.filter(|(p, _)| !holds(p))
        .map(|(p, _)| p.clone())
        .collect()
}

/// One stored diff under way.
struct StoredDiffer<'a> {
    store: &'a Store,
    new: &'a FlatTree,
    pruned: &'a dyn Fn(&[u8]) -> bool,
    changes: Vec<(Vec<u8>, Change)>,
    old_nodes: FlatTree,
    /// It had to look under a pruned directory of `new`: the result is incomplete.
    blind: bool,
}

impl StoredDiffer<'_> {
    fn dir(&mut self, old_id: &ObjectId, dir: &[u8]) -> Result<(), StoreError> {
        if (self.pruned)(dir) {
            self.blind = true;
            return Ok(());
        }
        let old: Vec<TreeEntry> = self.store.read_tree(old_id)?.entries;
        for pair in pair_by_name(&old, &children(self.new, dir)) {
            match pair {
                Paired::Stored(o) => self.removed(o, dir)?,
                Paired::Scanned(name, node) => self.added(&join(dir, name), node),
                Paired::Both(o, node) => self.changed(o, dir, node)?,
            }
        }
        Ok(())
    }

    fn changed(&mut self, old: &TreeEntry, dir: &[u8], node: &Node) -> Result<(), StoreError> {
        let path = join(dir, &old.name);
        match (old.kind == EntryKind::Dir, node.kind == EntryKind::Dir) {
            (true, true) if old.id != node.id => self.dir(&old.id, &path),
            (true, true) => Ok(()),
            (false, false) => {
                if old.kind != node.kind || old.id != node.id || modes_differ(old.mode, node.mode) {
                    self.old_nodes.insert(
                        path.clone(),
                        Node {
                            kind: old.kind,
                            size: old.size,
                            id: old.id,
                            mode: old.mode,
                        },
                    );
                    self.changes.push((path, Change::Modified));
                }
                Ok(())
            }
            _ => {
                self.removed(old, dir)?;
                self.added(&path, node);
                Ok(())
            }
        }
    }

    /// `entry` (in `dir` of the old tree) is gone: it, or every file under it, is deleted.
    fn removed(&mut self, entry: &TreeEntry, dir: &[u8]) -> Result<(), StoreError> {
        let path = join(dir, &entry.name);
        if entry.kind != EntryKind::Dir {
            self.old_nodes.insert(path.clone(), Node::from(entry));
            self.changes.push((path, Change::Deleted));
            return Ok(());
        }
        for (sub, node) in flatten(self.store, &entry.id)? {
            if node.kind != EntryKind::Dir {
                let full = join(&path, &sub);
                self.old_nodes.insert(full.clone(), node);
                self.changes.push((full, Change::Deleted));
            }
        }
        Ok(())
    }

    fn added(&mut self, path: &[u8], node: &Node) {
        if node.kind != EntryKind::Dir {
            self.changes.push((path.to_vec(), Change::Added));
            return;
        }
        if (self.pruned)(path) {
            self.blind = true;
            return;
        }
        let prefix = join(path, b"");
        for (p, n) in self
            .new
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
        {
            if n.kind != EntryKind::Dir {
                self.changes.push((p.clone(), Change::Added));
            } else if (self.pruned)(p) {
                self.blind = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::tests::node;

    #[test]
    fn diff_sees_every_kind_of_change() {
        let old: FlatTree = [
            (b"a".to_vec(), node(EntryKind::File, 1)),
            (b"b".to_vec(), node(EntryKind::File, 2)),
            (b"d".to_vec(), node(EntryKind::File, 3)),
        ]
        .into();
        let new: FlatTree = [
            (b"a".to_vec(), node(EntryKind::File, 1)),
            (b"b".to_vec(), node(EntryKind::Executable, 2)),
            (b"c".to_vec(), node(EntryKind::Symlink, 4)),
            (b"d".to_vec(), node(EntryKind::Dir, 0)),
            (b"d/x".to_vec(), node(EntryKind::File, 5)),
        ]
        .into();
        let d = diff_files(&old, &new);
        assert_eq!(
            d,
            vec![
                (b"b".to_vec(), Change::Modified),
                (b"c".to_vec(), Change::Added),
                (b"d".to_vec(), Change::Deleted),
                (b"d/x".to_vec(), Change::Added)
            ]
        );
        assert_eq!(count_changes(&d), (2, 1, 1));
    }
}
