//! The check a move makes before it says it finished (docs/SAFETY.md): the directory steps
//! of its plan, which a guard cannot see undone (a removal finding the directory not empty
//! leaves it, by design, when it holds what the walk leaves out), left what they were to
//! leave: a directory the plan removes is gone or still holds something, one it makes is
//! there, and each gets the mode the plan gives it. And the check a revert makes of the
//! paths it takes back: the bytes on disk, never a change source's word.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, FileType};
use rustix::io::Errno;
use snap_store::Store;

use super::floor::{fail, open_dir_at, open_root};
use super::{Plan, guard};
use crate::error::TreeError;
use crate::flat::{Node, permission_bits, split};

/// What a path holds, as far as the check looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// Nothing, or nothing reachable without following a symlink.
    Absent,
    /// A directory, with its permission bits.
    Dir { mode: u16 },
    /// Anything else.
    Other,
}

/// The directories of `plan` whose step did not leave what it was to leave, in path order,
/// those at or under `named` (kept, and reported as such) aside: one removed still there and
/// empty, one made absent, one whose mode is not the plan's.
pub fn unfinished(root: &Path, plan: &Plan, named: &[Vec<u8>]) -> Result<Vec<Vec<u8>>, TreeError> {
    if plan.is_empty() {
        return Ok(Vec::new());
    }
    let root_fd = open_root(root)?;
    let seen = |path: &[u8]| seen_at(&root_fd, path).map_err(|e| fail("check", root, path, e));
    // A directory the plan turns into a file or link is checked by that step's guard.
    let written: HashSet<&[u8]> = plan.write.iter().map(|(p, _)| p.as_slice()).collect();
    let made: HashSet<&[u8]> = plan.make_dirs.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    for path in (plan.remove_dirs.iter()).filter(|p| !written.contains(p.as_slice())) {
        let left = matches!(seen(path)?, Seen::Dir { .. }) && !made.contains(path.as_slice());
        if left && is_empty(&root_fd, path).map_err(|e| fail("check", root, path, e))? {
            out.push(path.clone());
        }
    }
    for path in &plan.make_dirs {
        if !matches!(seen(path)?, Seen::Dir { .. }) {
            out.push(path.clone());
        }
    }
    for (path, mode) in &plan.set_modes {
        if !matches!(seen(path)?, Seen::Dir { mode: m } if m == *mode) {
            out.push(path.clone());
        }
    }
    out.retain(|p| !named.iter().any(|k| crate::flat::is_within(p, k)));
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// What `path` holds, never following a symlink; absent when a directory above it is not
/// there (or is not a directory).
fn seen_at(root_fd: &OwnedFd, path: &[u8]) -> Result<Seen, Errno> {
    let (parent, name) = split(path);
    let dir = match open_dir_at(root_fd, parent) {
        Ok(dir) => dir,
        Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(Seen::Absent),
        Err(e) => return Err(e),
    };
    let name = OsStr::from_bytes(name);
    let st = match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(Seen::Absent),
        Err(e) => return Err(e),
    };
    Ok(match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => Seen::Dir {
            mode: permission_bits(st.st_mode),
        },
        _ => Seen::Other,
    })
}

/// Whether directory `path` has no entries. One that cannot be opened (not this process's
/// to read, or gone meanwhile) is taken as holding something.
fn is_empty(root_fd: &OwnedFd, path: &[u8]) -> Result<bool, Errno> {
    let fd = match open_dir_at(root_fd, path) {
        Ok(fd) => fd,
        Err(Errno::ACCESS | Errno::PERM | Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {
            return Ok(false);
        }
        Err(e) => return Err(e),
    };
    for entry in rustix::fs::Dir::read_from(&fd)? {
        let entry = entry?;
        if !matches!(entry.file_name().to_bytes(), b"." | b"..") {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Of `wanted` (paths, each with what it should hold; `None`: nothing), those holding
/// something else on disk now, judged as the guard judges a step: kind, size, permission
/// bits and the content id read from the bytes (a directory by its kind alone). Never
/// through a symlink; a path under something that is not a directory holds nothing.
pub fn differing<'a>(
    root: &Path,
    store: &Store,
    wanted: impl IntoIterator<Item = (&'a [u8], Option<&'a Node>)>,
) -> Result<Vec<Vec<u8>>, TreeError> {
    let root_fd = open_root(root)?;
    let hasher = store.dry_writer();
    let mut out = Vec::new();
    for (path, want) in wanted {
        let (parent, name) = split(path);
        let same = match open_dir_at(&root_fd, parent) {
            Ok(dir) => {
                let here = guard::on_disk(&dir, OsStr::from_bytes(name), &hasher)
                    .map_err(|e| fail("read", root, path, e))?;
                guard::same(&here, want)
            }
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => want.is_none(),
            Err(e) => return Err(fail("open directory", root, parent, e)),
        };
        if !same {
            out.push(path.to_vec());
        }
    }
    Ok(out)
}
