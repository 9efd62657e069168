//! Flat views of a tree: every path (relative, `/`-separated bytes) mapped to its entry.
//!
//! Snapshots are stored as nested trees; saving, diffing and restoring work on this flat form.
//! Directories appear as entries of kind `Dir` (their id is the subtree's, or zero before the
//! trees are built), so empty directories survive.

use std::borrow::Cow;
use std::collections::BTreeMap;

use snap_store::{
    EntryKind, ObjectId, ObjectKind, ObjectWriter, Store, StoreError, Tree, TreeEntry,
};

/// One path's entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Node {
    /// What is at the path.
    pub kind: EntryKind,
    /// File length, or link target length; 0 for directories.
    pub size: u64,
    /// Content (file), target chunk (symlink) or tree (directory; [`UNBUILT`] until built).
    pub id: ObjectId,
    /// Permission bits of a file or directory (`st_mode & 0o777`); `None` for a symlink and
    /// for entries of trees recorded before modes were.
    pub mode: Option<u16>,
}

/// True when two modes are both known and differ. A mode not recorded (an old snapshot)
/// differs from nothing, so upgrading snap does not make every file look changed.
pub fn modes_differ(a: Option<u16>, b: Option<u16>) -> bool {
    matches!((a, b), (Some(a), Some(b)) if a != b)
}

/// The permission bits of an `st_mode`, as trees record them.
pub fn permission_bits(st_mode: u32) -> u16 {
    (st_mode & u32::from(snap_store::PERMISSION_BITS)) as u16
}

/// Every path of a tree, sorted by path bytes. The root itself is not an entry.
pub type FlatTree = BTreeMap<Vec<u8>, Node>;

/// The id used for directories whose tree has not been built yet.
pub const UNBUILT: ObjectId = ObjectId([0; 32]);

/// Reads a whole snapshot tree into flat form.
pub fn flatten(store: &Store, root: &ObjectId) -> Result<FlatTree, StoreError> {
    let mut out = FlatTree::new();
    let mut stack = vec![(Vec::new(), *root)];
    while let Some((prefix, id)) = stack.pop() {
        for entry in store.read_tree(&id)?.entries {
            let path = join(&prefix, &entry.name);
            if entry.kind == EntryKind::Dir {
                stack.push((path.clone(), entry.id));
            }
            out.insert(
                path,
                Node {
                    kind: entry.kind,
                    size: entry.size,
                    id: entry.id,
                    mode: entry.mode,
                },
            );
        }
    }
    Ok(out)
}

/// `prefix/name`, or `name` at the root.
pub fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    if prefix.is_empty() {
        return name.to_vec();
    }
    let mut p = Vec::with_capacity(prefix.len() + 1 + name.len());
    p.extend_from_slice(prefix);
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

/// Splits a path into its parent (empty at the root) and its last component.
pub fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&c| c == b'/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&[], path),
    }
}

/// Writes the trees of `flat` bottom-up and returns the root tree id. Directory nodes in
/// `flat` get their built ids. Unchanged trees dedupe against the store.
///
/// One pass, no map of every path. In path byte order everything under a directory `d` is
/// contiguous (the `d/` range), but siblings such as `d-x` and `d.txt` sort between `d` and
/// `d/`: so a directory is only *opened* (pushed on the stack) when its first child arrives,
/// and a directory with no children is sealed as an empty tree when its parent closes. A path
/// whose parent directory is missing from `flat` gets that directory implicitly.
pub fn build_trees(writer: &ObjectWriter<'_>, flat: &mut FlatTree) -> Result<ObjectId, StoreError> {
    build(writer, flat, false, &|_| None)
}

/// As [`build_trees`], except that a directory node whose id is already set (not
/// [`UNBUILT`]) is taken as built, with everything under it: the caller vouches that the
/// whole subtree is unchanged and its trees are in the store (the tree cache). `previous`
/// names a directory's tree before this change, if the store has it: a rebuilt tree is
/// stored as a delta against it (see `snap_store::delta`).
pub fn build_trees_reusing(
    writer: &ObjectWriter<'_>,
    flat: &mut FlatTree,
    previous: &dyn Fn(&[u8]) -> Option<ObjectId>,
) -> Result<ObjectId, StoreError> {
    build(writer, flat, true, previous)
}

