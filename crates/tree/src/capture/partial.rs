//! The capture a change source allows: the tree recorded with the source's last token, with
//! only the directories the source names read again (docs/SAFETY.md, "Captures from a
//! watcher"). Its root is the root the whole walk would build from the same tree:
//!
//! - every directory named is read as the walk reads it (same rules, same stats), each
//!   file vouched for by its own stat cache row under the racy rule, or read;
//! - a directory the recorded tree does not hold as one (new, or once held only left-out
//!   entries), and a directory gone, has its parent read too, so its parent's entries are
//!   the ones on disk; a new subdirectory found by a read is walked whole;
//! - the directory rule is applied again over what was read, up the ancestors;
//! - the trees are rebuilt along the changed paths, every other directory keeping the id
//!   the recorded tree gave it.
//!
//! Anything it cannot settle (the recorded tree unreadable, the root named whole) gives
//! `None`, and the capture walks everything.

use std::collections::{BTreeSet, HashSet};

use crate::capture::Snapshotter;
use crate::capture::cascade::{Capture, CaptureMode};
use crate::error::TreeError;
use crate::flat::{self, FlatTree, UNBUILT};
use crate::scan;
use crate::scan::walker::{Descend, walk_seeded};
use crate::source::{DirtyDir, Scope};
use snap_store::{EntryKind, ObjectWriter, StatCacheUpdate};
use snap_store::{PathMap, WatchMemo};

/// What the reads of a partial capture covered.
#[derive(Default)]
struct Reads {
    /// The walk of every directory read, alone or with its subtree.
    walk: scan::Walk,
    /// Directories read alone.
    alone: HashSet<Vec<u8>>,
    /// Directories walked with everything under them.
    whole: HashSet<Vec<u8>>,
}

impl Reads {
    /// True when `path` is or lies under a directory walked whole.
    fn under_whole(&self, path: &[u8]) -> bool {
        ancestors_and_self(path).any(|p| self.whole.contains(p))
    }

    /// True when this capture read `dir` itself (alone or inside a subtree walked).
    fn visited(&self, dir: &[u8]) -> bool {
        self.walk.dir_modes.contains_key(dir)
    }
}

/// `path`, then each directory above it, up to the root (`""`).
fn ancestors_and_self(path: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut next = Some(path);
    std::iter::from_fn(move || {
        let here = next?;
        next = (!here.is_empty()).then(|| flat::split(here).0);
        Some(here)
    })
}

