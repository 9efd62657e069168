//! Reading history: snapshots by id or reference, their files and changes, the log.

use crate::diff;
use crate::parts::Parts;
use crate::scan;
use std::collections::HashSet;

use crate::diff::{DiffEntry, Side, TreeDiff};
use crate::error::TreeError;
use crate::flat::{self, FlatTree, Node, diff_files, flatten};
use crate::flat::{Change, Rename, SIMILAR_MAX_BYTES, SIMILAR_MAX_FILES, SIMILAR_MAX_TOTAL};
use crate::history::Lines;
use crate::snapshot::{LogEntry, PathChange, Snapshot};
use snap_store::{EntryKind, ObjectId};

/// Reads history from the store: snapshots, their trees and files, what changed, sessions, blame.
#[derive(Clone, Copy)]
pub(crate) struct Reader<'a> {
    pub(crate) parts: &'a Parts,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(parts: &'a Parts) -> Reader<'a> {
        Reader { parts }
    }
}

/// Each change with its entry on the side it exists (`old` for a deletion, else `new`).
fn present_in<'a>(
    changes: &'a [PathChange],
    old: &FlatTree,
    new: &FlatTree,
) -> Vec<(&'a [u8], Change, Option<Node>)> {
    (changes.iter())
        .map(|(path, change)| {
            let side = if *change == Change::Deleted { old } else { new };
            (path.as_slice(), *change, side.get(path).copied())
        })
        .collect()
}

/// A file or executable small enough to compare for a similar rename (not empty, not a link).
fn comparable(node: &Node) -> bool {
    matches!(node.kind, EntryKind::File | EntryKind::Executable)
        && node.size > 0
        && node.size <= SIMILAR_MAX_BYTES
}

/// The largest file [`Workspace::read_file`] holds in memory whole (blame, `cat --json`).
pub const MAX_READ_WHOLE: u64 = 64 << 20;

impl<'a> Reader<'a> {
    pub(crate) fn snapshot(&self, id: ObjectId) -> Result<Snapshot, TreeError> {
        Ok(Snapshot {
            id,
            record: self.parts.store.snapshot(&id)?,
        })
    }

    pub(crate) fn resolve(&self, reference: &str) -> Result<Snapshot, TreeError> {
        let (id, record) = self.parts.store.resolve(reference)?;
        Ok(Snapshot { id, record })
    }

    pub(crate) fn head(&self) -> Result<Option<Snapshot>, TreeError> {
        self.parts
            .store
            .history()?
            .head
            .map(|id| self.snapshot(id))
            .transpose()
    }

    pub(crate) fn files(&self, snapshot: &Snapshot) -> Result<FlatTree, TreeError> {
        Ok(flatten(&self.parts.store, &snapshot.record.root)?)
    }

    pub(crate) fn files_under(
        &self,
        snapshot: &Snapshot,
        paths: &[Vec<u8>],
    ) -> Result<FlatTree, TreeError> {
        if paths.is_empty() || paths.iter().any(|p| p.is_empty()) {
            return self.files(snapshot);
        }
        let mut out = FlatTree::new();
        for path in paths {
            let Some(node) = self.entry_of(snapshot, path)? else {
                continue;
            };
            if node.kind == EntryKind::Dir {
                let inside = flatten(&self.parts.store, &node.id)?;
                out.extend(inside.into_iter().map(|(p, n)| (flat::join(path, &p), n)));
            }
            out.insert(path.clone(), node);
        }
        Ok(out)
    }

    pub(crate) fn entry_of(
        &self,
        snapshot: &Snapshot,
        path: &[u8],
    ) -> Result<Option<Node>, TreeError> {
        Ok(flat::entry_at(
            &self.parts.store,
            &snapshot.record.root,
            path,
        )?)
    }

    pub(crate) fn flat_of(&self, snapshot: Option<&Snapshot>) -> Result<FlatTree, TreeError> {
        snapshot.map_or_else(|| Ok(FlatTree::new()), |s| self.files(s))
    }

    pub(crate) fn read_file(&self, snapshot: &Snapshot, path: &[u8]) -> Result<Vec<u8>, TreeError> {
        let node = self.file_node(snapshot, path)?;
        if node.size > MAX_READ_WHOLE {
            return Err(TreeError::TooLargeToRead {
                path: String::from_utf8_lossy(path).into_owned(),
                size: node.size,
                limit: MAX_READ_WHOLE,
            });
        }
        Ok(self.parts.store.read_file(&node.id)?)
    }

    pub(crate) fn file_chunks(
        &self,
        snapshot: &Snapshot,
        path: &[u8],
    ) -> Result<(Node, snap_store::FileChunks<'a>), TreeError> {
        let node = self.file_node(snapshot, path)?;
        Ok((node, self.parts.store.file_chunks(&node.id)?))
    }

