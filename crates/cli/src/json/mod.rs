//! The `--json` documents of docs/JSON.md as typed structs, so the compiler checks every
//! field name (as ripgrep's printer does). Each is built from the library's own types and
//! printed through a `serde_json::Value`, whose maps keep keys sorted, as the examples show.
//! This file holds the shapes shared by many documents (snapshot, stats, changes, scan
//! reports) and the save and status ones; `moves.rs`, `history.rs`, `upkeep.rs` and
//! `remote.rs` hold the documents of their commands.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;
use snap_tree::flat::{Listed, Rename};
use snap_tree::{PathChange, ScanReport, Snapshot};

use crate::render::{path_str, time_str};

mod history;
mod moves;
#[cfg(feature = "remote")]
mod remote;
mod upkeep;

pub use history::{
    BlameDoc, BlameLineDoc, CatDoc, DiffDetail, DiffDoc, DiffFileDoc, ErrorDoc, ExportDoc, LogDoc,
    LogEntryDoc, LsDoc, LsEntryDoc, PulledDoc, RecoverDoc, RecoveredDoc,
};
pub use moves::{MoveDoc, PendingDoc, RevertDoc};
#[cfg(feature = "remote")]
pub use remote::{
    CloneDoc, CloneFinishedDoc, PullDoc, PushDoc, RemoteAddedDoc, RemoteEncryptedDoc,
    RemoteEntryDoc, RemoteGcDoc, RemoteKeyAddedDoc, RemoteKeyDoc, RemoteKeyRemovedDoc,
    RemoteKeysDoc, RemoteListDoc, RemoteRemovedDoc, RemoteVerifyDoc,
};
pub use upkeep::{
    DeleteDoc, GcDoc, LargeCostDoc, ProblemDoc, PruneDoc, RepairDoc, StoreStatsDoc, VerifyDoc,
};

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
    /// The agent an agent hook saved it for (a subagent's id, or `main`); absent when no
    /// agent hook made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The subagent's kind, when its payload said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_type: Option<String>,
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
            agent: s.agent().map(str::to_owned),
            agent_type: s.agent_type().map(str::to_owned),
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
    /// Who changed each changed path (the agent whose call named it, `shared`), when an
    /// agent's hook saved it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<Vec<AttributionDoc>>,
}

/// One changed path and who changed it.
#[derive(Serialize)]
pub struct AttributionDoc {
    pub path: String,
    pub by: String,
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

/// The last failed `snap hook` call, when no hook save has succeeded since.
#[derive(Serialize)]
pub struct HookFailureDoc {
    pub time: String,
    pub error: String,
}