fn build(
    writer: &ObjectWriter<'_>,
    flat: &mut FlatTree,
    reuse: bool,
    previous: &dyn Fn(&[u8]) -> Option<ObjectId>,
) -> Result<ObjectId, StoreError> {
    let mut open = vec![OpenDir::new(Cow::Borrowed(&[][..]), None)];
    for (path, node) in flat.iter_mut() {
        let (parent, name) = split(path);
        while !is_within(parent, &open[open.len() - 1].path) {
            close(writer, &mut open, reuse, previous)?;
        }
        open_down_to(&mut open, parent);
        let Some(top) = open.last_mut() else { break };
        if node.kind == EntryKind::Dir {
            top.unopened.insert(name, node);
        } else {
            top.entries.push(TreeEntry {
                name: name.to_vec(),
                kind: node.kind,
                size: node.size,
                id: node.id,
                mode: node.mode.filter(|_| node.kind != EntryKind::Symlink),
            });
        }
    }
    while open.len() > 1 {
        close(writer, &mut open, reuse, previous)?;
    }
    let Some(mut root) = open.pop() else {
        return seal(writer, Vec::new(), None);
    };
    seal_empty_children(writer, &mut root, reuse)?;
    seal(writer, root.entries, previous(b""))
}

/// A directory whose entries are still being collected.
struct OpenDir<'a> {
    path: Cow<'a, [u8]>,
    /// Its node in the flat tree, to receive the built id; `None` for the root and for
    /// directories implied by a deeper path.
    node: Option<&'a mut Node>,
    entries: Vec<TreeEntry>,
    /// Child directories seen but not opened yet (no child of theirs has come yet).
    unopened: BTreeMap<&'a [u8], &'a mut Node>,
}

impl<'a> OpenDir<'a> {
    fn new(path: Cow<'a, [u8]>, node: Option<&'a mut Node>) -> OpenDir<'a> {
        OpenDir {
            path,
            node,
            entries: Vec::new(),
            unopened: BTreeMap::new(),
        }
    }
}

/// Whether `path` is `dir` or lies under it (everything lies under the root, `""`).
pub fn is_within(path: &[u8], dir: &[u8]) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
}

/// Opens each directory from the innermost open one down to `parent`, with its node if the
/// flat tree has one.
fn open_down_to(open: &mut Vec<OpenDir<'_>>, parent: &[u8]) {
    while let Some(top) = open.last_mut().filter(|top| *top.path != *parent) {
        let below = if top.path.is_empty() {
            parent
        } else {
            &parent[top.path.len() + 1..]
        };
        let name = &below[..below.iter().position(|&c| c == b'/').unwrap_or(below.len())];
        let path = parent[..parent.len() - below.len() + name.len()].to_vec();
        let node = top.unopened.remove(name);
        open.push(OpenDir::new(Cow::Owned(path), node));
    }
}

/// Seals the innermost open directory and adds it to its parent; with `reuse`, a directory
/// that has its id already is not sealed again.
fn close(
    writer: &ObjectWriter<'_>,
    open: &mut Vec<OpenDir<'_>>,
    reuse: bool,
    previous: &dyn Fn(&[u8]) -> Option<ObjectId>,
) -> Result<(), StoreError> {
    let Some(mut dir) = open.pop() else {
        return Ok(());
    };
    let known = dir
        .node
        .as_ref()
        .map(|n| n.id)
        .filter(|id| reuse && *id != UNBUILT);
    let mode = dir.node.as_ref().and_then(|n| n.mode);
    let id = match known {
        Some(id) => id,
        None => {
            seal_empty_children(writer, &mut dir, reuse)?;
            let id = seal(writer, dir.entries, previous(&dir.path))?;
            if let Some(node) = dir.node {
                node.id = id;
            }
            id
        }
    };
    if let Some(parent) = open.last_mut() {
        parent.entries.push(TreeEntry {
            name: split(&dir.path).1.to_vec(),
            kind: EntryKind::Dir,
            size: 0,
            id,
            mode,
        });
    }
    Ok(())
}

