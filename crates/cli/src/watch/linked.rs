//! The files with more than one name, as the watcher knows them (docs/SAFETY.md, "What the
//! watcher cannot see"). A write raises an inotify event only in the directory of the name
//! it went through: written through a second name in another directory, or outside the
//! workspace, a file changes with no event in its own directory. So every directory holding
//! a regular file whose link count is above one is named in every answer: each save reads
//! it again, each file vouched for only by its own stat-cache row, as the whole walk does.
//!
//! The list is learned where it is cheap: each walk the watcher makes stats the regular files
//! of each directory it watches (a save's walk stats them anyway), and a name made or moved
//! into a watched directory is stat-ed when its event is read. A new name of an inode the
//! watcher did not know has several names means another name lies somewhere it has not
//! looked: the watcher walks the whole tree again to find its directory.

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, FileType};

/// A file's identity: its device and inode numbers.
pub(crate) type Inode = (u64, u64);

/// What one directory's scan found.
#[derive(Debug)]
pub(crate) enum DirLinks {
    /// The inodes of its regular files with more than one name (none: the directory is not
    /// one to name).
    Found(Vec<Inode>),
    /// It could not be listed or stat-ed: named in every answer, being in doubt.
    Unknown,
}

/// The directories holding files with more than one name, and those files' inodes.
#[derive(Debug, Default)]
pub(crate) struct Linked {
    dirs: BTreeSet<Vec<u8>>,
    inodes: HashSet<Inode>,
    /// Set when a name of an inode not known appeared: the whole tree is to be looked at
    /// again once the queue is read.
    pub(crate) relearn: bool,
}

impl Linked {
    /// Forgets everything: a walk of the whole tree follows.
    pub(crate) fn clear(&mut self) {
        self.dirs.clear();
        self.inodes.clear();
    }

    /// Takes in what scanning `dir` found.
    pub(crate) fn add(&mut self, dir: Vec<u8>, links: DirLinks) {
        match links {
            DirLinks::Found(inodes) if inodes.is_empty() => {}
            DirLinks::Found(inodes) => {
                self.inodes.extend(inodes);
                self.dirs.insert(dir);
            }
            DirLinks::Unknown => {
                self.dirs.insert(dir);
            }
        }
    }

    /// Drops the directories at or under `rel` (gone, or no longer watched); their files'
    /// inodes stay known, which only spares a new look when one comes back.
    pub(crate) fn forget_under(&mut self, rel: &[u8]) {
        self.dirs
            .retain(|dir| !snap_tree::flat::is_within(dir, rel));
    }

    /// The directories to name in every answer.
    pub(crate) fn dirs(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.dirs.iter()
    }

    /// A name appeared in watched directory `dir` (made, or moved in) and stats as `st`: a
    /// regular file with more than one name makes `dir` one to name, and asks for a new look
    /// at the whole tree when its inode was not known.
    pub(crate) fn on_new_name(&mut self, dir: &[u8], st: &rustix::fs::Stat) {
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile || st.st_nlink < 2 {
            return;
        }
        self.dirs.insert(dir.to_vec());
        if self.inodes.insert(inode_of(st)) {
            self.relearn = true;
        }
    }
}

fn inode_of(st: &rustix::fs::Stat) -> Inode {
    (st.st_dev, st.st_ino)
}

/// The regular files with more than one name in the directory open as `dir`.
pub(crate) fn scan_dir(dir: &OwnedFd) -> DirLinks {
    let Ok(entries) = rustix::fs::Dir::read_from(dir) else {
        return DirLinks::Unknown;
    };
    let mut found = Vec::new();
    for entry in entries {
        let Ok(entry) = entry else {
            return DirLinks::Unknown;
        };
        let name = entry.file_name().to_bytes();
        let maybe_file = matches!(entry.file_type(), FileType::RegularFile | FileType::Unknown);
        if !maybe_file || name == b"." || name == b".." {
            continue;
        }
        match rustix::fs::statat(dir, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => {
                if st.st_nlink > 1 {
                    found.push(inode_of(&st));
                }
            }
            Ok(_) | Err(rustix::io::Errno::NOENT) => {}
            Err(_) => return DirLinks::Unknown,
        }
    }
    DirLinks::Found(found)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn scan(path: &std::path::Path) -> DirLinks {
        let fd = rustix::fs::open(
            path,
            rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
            rustix::fs::Mode::empty(),
        )
        .unwrap();
        scan_dir(&fd)
    }

    #[test]
    fn a_directory_holding_a_second_name_is_named_and_a_new_inode_asks_for_a_look() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::create_dir_all(&a).unwrap();
        std::fs::create_dir_all(&b).unwrap();
        std::fs::write(a.join("one"), b"1").unwrap();
        std::fs::write(a.join("f"), b"2").unwrap();
        assert!(matches!(scan(&a), DirLinks::Found(ref v) if v.is_empty()));
        std::fs::hard_link(a.join("f"), b.join("g")).unwrap();
        let mut linked = Linked::default();
        linked.add(b"a".to_vec(), scan(&a));
        assert_eq!(linked.dirs().collect::<Vec<_>>(), [&b"a".to_vec()]);
        // A new name of a known inode: no new look needed.
        let st = rustix::fs::lstat(b.join("g")).unwrap();
        linked.on_new_name(b"b", &st);
        assert!(!linked.relearn);
        assert_eq!(linked.dirs().count(), 2);
        // One of an inode not known: where is its other name?
        std::fs::write(b.join("h"), b"3").unwrap();
        std::fs::hard_link(b.join("h"), dir.path().join("outside")).unwrap();
        linked.on_new_name(b"b", &rustix::fs::lstat(b.join("h")).unwrap());
        assert!(linked.relearn);
        linked.clear();
        assert_eq!(linked.dirs().count(), 0);
    }
}
