//! `Workspace`: a working tree and its store; every history operation of DESIGN §6, carried
//! out with the crash-safety protocol of §7.

use std::collections::{HashMap, HashSet};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{SystemTime, UNIX_EPOCH};

use snap_store::{
    ChangeStats, Commit, DirCacheUpdate, EntryKind, GcReport, HistoryState, ObjectId, ObjectKind,
    ObjectWriter, PruneReport, RepairReport, Retention, ScanMemo, SnapshotKind, SnapshotRecord,
    StatCacheUpdate, StatEntry, StatKey, Store, StoreStats, VerifyReport, WalkMemo,
    WorkspaceIdentity, failpoint,
};

use rustix::fs::{Mode, OFlags};

use crate::TreeError;
use crate::config::Config;
use crate::diff::{self, DiffEntry, FileDiff, Side, TreeDiff};
use crate::flat::{
    self, Change, FlatTree, Node, UNBUILT, build_trees, count_changes, diff_files, flatten,
};
use crate::marker::{Marker, Op};
use crate::observer::{Event, Observer, Phase, Ticker};
use crate::restore::{self, Plan};
use crate::scan::{self, STORE_DIR, ScanReport};

/// Prints how long each phase of a scan took when `SNAP_TIMING` is set: a measuring aid for
/// performance work, silent otherwise.
struct PhaseTimer(Option<std::time::Instant>);

impl PhaseTimer {
    fn from_env() -> PhaseTimer {
        PhaseTimer(std::env::var_os("SNAP_TIMING").map(|_| std::time::Instant::now()))
    }

    fn mark(&self, phase: &str) {
        if let Some(start) = self.0 {
            // The peak resident size so far, where the kernel reports it.
            let peak = std::fs::read_to_string("/proc/self/status")
                .ok()
                .and_then(|s| {
                    s.lines()
                        .find(|l| l.starts_with("VmHWM:"))
                        .map(str::to_owned)
                })
                .map_or(String::new(), |l| {
                    format!(", {}", l.split_whitespace().collect::<Vec<_>>().join(" "))
                });
            eprintln!(
                "snap timing: {phase} at {:.1} ms{peak}",
                start.elapsed().as_secs_f64() * 1e3
            );
        }
    }
}

/// A snapshot's id with its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot object's id.
    pub id: ObjectId,
    /// The record the catalog holds for it.
    pub record: SnapshotRecord,
}

/// What `save` records besides the tree.
#[derive(Clone, Debug, Default)]
pub struct SaveOptions {
    /// Free text shown by `log`.
    pub message: String,
    /// Agent step (turn) number; makes the snapshot resolvable as `step:N`.
    pub step: Option<u64>,
    /// Agent session name.
    pub session: Option<String>,
    /// Free key=value metadata, kept in the order given.
    pub meta: Vec<(String, String)>,
    /// Make a snapshot even when nothing changed.
    pub allow_empty: bool,
}

/// One changed path.
pub type PathChange = (Vec<u8>, Change);

/// The result of a save.
#[derive(Clone, Debug)]
pub struct SaveOutcome {
    /// `None` when nothing changed.
    pub snapshot: Option<Snapshot>,
    /// Paths changed against HEAD, in path order; empty when nothing was saved.
    pub changes: Vec<PathChange>,
    /// Files the scan skipped or saw vanish.
    pub report: ScanReport,
    /// Snapshots pruned (and what gc gave back) by the automatic retention this save ran.
    pub retention: Option<(PruneReport, GcReport)>,
}

/// The result of an undo, redo or restore (or of its preview).
#[derive(Clone, Debug)]
pub struct MoveOutcome {
    /// Undo, redo or restore.
    pub op: Op,
    /// True for a preview: nothing was written.
    pub dry_run: bool,
    /// The unsaved changes saved before moving (not in a preview).
    pub auto_saved: Option<Snapshot>,
    /// True when the working tree had unsaved changes.
    pub was_dirty: bool,
    /// The snapshot the working tree now matches (HEAD), or would match.
    pub target: Snapshot,
    /// For restore: the new snapshot recording it.
    pub created: Option<Snapshot>,
    /// Snapshots stepped over, nearest to where we started first.
    pub passed: Vec<Snapshot>,
    /// Paths that differ between the working tree and the target, in path order.
    pub changes: Vec<PathChange>,
    /// Planned paths left exactly as they were (DESIGN §14): ignored, excluded, oversize or
    /// special files, directories still holding such files, and files that changed again
    /// after being saved. In path order. A preview names those the ignore rules keep.
    pub kept: Vec<Vec<u8>>,
}

impl MoveOutcome {
    /// The outcome as planned, before anything is saved or written.
    fn planned(
        op: Op,
        dry_run: bool,
        was_dirty: bool,
        target: Snapshot,
        passed: Vec<Snapshot>,
        changes: Vec<PathChange>,
    ) -> MoveOutcome {
        MoveOutcome {
            op,
            dry_run,
            auto_saved: None,
            was_dirty,
            target,
            created: None,
            passed,
            changes,
            kept: Vec::new(),
        }
    }
}

/// An interrupted operation finished when the workspace was opened.
#[derive(Clone, Debug)]
pub struct Recovered {
    /// The operation that was interrupted.
    pub op: Op,
    /// The snapshot now HEAD, which the working tree was made to match.
    pub head: Snapshot,
    /// Paths written or removed, leftover temporary files included.
    pub paths_touched: usize,
    /// Planned paths left exactly as they were (see [`MoveOutcome::kept`]).
    pub kept: Vec<Vec<u8>>,
}

/// The working tree as a move's scan found it.
struct Scanned<'a> {
    /// Every tracked path.
    flat: &'a FlatTree,
    /// Each regular file's stat, in path order.
    stats: &'a [(Vec<u8>, StatKey)],
    /// The root tree of `flat`, in the store.
    root: ObjectId,
    /// The snapshot whose tree is `root` (the unsaved changes', or HEAD).
    parent: Option<&'a Snapshot>,
}

/// The working tree against HEAD.
#[derive(Clone, Debug)]
pub struct Status {
    /// HEAD's snapshot; `None` before the first.
    pub head: Option<Snapshot>,
    /// Paths that differ from HEAD's tree, in path order.
    pub changes: Vec<PathChange>,
    /// Directory-level changes a save would also record, in path order: empty directories
    /// added or removed, directories whose mode changed.
    pub dirs: Vec<PathChange>,
    /// Files the scan skipped or saw vanish.
    pub report: ScanReport,
    /// Snapshots on the redo stack.
    pub redo_depth: usize,
}

/// One row of the log.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// The snapshot this row shows.
    pub snapshot: Snapshot,
    /// True for the snapshot HEAD names.
    pub is_head: bool,
    /// On the redo stack.
    pub redoable: bool,
    /// Neither HEAD's ancestor nor redoable: abandoned by a save after an undo.
    pub abandoned: bool,
}

/// A working tree with its store open (and locked).
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    store: Store,
    config: Config,
    recovered: Vec<Recovered>,
    observer: ObserverSlot,
    /// A stop request moves check between files (see `interrupt`).
    stop: Option<Arc<AtomicBool>>,
}

/// Holds the observer; exists so that `Workspace` can derive `Debug`.
#[derive(Default)]
struct ObserverSlot(Option<Observer>);

impl std::fmt::Debug for ObserverSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "Some(observer)"
        } else {
            "None"
        })
    }
}

/// A capture's tree and cache entries, with whether it differs from HEAD.
struct Unsaved<'a> {
    dirty: bool,
    root: ObjectId,
    flat: &'a FlatTree,
    cache: StatCacheUpdate,
}

/// Tree cache entries to write: each built directory's subtree memo.
type TreeMemos = Vec<(Vec<u8>, WalkMemo)>;

/// Each directory's subtree digest and newest mtime (see [`scan::subtree_sums`]).
type Subtrees = HashMap<Vec<u8>, (scan::WalkSum, i64)>;
/// The tree cache: each directory's subtree memo, as the last exact scan left it.
type TreeCache = HashMap<Vec<u8>, WalkMemo>;
/// Directories whose trees the tree cache vouches for, with their ids.
type CleanTrees = HashMap<Vec<u8>, ObjectId>;

/// The stat cache as loaded beside the walk.
type LoadedStatCache = Result<Vec<(Vec<u8>, StatEntry)>, snap_store::StoreError>;

