//! The guard of every step: what a planned path holds just before it is touched, against
//! what the plan expects there and what the step will leave, hashed only when kind and size
//! agree (so an oversize file in the way is never read).

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use snap_store::{EntryKind, ObjectId, ObjectWriter};

use super::floor::{fail, open_dir_at};
use super::swap::{self, PutBack, Refused};
use super::{DisplacedFile, Sides, WorkTree};
use crate::error::TreeError;
use crate::flat::{Node, modes_differ, split};
use crate::scan;

/// The guarded steps' shared state: the tree, and the paths left alone so far.
pub(super) struct Guarded<'a> {
    pub(super) tree: WorkTree<'a>,
    pub(super) root_fd: OwnedFd,
    /// Computes ids of what the working tree holds, storing nothing.
    pub(super) hasher: ObjectWriter<'a>,
    pub(super) sides: Sides<'a>,
    pub(super) kept: std::sync::Mutex<Vec<Vec<u8>>>,
    /// Kept directories the plan may still write into (reported with `kept`).
    pub(super) named: std::sync::Mutex<Vec<Vec<u8>>>,
    pub(super) differs: std::sync::Mutex<Vec<Vec<u8>>>,
    /// Versions written by another process that steps displaced (see [`Guarded::settle`]).
    pub(super) displaced: std::sync::Mutex<Vec<DisplacedFile>>,
    /// How what the plan writes is made durable.
    pub(super) durability: super::Durability,
    /// Stat cache rows for large files written here (vouched for by `write.rs`).
    pub(super) vouched: std::sync::Mutex<Vec<(Vec<u8>, snap_store::StatEntry)>>,
}

/// What a planned path holds now, against what the plan expects there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Found {
    /// What the plan expects: the step may be taken.
    Expected,
    /// The step's result: nothing to do.
    Done,
    /// A file or symlink the store could hold: saved by the caller, then replaced.
    Differs,
    /// Anything else (a directory, an oversize or special file): kept as it is.
    Foreign,
}

impl Guarded<'_> {
    pub(super) fn note(&self, list: &std::sync::Mutex<Vec<Vec<u8>>>, path: &[u8]) {
        list.lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(path.to_vec());
    }

    pub(super) fn keep(&self, path: &[u8]) {
        self.note(&self.kept, path);
    }

    /// True when `path` or a directory above it was kept: nothing may be written below.
    pub(super) fn under_kept(&self, path: &[u8]) -> bool {
        let kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let mut at = path;
        while !at.is_empty() {
            if kept.iter().any(|k| k.as_slice() == at) {
                return true;
            }
            at = split(at).0;
        }
        false
    }

    /// What `path` holds against `expected` (the plan's view) and `done` (the step's result).
    pub(super) fn found(
        &self,
        path: &[u8],
        expected: Option<&Node>,
        done: Option<&Node>,
    ) -> Result<Found, TreeError> {
        let (parent, name) = split(path);
        let dir = match open_dir_at(&self.root_fd, parent) {
            Ok(dir) => dir,
            // No directory there, so nothing at the path either.
            Err(Errno::NOENT) => return Ok(classify(&OnDisk::Absent, expected, done, u64::MAX)),
            // Something the interrupted move itself may have put there stands where a
            // directory above the path was: a file, or the target's own symlink (a
            // roll-forward of a directory replaced by either finds it). Nothing is at the path,
            // so a removal is done; whatever was to be written there is kept, as under a kept
            // directory. Any other symlink there (a swap after planning) is refused below.
            Err(Errno::NOTDIR | Errno::LOOP) if self.blocked_by_the_plan(parent) => {
                return Ok(match done {
                    None => Found::Done,
                    Some(_) => Found::Foreign,
                });
            }
            Err(e) => return Err(fail("open directory", self.tree.root, parent, e)),
        };
        let name = OsStr::from_bytes(name);
        let here =
            on_disk(&dir, name, &self.hasher).map_err(|e| fail("read", self.tree.root, path, e))?;
        Ok(classify(&here, expected, done, self.tree.max_file_size))
    }
}

impl Guarded<'_> {
    /// True when the first component of `dir` that is not a directory is one the plan may
    /// have put there: a file, or a symlink equal to the one the target holds at that path.
    /// Neither is followed.
    fn blocked_by_the_plan(&self, dir: &[u8]) -> bool {
        match blocker(&self.root_fd, dir) {
            Blocker::File => true,
            Blocker::Symlink(at) => self.holds_the_target(at),
            Blocker::Unknown => false,
        }
    }

    /// True when `path` (whose parent is a directory) holds the target's symlink there.
    fn holds_the_target(&self, path: &[u8]) -> bool {
        let Some(want) = (self.sides.after.get(path)).filter(|n| n.kind == EntryKind::Symlink)
        else {
            return false;
        };
        let (parent, name) = split(path);
        let Ok(dir) = open_dir_at(&self.root_fd, parent) else {
            return false;
        };
        on_disk(&dir, OsStr::from_bytes(name), &self.hasher)
            .is_ok_and(|here| same(&here, Some(want)))
    }
}

