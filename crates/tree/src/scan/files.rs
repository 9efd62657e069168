//! Reading the walk's files into the store: each tracked file read (stable against a
//! writer racing the read), hashed, chunked and stored, the stat cache consulted first, and
//! the stored entries handed back as the flat tree a save commits.

use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::prelude::*;
use snap_store::{EntryKind, ObjectId, ObjectWriter, StatEntry, StatKey, StatRows};

use super::read::{FileStore, StoredEntry, store_entry};
use super::walk::{Unreadable, Walk, WalkEntry};
use super::walker::DirCacheView;
use crate::config::Config;
use crate::error::TreeError;
use crate::flat::{FlatTree, Node};
use crate::paths::abs;

/// What a scan reports beside the tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ScanReport {
    /// Files over the size limit, left out, with their sizes; in path order.
    pub too_large: Vec<(Vec<u8>, u64)>,
    /// FIFOs, sockets and devices skipped.
    pub special: u64,
    /// Files that disappeared between the walk and their read.
    pub vanished: u64,
    /// Files the walk listed that could not be read (no permission, a name too long), left
    /// out of the snapshot and never touched by a move; in path order.
    pub unreadable: Vec<Unreadable>,
    /// Ignore files refused for their size (over `max_ignore_file_bytes`): everything in
    /// each one's directory is left out until it shrinks; in path order.
    pub refused_rules: Vec<Vec<u8>>,
}

fn sorted(mut paths: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    paths.sort_unstable();
    paths.dedup();
    paths
}

/// True for an error that says the file is there but snap may not read it: reported and
/// skipped, never fatal (another process's private file must not stop every save).
pub(crate) fn cannot_read(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    let unreadable = [Errno::ACCESS, Errno::PERM, Errno::NAMETOOLONG];
    e.raw_os_error()
        .is_some_and(|code| unreadable.iter().any(|u| u.raw_os_error() == code))
}

/// Walks `root`, applying every ignore layer, without a directory cache. Entries in path
/// order. (Saves walk with their directory cache: this is for the suites and fuzz.)
#[cfg(feature = "testing")]
pub fn walk(root: &Path, config: &Config) -> Result<Walk, TreeError> {
    let none = snap_store::PathMap::default();
    let cache = DirCacheView {
        records: &none,
        fs_now_ns: i64::MIN,
    };
    let mut walk = walk_excluding(root, config, None, cache)?;
    walk.entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(walk)
}

/// As [`walk`], also leaving out `store_dir` when the store lives inside the tree under
/// another name than `.snap` (`--store`), and trusting the directory cache where it is good.
/// Entries unsorted; too-large files in path order.
pub fn walk_excluding(
    root: &Path,
    config: &Config,
    store_dir: Option<&Path>,
    cache: DirCacheView<'_>,
) -> Result<Walk, TreeError> {
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .clamp(2, 8);
    let mut walk = crate::scan::walker::walk(root, config, store_dir, cache, threads)?;
    walk.too_large.sort_unstable();
    Ok(walk)
}

/// Leaves out of `walk` every entry whose parent directory `clean` names (a directory whose
/// tree is known, so its contents need not be read or matched); returns how many, and with
/// `keep_stats` the regular files among them with their stats (their paths moved, not
/// copied: at a million files a copy is a large part of the peak).
pub fn prune_under(
    walk: &mut Walk,
    clean: impl Fn(&[u8]) -> bool,
    keep_stats: bool,
) -> (usize, Vec<(Vec<u8>, StatKey)>) {
    let left_out = |path: &[u8]| clean(crate::flat::split(path).0);
    let files = match keep_stats {
        true => (walk.entries.iter())
            .filter(|(path, _, stat)| stat.is_some() && left_out(path))
            .count(),
        false => 0,
    };
    let mut stats = Vec::with_capacity(files);
    let before = walk.entries.len();
    let mut kept = Vec::new();
    for (path, kind, stat) in std::mem::take(&mut walk.entries) {
        match (left_out(&path), stat) {
            (false, _) => kept.push((path, kind, stat)),
            (true, Some(stat)) if keep_stats => stats.push((path, stat)),
            (true, _) => {}
        }
    }
    walk.entries = kept;
    (before - walk.entries.len(), stats)
}