impl Snapshotter<'_> {
    /// The capture of the tree `memo.root` changed only in `dirs`; `None` when the source's
    /// answer cannot be used (the whole walk then runs).
    pub(super) fn capture_partial(
        &self,
        writer: &ObjectWriter<'_>,
        memo: &WatchMemo,
        dirs: &[DirtyDir],
        mode: CaptureMode,
        fs_now_ns: i64,
    ) -> Result<Option<Capture>, TreeError> {
        // A move checks the files it replaces against the stats the capture saw: those of
        // the files read here (the others are checked against HEAD's content as they go).
        let keep_stats = matches!(mode, CaptureMode::BeforeMove { .. });
        let Some(ToRead { alone, whole }) = normalize(dirs) else {
            return Ok(None);
        };
        let targets: Vec<Vec<u8>> = alone.iter().chain(&whole).cloned().collect();
        let Ok((old, listed)) = flat::list_dirs(&self.parts.store, &memo.root, &targets) else {
            return Ok(None);
        };
        let alone = with_parents_where_new(&old, alone, &whole);
        let reads = self.read_changed(&old, alone, whole)?;
        let mut flat = old.clone();
        let removed = merge_reads(&mut flat, &old, &reads);
        let stored = self.store_read_files(writer, &reads, keep_stats, fs_now_ns)?;
        let mut cache_remove = stored.gone.clone();
        cache_remove.extend(removed.files);
        insert_fresh(&mut flat, &old, &reads, stored.flat);
        refresh_whole(&mut flat, &reads);
        let hollowed = drop_hollow(&mut flat, &reads);
        for path in reads
            .walk
            .dir_modes
            .keys()
            .chain(&removed.paths)
            .chain(&hollowed)
        {
            flat::unbuild_above(&mut flat, path);
        }
        let pruned: HashSet<Vec<u8>> = (flat.iter())
            .filter(|(path, n)| {
                n.kind == EntryKind::Dir && n.id != UNBUILT && !listed.contains(*path)
            })
            .map(|(path, _)| path.clone())
            .collect();
        let previous = |path: &[u8]| match path.is_empty() {
            true => Some(memo.root),
            false => old
                .get(path)
                .filter(|n| n.kind == EntryKind::Dir)
                .map(|n| n.id),
        };
        let root = flat::build_trees_reusing(writer, &mut flat, &previous)?;
        let cache = match writer.is_dry_run() {
            true => StatCacheUpdate::default(),
            false => StatCacheUpdate {
                put: stored.hashed,
                remove: cache_remove,
                ..StatCacheUpdate::default()
            },
        };
        Ok(Some(Capture {
            flat,
            stats: stored.stats,
            root,
            report: stored.report,
            cache,
            pruned,
            basis: None,
        }))
    }

    /// Reads the directories `alone` by themselves and `whole` with their subtrees; then the
    /// parent of each that is not a tracked directory now, and each new subdirectory the reads
    /// found, until nothing new turns up (at most the tree's depth rounds).
    fn read_changed(
        &self,
        old: &FlatTree,
        mut alone: BTreeSet<Vec<u8>>,
        mut whole: BTreeSet<Vec<u8>>,
    ) -> Result<Reads, TreeError> {
        let skip = Some(self.parts.store.dir());
        let mut reads = Reads::default();
        while !alone.is_empty() || !whole.is_empty() {
            let alone_now: Vec<Vec<u8>> = std::mem::take(&mut alone).into_iter().collect();
            let whole_now: Vec<Vec<u8>> = std::mem::take(&mut whole).into_iter().collect();
            let read = walk_seeded(
                &self.parts.root,
                &self.parts.config,
                skip,
                &alone_now,
                Descend::Nothing,
            )?;
            let walked = walk_seeded(
                &self.parts.root,
                &self.parts.config,
                skip,
                &whole_now,
                Descend::Everything,
            )?;
            reads.alone.extend(alone_now);
            reads.whole.extend(whole_now);
            for gone in read.gone.iter().chain(&walked.gone) {
                let parent = flat::split(gone).0;
                if !gone.is_empty() && !reads.alone.contains(parent) && !reads.under_whole(parent) {
                    alone.insert(parent.to_vec());
                }
            }
            for (path, kind, _) in &read.walk.entries {
                let known = old.get(path).is_some_and(|n| n.kind == EntryKind::Dir);
                if *kind == EntryKind::Dir
                    && !known
                    && !reads.alone.contains(path)
                    && !reads.under_whole(path)
                {
                    whole.insert(path.clone());
                }
            }
            absorb(&mut reads.walk, read.walk);
            absorb(&mut reads.walk, walked.walk);
        }
        Ok(reads)
    }

    /// Stores the files the reads found (each looked up by its own stat cache row) and
    /// returns their entries, with the directories read as nodes of their own.
    fn store_read_files(
        &self,
        writer: &ObjectWriter<'_>,
        reads: &Reads,
        keep_stats: bool,
        fs_now_ns: i64,
    ) -> Result<scan::Stored, TreeError> {
        let mut walk = scan::Walk {
            entries: reads.walk.entries.clone(),
            too_large: reads.walk.too_large.clone(),
            special: reads.walk.special,
            unreadable: reads.walk.unreadable.clone(),
            refused_rules: reads.walk.refused_rules.clone(),
            dir_modes: reads.walk.dir_modes.clone(),
            ..scan::Walk::default()
        };
        // Each directory read holds its entries in the flat tree the store returns, which
        // keeps only entries whose parent it holds.
        let listed: HashSet<&[u8]> = (walk.entries.iter())
            .filter(|(_, kind, _)| *kind == EntryKind::Dir)
            .map(|(path, _, _)| path.as_slice())
            .collect();
        let own: Vec<Vec<u8>> = (reads.walk.dir_modes.keys())
            .filter(|dir| !dir.is_empty() && !listed.contains(dir.as_slice()))
            .cloned()
            .collect();
        walk.entries
            .extend(own.into_iter().map(|dir| (dir, EntryKind::Dir, None)));
        walk.too_large.sort_unstable();
        let mut files: Vec<&[u8]> = (walk.entries.iter())
            .filter(|(_, _, stat)| stat.is_some())
            .map(|(path, _, _)| path.as_slice())
            .collect();
        files.sort_unstable();
        let cached = self.parts.store.stat_entries(&files)?;
        let start = crate::capture::cascade::ScanStart {
            fs_now_ns,
            old_walk: None,
            clean_root: None,
            keep_stats,
            prune: false,
            dirs: Default::default(),
        };
        self.store_files(writer, walk, &cached, &start)
    }
}

