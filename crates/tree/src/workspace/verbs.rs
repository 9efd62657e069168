//! The verbs of [`Workspace`]: each a few lines handing the work to its phase (reading
//! history, capturing, recording, moving, upkeep), so that the phases never meet but
//! through the parts they borrow.

use super::Workspace;
use crate::capture::Snapshotter;
use crate::capture::large::LargeCost;
use crate::capture::save::SaveOutcome;
use crate::capture::save::Status;
use crate::diff::DiffEntry;
use crate::diff::FileDiff;
use crate::diff::TreeDiff;
use crate::error::TreeError;
use crate::flat::Change;
use crate::flat::FlatTree;
use crate::flat::Node;
use crate::flat::Rename;
use crate::history::History;
use crate::history::blame::BlameLine;
use crate::history::query::Reader;
use crate::history::sessions::Told;
use crate::moves::MoveOutcome;
use crate::moves::Mover;
use crate::moves::RevertOf;
use crate::moves::RevertOutcome;
use crate::parts::Run;
use crate::record::SaveOptions;
use crate::secrets::SecretHit;
use crate::secrets::SecretScan;
use crate::secrets::secrets_in;
use crate::snapshot::LogEntry;
use crate::snapshot::PathChange;
use crate::snapshot::Recovered;
use crate::snapshot::Snapshot;
use crate::upkeep::Upkeep;
use crate::upkeep::export::ExportOutcome;
use crate::upkeep::expunge::ExpungeAsk;
use crate::upkeep::expunge::ExpungeOutcome;
use snap_store::GcReport;
use snap_store::ObjectId;
use snap_store::PruneReport;
use snap_store::Retention;
use snap_store::SnapshotRecord;
use snap_store::StoreStats;
use snap_store::VerifyReport;
use std::path::Path;
use std::path::PathBuf;

impl Workspace {
    fn reader(&self) -> Reader<'_> {
        Reader::new(&self.parts)
    }

    fn snapshotter(&self) -> Snapshotter<'_> {
        Snapshotter::new(&self.parts)
    }

    fn mover(&self) -> Mover<'_> {
        Mover::new(&self.parts)
    }

    fn upkeep(&self) -> Upkeep<'_> {
        Upkeep::new(&self.parts)
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

    /// Starts the next turn of `session` and returns its number.
    pub fn start_turn(&self, session: &str) -> Result<u64, TreeError> {
        self.reader().start_turn(session)
    }

    /// What `session` was last told about, if anything.
    pub fn told(&self, session: &str) -> Result<Option<Told>, TreeError> {
        self.reader().told(session)
    }

    /// Records that `session` was told about `told`.
    pub fn set_told(&self, session: &str, told: Told) -> Result<(), TreeError> {
        self.reader().set_told(session, told)
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

    /// Snapshots the working tree if it differs from HEAD (or always, with `allow_empty`).
    pub fn save(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.snapshotter().save(opts)
    }

    /// Records a snapshot of an empty tree as HEAD's child, reading and touching no file:
    /// the empty baseline a new store can start from (as `git commit --allow-empty` on an
    /// empty index). The files on disk are then unsaved changes against it: the next save
    /// records them, and a move back to it saves them first, so nothing is lost.
    pub fn save_empty_tree(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.snapshotter().save_empty_tree(opts)
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

    /// Makes the working tree (or only `paths`) match `reference`, recorded as a new snapshot
    /// of kind `restore` so that `undo` returns to the state before it.
    pub fn restore(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<MoveOutcome, TreeError> {
        self.mover().restore(reference, paths, run)
    }

    /// Takes back what `of` changed, only at `paths` if any are given: each path the change
    /// touched that still holds what it left gets its earlier state back (content, mode,
    /// kind; what the change created goes away), each file changed since is a conflict. A
    /// snapshot whose parent is no longer in the store is refused.
    pub fn revert(
        &self,
        of: RevertOf<'_>,
        paths: &[Vec<u8>],
        run: Run,
    ) -> Result<RevertOutcome, TreeError> {
        self.mover().revert(of, paths, run)
    }

    /// Moves HEAD `n` snapshots back and makes the working tree match. Unsaved changes are
    /// saved first (as an `auto-before-undo` snapshot, which then counts as the first step).
    pub fn undo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.mover().undo(n, run)
    }

    /// Moves HEAD back to `target`, an ancestor of HEAD (or HEAD itself, which then only
    /// puts aside unsaved changes), as an undo of that many steps: unsaved changes are saved
    /// first, and redo comes back the same way.
    pub fn undo_to(&self, target: &ObjectId, run: Run) -> Result<MoveOutcome, TreeError> {
        self.mover().undo_to(target, run)
    }

    /// Moves HEAD `n` snapshots forward along the redo stack. Unsaved changes are saved first
    /// as an `auto-before-redo` snapshot (kept, shown by `log --all`), leaving the stack whole.
    pub fn redo(&self, n: u64, run: Run) -> Result<MoveOutcome, TreeError> {
        self.mover().redo(n, run)
    }

    /// Finishes interrupted operations (already done by opening); returns what was finished.
    pub fn recover_now(&mut self) -> Result<Vec<Recovered>, TreeError> {
        let now = self.mover().recover()?;
        self.recovered.extend(now);
        Ok(self.recovered.clone())
    }

    /// Drops snapshots outside `policy` (HEAD, the undo chain and the redo stack stay).
    pub fn prune(&self, policy: &Retention, run: Run) -> Result<PruneReport, TreeError> {
        self.upkeep().prune(policy, run)
    }

    /// Reclaims the space of objects no snapshot references.
    pub fn gc(&self) -> Result<GcReport, TreeError> {
        self.upkeep().gc()
    }

    /// Checks the store; with `read_data`, every object's bytes.
    pub fn verify(&self, read_data: bool) -> Result<VerifyReport, TreeError> {
        self.upkeep().verify(read_data)
    }

    /// Store size and what gc would reclaim.
    pub fn stats(&self) -> Result<StoreStats, TreeError> {
        self.upkeep().stats()
    }

    /// Removes every snapshot and reclaims their space; the working tree is not touched.
    pub fn delete_all(&self) -> Result<(usize, GcReport), TreeError> {
        self.upkeep().delete_all()
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

    /// Takes `ask.paths` out of history (see the module's documentation). Refused while
    /// pack files the catalog does not name may hold history: a purge would delete them.
    pub fn expunge(&self, ask: ExpungeAsk<'_>, run: Run) -> Result<ExpungeOutcome, TreeError> {
        self.upkeep().expunge(ask, run)
    }

    /// Every secret-looking path any snapshot holds, in path order.
    pub fn secrets(&self, scan: SecretScan) -> Result<Vec<SecretHit>, TreeError> {
        secrets_in(&self.parts.store, &self.parts.config, scan)
    }
}
