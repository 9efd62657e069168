//! A directory served from its directory-cache record (FORMAT.md 6.3): trusted only while its
//! stat, its ignore files and each listed entry still match; anything else reads it again.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode};
use rustix::io::Errno;
use snap_store::{DirRecord, ListedKind};

use super::{
    DIR_FLAGS, Item, Job, Shared, Visited, dir_stat, file_item, note_refused, same_rule_file,
    stat_at,
};
use crate::error::TreeError;
use crate::paths::{SNAPIGNORE, abs};
use crate::scan::rules::{GITIGNORE, read_rules};

/// A directory from its cached record: `None` when the record is no longer good (the
/// directory, one of its ignore files or one of its listed entries changed), and the
/// directory must be read.
pub(super) fn visit_listed(
    shared: &Shared<'_>,
    job: &Job,
    abs_dir: &Path,
    record: &DirRecord<'_>,
) -> Result<Option<Visited>, TreeError> {
    let head = &record.header;
    let stat = dir_stat(&job.fd, abs_dir)?;
    if !head.stat.still(&stat, head.written_ns) {
        return Ok(None);
    }
    for (file, old) in [(GITIGNORE, head.gitignore), (SNAPIGNORE, head.snapignore)] {
        // An ignore file absent then is absent now: creating it would have changed the
        // directory's stat.
        if old.is_some() && !same_rule_file(old, stat_at(&job.fd, file), head.written_ns) {
            return Ok(None);
        }
    }
    let rules = Arc::new(read_rules(
        abs_dir,
        head.gitignore.is_some(),
        head.snapignore.is_some(),
        shared.config.max_ignore_file_bytes,
        &job.parent_rules,
    ));
    note_refused(shared, &rules);
    let mut visited = Visited {
        mode: crate::flat::permission_bits(stat.mode),
        ..Visited::default()
    };
    visited.items.reserve(record.len());
    for (name, kind) in record.entries() {
        let rel = crate::flat::join(&job.rel, name);
        let item = match kind {
            ListedKind::Symlink => Item::Link(rel, stat_at(&job.fd, name)),
            ListedKind::File => match listed_file(shared, job, name, rel)? {
                Some(item) => item,
                None => return Ok(None),
            },
            ListedKind::Dir => match open_dir(shared, job, name, &rel)? {
                Some(fd) => {
                    visited.jobs.push(Job {
                        fd,
                        rel: rel.clone(),
                        parent_rules: Arc::clone(&rules),
                        rules_kept: true,
                    });
                    Item::Dir(rel)
                }
                None => return Ok(None),
            },
        };
        visited.items.push(item);
    }
    visited
        .items
        .extend((0..head.special).map(|_| Item::Special));
    if head.left_out {
        visited.items.push(Item::LeftOut);
    }
    Ok(Some(visited))
}

/// A listed file stat-ed now; `None` when it is gone or no longer a regular file.
fn listed_file(
    shared: &Shared<'_>,
    job: &Job,
    name: &[u8],
    rel: Vec<u8>,
) -> Result<Option<Item>, TreeError> {
    match rustix::fs::statat(&job.fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
            Ok(Some(file_item(rel, &st, shared.config.max_file_size)))
        }
        Ok(_) | Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(TreeError::io(abs(shared.root, &rel), e.into())),
    }
}

/// Opens a subdirectory; `None` when it is gone, no longer a directory, or may not be
/// opened now (the directory holding it is then read again, which names it).
fn open_dir(
    shared: &Shared<'_>,
    job: &Job,
    name: &[u8],
    rel: &[u8],
) -> Result<Option<OwnedFd>, TreeError> {
    match rustix::fs::openat(&job.fd, OsStr::from_bytes(name), DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::ACCESS | Errno::PERM) => Ok(None),
        Err(e) => Err(TreeError::io(abs(shared.root, rel), e.into())),
    }
}