/// Directories to read, by how much of each.
#[derive(Debug, Default)]
struct ToRead {
    /// Read alone.
    alone: BTreeSet<Vec<u8>>,
    /// Walked with everything under them.
    whole: BTreeSet<Vec<u8>>,
}

/// The directories to read alone and those to walk whole: each path under a directory
/// walked whole is left to that walk. `None` when the root is to be walked whole.
fn normalize(dirs: &[DirtyDir]) -> Option<ToRead> {
    let mut whole = BTreeSet::new();
    for dir in dirs.iter().filter(|d| d.scope == Scope::Subtree) {
        if dir.path.is_empty() {
            return None;
        }
        whole.insert(dir.path.clone());
    }
    let covered = |path: &[u8], whole: &BTreeSet<Vec<u8>>| {
        ancestors_and_self(path).skip(1).any(|p| whole.contains(p))
    };
    let nested: Vec<Vec<u8>> = (whole.iter())
        .filter(|p| covered(p, &whole))
        .cloned()
        .collect();
    for p in nested {
        whole.remove(&p);
    }
    let alone = (dirs.iter())
        .filter(|d| d.scope == Scope::Dir)
        .filter(|d| !whole.contains(&d.path) && !covered(&d.path, &whole))
        .map(|d| d.path.clone())
        .collect();
    Some(ToRead { alone, whole })
}

/// `alone`, with the parent of every directory (read alone or walked whole) that the
/// recorded tree does not hold as a directory: the parent's entries must then be read, up
/// to the first ancestor the tree holds.
fn with_parents_where_new(
    old: &FlatTree,
    mut alone: BTreeSet<Vec<u8>>,
    whole: &BTreeSet<Vec<u8>>,
) -> BTreeSet<Vec<u8>> {
    let is_dir = |p: &[u8]| p.is_empty() || old.get(p).is_some_and(|n| n.kind == EntryKind::Dir);
    let starts: Vec<Vec<u8>> = alone.iter().chain(whole).cloned().collect();
    for start in starts {
        let mut here = start.as_slice();
        while !is_dir(here) {
            here = flat::split(here).0;
            alone.insert(here.to_vec());
        }
    }
    alone
}

/// Adds `from`'s findings to `into`.
fn absorb(into: &mut scan::Walk, from: scan::Walk) {
    into.entries.extend(from.entries);
    into.too_large.extend(from.too_large);
    into.special += from.special;
    into.unreadable.extend(from.unreadable);
    into.refused_rules.extend(from.refused_rules);
    into.inexact |= from.inexact;
    into.left_out.extend(from.left_out);
    into.tracked.extend(from.tracked);
    into.dir_modes.extend(from.dir_modes);
}

/// What merging the reads took out of the recorded tree.
#[derive(Default)]
struct Removed {
    /// Regular files no longer there, for the stat cache.
    files: Vec<Vec<u8>>,
    /// Every path taken out, to rebuild the trees above it.
    paths: Vec<Vec<u8>>,
}

/// Takes out of `flat` what the reads show is no longer there: each entry of a directory
/// read alone that the read did not find (with what it held), and everything under a
/// directory walked whole.
fn merge_reads(flat: &mut FlatTree, old: &FlatTree, reads: &Reads) -> Removed {
    let found: PathMap<&[u8], EntryKind> = (reads.walk.entries.iter())
        .map(|(path, kind, _)| (path.as_slice(), *kind))
        .collect();
    let mut removed = Removed::default();
    for dir in &reads.alone {
        for (name, node) in flat::children(old, dir) {
            let path = flat::join(dir, name);
            let now = found.get(path.as_slice()).copied();
            // A directory still there keeps its place (and what is listed under it); any
            // other entry is put back from what was read, if it could be stored.
            if now == Some(EntryKind::Dir) && node.kind == EntryKind::Dir {
                continue;
            }
            if is_file(node.kind) && !now.is_some_and(is_file) {
                removed.files.push(path.clone());
            }
            flat::remove_within(flat, &path);
            removed.paths.push(path);
        }
    }
    for dir in &reads.whole {
        let below: Vec<Vec<u8>> = flat::below(flat, dir).map(|(p, _)| p.clone()).collect();
        for path in below {
            flat.remove(&path);
        }
        removed.paths.push(dir.clone());
    }
    removed
}

