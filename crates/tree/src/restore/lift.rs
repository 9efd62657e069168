//! Read-only directories a move must fill: a directory 0555 whose files the plan writes,
//! removes or makes refuses every step inside it (`EACCES`), so the move lifts the owner's
//! write bit for its time and gives each directory its mode back after. The directories and
//! their modes are recorded in the marker before anything is lifted, so a roll-forward
//! lifts and puts them back the same way. One snap may not chmod (not its owner) is kept,
//! with all the plan would do inside it.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Mode};
use serde::{Deserialize, Serialize};

use super::Plan;
use super::floor::{open_dir_at, open_root};
use crate::error::TreeError;
use crate::flat::split;

/// A directory a move lifted (or will lift) the owner's write bit of, and the mode to give
/// it back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LiftedDir {
    /// Workspace-relative (empty: the root).
    pub path: Vec<u8>,
    /// Its permission bits as the move found them.
    pub mode: u16,
}

/// What [`read_only_dirs`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadOnly {
    /// Directories the move may lift: this process owns them (or is root).
    pub lift: Vec<LiftedDir>,
    /// Directories it may not: every step inside them is to be kept.
    pub refused: Vec<Vec<u8>>,
}

/// The directories `plan` changes entries in whose owner may not write them.
pub fn read_only_dirs(root: &Path, plan: &Plan) -> Result<ReadOnly, TreeError> {
    let mut parents: Vec<&[u8]> = plan.paths().into_iter().map(|p| split(p).0).collect();
    parents.sort_unstable();
    parents.dedup();
    let root_fd = open_root(root)?;
    let me = rustix::process::geteuid();
    let mut out = ReadOnly::default();
    for dir in parents {
        let Ok(fd) = open_dir_at(&root_fd, dir) else {
            continue;
        };
        let Ok(st) = rustix::fs::fstat(&fd) else {
            continue;
        };
        if st.st_mode & 0o200 != 0 {
            continue;
        }
        if me.is_root() || st.st_uid == me.as_raw() {
            let mode = crate::flat::permission_bits(st.st_mode);
            out.lift.push(LiftedDir {
                path: dir.to_vec(),
                mode,
            });
        } else {
            out.refused.push(dir.to_vec());
        }
    }
    Ok(out)
}

/// Gives each of `dirs` the owner's write bit (and search bit), never through a symlink.
pub fn lift(root: &Path, dirs: &[LiftedDir]) -> Result<(), TreeError> {
    set(root, dirs, |d| d.mode | 0o300)
}

/// Gives each of `dirs` back its recorded mode, but those whose final mode `plan` sets
/// itself (`set_modes`, the target's). A directory gone since is skipped.
pub fn put_back(root: &Path, dirs: &[LiftedDir], plan: &Plan) -> Result<(), TreeError> {
    let own: Vec<LiftedDir> = dirs
        .iter()
        .filter(|d| !plan.set_modes.iter().any(|(p, _)| *p == d.path))
        .cloned()
        .collect();
    set(root, &own, |d| d.mode)
}

fn is_dir_at(dir: &std::os::fd::OwnedFd, name: &OsStr) -> bool {
    rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Directory
    })
}

fn set(root: &Path, dirs: &[LiftedDir], mode: impl Fn(&LiftedDir) -> u16) -> Result<(), TreeError> {
    if dirs.is_empty() {
        return Ok(());
    }
    let root_fd = open_root(root)?;
    for dir in dirs {
        let (parent, name) = split(&dir.path);
        let bits = Mode::from_raw_mode(u32::from(mode(dir)));
        let changed = if dir.path.is_empty() {
            rustix::fs::fchmod(&root_fd, bits)
        } else {
            let Ok(up) = open_dir_at(&root_fd, parent) else {
                continue;
            };
            // Only a directory, never a link: checked, then changed through a descriptor.
            let name = OsStr::from_bytes(name);
            let flags = rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::NOFOLLOW;
            match rustix::fs::openat(&up, name, flags, Mode::empty()) {
                Ok(fd) => rustix::fs::fchmod(&fd, bits),
                // Unreadable (mode 0333): looked at without following, then changed by name.
                Err(rustix::io::Errno::ACCESS) if is_dir_at(&up, name) => {
                    rustix::fs::chmodat(&up, name, bits, AtFlags::empty())
                }
                Err(_) => continue,
            }
        };
        changed.map_err(|e| super::floor::fail("set mode", root, &dir.path, e))?;
    }
    Ok(())
}
