//! Large files, so that none is a surprise: the ones a save takes for the first time
//! (`large_added`), the files on disk no snapshot can hold that went away since the last save
//! (`untracked_removed`: over `max_file_size`, or excluded by path), and what large files
//! cost the store (`log --stats`).

use std::collections::HashSet;

use snap_store::{EntryKind, ObjectId, ObjectKind, UntrackedFile, UntrackedWhy};

use crate::capture::Snapshotter;
use crate::error::TreeError;
use crate::flat::{Change, FlatTree};
use crate::snapshot::PathChange;

/// A file of at least `large_file_size` bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LargeFile {
    /// Workspace-relative path.
    pub path: Vec<u8>,
    /// Its size in bytes.
    pub size: u64,
}

/// What large files cost the store: each distinct content of at least `large_file_size`
/// bytes that any snapshot holds, counted once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LargeCost {
    /// Distinct large contents.
    pub files: u64,
    /// Their sizes, summed.
    pub bytes: u64,
    /// What their chunks take in packs, each chunk once.
    pub stored_bytes: u64,
}

/// The untracked files on disk now, and those of the last save's list that are gone.
pub(super) struct Untracked {
    /// The list to keep for the next save; `None` when it is the one already kept.
    pub(super) now: Option<Vec<UntrackedFile>>,
    /// Files of the last list no longer on disk as regular files, in path order.
    pub(super) removed: Vec<UntrackedFile>,
}

/// The files of at least `threshold` bytes that `changes` add to `new`, or grow past the
/// threshold there: what `old` did not hold at that size.
pub(super) fn large_added(
    changes: &[PathChange],
    old: &FlatTree,
    new: &FlatTree,
    threshold: u64,
) -> Vec<LargeFile> {
    let large = |flat: &FlatTree, path: &[u8]| {
        flat.get(path)
            .filter(|n| matches!(n.kind, EntryKind::File | EntryKind::Executable))
            .filter(|n| n.size >= threshold)
            .map(|n| n.size)
    };
    (changes.iter())
        .filter(|(_, change)| *change != Change::Deleted)
        .filter_map(|(path, _)| {
            let size = large(new, path)?;
            let before = large(old, path);
            before.is_none().then(|| LargeFile {
                path: path.clone(),
                size,
            })
        })
        .collect()
}

impl Snapshotter<'_> {
    /// The files on disk a save with report `too_large` cannot keep, against the last
    /// save's list: each file of that list is looked at again (a partial scan's report
    /// names only what it walked), and each `exclude_paths` entry that is a file.
    pub(super) fn untracked(&self, too_large: &[(Vec<u8>, u64)]) -> Result<Untracked, TreeError> {
        let before = self.parts.store.untracked()?;
        let root_fd = crate::inside::open_root(&self.parts.root).ok();
        let mut now: Vec<UntrackedFile> = (too_large.iter())
            .map(|(path, size)| untracked(path, *size, UntrackedWhy::TooLarge))
            .collect();
        let mut removed = Vec::new();
        for file in &before {
            // A file that left `exclude_paths` was saved since: its loss is no longer one.
            let listed = match file.why {
                UntrackedWhy::Excluded => self.parts.config.excludes_path(&file.path),
                UntrackedWhy::TooLarge => true,
            };
            match seen(root_fd.as_ref(), &file.path) {
                Seen::Gone if listed => removed.push(file.clone()),
                Seen::File(size) if listed && self.cannot_keep(file.why, size) => {
                    now.push(untracked(&file.path, size, file.why));
                }
                Seen::Unknown if listed => now.push(file.clone()),
                _ => {}
            }
        }
        for path in &self.parts.config.exclude_paths {
            let rel = path
                .trim_start_matches("./")
                .trim_end_matches('/')
                .as_bytes();
            if let Seen::File(size) = seen(root_fd.as_ref(), rel) {
                now.push(untracked(rel, size, UntrackedWhy::Excluded));
            }
        }
        now.sort_unstable();
        now.dedup_by(|a, b| a.path == b.path);
        // Sizes alone changing (a growing log over the limit) do not rewrite the list.
        let members = |list: &[UntrackedFile]| -> Vec<(Vec<u8>, UntrackedWhy)> {
            list.iter().map(|f| (f.path.clone(), f.why)).collect()
        };
        Ok(Untracked {
            now: (members(&now) != members(&before)).then_some(now),
            removed,
        })
    }

    /// True when a file of `size`, listed for `why`, is still one no snapshot can hold.
    fn cannot_keep(&self, why: UntrackedWhy, size: u64) -> bool {
        why == UntrackedWhy::Excluded || size > self.parts.config.max_file_size
    }

    pub(crate) fn large_cost(&self) -> Result<LargeCost, TreeError> {
        let threshold = self.parts.config.large_file_size;
        let mut cost = LargeCost::default();
        let mut seen_trees: HashSet<ObjectId> = HashSet::new();
        let mut seen_contents: HashSet<ObjectId> = HashSet::new();
        let mut seen_chunks: HashSet<ObjectId> = HashSet::new();
        let mut stack: Vec<ObjectId> = (self.parts.store.snapshots()?.into_iter())
            .map(|(_, r)| r.root)
            .collect();
        while let Some(tree) = stack.pop() {
            if !seen_trees.insert(tree) {
                continue;
            }
            for entry in self.parts.store.read_tree(&tree)?.entries {
                match entry.kind {
                    EntryKind::Dir => stack.push(entry.id),
                    EntryKind::Symlink => {}
                    EntryKind::File | EntryKind::Executable => {
                        if entry.size < threshold || !seen_contents.insert(entry.id) {
                            continue;
                        }
                        cost.files += 1;
                        cost.bytes += entry.size;
                        cost.stored_bytes += self.content_stored(&entry.id, &mut seen_chunks)?;
                    }
                }
            }
        }
        Ok(cost)
    }

    /// Bytes in packs of content `id` (its chunk list and chunks) not counted yet.
    fn content_stored(
        &self,
        id: &ObjectId,
        seen: &mut HashSet<ObjectId>,
    ) -> Result<u64, TreeError> {
        let mut bytes = self.parts.store.stored_len(id)?.unwrap_or(0);
        let (kind, raw) = self.parts.store.read(id)?;
        if kind == ObjectKind::ChunkList {
            for chunk in snap_store::ChunkList::decode(*id, &raw)?.chunks {
                if seen.insert(chunk.id) {
                    bytes += self.parts.store.stored_len(&chunk.id)?.unwrap_or(0);
                }
            }
        }
        Ok(bytes)
    }
}

