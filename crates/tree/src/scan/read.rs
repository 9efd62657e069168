//! Reading one entry of the working tree into the store: a file read stably against a
//! writer racing the read (re-read while its stat moves, a racy file read twice, a large
//! one streamed), a symlink's target, a directory's node.

use std::fs::{File, Metadata};
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use snap_store::{EntryKind, ObjectId, ObjectKind, ObjectWriter, StatEntry, StatKey};

use super::content::{Content, STREAM_THRESHOLD, store_content_against, store_stream};
use crate::error::TreeError;
use crate::flat::{Node, UNBUILT};
use crate::paths::abs;

/// How often a file that keeps changing is re-read before the save gives up.
const READ_ATTEMPTS: usize = 5;
/// How often a streamed file is: each read stores what it read, and may take seconds.
const STREAM_ATTEMPTS: usize = 2;

/// How [`store_entry`] reads and stores a regular file.
#[derive(Clone, Copy)]
pub(super) struct FileStore<'r> {
    /// The workspace root, which every read opens its path beneath (see [`crate::inside`]).
    pub(super) root_fd: &'r std::os::fd::OwnedFd,
    /// Files larger than this are left out.
    pub(super) max: u64,
    /// The scan's filesystem clock (the racy rule of [`read_stable`]).
    pub(super) fs_now_ns: i64,
    /// The content this path had before, to store a changed file against.
    pub(super) base: Option<ObjectId>,
}

/// Stores what `rel` holds now (a directory, symlink or file), read stably; `None` when it
/// is gone.
pub(super) fn store_entry(
    root: &Path,
    rel: Vec<u8>,
    kind: EntryKind,
    writer: &ObjectWriter<'_>,
    file: FileStore,
) -> Result<Option<StoredEntry>, TreeError> {
    let root_fd = file.root_fd;
    let path = abs(root, &rel);
    match kind {
        EntryKind::Dir => Ok(Some((
            rel,
            Node {
                kind,
                size: 0,
                id: UNBUILT,
                // The directory's own stat comes with its visit: see `Walk::dir_modes`.
                mode: None,
            },
            None,
            None,
        ))),
        EntryKind::Symlink => match crate::inside::read_link(root_fd, &rel) {
            Ok(target) => {
                let bytes = target.as_slice();
                let node = Node {
                    kind,
                    size: bytes.len() as u64,
                    id: writer.put(ObjectKind::Chunk, bytes)?,
                    mode: None,
                };
                Ok(Some((rel, node, None, None)))
            }
            Err(e) if vanished(&e) => Ok(None),
            Err(e) => Err(TreeError::io(path, e)),
        },
        EntryKind::File | EntryKind::Executable => {
            let at = InTree {
                root_fd,
                rel: &rel,
                abs: &path,
            };
            let Some((content, meta)) = read_stable(at, file, writer)? else {
                return Ok(None);
            };
            let kind = file_kind(&meta);
            let entry = StatEntry::hashed(stat_key(&meta), kind, content.id, file.fs_now_ns);
            Ok(Some((
                rel,
                Node {
                    kind,
                    size: content.len,
                    id: content.id,
                    mode: Some(crate::flat::permission_bits(entry.key.mode)),
                },
                Some(entry),
                Some(entry.key),
            )))
        }
    }
}

/// Gone from its path: removed, or a directory on the way replaced by a symlink or a file
/// (`ELOOP`, `ENOTDIR`: reads never follow one, see [`crate::inside`]).
fn vanished(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.kind() == std::io::ErrorKind::NotFound
        || [Errno::LOOP, Errno::NOTDIR]
            .iter()
            .any(|x| e.raw_os_error() == Some(x.raw_os_error()))
}

/// Reads a regular file without following a symlink, re-reading while its stat changes under
/// the read. `None` if it vanished or stopped being a regular file; [`TreeError::StillWriting`]
/// if it kept changing, or grew past `max`.
///
/// Timestamps are coarse (a clock tick of several milliseconds), so a file modified in the
/// scan's own tick can change under the read without its stat showing it: such a racy file
/// is read twice and kept only when both reads agree.
/// A file of the working tree: opened by `rel` beneath `root_fd`, named by `abs` in errors.
#[derive(Clone, Copy)]
struct InTree<'a> {
    root_fd: &'a std::os::fd::OwnedFd,
    rel: &'a [u8],
    abs: &'a Path,
}