/// What a capture knows once its walk is done, for the part that stores.
struct ScanStart {
    fs_now_ns: i64,
    /// The walk memo as stored before this capture.
    old_walk: Option<WalkMemo>,
    /// HEAD's root, for a save.
    clean_root: Option<ObjectId>,
    keep_stats: bool,
    dirs: DirCacheUpdate,
}

/// The capture of a tree the walk memo vouches for: `root`, nothing read or built.
fn unchanged_capture(root: ObjectId, walk: scan::Walk, dirs: DirCacheUpdate, dry: bool) -> Capture {
    let cache = match dry {
        true => StatCacheUpdate::default(),
        false => StatCacheUpdate {
            dirs,
            ..StatCacheUpdate::default()
        },
    };
    Capture {
        flat: FlatTree::new(),
        stats: Vec::new(),
        root,
        report: ScanReport {
            too_large: walk.too_large,
            special: walk.special,
            vanished: 0,
        },
        cache,
        pruned: HashSet::new(),
    }
}

/// The working tree against HEAD (see `Workspace::against_head`).
struct AgainstHead {
    /// Changed paths in path order.
    changes: Vec<PathChange>,
    /// Directory-level changes (see [`Status::dirs`]).
    dirs: Vec<PathChange>,
    /// HEAD's entries of at least the changed paths.
    old: FlatTree,
    /// The working tree's entries of at least the changed paths.
    new: FlatTree,
    report: ScanReport,
}

