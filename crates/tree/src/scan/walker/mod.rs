//! The parallel directory walk: each directory is opened relative to its parent
//! (`openat` with `O_NOFOLLOW`), read with `getdents`, and only regular files are `fstatat`-ed,
//! which is the least a stat-based scanner can do.
//!
//! A directory whose record in the directory cache is still good (same stat, same ignore
//! files, no ancestor's ignore file changed: see `snap_store::DirRecord`) is not read: its
//! recorded entries are stat-ed as they are. Either way the walk yields the same entries.
//!
//! Which entries are left out is decided in `rules.rs` (ignore files, default excludes, the
//! store and version-control directories).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use snap_store::{DirHeader, DirRecord, EntryKind, ListedKind, StatKey, encode_dir_record};

use crate::config::Config;
use crate::error::TreeError;
use crate::paths::{SNAPIGNORE, abs};
use crate::scan::rules::{GITIGNORE, Rules, always_left_out, read_rules, ruled_out};
use crate::scan::walk::{Walk, WalkSum};

mod listed;
mod seeded;
mod share;

use listed::visit_listed;
pub use seeded::{walk_seeded, walk_watching};
pub use share::dir_share;

/// One directory waiting to be read.
struct Job {
    fd: OwnedFd,
    rel: Vec<u8>,
    /// The rules of the directory holding this one (empty for the root).
    parent_rules: Arc<Rules>,
    /// No ignore file above this directory changed since the directory cache was written,
    /// so its record, if still good itself, lists what the rules let through.
    rules_kept: bool,
}

/// The directory cache as the walk consults it.
#[derive(Clone, Copy, Debug)]
pub struct DirCacheView<'a> {
    /// Encoded records by directory path; empty when the config they were built under
    /// changed.
    pub records: &'a snap_store::PathMap<Vec<u8>, Vec<u8>>,
    /// The filesystem clock at the start of this scan: new records' `written_ns`.
    pub fs_now_ns: i64,
}

/// What the walk shares between its threads.
struct Shared<'a> {
    root: &'a Path,
    config: &'a Config,
    skip: Option<&'a Path>,
    cache: DirCacheView<'a>,
    queue: Mutex<Vec<Job>>,
    pending: AtomicUsize,
    descend: Descend,
    on_dir: Option<OnDir<'a>>,
    found: Mutex<Walk>,
    failure: Mutex<Option<TreeError>>,
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::RDONLY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

/// Walks `root` on `threads` threads, trusting `cache` where it is still good; entries
/// unsorted.
pub fn walk(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    cache: DirCacheView<'_>,
    threads: usize,
) -> Result<Walk, TreeError> {
    let fd = rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty())
        .map_err(|e| TreeError::io(root, e.into()))?;
    let job = Job {
        fd,
        rel: Vec::new(),
        parent_rules: Arc::new(Rules::none()),
        rules_kept: true,
    };
    let start = WalkStart {
        jobs: vec![job],
        descend: Descend::Everything,
        on_dir: None,
    };
    let mut found = walk_jobs(root, config, skip, cache, threads, start)?;
    drop_hollow(&mut found);
    Ok(found)
}

/// How far a walk goes below the directories it starts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Descend {
    /// Into every subdirectory the rules let through.
    Everything,
    /// Nowhere: only the starting directories are read.
    Nothing,
    /// Into every subdirectory, finding only directories: regular files are neither stat-ed
    /// nor listed (what a watcher plans its watches from).
    DirectoriesOnly,
}

/// The directories a walk starts from, and how far it goes below them.
struct WalkStart<'a> {
    jobs: Vec<Job>,
    descend: Descend,
    /// Called with each directory's path and open descriptor before it is read.
    on_dir: Option<OnDir<'a>>,
}

/// What a walk calls with each directory before reading it (a watcher adds its watch).
pub type OnDir<'a> = &'a (dyn Fn(&[u8], &OwnedFd) + Sync);

/// Walks from `start` on `threads` threads, without the directory rule (the caller applies
/// it over what it walked).
fn walk_jobs(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    cache: DirCacheView<'_>,
    threads: usize,
    start: WalkStart,
) -> Result<Walk, TreeError> {
    let shared = Shared {
        root,
        config,
        skip,
        cache,
        pending: AtomicUsize::new(start.jobs.len()),
        queue: Mutex::new(start.jobs),
        descend: start.descend,
        on_dir: start.on_dir,
        found: Mutex::new(Walk {
            newest_unlisted_ns: i64::MIN,
            ..Walk::default()
        }),
        failure: Mutex::new(None),
    };
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| worker(&shared));
        }
    });
    if let Some(e) = shared
        .failure
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
    {
        return Err(e);
    }
    Ok(shared.found.into_inner().unwrap_or_else(|p| p.into_inner()))
}

