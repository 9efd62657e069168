//! The floor every restore step stands on: opening a directory beneath the root one
//! component at a time without following a link, removing a name, and naming a failure.
//! Everything here is below the steps (`mod.rs`, `guard.rs`, `write.rs`, ...), which call
//! it and are never called back.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::error::TreeError;
use crate::flat::split;
use crate::scan;

pub(super) fn fail(action: &'static str, root: &Path, path: &[u8], e: Errno) -> TreeError {
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
pub(super) fn open_dir(root: &Path, root_fd: &OwnedFd, rel: &[u8]) -> Result<OwnedFd, TreeError> {
    open_dir_at(root_fd, rel).map_err(|e| fail("open directory", root, rel, e))
}

/// As [`open_dir`], with the bare error.
pub(super) fn open_dir_at(root_fd: &OwnedFd, rel: &[u8]) -> Result<OwnedFd, Errno> {
    let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC;
    let mut fd = rustix::fs::openat(root_fd, ".", flags, Mode::empty())?;
    if rel.is_empty() {
        return Ok(fd);
    }
    for component in rel.split(|&c| c == b'/') {
        fd = rustix::fs::openat(&fd, OsStr::from_bytes(component), flags, Mode::empty())?;
    }
    Ok(fd)
}

pub(super) fn remove(
    root: &Path,
    root_fd: &OwnedFd,
    path: &[u8],
    flags: AtFlags,
) -> Result<bool, TreeError> {
    let (parent, name) = split(path);
    let dir = open_dir(root, root_fd, parent)?;
    match rustix::fs::unlinkat(&dir, OsStr::from_bytes(name), flags) {
        Ok(()) | Err(Errno::NOENT) => Ok(true),
        Err(Errno::NOTEMPTY | Errno::EXIST) if flags.contains(AtFlags::REMOVEDIR) => Ok(false),
        Err(e) => Err(fail("remove", root, path, e)),
    }
}

/// Opens the workspace root (following a link only there: the root is the user's to choose).
pub(super) fn open_root(root: &Path) -> Result<OwnedFd, TreeError> {
    let flags = OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC;
    rustix::fs::open(root, flags, Mode::empty()).map_err(|e| TreeError::io(root, e.into()))
}