    /// The entry of the file or symlink at `path` in a snapshot.
    fn file_node(&self, snapshot: &Snapshot, path: &[u8]) -> Result<Node, TreeError> {
        let shown = || {
            (
                String::from_utf8_lossy(path).into_owned(),
                format!("#{}", snapshot.record.seq),
            )
        };
        self.entry_of(snapshot, path)?
            .filter(|n| n.kind != EntryKind::Dir)
            .ok_or_else(|| {
                let (p, s) = shown();
                TreeError::PathNotInSnapshot(p, s)
            })
    }

    pub(crate) fn parent_of(&self, snapshot: &Snapshot) -> Result<Option<Snapshot>, TreeError> {
        let Some(parent) = snapshot.record.parent else {
            return Ok(None);
        };
        match self.parts.store.snapshot(&parent) {
            Ok(record) => Ok(Some(Snapshot { id: parent, record })),
            Err(snap_store::StoreError::MissingObject { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    pub(crate) fn parent_pruned(&self, snapshot: &Snapshot) -> Result<bool, TreeError> {
        Ok(snapshot.record.parent.is_some() && self.parent_of(snapshot)?.is_none())
    }

    pub(crate) fn changes_of(&self, snapshot: &Snapshot) -> Result<Vec<PathChange>, TreeError> {
        Ok(self.change_list_of(snapshot)?.0)
    }

    pub(crate) fn change_list_of(
        &self,
        snapshot: &Snapshot,
    ) -> Result<(Vec<PathChange>, Vec<Rename>), TreeError> {
        let (old, new) = match self.parent_of(snapshot)? {
            Some(parent) => flat::unfold_pair(
                &self.parts.store,
                &parent.record.root,
                &snapshot.record.root,
            )?,
            None => (FlatTree::new(), self.files(snapshot)?),
        };
        let changes = diff_files(&old, &new);
        let from = Side::Snapshot(self.parent_of(snapshot)?.map(Box::new));
        let to = Side::Snapshot(Some(Box::new(snapshot.clone())));
        let renames = self.renames_among(&from, &to, &changes, &old, &new)?;
        Ok((changes, renames))
    }

    pub(crate) fn renames_in(&self, diff: &TreeDiff) -> Result<Vec<Rename>, TreeError> {
        let present = |e: &DiffEntry| match e.change {
            Change::Deleted => e.old,
            Change::Added => e.new,
            Change::Modified => None,
        };
        let changes = (diff.entries.iter()).map(|e| (e.path.as_slice(), e.change, present(e)));
        self.renames_with_similar(&diff.from, &diff.to, changes.collect())
    }

    /// [`Workspace::renames_in`] for `changes` from `old` to `new`, the sides they are on.
    pub(crate) fn renames_among(
        &self,
        from: &Side,
        to: &Side,
        changes: &[PathChange],
        old: &FlatTree,
        new: &FlatTree,
    ) -> Result<Vec<Rename>, TreeError> {
        self.renames_with_similar(from, to, present_in(changes, old, new))
    }

    pub(crate) fn exact_renames_of(&self, snapshot: &Snapshot) -> Result<Vec<Rename>, TreeError> {
        let Some(parent) = self.parent_of(snapshot)? else {
            return Ok(Vec::new());
        };
        let (old, new) = flat::unfold_pair(
            &self.parts.store,
            &parent.record.root,
            &snapshot.record.root,
        )?;
        let changes = diff_files(&old, &new);
        Ok(flat::exact_renames(present_in(&changes, &old, &new)))
    }

    fn renames_with_similar(
        &self,
        from: &Side,
        to: &Side,
        changes: Vec<(&[u8], Change, Option<Node>)>,
    ) -> Result<Vec<Rename>, TreeError> {
        let mut renames = flat::exact_renames(changes.iter().copied());
        let paired: HashSet<&[u8]> = (renames.iter())
            .flat_map(|r| [r.from.as_slice(), r.to.as_slice()])
            .collect();
        let unpaired = |wanted: Change| {
            (changes.iter())
                .filter(|(p, c, _)| *c == wanted && !paired.contains(p))
                .filter_map(|(p, _, n)| n.filter(comparable).map(|n| (*p, n)))
                .collect::<Vec<_>>()
        };
        let (gone, came) = (unpaired(Change::Deleted), unpaired(Change::Added));
        let bytes: u64 = gone.iter().chain(&came).map(|(_, n)| n.size).sum();
        if gone.is_empty()
            || came.is_empty()
            || gone.len().max(came.len()) > SIMILAR_MAX_FILES
            || bytes > SIMILAR_MAX_TOTAL
        {
            return Ok(renames);
        }
        let read = |side: &Side, found: &[(&[u8], Node)]| -> Vec<(Vec<u8>, Vec<u8>)> {
            // A file gone from the working tree since the walk just pairs with nothing.
            (found.iter())
                .filter_map(|(p, n)| self.side_content(side, p, n).ok().map(|c| (p.to_vec(), c)))
                .filter(|(_, c)| !crate::diff::is_binary(c))
                .collect()
        };
        let (gone, came) = (read(from, &gone), read(to, &came));
        renames.extend(flat::similar_renames(&gone, &came));
        Ok(renames)
    }

    pub(crate) fn diff_of(&self, snapshot: &Snapshot) -> Result<TreeDiff, TreeError> {
        let parent = self.parent_of(snapshot)?;
        let (old, new) = match &parent {
            Some(p) => flat::unfold_pair(&self.parts.store, &p.record.root, &snapshot.record.root)?,
            None => (FlatTree::new(), self.files(snapshot)?),
        };
        let entries = (diff_files(&old, &new).into_iter())
            .map(|(path, change)| DiffEntry::between(&old, &new, path, change))
            .collect();
        Ok(TreeDiff {
            from: Side::Snapshot(parent.map(Box::new)),
            to: Side::Snapshot(Some(Box::new(snapshot.clone()))),
            entries,
        })
    }

    pub(crate) fn pulled(&self) -> Result<Vec<snap_store::Pulled>, TreeError> {
        let mut pulled = self.parts.store.pulled()?;
        pulled
            .sort_by(|a, b| (&a.remote, a.record.seq, a.id).cmp(&(&b.remote, b.record.seq, b.id)));
        Ok(pulled)
    }

    pub(crate) fn log(&self, all: bool) -> Result<Vec<LogEntry>, TreeError> {
        Ok(self.history()?.log(Lines::all_if(all)))
    }

    pub(crate) fn log_touching(
        &self,
        all: bool,
        paths: &[Vec<u8>],
    ) -> Result<Vec<LogEntry>, TreeError> {
        let roots: std::collections::HashMap<ObjectId, ObjectId> =
            (self.parts.store.snapshots()?)
                .into_iter()
                .map(|(id, record)| (id, record.root))
                .collect();
        let mut out = Vec::new();
        for entry in self.log(all)? {
            let record = &entry.snapshot.record;
            let parent = record.parent.map(|p| roots.get(&p).copied());
            if self.changed_any(&record.root, parent, paths)? {
                out.push(entry);
            }
        }
        Ok(out)
    }

    /// Whether the tree `root` holds, at any of `paths`, something else than its parent's
    /// tree (`None`: no parent; `Some(None)`: a parent no longer in the store).
    fn changed_any(
        &self,
        root: &ObjectId,
        parent: Option<Option<ObjectId>>,
        paths: &[Vec<u8>],
    ) -> Result<bool, TreeError> {
        let parent = match parent {
            None => None,
            Some(None) => return Ok(true),
            Some(Some(parent)) => Some(parent),
        };
        for path in paths {
            let now = self.entry_or_root(root, path)?;
            let before = match parent {
                Some(parent) => match self.entry_or_root(&parent, path) {
                    Ok(before) => before,
                    Err(_) => return Ok(true),
                },
                None => None,
            };
            if now != before {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// What tree `root` holds at `path`, the root itself for `""`.
    fn entry_or_root(&self, root: &ObjectId, path: &[u8]) -> Result<Option<Node>, TreeError> {
        if path.is_empty() {
            return Ok(Some(Node {
                kind: EntryKind::Dir,
                size: 0,
                id: *root,
                mode: None,
            }));
        }
        Ok(flat::entry_at(&self.parts.store, root, path)?)
    }

    pub(crate) fn side_content(
        &self,
        side: &Side,
        path: &[u8],
        node: &Node,
    ) -> Result<Vec<u8>, TreeError> {
        let abs = scan::abs(&self.parts.root, path);
        match (side, node.kind) {
            (Side::Snapshot(_), _) => Ok(self.parts.store.read_file(&node.id)?),
            // Beneath the root, following no link (see `crate::inside`).
            (Side::WorkingTree, EntryKind::Symlink) => {
                let root = crate::inside::open_root(&self.parts.root)
                    .map_err(|e| TreeError::io(&abs, e))?;
                crate::inside::read_link(&root, path).map_err(|e| TreeError::io(&abs, e))
            }
            (Side::WorkingTree, _) => {
                crate::inside::read_file(&self.parts.root, path, diff::MAX_DIFF_BYTES as u64)
                    .map_err(|e| TreeError::io(&abs, e))
            }
        }
    }
}