/// The directory rule (docs/SAFETY.md): a directory is tracked when it holds something tracked
/// or nothing at all. One holding only what the walk leaves out (or only such directories)
/// is not, so that status, diff, save and the restore planner agree on it. Only directories
/// holding something left out, and their parents, can be such: decided from each one's count
/// of tracked entries, without sorting the entries.
fn drop_hollow(walk: &mut Walk) {
    // The root is never dropped, and it always holds the store: most walks stop here.
    let mut left_out: HashSet<Vec<u8>> = walk.left_out.drain(..).collect();
    if left_out.iter().all(|dir| dir.is_empty()) {
        return;
    }
    let mut dirs: Vec<&(Vec<u8>, u32)> = walk.tracked.iter().collect();
    // A parent is a proper prefix of its children, so in descending byte order every
    // directory comes after everything under it.
    dirs.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    let mut hollow_children: HashMap<&[u8], u32> = HashMap::new();
    let mut hollow: HashSet<&[u8]> = HashSet::new();
    for (dir, tracked) in dirs {
        let gone = hollow_children.get(dir.as_slice()).copied().unwrap_or(0);
        if dir.is_empty() || *tracked != gone || !left_out.contains(dir) {
            continue;
        }
        // Everything it tracks is itself hollow: so is it, and its parent holds something
        // left out.
        hollow.insert(dir);
        let parent = crate::flat::split(dir).0;
        *hollow_children.entry(parent).or_default() += 1;
        left_out.insert(parent.to_vec());
    }
    if hollow.is_empty() {
        return;
    }
    walk.entries
        .retain(|(path, kind, _)| *kind != EntryKind::Dir || !hollow.contains(path.as_slice()));
}