/// Child directories never opened have no entries: each is an empty tree.
fn seal_empty_children(
    writer: &ObjectWriter<'_>,
    dir: &mut OpenDir<'_>,
    reuse: bool,
) -> Result<(), StoreError> {
    for (name, node) in std::mem::take(&mut dir.unopened) {
        if !reuse || node.id == UNBUILT {
            node.id = seal(writer, Vec::new(), None)?;
        }
        dir.entries.push(TreeEntry {
            name: name.to_vec(),
            kind: EntryKind::Dir,
            size: 0,
            id: node.id,
            mode: node.mode,
        });
    }
    Ok(())
}

fn seal(
    writer: &ObjectWriter<'_>,
    mut entries: Vec<TreeEntry>,
    previous: Option<ObjectId>,
) -> Result<ObjectId, StoreError> {
    // Mostly sorted already: only a subdirectory can land after a sibling like `x.txt`.
    entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
    writer.put_against(ObjectKind::Tree, &Tree { entries }.encode(), previous)
}

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
            self.old_nodes.insert(
                path.clone(),
                Node {
                    kind: entry.kind,
                    size: entry.size,
                    id: entry.id,
                    mode: entry.mode,
                },
            );
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

    fn node(kind: EntryKind, b: u8) -> Node {
        Node {
            kind,
            size: 1,
            id: ObjectId([b; 32]),
            mode: (kind != EntryKind::Symlink).then_some(0o644),
        }
    }

    #[test]
    fn split_and_join() {
        assert_eq!(split(b"a/b/c"), (&b"a/b"[..], &b"c"[..]));
        assert_eq!(split(b"c"), (&b""[..], &b"c"[..]));
        assert_eq!(join(b"", b"c"), b"c");
        assert_eq!(join(b"a", b"c"), b"a/c");
    }

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

    proptest::proptest! {
        /// Whatever paths a flat tree holds (names that sort around `/`, missing parents),
        /// the built trees read back as that tree plus the implied directories.
        #[test]
        fn built_trees_flatten_back(
            paths in proptest::collection::btree_set(
                proptest::collection::vec(
                    proptest::sample::select(vec!["a", "a.b", "a-", "b", "a0"]), 1..4),
                0..24),
            dirs in proptest::collection::vec(proptest::bool::ANY, 24),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::init(dir.path()).unwrap();
            let mut flat = FlatTree::new();
            let mut want = FlatTree::new();
            for (i, parts) in paths.iter().enumerate() {
                let path = parts.join("/").into_bytes();
                let file = node(EntryKind::File, i as u8);
                // A path is a file unless another path lies under it.
                let is_dir = flat.keys().chain(want.keys()).any(|p: &Vec<u8>| is_within(p, &path))
                    || paths.iter().any(|q| q.len() > parts.len() && q[..parts.len()] == parts[..]);
                for end in 1..parts.len() {
                    want.insert(parts[..end].join("/").into_bytes(), node(EntryKind::Dir, 0));
                }
                if is_dir {
                    want.insert(path.clone(), node(EntryKind::Dir, 0));
                    if dirs[i] {
                        flat.insert(path, node(EntryKind::Dir, 0));
                    }
                } else {
                    want.insert(path.clone(), file);
                    flat.insert(path, file);
                }
            }
            let writer = store.writer();
            let root = build_trees(&writer, &mut flat).unwrap();
            let packs = writer.finish().unwrap();
            store.commit(&snap_store::Commit { packs, ..Default::default() }).unwrap();
            let back = flatten(&store, &root).unwrap();
            let shape = |t: &FlatTree| -> Vec<(Vec<u8>, EntryKind, Option<ObjectId>)> {
                t.iter()
                    .map(|(p, n)| (p.clone(), n.kind, (n.kind != EntryKind::Dir).then_some(n.id)))
                    .collect()
            };
            proptest::prop_assert_eq!(shape(&back), shape(&want));
            for (path, n) in &flat {
                proptest::prop_assert_eq!(n.id, back[path].id, "built id of {:?}", path);
            }
        }
    }
}
