//! Flat views of a tree: every path (relative, `/`-separated bytes) mapped to its entry.
//!
//! Snapshots are stored as nested trees; saving, diffing and restoring work on this flat form.
//! Directories appear as entries of kind `Dir` (their id is the subtree's, or zero before the
//! trees are built), so empty directories survive.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

mod changes;
mod listed;
mod renames;

pub use changes::{
    Change, StoredDiff, children, count_changes, diff_files, diff_stored, diff_stored_pruned,
    dir_changes,
};
pub(crate) use changes::{Paired, pair_by_name};
pub use listed::list_dirs;
pub use renames::{
    Listed, Rename, SIMILAR_MAX_BYTES, SIMILAR_MAX_FILES, SIMILAR_MAX_TOTAL, SIMILAR_PERCENT,
    exact_renames, listed, similar_renames, similarity,
};

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

impl From<&TreeEntry> for Node {
    /// The entry a stored tree holds for one of its names.
    fn from(entry: &TreeEntry) -> Node {
        Node {
            kind: entry.kind,
            size: entry.size,
            id: entry.id,
            mode: entry.mode,
        }
    }
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
            out.insert(path, Node::from(&entry));
        }
    }
    Ok(out)
}

/// The tree `root` as a flat tree unfolded only where `target` differs from it: a directory
/// whose id differs from the target's at the same path is listed with all its entries, one
/// the target lacks (or holds a file at) with everything under it, and one whose id the
/// target shares stays a single node, its contents unread. That is all of the current tree
/// `Plan::to_stored` reads, so a move from a tree known to be `root` plans from this what it
/// would plan from all of `flatten(root)`, reading only the directories that differ.
pub fn unfold_against(
    store: &Store,
    root: &ObjectId,
    target: &ObjectId,
) -> Result<FlatTree, StoreError> {
    // The root is always listed, even when the target is the same tree: an empty flat tree
    // would say that nothing is on disk.
    let mut out = FlatTree::new();
    unfold_dir(store, &[], root, Some(target), &mut out)?;
    Ok(out)
}

/// Trees `a` and `b`, each unfolded only where the other differs: [`diff_files`] of the two
/// is that of their whole flat trees, and reading them costs the directories that differ.
pub fn unfold_pair(
    store: &Store,
    a: &ObjectId,
    b: &ObjectId,
) -> Result<(FlatTree, FlatTree), StoreError> {
    Ok((unfold_against(store, a, b)?, unfold_against(store, b, a)?))
}

/// `flat`, a scan that left out what lies under the directories `pruned` names (their ids
/// known, their trees in the store), unfolded from the store under each of those whose id
/// differs from its twin in the stored tree `other`: [`diff_stored`] of the two then never
/// needs what was left out, and reading them costs the directories that differ.
pub fn unfold_pruned(
    store: &Store,
    flat: &mut FlatTree,
    pruned: &dyn Fn(&[u8]) -> bool,
    other: &ObjectId,
) -> Result<(), StoreError> {
    unfold_pruned_in(store, flat, pruned, &[], Some(other))
}

fn unfold_pruned_in(
    store: &Store,
    flat: &mut FlatTree,
    pruned: &dyn Fn(&[u8]) -> bool,
    dir: &[u8],
    other: Option<&ObjectId>,
) -> Result<(), StoreError> {
    let theirs = entries_of(store, other)?;
    let twins: HashMap<&[u8], &TreeEntry> = theirs.iter().map(|t| (t.name.as_slice(), t)).collect();
    let subdirs: Vec<(Vec<u8>, ObjectId)> = (children(flat, dir).into_iter())
        .filter(|(_, node)| node.kind == EntryKind::Dir)
        .map(|(name, node)| (name.to_vec(), node.id))
        .collect();
    for (name, id) in subdirs {
        let path = join(dir, &name);
        let twin = (twins.get(name.as_slice()))
            .filter(|t| t.kind == EntryKind::Dir)
            .map(|t| t.id);
        match pruned(&path) {
            true if twin == Some(id) => {}
            true => unfold_dir(store, &path, &id, twin.as_ref(), flat)?,
            false => unfold_pruned_in(store, flat, pruned, &path, twin.as_ref())?,
        }
    }
    Ok(())
}

/// The entries of tree `id`; none without one (a directory the other side lacks).
fn entries_of(store: &Store, id: Option<&ObjectId>) -> Result<Vec<TreeEntry>, StoreError> {
    id.map_or_else(|| Ok(Vec::new()), |id| Ok(store.read_tree(id)?.entries))
}

