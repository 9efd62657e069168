//! The history model: every snapshot record of a store, read once into owned data, placed
//! against HEAD (its line, the redo stack, abandoned lines) and grouped as a person reads an
//! agent's work: sessions, their turns, each turn's tool calls, each call's snapshots.
//!
//! Every front end asks this model (`log`, `undo --turn`, `redo --turn`, `revert --turn`,
//! `ui`, MCP); none reads the store's records itself. Building it reads no trees: the line
//! counts a timeline shows are in the records. [`turns`] finds where a turn begins and ends;
//! [`fold`] folds a turn's autosaves into one line of the log.

pub(crate) mod blame;
mod fold;
pub(crate) mod query;
pub(crate) mod sessions;
mod turns;

use std::collections::{BTreeSet, HashMap, HashSet};

use snap_store::{ObjectId, SnapshotRecord};

use crate::error::TreeError;
use crate::snapshot::{LogEntry, Snapshot};

pub use fold::{AUTOSAVE_KEY, Autosaves, Folded, fold_autosaves, is_autosave};
pub use turns::TurnSpan;

/// The value of a snapshot's `hook` meta when a user prompt's event saved it: a turn's first
/// snapshot.
pub const PROMPT_EVENT: &str = "prompt";

/// The meta key naming the tool call a snapshot was saved for (the agents' own call id).
const CALL_KEY: &str = "tool_use_id";

/// Where a snapshot stands against HEAD.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// HEAD itself.
    Head,
    /// An ancestor of HEAD: undo goes there.
    Line,
    /// On the redo stack.
    Redo,
    /// Neither: left behind by a save after an undo (`log --all` shows it).
    Abandoned,
}

/// Which snapshots a listing holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lines {
    /// HEAD's line and the redo stack (`snap log`).
    Current,
    /// Every snapshot, abandoned lines too (`snap log --all`).
    All,
}

impl Lines {
    /// `All` when `all` is set (a command line's `--all`).
    pub fn all_if(all: bool) -> Lines {
        if all { Lines::All } else { Lines::Current }
    }

    /// True when a listing of these lines shows a snapshot of this standing.
    pub fn holds(self, standing: Standing) -> bool {
        self == Lines::All || standing != Standing::Abandoned
    }
}

/// One snapshot of the model.
#[derive(Clone, Debug)]
pub struct Item {
    /// The snapshot.
    pub snapshot: Snapshot,
    /// Where it stands against HEAD.
    pub standing: Standing,
}

impl Item {
    /// The record's session, if an agent's hook saved it.
    pub fn session(&self) -> Option<&str> {
        self.snapshot.record.session.as_deref()
    }

    /// The record's step (turn number), if any.
    pub fn step(&self) -> Option<u64> {
        self.snapshot.record.step
    }

    /// The first value of meta `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        let meta = &self.snapshot.record.meta;
        meta.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    /// True for a prompt's save: the state before a turn's tool calls.
    pub fn is_prompt(&self) -> bool {
        self.meta("hook") == Some(PROMPT_EVENT)
    }

    /// Text lines added and removed against the parent, when the save counted them.
    pub fn lines(&self) -> Option<LineCount> {
        let (added, removed) = self.snapshot.record.stats.lines?;
        Some(LineCount { added, removed })
    }

    /// The row `snap log` shows for it.
    pub fn log_entry(&self) -> LogEntry {
        LogEntry {
            snapshot: self.snapshot.clone(),
            is_head: self.standing == Standing::Head,
            redoable: self.standing == Standing::Redo,
            abandoned: self.standing == Standing::Abandoned,
        }
    }

    fn turn_key(&self) -> (Option<&str>, Option<u64>) {
        (self.session(), self.step())
    }
}

/// Text lines added and removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LineCount {
    /// Lines added.
    pub added: u64,
    /// Lines removed.
    pub removed: u64,
}

impl std::ops::AddAssign for LineCount {
    fn add_assign(&mut self, other: LineCount) {
        self.added += other.added;
        self.removed += other.removed;
    }
}

/// A run of consecutive snapshots (newest first) of one session, or of none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionGroup {
    /// The session's name; `None` for saves no agent made.
    pub session: Option<String>,
    /// Its turns, newest first.
    pub turns: Vec<TurnGroup>,
}

/// A run of consecutive snapshots of one session with one step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnGroup {
    /// The step; `None` when the saves gave none.
    pub step: Option<u64>,
    /// Its tool calls, newest first.
    pub calls: Vec<CallGroup>,
}

/// The snapshots of one tool call (those sharing the agent's call id), or a single snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallGroup {
    /// Positions in [`History::items`], newest first.
    pub items: Vec<usize>,
}

impl TurnGroup {
    /// Every position it holds, newest first.
    pub fn items(&self) -> impl Iterator<Item = usize> + '_ {
        self.calls.iter().flat_map(|c| c.items.iter().copied())
    }

    /// The lines its snapshots added and removed (those that counted them).
    pub fn lines(&self, history: &History) -> LineCount {
        let mut total = LineCount::default();
        for at in self.items() {
            total += history.items[at].lines().unwrap_or_default();
        }
        total
    }
}

/// Every snapshot of a store, newest first, placed against HEAD.
#[derive(Clone, Debug, Default)]
pub struct History {
    head: Option<ObjectId>,
    redo: Vec<ObjectId>,
    items: Vec<Item>,
    index: HashMap<ObjectId, usize>,
}