/// The first component of a path that is not a directory.
enum Blocker<'p> {
    File,
    Symlink(&'p [u8]),
    /// Every component is a directory, or one could not be looked at.
    Unknown,
}

/// What stands in the way of `dir`. Each prefix is looked at without following its last
/// component, and only after every shorter one was found a directory, so no symlink is
/// followed on the way.
fn blocker<'p>(root_fd: &OwnedFd, dir: &'p [u8]) -> Blocker<'p> {
    let mut end = 0;
    while end < dir.len() {
        end = (dir[end + 1..].iter().position(|&c| c == b'/')).map_or(dir.len(), |i| end + 1 + i);
        let prefix = &dir[..end];
        let Ok(st) = rustix::fs::statat(
            root_fd,
            OsStr::from_bytes(prefix),
            AtFlags::SYMLINK_NOFOLLOW,
        ) else {
            return Blocker::Unknown;
        };
        match rustix::fs::FileType::from_raw_mode(st.st_mode) {
            rustix::fs::FileType::Directory => continue,
            rustix::fs::FileType::Symlink => return Blocker::Symlink(prefix),
            _ => return Blocker::File,
        }
    }
    Blocker::Unknown
}

/// What a path holding `here` is to a step expecting `expected` and producing `done`.
pub(super) fn classify(
    here: &OnDisk<'_>,
    expected: Option<&Node>,
    done: Option<&Node>,
    max: u64,
) -> Found {
    {
        match here {
            _ if same(here, done) => Found::Done,
            _ if same(here, expected) => Found::Expected,
            // Saved first only if it can be read: a file snap may not read is kept.
            OnDisk::Entry(kind, size, _, lazy) if *kind != EntryKind::Dir && *size <= max => {
                if lazy.id().is_some() {
                    Found::Differs
                } else {
                    Found::Foreign
                }
            }
            _ => Found::Foreign,
        }
    }
}

impl Guarded<'_> {
    /// Takes a step if `path` holds what the plan expects; records it otherwise.
    pub(super) fn guard(
        &self,
        path: &[u8],
        expected: Option<&Node>,
        done: Option<&Node>,
        step: impl FnOnce() -> Result<bool, TreeError>,
    ) -> Result<bool, TreeError> {
        match self.found(path, expected, done)? {
            Found::Expected => step(),
            Found::Done => Ok(false),
            Found::Differs => {
                self.note(&self.differs, path);
                Ok(false)
            }
            Found::Foreign => {
                self.keep(path);
                Ok(false)
            }
        }
    }
}

/// What a path holds: nothing, or an entry of a kind, size and content id (the id is
/// computed only when asked for, see [`same`]).
#[derive(Debug)]
pub(super) enum OnDisk<'a> {
    Absent,
    /// Kind, size, permission bits, content id.
    Entry(EntryKind, u64, u16, Lazy<'a>),
    Special,
}

/// A path's content id, computed on first use.
pub(super) struct Lazy<'a> {
    pub(super) dir: &'a OwnedFd,
    pub(super) name: &'a OsStr,
    pub(super) hasher: &'a ObjectWriter<'a>,
    pub(super) kind: EntryKind,
    pub(super) id: std::cell::OnceCell<Option<ObjectId>>,
}

impl std::fmt::Debug for Lazy<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lazy")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl Lazy<'_> {
    /// The content id; `None` when the content could not be read.
    pub(super) fn id(&self) -> Option<ObjectId> {
        *self.id.get_or_init(|| match self.kind {
            EntryKind::Symlink => rustix::fs::readlinkat(self.dir, self.name, Vec::new())
                .ok()
                .and_then(|t| {
                    self.hasher
                        .put(snap_store::ObjectKind::Chunk, t.as_bytes())
                        .ok()
                }),
            _ => content_id_at(self.dir, self.name, self.hasher),
        })
    }
}

/// True when what is on disk is `want` (for `None`: nothing). Kind and size are compared
/// first; content is read and hashed only when they agree, so an oversize file in the way
/// is never read.
pub(super) fn same(here: &OnDisk<'_>, want: Option<&Node>) -> bool {
    match (here, want) {
        (OnDisk::Absent, None) => true,
        (OnDisk::Entry(kind, size, mode, lazy), Some(want)) => {
            // A directory's mode is set after its contents (`Plan::set_modes`), not here.
            let mode_ok = *kind == EntryKind::Dir || !modes_differ(Some(*mode), want.mode);
            *kind == want.kind
                && mode_ok
                && (*kind == EntryKind::Dir || (*size == want.size && lazy.id() == Some(want.id)))
        }
        _ => false,
    }
}