fn worker(shared: &Shared<'_>) {
    while shared.pending.load(Ordering::Acquire) > 0 {
        let job = shared.queue.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some(job) = job else {
            std::thread::yield_now();
            continue;
        };
        if shared
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .is_none()
            && let Err(e) = visit_dir(shared, job)
        {
            *shared.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
        }
        shared.pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Names and `d_type`s of a directory, without `.` and `..`.
fn read_dir(fd: &OwnedFd, abs: &Path) -> Result<Vec<(Vec<u8>, FileType)>, TreeError> {
    let dir = rustix::fs::Dir::read_from(fd).map_err(|e| TreeError::io(abs, e.into()))?;
    let mut out = Vec::new();
    for entry in dir {
        let entry = entry.map_err(|e| TreeError::io(abs, e.into()))?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push((name.to_vec(), entry.file_type()));
        }
    }
    Ok(out)
}

/// What visiting one directory adds: its items, its subdirectories to visit, and its new
/// record when it was read rather than taken from the cache.
#[derive(Default)]
struct Visited {
    items: Vec<Item>,
    jobs: Vec<Job>,
    record: Option<Vec<u8>>,
    /// The directory's own permission bits.
    mode: u16,
}

/// The stat key of what `name` in `dir` is now; `None` when it cannot be stat-ed.
fn stat_at(dir: &OwnedFd, name: impl AsRef<[u8]>) -> Option<StatKey> {
    rustix::fs::statat(
        dir,
        OsStr::from_bytes(name.as_ref()),
        AtFlags::SYMLINK_NOFOLLOW,
    )
    .ok()
    .map(|st| stat_key(&st))
}

/// True when an ignore file recorded as `old` (or absent) is `now` (or absent) and was
/// recorded before it could have changed unseen.
fn same_rule_file(old: Option<StatKey>, now: Option<StatKey>, written_ns: i64) -> bool {
    match (old, now) {
        (None, None) => true,
        (Some(old), Some(now)) => old.still(&now, written_ns),
        _ => false,
    }
}

fn visit_dir(shared: &Shared<'_>, job: Job) -> Result<(), TreeError> {
    if let Some(on_dir) = shared.on_dir {
        on_dir(&job.rel, &job.fd);
    }
    let abs_dir = abs(shared.root, &job.rel);
    let record = job
        .rules_kept
        .then(|| shared.cache.records.get(&job.rel))
        .flatten()
        .and_then(|v| DirRecord::decode(v));
    let listed = match &record {
        Some(record) => visit_listed(shared, &job, &abs_dir, record)?,
        None => None,
    };
    let visited = match listed {
        Some(visited) => visited,
        None => visit_read(shared, &job, &abs_dir, record.map(|r| r.header))?,
    };
    publish(shared, job.rel, visited);
    Ok(())
}

fn publish(shared: &Shared<'_>, rel: Vec<u8>, mut visited: Visited) {
    if shared.descend == Descend::Nothing {
        visited.jobs.clear();
    }
    let tally = own_tally(&rel, &visited);
    let left_out = visited.items.iter().any(Item::is_left_out);
    let tracked = visited.items.iter().filter(|i| i.is_tracked()).count();
    {
        let mut found = shared.found.lock().unwrap_or_else(|p| p.into_inner());
        found.inexact |= tally.inexact;
        found.newest_unlisted_ns = found.newest_unlisted_ns.max(tally.newest_unlisted_ns);
        found
            .tallies
            .push((rel.clone(), tally.sum, tally.newest_ns));
        for item in visited.items {
            item.record(&mut found);
        }
        if left_out {
            found.left_out.push(rel.clone());
        }
        found
            .tracked
            .push((rel.clone(), u32::try_from(tracked).unwrap_or(u32::MAX)));
        found.dir_modes.insert(rel.clone(), visited.mode);
        match visited.record {
            Some(record) => found.dirs.push((rel, record)),
            None => found.dirs_cached += 1,
        }
    }
    shared
        .pending
        .fetch_add(visited.jobs.len(), Ordering::AcqRel);
    shared
        .queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(visited.jobs);
}

/// A directory's own share of the walk: its entries' digest and newest stamps, whether it
/// holds something left out (kind 5), and its mode (kind 6).
fn own_tally(rel: &[u8], visited: &Visited) -> Tally {
    let mut tally = Tally {
        newest_ns: i64::MIN,
        newest_unlisted_ns: i64::MIN,
        ..Tally::default()
    };
    for item in &visited.items {
        item.tally(&mut tally);
    }
    if tally.left_out {
        tally.sum.add(rel, 5, None);
    }
    // The directory's mode is in its parent's tree, so its subtree's digest must move with it.
    let mode = StatKey {
        size: 0,
        mtime_ns: 0,
        ctime_ns: 0,
        ino: 0,
        mode: u32::from(visited.mode),
    };
    tally.sum.add(rel, 6, Some(&mode));
    tally
}

/// Records the ignore file `rules` refused for its size, so that the save names it.
fn note_refused(shared: &Shared<'_>, rules: &Rules) {
    if let Some(file) = rules.refused() {
        let rel = file.strip_prefix(shared.root).unwrap_or(file);
        let rel = rel.as_os_str().as_bytes().to_vec();
        let mut found = shared.found.lock().unwrap_or_else(|p| p.into_inner());
        found.refused_rules.push(rel);
    }
}

fn dir_stat(fd: &OwnedFd, abs_dir: &Path) -> Result<StatKey, TreeError> {
    rustix::fs::fstat(fd)
        .map(|st| stat_key(&st))
        .map_err(|e| TreeError::io(abs_dir, e.into()))
}

/// A directory read with `getdents` and matched against the rules; `old` is its record's
/// header when the rules above it are unchanged, so that its subdirectories may keep theirs.
fn visit_read(
    shared: &Shared<'_>,
    job: &Job,
    abs_dir: &Path,
    old: Option<DirHeader>,
) -> Result<Visited, TreeError> {
    // Stats come before what they describe is read: a change after them shows next time.
    let stat = dir_stat(&job.fd, abs_dir)?;
    let names = read_dir(&job.fd, abs_dir)?;
    let rule_file = |file: &str| {
        let present = names.iter().any(|(n, _)| n == file.as_bytes());
        present.then(|| stat_at(&job.fd, file)).flatten()
    };
    let (gitignore, snapignore) = (rule_file(GITIGNORE), rule_file(SNAPIGNORE));
    let rules = Arc::new(read_rules(
        abs_dir,
        gitignore.is_some(),
        snapignore.is_some(),
        shared.config.max_ignore_file_bytes,
        &job.parent_rules,
    ));
    note_refused(shared, &rules);
    let rules_kept = old.is_some_and(|old| {
        same_rule_file(old.gitignore, gitignore, old.written_ns)
            && same_rule_file(old.snapignore, snapignore, old.written_ns)
    });
    let mut visited = Visited {
        mode: crate::flat::permission_bits(stat.mode),
        ..Visited::default()
    };
    for (name, d_type) in names {
        if let Some(item) = visit_entry(shared, job, &rules, name, d_type, &mut visited.jobs)? {
            visited.items.push(item);
        }
    }
    for child in &mut visited.jobs {
        child.rules_kept = rules_kept;
    }
    let header = DirHeader {
        stat,
        written_ns: shared.cache.fs_now_ns,
        special: 0,
        gitignore,
        snapignore,
        left_out: false,
    };
    visited.record = listing(&job.rel, &visited.items, header);
    Ok(visited)
}

/// The record of a directory read now: what its items list, and how many specials.
fn listing(rel: &[u8], items: &[Item], mut header: DirHeader) -> Option<Vec<u8>> {
    let skip = if rel.is_empty() { 0 } else { rel.len() + 1 };
    let mut names = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Item::Dir(path) => names.push((&path[skip..], ListedKind::Dir)),
            Item::Link(path, _) => names.push((&path[skip..], ListedKind::Symlink)),
            Item::File(path, ..) | Item::TooLarge(path, _) => {
                names.push((&path[skip..], ListedKind::File));
            }
            Item::Special => header.special = header.special.saturating_add(1),
            Item::LeftOut => header.left_out = true,
            Item::Unreadable(..) => return None,
        }
    }
    encode_dir_record(&header, names.into_iter())
}

