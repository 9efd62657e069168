//! Turns read from the model: where HEAD's `n`th last turn began (`undo --turn`), how many
//! snapshots of the redo stack the next turns hold (`redo --turn`), and the span of the turn
//! holding any snapshot (`revert --turn`).
//!
//! A turn is the snapshots of one session with one step. Its prompt's snapshot (meta
//! `hook=prompt`) is the state before the turn's tool calls: a turn begins there, or, without
//! one, at the snapshot before its first. A watcher's autosave with no session of its own
//! (`snap watch --autosave` beside an agent's hooks) belongs to the turn of the nearest
//! snapshot before it that is not such an autosave: a burst of them inside a turn is the
//! turn's, and `undo --turn` never stops in the middle of one.

use snap_store::ObjectId;

use super::{History, Item};
use crate::error::TreeError;

/// A turn along one line: the state before it and its newest snapshot there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnSpan {
    /// The session.
    pub session: String,
    /// The step.
    pub step: u64,
    /// The state before the turn: its prompt's snapshot, or the one before its first.
    pub before: ObjectId,
    /// The turn's newest snapshot descending from the one asked about.
    pub last: ObjectId,
}

impl History {
    /// Where the `n`th last turn of HEAD's session began: its prompt's snapshot, or else the
    /// last snapshot before the turn. A turn in which nothing happened yet (HEAD is its
    /// prompt's snapshot) does not count.
    pub fn turn_start(&self, n: u64) -> Result<ObjectId, TreeError> {
        let head = self
            .head()
            .ok_or_else(|| nothing("there are no snapshots yet"))?;
        // HEAD may be an autosave of a turn's burst: the turn is its owner's.
        let owner = self.turn_owner(head);
        let Some(session) = owner.session() else {
            return Err(nothing(
                "HEAD was not saved by an agent hook (it has no session)",
            ));
        };
        let turn = owner.step().unwrap_or(0);
        // An empty current turn (HEAD is its prompt's snapshot) is not one of the n.
        let empty = self.turn_start_at(head, session, turn)? == head.snapshot.id;
        let skip = if empty { n } else { n - 1 };
        let first = turn
            .checked_sub(skip)
            .ok_or_else(|| nothing("this session has fewer turns"))?;
        self.turn_start_at(head, session, first)
    }

    /// Walks back from `from` to the start of turn `first` (or later) of `session`.
    fn turn_start_at(&self, from: &Item, session: &str, first: u64) -> Result<ObjectId, TreeError> {
        let mut current = from;
        loop {
            let owner = self.turn_owner(current);
            let in_turn =
                owner.session() == Some(session) && owner.step().is_some_and(|s| s >= first);
            if !in_turn || (current.is_prompt() && current.step() == Some(first)) {
                return Ok(current.snapshot.id);
            }
            current = self.parent(current).ok_or_else(|| {
                nothing(&format!("no snapshot before turn {first} of this session"))
            })?;
        }
    }

    /// The snapshot whose turn `item` is of: itself, or for an autosave with no session, the
    /// nearest snapshot before it that is not one (itself when there is none).
    fn turn_owner<'a>(&'a self, item: &'a Item) -> &'a Item {
        let mut owner = item;
        while loose_autosave(owner) {
            match self.parent(owner) {
                Some(parent) => owner = parent,
                None => return item,
            }
        }
        owner
    }

    /// How many snapshots of the redo stack the next `n` turns hold: the snapshots an
    /// `undo --turn` passed, one turn (session and step) after another.
    pub fn turn_redo_count(&self, n: u64) -> Result<u64, TreeError> {
        let mut count = 0;
        let mut turns = 0;
        let mut current = None;
        for item in self.redo().rev() {
            // An autosave with no session goes with the turn before it (or the first).
            if loose_autosave(item) {
                count += 1;
                continue;
            }
            let turn = (item.session(), item.step());
            if current != Some(turn) {
                turns += 1;
                if turns > n {
                    break;
                }
                current = Some(turn);
            }
            count += 1;
        }
        if count == 0 {
            return Err(TreeError::NothingToRedo("the redo stack is empty".into()));
        }
        Ok(count)
    }

    /// The turn holding snapshot `id`, along `id`'s own line: back through its parents while
    /// they are of the turn (stopping at its prompt's snapshot), forward to the newest
    /// snapshot of the turn that descends from `id`. Refused for a snapshot no agent's turn
    /// holds and for a turn whose earlier state was pruned.
    pub fn turn_of(&self, id: &ObjectId) -> Result<TurnSpan, TreeError> {
        let item = self.get(id).ok_or(TreeError::NoSnapshots)?;
        let (session, step) = agent_turn(item)?;
        let in_turn = |i: &Item| i.session() == Some(session) && i.step() == Some(step);
        let mut first = item;
        while !first.is_prompt() {
            match self.parent(first) {
                Some(parent) if in_turn(parent) => first = parent,
                Some(parent) => {
                    first = parent;
                    break;
                }
                None => return Err(pruned_before(first)),
            }
        }
        let last = (self.items.iter())
            .take_while(|i| i.snapshot.record.seq > item.snapshot.record.seq)
            .filter(|i| in_turn(i))
            .find(|i| self.descends(i, item))
            .unwrap_or(item);
        Ok(TurnSpan {
            session: session.to_owned(),
            step,
            before: first.snapshot.id,
            last: last.snapshot.id,
        })
    }

    /// True when `ancestor` is on `item`'s parent chain (or is `item`). Sequence numbers
    /// grow along a chain, so the walk stops below `ancestor`'s.
    pub fn descends(&self, item: &Item, ancestor: &Item) -> bool {
        let floor = ancestor.snapshot.record.seq;
        let mut current = Some(item);
        while let Some(here) = current.filter(|i| i.snapshot.record.seq >= floor) {
            if here.snapshot.id == ancestor.snapshot.id {
                return true;
            }
            current = self.parent(here);
        }
        false
    }
}

/// An autosave of a watcher that runs with no session: it takes the turn around it.
fn loose_autosave(item: &Item) -> bool {
    item.session().is_none() && super::is_autosave(&item.snapshot.record)
}

/// The session and step of an agent's snapshot, or why it has none.
fn agent_turn(item: &Item) -> Result<(&str, u64), TreeError> {
    let (Some(session), Some(step)) = (item.session(), item.step()) else {
        return Err(nothing(&format!(
            "#{} was not saved by an agent hook (it has no session turn)",
            item.snapshot.record.seq
        )));
    };
    Ok((session, step))
}

fn pruned_before(item: &Item) -> TreeError {
    TreeError::ParentPruned(format!("#{}", item.snapshot.record.seq))
}

fn nothing(why: &str) -> TreeError {
    TreeError::NothingToUndo(why.to_string())
}
