//! Putting a file in place without destroying what another process wrote there since the
//! guard looked (docs/SAFETY.md, "Writers racing a move").
//!
//! A replaced path is *exchanged* with the new file (`renameat2(RENAME_EXCHANGE)`), so the
//! version it held at that instant survives under a temporary name of the operation's own;
//! a removed path is renamed to such a name. That displaced version is then checked against
//! what the plan expected: only when it is exactly that (already in the store) is it
//! unlinked. Anything else is handed back to the caller, which stores it and names it before
//! unlinking it. A new path is created with `RENAME_NOREPLACE`, so a file another process
//! made there meanwhile is never overwritten.
//!
//! Where the filesystem lacks `renameat2` flags (`EINVAL`), the fallback hard-links the old
//! version to an owned name before renaming over it (catching writes in place), and links
//! a new path into place (`linkat` never replaces).

use std::ffi::OsStr;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, RenameFlags};
use rustix::io::Errno;
use serde::{Deserialize, Serialize};

use super::{PARTIAL_PREFIX, TEMP_PREFIX};
use crate::testing_hooks::Edge;

/// The id of one undo, redo, restore or export: its temporary names carry it, and its
/// marker records it, so a roll-forward or cleanup removes only names it made itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct OpId(pub u64);

impl OpId {
    /// A fresh id: the clock's nanoseconds mixed with the process id, never 0.
    pub fn new() -> OpId {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let seed = [
            nanos.to_le_bytes(),
            u64::from(std::process::id()).to_le_bytes(),
        ]
        .concat();
        let hash = blake3::hash(&seed);
        let mut word = [0u8; 8];
        word.copy_from_slice(&hash.as_bytes()[..8]);
        // Decimal in names; kept below 2^63 so every tool reads it as a signed number too.
        OpId((u64::from_le_bytes(word) >> 1).max(1))
    }

    /// The prefix of every temporary name this operation makes: `.snap-tmp-<op>-`.
    pub fn temp_prefix(self) -> String {
        format!("{TEMP_PREFIX}{}-", self.0)
    }

    /// The prefix of the names this operation writes a large file under until it is whole:
    /// `.snap-part-<op>-`.
    pub fn partial_prefix(self) -> String {
        format!("{PARTIAL_PREFIX}{}-", self.0)
    }

    /// True for a name this operation made: `.snap-tmp-<op>-<pid>-<n>`, all decimal.
    pub fn owns(self, name: &[u8]) -> bool {
        owned(&self.temp_prefix(), name)
    }

    /// True for a name this operation wrote part of a file under: `.snap-part-<op>-<pid>-<n>`.
    /// Only this operation's writes are ever there, never another process's version.
    pub fn owns_partial(self, name: &[u8]) -> bool {
        owned(&self.partial_prefix(), name)
    }

    /// A new temporary name of this operation, unique within the process.
    pub fn temp_name(self) -> String {
        format!(
            "{}{}-{}",
            self.temp_prefix(),
            std::process::id(),
            next_number()
        )
    }

    /// A new name to write a large file under until it is whole (see [`OpId::owns_partial`]).
    pub fn partial_name(self) -> String {
        format!(
            "{}{}-{}",
            self.partial_prefix(),
            std::process::id(),
            next_number()
        )
    }
}

/// True for `prefix` followed by `<pid>-<n>`, both decimal.
fn owned(prefix: &str, name: &[u8]) -> bool {
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    name.strip_prefix(prefix.as_bytes())
        .and_then(|rest| {
            let dash = rest.iter().position(|&b| b == b'-')?;
            Some(digits(&rest[..dash]) && digits(&rest[dash + 1..]))
        })
        .unwrap_or(false)
}

/// A number unique within the process, for temporary names.
fn next_number() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    COUNTER.fetch_add(1, Ordering::Relaxed)
}

impl Default for OpId {
    fn default() -> OpId {
        OpId::new()
    }
}

/// Set by the race suite to drive the fallback on filesystems that have `renameat2`.
static FORCE_FALLBACK: AtomicBool = AtomicBool::new(false);
/// Set by the race suite to act as a filesystem without hard links too (exFAT, many FUSE).
static FORCE_NO_LINKS: AtomicBool = AtomicBool::new(false);

/// Makes every later exchange take the fallback (`true`) or not (tests only).
#[cfg(any(test, feature = "testing"))]
pub(crate) fn force_link_fallback(on: bool) {
    FORCE_FALLBACK.store(on, Ordering::Relaxed);
}

/// Makes every later fallback find hard links unsupported (`true`) or not (tests only).
#[cfg(any(test, feature = "testing"))]
pub(crate) fn force_no_links(on: bool) {
    FORCE_NO_LINKS.store(on, Ordering::Relaxed);
}

fn fallback_forced() -> bool {
    FORCE_FALLBACK.load(Ordering::Relaxed)
}