/// Sorts the walk's entries and returns its regular files' paths, in path order.
pub fn file_paths(walk: &mut Walk) -> Vec<&[u8]> {
    walk.entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    walk.entries
        .iter()
        .filter(|(_, _, stat)| stat.is_some())
        .map(|(path, _, _)| path.as_slice())
        .collect()
}

/// Takes the walk's regular files out of it, with their stats, in no particular order.
pub fn take_file_stats(walk: &mut Walk) -> Vec<(Vec<u8>, StatKey)> {
    std::mem::take(&mut walk.entries)
        .into_iter()
        .filter_map(|(path, _, stat)| Some((path, stat?)))
        .collect()
}

/// Directories with a record in `cache` that `walk` did not find: to drop.
pub fn gone_dirs(cache: &snap_store::PathMap<Vec<u8>, Vec<u8>>, walk: &Walk) -> Vec<Vec<u8>> {
    // Every record was used as it was: all of them were found.
    if walk.dirs_cached as usize == cache.len() {
        return Vec::new();
    }
    let found: std::collections::HashSet<&[u8]> = walk
        .entries
        .iter()
        .filter(|e| e.1 == EntryKind::Dir)
        .map(|e| e.0.as_slice())
        .chain([&b""[..]])
        .collect();
    cache
        .keys()
        .filter(|dir| !found.contains(dir.as_slice()))
        .cloned()
        .collect()
}

/// The stat cache as a scan uses it: the entries, and the filesystem clock at scan start.
#[derive(Debug)]
pub struct CacheView<'a> {
    /// The committed stat cache by workspace-relative path, in path byte order.
    pub entries: &'a [(Vec<u8>, StatEntry)],
    /// Filesystem clock when the scan began; becomes the new entries' `written_ns`.
    pub fs_now_ns: i64,
}

/// What a stored walk produced.
#[derive(Debug)]
pub struct Stored {
    /// Every tracked path; directory ids are still [`UNBUILT`].
    pub flat: FlatTree,
    /// Files skipped or vanished.
    pub report: ScanReport,
    /// Entries for the files this scan hashed, to write to the stat cache.
    pub hashed: StatRows,
    /// Cached paths that are no longer regular files in the tree, to drop from the cache.
    pub gone: Vec<Vec<u8>>,
    /// With `keep_stats`: each regular file's stat as the scan settled on it, in path order.
    pub stats: Vec<(Vec<u8>, StatKey)>,
    /// [`digest`] of the entries: equal digests build equal trees.
    pub digest: ObjectId,
}

