//! The documents that read history: log, recover, export, ls, cat, blame, diff, errors.

use serde::Serialize;
use serde_json::Value;
use snap_tree::{LogEntry, Recovered, Snapshot};

use super::SnapshotDoc;
use crate::render::path_str;

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
    /// The subagent whose call brought the line (its id), when a subagent's was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
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
            agent_id: meta(snap_tree::AGENT_ID_KEY),
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