/// True for the errors of a filesystem that lacks a call or flag (not of a failed one).
fn unsupported(e: Errno) -> bool {
    matches!(e, Errno::INVAL | Errno::NOSYS | Errno::NOTSUP)
}

/// True for the errors `linkat` gives on a filesystem without hard links.
fn no_links(e: Errno) -> bool {
    matches!(e, Errno::PERM | Errno::NOSYS | Errno::NOTSUP | Errno::MLINK)
}

/// `renameat2` with `flags`, or the error a filesystem without them gives when forced.
fn rename_with(dir: &OwnedFd, from: &str, to: &OsStr, flags: RenameFlags) -> Result<(), Errno> {
    if fallback_forced() {
        return Err(Errno::INVAL);
    }
    rustix::fs::renameat_with(dir, from, dir, to, flags)
}

/// `linkat`, or the error a filesystem without hard links gives when forced.
fn link(dir: &OwnedFd, from: &str, to: &OsStr) -> Result<(), Errno> {
    if FORCE_NO_LINKS.load(Ordering::Relaxed) {
        return Err(Errno::PERM);
    }
    rustix::fs::linkat(dir, from, dir, to, AtFlags::empty())
}

/// Where the version a step displaced now lives.
#[derive(Debug)]
pub(super) enum Displaced {
    /// Nothing was at the path: the new file took an empty place.
    Nothing,
    /// The version the path held, now under `temp` in the same directory.
    At { temp: String },
    /// As `At`, but the new file was not put in place: without `renameat2` flags the path is
    /// empty for a moment, and another process made a file there meanwhile (left as it is).
    Aside { temp: String },
}

/// Why a step could not put its file in place.
#[derive(Debug)]
pub(super) enum Refused {
    /// Another process made a file at a path the plan found empty: left as it is.
    Occupied,
    /// The system call failed.
    Failed(Errno),
}

impl From<Errno> for Refused {
    fn from(e: Errno) -> Refused {
        Refused::Failed(e)
    }
}

/// Puts the new file `tmp` at `name` in `dir`. With `replacing`, the path held a file the
/// plan expects: the two are exchanged, so that version is returned displaced; without, the
/// path must still be empty.
pub(super) fn put(
    dir: &OwnedFd,
    tmp: &str,
    name: &OsStr,
    replacing: bool,
    op: OpId,
) -> Result<Displaced, Refused> {
    edged(dir, name, || put_now(dir, tmp, name, replacing, op))
}

/// Runs `step` on `name` between the race suite's two hooks (crate::testing_hooks).
fn edged<T>(dir: &OwnedFd, name: &OsStr, step: impl FnOnce() -> T) -> T {
    crate::testing_hooks::exchange_edge(dir, name, Edge::Before);
    let done = step();
    crate::testing_hooks::exchange_edge(dir, name, Edge::After);
    done
}

fn put_now(
    dir: &OwnedFd,
    tmp: &str,
    name: &OsStr,
    replacing: bool,
    op: OpId,
) -> Result<Displaced, Refused> {
    if replacing {
        match exchange(dir, tmp, name, op) {
            // Gone since the guard looked: the path is empty, so take it only while it is.
            Err(Refused::Failed(Errno::NOENT)) => {}
            done => return done,
        }
    }
    create(dir, tmp, name).map(|()| Displaced::Nothing)
}

/// Swaps `tmp` and `name`. On a filesystem without the flag, renames the old version to an
/// owned name first (atomic, so whatever the path held at that instant is kept, written in
/// place or renamed there), then creates the path (see [`create`]).
fn exchange(dir: &OwnedFd, tmp: &str, name: &OsStr, op: OpId) -> Result<Displaced, Refused> {
    match rename_with(dir, tmp, name, RenameFlags::EXCHANGE) {
        Ok(()) => {
            return Ok(Displaced::At {
                temp: tmp.to_string(),
            });
        }
        Err(e) if unsupported(e) => {}
        Err(e) => return Err(Refused::Failed(e)),
    }
    let old = op.temp_name();
    // A fresh name of this operation's, so the plain rename replaces nothing.
    rustix::fs::renameat(dir, name, dir, old.as_str())?;
    match create(dir, tmp, name) {
        Ok(()) => Ok(Displaced::At { temp: old }),
        Err(Refused::Occupied) => Ok(Displaced::Aside { temp: old }),
        Err(e) => Err(e),
    }
}

