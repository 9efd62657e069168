//! A walk that starts from chosen directories instead of the root: what a capture from a
//! change source reads again (the directories a watcher named, alone or with everything
//! under them). Each starting directory is reached from the root component by component,
//! with `O_NOFOLLOW` and the ignore rules of every directory above it, read once per call
//! however many starting directories share them.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use snap_store::PathMap;

use super::{DIR_FLAGS, Descend, DirCacheView, Job, OnDir, WalkStart, stat_at, walk_jobs};
use crate::config::Config;
use crate::error::TreeError;
use crate::paths::{SNAPIGNORE, abs};
use crate::scan::rules::{GITIGNORE, Rules, always_left_out, read_rules, ruled_out};
use crate::scan::walk::Walk;

/// What a walk from chosen directories found.
#[derive(Debug, Default)]
pub struct Seeded {
    /// The walk of the directories that are there (the directory rule not applied).
    pub walk: Walk,
    /// The starting directories that are not tracked directories now: gone, not a
    /// directory, or left out by the rules (themselves or a directory above them).
    pub gone: Vec<Vec<u8>>,
}

/// Walks `root` from each of `dirs` (workspace-relative), as the whole walk would reach
/// them: same rules, same stats; `descend` says whether their subdirectories are walked
/// too. Nothing is taken from the directory cache.
pub fn walk_seeded(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    dirs: &[Vec<u8>],
    descend: Descend,
) -> Result<Seeded, TreeError> {
    walk_from(
        root,
        config,
        skip,
        dirs,
        WalkStartKind {
            descend,
            on_dir: None,
        },
    )
}

/// Walks the directories under `under` (itself included) that the whole walk enters,
/// calling `on_dir` with each before reading it; regular files are not looked at.
pub fn walk_watching(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    under: &[u8],
    on_dir: OnDir<'_>,
) -> Result<Seeded, TreeError> {
    let how = WalkStartKind {
        descend: Descend::DirectoriesOnly,
        on_dir: Some(on_dir),
    };
    walk_from(root, config, skip, &[under.to_vec()], how)
}

/// How a walk from chosen directories goes.
struct WalkStartKind<'a> {
    descend: Descend,
    on_dir: Option<OnDir<'a>>,
}

fn walk_from(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    dirs: &[Vec<u8>],
    how: WalkStartKind<'_>,
) -> Result<Seeded, TreeError> {
    let mut rules = PathMap::default();
    let mut jobs = Vec::with_capacity(dirs.len());
    let mut gone = Vec::new();
    for rel in dirs {
        match seed_at(root, config, skip, rel, &mut rules)? {
            Some(job) => jobs.push(job),
            None => gone.push(rel.clone()),
        }
    }
    let records = PathMap::default();
    let cache = DirCacheView {
        records: &records,
        fs_now_ns: i64::MIN,
    };
    // Reading directories alone is one `getdents` each: threads pay off past a few.
    let threads = match (how.descend, jobs.len()) {
        (Descend::Everything | Descend::DirectoriesOnly, _) => 2,
        (Descend::Nothing, n) if n > 16 => 2,
        (Descend::Nothing, _) => 1,
    };
    let start = WalkStart {
        jobs,
        descend: how.descend,
        on_dir: how.on_dir,
    };
    let walk = walk_jobs(root, config, skip, cache, threads, start)?;
    Ok(Seeded { walk, gone })
}

/// The job that reads directory `rel`, or `None` when it is not a directory the walk
/// would enter. `rules` holds each directory's own rules by path, filled as they are read.
fn seed_at(
    root: &Path,
    config: &Config,
    skip: Option<&Path>,
    rel: &[u8],
    rules: &mut PathMap<Vec<u8>, Arc<Rules>>,
) -> Result<Option<Job>, TreeError> {
    let mut fd = rustix::fs::open(root, DIR_FLAGS.difference(OFlags::NOFOLLOW), Mode::empty())
        .map_err(|e| TreeError::io(root, e.into()))?;
    let mut parent = Arc::new(Rules::none());
    let mut at: Vec<u8> = Vec::new();
    for name in rel.split(|&b| b == b'/').filter(|_| !rel.is_empty()) {
        let here = rules_of(root, config, &fd, &at, &parent, rules);
        let next = crate::flat::join(&at, name);
        let next_abs = abs(root, &next);
        if always_left_out(&at, name)
            || skip.is_some_and(|skip| skip == next_abs)
            || ruled_out(config, &here, &next, &next_abs, true)
        {
            return Ok(None);
        }
        fd = match open_dir(&fd, name) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP | Errno::ACCESS | Errno::PERM) => {
                return Ok(None);
            }
            Err(e) => return Err(TreeError::io(next_abs, e.into())),
        };
        (parent, at) = (here, next);
    }
    Ok(Some(Job {
        fd,
        rel: rel.to_vec(),
        parent_rules: parent,
        rules_kept: false,
    }))
}

fn open_dir(fd: &OwnedFd, name: &[u8]) -> rustix::io::Result<OwnedFd> {
    rustix::fs::openat(fd, OsStr::from_bytes(name), DIR_FLAGS, Mode::empty())
}

/// The rules in force inside directory `at` (open as `fd`, its parent's rules `parent`),
/// read once per call.
fn rules_of(
    root: &Path,
    config: &Config,
    fd: &OwnedFd,
    at: &[u8],
    parent: &Arc<Rules>,
    cache: &mut PathMap<Vec<u8>, Arc<Rules>>,
) -> Arc<Rules> {
    if let Some(rules) = cache.get(at) {
        return Arc::clone(rules);
    }
    let present = |file: &str| stat_at(fd, file).is_some();
    let rules = Arc::new(read_rules(
        &abs(root, at),
        present(GITIGNORE),
        present(SNAPIGNORE),
        config.max_ignore_file_bytes,
        parent,
    ));
    cache.insert(at.to_vec(), Arc::clone(&rules));
    rules
}
