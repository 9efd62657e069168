//! The catalog file as redb sees it in `testing` builds: redb's own file backend, with the
//! `catalog-write` fault injected before writes and syncs, and every sync recorded in the
//! durability journal. Release builds open the catalog with redb's plain file backend.

use std::fs::File;
use std::io;
use std::ops::Bound;

use redb::backends::FileBackend;
use redb::{BackendError, StorageBackend};

/// redb's file backend, observed.
#[derive(Debug)]
pub(crate) struct ObservedFile {
    inner: FileBackend,
    /// A second descriptor of the same file, for the journal to read it back.
    file: File,
}

impl ObservedFile {
    pub(crate) fn new(file: File) -> io::Result<ObservedFile> {
        let observer = file.try_clone()?;
        let inner = FileBackend::new(file).map_err(io::Error::other)?;
        Ok(ObservedFile {
            inner,
            file: observer,
        })
    }
}

impl StorageBackend for ObservedFile {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        crate::fault!("catalog-write")?;
        self.inner.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        crate::fault!("catalog-write")?;
        self.inner.sync_data()?;
        crate::testing::journal::file_synced(&self.file);
        Ok(())
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        crate::fault!("catalog-write")?;
        self.inner.write(offset, data)
    }

    fn close(&self) -> io::Result<()> {
        self.inner.close()
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

/// redb's page cache, for reading and for a write transaction's dirty pages (up to half of
/// it; past that they go to the file before the commit, which still syncs them). redb's
/// default of 1 GiB held a million-file first save's whole catalog in memory.
/// Rows are written in key order (`write_rows`), so evicted pages are rarely written twice.
pub(crate) const CATALOG_CACHE_BYTES: usize = 32 << 20;

/// The builder every catalog open goes through.
pub(crate) fn builder() -> redb::Builder {
    let mut builder = redb::Builder::new();
    builder.set_cache_size(CATALOG_CACHE_BYTES);
    builder
}

/// Opens (or with `create`, creates) the catalog database at `path`.
pub(crate) fn open_database(
    path: &std::path::Path,
    create: bool,
) -> Result<redb::Database, redb::DatabaseError> {
    if create {
        // Made 0600 first (redb makes it with the umask's mode): it holds every path saved.
        use std::os::unix::fs::OpenOptionsExt;
        drop(
            std::fs::OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(false)
                .mode(crate::fs::PRIVATE_FILE_MODE)
                .open(path)?,
        );
    }
    if !cfg!(feature = "testing") {
        return if create {
            builder().create(path)
        } else {
            builder().open(path)
        };
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(create)
        .truncate(false)
        .open(path)?;
    builder().create_with_backend(ObservedFile::new(file)?)
}