/// Reads and stores every file and symlink of `walk` in parallel, except files the stat
/// cache vouches for; returns the flat tree (directories not yet built), the report, and
/// the new cache entries.
pub fn store_walk(
    root: &Path,
    mut walk: Walk,
    writer: &ObjectWriter<'_>,
    max_file_size: u64,
    cache: &CacheView<'_>,
    keep_stats: bool,
    tick: &(dyn Fn() + Sync),
) -> Result<Stored, TreeError> {
    // Descending, so that each pass takes the smallest paths off the end and the entries
    // already stored are given back as storing goes (see the loop below).
    walk.entries.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    let dir_modes = std::mem::take(&mut walk.dir_modes);
    let (hits, gone) = match_cache(walk.entries.iter().rev(), cache.entries);
    let root_fd = crate::inside::open_root(root).map_err(|e| TreeError::io(root, e))?;
    let one = |((rel, kind, stat), hit): (WalkEntry, Option<&StatEntry>)| {
        tick();
        match (stat, hit) {
            (Some(key), Some(hit)) if hit.trusted_for(&key) => Ok(Some((
                rel,
                Node {
                    kind: hit.kind,
                    size: key.size,
                    id: hit.id,
                    mode: Some(crate::flat::permission_bits(key.mode)),
                },
                None,
                Some(key),
            ))),
            // The cached content is this path's previous version: the base to store a
            // changed file against.
            _ => {
                let file = FileStore {
                    root_fd: &root_fd,
                    max: max_file_size,
                    fs_now_ns: cache.fs_now_ns,
                    base: hit.map(|h| h.id),
                };
                store_entry(root, rel, kind, writer, file)
            }
        }
    };
    // A save after a small change reads a handful of files: starting the thread pool for
    // them costs more than they do.
    let to_read = (walk.entries.iter().rev().zip(&hits))
        .filter(|((_, kind, stat), hit)| *kind != EntryKind::Dir && !trusted(stat, hit))
        .count();
    let mut report = ScanReport {
        too_large: walk.too_large,
        special: walk.special,
        vanished: 0,
        unreadable: std::mem::take(&mut walk.unreadable),
        refused_rules: sorted(std::mem::take(&mut walk.refused_rules)),
    };
    writer.expect(to_read);
    let mut hashed = writer.stat_rows();
    let mut stats = Vec::new();
    let mut nodes = Vec::with_capacity(walk.entries.len());
    let mut hits = hits.into_iter();
    // In passes, in path order: what storing returns for a path is several times the path's
    // entry, and a million of them at once was most of a first save's peak memory. Each pass
    // gives its entries' room back.
    while !walk.entries.is_empty() {
        let mut taken = walk
            .entries
            .split_off(walk.entries.len().saturating_sub(STORE_CHUNK));
        walk.entries.shrink_to_fit();
        taken.reverse();
        let chunk: Vec<_> = taken.into_iter().zip(hits.by_ref()).collect();
        let stored: Vec<Result<Option<StoredEntry>, TreeError>> = match to_read {
            n if n <= SERIAL_READ_MAX => chunk.into_iter().map(one).collect(),
            _ => chunk.into_par_iter().map(one).collect(),
        };
        for item in stored {
            let item = match item {
                Err(TreeError::Io { path, source }) if cannot_read(&source) => {
                    report
                        .unreadable
                        .push(unreadable(root, &path, source.to_string()));
                    continue;
                }
                Err(TreeError::StillWriting { path }) => {
                    let why = "it kept changing while it was read; a later save takes it";
                    report.unreadable.push(unreadable(root, &path, why.into()));
                    continue;
                }
                item => item,
            };
            match item? {
                Some((path, mut node, entry, stat)) => {
                    if node.kind == EntryKind::Dir {
                        node.mode = dir_modes.get(&path).copied();
                    }
                    if let (true, Some(stat)) = (keep_stats, stat) {
                        stats.push((path.clone(), stat));
                    }
                    if let Some(entry) = entry {
                        hashed.push(&path, &entry);
                    }
                    nodes.push((path, node));
                }
                None => report.vanished += 1,
            }
        }
    }
    writer.forget_seen();
    report
        .unreadable
        .sort_unstable_by(|a, b| a.path.cmp(&b.path));
    drop_orphans(&mut nodes);
    let digest = digest(&nodes);
    // The walk sorted the paths, so this builds the map in one pass instead of n inserts.
    Ok(Stored {
        flat: nodes.into_iter().collect(),
        report,
        hashed,
        gone,
        stats,
        digest,
    })
}

/// A file the save leaves out, named by its path beneath `root`, and why.
fn unreadable(root: &Path, path: &Path, error: String) -> Unreadable {
    let rel = path.strip_prefix(root).unwrap_or(path);
    Unreadable {
        path: rel.as_os_str().as_bytes().to_vec(),
        error,
    }
}

