//! The watcher's check on itself: a silent watcher (events dropped by the kernel without an
//! overflow, a filesystem that reports only some writes) would answer "nothing changed"
//! for a directory that did. So every few seconds of quiet, the watcher stats each watched
//! directory again and compares it with the stamp taken when its watch was added or at its
//! last event: a directory whose stamp moved with no event for it means the watcher cannot
//! vouch for anything, and it starts a new epoch (the next save walks everything) and says so
//! in its log, its status and `snap doctor`. A directory's times move when an entry is made,
//! removed or renamed in it, not when a file's content changes: what the check catches.

use std::collections::{HashMap, HashSet};
use std::path::Path;

/// What a directory's stat says of its entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Stamp {
    mtime: (i64, i64),
    ctime: (i64, i64),
    ino: u64,
}

impl Stamp {
    pub(crate) fn of(st: &rustix::fs::Stat) -> Stamp {
        Stamp {
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
            ino: st.st_ino,
        }
    }
}

/// Each watch's stamp, and the watches that had events since.
#[derive(Debug, Default)]
pub(crate) struct Stamps {
    by_wd: HashMap<i32, Stamp>,
    touched: HashSet<i32>,
    /// Checks run, and directories found changed without an event.
    pub(crate) checks: u64,
    pub(crate) mismatches: u64,
    pub(crate) last_mismatch: Option<String>,
}

impl Stamps {
    pub(crate) fn set(&mut self, wd: i32, stamp: Stamp) {
        self.by_wd.insert(wd, stamp);
        self.touched.remove(&wd);
    }

    pub(crate) fn touch(&mut self, wd: i32) {
        self.touched.insert(wd);
    }

    pub(crate) fn was_touched(&self, wd: i32) -> bool {
        self.touched.contains(&wd)
    }

    /// Drops every stamp: the next check takes them all again (a new epoch's baseline).
    pub(crate) fn forget_all(&mut self) {
        self.by_wd.clear();
        self.touched.clear();
    }

    pub(crate) fn remove(&mut self, wd: i32) {
        self.by_wd.remove(&wd);
        self.touched.remove(&wd);
    }

    /// The watched directories (by watch and path) whose stamp moved without an event;
    /// stamps of directories that had events are taken again.
    pub(crate) fn moved_silently(
        &mut self,
        root: &Path,
        paths: &HashMap<i32, Vec<u8>>,
    ) -> Vec<(i32, Vec<u8>)> {
        self.checks += 1;
        let mut moved = Vec::new();
        for (wd, path) in paths {
            let abs = super::paths::snap_abs(root, path);
            let Ok(st) = rustix::fs::lstat(&abs) else {
                continue;
            };
            let now = Stamp::of(&st);
            match (self.touched.remove(wd), self.by_wd.get(wd)) {
                (true, _) | (false, None) => {
                    self.by_wd.insert(*wd, now);
                }
                (false, Some(stamp)) if *stamp != now => moved.push((*wd, path.clone())),
                (false, Some(_)) => {}
            }
        }
        moved
    }
}