fn read_stable(
    at: InTree<'_>,
    file: FileStore<'_>,
    writer: &ObjectWriter<'_>,
) -> Result<Option<(Content, Metadata)>, TreeError> {
    let path = at.abs;
    let mut streamed = 0;
    for _ in 0..READ_ATTEMPTS {
        // Beneath the root, following no link, never blocking: a file swapped for a FIFO
        // since the walk opens and is refused below as no longer a regular file.
        let mut opened = match crate::inside::open_file(at.root_fd, at.rel) {
            Ok(f) => f,
            Err(e) if vanished(&e) => return Ok(None),
            Err(e) => return Err(TreeError::io(path, e)),
        };
        let before = opened.metadata().map_err(|e| TreeError::io(path, e))?;
        if !before.is_file() {
            return Ok(None);
        }
        // The walk found it within `max`: it grew past it since, so a job is writing it. Left
        // out and named, never taken for gone (which would record it deleted).
        if before.len() > file.max {
            return Err(still_writing(path));
        }
        let once = Once {
            file: &mut opened,
            before: &before,
            path,
            writer,
        };
        let read = match before.len() > STREAM_THRESHOLD {
            true if streamed == STREAM_ATTEMPTS => return Err(still_writing(path)),
            true => {
                streamed += 1;
                once.stream(file.fs_now_ns)?
            }
            false => once.read(file)?,
        };
        if read.is_some() {
            return Ok(read);
        }
    }
    match streamed {
        0 => Err(TreeError::Unstable {
            path: path.to_path_buf(),
        }),
        _ => Err(still_writing(path)),
    }
}

/// A large file that changed under each of [`STREAM_ATTEMPTS`] reads (a job writing it):
/// left out of this save and named, as a file that cannot be read is, rather than failing
/// every other change with it; a move keeps it as it is.
fn still_writing(path: &Path) -> TreeError {
    TreeError::StillWriting {
        path: path.to_path_buf(),
    }
}

/// One attempt of [`read_stable`] on an open file and the stat it had when opened.
struct Once<'a, 'w> {
    file: &'a mut File,
    before: &'a Metadata,
    path: &'a Path,
    writer: &'a ObjectWriter<'w>,
}

impl Once<'_, '_> {
    /// Reads the file whole, and stores it once the read is known stable. `None`: it changed.
    fn read(self, store: FileStore<'_>) -> Result<Option<(Content, Metadata)>, TreeError> {
        let path = self.path;
        let data = read_all(self.file, self.before.len(), path)?;
        let after = self.file.metadata().map_err(|e| TreeError::io(path, e))?;
        if !same_stat(self.before, &after) || data.len() as u64 != after.len() {
            return Ok(None);
        }
        let key = stat_key(&after);
        if key.mtime_ns.max(key.ctime_ns) >= store.fs_now_ns
            && !reads_again_the_same(self.file, &data, &after, path)?
        {
            return Ok(None);
        }
        let id = store_content_against(self.writer, &data, store.base)?;
        let len = data.len() as u64;
        Ok(Some((Content { id, len }, after)))
    }

    /// Streams the file into the store chunk by chunk, then checks the read was stable (a
    /// racy file is streamed twice, and kept when both give one id). An unstable read leaves
    /// its chunks unnamed, for gc. `None`: it changed.
    fn stream(self, fs_now_ns: i64) -> Result<Option<(Content, Metadata)>, TreeError> {
        let path = self.path;
        let io = |e| TreeError::io(path, e);
        snap_store::fault!("scan-read").map_err(io)?;
        let content = store_stream(self.writer, &mut *self.file, path)?;
        let after = self.file.metadata().map_err(io)?;
        if !same_stat(self.before, &after) || content.len != after.len() {
            return Ok(None);
        }
        let key = stat_key(&after);
        if key.mtime_ns.max(key.ctime_ns) >= fs_now_ns {
            use std::io::Seek;
            self.file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
            let again = store_stream(self.writer, &mut *self.file, path)?;
            let later = self.file.metadata().map_err(io)?;
            if again != content || !same_stat(&after, &later) {
                return Ok(None);
            }
        }
        Ok(Some((content, after)))
    }
}

