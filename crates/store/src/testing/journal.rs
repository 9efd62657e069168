//! The durability journal, for power-loss tests: a record of what each fsync made durable.
//!
//! With `SNAP_DURABLE_LOG=dir` (`testing` builds only), every fsync of a file copies the file's
//! mode, birth time and bytes to `dir/inode-<ino>` (mode u32 LE, birth time in nanoseconds
//! u64 LE or 0 when the filesystem has none, bytes), and every fsync of a directory writes its listing to
//! `dir/dir-<hex of its path>`, one line per entry:
//! `<f|d|l|o> <ino> <mode, octal> <hex name> [<hex symlink target>]`.
//! A `syncfs` records every listing and file under the directory it was called on.
//! A test that also copied the tree before the command rebuilds what a power cut at that moment
//! would leave: each directory as its last synced listing, each file as its last synced bytes.
//! Writes, creations and renames that no fsync covered are dropped, as a real power cut may.
//!
//! Journal errors are ignored: the journal observes, and must never change what snap does.

use std::fmt::Write as _;
use std::os::fd::AsFd;
use std::os::unix::fs::{DirEntryExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn log_dir() -> Option<PathBuf> {
    if !cfg!(feature = "testing") {
        return None;
    }
    std::env::var_os("SNAP_DURABLE_LOG").map(PathBuf::from)
}

/// Where an open descriptor lives, by the kernel's own account.
fn fd_path(fd: impl AsFd) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    let link = format!("/proc/self/fd/{}", fd.as_fd().as_raw_fd());
    std::fs::read_link(link).ok()
}

/// Records that the file behind `fd` was just fsynced: its current bytes are durable.
pub fn file_synced(fd: impl AsFd) {
    if let (Some(log), Some(path)) = (log_dir(), fd_path(&fd)) {
        record_file(&log, &path);
    }
}

/// Records that the directory behind `fd` was just fsynced: its entries are durable.
pub fn dir_synced(fd: impl AsFd) {
    if let (Some(log), Some(path)) = (log_dir(), fd_path(&fd)) {
        record_dir(&log, &path);
    }
}

/// Records that the filesystem holding `fd` was just synced (`syncfs`): everything under
/// the directory behind `fd` is durable, every listing and every file's bytes.
pub fn fs_synced(fd: impl AsFd) {
    let (Some(log), Some(path)) = (log_dir(), fd_path(&fd)) else {
        return;
    };
    let mut dirs = vec![path];
    while let Some(dir) = dirs.pop() {
        record_dir(&log, &dir);
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            match entry.file_type() {
                Ok(t) if t.is_dir() => dirs.push(entry.path()),
                Ok(t) if t.is_file() => record_file(&log, &entry.path()),
                _ => {}
            }
        }
    }
}

fn record_file(log: &Path, path: &Path) {
    let (Ok(meta), Ok(bytes)) = (std::fs::symlink_metadata(path), std::fs::read(path)) else {
        return;
    };
    let mut record = (meta.permissions().mode() & 0o7777).to_le_bytes().to_vec();
    record.extend_from_slice(&birth_ns(&meta).to_le_bytes());
    record.extend_from_slice(&bytes);
    write_record(&log.join(format!("inode-{}", meta.ino())), &record);
}

/// The file's birth time in nanoseconds (0 when unknown): an inode number can be freed and
/// given to a new file, and the birth time tells its lives apart.
pub fn birth_ns(meta: &std::fs::Metadata) -> u64 {
    meta.created()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

fn record_dir(log: &Path, dir: &Path) {
    let Some(listing) = listing(dir) else {
        return;
    };
    let name = format!("dir-{}", hex(dir.as_os_str().as_encoded_bytes()));
    write_record(&log.join(name), listing.as_bytes());
}

/// Replaces a record whole. Syncs run on more than one thread, and a failpoint on one may
/// abort the process while another is recording: a record written in place would then be
/// torn, and the test would rebuild a file no power cut could leave.
fn write_record(path: &Path, bytes: &[u8]) {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{:?}.tmp", std::thread::current().id()));
    if std::fs::write(&tmp, bytes).is_ok() {
        let _ = std::fs::rename(&tmp, path);
    }
}

fn listing(dir: &Path) -> Option<String> {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).ok()? {
        let entry = entry.ok()?;
        let meta = std::fs::symlink_metadata(entry.path()).ok()?;
        let t = meta.file_type();
        let kind = if t.is_symlink() {
            'l'
        } else if t.is_dir() {
            'd'
        } else if t.is_file() {
            'f'
        } else {
            'o'
        };
        let mode = meta.permissions().mode() & 0o7777;
        let name = hex(entry.file_name().as_encoded_bytes());
        let _ = write!(out, "{kind} {} {mode:o} {name}", entry.ino());
        if t.is_symlink() {
            let target = std::fs::read_link(entry.path()).ok()?;
            let _ = write!(out, " {}", hex(target.as_os_str().as_encoded_bytes()));
        }
        out.push('\n');
    }
    Some(out)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
