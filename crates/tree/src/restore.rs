//! The restore engine: makes the working tree match a target flat tree, writing only what
//! differs, never following a symlink, never touching an ignored path.
//!
//! Every file is written to a temporary name in its own directory, fsynced, then renamed over
//! its path, so each path holds its old content or its new, never a mix. Every parent
//! directory is opened component by component from the workspace root with `O_NOFOLLOW`, so a
//! directory swapped for a symlink makes the restore fail instead of writing elsewhere.
//! Touched directories are fsynced before the caller commits HEAD.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use snap_store::{EntryKind, Store};

use crate::flat::{FlatTree, Node, split};
use crate::{TreeError, scan};

/// Prefix of the temporary names restores write before renaming; a crash can leave one, and
/// the roll-forward of the interrupted operation deletes it as an untracked path.
pub const TEMP_PREFIX: &str = ".snap-tmp-";

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// What a restore does, computed before anything is touched.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Files and symlinks the target lacks or has as a directory.
    pub remove_files: Vec<Vec<u8>>,
    /// Deepest first.
    pub remove_dirs: Vec<Vec<u8>>,
    /// Shallowest first.
    pub make_dirs: Vec<Vec<u8>>,
    /// Files and symlinks the working tree lacks or holds with another kind or content.
    pub write: Vec<(Vec<u8>, Node)>,
}

impl Plan {
    /// The steps that turn `current` into `target`.
    pub fn new(current: &FlatTree, target: &FlatTree) -> Plan {
        let mut plan = Plan::default();
        for (path, cur) in current {
            let want = target.get(path);
            match (
                cur.kind == EntryKind::Dir,
                want.map(|w| w.kind == EntryKind::Dir),
            ) {
                (true, Some(true)) => {}
                (true, _) => plan.remove_dirs.push(path.clone()),
                (false, None | Some(true)) => plan.remove_files.push(path.clone()),
                (false, Some(false)) => {}
            }
        }
        for (path, want) in target {
            let cur = current.get(path);
            if want.kind == EntryKind::Dir {
                if cur.is_none_or(|c| c.kind != EntryKind::Dir) {
                    plan.make_dirs.push(path.clone());
                }
            } else if cur.is_none_or(|c| c.kind != want.kind || c.id != want.id) {
                plan.write.push((path.clone(), *want));
            }
        }
        // A path sorts before everything inside it, so reverse order empties children first.
        plan.remove_dirs.reverse();
        plan
    }

    /// How many paths the plan changes.
    pub fn len(&self) -> usize {
        self.remove_files.len() + self.remove_dirs.len() + self.make_dirs.len() + self.write.len()
    }

    /// True when the working tree already matches.
    pub fn is_empty(&self) -> bool {
        self.remove_files.is_empty()
            && self.remove_dirs.is_empty()
            && self.make_dirs.is_empty()
            && self.write.is_empty()
    }
}

/// Carries out `plan` in `root`, reading content from `store`. Returns the number of paths
/// written or removed.
pub fn apply(
    root: &Path,
    store: &Store,
    plan: &Plan,
    target: &FlatTree,
) -> Result<usize, TreeError> {
    apply_with(root, store, plan, target, &|| {})
}

/// As [`apply`], calling `tick` once per path changed (from worker threads too).
pub fn apply_with(
    root: &Path,
    store: &Store,
    plan: &Plan,
    target: &FlatTree,
    tick: &(dyn Fn() + Sync),
) -> Result<usize, TreeError> {
    let root_fd = rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| TreeError::io(root, e.into()))?;
    for path in &plan.remove_files {
        remove(root, &root_fd, path, AtFlags::empty())?;
        tick();
    }
    for path in &plan.remove_dirs {
        remove_dir(root, &root_fd, path, target)?;
        tick();
    }
    for path in &plan.make_dirs {
        make_dir(root, &root_fd, path)?;
        tick();
    }
    plan.write.par_iter().try_for_each(|(path, node)| {
        write_entry(root, &root_fd, store, path, node)?;
        snap_store::failpoint("restore-file");
        tick();
        Ok::<(), TreeError>(())
    })?;
    sync_parents(root, &root_fd, plan)?;
    Ok(plan.len())
}

fn fail(action: &'static str, root: &Path, path: &[u8], e: Errno) -> TreeError {
    let why = match e {
        Errno::LOOP | Errno::NOTDIR => {
            "a parent directory was replaced by a symlink or file; refusing to follow it"
                .to_string()
        }
        e => std::io::Error::from(e).to_string(),
    };
    TreeError::Restore {
        action,
        path: scan::abs(root, path),
        why,
    }
}

/// Opens the directory `rel` under the root, one component at a time, never following links.
fn open_dir(root: &Path, root_fd: &OwnedFd, rel: &[u8]) -> Result<OwnedFd, TreeError> {
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
    let mut fd = rustix::fs::openat(root_fd, ".", flags, Mode::empty())
        .map_err(|e| fail("open", root, b".", e))?;
    if rel.is_empty() {
        return Ok(fd);
    }
    for component in rel.split(|&c| c == b'/') {
        fd = rustix::fs::openat(&fd, OsStr::from_bytes(component), flags, Mode::empty())
            .map_err(|e| fail("open directory", root, rel, e))?;
    }
    Ok(fd)
}

