//! Taking paths out of stored trees: each tree that holds one (or a directory above one) is
//! written again without it, memoized by (tree, directory), so a directory shared by a
//! thousand snapshots is rewritten once. What is taken out is counted per path.

use std::collections::{BTreeMap, HashMap, HashSet};

use snap_store::{EntryKind, ObjectId, ObjectKind, ObjectWriter, Store, Tree};

use crate::error::TreeError;

/// What was taken out at one expunged path, over every tree rewritten.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Taken {
    /// Distinct file contents (versions) under the path.
    pub versions: HashSet<ObjectId>,
    /// Their bytes.
    pub bytes: u64,
    /// The file paths under it that held them (the path itself for a file).
    pub files: HashSet<Vec<u8>>,
}

/// A tree's rewrite: its new id and the files and bytes it no longer holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Rewritten {
    pub(super) id: ObjectId,
    pub(super) files: u64,
    pub(super) bytes: u64,
}

impl Rewritten {
    /// A tree left as it is.
    pub(super) fn same(id: ObjectId) -> Rewritten {
        Rewritten {
            id,
            files: 0,
            bytes: 0,
        }
    }
}

/// Rewrites trees without `paths`, through `writer` (a dry writer for a preview).
pub(super) struct Rewriter<'a> {
    store: &'a Store,
    writer: &'a ObjectWriter<'a>,
    paths: &'a [Vec<u8>],
    memo: HashMap<(ObjectId, Vec<u8>), Rewritten>,
    /// Files and bytes in each removed directory tree, memoized.
    sizes: HashMap<ObjectId, (u64, u64)>,
    /// By expunged path.
    pub(super) taken: BTreeMap<Vec<u8>, Taken>,
}

impl<'a> Rewriter<'a> {
    pub(super) fn new(
        store: &'a Store,
        writer: &'a ObjectWriter<'a>,
        paths: &'a [Vec<u8>],
    ) -> Self {
        Rewriter {
            store,
            writer,
            paths,
            memo: HashMap::new(),
            sizes: HashMap::new(),
            taken: BTreeMap::new(),
        }
    }

    /// The paths taken out.
    pub(super) fn paths(&self) -> &[Vec<u8>] {
        self.paths
    }

    /// The root `root` without the paths.
    pub(super) fn root(&mut self, root: ObjectId) -> Result<Rewritten, TreeError> {
        self.tree(root, &[])
    }

    fn tree(&mut self, tree: ObjectId, dir: &[u8]) -> Result<Rewritten, TreeError> {
        let key = (tree, dir.to_vec());
        if let Some(done) = self.memo.get(&key) {
            return Ok(*done);
        }
        let mut out = Rewritten::same(tree);
        let mut entries = Vec::new();
        let mut changed = false;
        for mut entry in self.store.read_tree(&tree)?.entries {
            let path = join(dir, &entry.name);
            if self.paths.contains(&path) {
                let (files, bytes) = self.take(&path, &path, entry.kind, entry.id, entry.size)?;
                (out.files, out.bytes) = (out.files + files, out.bytes + bytes);
                changed = true;
                continue;
            }
            if entry.kind == EntryKind::Dir && self.holds_below(&path) {
                let inner = self.tree(entry.id, &path)?;
                if inner.id != entry.id {
                    (out.files, out.bytes) = (out.files + inner.files, out.bytes + inner.bytes);
                    entry.id = inner.id;
                    changed = true;
                }
            }
            entries.push(entry);
        }
        if changed {
            out.id = self
                .writer
                .put(ObjectKind::Tree, &Tree { entries }.encode())?;
        }
        self.memo.insert(key, out);
        Ok(out)
    }

    /// True when an expunged path lies strictly below directory `dir`.
    fn holds_below(&self, dir: &[u8]) -> bool {
        (self.paths.iter())
            .any(|p| p.len() > dir.len() && p.starts_with(dir) && p[dir.len()] == b'/')
    }

    /// Counts what leaves at `path` (under the expunged path `root`): a file, or every file
    /// of a directory.
    fn take(
        &mut self,
        root: &[u8],
        path: &[u8],
        kind: EntryKind,
        id: ObjectId,
        size: u64,
    ) -> Result<(u64, u64), TreeError> {
        if kind != EntryKind::Dir {
            let taken = self.taken.entry(root.to_vec()).or_default();
            if taken.versions.insert(id) {
                taken.bytes += size;
            }
            taken.files.insert(path.to_vec());
            return Ok((1, size));
        }
        if let Some(sizes) = self.sizes.get(&id) {
            // Counted once already: the same directory again (only its totals matter now).
            return Ok(*sizes);
        }
        let mut total = (0, 0);
        for entry in self.store.read_tree(&id)?.entries {
            let inner = join(path, &entry.name);
            let (files, bytes) = self.take(root, &inner, entry.kind, entry.id, entry.size)?;
            total = (total.0 + files, total.1 + bytes);
        }
        self.sizes.insert(id, total);
        Ok(total)
    }
}

/// `dir/name` (or `name` at the root).
pub(super) fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(dir.len() + 1 + name.len());
    if !dir.is_empty() {
        path.extend_from_slice(dir);
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}
