//! `Workspace`: a working tree and its store; every history operation (ARCHITECTURE.md), carried
//! out with the crash-safety protocol of §7. This file owns opening (finding the root, the
//! store's recorded identity, rolling an interrupted move forward) and the handle's
//! accessors; each operation lives in a submodule.

mod reading;
mod verbs;

pub use reading::ReadOnlyWorkspace;

use std::path::{Path, PathBuf};

use snap_store::{RepairReport, Store, WorkspaceIdentity};

use crate::config::Config;
use crate::error::TreeError;
use crate::moves::Mover;
use crate::observer::{Event, Observer};
use crate::parts::{ObserverSlot, Parts, canonical};
use crate::scan::STORE_DIR;
use crate::snapshot::Recovered;

/// A working tree with its store open (and locked), for a command that writes: the facade
/// every writing front end holds. It reads as a [`ReadOnlyWorkspace`] does (it dereferences
/// to one) and adds the writing verbs (`verbs.rs`), each delegating to the phase that does
/// the work.
#[derive(Debug)]
pub struct Workspace {
    read: ReadOnlyWorkspace,
    recovered: Vec<Recovered>,
}

impl std::ops::Deref for Workspace {
    type Target = ReadOnlyWorkspace;

    fn deref(&self) -> &ReadOnlyWorkspace {
        &self.read
    }
}

impl std::ops::DerefMut for Workspace {
    fn deref_mut(&mut self) -> &mut ReadOnlyWorkspace {
        &mut self.read
    }
}

/// What opening a workspace does with an interrupted undo, redo or restore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Interrupted {
    /// Roll it forward (writing commands).
    Finish,
    /// Leave it, and its marker, for a writing command (read-only commands).
    Leave,
}

/// Rebuilds the catalog of the workspace at or above `start` (or of `store_dir`) from its
/// packs. Works when the catalog is too damaged for [`Workspace::discover`] to open.
pub fn repair(start: &Path, store_dir: Option<&Path>) -> Result<RepairReport, TreeError> {
    let start = canonical(start)?;
    let dir = match store_dir {
        Some(d) => d.to_path_buf(),
        None => find_root(&start)
            .ok_or_else(|| TreeError::NoWorkspace(start.clone()))?
            .join(STORE_DIR),
    };
    Ok(Store::repair(&dir)?)
}

/// The nearest ancestor of `start` (itself included) that holds a store.
pub fn find_root(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .find(|d| d.join(STORE_DIR).join("packs").is_dir())
        .map(Path::to_path_buf)
}

/// How a command may claim a store recorded for another root.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Claim {
    /// Only from inside the recorded root (every command).
    Inside,
    /// Here, re-recording the root (`init --force`, for a workspace that moved).
    Here,
}

/// The workspace root for a command started in `start`, using the store in `store_dir`.
///
/// A store named `.snap` in `start` or above it is that directory's own: its root is its
/// parent, wherever the directory has moved. Any other store is external, and its recorded
/// root rules: a command inside it acts on it (as git does from a subdirectory); one outside
/// it is refused, so a store shared by mistake never writes one workspace's files into
/// another. A store that has recorded no root yet takes `start`. When `records`, a root that
/// differs from the recorded one (or none) is recorded, keeping the workspace id.
fn settle_root(
    start: &Path,
    store_dir: &Path,
    claim: Claim,
    records: bool,
) -> Result<PathBuf, TreeError> {
    let recorded = WorkspaceIdentity::read(store_dir)?;
    let root = match (own_root(start, store_dir), &recorded) {
        (Some(root), _) => root,
        (None, Some(ident)) if start.starts_with(&ident.root) => ident.root.clone(),
        (None, Some(ident)) if claim == Claim::Inside => {
            return Err(TreeError::ForeignStore {
                store: store_dir.to_path_buf(),
                root: ident.root.clone(),
                here: start.to_path_buf(),
            });
        }
        (None, _) => start.to_path_buf(),
    };
    if records && recorded.as_ref().map(|i| &i.root) != Some(&root) {
        let ident = match recorded {
            Some(old) => WorkspaceIdentity {
                root: root.clone(),
                ..old
            },
            None => WorkspaceIdentity::new(&root)?,
        };
        ident.write(store_dir)?;
    }
    Ok(root)
}

/// The directory whose own store is `store_dir` (`DIR/.snap`), when `start` is in it.
fn own_root(start: &Path, store_dir: &Path) -> Option<PathBuf> {
    let parent = store_dir.parent()?;
    let own = store_dir.file_name() == Some(STORE_DIR.as_ref()) && start.starts_with(parent);
    own.then(|| parent.to_path_buf())
}