/// Lists directory `dir` (tree `id`) into `out`, and unfolds each subdirectory that differs
/// from its twin in `target` (or, without a twin, all of it).
fn unfold_dir(
    store: &Store,
    dir: &[u8],
    id: &ObjectId,
    target: Option<&ObjectId>,
    out: &mut FlatTree,
) -> Result<(), StoreError> {
    let theirs = entries_of(store, target)?;
    let twins: HashMap<&[u8], &TreeEntry> = theirs.iter().map(|t| (t.name.as_slice(), t)).collect();
    for entry in store.read_tree(id)?.entries {
        let path = join(dir, &entry.name);
        out.insert(path.clone(), Node::from(&entry));
        if entry.kind != EntryKind::Dir {
            continue;
        }
        match twins.get(entry.name.as_slice()) {
            Some(t) if t.kind == EntryKind::Dir && t.id == entry.id => {}
            Some(t) if t.kind == EntryKind::Dir => {
                unfold_dir(store, &path, &entry.id, Some(&t.id), out)?
            }
            _ => unfold_dir(store, &path, &entry.id, None, out)?,
        }
    }
    Ok(())
}

/// Tree `root` listed along `paths`: the entries of each directory above a path, and
/// everything at or under each path; every other directory stays a single node, its
/// contents unread. That is all of a tree that restoring those paths reads or rebuilds.
pub fn unfold_along(
    store: &Store,
    root: &ObjectId,
    paths: &[Vec<u8>],
) -> Result<FlatTree, StoreError> {
    let mut out = FlatTree::new();
    let mut listed = HashSet::new();
    for path in paths {
        list_along(store, &mut out, &mut listed, (Vec::new(), *root), path)?;
    }
    Ok(out)
}

/// `flat`, a scan that left out what lies under the directories `pruned` names (their ids
/// known, their trees in the store), unfolded from the store along `paths` where it left
/// them out: afterwards it lists at least what [`unfold_along`] of the scanned tree would.
/// The directories the scan read are listed already.
pub fn unfold_pruned_along(
    store: &Store,
    flat: &mut FlatTree,
    pruned: &dyn Fn(&[u8]) -> bool,
    paths: &[Vec<u8>],
) -> Result<(), StoreError> {
    let mut listed = HashSet::new();
    for path in paths {
        // The first directory on the way that was left out: nothing under it is in `flat`.
        let mut left_out = None;
        let mut here = Vec::new();
        for name in path.split(|&b| b == b'/') {
            here = join(&here, name);
            match flat.get(&here) {
                Some(node) if node.kind == EntryKind::Dir && pruned(&here) => {
                    left_out = Some((here.clone(), node.id));
                    break;
                }
                Some(node) if node.kind == EntryKind::Dir => {}
                _ => break,
            }
        }
        match left_out {
            Some(start) => list_along(store, flat, &mut listed, start, path)?,
            None if here == *path => unfold_pruned_under(store, flat, pruned, path)?,
            None => {}
        }
    }
    Ok(())
}

/// Unfolds from the store, whole, each directory under `dir` that the scan left out.
fn unfold_pruned_under(
    store: &Store,
    flat: &mut FlatTree,
    pruned: &dyn Fn(&[u8]) -> bool,
    dir: &[u8],
) -> Result<(), StoreError> {
    let mut from = dir.to_vec();
    from.push(b'/');
    let left_out: Vec<(Vec<u8>, ObjectId)> = (flat.range(from.clone()..))
        .take_while(|(path, _)| path.starts_with(&from))
        .filter(|(path, node)| node.kind == EntryKind::Dir && pruned(path))
        .map(|(path, node)| (path.clone(), node.id))
        .collect();
    for (path, id) in left_out {
        for (sub, node) in flatten(store, &id)? {
            flat.insert(join(&path, &sub), node);
        }
    }
    Ok(())
}

