//! The `--json` documents of docs/JSON.md as typed structs, so the compiler checks every
//! field name (as ripgrep's printer does). Each is built from the library's own types and
//! printed through a `serde_json::Value`, whose maps keep keys sorted, as the examples show.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use snap_tree::flat::{Listed, Rename};
use snap_tree::secrets::SecretHit;
use snap_tree::{
    ExpungeOutcome, LogEntry, Marker, MoveOutcome, PathChange, PurgeReport, Recovered,
    RevertOutcome, ScanReport, Snapshot,
};

use crate::render::{path_str, time_str};

/// A document as a JSON value. Serializing these structs cannot fail: every map key is a
/// string and every number fits.
pub fn value(doc: &impl Serialize) -> Value {
    serde_json::to_value(doc).unwrap_or(Value::Null)
}

/// Wherever a snapshot appears, `head` included (one shape in every document).
#[derive(Serialize)]
pub struct SnapshotDoc {
    pub id: String,
    pub short_id: String,
    pub seq: u64,
    pub kind: &'static str,
    pub time: String,
    pub time_ns: i64,
    pub message: String,
    pub step: Option<u64>,
    pub session: Option<String>,
    pub meta: BTreeMap<String, String>,
    pub parent: Option<String>,
    pub tree: String,
    pub stats: StatsDoc,
}

/// A snapshot's `stats`.
#[derive(Serialize)]
pub struct StatsDoc {
    pub added: u64,
    pub modified: u64,
    pub deleted: u64,
    pub files: u64,
    pub bytes: u64,
    pub lines_added: Option<u64>,
    pub lines_removed: Option<u64>,
}

impl From<&Snapshot> for SnapshotDoc {
    fn from(s: &Snapshot) -> SnapshotDoc {
        let r = &s.record;
        SnapshotDoc {
            id: s.id.to_hex(),
            short_id: s.id.short(),
            seq: r.seq,
            kind: r.kind.as_str(),
            time: time_str(r.time_ns),
            time_ns: r.time_ns,
            message: r.message.clone(),
            step: r.step,
            session: r.session.clone(),
            meta: r.meta.iter().cloned().collect(),
            parent: r.parent.map(|p| p.to_hex()),
            tree: r.root.to_hex(),
            stats: StatsDoc {
                added: r.stats.added,
                modified: r.stats.modified,
                deleted: r.stats.deleted,
                files: r.stats.files,
                bytes: r.stats.bytes,
                lines_added: r.stats.lines.map(|l| l.0),
                lines_removed: r.stats.lines.map(|l| l.1),
            },
        }
    }
}

/// One changed path.
#[derive(Serialize)]
pub struct ChangeDoc {
    pub path: String,
    pub status: &'static str,
    /// The path a renamed file left (`status` `renamed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
}

/// Changed paths, in their order.
pub fn changes(changes: &[PathChange]) -> Vec<ChangeDoc> {
    changes
        .iter()
        .map(|(p, c)| ChangeDoc {
            path: path_str(p),
            status: c.as_str(),
            from: None,
        })
        .collect()
}

/// Changed paths with `renames` folded in: each rename one change, `renamed` at its new
/// path, with the path it left as `from`.
pub fn changes_renamed(changes: &[PathChange], renames: &[Rename]) -> Vec<ChangeDoc> {
    let paths = changes.iter().map(|(p, c)| (p.as_slice(), *c));
    (snap_tree::flat::listed(paths, renames).into_iter())
        .map(|l| match l {
            Listed::Path(p, c) => ChangeDoc {
                path: path_str(p),
                status: c.as_str(),
                from: None,
            },
            Listed::Renamed(r) => ChangeDoc {
                path: path_str(&r.to),
                status: RENAMED,
                from: Some(path_str(&r.from)),
            },
        })
        .collect()
}

/// The `status` of a change that is a rename.
pub const RENAMED: &str = "renamed";

