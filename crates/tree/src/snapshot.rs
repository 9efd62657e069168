//! What history is made of, as the workspace hands it out: a snapshot with its id, the
//! changes a command reports, a log row, an interrupted operation finished.

use snap_store::{ObjectId, SnapshotRecord};

use crate::flat::Change;
use crate::marker::Op;

/// A snapshot's id with its record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Snapshot {
    /// The snapshot object's id.
    pub id: ObjectId,
    /// The record the catalog holds for it.
    pub record: SnapshotRecord,
}

/// The meta key an agent hook records a subagent's id under (Claude Code's and Codex's
/// `agent_id`, absent for the root agent's calls).
pub const AGENT_ID_KEY: &str = "agent_id";
/// The meta key an agent hook records a subagent's kind under (`agent_type`).
pub const AGENT_TYPE_KEY: &str = "agent_type";
/// The meta key every agent hook's save carries (what snap made of the event).
pub const HOOK_KEY: &str = "hook";
/// The agent a hook's save names when no subagent made the call: the session's root agent.
pub const MAIN_AGENT: &str = "main";
/// The meta key of a file a saved tool call named as the one it writes (one entry a file,
/// workspace-relative): `tool_input.file_path` of Write, Edit, MultiEdit.
pub const TOOL_PATH_KEY: &str = "tool_path";

/// Who changed one path of a snapshot, as far as snap can tell without guessing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Attribution {
    /// The saved tool call named the path: its agent changed it.
    Agent(String),
    /// An agent's save found the path changed, but its call did not name it (a shell
    /// command's writes, or another agent's edit made meanwhile): not given to one agent.
    Shared,
    /// No agent's hook made the save (a person's save, a watcher's autosave).
    Outside,
}

impl Attribution {
    /// `shared`, `outside`, or the agent's id.
    pub fn as_str(&self) -> &str {
        match self {
            Attribution::Agent(agent) => agent,
            Attribution::Shared => "shared",
            Attribution::Outside => "outside",
        }
    }
}

impl Snapshot {
    /// The value of meta `key`, if the record has it.
    pub fn meta(&self, key: &str) -> Option<&str> {
        let mut found = self.record.meta.iter().filter(|(k, _)| k == key);
        found.next().map(|(_, v)| v.as_str())
    }

    /// Which agent made this snapshot: the subagent's id when a subagent's call was saved,
    /// [`MAIN_AGENT`] for any other save an agent's hook made, and `None` for a save no
    /// agent hook made (a person's, a watcher's autosave).
    pub fn agent(&self) -> Option<&str> {
        match (self.meta(AGENT_ID_KEY), self.meta(HOOK_KEY)) {
            (Some(id), _) => Some(id),
            (None, Some(_)) => Some(MAIN_AGENT),
            (None, None) => None,
        }
    }

    /// The subagent's kind (`Explore`, `worker`, ...), when the agent's payload said.
    pub fn agent_type(&self) -> Option<&str> {
        self.meta(AGENT_TYPE_KEY)
    }

    /// Who changed `path` (workspace-relative), one of the paths this snapshot changed: the
    /// agent whose saved call named it, else `Shared` for an agent's save and `Outside`
    /// for any other.
    pub fn attribution(&self, path: &[u8]) -> Attribution {
        let Some(agent) = self.agent() else {
            return Attribution::Outside;
        };
        let mut named = self.record.meta.iter().filter(|(k, _)| k == TOOL_PATH_KEY);
        match named.any(|(_, p)| p.as_bytes() == path) {
            true => Attribution::Agent(agent.to_string()),
            false => Attribution::Shared,
        }
    }
}

/// One changed path.
pub type PathChange = (Vec<u8>, Change);

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
    /// Planned paths that held something else (changed since the interruption, or torn by
    /// a power cut): saved in an `auto-before-*` snapshot, then written as planned.
    pub saved_first: Vec<Vec<u8>>,
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

#[cfg(test)]
mod tests {
    use snap_store::{ChangeStats, SnapshotKind};

    use super::*;

    fn with_meta(meta: &[(&str, &str)]) -> Snapshot {
        let record = SnapshotRecord {
            seq: 1,
            root: ObjectId::of(snap_store::ObjectKind::Tree, b"t"),
            parent: None,
            time_ns: 0,
            kind: SnapshotKind::Save,
            message: String::new(),
            step: None,
            session: None,
            meta: (meta.iter())
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            stats: ChangeStats::default(),
        };
        Snapshot {
            id: record.id(),
            record,
        }
    }

    #[test]
    fn a_snapshot_names_the_agent_whose_call_it_saved() {
        let sub = with_meta(&[
            ("hook", "tool"),
            ("agent_id", "a1"),
            ("agent_type", "Explore"),
        ]);
        assert_eq!(
            (sub.agent(), sub.agent_type()),
            (Some("a1"), Some("Explore"))
        );
        let root = with_meta(&[("agent", "claude"), ("hook", "tool")]);
        assert_eq!((root.agent(), root.agent_type()), (Some(MAIN_AGENT), None));
        let person = with_meta(&[("k", "v")]);
        assert_eq!(person.agent(), None, "no agent hook made it");
    }

    #[test]
    fn a_changed_path_belongs_to_an_agent_only_when_its_call_named_it() {
        let edit = with_meta(&[
            ("hook", "tool"),
            ("agent_id", "b"),
            ("tool_path", "src/a.rs"),
        ]);
        assert_eq!(
            edit.attribution(b"src/a.rs"),
            Attribution::Agent("b".into())
        );
        assert_eq!(edit.attribution(b"src/a.rs.bak"), Attribution::Shared);
        assert_eq!(edit.attribution(b"src"), Attribution::Shared);
        let root = with_meta(&[("hook", "tool"), ("tool_path", "x")]);
        assert_eq!(
            root.attribution(b"x"),
            Attribution::Agent(MAIN_AGENT.into())
        );
        assert_eq!(with_meta(&[]).attribution(b"x"), Attribution::Outside);
    }
}