/// The directory `path` names once it is made, without making it: each existing prefix
/// made canonical (links followed, so a `..` after it is its real parent), and the missing
/// rest taken as the directories `create_dir_all` would make (a `..` after a missing one
/// undoes it). `new/..` is the directory it is in, which a check on the path as given
/// would miss.
fn resolve_dir(path: &Path) -> PathBuf {
    use std::path::Component;
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::from("/");
    // How many names at the end of `out` do not exist; the prefix before them is canonical.
    let mut missing = 0usize;
    for part in absolute.components() {
        match part {
            Component::Normal(name) => {
                out.push(name);
                match (missing, out.canonicalize()) {
                    (0, Ok(real)) => out = real,
                    _ => missing += 1,
                }
            }
            Component::ParentDir => {
                out.pop();
                missing = missing.saturating_sub(1);
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The canonical start directory and the store directory of a command started in `start`.
fn located(start: &Path, store_dir: Option<&Path>) -> Result<(PathBuf, PathBuf), TreeError> {
    let start = canonical(start)?;
    let store_dir = match store_dir {
        Some(dir) => dir.to_path_buf(),
        None => find_root(&start)
            .ok_or_else(|| TreeError::NoWorkspace(start.clone()))?
            .join(STORE_DIR),
    };
    Ok((start, store_dir))
}

/// Opens the store in `store_dir` for a command started in `start` (canonical), and settles
/// the workspace root by the store's recorded identity (see [`settle_root`]).
fn open_parts(
    start: &Path,
    store_dir: &Path,
    interrupted: Interrupted,
    claim: Claim,
) -> Result<Parts, TreeError> {
    let store_dir = store_dir
        .canonicalize()
        .map_err(|_| snap_store::StoreError::NotFound(store_dir.to_path_buf()))?;
    let store = Store::open(&store_dir)?;
    let records = interrupted == Interrupted::Finish && !store.is_read_only();
    let root = settle_root(start, &store_dir, claim, records)?;
    let config = Config::load(&store_dir)?;
    Ok(Parts {
        root,
        store,
        config,
        observer: ObserverSlot::default(),
        stop: crate::interrupt::process_flag(),
        source: None,
    })
}

impl Workspace {
    /// Opens the workspace whose root is `start` or its nearest ancestor with a store, or, with
    /// `store_dir`, the workspace rooted at `start` with its store there. Finishes any
    /// interrupted operation first: for commands that write.
    pub fn discover(start: &Path, store_dir: Option<&Path>) -> Result<Workspace, TreeError> {
        Workspace::discover_with(start, store_dir, Interrupted::Finish)
    }

    /// Opens as [`Workspace::discover`] does, for a command that only reads: an
    /// interrupted operation is left for a writing command or `recover` to finish (a reading
    /// command never changes the working tree), and the handle has no writing verbs.
    /// [`ReadOnlyWorkspace::pending`] names what waits.
    pub fn discover_reading(
        start: &Path,
        store_dir: Option<&Path>,
    ) -> Result<ReadOnlyWorkspace, TreeError> {
        let (start, store_dir) = located(start, store_dir)?;
        Ok(ReadOnlyWorkspace {
            parts: open_parts(&start, &store_dir, Interrupted::Leave, Claim::Inside)?,
        })
    }

    fn discover_with(
        start: &Path,
        store_dir: Option<&Path>,
        interrupted: Interrupted,
    ) -> Result<Workspace, TreeError> {
        let (start, store_dir) = located(start, store_dir)?;
        Workspace::open(&start, &store_dir, interrupted, Claim::Inside)
    }

    /// Creates a store for the workspace at `root` (in `root/.snap` unless `store_dir` says),
    /// or opens the one there. `/` and `$HOME` are refused unless `force`.
    pub fn init(
        root: &Path,
        store_dir: Option<&Path>,
        force: bool,
    ) -> Result<Workspace, TreeError> {
        let root = canonical(root)?;
        let home = std::env::var_os("HOME").and_then(|h| Path::new(&h).canonicalize().ok());
        if !force && (root.parent().is_none() || home.as_deref() == Some(root.as_path())) {
            return Err(TreeError::RefusedRoot(root));
        }
        let store_dir = store_dir.map_or_else(|| root.join(STORE_DIR), Path::to_path_buf);
        let store_dir = resolve_dir(&store_dir);
        if root.starts_with(&store_dir) {
            return Err(TreeError::StoreHoldsWorkspace {
                store: store_dir,
                root,
            });
        }
        drop(Store::init(&store_dir)?);
        let claim = if force { Claim::Here } else { Claim::Inside };
        Workspace::open(&root, &store_dir, Interrupted::Finish, claim)
    }

    /// Opens the workspace as [`open_parts`] does and, for a writing command, finishes
    /// every interrupted operation.
    fn open(
        start: &Path,
        store_dir: &Path,
        interrupted: Interrupted,
        claim: Claim,
    ) -> Result<Workspace, TreeError> {
        let parts = open_parts(start, store_dir, interrupted, claim)?;
        let mut ws = Workspace {
            read: ReadOnlyWorkspace { parts },
            recovered: Vec::new(),
        };
        if interrupted == Interrupted::Finish {
            ws.recovered = Mover::new(&ws.parts).recover()?;
        }
        Ok(ws)
    }

    /// Sets the callback that hears of snapshots, restores, recoveries, errors and progress.
    /// Recoveries done while opening are reported to it at once.
    pub fn set_observer(&mut self, observer: Observer) {
        for r in &self.recovered {
            observer(&Event::Recovered(r));
        }
        self.read.set_observer(observer);
    }

    /// Interrupted operations finished when this workspace was opened.
    pub fn recovered(&self) -> &[Recovered] {
        &self.recovered
    }
}