/// Lists into `out`, from directory `dir` (tree `id`) down, the entries of each directory
/// above `path` and everything at or under it. `path` lies at or under `dir`; `listed` names
/// the directories already listed, so that paths sharing a parent read it once.
fn list_along(
    store: &Store,
    out: &mut FlatTree,
    listed: &mut HashSet<Vec<u8>>,
    (mut dir, mut id): (Vec<u8>, ObjectId),
    path: &[u8],
) -> Result<(), StoreError> {
    let rest = match dir.is_empty() {
        true => path,
        false => path.get(dir.len() + 1..).unwrap_or_default(),
    };
    let names: Vec<&[u8]> = match dir.as_slice() == path {
        true => Vec::new(),
        false => rest.split(|&b| b == b'/').collect(),
    };
    for name in names {
        if listed.insert(dir.clone()) {
            for entry in store.read_tree(&id)?.entries {
                out.insert(join(&dir, &entry.name), Node::from(&entry));
            }
        }
        let here = join(&dir, name);
        match out.get(&here) {
            Some(node) if node.kind == EntryKind::Dir => (dir, id) = (here, node.id),
            // Absent, or a file: nothing lies further down.
            _ => return Ok(()),
        }
    }
    if dir == path {
        for (sub, node) in flatten(store, &id)? {
            out.insert(join(path, &sub), node);
        }
    }
    Ok(())
}

/// The entry tree `root` holds at `path`, reading only the trees on the way to it.
pub fn entry_at(store: &Store, root: &ObjectId, path: &[u8]) -> Result<Option<Node>, StoreError> {
    let mut id = *root;
    let mut names = path.split(|&b| b == b'/').peekable();
    while let Some(name) = names.next() {
        let tree = store.read_tree(&id)?;
        let Some(entry) = tree.entries.iter().find(|e| e.name == name) else {
            return Ok(None);
        };
        if names.peek().is_none() {
            return Ok(Some(Node::from(entry)));
        }
        if entry.kind != EntryKind::Dir {
            return Ok(None);
        }
        id = entry.id;
    }
    Ok(None)
}

pub use snap_store::fs::{join, split};

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
/// stored as a delta against it (a delta frame, docs/FORMAT.md 5).
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

/// The entries of `flat` below directory `dir` (not `dir` itself), in path order.
pub fn below<'a>(flat: &'a FlatTree, dir: &[u8]) -> impl Iterator<Item = (&'a Vec<u8>, &'a Node)> {
    let inside = join(dir, b"");
    (flat.range(inside.clone()..)).take_while(move |(p, _)| p.starts_with(&inside))
}

/// The entries of `flat` at `path` and below it, in path order.
pub fn within<'a>(
    flat: &'a FlatTree,
    path: &[u8],
) -> impl Iterator<Item = (&'a Vec<u8>, &'a Node)> {
    flat.get_key_value(path)
        .into_iter()
        .chain(below(flat, path))
}

/// Takes `path` and everything below it out of `flat`.
pub fn remove_within(flat: &mut FlatTree, path: &[u8]) {
    let gone: Vec<Vec<u8>> = within(flat, path).map(|(p, _)| p.clone()).collect();
    for p in gone {
        flat.remove(&p);
    }
}