impl History {
    /// The model of `records` (in sequence order, as the catalog lists them), with HEAD and
    /// the redo stack (next redo last) as the catalog holds them.
    pub fn new(
        head: Option<ObjectId>,
        redo: Vec<ObjectId>,
        records: Vec<(ObjectId, SnapshotRecord)>,
    ) -> History {
        let parents: HashMap<ObjectId, Option<ObjectId>> =
            records.iter().map(|(id, r)| (*id, r.parent)).collect();
        let mut line = HashSet::new();
        let mut next = head;
        // The set guards against a cycle, which a damaged catalog could hold.
        while let Some(id) = next.filter(|id| line.insert(*id)) {
            next = parents.get(&id).copied().flatten();
        }
        let redo_set: HashSet<ObjectId> = redo.iter().copied().collect();
        let standing = |id: &ObjectId| match () {
            _ if head == Some(*id) => Standing::Head,
            _ if line.contains(id) => Standing::Line,
            _ if redo_set.contains(id) => Standing::Redo,
            _ => Standing::Abandoned,
        };
        let items: Vec<Item> = (records.into_iter().rev())
            .map(|(id, record)| Item {
                standing: standing(&id),
                snapshot: Snapshot { id, record },
            })
            .collect();
        let index = (items.iter().enumerate())
            .map(|(at, item)| (item.snapshot.id, at))
            .collect();
        History {
            head,
            redo,
            items,
            index,
        }
    }

    /// Every snapshot, newest first.
    pub fn items(&self) -> &[Item] {
        &self.items
    }

    /// The snapshot HEAD names, if any.
    pub fn head(&self) -> Option<&Item> {
        self.head.and_then(|id| self.get(&id))
    }

    /// The redo stack's snapshots, the next redo's last.
    pub fn redo(&self) -> impl DoubleEndedIterator<Item = &Item> {
        self.redo.iter().filter_map(|id| self.get(id))
    }

    /// A snapshot by id.
    pub fn get(&self, id: &ObjectId) -> Option<&Item> {
        self.position(id).map(|at| &self.items[at])
    }

    /// A snapshot's position in [`Self::items`].
    pub fn position(&self, id: &ObjectId) -> Option<usize> {
        self.index.get(id).copied()
    }

    /// The parent of `item`, unless it is a first snapshot or its parent was pruned.
    pub fn parent(&self, item: &Item) -> Option<&Item> {
        item.snapshot.record.parent.and_then(|p| self.get(&p))
    }

    /// The session `given` names: a session recorded in full, or the one session it begins
    /// (the 8 characters `log --oneline`, `blame` and the UI print). Every front end that
    /// takes a session asks this, so they all read it alike.
    pub fn resolve_session(&self, given: &str) -> Result<String, TreeError> {
        let known: BTreeSet<&str> = self.items.iter().filter_map(Item::session).collect();
        if known.contains(given) {
            return Ok(given.to_owned());
        }
        let mut matching = known.into_iter().filter(|s| s.starts_with(given));
        match (matching.next(), matching.next()) {
            (Some(one), None) if !given.is_empty() => Ok(one.to_owned()),
            (Some(first), Some(second)) if !given.is_empty() => Err(TreeError::AmbiguousSession {
                given: given.to_owned(),
                candidates: [first, second]
                    .into_iter()
                    .chain(matching)
                    .map(str::to_owned)
                    .collect(),
            }),
            _ => Err(TreeError::UnknownSession(given.to_owned())),
        }
    }

    /// The log's rows, newest first.
    pub fn log(&self, lines: Lines) -> Vec<LogEntry> {
        (self.items.iter())
            .filter(|i| lines.holds(i.standing))
            .map(Item::log_entry)
            .collect()
    }

    /// The snapshots `lines` holds grouped session -> turn -> tool call, newest first: each
    /// group a run of consecutive snapshots, so the groups keep time's order when sessions
    /// interleave.
    pub fn groups(&self, lines: Lines) -> Vec<SessionGroup> {
        let mut sessions: Vec<SessionGroup> = Vec::new();
        let mut last: Option<&Item> = None;
        for (at, item) in self.items.iter().enumerate() {
            if !lines.holds(item.standing) {
                continue;
            }
            let same_session = last.is_some_and(|l| l.session() == item.session());
            let same_turn = same_session && last.is_some_and(|l| l.turn_key() == item.turn_key());
            let same_call = same_turn
                && last.is_some_and(|l| {
                    l.meta(CALL_KEY)
                        .is_some_and(|c| item.meta(CALL_KEY) == Some(c))
                });
            if !same_session {
                sessions.push(SessionGroup {
                    session: item.session().map(str::to_owned),
                    turns: Vec::new(),
                });
            }
            let Some(session) = sessions.last_mut() else {
                continue;
            };
            if !same_turn {
                session.turns.push(TurnGroup {
                    step: item.step(),
                    calls: Vec::new(),
                });
            }
            let Some(turn) = session.turns.last_mut() else {
                continue;
            };
            match turn.calls.last_mut() {
                Some(call) if same_call => call.items.push(at),
                _ => turn.calls.push(CallGroup { items: vec![at] }),
            }
            last = Some(item);
        }
        sessions
    }
}

#[cfg(test)]
mod tests;