/// What `name` in `dir` is now, without following a symlink.
pub(super) fn on_disk<'a>(
    dir: &'a OwnedFd,
    name: &'a OsStr,
    hasher: &'a ObjectWriter<'a>,
) -> Result<OnDisk<'a>, Errno> {
    use rustix::fs::FileType;
    let st = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(OnDisk::Absent),
        Err(e) => return Err(e),
    };
    let kind = match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => EntryKind::Dir,
        FileType::Symlink => EntryKind::Symlink,
        FileType::RegularFile if st.st_mode & 0o100 != 0 => EntryKind::Executable,
        FileType::RegularFile => EntryKind::File,
        _ => return Ok(OnDisk::Special),
    };
    let lazy = Lazy {
        dir,
        name,
        hasher,
        kind,
        id: std::cell::OnceCell::new(),
    };
    let mode = crate::flat::permission_bits(st.st_mode);
    Ok(OnDisk::Entry(kind, st.st_size as u64, mode, lazy))
}

/// The content id of regular file `name` in `dir`, never through a symlink: read whole or
/// streamed by its size (see [`scan::store_reader`]), so a large file is hashed in the
/// memory of a few chunks. Another process may hold the file open and write it while it is
/// read (a displaced version is judged by this id, and unlinked when it matches): `None`
/// unless its stat is the same after the read, and, for a file changed in the clock's
/// current tick, a second read gives the same id.
fn content_id_at(dir: &OwnedFd, name: &OsStr, hasher: &ObjectWriter<'_>) -> Option<ObjectId> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::empty()).ok()?;
    let before = super::clock::stat_of(&fd)?;
    let racy = super::clock::fs_clock(dir).is_none_or(|at| !super::clock::settled(&before, at));
    let mut file = std::fs::File::from(fd);
    let at = std::path::Path::new(name);
    let id = scan::store_reader(hasher, &mut file, before.size, at)
        .ok()?
        .id;
    if racy {
        use std::io::Seek;
        file.seek(std::io::SeekFrom::Start(0)).ok()?;
        let again = scan::store_reader(hasher, &mut file, before.size, at)
            .ok()?
            .id;
        (again == id).then_some(())?;
    }
    (super::clock::stat_of(&file)? == before).then_some(id)
}

/// What a step put at its path before settling what it displaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Wrote<'n> {
    /// A removal: nothing stands at the path now.
    Nothing,
    /// The target's file or symlink.
    File(&'n Node),
}

impl Guarded<'_> {
    /// Settles the version a step displaced to `temp` in `dir`: unlinked when it is exactly
    /// what the plan expected there (so already in the store), handed to the caller to store
    /// when it is another file or symlink the store can hold, and put back, with the path
    /// kept, when it is anything else: a directory or special file another process made
    /// there, a file grown past `max_file_size`, or one snap may not read (so the caller's
    /// save cannot fail on it and leave it hidden under the temporary name).
    pub(super) fn settle(
        &self,
        dir: &OwnedFd,
        path: &[u8],
        temp: &str,
        expected: Option<&Node>,
        wrote: Wrote<'_>,
    ) -> Result<(), TreeError> {
        let here = on_disk(dir, OsStr::new(temp), &self.hasher)
            .map_err(|e| fail("read", self.tree.root, path, e))?;
        if same(&here, expected) {
            return rustix::fs::unlinkat(dir, temp, AtFlags::empty())
                .map_err(|e| fail("remove", self.tree.root, path, e));
        }
        if self.storable(&here) {
            let temp = crate::flat::join(split(path).0, temp.as_bytes());
            let file = DisplacedFile {
                path: path.to_vec(),
                temp,
            };
            self.displaced
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(file);
            return Ok(());
        }
        self.put_back(dir, path, temp, wrote)
    }

    /// Puts what `temp` holds back at `path`, which is then kept. The step's own file, if it
    /// wrote one, is settled in turn: unlinked only if it still is what the step wrote.
    fn put_back(
        &self,
        dir: &OwnedFd,
        path: &[u8],
        temp: &str,
        wrote: Wrote<'_>,
    ) -> Result<(), TreeError> {
        let name = OsStr::from_bytes(split(path).1);
        let over = match wrote {
            Wrote::Nothing => PutBack::IntoEmpty,
            Wrote::File(_) => PutBack::OverStepsFile,
        };
        let moved = swap::put_back(dir, temp, name, over, self.tree.op).map_err(|r| {
            let e = match r {
                Refused::Occupied => Errno::EXIST,
                Refused::Failed(e) => e,
            };
            fail("put back", self.tree.root, path, e)
        })?;
        self.keep(path);
        match (moved, wrote) {
            (Some(ours), Wrote::File(node)) => {
                self.settle(dir, path, &ours, Some(node), Wrote::Nothing)
            }
            _ => Ok(()),
        }
    }
}

impl Guarded<'_> {
    /// True when `here` is a file or symlink the store would hold: within `max_file_size`,
    /// and readable now (its id computed, so the caller's save reads it a second time; a
    /// displaced version is rare, so the double read is not worth a cache).
    fn storable(&self, here: &OnDisk<'_>) -> bool {
        match here {
            OnDisk::Entry(kind, size, _, lazy) => {
                *kind != EntryKind::Dir && *size <= self.tree.max_file_size && lazy.id().is_some()
            }
            _ => false,
        }
    }
}
