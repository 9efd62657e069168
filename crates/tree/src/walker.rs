//! The parallel directory walk: each directory is opened relative to its parent
//! (`openat` with `O_NOFOLLOW`), read with `getdents`, and only regular files are `fstatat`-ed,
//! which is the least a stat-based scanner can do.
//!
//! Ignore rules are applied as git applies them, with `ignore`'s gitignore matcher per file:
//! for each entry the deepest `.snapignore` with an opinion decides, else the deepest
//! `.gitignore` with one; an ignored directory is never entered, so nothing below it can be
//! re-included (git's rule). The store, `.git`, `.hg`, `.svn`, `.jj` and the configured
//! default excludes are left out before any rule is consulted.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use snap_store::{EntryKind, StatKey};

use crate::TreeError;
use crate::config::Config;
use crate::scan::{SNAPIGNORE, STORE_DIR, VCS_DIRS, Walk};

/// The ignore files of one directory and of every directory above it.
struct Rules {
    parent: Option<Arc<Rules>>,
    git: Option<Gitignore>,
    snap: Option<Gitignore>,
    /// True when this level or one above has an ignore file: when false, nothing is matched.
    any: bool,
}

impl Rules {
    /// True when `abs` is ignored: `.snapignore` files first, then `.gitignore` files, each
    /// from the deepest directory up, the first with an opinion deciding.
    fn ignores(&self, abs: &Path, is_dir: bool) -> bool {
        let snap: fn(&Rules) -> Option<&Gitignore> = |r| r.snap.as_ref();
        let git: fn(&Rules) -> Option<&Gitignore> = |r| r.git.as_ref();
        self.opinion(snap, abs, is_dir)
            .or_else(|| self.opinion(git, abs, is_dir))
            .unwrap_or(false)
    }

    fn opinion(
        &self,
        pick: fn(&Rules) -> Option<&Gitignore>,
        abs: &Path,
        is_dir: bool,
    ) -> Option<bool> {
        let mut level = Some(self);
        while let Some(rules) = level {
            match pick(rules).map(|g| g.matched(abs, is_dir)) {
                Some(Match::Ignore(_)) => return Some(true),
                Some(Match::Whitelist(_)) => return Some(false),
                _ => level = rules.parent.as_deref(),
            }
        }
        None
    }
}

/// One directory waiting to be read.
struct Job {
    fd: OwnedFd,
    rel: Vec<u8>,
    /// The rules of the directory holding this one (empty for the root).
    parent_rules: Arc<Rules>,
}

/// What the walk shares between its threads.
struct Shared<'a> {
    root: &'a Path,
    config: &'a Config,
    skip: Option<&'a Path>,
    queue: Mutex<Vec<Job>>,
    pending: AtomicUsize,
    found: Mutex<Walk>,
    failure: Mutex<Option<TreeError>>,
}

const DIR_FLAGS: OFlags = OFlags::DIRECTORY
    .union(OFlags::RDONLY)
    .union(OFlags::CLOEXEC)
    .union(OFlags::NOFOLLOW);

