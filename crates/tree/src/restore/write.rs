//! Writing one file or symlink of a plan: under a temporary name in its own directory, a
//! file chunk by chunk (any size in the memory of one chunk), made durable as the plan
//! says, then put in place. A large file written so is vouched for in the stat cache
//! ([`Vouch`]), so the next save does not read it all again.

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use snap_store::{EntryKind, StatEntry, StatKey};

use super::durable::sync_file;
use super::guard::{Guarded, Wrote};
use super::{fail, open_dir, swap};
use crate::TreeError;
use crate::flat::{Node, split};

/// Files at least this large are vouched for after a restore writes them: below it, reading
/// a file again costs less than the stats vouching takes.
pub(super) const VOUCH_MIN_BYTES: u64 = crate::scan::content::STREAM_THRESHOLD;

/// Writes one file or symlink under a temporary name (a file fsynced as the plan's
/// durability says) and puts it in place: exchanged with the version the plan expects
/// there, or created where the plan found nothing (see [`swap`]). False when another
/// process made a file at an empty path meanwhile: that path then differs.
pub(super) fn write_entry(
    g: &Guarded<'_>,
    path: &[u8],
    node: &Node,
    expected: Option<&Node>,
) -> Result<bool, TreeError> {
    let (root, root_fd) = (g.tree.root, &g.root_fd);
    let (parent, name) = split(path);
    let dir = open_dir(root, root_fd, parent)?;
    let tmp = g.tree.op.temp_name();
    let drop_tmp = || {
        let _ = rustix::fs::unlinkat(&dir, tmp.as_str(), AtFlags::empty());
    };
    let written = match node.kind {
        EntryKind::Symlink => g.tree.store.read_file(&node.id).map(|target| {
            rustix::fs::symlinkat(OsStr::from_bytes(&target), &dir, tmp.as_str())
                .map(|()| None)
                .map_err(Written::Io)
        }),
        _ => g.tree.store.file_chunks(&node.id).map(|chunks| {
            let fd = write_file(&dir, &tmp, chunks, node)?;
            sync_file(&fd, g.durability).map_err(Written::Io)?;
            Ok(Some(fd))
        }),
    };
    // A file's chunks are read as it is written: a chunk that fails to read fails the step
    // as a missing object does, and the half-written temporary file goes with it.
    let fd = match written {
        Ok(Ok(fd)) => fd,
        Ok(Err(Written::Io(e))) => {
            drop_tmp();
            return Err(fail("write", root, path, e));
        }
        Ok(Err(Written::Store(e))) | Err(e) => {
            drop_tmp();
            return Err(TreeError::from(e));
        }
    };
    let vouch = fd
        .filter(|_| node.size >= VOUCH_MIN_BYTES)
        .and_then(|fd| Vouch::before(fd, g));
    let name = OsStr::from_bytes(name);
    match swap::put(&dir, &tmp, name, expected.is_some(), g.tree.op) {
        Ok(swap::Displaced::Nothing) => {
            g.vouch(path, node, vouch);
            Ok(true)
        }
        Ok(swap::Displaced::At { temp }) => {
            g.settle(&dir, path, &temp, expected, Wrote::File(node))?;
            g.vouch(path, node, vouch);
            Ok(true)
        }
        Ok(swap::Displaced::Aside { temp }) => {
            drop_tmp();
            g.settle(&dir, path, &temp, expected, Wrote::Nothing)?;
            g.note(&g.differs, path);
            Ok(false)
        }
        Err(swap::Refused::Occupied) => {
            drop_tmp();
            g.note(&g.differs, path);
            Ok(false)
        }
        Err(swap::Refused::Failed(e)) => {
            drop_tmp();
            Err(fail("write", root, path, e))
        }
    }
}

/// Why [`write_file`] stopped: the file system, or the store reading a chunk.
enum Written {
    Io(Errno),
    Store(snap_store::StoreError),
}

impl From<Errno> for Written {
    fn from(e: Errno) -> Self {
        Written::Io(e)
    }
}