/// Marks every directory `flat` lists above `path` unbuilt, so that a build writes it again
/// (a directory with an id is otherwise taken as built, whatever is listed below it).
pub fn unbuild_above(flat: &mut FlatTree, path: &[u8]) {
    let mut up = split(path).0;
    while let Some(node) = flat.get_mut(up).filter(|n| n.kind == EntryKind::Dir) {
        node.id = UNBUILT;
        up = split(up).0;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A node of `kind` whose id is `b` repeated.
    pub(super) fn node(kind: EntryKind, b: u8) -> Node {
        Node {
            kind,
            size: 1,
            id: ObjectId([b; 32]),
            mode: (kind != EntryKind::Symlink).then_some(0o644),
        }
    }

    /// `below` and `within` stop at the directory's end: a sibling whose name starts with
    /// the directory's (`a.txt`, `ab` beside `a`) is not inside it.
    #[test]
    fn below_and_within_a_directory() {
        let mut flat = FlatTree::new();
        for (path, kind) in [
            ("a", EntryKind::Dir),
            ("a.txt", EntryKind::File),
            ("a/b", EntryKind::Dir),
            ("a/b/c", EntryKind::File),
            ("ab", EntryKind::File),
        ] {
            flat.insert(path.as_bytes().to_vec(), node(kind, 1));
        }
        let names = |it: &mut dyn Iterator<Item = (&Vec<u8>, &Node)>| -> Vec<String> {
            it.map(|(p, _)| String::from_utf8_lossy(p).into_owned())
                .collect()
        };
        assert_eq!(names(&mut below(&flat, b"a")), ["a/b", "a/b/c"]);
        assert_eq!(names(&mut within(&flat, b"a")), ["a", "a/b", "a/b/c"]);
        assert_eq!(names(&mut below(&flat, b"")).len(), 5);
        flat.get_mut(&b"a/b"[..]).unwrap().id = ObjectId([9; 32]);
        unbuild_above(&mut flat, b"a/b/c");
        assert_eq!(
            (flat[&b"a/b"[..]].id, flat[&b"a"[..]].id),
            (UNBUILT, UNBUILT)
        );
        remove_within(&mut flat, b"a");
        assert_eq!(names(&mut within(&flat, b"")), ["a.txt", "ab"]);
    }

    #[test]
    fn split_and_join() {
        assert_eq!(split(b"a/b/c"), (&b"a/b"[..], &b"c"[..]));
        assert_eq!(split(b"c"), (&b""[..], &b"c"[..]));
        assert_eq!(join(b"", b"c"), b"c");
        assert_eq!(join(b"a", b"c"), b"a/c");
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

        /// A tree unfolded along some paths (there or not, under files or not) lists exactly
        /// what lies at or under them, and the entries of each directory above them.
        #[test]
        fn unfolding_along_paths_lists_them_and_what_is_above(
            files in proptest::collection::btree_set(names(), 1..16),
            paths in proptest::collection::vec(names(), 1..4),
        ) {
            let (_dir, store, root) = stored_tree(&files);
            let paths: Vec<Vec<u8>> = paths.into_iter().map(String::into_bytes).collect();
            let want: FlatTree = (flatten(&store, &root).unwrap().into_iter())
                .filter(|(e, _)| paths.iter().any(|p| is_within(e, p) || is_within(p, split(e).0)))
                .collect();
            proptest::prop_assert_eq!(unfold_along(&store, &root, &paths).unwrap(), want);
        }

        /// A scan that left out some directories (any of them, nested or not), unfolded
        /// along some paths, lists at least what the whole tree unfolded along them does,
        /// and nothing the tree does not hold.
        #[test]
        fn a_pruned_scan_unfolded_along_paths_lists_what_the_tree_does(
            files in proptest::collection::btree_set(names(), 1..16),
            paths in proptest::collection::vec(names(), 1..4),
            left_out in proptest::collection::vec(proptest::bool::ANY, 16),
        ) {
            let (_dir, store, root) = stored_tree(&files);
            let whole = flatten(&store, &root).unwrap();
            let pruned: std::collections::HashSet<Vec<u8>> = (whole.iter())
                .filter(|(_, n)| n.kind == EntryKind::Dir)
                .zip(&left_out)
                .filter(|(_, out)| **out)
                .map(|((p, _), _)| p.clone())
                .collect();
            let mut scanned: FlatTree = (whole.iter())
                .filter(|(p, _)| !pruned.iter().any(|d| p.len() > d.len() && is_within(p, d)))
                .map(|(p, n)| (p.clone(), *n))
                .collect();
            let paths: Vec<Vec<u8>> = paths.into_iter().map(String::into_bytes).collect();
            let is_pruned = |d: &[u8]| pruned.contains(d);
            unfold_pruned_along(&store, &mut scanned, &is_pruned, &paths).unwrap();
            for (path, want) in unfold_along(&store, &root, &paths).unwrap() {
                proptest::prop_assert_eq!(scanned.get(&path), Some(&want), "{:?}", path);
            }
            for (path, got) in &scanned {
                proptest::prop_assert_eq!(whole.get(path), Some(got), "{:?}", path);
            }
        }
    }

    /// A store holding the tree of `files` (a name with another under it is a directory):
    /// its directory, the store, and the root tree's id.
    fn stored_tree(
        files: &std::collections::BTreeSet<String>,
    ) -> (tempfile::TempDir, Store, ObjectId) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::init(dir.path()).unwrap();
        let is_dir = |f: &String| {
            files
                .iter()
                .any(|g| g.len() > f.len() && g.starts_with(&format!("{f}/")))
        };
        let mut flat: FlatTree = (files.iter().enumerate())
            .filter(|(_, f)| !is_dir(f))
            .map(|(i, f)| (f.clone().into_bytes(), node(EntryKind::File, i as u8)))
            .collect();
        let writer = store.writer();
        let root = build_trees(&writer, &mut flat).unwrap();
        let packs = writer.finish().unwrap();
        store
            .commit(&snap_store::Commit {
                packs,
                ..Default::default()
            })
            .unwrap();
        (dir, store, root)
    }

    /// Paths of one to three names from a few that sort around `/`.
    fn names() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::strategy::Strategy;
        proptest::collection::vec(proptest::sample::select(vec!["a", "a.b", "b", "a0"]), 1..4)
            .prop_map(|parts| parts.join("/"))
    }
}