/// What a scan skipped.
#[derive(Serialize)]
pub struct SkippedDoc {
    pub skipped_too_large: Vec<TooLargeDoc>,
    pub skipped_special: u64,
    pub skipped_unreadable: Vec<UnreadableDoc>,
    /// Ignore files over `max_ignore_file_bytes`: their directories are left out whole.
    pub ignore_files_refused: Vec<String>,
}

/// A file the save could not read.
#[derive(Serialize)]
pub struct UnreadableDoc {
    pub path: String,
    pub error: String,
}

/// A file over `max_file_size`.
#[derive(Serialize)]
pub struct TooLargeDoc {
    pub path: String,
    pub size: u64,
}

/// A file of at least `large_file_size` bytes a save takes for the first time.
#[derive(Serialize)]
pub struct LargeDoc {
    pub path: String,
    pub size: u64,
}

impl LargeDoc {
    pub fn list(files: &[snap_tree::LargeFile]) -> Vec<LargeDoc> {
        (files.iter())
            .map(|f| LargeDoc {
                path: path_str(&f.path),
                size: f.size,
            })
            .collect()
    }
}

/// A file no snapshot holds that was deleted since the last save.
#[derive(Serialize)]
pub struct UntrackedRemovedDoc {
    pub path: String,
    pub size: u64,
    /// `too_large` (over `max_file_size`) or `excluded` (by `exclude_paths`).
    pub reason: &'static str,
}

impl UntrackedRemovedDoc {
    pub fn list(files: &[snap_tree::UntrackedFile]) -> Vec<UntrackedRemovedDoc> {
        (files.iter())
            .map(|f| UntrackedRemovedDoc {
                path: path_str(&f.path),
                size: f.size,
                reason: match f.why {
                    snap_tree::UntrackedWhy::TooLarge => "too_large",
                    snap_tree::UntrackedWhy::Excluded => "excluded",
                },
            })
            .collect()
    }
}

