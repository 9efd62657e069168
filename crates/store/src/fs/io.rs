//! Small durable-filesystem helpers shared by the store: directory fsync, atomic file writes,
//! and the refusal to follow a symlink planted among the store's own files.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::StoreError;

/// fsyncs a directory so that renames and creations inside it survive a power loss.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    crate::fault!("dir-sync")
        .and_then(|()| File::open(dir))
        .and_then(|f| {
            f.sync_all()?;
            crate::testing::journal::dir_synced(&f);
            Ok(())
        })
        .map_err(|e| StoreError::io(dir, e))
}

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, fsync, rename,
/// fsync of the directory. A reader sees the old content or the new, never a mix.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| StoreError::io(dir, e))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .map(|()| crate::testing::journal::file_synced(tmp.as_file()))
        .map_err(|e| StoreError::io(path, e))?;
    tmp.persist(path)
        .map_err(|e| StoreError::io(path, e.error))?;
    sync_dir(dir)
}

/// The mode of every directory snap makes in a store (umask aside): only its owner may
/// list it, so no other local user reads history through it.
pub const PRIVATE_DIR_MODE: u32 = 0o700;

/// The mode of every file snap writes in a store (umask aside).
pub const PRIVATE_FILE_MODE: u32 = 0o600;

/// Makes `path` and any missing parents, each [`PRIVATE_DIR_MODE`].
pub fn create_private_dir_all(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(PRIVATE_DIR_MODE)
        .create(path)
        .map_err(|e| StoreError::io(path, e))
}

/// `open(2)`'s `O_NOFOLLOW`, for `OpenOptionsExt::custom_flags`.
pub const O_NOFOLLOW: i32 = rustix::fs::OFlags::NOFOLLOW.bits() as i32;

/// The store's own entries, none of which may be a symlink: a link planted there would make
/// a command write through it, outside the store.
const STORE_ENTRIES: [&str; 10] = [
    "catalog.redb",
    "workspace",
    "packs",
    "tmp",
    "lock",
    "clock",
    "config.toml",
    ".undoing",
    ".redoing",
    ".restoring",
];

/// Refuses to make a store in `dir` when it holds anything a store does not: a directory
/// named by `--store` that already holds a person's files would have them overwritten (the
/// lock) and swept (`tmp/`). Entries a store has are allowed, since another command may be
/// making the same store at once.
pub fn refuse_foreign_entries(dir: &Path) -> Result<(), StoreError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(StoreError::io(dir, e)),
    };
    for entry in entries {
        let name = entry.map_err(|e| StoreError::io(dir, e))?.file_name();
        let name = name.to_string_lossy();
        if !is_store_entry(&name) {
            return Err(StoreError::ForeignEntries {
                dir: dir.to_path_buf(),
                entry: name.into_owned(),
            });
        }
    }
    Ok(())
}

/// True for a name a store directory holds: its entries, what `init` writes, the files
/// `write_atomic` renames into place while they have a temporary name, and old catalogs.
fn is_store_entry(name: &str) -> bool {
    STORE_ENTRIES.contains(&name)
        || [".gitignore", "hook.log", "hook.log.old"].contains(&name)
        || name.starts_with(".tmp")
        || name.starts_with("catalog.redb.")
}

/// Refuses a store any of whose own entries is a symlink.
pub fn refuse_links(dir: &Path) -> Result<(), StoreError> {
    for name in STORE_ENTRIES {
        let path = dir.join(name);
        if std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(StoreError::Symlink(path));
        }
    }
    Ok(())
}

/// Reads the whole file at `path`, refusing to follow a symlink there.
pub fn read_no_follow(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(O_NOFOLLOW)
        .open(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The error of an open with [`O_NOFOLLOW`]: a symlink at `path` is named as one.
pub fn no_follow_error(path: &Path, e: std::io::Error) -> StoreError {
    match e.raw_os_error() {
        Some(code) if code == rustix::io::Errno::LOOP.raw_os_error() => {
            StoreError::Symlink(path.to_path_buf())
        }
        _ => StoreError::io(path, e),
    }
}
/// Removes `path`; one already gone is no error.
pub(crate) fn remove_if_present(path: &Path) -> Result<(), StoreError> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(StoreError::io(path, e)),
    }
}
