//! Small durable-filesystem helpers shared by the store: directory fsync and atomic file writes.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use crate::StoreError;

/// fsyncs a directory so that renames and creations inside it survive a power loss.
pub fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    crate::fault::inject("dir-sync")
        .and_then(|()| File::open(dir))
        .and_then(|f| {
            f.sync_all()?;
            crate::journal::dir_synced(&f);
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
        .map(|()| crate::journal::file_synced(tmp.as_file()))
        .map_err(|e| StoreError::io(path, e))?;
    tmp.persist(path)
        .map_err(|e| StoreError::io(path, e.error))?;
    sync_dir(dir)
}