/// Pairs each walked regular file with its stat cache entry by merging the two lists, both in
/// path byte order, so no map of every path is built. Also returns the cached paths that are
/// no longer regular files.
fn match_cache<'e, 'c>(
    entries: impl ExactSizeIterator<Item = &'e WalkEntry>,
    cache: &'c [(Vec<u8>, StatEntry)],
) -> (Vec<Option<&'c StatEntry>>, Vec<Vec<u8>>) {
    let mut hits = Vec::with_capacity(entries.len());
    let mut gone = Vec::new();
    let mut rest = cache.iter().peekable();
    for (path, _, stat) in entries {
        while let Some((cached, _)) = rest.next_if(|(cached, _)| cached < path) {
            gone.push(cached.clone());
        }
        let hit = rest.next_if(|(cached, _)| cached == path).map(|(_, e)| e);
        if hit.is_some() && stat.is_none() {
            gone.push(path.clone());
        }
        hits.push(hit.filter(|_| stat.is_some()));
    }
    gone.extend(rest.map(|(cached, _)| cached.clone()));
    (hits, gone)
}

/// A scan that must read at most this many files reads them on the calling thread.
const SERIAL_READ_MAX: usize = 4;

/// Entries stored per parallel pass (see `store_walk`).
const STORE_CHUNK: usize = 1 << 16;

/// True when the stat cache entry vouches for the entry's current stat.
fn trusted(stat: &Option<StatKey>, hit: &Option<&StatEntry>) -> bool {
    matches!((stat, hit), (Some(key), Some(hit)) if hit.trusted_for(key))
}

/// BLAKE3 over every entry in path order (path length u32 LE, path, kind byte, size u64 LE,
/// id): everything the trees are built from, so two scans with equal digests build the same
/// root tree (snap_store::ScanMemo).
pub fn digest(nodes: &[(Vec<u8>, Node)]) -> ObjectId {
    let mut hasher = blake3::Hasher::new();
    for (path, node) in nodes {
        hasher.update(&(path.len() as u32).to_le_bytes());
        hasher.update(path);
        hasher.update(&[kind_byte(node.kind)]);
        hasher.update(&node.size.to_le_bytes());
        hasher.update(&node.id.0);
        hasher.update(&node.mode.map_or(u32::MAX, u32::from).to_le_bytes());
    }
    ObjectId(*hasher.finalize().as_bytes())
}

fn kind_byte(kind: EntryKind) -> u8 {
    match kind {
        EntryKind::File => 0,
        EntryKind::Executable => 1,
        EntryKind::Symlink => 2,
        EntryKind::Dir => 3,
    }
}

/// Removes entries whose parent directory vanished during the scan, so the tree stays whole.
/// A set of the directories (a tenth of the paths) answers each parent lookup in O(1).
fn drop_orphans(nodes: &mut Vec<(Vec<u8>, Node)>) {
    let dirs: std::collections::HashSet<Vec<u8>> = nodes
        .iter()
        .filter(|(_, n)| n.kind == EntryKind::Dir)
        .map(|(p, _)| p.clone())
        .collect();
    nodes.retain(|(p, _)| {
        let (parent, _) = crate::flat::split(p);
        parent.is_empty() || dirs.contains(parent)
    });
}

/// Stores the file or symlink at `rel` as it is now, whatever its size: a move saving a file
/// it found changed before replacing it.
pub fn store_path(root: &Path, rel: &[u8], writer: &ObjectWriter<'_>) -> Result<Node, TreeError> {
    let path = abs(root, rel);
    let meta = std::fs::symlink_metadata(&path).map_err(|e| TreeError::io(&path, e))?;
    let kind = if meta.file_type().is_symlink() {
        EntryKind::Symlink
    } else {
        EntryKind::File
    };
    let root_fd = crate::inside::open_root(root).map_err(|e| TreeError::io(root, e))?;
    let file = FileStore {
        root_fd: &root_fd,
        max: u64::MAX,
        fs_now_ns: i64::MIN,
        base: None,
    };
    match store_entry(root, rel.to_vec(), kind, writer, file)? {
        Some((_, node, _, _)) => Ok(node),
        None => Err(TreeError::io(
            &path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "vanished while being saved"),
        )),
    }
}