impl From<&ScanReport> for SkippedDoc {
    fn from(report: &ScanReport) -> SkippedDoc {
        let too_large = report.too_large.iter().map(|(p, size)| TooLargeDoc {
            path: path_str(p),
            size: *size,
        });
        let unreadable = report.unreadable.iter().map(|u| UnreadableDoc {
            path: path_str(&u.path),
            error: u.error.clone(),
        });
        SkippedDoc {
            skipped_too_large: too_large.collect(),
            skipped_special: report.special,
            skipped_unreadable: unreadable.collect(),
            ignore_files_refused: report.refused_rules.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap init`.
#[derive(Serialize)]
pub struct InitDoc {
    pub root: String,
    pub store: String,
    pub workspace_id: Option<String>,
    pub created: bool,
}

/// `snap show`: the snapshot, with its changed paths.
#[derive(Serialize)]
pub struct ShowDoc {
    #[serde(flatten)]
    pub snapshot: SnapshotDoc,
    pub changes: Vec<ChangeDoc>,
    /// Its parent was pruned: `changes` is empty, as what it changed is not known.
    pub first_kept: bool,
}

/// `snap save`.
#[derive(Serialize)]
pub struct SaveDoc {
    pub created: bool,
    /// This save created the store (the workspace's first).
    pub initialized: bool,
    pub id: Option<String>,
    pub seq: Option<u64>,
    pub head: Option<SnapshotDoc>,
    pub changes: Vec<ChangeDoc>,
    pub skipped: SkippedDoc,
    /// Files of at least `large_file_size` bytes this save took for the first time.
    pub large_added: Vec<LargeDoc>,
    /// Files no snapshot holds, seen by the last save, gone now.
    pub untracked_removed: Vec<UntrackedRemovedDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<SnapshotDoc>,
}

/// `snap save` with `SNAP_DISABLE=1`.
#[derive(Serialize)]
pub struct DisabledDoc {
    pub created: bool,
    pub disabled: bool,
}

/// `snap status`.
#[derive(Serialize)]
pub struct StatusDoc {
    pub head: Option<SnapshotDoc>,
    pub clean: bool,
    pub changes: Vec<ChangeDoc>,
    pub dirs: Vec<ChangeDoc>,
    pub redo_depth: usize,
    pub pending: Option<PendingDoc>,
    pub root: String,
    pub workspace_id: Option<String>,
    pub hook_failure: Option<HookFailureDoc>,
    pub skipped: SkippedDoc,
    /// Files of at least `large_file_size` bytes the next save would take for the first time.
    pub large_added: Vec<LargeDoc>,
}

/// `snap doctor`.
#[derive(Serialize)]
pub struct DoctorDoc {
    pub root: String,
    pub hooks: Vec<HookPlaceDoc>,
    pub last_hook_save: Option<SnapshotDoc>,
    pub hook_failure: Option<HookFailureDoc>,
    pub store_ok: bool,
    pub store_problems: Vec<String>,
    pub history_outside_catalog: Vec<String>,
    pub set_aside_catalogs: Vec<String>,
    pub pending: Vec<String>,
    /// Secret-looking paths history holds (names only).
    pub secret_paths: Vec<String>,
    pub snap_on_path: Option<String>,
    /// The running watcher's `snap watch --status`, or null.
    pub watcher: Option<Value>,
}

/// Where one agent's hook is, or would go.
#[derive(Serialize)]
pub struct HookPlaceDoc {
    pub agent: &'static str,
    pub installed: bool,
    pub binary: Option<String>,
    pub binary_exists: bool,
    /// The binary is a cargo build output (`target/<profile>/`), which `cargo clean` deletes.
    pub binary_is_build_output: bool,
    pub scope: &'static str,
    pub path: String,
}

/// The last failed `snap hook` call, when no hook save has succeeded since.
#[derive(Serialize)]
pub struct HookFailureDoc {
    pub time: String,
    pub error: String,
}

/// An interrupted move waiting for `snap recover`.
#[derive(Serialize)]
pub struct PendingDoc {
    pub op: &'static str,
    pub target: String,
}

impl From<&Marker> for PendingDoc {
    fn from(m: &Marker) -> PendingDoc {
        PendingDoc {
            op: m.op.as_str(),
            target: m.head.to_hex(),
        }
    }
}

/// `snap undo`, `redo`, `restore` and their `--dry-run`.
#[derive(Serialize)]
pub struct MoveDoc {
    pub op: &'static str,
    pub dry_run: bool,
    pub head: Option<SnapshotDoc>,
    pub target: SnapshotDoc,
    pub created: Option<SnapshotDoc>,
    pub auto_saved: Option<SnapshotDoc>,
    pub had_unsaved_changes: bool,
    pub passed: Vec<SnapshotDoc>,
    pub passed_count: usize,
    pub changes: Vec<ChangeDoc>,
    pub kept: Vec<String>,
}

impl From<&MoveOutcome> for MoveDoc {
    fn from(o: &MoveOutcome) -> MoveDoc {
        MoveDoc {
            op: o.op.as_str(),
            dry_run: o.dry_run,
            head: (!o.dry_run).then(|| SnapshotDoc::from(&o.target)),
            target: SnapshotDoc::from(&o.target),
            created: o.created.as_ref().map(SnapshotDoc::from),
            auto_saved: o.auto_saved.as_ref().map(SnapshotDoc::from),
            had_unsaved_changes: o.was_dirty,
            passed: o.passed.iter().map(SnapshotDoc::from).collect(),
            passed_count: o.passed.len(),
            changes: changes(&o.changes),
            kept: o.kept.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap revert`: the restore that took the change back (`op` is `revert`), the snapshot
/// whose change it was and the state before it, and the files left alone as changed since.
#[derive(Serialize)]
pub struct RevertDoc {
    #[serde(flatten)]
    pub moved: MoveDoc,
    pub reverted: SnapshotDoc,
    pub before: SnapshotDoc,
    pub conflicts: Vec<String>,
}

impl From<&RevertOutcome> for RevertDoc {
    fn from(o: &RevertOutcome) -> RevertDoc {
        let mut moved = MoveDoc::from(&o.moved);
        moved.op = "revert";
        RevertDoc {
            moved,
            reverted: SnapshotDoc::from(&o.reverted),
            before: SnapshotDoc::from(&o.before),
            conflicts: o.conflicts.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap expunge`: the snapshots given new ids, what was taken out by path, the paths
/// excluded from now on, the purge, and (`--secrets`) what looked secret.
#[derive(Serialize)]
pub struct ExpungeDoc {
    pub dry_run: bool,
    pub renamed: Vec<RenamedDoc>,
    pub paths: Vec<ExpungedPathDoc>,
    pub excluded: Vec<String>,
    pub purge: Option<PurgeDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<SecretDoc>>,
}

#[derive(Serialize)]
pub struct RenamedDoc {
    pub seq: u64,
    pub old: String,
    pub new: String,
    pub held: bool,
}

#[derive(Serialize)]
pub struct ExpungedPathDoc {
    pub path: String,
    pub versions: usize,
    pub bytes: u64,
    pub files: usize,
}

#[derive(Serialize)]
pub struct PurgeDoc {
    pub packs_rewritten: usize,
    pub objects_removed: usize,
    pub objects_reencoded: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

#[derive(Serialize)]
pub struct SecretDoc {
    pub path: String,
    pub why: String,
}

impl ExpungeDoc {
    pub fn new(o: &ExpungeOutcome, secrets: Option<&Vec<SecretHit>>) -> ExpungeDoc {
        ExpungeDoc {
            dry_run: o.dry_run,
            renamed: (o.renamed.iter())
                .map(|r| RenamedDoc {
                    seq: r.seq,
                    old: r.old.to_hex(),
                    new: r.new.to_hex(),
                    held: r.held,
                })
                .collect(),
            paths: (o.taken.iter())
                .map(|(p, t)| ExpungedPathDoc {
                    path: path_str(p),
                    versions: t.versions.len(),
                    bytes: t.bytes,
                    files: t.files.len(),
                })
                .collect(),
            excluded: o.excluded.iter().map(|p| path_str(p)).collect(),
            purge: o.purge.as_ref().map(PurgeDoc::from),
            secrets: secrets.map(|hits| hits.iter().map(SecretDoc::from).collect()),
        }
    }
}

impl From<&PurgeReport> for PurgeDoc {
    fn from(p: &PurgeReport) -> PurgeDoc {
        PurgeDoc {
            packs_rewritten: p.packs_rewritten,
            objects_removed: p.objects_removed,
            objects_reencoded: p.objects_reencoded,
            bytes_before: p.bytes_before,
            bytes_after: p.bytes_after,
        }
    }
}

impl From<&SecretHit> for SecretDoc {
    fn from(h: &SecretHit) -> SecretDoc {
        SecretDoc {
            path: path_str(&h.path),
            why: h.why.clone(),
        }
    }
}

/// One row of `snap log`.
#[derive(Serialize)]
pub struct LogEntryDoc {
    #[serde(flatten)]
    pub snapshot: SnapshotDoc,
    pub is_head: bool,
    pub redoable: bool,
    pub abandoned: bool,
}

impl From<&LogEntry> for LogEntryDoc {
    fn from(e: &LogEntry) -> LogEntryDoc {
        LogEntryDoc {
            snapshot: SnapshotDoc::from(&e.snapshot),
            is_head: e.is_head,
            redoable: e.redoable,
            abandoned: e.abandoned,
        }
    }
}

/// `snap log` (`stats` only with `--stats`).
#[derive(Serialize)]
pub struct LogDoc {
    pub head: Option<SnapshotDoc>,
    pub snapshots: Vec<LogEntryDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats: Option<Value>,
    /// With `--all`: the snapshots pulled from remotes, named `REMOTE#N`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pulled: Vec<PulledDoc>,
}

/// One pulled snapshot in `snap log --all`.
#[derive(Serialize)]
pub struct PulledDoc {
    pub name: String,
    pub remote: String,
    pub workspace: String,
    pub snapshot: SnapshotDoc,
}

impl PulledDoc {
    pub fn new(p: &snap_tree::Pulled) -> PulledDoc {
        let snapshot = Snapshot {
            id: p.id,
            record: p.record.clone(),
        };
        PulledDoc {
            name: format!("{}#{}", p.remote, p.record.seq),
            remote: p.remote.clone(),
            workspace: p.workspace.iter().map(|b| format!("{b:02x}")).collect(),
            snapshot: SnapshotDoc::from(&snapshot),
        }
    }
}

/// `snap recover`.
#[derive(Serialize)]
pub struct RecoverDoc {
    pub recovered: Vec<RecoveredDoc>,
}

/// One interrupted move finished.
#[derive(Serialize)]
pub struct RecoveredDoc {
    pub op: &'static str,
    pub head: SnapshotDoc,
    pub paths_touched: usize,
    pub kept: Vec<String>,
    /// Paths that held something else (changed since the interruption): saved in an
    /// `auto-before-*` snapshot (`snap log --all`), then written as the move planned.
    pub saved_first: Vec<String>,
}

impl From<&Recovered> for RecoveredDoc {
    fn from(r: &Recovered) -> RecoveredDoc {
        RecoveredDoc {
            op: r.op.as_str(),
            head: SnapshotDoc::from(&r.head),
            paths_touched: r.paths_touched,
            kept: r.kept.iter().map(|p| path_str(p)).collect(),
            saved_first: r.saved_first.iter().map(|p| path_str(p)).collect(),
        }
    }
}

/// `snap export`.
#[derive(Serialize)]
pub struct ExportDoc {
    pub snapshot: String,
    pub seq: u64,
    pub dir: String,
    pub files: usize,
}

/// `snap ls`.
#[derive(Serialize)]
pub struct LsDoc {
    pub snapshot: String,
    pub seq: u64,
    pub entries: Vec<LsEntryDoc>,
}

/// One path of `snap ls`.
#[derive(Serialize)]
pub struct LsEntryDoc {
    pub path: String,
    pub kind: &'static str,
    pub size: u64,
    pub id: String,
}

/// `snap cat`.
#[derive(Serialize)]
pub struct CatDoc {
    pub path: String,
    pub size: usize,
    pub binary: bool,
    pub content: Option<String>,
}

/// `snap blame`.
#[derive(Serialize)]
pub struct BlameDoc {
    pub path: String,
    /// The snapshot whose version is blamed.
    pub snapshot: String,
    pub lines: Vec<BlameLineDoc>,
}

/// One line of `snap blame`, with the snapshot that brought it.
#[derive(Serialize)]
pub struct BlameLineDoc {
    /// 1-based.
    pub line: usize,
    pub text: String,
    pub id: String,
    pub seq: u64,
    pub kind: &'static str,
    pub time: String,
    pub session: Option<String>,
    pub step: Option<u64>,
    pub tool: Option<String>,
    pub agent: Option<String>,
}

impl BlameLineDoc {
    pub fn of(line: usize, l: &snap_tree::BlameLine) -> BlameLineDoc {
        let r = &l.snapshot.record;
        let meta = |key: &str| {
            r.meta
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        BlameLineDoc {
            line,
            text: String::from_utf8_lossy(&l.text).into_owned(),
            id: l.snapshot.id.to_hex(),
            seq: r.seq,
            kind: r.kind.as_str(),
            time: crate::render::time_str(r.time_ns),
            session: r.session.clone(),
            step: r.step,
            tool: meta("tool"),
            agent: meta("agent"),
        }
    }
}

/// Any command that failed.
#[derive(Serialize)]
pub struct ErrorDoc<'a> {
    pub error: &'a str,
}

/// `snap diff`.
#[derive(Serialize)]
pub struct DiffDoc {
    pub from: String,
    pub to: String,
    pub total_files: usize,
    pub page: u64,
    pub pages: u64,
    pub files_per_page: u64,
    pub files: Vec<DiffFileDoc>,
}

/// One file of `snap diff`.
#[derive(Serialize)]
pub struct DiffFileDoc {
    pub path: String,
    pub status: &'static str,
    /// The path a renamed file left (`status` `renamed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    pub binary: bool,
    /// The permission bits (octal) on each side, only when they differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub old_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_mode: Option<String>,
    #[serde(flatten)]
    pub detail: DiffDetail,
}

/// Counts (and, unless `--stat`/`--name-status`, lines) for text; sizes for binary content.
#[derive(Serialize)]
#[serde(untagged)]
pub enum DiffDetail {
    /// A text file.
    Text {
        added: u64,
        removed: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        lines: Option<Vec<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        lines_cut: Option<usize>,
    },
    /// A binary file on either side.
    Binary {
        old_size: Option<u64>,
        new_size: Option<u64>,
    },
}

/// The store's size (`log --stats`).
#[derive(Serialize)]
pub struct StoreStatsDoc {
    pub snapshots: u64,
    pub packs: usize,
    pub pack_bytes: u64,
    pub catalog_bytes: u64,
    pub store_bytes: u64,
    pub reclaimable_bytes: u64,
    /// Secret-looking paths history holds (`snap expunge --secrets` takes them out).
    pub secret_paths: Vec<String>,
    /// What files of at least `large_file_size` bytes cost: distinct contents, their
    /// sizes, and what their chunks take in packs.
    pub large_files: LargeCostDoc,
}

/// `log --stats`' `large_files`.
#[derive(Serialize)]
pub struct LargeCostDoc {
    pub threshold: u64,
    pub files: u64,
    pub bytes: u64,
    pub stored_bytes: u64,
}

/// `snap gc` (and the gc part of `delete --all`).
#[derive(Serialize)]
pub struct GcDoc {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub reclaimed_bytes: u64,
    pub packs_deleted: usize,
    pub packs_repacked: usize,
    pub objects_removed: usize,
    pub orphan_packs_deleted: usize,
    pub orphan_packs_kept: Vec<String>,
    pub tmp_files_removed: usize,
    /// Nothing the catalog names was dropped: unnamed packs hold history it lacks.
    pub held_back: bool,
}

/// `snap delete --all --yes`.
#[derive(Serialize)]
pub struct DeleteDoc {
    #[serde(flatten)]
    pub gc: GcDoc,
    pub removed_count: usize,
}

/// `snap prune`.
#[derive(Serialize)]
pub struct PruneDoc {
    pub dry_run: bool,
    pub removed: Vec<SnapshotDoc>,
    pub removed_count: usize,
    pub kept: usize,
}

/// `snap verify`.
#[derive(Serialize)]
pub struct VerifyDoc {
    pub ok: bool,
    pub read_data: bool,
    pub packs: usize,
    pub objects: usize,
    pub snapshots: usize,
    pub bytes_read: u64,
    pub problems: Vec<ProblemDoc>,
    /// Packs the catalog does not name that hold snapshots it lacks: not damage, but history
    /// only `snap repair` takes back (as `doctor` reports them).
    pub history_outside_catalog: Vec<String>,
    /// Store directories that hold nothing durable, found missing and made again.
    pub recreated: Vec<String>,
}

/// One thing `verify` found damaged.
#[derive(Serialize)]
pub struct ProblemDoc {
    pub what: String,
    pub pack: Option<String>,
    pub object: Option<String>,
    pub snapshots: Vec<u64>,
    pub paths: Vec<String>,
}

/// `snap repair`.
#[derive(Serialize)]
pub struct RepairDoc {
    pub packs: usize,
    pub damaged_packs: Vec<String>,
    /// Packs whose header alone had rotted, rewritten as the pack's name proves it was.
    pub headers_rewritten: Vec<String>,
    pub objects: usize,
    pub damaged_objects: usize,
    pub snapshots: usize,
    pub head: Option<SnapshotDoc>,
    /// HEAD and the redo stack are the old catalog's (else HEAD is the newest snapshot).
    pub history_kept: bool,
    pub redo: usize,
    pub old_catalog: Option<String>,
    /// Snapshot records found in packs the old catalog named (or dropped) that it no longer
    /// listed: pruned, and left out.
    pub snapshots_left_dropped: usize,
}
