//! [`ReadOnlyWorkspace`]: a working tree with its store open for a command that only
//! reads. It has every reading verb (history, files, status and diff against the working
//! tree, verify, export into another directory) and none that writes the store or the
//! working tree; [`super::Workspace`] dereferences to one and adds those.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use snap_store::{ObjectId, SnapshotRecord, Store, StoreStats, VerifyReport, WorkspaceIdentity};

use crate::capture::Snapshotter;
use crate::capture::large::LargeCost;
use crate::capture::save::Status;
use crate::config::Config;
use crate::diff::{DiffEntry, FileDiff, TreeDiff};
use crate::error::TreeError;
use crate::flat::{Change, FlatTree, Node, Rename};
use crate::history::History;
use crate::history::blame::BlameLine;
use crate::history::query::Reader;
use crate::history::sessions::Told;
use crate::marker::Marker;
use crate::moves::Mover;
use crate::observer::Observer;
use crate::parts::{ObserverSlot, Parts};
use crate::secrets::{SecretHit, SecretScan, secrets_in};
use crate::snapshot::{LogEntry, PathChange, Snapshot};
use crate::source::ChangeSource;
use crate::upkeep::Upkeep;
use crate::upkeep::export::ExportOutcome;

/// A working tree with its store open, for reading: see the module.
#[derive(Debug)]
pub struct ReadOnlyWorkspace {
    pub(crate) parts: Parts,
}

