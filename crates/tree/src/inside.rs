//! Reads of the working tree that stay inside it: every file is opened relative to the
//! workspace root's descriptor, following no symlink on the way (`openat2` with
//! `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS`, or one `O_NOFOLLOW` component at a time where the
//! kernel lacks it), and without blocking. A directory swapped for a link after the walk
//! listed it therefore fails the read (`ELOOP`, or `ENOTDIR` by components: both taken as
//! vanished) instead of bringing a file from outside into a snapshot.

use std::ffi::OsStr;
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

const RESOLVE: ResolveFlags = ResolveFlags::BENEATH.union(ResolveFlags::NO_SYMLINKS);

/// A descriptor of the workspace root to open paths under.
pub(crate) fn open_root(root: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(root, flags, Mode::empty())?)
}

/// Opens `rel` (workspace-relative) under `root` with `flags`, following no symlink.
fn open_beneath(root: &OwnedFd, rel: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    let rel = if rel.is_empty() { &b"."[..] } else { rel };
    match rustix::fs::openat2(root, OsStr::from_bytes(rel), flags, Mode::empty(), RESOLVE) {
        // A kernel without openat2 (or a filter refusing it), or a path past PATH_MAX: each
        // component is short, so one at a time still opens it.
        Err(Errno::NOSYS | Errno::PERM | Errno::NAMETOOLONG) => {
            open_by_components(root, rel, flags)
        }
        opened => opened,
    }
}

/// The fallback of [`open_beneath`]: each directory opened with `O_NOFOLLOW` in turn.
fn open_by_components(root: &OwnedFd, rel: &[u8], flags: OFlags) -> Result<OwnedFd, Errno> {
    let (parent, name) = crate::flat::split(rel);
    // Not O_PATH: with it, O_NOFOLLOW opens a symlink itself instead of failing with ELOOP.
    let step = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut dir = rustix::fs::openat(root, ".", step, Mode::empty())?;
    for component in parent.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
        dir = rustix::fs::openat(&dir, OsStr::from_bytes(component), step, Mode::empty())?;
    }
    rustix::fs::openat(
        &dir,
        OsStr::from_bytes(name),
        flags | OFlags::NOFOLLOW,
        Mode::empty(),
    )
}

/// The stat of `rel` beneath `root`, following no symlink on the way or at the end.
pub(crate) fn stat_beneath(root: &OwnedFd, rel: &[u8]) -> std::io::Result<rustix::fs::Stat> {
    let (parent, name) = crate::flat::split(rel);
    let dir = open_beneath(
        root,
        parent,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
    )?;
    let flags = rustix::fs::AtFlags::SYMLINK_NOFOLLOW;
    Ok(rustix::fs::statat(&dir, OsStr::from_bytes(name), flags)?)
}

/// Opens the file `rel` for reading: never through a symlink, never blocking on a FIFO.
pub(crate) fn open_file(root: &OwnedFd, rel: &[u8]) -> std::io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(File::from(open_beneath(root, rel, flags)?))
}

/// The target of the symlink `rel`, read through its parent opened beneath the root.
pub(crate) fn read_link(root: &OwnedFd, rel: &[u8]) -> std::io::Result<Vec<u8>> {
    let (parent, name) = crate::flat::split(rel);
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let dir = open_beneath(root, parent, flags)?;
    let target = rustix::fs::readlinkat(&dir, OsStr::from_bytes(name), Vec::new())?;
    Ok(target.into_bytes())
}

/// The bytes of regular file `rel` under `root`, at most `limit` and one more (so a caller
/// can tell a longer file); an error for anything else.
pub(crate) fn read_file(root: &Path, rel: &[u8], limit: u64) -> std::io::Result<Vec<u8>> {
    let file = open_file(&open_root(root)?, rel)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::from(Errno::INVAL));
    }
    let mut bytes = Vec::with_capacity(meta.len().min(limit) as usize);
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn no_read_leaves_the_root_through_a_link() {
        let (root, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(outside.path().join("secret"), b"outside").unwrap();
        std::fs::create_dir(root.path().join("d")).unwrap();
        std::fs::write(root.path().join("d/f"), b"inside").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.path().join("swapped")).unwrap();
        std::os::unix::fs::symlink("target", root.path().join("d/link")).unwrap();
        let fd = open_root(root.path()).unwrap();
        assert_eq!(read_file(root.path(), b"d/f", 1 << 20).unwrap(), b"inside");
        assert_eq!(
            read_file(root.path(), b"d/f", 2).unwrap(),
            b"ins",
            "one byte past"
        );
        assert_eq!(read_link(&fd, b"d/link").unwrap(), b"target");
        let err = read_file(root.path(), b"swapped/secret", 1 << 20).unwrap_err();
        assert_eq!(
            err.raw_os_error(),
            Some(Errno::LOOP.raw_os_error()),
            "{err}"
        );
        // O_DIRECTORY | O_NOFOLLOW on a link: ENOTDIR, where openat2 says ELOOP.
        let by_parts = open_by_components(&fd, b"swapped/secret", OFlags::RDONLY);
        assert_eq!(by_parts.unwrap_err(), Errno::NOTDIR);
        assert!(read_link(&fd, b"swapped/x").is_err());
    }
}
