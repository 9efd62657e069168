//! The timeline: the history model's sessions, turns, tool calls and snapshots as rows, newest
//! first, with folded groups hidden. Rows are rebuilt only when the history or a fold changes;
//! drawing reads just the rows on screen, so 10,000 snapshots cost no more per frame than 20.

use std::collections::HashSet;

use snap_tree::history::{CallGroup, LineCount, SessionGroup, TurnGroup};
use snap_tree::{History, Lines, ObjectId};

/// What a row stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RowKind {
    /// A run of one session's snapshots (or of saves no agent made).
    Session {
        /// The session's name.
        name: Option<String>,
        /// Its turns.
        turns: usize,
    },
    /// A run of one turn's snapshots.
    Turn {
        /// The step.
        step: Option<u64>,
        /// Its tool calls.
        calls: usize,
    },
    /// The snapshots of one tool call, when it has more than one.
    Call,
    /// One snapshot.
    Snapshot,
}

/// One line of the timeline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// What it stands for.
    pub kind: RowKind,
    /// Indentation: 0 for a session, 3 for a snapshot in a call.
    pub depth: u8,
    /// The position in [`History::items`] of its snapshot (a group's newest).
    pub at: usize,
    /// How many snapshots it covers.
    pub count: usize,
    /// The position of its oldest snapshot (`at` for a snapshot row).
    pub last: usize,
    /// Lines its snapshots added and removed.
    pub lines: LineCount,
    /// True when its group is folded.
    pub folded: bool,
}

impl Row {
    /// True for a session, turn or call row, which folds.
    pub fn is_group(&self) -> bool {
        self.kind != RowKind::Snapshot
    }

    /// The key its fold is remembered by: its kind's depth and its newest snapshot, which
    /// stay the same when the history is read again.
    fn fold_key(&self, history: &History) -> FoldKey {
        FoldKey {
            depth: self.depth,
            id: history.items()[self.at].snapshot.id,
        }
    }
}

/// A folded group, as remembered across reloads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct FoldKey {
    depth: u8,
    id: ObjectId,
}

/// The rows of a history and the groups folded.
#[derive(Debug, Default)]
pub struct Timeline {
    rows: Vec<Row>,
    folded: HashSet<FoldKey>,
}

impl Timeline {
    /// The rows of `history`'s `lines`, with the folds kept from before.
    pub fn rebuild(&mut self, history: &History, lines: Lines) {
        let mut out = Vec::new();
        for session in history.groups(lines) {
            self.push_session(history, &session, &mut out);
        }
        self.rows = out;
    }

    /// The rows on show.
    pub fn rows(&self) -> &[Row] {
        &self.rows
    }

    /// Folds or unfolds the group at row `at`; rebuild afterwards.
    pub fn toggle(&mut self, history: &History, at: usize) {
        let Some(row) = self.rows.get(at).filter(|r| r.is_group()) else {
            return;
        };
        let key = row.fold_key(history);
        if !self.folded.remove(&key) {
            self.folded.insert(key);
        }
    }

    /// Folds every turn but the one holding item `keep` (HEAD, when the UI opens), so a long
    /// history reads as its turns at a glance.
    pub fn fold_turns_except(&mut self, history: &History, keep: Option<usize>) {
        for session in history.groups(Lines::All) {
            for turn in &session.turns {
                let Some(newest) = turn.items().next() else {
                    continue;
                };
                if keep.is_none_or(|k| !turn.items().any(|i| i == k)) {
                    let id = history.items()[newest].snapshot.id;
                    self.folded.insert(FoldKey { depth: 1, id });
                }
            }
        }
    }

    /// Unfolds every group holding item `item`, so it has a row; rebuild afterwards.
    pub fn reveal(&mut self, history: &History, item: usize) {
        for session in history.groups(Lines::All) {
            for (depth, group) in enclosing(&session, item) {
                let newest = history.items()[group].snapshot.id;
                self.folded.remove(&FoldKey { depth, id: newest });
            }
        }
    }

    /// The row showing item `item`, if one does.
    pub fn row_of(&self, item: usize) -> Option<usize> {
        (self.rows.iter()).position(|r| r.kind == RowKind::Snapshot && r.at == item)
    }

    /// The row nearest to showing item `item`: its own, else the folded group holding it.
    pub fn nearest_row(&self, item: usize) -> Option<usize> {
        self.row_of(item).or_else(|| {
            (self.rows.iter()).rposition(|r| r.folded && r.at <= item && item <= r.last)
        })
    }

    fn push_session(&self, history: &History, session: &SessionGroup, out: &mut Vec<Row>) {
        let items: Vec<usize> = (session.turns.iter()).flat_map(TurnGroup::items).collect();
        let mut lines = LineCount::default();
        for turn in &session.turns {
            lines += turn.lines(history);
        }
        let row = self.group_row(
            history,
            RowKind::Session {
                name: session.session.clone(),
                turns: session.turns.len(),
            },
            0,
            &items,
            lines,
        );
        let folded = row.folded;
        out.push(row);
        if !folded {
            for turn in &session.turns {
                self.push_turn(history, turn, out);
            }
        }
    }

    fn push_turn(&self, history: &History, turn: &TurnGroup, out: &mut Vec<Row>) {
        let items: Vec<usize> = turn.items().collect();
        let kind = RowKind::Turn {
            step: turn.step,
            calls: turn.calls.len(),
        };
        let row = self.group_row(history, kind, 1, &items, turn.lines(history));
        let folded = row.folded;
        out.push(row);
        if !folded {
            for call in &turn.calls {
                self.push_call(history, call, out);
            }
        }
    }

    fn push_call(&self, history: &History, call: &CallGroup, out: &mut Vec<Row>) {
        let depth = match call.items.len() {
            1 => 2,
            _ => {
                let mut lines = LineCount::default();
                for &at in &call.items {
                    lines += history.items()[at].lines().unwrap_or_default();
                }
                let row = self.group_row(history, RowKind::Call, 2, &call.items, lines);
                let folded = row.folded;
                out.push(row);
                if folded {
                    return;
                }
                3
            }
        };
        for &at in &call.items {
            out.push(Row {
                kind: RowKind::Snapshot,
                depth,
                at,
                count: 1,
                last: at,
                lines: history.items()[at].lines().unwrap_or_default(),
                folded: false,
            });
        }
    }

    fn group_row(
        &self,
        history: &History,
        kind: RowKind,
        depth: u8,
        items: &[usize],
        lines: LineCount,
    ) -> Row {
        let at = items.first().copied().unwrap_or_default();
        let key = FoldKey {
            depth,
            id: history.items()[at].snapshot.id,
        };
        Row {
            kind,
            depth,
            at,
            count: items.len(),
            last: items.last().copied().unwrap_or(at),
            lines,
            folded: self.folded.contains(&key),
        }
    }
}

/// The groups of `session` holding item `item`, as (depth, newest item) pairs.
fn enclosing(session: &SessionGroup, item: usize) -> Vec<(u8, usize)> {
    let mut out = Vec::new();
    for turn in &session.turns {
        let Some(first) = turn.items().next() else {
            continue;
        };
        if !turn.items().any(|i| i == item) {
            continue;
        }
        out.push((0, session.turns[0].items().next().unwrap_or(first)));
        out.push((1, first));
        for call in turn.calls.iter().filter(|c| c.items.contains(&item)) {
            out.push((2, call.items[0]));
        }
    }
    out
}

#[cfg(test)]
mod tests;