impl ReadOnlyWorkspace {
    pub(crate) fn reader(&self) -> Reader<'_> {
        Reader::new(&self.parts)
    }

    pub(crate) fn snapshotter(&self) -> Snapshotter<'_> {
        Snapshotter::new(&self.parts)
    }

    pub(crate) fn mover(&self) -> Mover<'_> {
        Mover::new(&self.parts)
    }

    pub(crate) fn upkeep(&self) -> Upkeep<'_> {
        Upkeep::new(&self.parts)
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.parts.root
    }

    /// The workspace id the store recorded (32 hex digits), if it has recorded one yet: a
    /// store opened only for reading, before any writing command, may not have.
    pub fn workspace_id(&self) -> Result<Option<String>, TreeError> {
        Ok(WorkspaceIdentity::read(self.parts.store.dir())?.map(|i| i.id_hex()))
    }

    /// The open store.
    pub fn store(&self) -> &Store {
        &self.parts.store
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.parts.config
    }

    /// Interrupted operations waiting to be finished (only a workspace opened with
    /// [`super::Workspace::discover_reading`] can have any).
    pub fn pending(&self) -> Result<Vec<Marker>, TreeError> {
        Marker::find(self.parts.store.dir())
    }

    /// Makes moves stop between two files once `flag` is set (instead of the process-wide
    /// flag of [`crate::stop_moves_on`]).
    pub fn set_stop_flag(&mut self, flag: Arc<AtomicBool>) {
        self.parts.stop = Some(flag);
    }

    /// Sets the callback that hears of snapshots, restores, errors and progress.
    pub fn set_observer(&mut self, observer: Observer) {
        self.parts.observer = ObserverSlot(Some(observer));
    }

    /// Sets the change source that saves, `status` and `diff` ask what changed since their
    /// last capture, so that they read only that (see `crate::ChangeSource`).
    pub fn set_change_source(&mut self, source: Arc<dyn ChangeSource>) {
        self.parts.source = Some(source);
    }

    /// A snapshot by id.
    pub fn snapshot(&self, id: ObjectId) -> Result<Snapshot, TreeError> {
        self.reader().snapshot(id)
    }

    /// Resolves a reference (`@`, `@~N`, `last`, `#SEQ`, `step:N`, id prefix).
    pub fn resolve(&self, reference: &str) -> Result<Snapshot, TreeError> {
        self.reader().resolve(reference)
    }

    /// HEAD, if any snapshot exists.
    pub fn head(&self) -> Result<Option<Snapshot>, TreeError> {
        self.reader().head()
    }

    /// Every path of a snapshot.
    pub fn files(&self, snapshot: &Snapshot) -> Result<FlatTree, TreeError> {
        self.reader().files(snapshot)
    }

    /// The paths of a snapshot at or under `paths` (every path when none is given, or the
    /// root is), reading only the trees on the way to them and those under them.
    pub fn files_under(
        &self,
        snapshot: &Snapshot,
        paths: &[Vec<u8>],
    ) -> Result<FlatTree, TreeError> {
        self.reader().files_under(snapshot, paths)
    }

    /// The entry at `path` in a snapshot, reading only the trees on the way to it.
    pub fn entry_of(&self, snapshot: &Snapshot, path: &[u8]) -> Result<Option<Node>, TreeError> {
        self.reader().entry_of(snapshot, path)
    }

    /// The content of `path` in a snapshot (a symlink's target for a link), whole: refused
    /// over [`MAX_READ_WHOLE`] (see [`Workspace::file_chunks`]).
    pub fn read_file(&self, snapshot: &Snapshot, path: &[u8]) -> Result<Vec<u8>, TreeError> {
        self.reader().read_file(snapshot, path)
    }

    /// The content of `path` in a snapshot as its chunks, read one at a time, with its entry.
    pub fn file_chunks(
        &self,
        snapshot: &Snapshot,
        path: &[u8],
    ) -> Result<(Node, snap_store::FileChunks<'_>), TreeError> {
        self.reader().file_chunks(snapshot, path)
    }

    /// The parent snapshot, unless this is a root or the parent was pruned.
    pub fn parent_of(&self, snapshot: &Snapshot) -> Result<Option<Snapshot>, TreeError> {
        self.reader().parent_of(snapshot)
    }

    /// True when `snapshot` names a parent that prune dropped: it is the first snapshot kept
    /// of its line, and what it changed is not known (it is not "everything added").
    pub fn parent_pruned(&self, snapshot: &Snapshot) -> Result<bool, TreeError> {
        self.reader().parent_pruned(snapshot)
    }

    /// What changed in `snapshot` against its parent (everything, if the parent was pruned).
    pub fn changes_of(&self, snapshot: &Snapshot) -> Result<Vec<PathChange>, TreeError> {
        self.reader().changes_of(snapshot)
    }

    /// [`Workspace::changes_of`], with the exact renames among them (`show`, the UI).
    pub fn change_list_of(
        &self,
        snapshot: &Snapshot,
    ) -> Result<(Vec<PathChange>, Vec<Rename>), TreeError> {
        self.reader().change_list_of(snapshot)
    }

    /// The renames among a diff's entries: exact by content id, then similar (see
    /// [`crate::flat::similar_renames`]) among the deletions and additions left.
    pub fn renames_in(&self, diff: &TreeDiff) -> Result<Vec<Rename>, TreeError> {
        self.reader().renames_in(diff)
    }

    /// The exact renames `snapshot` made against its parent, reading trees only, no file:
    /// what `log` counts on each line (similar renames would read every row's files).
    pub fn exact_renames_of(&self, snapshot: &Snapshot) -> Result<Vec<Rename>, TreeError> {
        self.reader().exact_renames_of(snapshot)
    }

    /// What `snapshot` changed against its parent (against an empty tree when it has none
    /// or the parent was pruned), as a diff whose entries [`Workspace::file_diff`] shows.
    pub fn diff_of(&self, snapshot: &Snapshot) -> Result<TreeDiff, TreeError> {
        self.reader().diff_of(snapshot)
    }

    /// The snapshots pulled from remotes (`snap pull`), by remote and origin number: never
    /// part of this workspace's history, named `REMOTE#N`.
    pub fn pulled(&self) -> Result<Vec<snap_store::Pulled>, TreeError> {
        self.reader().pulled()
    }

    /// Snapshots newest first: HEAD's ancestry and the redo stack, or every one with `all`.
    pub fn log(&self, all: bool) -> Result<Vec<LogEntry>, TreeError> {
        self.reader().log(all)
    }

    /// The log (as [`Self::log`]) of only the snapshots that changed any of `paths`
    /// (workspace-relative; a directory counts when anything under it changed, and `""` is
    /// the whole tree): the entry a snapshot's tree holds at the path differs from its
    /// parent's, in kind, content, size or mode. Only the trees along each path are read.
    /// A first snapshot changed whatever it holds; one whose parent is gone from the store
    /// counts as changing everything, since nothing says otherwise.
    pub fn log_touching(&self, all: bool, paths: &[Vec<u8>]) -> Result<Vec<LogEntry>, TreeError> {
        self.reader().log_touching(all, paths)
    }

    /// The store directory (`.snap/`, or the external store).
    pub fn store_dir(&self) -> &Path {
        self.parts.store.dir()
    }

    /// The turn `session` is in (0 before its first prompt).
    pub fn turn(&self, session: &str) -> Result<u64, TreeError> {
        self.reader().turn(session)
    }

    /// What `session` was last told about, if anything.
    pub fn told(&self, session: &str) -> Result<Option<Told>, TreeError> {
        self.reader().told(session)
    }

    /// The files that differ between two stored trees, reading only the directories whose
    /// trees differ.
    pub fn files_changed(
        &self,
        from: &ObjectId,
        to: &ObjectId,
    ) -> Result<Vec<(Vec<u8>, Change)>, TreeError> {
        self.reader().files_changed(from, to)
    }

    /// The newest snapshot whose record passes `test`.
    pub fn newest_where(
        &self,
        test: impl Fn(&SnapshotRecord) -> bool,
    ) -> Result<Option<Snapshot>, TreeError> {
        self.reader().newest_where(test)
    }

    /// Pack files that may hold history the catalog does not name (see `repair`).
    pub fn history_outside_catalog(&self) -> Result<Vec<PathBuf>, TreeError> {
        self.reader().history_outside_catalog()
    }

    /// Store directories this open found missing and made again.
    pub fn mended(&self) -> &[PathBuf] {
        self.parts.store.mended()
    }

    /// The history model: every snapshot record, read once, placed against HEAD and grouped
    /// by session, turn and tool call. Owned: the store is free again once it returns.
    pub fn history(&self) -> Result<History, TreeError> {
        self.reader().history()
    }

    /// The redo stack, the next redo's snapshot last.
    pub fn redo_stack(&self) -> Result<Vec<ObjectId>, TreeError> {
        self.reader().redo_stack()
    }

    /// Where the `n`th last turn of HEAD's session began (see [`History::turn_start`]).
    pub fn turn_start(&self, n: u64) -> Result<ObjectId, TreeError> {
        self.reader().turn_start(n)
    }

    /// How many snapshots of the redo stack the next `n` turns hold (see
    /// [`History::turn_redo_count`]).
    pub fn turn_redo_count(&self, n: u64) -> Result<u64, TreeError> {
        self.reader().turn_redo_count(n)
    }

    /// Each line of `path` as snapshot `at` holds it, with the snapshot that brought it. A
    /// file absent from a snapshot's parent, or a parent pruned away, credits every line
    /// still open to that snapshot. Binary files are refused.
    pub fn blame(&self, at: &Snapshot, path: &[u8]) -> Result<Vec<BlameLine>, TreeError> {
        self.reader().blame(at, path)
    }

    /// What large files cost the store: each distinct tree of history read once, each
    /// distinct large content and chunk counted once.
    pub fn large_cost(&self) -> Result<LargeCost, TreeError> {
        self.snapshotter().large_cost()
    }

    /// The working tree against HEAD; writes nothing.
    pub fn status(&self) -> Result<Status, TreeError> {
        self.snapshotter().status()
    }

    /// The files that differ from `from` (default HEAD) to `to` (default the working tree),
    /// limited to `paths` (and what is under them) when any are given. Writes nothing.
    pub fn diff(
        &self,
        from: Option<&str>,
        to: Option<&str>,
        paths: &[Vec<u8>],
    ) -> Result<TreeDiff, TreeError> {
        self.snapshotter().diff(from, to, paths)
    }

    /// The line diff of one entry of `diff` (symlinks diff their targets).
    pub fn file_diff(&self, diff: &TreeDiff, entry: &DiffEntry) -> Result<FileDiff, TreeError> {
        self.snapshotter().file_diff(diff, entry)
    }

    /// Checks the store; with `read_data`, every object's bytes.
    pub fn verify(&self, read_data: bool) -> Result<VerifyReport, TreeError> {
        self.upkeep().verify(read_data)
    }

    /// Store size and what gc would reclaim.
    pub fn stats(&self) -> Result<StoreStats, TreeError> {
        self.upkeep().stats()
    }

    /// Writes snapshot `reference` (only `paths` and what is under them, when given) into
    /// `dest`, which must be empty or absent, and outside the workspace.
    pub fn export(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dest: &Path,
    ) -> Result<ExportOutcome, TreeError> {
        self.upkeep().export(reference, paths, dest)
    }

    /// As [`Self::export`], writing at most `step` entries per step (at least one).
    pub fn export_in_steps(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dest: &Path,
        step: usize,
    ) -> Result<ExportOutcome, TreeError> {
        self.upkeep().export_in_steps(reference, paths, dest, step)
    }

    /// Every secret-looking path any snapshot holds, in path order.
    pub fn secrets(&self, scan: SecretScan) -> Result<Vec<SecretHit>, TreeError> {
        secrets_in(&self.parts.store, &self.parts.config, scan)
    }
}