/// What one entry adds to the walk.
enum Item {
    Dir(Vec<u8>),
    /// A symlink, with its lstat when it could be taken.
    Link(Vec<u8>, Option<StatKey>),
    File(Vec<u8>, EntryKind, StatKey),
    TooLarge(Vec<u8>, StatKey),
    Special,
    /// Something the rules leave out (ignored, excluded, the store, a VCS directory).
    LeftOut,
    /// A directory snap may not open: left out, named, and never cached (so every walk
    /// names it again until it can be read).
    Unreadable(Vec<u8>, String),
}

impl Item {
    fn record(self, walk: &mut Walk) {
        match self {
            Item::Dir(path) => walk.entries.push((path, EntryKind::Dir, None)),
            Item::Link(path, _) => walk.entries.push((path, EntryKind::Symlink, None)),
            Item::File(path, kind, stat) => walk.entries.push((path, kind, Some(stat))),
            Item::TooLarge(path, stat) => walk.too_large.push((path, stat.size)),
            Item::Special => walk.special += 1,
            Item::LeftOut => {}
            Item::Unreadable(path, error) => {
                walk.unreadable
                    .push(crate::scan::Unreadable { path, error });
            }
        }
    }

    /// True for an entry on disk that the tree does not track.
    fn is_left_out(&self) -> bool {
        matches!(
            self,
            Item::TooLarge(..) | Item::Special | Item::LeftOut | Item::Unreadable(..)
        )
    }

    /// True for an entry the walk lists in its entries.
    fn is_tracked(&self) -> bool {
        matches!(self, Item::Dir(_) | Item::Link(..) | Item::File(..))
    }

    /// Adds this entry to the walk's digest (see `walk::WalkSum`) and newest mtime.
    fn tally(&self, tally: &mut Tally) {
        let (path, kind, key) = match self {
            Item::Dir(path) => (path, 3, None),
            Item::Link(path, key) => {
                tally.inexact |= key.is_none();
                (path, 2, key.as_ref())
            }
            Item::File(path, kind, key) => {
                (path, u8::from(*kind == EntryKind::Executable), Some(key))
            }
            Item::TooLarge(path, key) => (path, 4, Some(key)),
            // Whether a directory holds only what is left out decides whether it is tracked.
            Item::Special | Item::LeftOut | Item::Unreadable(..) => {
                tally.left_out = true;
                return;
            }
        };
        if let Some(key) = key {
            // ctime too: an mtime set back says nothing of when the content changed.
            let stamp = key.mtime_ns.max(key.ctime_ns);
            tally.newest_ns = tally.newest_ns.max(stamp);
            if kind >= 2 {
                tally.newest_unlisted_ns = tally.newest_unlisted_ns.max(stamp);
            }
        }
        tally.sum.add(path, kind, key);
    }
}

/// A directory's share of the walk's digest.
#[derive(Default)]
struct Tally {
    sum: WalkSum,
    newest_ns: i64,
    /// Of symlinks and oversize files only (see `Walk::newest_unlisted_ns`).
    newest_unlisted_ns: i64,
    inexact: bool,
    left_out: bool,
}

