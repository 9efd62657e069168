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
use super::floor::{fail, open_dir};
use super::guard::{Guarded, Wrote};
use super::{clock, swap};
use crate::error::TreeError;
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
    let fd = write_temp(g, &dir, &tmp, node).map_err(|e| match e {
        Written::Io(e) => fail("write", root, path, e),
        Written::Store(e) => TreeError::from(e),
    })?;
    let vouch = fd
        .filter(|_| node.size >= VOUCH_MIN_BYTES)
        .and_then(|fd| Vouch::before(fd, &dir));
    let name = OsStr::from_bytes(name);
    match swap::put(&dir, &tmp, name, expected.is_some(), g.tree.op) {
        Ok(swap::Displaced::Nothing) => {
            keep_vouched(g, path, node, vouch, &dir);
            Ok(true)
        }
        Ok(swap::Displaced::At { temp }) => {
            g.settle(&dir, path, &temp, expected, Wrote::File(node))?;
            // Settling may have put the other version back (the path is then kept).
            if !g.under_kept(path) {
                keep_vouched(g, path, node, vouch, &dir);
            }
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

/// Keeps the stat cache row `vouch` gives for the file just put at `path`.
fn keep_vouched(g: &Guarded<'_>, path: &[u8], node: &Node, vouch: Option<Vouch>, dir: &OwnedFd) {
    if let Some(entry) = vouch.and_then(|v| v.row(node, dir)) {
        (g.vouched.lock().unwrap_or_else(|p| p.into_inner())).push((path.to_vec(), entry));
    }
}

/// Writes `node` under the temporary name `tmp` in `dir`; a file is returned still open.
/// A large file is written under a name of its own until whole, so a kill mid-file leaves a
/// name the roll-forward removes, not a version it would have to store. On failure nothing
/// is left: a file's chunks are read as it is written, and a chunk that fails to read
/// fails the step as a missing object does.
fn write_temp(
    g: &Guarded<'_>,
    dir: &OwnedFd,
    tmp: &str,
    node: &Node,
) -> Result<Option<OwnedFd>, Written> {
    if node.kind == EntryKind::Symlink {
        let target = g.tree.store.read_file(&node.id).map_err(Written::Store)?;
        rustix::fs::symlinkat(OsStr::from_bytes(&target), dir, tmp)?;
        return Ok(None);
    }
    let partial = (node.size >= VOUCH_MIN_BYTES).then(|| g.tree.op.partial_name());
    let first = partial.as_deref().unwrap_or(tmp);
    let written = (g.tree.store.file_chunks(&node.id).map_err(Written::Store))
        .and_then(|chunks| write_file(dir, first, chunks, node))
        .and_then(|fd| {
            sync_file(&fd, g.durability)?;
            if first != tmp {
                rustix::fs::renameat(dir, first, dir, tmp)?;
            }
            Ok(fd)
        });
    if written.is_err() {
        let _ = rustix::fs::unlinkat(dir, first, AtFlags::empty());
    }
    written.map(Some)
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
/// taken once the clock of its filesystem has passed its last write.
///
/// Once put in place, the file is vouched for when it still stats with that size and mtime
/// (its ctime moved with the rename): a write by anyone after the rename lands in a later
/// clock tick than the last write here, so it shows in the mtime. The row is written only
/// when the racy rule ([`StatEntry::hashed`]) settles the stat taken after the rename
/// against a clock read before it. This assumes what the racy rule does: the clock of the
/// file's own filesystem never goes back, and no one sets an mtime back to the very
/// nanosecond of a write of ours.
pub(super) struct Vouch {
    fd: OwnedFd,
    before: StatKey,
}

impl Vouch {
    /// `None` when the clock cannot be read or does not pass the file's last write within
    /// a few ticks (a large file takes far longer than that to write).
    fn before(fd: OwnedFd, dir: &OwnedFd) -> Option<Vouch> {
        let before = clock::stat_of(&fd)?;
        for _ in 0..clock::CLOCK_WAITS {
            if before.mtime_ns < clock::fs_clock(dir)? {
                return Some(Vouch { fd, before });
            }
            std::thread::sleep(clock::TICK_WAIT);
        }
        None
    }

    /// The stat cache row for the file now at its path in `dir`, if it is still the one
    /// written: the clock is read, then the file stat-ed, until the stat is settled.
    pub(super) fn row(self, node: &Node, dir: &OwnedFd) -> Option<StatEntry> {
        for _ in 0..clock::CLOCK_WAITS {
            let at = clock::fs_clock(dir)?;
            let now = clock::stat_of(&self.fd)?;
            if (now.size, now.mtime_ns) != (self.before.size, self.before.mtime_ns) {
                return None;
            }
            if clock::settled(&now, at) {
                let kind = match now.mode & 0o100 {
                    0 => EntryKind::File,
                    _ => EntryKind::Executable,
                };
                return Some(StatEntry::hashed(now, kind, node.id, at));
            }
            std::thread::sleep(clock::TICK_WAIT);
        }
        None
    }
}