/// Walks `root` on `threads` threads; entries unsorted.
pub fn walk(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    threads: usize,
) -> Result<Walk, TreeError> {
    let fd = rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty())
        .map_err(|e| TreeError::io(root, e.into()))?;
    let parent_rules = Arc::new(Rules {
        parent: None,
        git: None,
        snap: None,
        any: false,
    });
    let shared = Shared {
        root,
        config,
        skip,
        queue: Mutex::new(vec![Job {
            fd,
            rel: Vec::new(),
            parent_rules,
        }]),
        pending: AtomicUsize::new(1),
        found: Mutex::new(Walk::default()),
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
            && let Err(e) = visit_dir(shared, &job)
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

/// The rules for a directory: its own `.gitignore` and `.snapignore` over its parent's.
fn read_rules(abs: &Path, names: &[(Vec<u8>, FileType)], parent: &Arc<Rules>) -> Rules {
    let load = |file: &str| {
        if !names.iter().any(|(n, _)| n == file.as_bytes()) {
            return None;
        }
        let mut builder = GitignoreBuilder::new(abs);
        // A malformed line is skipped, as git skips it; the file's other lines still apply.
        let _ = builder.add(abs.join(file));
        builder.build().ok()
    };
    let (git, snap) = (load(".gitignore"), load(SNAPIGNORE));
    let any = parent.any || git.is_some() || snap.is_some();
    Rules {
        parent: Some(Arc::clone(parent)),
        git,
        snap,
        any,
    }
}

fn visit_dir(shared: &Shared<'_>, job: &Job) -> Result<(), TreeError> {
    let abs_dir = crate::scan::abs(shared.root, &job.rel);
    let names = read_dir(&job.fd, &abs_dir)?;
    let rules = Arc::new(read_rules(&abs_dir, &names, &job.parent_rules));
    let mut items = Vec::new();
    let mut jobs = Vec::new();
    for (name, d_type) in names {
        if let Some(item) = visit_entry(shared, job, &rules, name, d_type, &mut jobs)? {
            items.push(item);
        }
    }
    {
        let mut found = shared.found.lock().unwrap_or_else(|p| p.into_inner());
        for item in items {
            item.record(&mut found);
        }
    }
    shared.pending.fetch_add(jobs.len(), Ordering::AcqRel);
    shared
        .queue
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .extend(jobs);
    Ok(())
}

/// What one entry adds to the walk.
enum Item {
    Entry(Vec<u8>, EntryKind),
    File(Vec<u8>, EntryKind, StatKey),
    TooLarge(Vec<u8>, u64),
    Special,
}

impl Item {
    fn record(self, walk: &mut Walk) {
        match self {
            Item::Entry(path, kind) => walk.entries.push((path, kind, None)),
            Item::File(path, kind, stat) => walk.entries.push((path, kind, Some(stat))),
            Item::TooLarge(path, size) => walk.too_large.push((path, size)),
            Item::Special => walk.special += 1,
        }
    }
}

fn visit_entry(
    shared: &Shared<'_>,
    job: &Job,
    rules: &Arc<Rules>,
    name: Vec<u8>,
    d_type: FileType,
    jobs: &mut Vec<Job>,
) -> Result<Option<Item>, TreeError> {
    if VCS_DIRS.iter().any(|d| d.as_bytes() == name)
        || (job.rel.is_empty() && name == STORE_DIR.as_bytes())
    {
        return Ok(None);
    }
    let rel = crate::flat::join(&job.rel, &name);
    let abs = || crate::scan::abs(shared.root, &rel);
    if shared.skip.is_some_and(|skip| skip == abs()) {
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
    let excluded = if is_dir {
        shared.config.excludes_dir(&name)
    } else {
        shared.config.excludes_file(&name)
    };
    if excluded || (rules.any && rules.ignores(&abs(), is_dir)) {
        return Ok(None);
    }
    match (file_type, stat) {
        (FileType::Directory, _) => {
            match rustix::fs::openat(&job.fd, OsStr::from_bytes(&name), DIR_FLAGS, Mode::empty()) {
                Ok(fd) => jobs.push(Job {
                    fd,
                    rel: rel.clone(),
                    parent_rules: Arc::clone(rules),
                }),
                Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
                Err(e) => return Err(TreeError::io(abs(), e.into())),
            }
            Ok(Some(Item::Entry(rel, EntryKind::Dir)))
        }
        (FileType::Symlink, _) => Ok(Some(Item::Entry(rel, EntryKind::Symlink))),
        (FileType::RegularFile, Some(st)) => {
            Ok(Some(file_item(rel, &st, shared.config.max_file_size)))
        }
        _ => Ok(Some(Item::Special)),
    }
}

fn file_item(rel: Vec<u8>, st: &rustix::fs::Stat, max: u64) -> Item {
    let key = stat_key(st);
    if key.size > max {
        return Item::TooLarge(rel, key.size);
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