/// Reads `file` again from the start: true when it gives `data` and the same stat.
fn reads_again_the_same(
    file: &mut File,
    data: &[u8],
    stat: &Metadata,
    path: &Path,
) -> Result<bool, TreeError> {
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0))
        .map_err(|e| TreeError::io(path, e))?;
    let again = read_all(file, data.len() as u64, path)?;
    let after = file.metadata().map_err(|e| TreeError::io(path, e))?;
    Ok(again == data && same_stat(stat, &after))
}

/// Reads `file` into a buffer sized from the caller's stat, at most one byte past it. Reading through
/// `take` spares the `statx` and `lseek` that `File::read_to_end` spends per call to guess a
/// size we already know: two of the eight system calls a stored file costs.
fn read_all(file: &mut File, len_hint: u64, path: &Path) -> Result<Vec<u8>, TreeError> {
    let io = |e| TreeError::io(path, e);
    let mut data = Vec::with_capacity(len_hint as usize + 1);
    snap_store::fault!("scan-read")
        .and_then(|()| file.by_ref().take(len_hint + 1).read_to_end(&mut data))
        .map_err(io)?;
    // A file grown since its stat gives one byte more than `len_hint`, never the rest (it
    // may now be any size): the caller's stat check sees the change and reads it again.
    Ok(data)
}

fn same_stat(a: &Metadata, b: &Metadata) -> bool {
    (
        a.len(),
        a.mtime(),
        a.mtime_nsec(),
        a.ctime(),
        a.ctime_nsec(),
        a.ino(),
    ) == (
        b.len(),
        b.mtime(),
        b.mtime_nsec(),
        b.ctime(),
        b.ctime_nsec(),
        b.ino(),
    )
}

/// A path, its stored entry, the stat cache entry to record when it was hashed, and (for a
/// regular file) the stat the scan settled on.
pub(super) type StoredEntry = (Vec<u8>, Node, Option<StatEntry>, Option<StatKey>);

/// The stat key the cache compares, from `std` metadata (equal to the walker's from `fstatat`).
pub fn stat_key(meta: &Metadata) -> StatKey {
    StatKey {
        size: meta.len(),
        mtime_ns: meta
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.mtime_nsec()),
        ctime_ns: meta
            .ctime()
            .saturating_mul(1_000_000_000)
            .saturating_add(meta.ctime_nsec()),
        ino: meta.ino(),
        mode: meta.mode(),
    }
}

pub(super) fn file_kind(meta: &Metadata) -> EntryKind {
    if meta.mode() & 0o100 != 0 {
        EntryKind::Executable
    } else {
        EntryKind::File
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The walk saw the file within `max`; by the read it is larger (a job appending to it):
    /// the save names it, and never takes it for gone (which would record it deleted).
    #[test]
    fn a_file_grown_past_max_since_the_walk_is_named_not_gone() {
        let dir = tempfile::tempdir().unwrap();
        let store = snap_store::Store::init(&dir.path().join(".snap")).unwrap();
        let path = dir.path().join("ckpt.bin");
        std::fs::write(&path, vec![7u8; 4096]).unwrap();
        let root_fd = crate::inside::open_root(dir.path()).unwrap();
        let writer = store.writer();
        let file = FileStore {
            root_fd: &root_fd,
            max: 1024,
            fs_now_ns: i64::MIN,
            base: None,
        };
        let at = InTree {
            root_fd: &root_fd,
            rel: b"ckpt.bin",
            abs: &path,
        };
        let got = read_stable(at, file, &writer).err();
        assert!(
            matches!(got, Some(TreeError::StillWriting { .. })),
            "{got:?}"
        );
    }
}
