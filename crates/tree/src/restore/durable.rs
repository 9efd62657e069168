//! Making a restore durable before HEAD moves: path by path for a small restore, one
//! `syncfs` for a large one.
//!
//! `syncfs` flushes every dirty page of the whole filesystem, other programs' writes
//! included, so an undo of one file could wait on a build's gigabytes. A restore of at most
//! [`EACH_PATH_MAX_PATHS`] paths and [`EACH_PATH_MAX_BYTES`] bytes instead fsyncs each file
//! it writes (before its rename) and then each directory whose entries it changed, which
//! costs what it wrote. A large restore keeps the one `syncfs`: an fsync per file costs many
//! times what the one `syncfs` does there (docs/PERFORMANCE.md).
//!
//! Either way, everything is durable before the caller commits HEAD, and until then the
//! caller's marker is on disk: after a power cut the next command rolls the operation forward
//! and rewrites whatever did not reach the disk (the old content is in the store).

use std::collections::BTreeSet;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::io::Errno;

use super::floor::{fail, open_dir_at};
use super::{Plan, injected};
use crate::error::TreeError;
use crate::flat::split;

/// A restore of at most this many paths is made durable path by path.
pub const EACH_PATH_MAX_PATHS: usize = 64;
/// ...when it also writes at most this many bytes.
pub const EACH_PATH_MAX_BYTES: u64 = 64 << 20;

/// How a restore's writes are made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Durability {
    /// Each written file is fsynced before its rename, each changed directory at the end.
    EachPath,
    /// One `syncfs` at the end.
    WholeFilesystem,
}

impl Durability {
    pub(super) fn for_plan(plan: &Plan) -> Durability {
        let bytes: u64 = plan.write.iter().map(|(_, node)| node.size).sum();
        let max_paths = snap_store::testing::each_path_max().unwrap_or(EACH_PATH_MAX_PATHS);
        if plan.len() <= max_paths && bytes <= EACH_PATH_MAX_BYTES {
            Durability::EachPath
        } else {
            Durability::WholeFilesystem
        }
    }
}

/// Makes everything the restore did durable (also when it stopped part way: what was done
/// is durable before the marker is left behind).
pub(super) fn sync_restored(
    root: &Path,
    root_fd: &OwnedFd,
    plan: &Plan,
    how: Durability,
) -> Result<(), TreeError> {
    match how {
        Durability::EachPath => sync_dirs(root, root_fd, &changed_dirs(plan)),
        Durability::WholeFilesystem => {
            injected(snap_store::fault!("dir-sync"))
                .and_then(|()| rustix::fs::syncfs(root_fd))
                .map_err(|e| fail("sync", root, b"", e))?;
            snap_store::testing::journal::fs_synced(root_fd);
            Ok(())
        }
    }
}

/// Every directory whose entries or mode a step of `plan` may have changed: the parent of
/// each path it removes, makes or writes, and each directory it makes or gives a mode.
fn changed_dirs(plan: &Plan) -> BTreeSet<&[u8]> {
    let parents = (plan.remove_files.iter())
        .chain(&plan.remove_dirs)
        .chain(&plan.make_dirs)
        .chain(plan.write.iter().map(|(path, _)| path))
        .map(|path| split(path).0);
    let own = (plan.make_dirs.iter())
        .chain(plan.set_modes.iter().map(|(path, _)| path))
        .map(Vec::as_slice);
    parents.chain(own).collect()
}

/// fsyncs each directory of `dirs` that is still a directory (never through a symlink); one
/// that is gone or was replaced holds nothing of the restore's.
fn sync_dirs(root: &Path, root_fd: &OwnedFd, dirs: &BTreeSet<&[u8]>) -> Result<(), TreeError> {
    for dir in dirs {
        let fd = match open_dir_at(root_fd, dir) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => continue,
            Err(e) => return Err(fail("sync", root, dir, e)),
        };
        injected(snap_store::fault!("dir-sync"))
            .and_then(|()| rustix::fs::fsync(&fd))
            .map_err(|e| fail("sync", root, dir, e))?;
        snap_store::testing::journal::dir_synced(&fd);
    }
    Ok(())
}

/// fsyncs a file the restore wrote, before its rename, when the restore is made durable
/// path by path.
pub(super) fn sync_file(fd: &OwnedFd, how: Durability) -> Result<(), Errno> {
    if how == Durability::EachPath {
        rustix::fs::fsync(fd)?;
        snap_store::testing::journal::file_synced(fd);
    }
    Ok(())
}