fn visit_entry(
    shared: &Shared<'_>,
    job: &Job,
    rules: &Arc<Rules>,
    name: Vec<u8>,
    d_type: FileType,
    jobs: &mut Vec<Job>,
) -> Result<Option<Item>, TreeError> {
    if always_left_out(&job.rel, &name) {
        return Ok(Some(Item::LeftOut));
    }
    let rel = crate::flat::join(&job.rel, &name);
    let abs = || abs(shared.root, &rel);
    if shared.skip.is_some_and(|skip| skip == abs()) {
        return Ok(Some(Item::LeftOut));
    }
    if d_type == FileType::RegularFile && shared.descend == Descend::DirectoriesOnly {
        return Ok(None);
    }
    // getdents' type is enough for everything but regular files, which need their stat key;
    // a filesystem that does not fill it in gets an fstatat for every entry.
    let stat = match d_type {
        FileType::RegularFile | FileType::Unknown => {
            match rustix::fs::statat(&job.fd, OsStr::from_bytes(&name), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => Some(st),
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(TreeError::io(abs(), e.into())),
            }
        }
        _ => None,
    };
    let file_type = stat
        .as_ref()
        .map_or(d_type, |st| FileType::from_raw_mode(st.st_mode));
    let is_dir = file_type == FileType::Directory;
    if ruled_out(shared.config, rules, &rel, &abs(), is_dir) {
        return Ok(Some(Item::LeftOut));
    }
    match (file_type, stat) {
        (FileType::Directory, _) => {
            match rustix::fs::openat(&job.fd, OsStr::from_bytes(&name), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => jobs.push(Job {
                    fd,
                    rel: rel.clone(),
                    parent_rules: Arc::clone(rules),
                    rules_kept: false,
                }),
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
                Err(e @ (Errno::ACCESS | Errno::PERM)) => {
                    let error = std::io::Error::from(e).to_string();
                    return Ok(Some(Item::Unreadable(rel, error)));
                }
                Err(e) => return Err(TreeError::io(abs(), e.into())),
            }
            Ok(Some(Item::Dir(rel)))
        }
        (FileType::Symlink, _) => Ok(Some(Item::Link(rel, stat_at(&job.fd, &name)))),
        (FileType::RegularFile, Some(st)) => {
            Ok(Some(file_item(rel, &st, shared.config.max_file_size)))
        }
        _ => Ok(Some(Item::Special)),
    }
}

fn file_item(rel: Vec<u8>, st: &rustix::fs::Stat, max: u64) -> Item {
    let key = stat_key(st);
    if key.size > max {
        return Item::TooLarge(rel, key);
    }
    let kind = if st.st_mode & 0o100 != 0 {
        EntryKind::Executable
    } else {
        EntryKind::File
    };
    Item::File(rel, kind, key)
}

/// The stat key of an `fstatat` result; equal to `scan::stat_key` of the same file's metadata.
pub fn stat_key(st: &rustix::fs::Stat) -> StatKey {
    StatKey {
        size: st.st_size as u64,
        mtime_ns: st
            .st_mtime
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_mtime_nsec as i64),
        ctime_ns: st
            .st_ctime
            .saturating_mul(1_000_000_000)
            .saturating_add(st.st_ctime_nsec as i64),
        ino: st.st_ino,
        mode: st.st_mode,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// A directory read on its own (what a move's memo is made from) adds exactly what the
    /// walk of the whole tree adds for it: the same ignore rules from the directories above,
    /// the same left-out, oversize and special entries, the same mode.
    #[test]
    fn a_directory_read_alone_has_its_share_of_the_walk() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let write = |path: &str, body: &[u8]| {
            let p = root.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        };
        write(".gitignore", b"*.log\n!keep.log\n");
        write("a/.gitignore", b"x\nsub/deep/\n");
        write("a/.snapignore", b"!y.log\n");
        for path in ["a/x", "a/y.log", "a/z.log", "a/keep.log", "a/b/x", "a/b/f"] {
            write(path, b"1");
        }
        write("a/sub/deep/f", b"1");
        write("a/sub/big", &[7; 64]);
        write("node_modules/m", b"1");
        std::os::unix::fs::symlink("f", root.join("a/b/link")).unwrap();
        std::fs::create_dir_all(root.join("a/empty")).unwrap();
        let config = Config {
            max_file_size: 32,
            ..Config::default()
        };
        let records = snap_store::PathMap::default();
        let view = DirCacheView {
            records: &records,
            fs_now_ns: i64::MIN,
        };
        let whole = walk(root, &config, None, view, 2).unwrap();
        assert!(!whole.tallies.is_empty());
        for (rel, sum, _) in &whole.tallies {
            let alone = dir_share(root, &config, None, rel).unwrap().unwrap();
            assert_eq!(&alone.sum, sum, "{}", String::from_utf8_lossy(rel));
        }
        assert!(dir_share(root, &config, None, b"a/none").unwrap().is_none());
    }
}