fn is_file(kind: EntryKind) -> bool {
    matches!(kind, EntryKind::File | EntryKind::Executable)
}

/// Puts what was read into `flat`: files and symlinks as stored, directories read as
/// unbuilt nodes with the mode read, and directories found but not read (unchanged
/// subdirectories of a directory read alone) as the recorded tree holds them.
fn insert_fresh(flat: &mut FlatTree, old: &FlatTree, reads: &Reads, fresh: FlatTree) {
    for (path, node) in fresh {
        let unread_dir = node.kind == EntryKind::Dir && !reads.visited(&path);
        match (unread_dir, old.get(&path)) {
            (true, Some(recorded)) if recorded.kind == EntryKind::Dir => {
                flat.insert(path, *recorded);
            }
            _ => {
                flat.insert(path, node);
            }
        }
    }
}

/// Marks each directory walked whole to be built again from what was read, with the mode
/// read. Its own node is the recorded one when its parent was not read (the store keeps
/// only entries whose parent it holds), and a node with an id is taken as built: the
/// directory would keep the recorded tree, whatever was read under it.
fn refresh_whole(flat: &mut FlatTree, reads: &Reads) {
    for dir in &reads.whole {
        let read = reads.walk.dir_modes.get(dir.as_slice()).copied();
        if let (Some(node), Some(mode)) = (flat.get_mut(dir.as_slice()), read)
            && node.kind == EntryKind::Dir
        {
            node.id = UNBUILT;
            node.mode = Some(mode);
        }
    }
}

/// The directory rule over what was read (docs/SAFETY.md): a directory read that holds
/// nothing tracked but something left out, or only such directories, is not tracked; nor,
/// in turn, an ancestor left holding nothing but them. Returns the directories taken out.
fn drop_hollow(flat: &mut FlatTree, reads: &Reads) -> Vec<Vec<u8>> {
    let left_out: HashSet<&[u8]> = reads.walk.left_out.iter().map(Vec::as_slice).collect();
    // Deepest first: a directory sorts after every directory above it.
    let mut todo: BTreeSet<Vec<u8>> = (reads.walk.dir_modes.keys())
        .filter(|d| !d.is_empty())
        .cloned()
        .collect();
    let mut had_hollow: HashSet<Vec<u8>> = HashSet::new();
    let mut hollow = Vec::new();
    while let Some(dir) = todo.pop_last() {
        let empty = flat::below(flat, &dir).next().is_none();
        let reason = left_out.contains(dir.as_slice()) || had_hollow.contains(&dir);
        if !empty || !reason || !flat.contains_key(&dir) {
            continue;
        }
        flat.remove(&dir);
        let parent = flat::split(&dir).0.to_vec();
        if !parent.is_empty() {
            todo.insert(parent.clone());
        }
        had_hollow.insert(parent);
        hollow.push(dir);
    }
    hollow
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn dirty(path: &str, scope: Scope) -> DirtyDir {
        DirtyDir {
            path: path.as_bytes().to_vec(),
            scope,
        }
    }

    #[test]
    fn a_subtree_takes_in_what_lies_under_it_and_the_root_whole_is_everything() {
        let ToRead { alone, whole } = normalize(&[
            dirty("a", Scope::Subtree),
            dirty("a/b", Scope::Subtree),
            dirty("a/c", Scope::Dir),
            dirty("a", Scope::Dir),
            dirty("ab", Scope::Dir),
            dirty("", Scope::Dir),
        ])
        .unwrap();
        assert_eq!(whole.into_iter().collect::<Vec<_>>(), [b"a".to_vec()]);
        assert_eq!(
            alone.into_iter().collect::<Vec<_>>(),
            [b"".to_vec(), b"ab".to_vec()]
        );
        assert!(normalize(&[dirty("", Scope::Subtree)]).is_none());
    }

    #[test]
    fn ancestors_run_up_to_the_root() {
        let got: Vec<&[u8]> = ancestors_and_self(b"a/b/c").collect();
        assert_eq!(got, [&b"a/b/c"[..], b"a/b", b"a", b""]);
        assert_eq!(ancestors_and_self(b"").count(), 1);
    }
}