/// Renames `tmp` to `name` only while `name` does not exist. Without `RENAME_NOREPLACE`,
/// `linkat` (which never replaces) puts it there; without hard links either, a look just
/// before a plain rename is the best there is (docs/SAFETY.md says what that leaves open).
fn create(dir: &OwnedFd, tmp: &str, name: &OsStr) -> Result<(), Refused> {
    let occupied = |e| match e {
        Errno::EXIST => Refused::Occupied,
        e => Refused::Failed(e),
    };
    match rename_with(dir, tmp, name, RenameFlags::NOREPLACE) {
        Err(e) if unsupported(e) => {}
        done => return done.map_err(occupied),
    }
    // A symlink is linked itself, not its target.
    match link(dir, tmp, name) {
        Ok(()) => return Ok(rustix::fs::unlinkat(dir, tmp, AtFlags::empty())?),
        Err(e) if no_links(e) => {}
        Err(e) => return Err(occupied(e)),
    }
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Err(Errno::NOENT) => Ok(rustix::fs::renameat(dir, tmp, dir, name)?),
        Ok(_) => Err(Refused::Occupied),
        Err(e) => Err(Refused::Failed(e)),
    }
}

/// Moves what `name` holds now to a new owned name, so that a removal never unlinks a version
/// it has not checked. `None` when nothing is there any more. The owned name is fresh, so
/// where `RENAME_NOREPLACE` is missing a plain rename is just as safe.
pub(super) fn take_away(dir: &OwnedFd, name: &OsStr, op: OpId) -> Result<Option<String>, Errno> {
    edged(dir, name, || take_away_now(dir, name, op))
}

fn take_away_now(dir: &OwnedFd, name: &OsStr, op: OpId) -> Result<Option<String>, Errno> {
    let temp = op.temp_name();
    let moved = if fallback_forced() {
        Err(Errno::INVAL)
    } else {
        rustix::fs::renameat_with(dir, name, dir, temp.as_str(), RenameFlags::NOREPLACE)
    };
    let moved = match moved {
        Err(e) if unsupported(e) => rustix::fs::renameat(dir, name, dir, temp.as_str()),
        moved => moved,
    };
    match moved {
        Ok(()) => Ok(Some(temp)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Puts a displaced entry the store cannot hold back at `name` from `temp`. Where the step
/// wrote a file there (`over`), the two are exchanged, and the name that file went to is
/// returned: the caller checks it before unlinking it, as another process may have replaced
/// it meanwhile. Without a step's file, the path must still be empty.
pub(super) fn put_back(
    dir: &OwnedFd,
    temp: &str,
    name: &OsStr,
    over: PutBack,
    op: OpId,
) -> Result<Option<String>, Refused> {
    if over == PutBack::OverStepsFile {
        match rename_with(dir, temp, name, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(Some(temp.to_string())),
            Err(e) if unsupported(e) => {}
            Err(e) => return Err(Refused::Failed(e)),
        }
        let ours = op.temp_name();
        rustix::fs::renameat(dir, name, dir, ours.as_str())?;
        create(dir, temp, name)?;
        return Ok(Some(ours));
    }
    create(dir, temp, name).map(|()| None)
}

/// What [`put_back`] puts a displaced entry back over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum PutBack {
    /// The path is empty (the step removed it).
    IntoEmpty,
    /// The step's own file stands at the path.
    OverStepsFile,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_operation_owns_only_its_own_names() {
        let op = OpId(42);
        assert!(op.owns(op.temp_name().as_bytes()));
        for other in [
            ".snap-tmp-42-7",
            ".snap-tmp-43-1-2",
            ".snap-tmp-42-1-x",
            ".snap-tmp-42--2",
            ".snap-tmp-42-1-2.bak",
        ] {
            assert!(!op.owns(other.as_bytes()), "{other}");
        }
        assert_ne!(OpId::new(), OpId(0));
    }

    #[test]
    fn an_exchange_keeps_the_version_it_displaced() {
        for (forced, no_links) in [(false, false), (true, false), (true, true)] {
            force_link_fallback(forced);
            force_no_links(no_links);
            let dir = tempfile::tempdir().unwrap();
            let fd = rustix::fs::open(
                dir.path(),
                rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
            std::fs::write(dir.path().join("f"), b"old").unwrap();
            std::fs::write(dir.path().join("new"), b"new").unwrap();
            let op = OpId(9);
            let shown = put(&fd, "new", OsStr::new("f"), true, op).unwrap();
            let Displaced::At { temp } = shown else {
                panic!("nothing displaced")
            };
            assert_eq!(std::fs::read(dir.path().join("f")).unwrap(), b"new");
            assert_eq!(std::fs::read(dir.path().join(&temp)).unwrap(), b"old");
            std::fs::write(dir.path().join("other"), b"x").unwrap();
            std::fs::write(dir.path().join("g"), b"theirs").unwrap();
            let refused = put(&fd, "other", OsStr::new("g"), false, op);
            assert!(matches!(refused, Err(Refused::Occupied)), "{refused:?}");
            assert_eq!(std::fs::read(dir.path().join("g")).unwrap(), b"theirs");
            let away = take_away(&fd, OsStr::new("g"), op).unwrap().unwrap();
            assert!(!dir.path().join("g").exists());
            assert_eq!(std::fs::read(dir.path().join(away)).unwrap(), b"theirs");
        }
        force_link_fallback(false);
        force_no_links(false);
    }
}
