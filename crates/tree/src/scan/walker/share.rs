//! One directory's share of a walk, read again on its own: what a move's walk memo
//! (FORMAT.md 6.4) needs for each directory the move changed.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use snap_store::EntryKind;

use super::{DIR_FLAGS, DirCacheView, Item, Job, Shared, own_tally, stat_at, visit_read};
use crate::config::Config;
use crate::error::TreeError;
use crate::paths::{SNAPIGNORE, abs};
use crate::scan::rules::{GITIGNORE, Rules, read_rules};
use crate::scan::walk::{Walk, WalkSum};

/// One directory's own share of a walk, read again after a move changed it: what the walk
/// would add for it now (its entries, not theirs).
#[derive(Debug)]
pub struct DirShare {
    /// Its share of the walk's digest.
    pub sum: WalkSum,
    /// The tracked entries it holds (directories, files, symlinks): name and kind.
    pub tracked: Vec<(Vec<u8>, EntryKind)>,
    /// Its permission bits.
    pub mode: u16,
    /// It holds something the walk leaves out (ignored, oversize, special).
    pub left_out: bool,
    /// A symlink in it could not be stat-ed.
    pub inexact: bool,
}

/// Reads directory `rel` of `root` as [`walk`] reads it (same ignore rules, from the
/// ignore files of every directory above it, same stats), without entering its
/// subdirectories; `None` when it is not a directory there. Each directory on the way is
/// opened with `O_NOFOLLOW`.
pub fn dir_share(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    rel: &[u8],
) -> Result<Option<DirShare>, TreeError> {
    let Some(job) = job_at(root, rel, config.max_ignore_file_bytes)? else {
        return Ok(None);
    };
    let records = snap_store::PathMap::default();
    let shared = Shared {
        root,
        config,
        skip,
        cache: DirCacheView {
            records: &records,
            fs_now_ns: i64::MIN,
        },
        queue: Mutex::new(Vec::new()),
        pending: AtomicUsize::new(0),
        descend: super::Descend::Nothing,
        on_dir: None,
        found: Mutex::new(Walk::default()),
        failure: Mutex::new(None),
    };
    let visited = visit_read(&shared, &job, &abs(root, rel), None)?;
    let tally = own_tally(rel, &visited);
    let tracked = visited
        .items
        .iter()
        .filter_map(|item| {
            let (path, kind) = match item {
                Item::Dir(path) => (path, EntryKind::Dir),
                Item::Link(path, _) => (path, EntryKind::Symlink),
                Item::File(path, kind, _) => (path, *kind),
                _ => return None,
            };
            Some((crate::flat::split(path).1.to_vec(), kind))
        })
        .collect();
    Ok(Some(DirShare {
        sum: tally.sum,
        tracked,
        mode: visited.mode,
        left_out: tally.left_out,
        inexact: tally.inexact,
    }))
}

/// The job that reads directory `rel`: opened component by component, with the rules of
/// every directory above it read as the walk reads them. `None` when a component is gone or
/// not a directory.
pub(super) fn job_at(root: &Path, rel: &[u8], limit: u64) -> Result<Option<Job>, TreeError> {
    let mut fd = rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty())
        .map_err(|e| TreeError::io(root, e.into()))?;
    let mut rules = Arc::new(Rules::none());
    let mut at: Vec<u8> = Vec::new();
    for name in rel.split(|&b| b == b'/').filter(|_| !rel.is_empty()) {
        let present = |file: &str| stat_at(&fd, file).is_some();
        let here = read_rules(
            &abs(root, &at),
            present(GITIGNORE),
            present(SNAPIGNORE),
            limit,
            &rules,
        );
        rules = Arc::new(here);
        at = crate::flat::join(&at, name);
        fd = match rustix::fs::openat(&fd, OsStr::from_bytes(name), DIR_FLAGS, Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => return Ok(None),
            Err(e) => return Err(TreeError::io(abs(root, &at), e.into())),
        };
    }
    Ok(Some(Job {
        fd,
        rel: rel.to_vec(),
        parent_rules: rules,
        rules_kept: false,
    }))
}