struct Capture {
    flat: FlatTree,
    /// Each regular file's stat as the scan saw it, in path order; only when asked for (moves
    /// check that nothing changed since), else empty.
    stats: Vec<(Vec<u8>, StatKey)>,
    root: ObjectId,
    report: ScanReport,
    /// What this capture teaches the stat cache; empty for a dry capture, whose objects are
    /// not stored and so must never be vouched for.
    cache: StatCacheUpdate,
    /// Directories whose entries `flat` leaves out (their ids are known): a save's scan
    /// prunes what the tree cache vouches for. Empty for a whole capture.
    pruned: HashSet<Vec<u8>>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum After {
    /// HEAD moves to the new snapshot and the redo stack is cleared.
    Advance,
    /// HEAD and the redo stack stay as they are.
    Detached,
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

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

fn canonical(dir: &Path) -> Result<PathBuf, TreeError> {
    dir.canonicalize().map_err(|e| TreeError::io(dir, e))
}

impl Workspace {
    /// Opens the workspace whose root is `start` or its nearest ancestor with a store, or, with
    /// `store_dir`, the workspace rooted at `start` with its store there. Finishes any
    /// interrupted operation first: for commands that write.
    pub fn discover(start: &Path, store_dir: Option<&Path>) -> Result<Workspace, TreeError> {
        Workspace::discover_with(start, store_dir, Interrupted::Finish)
    }

    /// Opens as [`Workspace::discover`] does, but leaves an interrupted operation for a
    /// writing command or `recover` to finish: a command that only reads never changes the
    /// working tree. [`Workspace::pending`] names what waits.
    pub fn discover_reading(
        start: &Path,
        store_dir: Option<&Path>,
    ) -> Result<Workspace, TreeError> {
        Workspace::discover_with(start, store_dir, Interrupted::Leave)
    }

    fn discover_with(
        start: &Path,
        store_dir: Option<&Path>,
        interrupted: Interrupted,
    ) -> Result<Workspace, TreeError> {
        let start = canonical(start)?;
        let store_dir = match store_dir {
            Some(dir) => dir.to_path_buf(),
            None => find_root(&start)
                .ok_or_else(|| TreeError::NoWorkspace(start.clone()))?
                .join(STORE_DIR),
        };
        Workspace::open(&start, &store_dir, interrupted, Claim::Inside)
    }

    /// Interrupted operations waiting to be finished (only a workspace opened with
    /// [`Workspace::discover_reading`] can have any).
    pub fn pending(&self) -> Result<Vec<Marker>, TreeError> {
        Marker::find(self.store.dir())
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
        drop(Store::init(&store_dir)?);
        let claim = if force { Claim::Here } else { Claim::Inside };
        Workspace::open(&root, &store_dir, Interrupted::Finish, claim)
    }

    /// Opens the store in `store_dir` for a command started in `start` (canonical), and
    /// settles the workspace root by the store's recorded identity (see [`settle_root`]).
    fn open(
        start: &Path,
        store_dir: &Path,
        interrupted: Interrupted,
        claim: Claim,
    ) -> Result<Workspace, TreeError> {
        let store_dir = store_dir
            .canonicalize()
            .map_err(|_| snap_store::StoreError::NotFound(store_dir.to_path_buf()))?;
        let store = Store::open(&store_dir)?;
        let records = interrupted == Interrupted::Finish && !store.is_read_only();
        let root = settle_root(start, &store_dir, claim, records)?;
        let config = Config::load(&store_dir)?;
        let mut ws = Workspace {
            root,
            store,
            config,
            recovered: Vec::new(),
            observer: ObserverSlot::default(),
            stop: crate::interrupt::process_flag(),
        };
        if interrupted == Interrupted::Finish {
            ws.recover()?;
        }
        Ok(ws)
    }

    /// Makes moves stop between two files once `flag` is set (instead of the process-wide
    /// flag of [`crate::stop_moves_on`]).
    pub fn set_stop_flag(&mut self, flag: Arc<AtomicBool>) {
        self.stop = Some(flag);
    }

    /// Sets the callback that hears of snapshots, restores, recoveries, errors and progress.
    /// Recoveries done while opening are reported to it at once.
    pub fn set_observer(&mut self, observer: Observer) {
        for r in &self.recovered {
            observer(&Event::Recovered(r));
        }
        self.observer = ObserverSlot(Some(observer));
    }

    fn emit(&self, event: Event<'_>) {
        if let Some(observe) = &self.observer.0 {
            observe(&event);
        }
    }

    /// Reports an error to the observer on its way out.
    fn observed<T>(&self, result: Result<T, TreeError>) -> Result<T, TreeError> {
        if let Err(e) = &result {
            self.emit(Event::Error(e));
        }
        result
    }

    /// The workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The workspace id the store recorded (32 hex digits), if it has recorded one yet: a
    /// store opened only for reading, before any writing command, may not have.
    pub fn workspace_id(&self) -> Result<Option<String>, TreeError> {
        Ok(WorkspaceIdentity::read(self.store.dir())?.map(|i| i.id_hex()))
    }

    /// The open store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Interrupted operations finished when this workspace was opened.
    pub fn recovered(&self) -> &[Recovered] {
        &self.recovered
    }

    /// Finishes each interrupted operation by replaying its recorded plan, guarded: only the
    /// paths between the tree it started from and its target are touched, each only while it
    /// holds one of those two states; a file holding anything else is saved first (DESIGN
    /// §14). Then HEAD and the redo stack are committed and the marker removed.
    fn recover(&mut self) -> Result<(), TreeError> {
        for marker in Marker::find(self.store.dir())? {
            let head = self.snapshot(marker.head)?;
            let after = flatten(&self.store, &head.record.root)?;
            let from = match marker.from {
                Some(from) => from,
                // An older marker did not record it: before HEAD moves, HEAD is (nearly
                // always) the tree the move started from, and the guards cover the rest.
                None => self.head()?.map_or(head.record.root, |h| h.record.root),
            };
            let before = flatten(&self.store, &from)?;
            let mut plan = Plan::new(&before, &after);
            plan.leave_out(&marker.kept);
            let sides = restore::Sides {
                before: &before,
                after: &after,
            };
            let applied =
                self.apply_saving_first(marker.op, &plan, sides, (Some(&head), &after))?;
            let dirs = plan.write.iter().map(|(p, _)| flat::split(p).0);
            let swept = restore::sweep_temp(&self.root, std::iter::once(&b""[..]).chain(dirs))?;
            self.store.set_history(HistoryState {
                head: Some(marker.head),
                redo: marker.redo.clone(),
            })?;
            marker.remove(self.store.dir())?;
            let mut kept = applied.kept;
            kept.extend(marker.kept.iter().cloned());
            kept.sort_unstable();
            kept.dedup();
            self.recovered.push(Recovered {
                op: marker.op,
                head,
                paths_touched: applied.touched + swept,
                kept,
            });
        }
        Ok(())
    }

    /// Carries out `plan` guarded; then saves the files found holding neither side (as a
    /// snapshot of `parent`'s tree with them, listed by `log --all`) and carries out their
    /// steps too. Returns what was touched, and every path kept.
    fn apply_saving_first(
        &self,
        op: Op,
        plan: &Plan,
        sides: restore::Sides<'_>,
        parent: (Option<&Snapshot>, &FlatTree),
    ) -> Result<restore::Applied, TreeError> {
        let ticker = Ticker::new(self.observer.0.as_ref(), Phase::Restore, plan.len() as u64);
        let mut applied = restore::apply_with(self.work_tree(), plan, sides, &|| ticker.tick())?;
        if applied.differs.is_empty() {
            return Ok(applied);
        }
        let differs = std::mem::take(&mut applied.differs);
        let saved = self.save_found(op, &differs, sides.before, parent)?;
        let mut rest = plan.clone();
        rest.keep_only(&differs);
        let again = restore::Sides {
            before: &saved,
            after: sides.after,
        };
        let second = restore::apply(self.work_tree(), &rest, again)?;
        applied.touched += second.touched;
        // Changed again between the save and the write: left as it is (nothing is lost).
        applied
            .kept
            .extend(second.kept.into_iter().chain(second.differs));
        applied.kept.sort_unstable();
        Ok(applied)
    }

    /// Saves what `paths` hold now, over `base`, as a snapshot of kind auto-before-`op`
    /// (detached: HEAD does not move); returns `base` with their new entries.
    fn save_found(
        &self,
        op: Op,
        paths: &[Vec<u8>],
        base: &FlatTree,
        (parent, parent_flat): (Option<&Snapshot>, &FlatTree),
    ) -> Result<FlatTree, TreeError> {
        let writer = self.store.writer();
        let mut flat = base.clone();
        for path in paths {
            let node = scan::store_path(&self.root, path, &writer)?;
            let mut ancestor = flat::split(path).0;
            while !ancestor.is_empty() {
                // Rebuilt (its id unbuilt), keeping the mode it had.
                let mode = flat.get(ancestor).and_then(|n| n.mode);
                flat.insert(
                    ancestor.to_vec(),
                    Node {
                        kind: EntryKind::Dir,
                        size: 0,
                        id: UNBUILT,
                        mode,
                    },
                );
                ancestor = flat::split(ancestor).0;
            }
            flat.insert(path.clone(), node);
        }
        let mut built = flat.clone();
        let root = build_trees(&writer, &mut built)?;
        let changes = diff_files(parent_flat, &built);
        let opts = SaveOptions {
            message: format!(
                "files changed during {}, saved before replacing them",
                op.as_str()
            ),
            ..SaveOptions::default()
        };
        let kind = match op {
            Op::Undo => SnapshotKind::AutoBeforeUndo,
            Op::Redo => SnapshotKind::AutoBeforeRedo,
            Op::Restore => SnapshotKind::AutoBeforeRestore,
        };
        self.record_snapshot(
            writer,
            StatCacheUpdate::default(),
            kind,
            &opts,
            (root, &built, flat_totals(&built)),
            (parent, parent_flat),
            &changes,
            After::Detached,
        )?;
        Ok(flat)
    }

    /// The working tree as a plan is carried out in it.
    fn work_tree(&self) -> restore::WorkTree<'_> {
        restore::WorkTree {
            root: &self.root,
            store: &self.store,
            max_file_size: self.config.max_file_size,
            stop: self.stop.as_deref(),
        }
    }

    /// Finishes interrupted operations (already done by opening); returns what was finished.
    pub fn recover_now(&mut self) -> Result<Vec<Recovered>, TreeError> {
        self.recover()?;
        Ok(self.recovered.clone())
    }

    /// A snapshot by id.
    pub fn snapshot(&self, id: ObjectId) -> Result<Snapshot, TreeError> {
        Ok(Snapshot {
            id,
            record: self.store.snapshot(&id)?,
        })
    }

    /// Resolves a reference (`@`, `@~N`, `last`, `#SEQ`, `step:N`, id prefix).
    pub fn resolve(&self, reference: &str) -> Result<Snapshot, TreeError> {
        let (id, record) = self.store.resolve(reference)?;
        Ok(Snapshot { id, record })
    }

    /// HEAD, if any snapshot exists.
    pub fn head(&self) -> Result<Option<Snapshot>, TreeError> {
        self.store
            .history()?
            .head
            .map(|id| self.snapshot(id))
            .transpose()
    }

    /// Every path of a snapshot.
    pub fn files(&self, snapshot: &Snapshot) -> Result<FlatTree, TreeError> {
        Ok(flatten(&self.store, &snapshot.record.root)?)
    }

    fn flat_of(&self, snapshot: Option<&Snapshot>) -> Result<FlatTree, TreeError> {
        snapshot.map_or_else(|| Ok(FlatTree::new()), |s| self.files(s))
    }

    /// The content of `path` in a snapshot (a symlink's target for a link).
    pub fn read_file(&self, snapshot: &Snapshot, path: &[u8]) -> Result<Vec<u8>, TreeError> {
        let shown = || {
            (
                String::from_utf8_lossy(path).into_owned(),
                format!("#{}", snapshot.record.seq),
            )
        };
        let node = self
            .files(snapshot)?
            .get(path)
            .copied()
            .filter(|n| n.kind != EntryKind::Dir)
            .ok_or_else(|| {
                let (p, s) = shown();
                TreeError::PathNotInSnapshot(p, s)
            })?;
        Ok(self.store.read_file(&node.id)?)
    }

    /// The parent snapshot, unless this is a root or the parent was pruned.
    pub fn parent_of(&self, snapshot: &Snapshot) -> Result<Option<Snapshot>, TreeError> {
        let Some(parent) = snapshot.record.parent else {
            return Ok(None);
        };
        match self.store.snapshot(&parent) {
            Ok(record) => Ok(Some(Snapshot { id: parent, record })),
            Err(snap_store::StoreError::MissingObject { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// What changed in `snapshot` against its parent (everything, if the parent was pruned).
    pub fn changes_of(&self, snapshot: &Snapshot) -> Result<Vec<PathChange>, TreeError> {
        let parent = self.parent_of(snapshot)?;
        Ok(diff_files(
            &self.flat_of(parent.as_ref())?,
            &self.files(snapshot)?,
        ))
    }

    fn capture(&self, writer: &ObjectWriter<'_>) -> Result<Capture, TreeError> {
        self.capture_with(writer, false, None)
    }

    /// As [`Self::capture`], also keeping each file's stat when `keep_stats`. With
    /// `clean_root` (HEAD's root), a scan whose entries are those that built it skips building
    /// the trees; its directory nodes then carry no ids, so only a save, which stops there
    /// when nothing changed, asks for it.
    fn capture_with(
        &self,
        writer: &ObjectWriter<'_>,
        keep_stats: bool,
        clean_root: Option<ObjectId>,
    ) -> Result<Capture, TreeError> {
        let timer = PhaseTimer::from_env();
        let fs_now_ns = self.fs_clock();
        let (dir_cache, mut dirs) = self.dir_cache()?;
        let old_walk = self.store.walk_memo()?;
        // A save after a save mostly finds the tree as the walk memo left it, and then needs
        // no stat cache; otherwise the cache loads while the walk waits on the filesystem.
        let memo = old_walk.filter(|m| Some(m.root) == clean_root);
        let (preloaded, walk) = self.walk_loading(&dir_cache.records, fs_now_ns, memo.is_none());
        let mut walk = walk?;
        timer.mark(&format!(
            "tree walked ({} directories cached, {} read)",
            walk.dirs_cached,
            walk.dirs.len()
        ));
        dirs.remove = scan::gone_dirs(&dir_cache.records, &walk);
        dirs.put = std::mem::take(&mut walk.dirs);
        if let Some(memo) = memo.filter(|m| walk.unchanged_since(m)) {
            return Ok(unchanged_capture(
                memo.root,
                walk,
                dirs,
                writer.is_dry_run(),
            ));
        }
        let start = ScanStart {
            fs_now_ns,
            old_walk,
            clean_root,
            keep_stats,
            dirs,
        };
        self.store_capture(writer, walk, preloaded, start, &timer)
    }

    /// The rest of a capture the walk memo could not answer: reads and stores what changed
    /// (leaving out, for a save, what the tree cache vouches for), then builds the trees.
    fn store_capture(
        &self,
        writer: &ObjectWriter<'_>,
        mut walk: scan::Walk,
        preloaded: Option<LoadedStatCache>,
        start: ScanStart,
        timer: &PhaseTimer,
    ) -> Result<Capture, TreeError> {
        let exact = !walk.inexact;
        let sum = walk.sum().to_bytes();
        let subtrees = exact.then(|| scan::subtree_sums(&walk));
        let (previous, clean) = match &subtrees {
            Some(subtrees) => {
                let previous = self.store.tree_cache()?;
                let clean = clean_trees(subtrees, &previous);
                (previous, clean)
            }
            None => (HashMap::new(), HashMap::new()),
        };
        // A save leaves out what lies under directories whose trees the tree cache vouches
        // for: it needs their ids, not their files (its diff falls back if HEAD differs there).
        let pruned = match start.clean_root.is_some() && !start.keep_stats {
            true => scan::prune_under(&mut walk, |dir| clean.contains_key(dir)),
            false => 0,
        };
        let cached = match (preloaded, pruned) {
            (Some(cached), _) => cached?,
            (None, 0) => self.store.stat_cache()?,
            (None, _) => self.store.stat_entries(&scan::file_paths(&mut walk))?,
        };
        let mut stored = self.store_files(writer, walk, &cached, &start)?;
        // A cached path under a pruned directory was not walked past, not removed.
        stored
            .gone
            .retain(|path| !clean.contains_key(flat::split(path).0));
        timer.mark(&format!(
            "files stored ({} hashed, {} gone from the cache, {pruned} left out)",
            stored.hashed.len(),
            stored.gone.len()
        ));
        // Only a walk whose every entry is in the tree pins trees down.
        let pinned = exact && stored.report.vanished == 0;
        let subtrees = subtrees.filter(|_| pinned);
        let (root, memo, trees) = self.tree_root(
            writer,
            &mut stored,
            start.clean_root.filter(|_| pruned == 0),
            (subtrees.as_ref(), &clean, &previous),
            start.fs_now_ns,
        )?;
        timer.mark(&format!("trees built ({} rebuilt)", trees.len()));
        let walk_memo = pinned
            .then_some(WalkMemo {
                digest: sum,
                root,
                written_ns: start.fs_now_ns,
            })
            .filter(|m| start.old_walk != Some(*m));
        let cache = match writer.is_dry_run() {
            true => StatCacheUpdate::default(),
            false => StatCacheUpdate {
                put: stored.hashed,
                remove: stored.gone,
                clear: false,
                // A pruned scan's digest covers only part of the tree: no scan memo from it.
                memo: memo.filter(|_| pruned == 0),
                walk: walk_memo,
                trees,
                dirs: start.dirs,
            },
        };
        Ok(Capture {
            flat: stored.flat,
            stats: stored.stats,
            root,
            report: stored.report,
            cache,
            pruned: match pruned {
                0 => HashSet::new(),
                _ => clean.into_keys().collect(),
            },
        })
    }

    /// Reads and stores the walked files the stat cache does not vouch for.
    fn store_files(
        &self,
        writer: &ObjectWriter<'_>,
        walk: scan::Walk,
        cached: &[(Vec<u8>, StatEntry)],
        start: &ScanStart,
    ) -> Result<scan::Stored, TreeError> {
        let view = scan::CacheView {
            entries: cached,
            fs_now_ns: start.fs_now_ns,
        };
        let ticker = Ticker::new(
            self.observer.0.as_ref(),
            Phase::Scan,
            walk.entries.len() as u64,
        );
        scan::store_walk(
            &self.root,
            walk,
            writer,
            self.config.max_file_size,
            &view,
            start.keep_stats,
            &|| ticker.tick(),
        )
    }

    /// Walks the tree with the directory cache; with `preload`, loads the stat cache (one
    /// catalog read) on another thread meanwhile.
    fn walk_loading(
        &self,
        records: &HashMap<Vec<u8>, Vec<u8>>,
        fs_now_ns: i64,
        preload: bool,
    ) -> (Option<LoadedStatCache>, Result<scan::Walk, TreeError>) {
        let view = scan::DirCacheView { records, fs_now_ns };
        std::thread::scope(|s| {
            let cached = preload.then(|| s.spawn(|| self.store.stat_cache()));
            let walk = scan::walk_excluding(&self.root, &self.config, Some(self.store.dir()), view);
            let cached = cached.map(|c| c.join().unwrap_or_else(|p| std::panic::resume_unwind(p)));
            (cached, walk)
        })
    }

    /// The root tree of a scan, built unless the scan memo shows these entries built
    /// `clean_root`; the memo to store when it changed; and the tree cache entries of the
    /// directories built. With `subtrees` (the walk pinned the tree down), the `clean`
    /// directories take their ids from the tree cache instead of being built.
    fn tree_root(
        &self,
        writer: &ObjectWriter<'_>,
        stored: &mut scan::Stored,
        clean_root: Option<ObjectId>,
        (subtrees, clean, previous): (Option<&Subtrees>, &CleanTrees, &TreeCache),
        fs_now_ns: i64,
    ) -> Result<(ObjectId, Option<ScanMemo>, TreeMemos), TreeError> {
        let memo = self.store.scan_memo()?;
        let same_entries = memo.filter(|m| m.digest == stored.digest);
        // HEAD's trees are in the store, and these entries are the ones that built them.
        if let Some(m) = same_entries.filter(|m| Some(m.root) == clean_root) {
            return Ok((m.root, None, Vec::new()));
        }
        let (root, trees) = match subtrees {
            Some(subtrees) => build_reusing(
                writer,
                &mut stored.flat,
                (subtrees, clean, previous),
                fs_now_ns,
            )?,
            None => (build_trees(writer, &mut stored.flat)?, Vec::new()),
        };
        let now = ScanMemo {
            digest: stored.digest,
            root,
        };
        Ok((root, (memo != Some(now)).then_some(now), trees))
    }

    /// The directory cache, empty when it was built under another config; and the update
    /// that starts it afresh in that case.
    fn dir_cache(&self) -> Result<(snap_store::DirCache, DirCacheUpdate), TreeError> {
        let mut cache = self.store.dir_cache()?;
        let fingerprint = self.config.walk_fingerprint(Some(self.store.dir()));
        let mut update = DirCacheUpdate::default();
        if cache.fingerprint != Some(fingerprint) {
            cache.records.clear();
            update.clear = true;
            update.fingerprint = Some(fingerprint);
        }
        Ok((cache, update))
    }

    /// The workspace filesystem's clock, which is what the racy rule compares file times
    /// with: the mtime of an unnamed file created in the workspace root (`O_TMPFILE`, never
    /// visible to a scan). A store on another filesystem may keep finer timestamps, so its
    /// clock is only the fallback, then the system clock (a read-only workspace and store).
    fn fs_clock(&self) -> i64 {
        let flags = OFlags::TMPFILE | OFlags::RDWR | OFlags::CLOEXEC;
        if let Ok(fd) = rustix::fs::openat(rustix::fs::CWD, &self.root, flags, Mode::RUSR) {
            if let Ok(st) = rustix::fs::fstat(&fd) {
                return crate::walker::stat_key(&st).mtime_ns;
            }
        }
        let path = self.store.dir().join("clock");
        let written = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(snap_store::fsio::O_NOFOLLOW)
            .open(&path)
            .and_then(|mut f| {
                std::io::Write::write_all(&mut f, b"x")?;
                f.metadata()
            });
        match written {
            Ok(meta) => scan::stat_key(&meta).mtime_ns,
            Err(_) => now_ns(),
        }
    }

    fn commit_packs(
        &self,
        writer: ObjectWriter<'_>,
        stat_cache: StatCacheUpdate,
    ) -> Result<(), TreeError> {
        let packs = writer.finish()?;
        if !packs.is_empty() || !stat_cache.is_empty() {
            self.store.commit(&Commit {
                packs,
                stat_cache,
                ..Commit::default()
            })?;
        }
        Ok(())
    }

    /// Text lines added and removed by `changes`, when few enough files changed to count them
    /// cheaply. Old content comes from the store; new content from the store or, for objects
    /// this command has not committed yet, from the working tree it was just read from.
    fn line_stats(
        &self,
        old: &FlatTree,
        new: &FlatTree,
        changes: &[PathChange],
    ) -> Option<(u64, u64)> {
        if changes.len() > diff::MAX_LINE_STAT_FILES {
            return None;
        }
        let content = |flat: &FlatTree, path: &[u8]| -> Option<Vec<u8>> {
            let node = flat
                .get(path)
                .filter(|n| matches!(n.kind, EntryKind::File | EntryKind::Executable))?;
            self.store
                .read_file(&node.id)
                .ok()
                .or_else(|| std::fs::read(scan::abs(&self.root, path)).ok())
        };
        let mut total = (0, 0);
        for (path, _) in changes {
            let (a, r) =
                diff::line_counts(content(old, path).as_deref(), content(new, path).as_deref());
            total = (total.0 + a, total.1 + r);
        }
        Some(total)
    }

    #[allow(clippy::too_many_arguments)]
    fn record_snapshot(
        &self,
        writer: ObjectWriter<'_>,
        stat_cache: StatCacheUpdate,
        kind: SnapshotKind,
        opts: &SaveOptions,
        (root, flat, (files, bytes)): (ObjectId, &FlatTree, (u64, u64)),
        (parent, parent_flat): (Option<&Snapshot>, &FlatTree),
        changes: &[PathChange],
        after: After,
    ) -> Result<Snapshot, TreeError> {
        let (added, modified, deleted) = count_changes(changes);
        let stats = ChangeStats {
            added,
            modified,
            deleted,
            files,
            bytes,
            lines: self.line_stats(parent_flat, flat, changes),
        };
        let record = SnapshotRecord {
            seq: self.store.next_seq()?,
            root,
            parent: parent.map(|p| p.id),
            time_ns: now_ns(),
            kind,
            message: opts.message.clone(),
            step: opts.step,
            session: opts.session.clone(),
            meta: opts.meta.clone(),
            stats,
        };
        let id = writer.put(ObjectKind::Snapshot, &record.encode())?;
        let packs = writer.finish()?;
        let history = (after == After::Advance).then(|| HistoryState {
            head: Some(id),
            redo: Vec::new(),
        });
        self.store.commit(&Commit {
            packs,
            snapshots: vec![(id, record.clone())],
            history,
            stat_cache,
            ..Commit::default()
        })?;
        let snapshot = Snapshot { id, record };
        self.emit(Event::SnapshotCreated(&snapshot));
        Ok(snapshot)
    }

    /// Commits what a capture wrote: when the tree had unsaved changes, as an automatic
    /// snapshot of them (child of `parent`), so no undo, redo or restore ever loses work;
    /// otherwise only its packs and stat cache entries.
    fn keep_unsaved(
        &self,
        writer: ObjectWriter<'_>,
        unsaved: Unsaved<'_>,
        parent: Option<&Snapshot>,
        kind: SnapshotKind,
        after: After,
    ) -> Result<Option<Snapshot>, TreeError> {
        if !unsaved.dirty {
            self.commit_packs(writer, unsaved.cache)?;
            return Ok(None);
        }
        let parent_flat = self.flat_of(parent)?;
        let changes = diff_files(&parent_flat, unsaved.flat);
        let before = match kind {
            SnapshotKind::AutoBeforeRedo => "redo",
            SnapshotKind::AutoBeforeRestore => "restore",
            _ => "undo",
        };
        let opts = SaveOptions {
            message: format!("unsaved changes before {before}"),
            ..SaveOptions::default()
        };
        let snapshot = self.record_snapshot(
            writer,
            unsaved.cache,
            kind,
            &opts,
            (unsaved.root, unsaved.flat, flat_totals(unsaved.flat)),
            (parent, &parent_flat),
            &changes,
            after,
        )?;
        Ok(Some(snapshot))
    }

    /// Snapshots the working tree if it differs from HEAD (or always, with `allow_empty`).
    pub fn save(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        self.observed(self.save_inner(opts))
    }

    fn save_inner(&self, opts: &SaveOptions) -> Result<SaveOutcome, TreeError> {
        let head = self.head()?;
        let writer = self.store.writer();
        let clean_root = head.as_ref().map(|h| h.record.root);
        let mut cap =
            self.capture_with(&writer, false, clean_root.filter(|_| !opts.allow_empty))?;
        if head.as_ref().is_some_and(|h| h.record.root == cap.root) && !opts.allow_empty {
            self.commit_packs(writer, cap.cache)?;
            return Ok(SaveOutcome {
                snapshot: None,
                changes: Vec::new(),
                report: cap.report,
                retention: None,
            });
        }
        // `head_flat` holds just the old entries of the changed paths, which is all the line
        // counts need.
        let (changes, head_flat) = self.diff_from_head(&writer, head.as_ref(), &mut cap)?;
        let totals = match (cap.pruned.is_empty(), &head) {
            (false, Some(h)) => totals_after(&h.record.stats, &changes, &head_flat, &cap.flat),
            _ => flat_totals(&cap.flat),
        };
        let snapshot = self.record_snapshot(
            writer,
            cap.cache,
            SnapshotKind::Save,
            opts,
            (cap.root, &cap.flat, totals),
            (head.as_ref(), &head_flat),
            &changes,
            After::Advance,
        )?;
        let retention = self.auto_retention()?;
        Ok(SaveOutcome {
            snapshot: Some(snapshot),
            changes,
            report: cap.report,
            retention,
        })
    }

    /// Prunes and collects garbage once the store holds clearly more than `keep_last`
    /// snapshots and one of them could go, so that a store left alone stays bounded. Cheap
    /// when nothing is due: a count of a catalog table, and past the threshold the oldest
    /// snapshot's time (a week of agent saves is all inside `keep_within`).
    fn auto_retention(&self) -> Result<Option<(PruneReport, GcReport)>, TreeError> {
        let retention = &self.config.retention;
        if !retention.auto || self.store.snapshot_count()? <= retention.auto_threshold() {
            return Ok(None);
        }
        let policy = retention.policy().map_err(|why| TreeError::Config {
            path: self.store.dir().join("config.toml"),
            why,
        })?;
        let now = now_ns();
        if !self.store.prune_due(&policy, now)? {
            return Ok(None);
        }
        let pruned = self.store.prune(&policy, now, false)?;
        let gc = if pruned.removed.is_empty() {
            GcReport::default()
        } else {
            self.store.gc()?
        };
        Ok(Some((pruned, gc)))
    }

    /// Drops snapshots outside `policy` (HEAD, the undo chain and the redo stack stay).
    pub fn prune(&self, policy: &Retention, dry_run: bool) -> Result<PruneReport, TreeError> {
        Ok(self.store.prune(policy, now_ns(), dry_run)?)
    }

    /// Reclaims the space of objects no snapshot references.
    pub fn gc(&self) -> Result<GcReport, TreeError> {
        let progress = |done, total| {
            self.emit(Event::Progress {
                phase: Phase::Gc,
                done,
                total,
            })
        };
        self.observed(
            self.store
                .gc_with_progress(&progress)
                .map_err(TreeError::from),
        )
    }

    /// Checks the store; with `read_data`, every object's bytes.
    pub fn verify(&self, read_data: bool) -> Result<VerifyReport, TreeError> {
        let progress = |done, total| {
            self.emit(Event::Progress {
                phase: Phase::Verify,
                done,
                total,
            })
        };
        self.observed(
            self.store
                .verify_with_progress(read_data, &progress)
                .map_err(TreeError::from),
        )
    }

    /// Store size and what gc would reclaim.
    pub fn stats(&self) -> Result<StoreStats, TreeError> {
        Ok(self.store.stats()?)
    }

    /// Removes every snapshot and reclaims their space; the working tree is not touched.
    pub fn delete_all(&self) -> Result<(usize, GcReport), TreeError> {
        Ok(self.store.delete_all()?)
    }

    /// The working tree against HEAD; writes nothing.
    pub fn status(&self) -> Result<Status, TreeError> {
        let head = self.head()?;
        let against = self.against_head(head.as_ref())?;
        let redo_depth = self.store.history()?.redo.len();
        Ok(Status {
            changes: against.changes,
            dirs: against.dirs,
            head,
            report: against.report,
            redo_depth,
        })
    }

    /// What differs from `head` to the working tree, found as a save finds it (the walk
    /// memo, the pruned scan, a diff by tree ids); writes nothing.
    fn against_head(&self, head: Option<&Snapshot>) -> Result<AgainstHead, TreeError> {
        let writer = self.store.dry_writer();
        let mut cap = self.capture_with(&writer, false, head.map(|h| h.record.root))?;
        let (changes, old) = match head {
            Some(h) if h.record.root == cap.root => (Vec::new(), FlatTree::new()),
            _ => self.diff_from_head(&writer, head, &mut cap)?,
        };
        let dirs = match head {
            Some(h) if h.record.root == cap.root => Vec::new(),
            _ => flat::dir_changes(&self.store, head.map(|h| &h.record.root), &cap.flat)?,
        };
        Ok(AgainstHead {
            changes,
            dirs,
            old,
            new: cap.flat,
            report: cap.report,
        })
    }

    /// The changes from `head` to the capture `cap`, and HEAD's entries of the changed paths.
    /// Only the directories whose tree ids differ from HEAD's are read. When HEAD differs
    /// from the tree cache under a directory `cap` pruned, `cap` becomes a whole capture.
    fn diff_from_head(
        &self,
        writer: &ObjectWriter<'_>,
        head: Option<&Snapshot>,
        cap: &mut Capture,
    ) -> Result<flat::StoredDiff, TreeError> {
        let Some(h) = head else {
            return Ok((diff_files(&FlatTree::new(), &cap.flat), FlatTree::new()));
        };
        let pruned = |dir: &[u8]| cap.pruned.contains(dir);
        if let Some(diff) =
            flat::diff_stored_pruned(&self.store, &h.record.root, &cap.flat, &pruned)?
        {
            return Ok(diff);
        }
        *cap = self.capture_with(writer, false, None)?;
        Ok(flat::diff_stored(&self.store, &h.record.root, &cap.flat)?)
    }

    fn writer(&self, dry_run: bool) -> ObjectWriter<'_> {
        if dry_run {
            self.store.dry_writer()
        } else {
            self.store.writer()
        }
    }

    /// Walks `steps` parents back from `from`: the snapshots passed (nearest first) and the target.
    fn walk_back(
        &self,
        from: &Snapshot,
        steps: u64,
    ) -> Result<(Vec<Snapshot>, Snapshot), TreeError> {
        let mut passed = Vec::new();
        let mut current = from.clone();
        for taken in 0..steps {
            // A parent that prune removed ends the chain like a root does.
            let Some(parent) = self.parent_of(&current)? else {
                return Err(TreeError::NothingToUndo(format!(
                    "HEAD #{} has only {taken} snapshot(s) before it",
                    from.record.seq
                )));
            };
            passed.push(current);
            current = parent;
        }
        Ok((passed, current))
    }

    /// Moves HEAD `n` snapshots back and makes the working tree match. Unsaved changes are
    /// saved first (as an `auto-before-undo` snapshot, which then counts as the first step).
    pub fn undo(&self, n: u64, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        self.observed(self.undo_inner(n, dry_run))
    }

    fn undo_inner(&self, n: u64, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        let head = self
            .head()?
            .ok_or_else(|| TreeError::NothingToUndo("there are no snapshots yet".into()))?;
        let history = self.store.history()?;
        let writer = self.writer(dry_run);
        let cap = self.capture_with(&writer, true, None)?;
        let dirty = cap.root != head.record.root;
        let steps = if dirty { n.saturating_sub(1) } else { n };
        if n == 0 {
            return Err(TreeError::NothingToUndo(
                "the number of steps must be at least 1".into(),
            ));
        }
        let (passed, target) = self.walk_back(&head, steps)?;
        let (plan, target_part) = Plan::to_stored(&self.store, &target.record.root, &cap.flat)?;
        let changes = plan.changes(&cap.flat);
        let mut outcome = MoveOutcome::planned(Op::Undo, dry_run, dirty, target, passed, changes);
        if dry_run {
            outcome.kept = self.keep_ruled_out(&mut plan.clone(), &cap.flat);
            return Ok(outcome);
        }
        let mut redo = history.redo;
        let unsaved = Unsaved {
            dirty,
            root: cap.root,
            flat: &cap.flat,
            cache: cap.cache,
        };
        if let Some(auto) = self.keep_unsaved(
            writer,
            unsaved,
            Some(&head),
            SnapshotKind::AutoBeforeUndo,
            After::Advance,
        )? {
            redo.clear();
            outcome.passed.insert(0, auto.clone());
            outcome.auto_saved = Some(auto);
        }
        redo.extend(outcome.passed.iter().map(|s| s.id));
        let scanned = Scanned {
            flat: &cap.flat,
            stats: &cap.stats,
            root: cap.root,
            parent: Some(outcome.auto_saved.as_ref().unwrap_or(&head)),
        };
        outcome.kept = self.move_to(
            Op::Undo,
            &outcome.target,
            redo,
            scanned,
            (&plan, &target_part),
        )?;
        Ok(outcome)
    }

    /// Moves HEAD `n` snapshots forward along the redo stack. Unsaved changes are saved first
    /// as an `auto-before-redo` snapshot (kept, shown by `log --all`), leaving the stack whole.
    pub fn redo(&self, n: u64, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        self.observed(self.redo_inner(n, dry_run))
    }

    fn redo_inner(&self, n: u64, dry_run: bool) -> Result<MoveOutcome, TreeError> {
        let history = self.store.history()?;
        if n == 0 || history.redo.len() < n as usize {
            let why = format!("the redo stack holds {} snapshot(s)", history.redo.len());
            return Err(TreeError::NothingToRedo(why));
        }
        let head = self
            .head()?
            .ok_or_else(|| TreeError::NothingToRedo("there are no snapshots yet".into()))?;
        let keep = history.redo.len() - n as usize;
        let passed = history.redo[keep..]
            .iter()
            .rev()
            .map(|id| self.snapshot(*id))
            .collect::<Result<Vec<_>, _>>()?;
        let target = passed
            .last()
            .cloned()
            .ok_or_else(|| TreeError::NothingToRedo("empty".into()))?;
        let writer = self.writer(dry_run);
        let cap = self.capture_with(&writer, true, None)?;
        let dirty = cap.root != head.record.root;
        let (plan, target_part) = Plan::to_stored(&self.store, &target.record.root, &cap.flat)?;
        let changes = plan.changes(&cap.flat);
        let mut outcome = MoveOutcome::planned(Op::Redo, dry_run, dirty, target, passed, changes);
        if dry_run {
            outcome.kept = self.keep_ruled_out(&mut plan.clone(), &cap.flat);
            return Ok(outcome);
        }
        let unsaved = Unsaved {
            dirty,
            root: cap.root,
            flat: &cap.flat,
            cache: cap.cache,
        };
        outcome.auto_saved = self.keep_unsaved(
            writer,
            unsaved,
            Some(&head),
            SnapshotKind::AutoBeforeRedo,
            After::Detached,
        )?;
        let scanned = Scanned {
            flat: &cap.flat,
            stats: &cap.stats,
            root: cap.root,
            parent: Some(outcome.auto_saved.as_ref().unwrap_or(&head)),
        };
        let redo = history.redo[..keep].to_vec();
        outcome.kept = self.move_to(
            Op::Redo,
            &outcome.target,
            redo,
            scanned,
            (&plan, &target_part),
        )?;
        Ok(outcome)
    }

    /// Makes the working tree (or only `paths`) match `reference`, recorded as a new snapshot
    /// of kind `restore` so that `undo` returns to the state before it.
    pub fn restore(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dry_run: bool,
    ) -> Result<MoveOutcome, TreeError> {
        self.observed(self.restore_inner(reference, paths, dry_run))
    }

    fn restore_inner(
        &self,
        reference: &str,
        paths: &[Vec<u8>],
        dry_run: bool,
    ) -> Result<MoveOutcome, TreeError> {
        let source = self.resolve(reference)?;
        let head = self.head()?;
        let writer = self.writer(dry_run);
        let cap = self.capture_with(&writer, true, None)?;
        let dirty = head.as_ref().is_none_or(|h| h.record.root != cap.root);
        let (target_root, target_flat) = if paths.iter().any(|p| p.is_empty()) || paths.is_empty() {
            (source.record.root, self.files(&source)?)
        } else {
            let mut merged =
                merge_paths(&cap.flat, &self.files(&source)?, paths, source.record.seq)?;
            (build_trees(&writer, &mut merged)?, merged)
        };
        let changes = diff_files(&cap.flat, &target_flat);
        let mut outcome = MoveOutcome::planned(
            Op::Restore,
            dry_run,
            dirty,
            source.clone(),
            Vec::new(),
            changes,
        );
        if dry_run {
            return Ok(outcome);
        }
        let unsaved = Unsaved {
            dirty,
            root: cap.root,
            flat: &cap.flat,
            cache: cap.cache,
        };
        outcome.auto_saved = self.keep_unsaved(
            writer,
            unsaved,
            head.as_ref(),
            SnapshotKind::AutoBeforeRestore,
            After::Advance,
        )?;
        // The tree already matches: HEAD now names it (the unsaved changes' snapshot, if any).
        if target_root == cap.root {
            return Ok(outcome);
        }
        let parent = outcome.auto_saved.clone().or(head);
        let message = match format!("#{}", source.record.seq) {
            seq if seq == reference => format!("restore {seq}"),
            seq => format!("restore {reference} ({seq})"),
        };
        let opts = SaveOptions {
            message,
            ..SaveOptions::default()
        };
        let created = self.record_snapshot(
            self.store.writer(),
            StatCacheUpdate::default(),
            SnapshotKind::Restore,
            &opts,
            (target_root, &target_flat, flat_totals(&target_flat)),
            (parent.as_ref(), &cap.flat),
            &outcome.changes,
            After::Detached,
        )?;
        let plan = Plan::new(&cap.flat, &target_flat);
        let scanned = Scanned {
            flat: &cap.flat,
            stats: &cap.stats,
            root: cap.root,
            parent: parent.as_ref(),
        };
        outcome.kept = self.move_to(
            Op::Restore,
            &created,
            Vec::new(),
            scanned,
            (&plan, &target_flat),
        )?;
        outcome.target = created.clone();
        outcome.created = Some(created);
        Ok(outcome)
    }

    /// The §7 protocol: marker, working tree, HEAD, marker removed, guarded by §14: new
    /// paths the ignore rules leave out are kept before anything is touched, each path is
    /// changed only while it holds what the scan saw, and a file found changed anyway is
    /// saved first. If the working tree cannot be changed, the paths the plan touched are put
    /// back and the marker removed, so the store stays usable. Returns the paths kept.
    fn move_to(
        &self,
        op: Op,
        target: &Snapshot,
        redo: Vec<ObjectId>,
        scanned: Scanned<'_>,
        (plan, target_flat): (&Plan, &FlatTree),
    ) -> Result<Vec<Vec<u8>>, TreeError> {
        restore::check_unchanged(&self.root, plan, scanned.stats)?;
        let mut plan = plan.clone();
        let ruled_out = self.keep_ruled_out(&mut plan, scanned.flat);
        let marker = Marker {
            op,
            head: target.id,
            redo,
            from: Some(scanned.root),
            kept: ruled_out.clone(),
        };
        marker.write(self.store.dir())?;
        failpoint("marker-written");
        let sides = restore::Sides {
            before: scanned.flat,
            after: target_flat,
        };
        let applied =
            match self.apply_saving_first(op, &plan, sides, (scanned.parent, scanned.flat)) {
                Ok(applied) => applied,
                // Asked to stop: the marker stays, and the next writing command finishes.
                Err(TreeError::Interrupted) => return Err(TreeError::Interrupted),
                Err(e) => {
                    // If even the way back fails, the marker stays: the next writing command
                    // rolls the move forward instead.
                    if self.roll_back(&plan, sides).is_ok() {
                        marker.remove(self.store.dir())?;
                    }
                    return Err(e);
                }
            };
        failpoint("before-head-commit");
        self.store.set_history(HistoryState {
            head: Some(marker.head),
            redo: marker.redo.clone(),
        })?;
        failpoint("after-head-commit");
        marker.remove(self.store.dir())?;
        self.emit(Event::Restored {
            op,
            head: target,
            paths_touched: applied.touched,
        });
        let mut kept = applied.kept;
        kept.extend(ruled_out);
        kept.extend(self.made_visible(&plan, target)?);
        kept.extend(self.left_hollow(&plan, &target.record.root)?);
        kept.sort_unstable();
        kept.dedup();
        Ok(kept)
    }

    /// Directories the target has empty that the move left holding only what it had no
    /// right to remove (ignored or oversize files): the walk does not track such a directory,
    /// so a save right after would record it gone. Named with the kept paths. Only parents
    /// of removed paths can be such, and each is checked in the target's stored trees.
    fn left_hollow(&self, plan: &Plan, target_root: &ObjectId) -> Result<Vec<Vec<u8>>, TreeError> {
        let removed = plan.remove_files.iter().chain(&plan.remove_dirs);
        let parents: std::collections::BTreeSet<&[u8]> = removed
            .map(|p| flat::split(p).0)
            .filter(|p| !p.is_empty())
            .collect();
        let mut out = Vec::new();
        for dir in parents {
            let occupied = std::fs::read_dir(scan::abs(&self.root, dir))
                .is_ok_and(|mut entries| entries.next().is_some());
            if occupied && self.empty_dir_in(target_root, dir)? {
                out.push(dir.to_vec());
            }
        }
        Ok(out)
    }

    /// True when the tree `root` has an empty directory at `path`.
    fn empty_dir_in(&self, root: &ObjectId, path: &[u8]) -> Result<bool, TreeError> {
        let mut tree = self.store.read_tree(root)?;
        for name in path.split(|b| *b == b'/') {
            let Some(entry) = tree.entries.iter().find(|e| e.name == name) else {
                return Ok(false);
            };
            if entry.kind != EntryKind::Dir {
                return Ok(false);
            }
            tree = self.store.read_tree(&entry.id)?;
        }
        Ok(tree.entries.is_empty())
    }

    /// When `plan` changed an ignore file, the paths it thereby made visible: files the move
    /// had no right to touch (ignored before it) that the next save would now record. They
    /// are named with the kept paths, so that nothing a save records after a move is silent.
    fn made_visible(&self, plan: &Plan, target: &Snapshot) -> Result<Vec<Vec<u8>>, TreeError> {
        let rules_changed = plan.paths().iter().any(|p| {
            let name = flat::split(p).1;
            name == b".gitignore" || name == scan::SNAPIGNORE.as_bytes()
        });
        if !rules_changed {
            return Ok(Vec::new());
        }
        let now = self.capture(&self.store.dry_writer())?;
        let (changes, _) = flat::diff_stored(&self.store, &target.record.root, &now.flat)?;
        Ok(changes.into_iter().map(|(path, _)| path).collect())
    }

    /// Takes out of `plan` the paths it would create that the ignore rules (as they are
    /// now, before the move) or the default excludes leave out, with everything under them;
    /// returns them.
    fn keep_ruled_out(&self, plan: &mut Plan, current: &FlatTree) -> Vec<Vec<u8>> {
        let mut judge =
            crate::walker::IgnoreJudge::new(&self.root, &self.config, Some(self.store.dir()));
        let new_dirs = plan.make_dirs.iter().map(|p| (p, true));
        let new_files = plan.write.iter().map(|(p, _)| (p, false));
        let mut kept: Vec<Vec<u8>> = Vec::new();
        for (path, is_dir) in new_dirs.chain(new_files) {
            let tracked = current
                .get(path)
                .is_some_and(|n| (n.kind == EntryKind::Dir) == is_dir);
            let below_kept = kept.iter().any(|k| flat::is_within(path, k));
            if !tracked && !below_kept && judge.leaves_out(path, is_dir) {
                kept.push(path.clone());
            }
        }
        plan.leave_out(&kept);
        kept.sort_unstable();
        kept
    }

    /// Puts back the paths a failed `plan` touched, guarded as the plan was: a path is
    /// returned to its `before` state only while it holds the target's. Nothing else is
    /// touched (judged from the scan, not from the ignore rules the failed move may have
    /// half changed).
    fn roll_back(&self, plan: &Plan, sides: restore::Sides<'_>) -> Result<(), TreeError> {
        let paths = plan.paths();
        let only = |flat: &FlatTree| -> FlatTree {
            paths
                .iter()
                .filter_map(|p| flat.get(*p).map(|n| (p.to_vec(), *n)))
                .collect()
        };
        let (now, then) = (only(sides.after), only(sides.before));
        let back = Plan::new(&now, &then);
        let sides = restore::Sides {
            before: &now,
            after: &then,
        };
        restore::apply(self.work_tree(), &back, sides)?;
        Ok(())
    }

    /// The files that differ from `from` (default HEAD) to `to` (default the working tree),
    /// limited to `paths` (and what is under them) when any are given. Writes nothing.
    pub fn diff(
        &self,
        from: Option<&str>,
        to: Option<&str>,
        paths: &[Vec<u8>],
    ) -> Result<TreeDiff, TreeError> {
        let from_head = from.is_none();
        let from = match from {
            Some(r) => Side::Snapshot(Some(Box::new(self.resolve(r)?))),
            None => Side::Snapshot(self.head()?.map(Box::new)),
        };
        let to = match to {
            Some(r) => Side::Snapshot(Some(Box::new(self.resolve(r)?))),
            None => Side::WorkingTree,
        };
        let (old, new, changes) = match (&from, &to) {
            // The default, HEAD against the working tree: only the changed paths are read.
            (Side::Snapshot(head), Side::WorkingTree) if from_head => {
                let against = self.against_head(head.as_deref())?;
                (against.old, against.new, against.changes)
            }
            _ => {
                let (old, new) = (self.side_flat(&from)?, self.side_flat(&to)?);
                let changes = diff_files(&old, &new);
                (old, new, changes)
            }
        };
        let wanted = |p: &[u8]| {
            paths.is_empty()
                || paths.iter().any(|q| {
                    q.is_empty()
                        || p == q.as_slice()
                        || (p.starts_with(q) && p.get(q.len()) == Some(&b'/'))
                })
        };
        let entries = changes
            .into_iter()
            .filter(|(p, _)| wanted(p))
            .map(|(path, change)| DiffEntry {
                old: old.get(&path).copied().filter(|n| n.kind != EntryKind::Dir),
                new: new.get(&path).copied().filter(|n| n.kind != EntryKind::Dir),
                path,
                change,
            })
            .collect();
        Ok(TreeDiff { from, to, entries })
    }

    fn side_flat(&self, side: &Side) -> Result<FlatTree, TreeError> {
        match side {
            Side::Snapshot(s) => self.flat_of(s.as_deref()),
            Side::WorkingTree => Ok(self.capture(&self.store.dry_writer())?.flat),
        }
    }

    /// The line diff of one entry of `diff` (symlinks diff their targets).
    pub fn file_diff(&self, diff: &TreeDiff, entry: &DiffEntry) -> Result<FileDiff, TreeError> {
        let old = entry
            .old
            .map(|n| self.side_content(&diff.from, &entry.path, &n))
            .transpose()?;
        let new = entry
            .new
            .map(|n| self.side_content(&diff.to, &entry.path, &n))
            .transpose()?;
        Ok(diff::diff_files(old.as_deref(), new.as_deref()))
    }

    fn side_content(&self, side: &Side, path: &[u8], node: &Node) -> Result<Vec<u8>, TreeError> {
        let abs = scan::abs(&self.root, path);
        match (side, node.kind) {
            (Side::Snapshot(_), _) => Ok(self.store.read_file(&node.id)?),
            (Side::WorkingTree, EntryKind::Symlink) => {
                use std::os::unix::ffi::OsStrExt;
                Ok(std::fs::read_link(&abs)
                    .map_err(|e| TreeError::io(&abs, e))?
                    .as_os_str()
                    .as_bytes()
                    .to_vec())
            }
            (Side::WorkingTree, _) => std::fs::read(&abs).map_err(|e| TreeError::io(&abs, e)),
        }
    }

    /// Snapshots newest first: HEAD's ancestry and the redo stack, or every one with `all`.
    pub fn log(&self, all: bool) -> Result<Vec<LogEntry>, TreeError> {
        let history = self.store.history()?;
        let snapshots = self.store.snapshots()?;
        let by_id: std::collections::HashMap<ObjectId, &SnapshotRecord> =
            snapshots.iter().map(|(id, r)| (*id, r)).collect();
        let mut chain = HashSet::new();
        let mut next = history.head;
        while let Some(id) = next.filter(|id| chain.insert(*id)) {
            next = by_id.get(&id).and_then(|r| r.parent);
        }
        let redo: HashSet<ObjectId> = history.redo.iter().copied().collect();
        let entries = snapshots.iter().rev().filter_map(|(id, record)| {
            let abandoned = !chain.contains(id) && !redo.contains(id);
            (all || !abandoned).then(|| LogEntry {
                snapshot: Snapshot {
                    id: *id,
                    record: record.clone(),
                },
                is_head: history.head == Some(*id),
                redoable: redo.contains(id),
                abandoned,
            })
        });
        Ok(entries.collect())
    }
}

/// Files (and symlinks) in a whole flat tree, and their bytes.
fn flat_totals(flat: &FlatTree) -> (u64, u64) {
    let files = flat.values().filter(|n| n.kind != EntryKind::Dir);
    (files.clone().count() as u64, files.map(|n| n.size).sum())
}

/// The totals of a tree that is `parent`'s tree with `changes`: what a pruned scan, whose
/// flat tree holds only the changed directories, records.
fn totals_after(
    parent: &ChangeStats,
    changes: &[PathChange],
    old: &FlatTree,
    new: &FlatTree,
) -> (u64, u64) {
    let size = |flat: &FlatTree, path: &[u8]| flat.get(path).map_or(0, |n| n.size);
    let (mut files, mut bytes) = (parent.files, parent.bytes);
    for (path, change) in changes {
        match change {
            Change::Added => files += 1,
            Change::Deleted => files = files.saturating_sub(1),
            Change::Modified => {}
        }
        bytes = (bytes + size(new, path)).saturating_sub(size(old, path));
    }
    (files, bytes)
}

/// The directories whose subtree digest is the one the tree cache holds, with every entry
/// under them older than the scan that cached it (the walk memo's rule, per directory), and
/// their tree ids.
fn clean_trees(subtrees: &Subtrees, cached: &TreeCache) -> CleanTrees {
    subtrees
        .iter()
        .filter_map(|(path, (sum, newest))| {
            let m = cached.get(path)?;
            (m.digest == sum.to_bytes() && *newest < m.written_ns).then(|| (path.clone(), m.root))
        })
        .collect()
}

/// Builds the trees of `flat`, the `clean` directories taking their ids from the tree
/// cache (and nothing under them built). Returns the root and the new tree cache entries of
/// the directories built.
fn build_reusing(
    writer: &ObjectWriter<'_>,
    flat: &mut FlatTree,
    (subtrees, clean, previous): (&Subtrees, &CleanTrees, &TreeCache),
    fs_now_ns: i64,
) -> Result<(ObjectId, TreeMemos), TreeError> {
    if let Some(root) = clean.get(&b""[..]) {
        return Ok((*root, Vec::new()));
    }
    for (path, id) in clean {
        if let Some(node) = flat.get_mut(path) {
            node.id = *id;
        }
    }
    let root = flat::build_trees_reusing(writer, flat, &|path| {
        previous.get(path).map(|memo| memo.root)
    })?;
    let trees = subtrees
        .iter()
        .filter(|(path, _)| !clean.contains_key(*path))
        .filter_map(|(path, (sum, _))| {
            let id = match path.is_empty() {
                true => root,
                false => flat.get(path)?.id,
            };
            let memo = WalkMemo {
                digest: sum.to_bytes(),
                root: id,
                written_ns: fs_now_ns,
            };
            Some((path.clone(), memo))
        })
        .collect();
    Ok((root, trees))
}

/// The working tree `base` with everything at or under each of `paths` taken from `source`.
fn merge_paths(
    base: &FlatTree,
    source: &FlatTree,
    paths: &[Vec<u8>],
    seq: u64,
) -> Result<FlatTree, TreeError> {
    let under = |p: &[u8], prefix: &[u8]| {
        p == prefix || (p.starts_with(prefix) && p.get(prefix.len()) == Some(&b'/'))
    };
    for path in paths {
        if !source.keys().chain(base.keys()).any(|p| under(p, path)) {
            return Err(TreeError::PathNotInSnapshot(
                String::from_utf8_lossy(path).into_owned(),
                format!("#{seq} or the working tree"),
            ));
        }
    }
    let mut out: FlatTree = base
        .iter()
        .filter(|(p, _)| !paths.iter().any(|q| under(p, q)))
        .map(|(p, n)| (p.clone(), *n))
        .collect();
    for (path, node) in source
        .iter()
        .filter(|(p, _)| paths.iter().any(|q| under(p, q)))
    {
        out.insert(path.clone(), *node);
        let mut ancestor = flat::split(path).0;
        while !ancestor.is_empty() {
            // Rebuilt, with the source's mode (the restored paths come from there).
            let dir = Node {
                kind: EntryKind::Dir,
                size: 0,
                id: UNBUILT,
                mode: source.get(ancestor).and_then(|n| n.mode),
            };
            out.insert(ancestor.to_vec(), dir);
            ancestor = flat::split(ancestor).0;
        }
    }
    Ok(out)
}
