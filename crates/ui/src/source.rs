//! Where the UI's data comes from: the workspace, opened for one read or one action and
//! closed again, so the UI never holds the store lock while a person looks (a hook's save
//! waits for that lock).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use snap_tree::{History, ReadOnlyWorkspace, Workspace};

use crate::UiError;

/// The workspace to show: where the UI started and, optionally, its store.
#[derive(Clone, Debug)]
pub struct Source {
    start: PathBuf,
    store: Option<PathBuf>,
}

/// What changes when the catalog changes: its modification time and length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    modified: Option<SystemTime>,
    len: u64,
}

impl Source {
    /// The workspace holding `start` (or rooted there, with its store in `store`).
    pub fn new(start: &Path, store: Option<&Path>) -> Source {
        Source {
            start: start.to_path_buf(),
            store: store.map(Path::to_path_buf),
        }
    }

    /// Opens for reading: an interrupted move is left for a writing command.
    pub fn read<T>(
        &self,
        f: impl FnOnce(&ReadOnlyWorkspace) -> Result<T, UiError>,
    ) -> Result<T, UiError> {
        let ws = Workspace::discover_reading(&self.start, self.store.as_deref())?;
        f(&ws)
    }

    /// Opens for an action: an interrupted move is finished first, as every writing command does.
    pub fn write<T>(&self, f: impl FnOnce(&Workspace) -> Result<T, UiError>) -> Result<T, UiError> {
        let mut ws = Workspace::discover(&self.start, self.store.as_deref())?;
        // A move asks the workspace's watcher, as the CLI's do, instead of walking the tree.
        snap_tree::watcher::attach(&mut ws);
        f(&ws)
    }

    /// The history and the catalog's stamp, read in one opening.
    pub fn history(&self) -> Result<(History, Stamp, PathBuf), UiError> {
        self.read(|ws| {
            let history = ws.history()?;
            let catalog = catalog_path(ws.store_dir());
            Ok((history, stamp(&catalog)?, catalog))
        })
    }
}

/// The catalog file of a store.
fn catalog_path(store_dir: &Path) -> PathBuf {
    store_dir.join("catalog.redb")
}

/// The catalog's stamp now: any commit changes its length or modification time.
pub fn stamp(catalog: &Path) -> Result<Stamp, UiError> {
    let meta = std::fs::metadata(catalog).map_err(|source| UiError::Io {
        path: catalog.to_path_buf(),
        source,
    })?;
    Ok(Stamp {
        modified: meta.modified().ok(),
        len: meta.len(),
    })
}