/// Writes a file's chunks, one at a time, to a new file `tmp` in `dir`; returns it, still
/// open.
fn write_file(
    dir: &OwnedFd,
    tmp: &str,
    chunks: snap_store::FileChunks<'_>,
    node: &Node,
) -> Result<OwnedFd, Written> {
    // Without a recorded mode (an old snapshot) the umask applies, as for git checkout.
    let executable = node.kind == EntryKind::Executable;
    let mode = Mode::from_raw_mode(if executable { 0o777 } else { 0o666 });
    let fd = rustix::fs::openat(
        dir,
        tmp,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        mode,
    )?;
    if let Some(bits) = node.mode {
        // Exactly the recorded bits, whatever the umask (fchmod ignores it).
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(u32::from(bits)))?;
    }
    injected(snap_store::fault!("restore-write"))?;
    for (n, chunk) in chunks.enumerate() {
        if n > 0 {
            // Between a large file's chunks: its temporary file is half written.
            snap_store::failpoint!("restore-chunk");
        }
        let chunk = chunk.map_err(Written::Store)?;
        let mut rest = chunk.as_slice();
        while !rest.is_empty() {
            let n = rustix::io::write(&fd, rest)?;
            rest = &rest[n..];
        }
    }
    Ok(fd)
}

/// A fault a test injected (`snap_store::fault!`, `testing` builds only), as an errno.
pub(super) fn injected(fault: std::io::Result<()>) -> Result<(), Errno> {
    fault.map_err(|e| Errno::from_io_error(&e).unwrap_or(Errno::IO))
}

/// A written file's stat under its temporary name, where no other process writes it,
/// taken once the filesystem clock has passed its last write.
///
/// Once put in place, the file is vouched for when it still stats with that size, mtime
/// and inode (its ctime moved with the rename): a write by anyone after the rename lands
/// in a later clock tick than the last write here, so it shows in the mtime. The row is
/// then judged by the racy rule ([`StatEntry::hashed`]) against the clock after the rename.
pub(super) struct Vouch {
    fd: OwnedFd,
    before: StatKey,
}

impl Vouch {
    /// `None` when the clock cannot be read or does not pass the file's last write within
    /// a few ticks (a large file takes far longer than that to write).
    fn before(fd: OwnedFd, g: &Guarded<'_>) -> Option<Vouch> {
        let before = stat_of(&fd)?;
        for _ in 0..CLOCK_WAITS {
            if before.mtime_ns < fs_clock(&g.root_fd)? {
                return Some(Vouch { fd, before });
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        None
    }

    /// The stat cache row for the file now at its path, if it is still the one written.
    /// The row must be settled by the racy rule, so the clock is read until it passes the
    /// rename's ctime too.
    pub(super) fn row(self, node: &Node, root_fd: &OwnedFd) -> Option<StatEntry> {
        let now = stat_of(&self.fd)?;
        let before = self.before;
        if (now.size, now.mtime_ns, now.ino) != (before.size, before.mtime_ns, before.ino) {
            return None;
        }
        let kind = match now.mode & 0o100 {
            0 => EntryKind::File,
            _ => EntryKind::Executable,
        };
        for _ in 0..CLOCK_WAITS {
            let entry = StatEntry::hashed(now, kind, node.id, fs_clock(root_fd)?);
            if entry.settled {
                return Some(entry);
            }
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        None
    }
}

/// How many times [`Vouch::before`] reads the clock, 2 ms apart: a coarse clock ticks every
/// 1-10 ms.
const CLOCK_WAITS: usize = 8;

fn stat_of(fd: &OwnedFd) -> Option<StatKey> {
    let st = rustix::fs::fstat(fd).ok()?;
    let is_file = rustix::fs::FileType::from_raw_mode(st.st_mode).is_file();
    is_file.then(|| crate::scan::walker::stat_key(&st))
}

/// The filesystem's clock: the mtime of an unnamed file made now in the workspace.
fn fs_clock(root_fd: &OwnedFd) -> Option<i64> {
    let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(root_fd, ".", flags, Mode::RUSR).ok()?;
    let st = rustix::fs::fstat(&fd).ok()?;
    Some(crate::scan::walker::stat_key(&st).mtime_ns)
}