/// What a listed path holds now.
enum Seen {
    /// A regular file of this size.
    File(u64),
    /// Nothing, or no longer a regular file.
    Gone,
    /// Snap may not look (a directory on the way it cannot search): only what is known
    /// gone is named.
    Unknown,
}

/// What `rel` beneath the root holds, following no symlink on the way.
fn seen(root_fd: Option<&std::os::fd::OwnedFd>, rel: &[u8]) -> Seen {
    use rustix::io::Errno;
    let Some(root_fd) = root_fd else {
        return Seen::Unknown;
    };
    let gone = [Errno::NOENT, Errno::NOTDIR, Errno::LOOP];
    match crate::inside::stat_beneath(root_fd, rel) {
        Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() => {
            Seen::File(st.st_size as u64)
        }
        Ok(_) => Seen::Gone,
        Err(e)
            if gone
                .iter()
                .any(|x| e.raw_os_error() == Some(x.raw_os_error())) =>
        {
            Seen::Gone
        }
        Err(_) => Seen::Unknown,
    }
}

fn untracked(path: &[u8], size: u64, why: UntrackedWhy) -> UntrackedFile {
    UntrackedFile {
        path: path.to_vec(),
        size,
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flat::Node;

    fn file(size: u64) -> Node {
        Node {
            kind: EntryKind::File,
            size,
            id: ObjectId([size as u8; 32]),
            mode: None,
        }
    }

    #[test]
    fn a_file_is_large_added_once_it_reaches_the_threshold() {
        let old: FlatTree = [(b"grown".to_vec(), file(5)), (b"big".to_vec(), file(200))]
            .into_iter()
            .collect();
        let new: FlatTree = [
            (b"grown".to_vec(), file(100)),
            (b"big".to_vec(), file(300)),
            (b"new".to_vec(), file(100)),
            (b"small".to_vec(), file(99)),
        ]
        .into_iter()
        .collect();
        let changes: Vec<PathChange> = vec![
            (b"big".to_vec(), Change::Modified),
            (b"grown".to_vec(), Change::Modified),
            (b"new".to_vec(), Change::Added),
            (b"small".to_vec(), Change::Added),
        ];
        let added = large_added(&changes, &old, &new, 100);
        let names: Vec<&[u8]> = added.iter().map(|f| f.path.as_slice()).collect();
        assert_eq!(names, [&b"grown"[..], b"new"]);
    }
}