fn remove(root: &Path, root_fd: &OwnedFd, path: &[u8], flags: AtFlags) -> Result<bool, TreeError> {
    let (parent, name) = split(path);
    let dir = open_dir(root, root_fd, parent)?;
    match rustix::fs::unlinkat(&dir, OsStr::from_bytes(name), flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        Err(Errno::NOTEMPTY | Errno::EXIST) if flags.contains(AtFlags::REMOVEDIR) => Ok(false),
        Err(e) => Err(fail("remove", root, path, e)),
    }
}

/// Removes a directory the target lacks. One still holding ignored files stays, unless the
/// target needs its path for a file: that is a conflict to report, not to resolve by deleting.
fn remove_dir(
    root: &Path,
    root_fd: &OwnedFd,
    path: &[u8],
    target: &FlatTree,
) -> Result<(), TreeError> {
    if remove(root, root_fd, path, AtFlags::REMOVEDIR)? || !target.contains_key(path) {
        return Ok(());
    }
    Err(TreeError::Restore {
        action: "replace directory",
        path: scan::abs(root, path),
        why: "it still holds ignored or untracked files".into(),
    })
}

fn make_dir(root: &Path, root_fd: &OwnedFd, path: &[u8]) -> Result<(), TreeError> {
    let (parent, name) = split(path);
    let dir = open_dir(root, root_fd, parent)?;
    match rustix::fs::mkdirat(&dir, OsStr::from_bytes(name), Mode::from_raw_mode(0o777)) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => {
            match rustix::fs::statat(&dir, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st)
                    if rustix::fs::FileType::from_raw_mode(st.st_mode)
                        == rustix::fs::FileType::Directory =>
                {
                    Ok(())
                }
                _ => Err(TreeError::Restore {
                    action: "create directory",
                    path: scan::abs(root, path),
                    why: "an ignored file is in the way".into(),
                }),
            }
        }
        Err(e) => Err(fail("create directory", root, path, e)),
    }
}

fn temp_name() -> String {
    format!(
        "{TEMP_PREFIX}{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

/// Writes one file or symlink under a temporary name, fsyncs it, and renames it into place.
fn write_entry(
    root: &Path,
    root_fd: &OwnedFd,
    store: &Store,
    path: &[u8],
    node: &Node,
) -> Result<(), TreeError> {
    let (parent, name) = split(path);
    let dir = open_dir(root, root_fd, parent)?;
    let content = store.read_file(&node.id)?;
    let tmp = temp_name();
    let written = match node.kind {
        EntryKind::Symlink => {
            rustix::fs::symlinkat(OsStr::from_bytes(&content), &dir, tmp.as_str())
        }
        _ => write_file(&dir, &tmp, &content, node.kind == EntryKind::Executable),
    };
    if let Err(e) = written {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
        return Err(fail("write", root, path, e));
    }
    rustix::fs::renameat(&dir, tmp.as_str(), &dir, OsStr::from_bytes(name)).map_err(|e| {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
        fail("write", root, path, e)
    })
}

fn write_file(dir: &OwnedFd, tmp: &str, content: &[u8], executable: bool) -> Result<(), Errno> {
    // The process umask applies, as it does for git checkout.
    let mode = Mode::from_raw_mode(if executable { 0o777 } else { 0o666 });
    let fd = rustix::fs::openat(
        dir,
        tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?;
    injected("restore-write")?;
    let mut rest = content;
    while !rest.is_empty() {
        let n = rustix::io::write(&fd, rest)?;
        rest = &rest[n..];
    }
    rustix::fs::fsync(fd.as_fd())?;
    snap_store::journal::file_synced(&fd);
    Ok(())
}

/// fsyncs every directory whose entries the plan changed, so renames and unlinks are durable
/// before HEAD moves.
fn sync_parents(root: &Path, root_fd: &OwnedFd, plan: &Plan) -> Result<(), TreeError> {
    let all = plan
        .remove_files
        .iter()
        .chain(&plan.remove_dirs)
        .chain(&plan.make_dirs)
        .chain(plan.write.iter().map(|(p, _)| p));
    let parents: BTreeSet<&[u8]> = all.map(|p| split(p).0).collect();
    for parent in parents {
        match open_dir(root, root_fd, parent) {
            Ok(dir) => sync_dir(&dir).map_err(|e| fail("sync", root, parent, e))?,
            // A parent removed by this plan has nothing left to sync.
            Err(_) if !parent.is_empty() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// A fault a test injected at `point` (debug builds only).
fn injected(point: &str) -> Result<(), Errno> {
    snap_store::fault::inject(point).map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))
}

fn sync_dir(dir: &OwnedFd) -> Result<(), Errno> {
    injected("dir-sync")?;
    rustix::fs::fsync(dir.as_fd())?;
    snap_store::journal::dir_synced(dir);
    Ok(())
}

/// Removes temporary files a killed restore left in `dirs` (workspace-relative). Only the
/// roll-forward of an interrupted operation calls this: a leftover may sit under an ignore
/// rule that hides it from the scan, so the plan alone cannot be trusted to delete it.
pub fn sweep_temp<'a>(
    root: &Path,
    dirs: impl Iterator<Item = &'a [u8]>,
) -> Result<usize, TreeError> {
    let root_fd = rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| TreeError::io(root, e.into()))?;
    let mut removed = 0;
    for dir in dirs {
        let Ok(fd) = open_dir(root, &root_fd, dir) else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(scan::abs(root, dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name.as_bytes().starts_with(TEMP_PREFIX.as_bytes())
                && rustix::fs::unlinkat(&fd, name.as_os_str(), AtFlags::empty()).is_ok()
            {
                removed += 1;
            }
        }
    }
    Ok(removed)
}
