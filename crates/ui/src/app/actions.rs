//! The UI's actions, each through the library call the CLI makes, so each saves a dirty
//! tree first and is itself undoable: restore and revert after a preview and a `y`, undo and
//! redo at once (they are the undo of each other), blame and search, which only read.

use snap_tree::display::{path_shown, text_shown};
use snap_tree::{
    Change, MoveOutcome, PathChange, RevertOf, RevertOutcome, Run, Snapshot, TreeError, Workspace,
};

use super::{Action, App, BlameView, Mode, Pending};
use crate::UiError;
use crate::timeline::RowKind;

/// Preview lines shown before the list of changes is cut short.
const PREVIEW_PATHS: usize = 12;

impl App {
    pub(super) fn ask_restore(&mut self) {
        let Some(target) = self.selected_snapshot().cloned() else {
            return;
        };
        let name = format!("#{}", target.record.seq);
        let preview = self
            .source
            .write(|ws| Ok(ws.restore(&name, &[], Run::DryRun)?));
        self.confirm_or_say(preview, |out| Pending {
            action: Action::Restore(target.record.seq),
            title: format!("Restore the working tree to #{}?", target.record.seq),
            lines: preview_lines(out, &[]),
        });
    }

    /// `x`: on a turn's row the whole turn's change, else the selected snapshot's.
    pub(super) fn ask_revert(&mut self) {
        let Some(target) = self.selected_snapshot().cloned() else {
            return;
        };
        let turn = (self.timeline.rows().get(self.selected))
            .is_some_and(|r| matches!(r.kind, RowKind::Turn { .. }));
        let seq = target.record.seq;
        let action = match turn {
            true => Action::RevertTurn(seq),
            false => Action::Revert(seq),
        };
        let preview = (self.source).write(|ws| Ok(revert(ws, action, Run::DryRun)?));
        self.confirm_or_say(preview, |out| Pending {
            action,
            title: match turn {
                true => format!(
                    "Take back the turn of #{}..#{}, keeping what came after?",
                    out.before.record.seq + 1,
                    out.reverted.record.seq
                ),
                false => format!("Take back what #{seq} changed, keeping what came after?"),
            },
            lines: preview_lines(&out.moved, &out.conflicts),
        });
    }

    fn confirm_or_say<T>(
        &mut self,
        preview: Result<T, UiError>,
        pending: impl FnOnce(&T) -> Pending,
    ) {
        match preview {
            Ok(out) => self.mode = Mode::Confirm(pending(&out)),
            Err(e) => self.status = Some(format!("error: {e}")),
        }
    }

    pub(super) fn apply(&mut self, action: Action) {
        let said = match action {
            Action::Restore(seq) => self.restore(seq),
            Action::Revert(_) | Action::RevertTurn(_) => self.revert(action),
        };
        self.after(said);
    }

    fn restore(&self, seq: u64) -> Result<String, UiError> {
        let name = format!("#{seq}");
        let out = (self.source).write(|ws| Ok(ws.restore(&name, &[], Run::Apply)?))?;
        Ok(match &out.created {
            Some(created) => format!(
                "restored: now at #{} ({} paths changed; u undoes it)",
                created.record.seq,
                out.changes.len()
            ),
            None => "the working tree already matches it: nothing changed".into(),
        })
    }

    fn revert(&self, action: Action) -> Result<String, UiError> {
        let out = (self.source).write(|ws| Ok(revert(ws, action, Run::Apply)?))?;
        let conflicts = match out.conflicts.len() {
            0 => String::new(),
            n => format!("; {n} changed since, left as they are"),
        };
        Ok(match &out.moved.created {
            Some(created) => format!(
                "reverted #{}: now at #{}{conflicts} (u undoes it)",
                out.reverted.record.seq, created.record.seq
            ),
            None => format!("nothing taken back{conflicts}"),
        })
    }

    pub(super) fn undo(&mut self) {
        let said = (self.source).write(|ws| Ok(ws.undo(1, Run::Apply)?));
        self.after(said.map(|o| moved("undo", &o, "r redoes it")));
    }

    pub(super) fn redo(&mut self) {
        let said = (self.source).write(|ws| Ok(ws.redo(1, Run::Apply)?));
        self.after(said.map(|o| moved("redo", &o, "u undoes it")));
    }

    /// Says how an action went and reads the history it changed.
    fn after(&mut self, said: Result<String, UiError>) {
        self.status = Some(match said {
            Ok(line) => line,
            Err(UiError::Tree(e)) if e.is_nothing_to_do() => e.to_string(),
            Err(e) => format!("error: {e}"),
        });
        if let Err(e) = self.reload() {
            self.status = Some(format!("error: {e}"));
        }
        // After an undo or redo the selection follows HEAD, where the tree now is.
        self.select_snapshot(self.history.head().map(|h| h.snapshot.id));
    }

    pub(super) fn blame(&mut self) {
        let (Some(at), Some(file)) = (self.selected_snapshot().cloned(), self.selected_file())
        else {
            self.status = Some("no file to blame: pick one of the changed files".into());
            return;
        };
        let path = file.path.clone();
        if file.change == Change::Deleted {
            self.status = Some(format!(
                "{} is not in #{}",
                path_shown(&path),
                at.record.seq
            ));
            return;
        }
        match self.source.read(|ws| Ok(ws.blame(&at, &path)?)) {
            Ok(lines) => {
                self.mode = Mode::Blame(BlameView {
                    title: format!("blame {} at #{}", path_shown(&path), at.record.seq),
                    lines: lines
                        .iter()
                        .map(|l| blame_line(&l.snapshot, &l.text))
                        .collect(),
                    scroll: 0,
                })
            }
            Err(e) => self.status = Some(format!("error: {e}")),
        }
    }

    /// Selects the next snapshot after the selection (older, wrapping) whose message,
    /// session, kind, meta or changed paths hold the last search.
    pub(super) fn search_again(&mut self) {
        let Some(query) = self.last_search.clone() else {
            return;
        };
        let from = (self.timeline.rows().get(self.selected)).map_or(0, |r| r.at + 1);
        match self.find(&query.to_lowercase(), from) {
            Ok(Some(item)) => {
                let id = self.history.items()[item].snapshot.id;
                self.select_snapshot(Some(id));
            }
            Ok(None) => self.status = Some(format!("no snapshot matches {query:?}")),
            Err(e) => self.status = Some(format!("error: {e}")),
        }
    }

    fn find(&self, query: &str, from: usize) -> Result<Option<usize>, UiError> {
        let items = self.history.items();
        let order: Vec<usize> = (from..items.len())
            .chain(0..from.min(items.len()))
            .collect();
        let shown = |at: &usize| {
            self.lines == snap_tree::Lines::All
                || items[*at].standing != snap_tree::Standing::Abandoned
        };
        let order: Vec<usize> = order.into_iter().filter(shown).collect();
        if let Some(at) = order
            .iter()
            .copied()
            .find(|&at| text_matches(&items[at].snapshot, query))
        {
            return Ok(Some(at));
        }
        // Paths need each snapshot's trees: read in one opening, newest match first.
        self.source.read(|ws| {
            for &at in &order {
                let changes = ws.changes_of(&items[at].snapshot)?;
                if changes
                    .iter()
                    .any(|(p, _)| path_str_lower(p).contains(query))
                {
                    return Ok(Some(at));
                }
            }
            Ok(None)
        })
    }
}

/// Runs (or previews) a revert action through the library.
fn revert(ws: &Workspace, action: Action, run: Run) -> Result<RevertOutcome, TreeError> {
    let (seq, turn) = match action {
        Action::RevertTurn(seq) => (seq, true),
        Action::Revert(seq) | Action::Restore(seq) => (seq, false),
    };
    let name = format!("#{seq}");
    let of = match turn {
        true => RevertOf::Turn(&name),
        false => RevertOf::Snapshot(&name),
    };
    ws.revert(of, &[], run)
}

fn text_matches(s: &Snapshot, query: &str) -> bool {
    let r = &s.record;
    let mut fields = vec![r.message.as_str(), r.kind.as_str()];
    fields.extend(r.session.as_deref());
    fields.extend(r.meta.iter().map(|(_, v)| v.as_str()));
    fields.iter().any(|f| f.to_lowercase().contains(query))
}

fn path_str_lower(path: &[u8]) -> String {
    String::from_utf8_lossy(path).to_lowercase()
}

/// `undo: now at #N (r redoes it)`, with the auto-save named when there was one.
fn moved(op: &str, o: &MoveOutcome, then: &str) -> String {
    let saved = match &o.auto_saved {
        Some(a) => format!("unsaved changes saved as #{}; ", a.record.seq),
        None => String::new(),
    };
    format!("{saved}{op}: now at #{} ({then})", o.target.record.seq)
}

/// The preview a confirmation shows: unsaved changes, the paths, what is left alone.
fn preview_lines(out: &MoveOutcome, conflicts: &[Vec<u8>]) -> Vec<String> {
    let mut lines = Vec::new();
    if out.was_dirty {
        lines.push("unsaved changes are saved first".to_string());
    }
    lines.push(match out.changes.len() {
        0 => "no file changes".to_string(),
        n => format!("{n} paths change:"),
    });
    lines.extend(out.changes.iter().take(PREVIEW_PATHS).map(change_line));
    if out.changes.len() > PREVIEW_PATHS {
        lines.push(format!(
            "  ... and {} more",
            out.changes.len() - PREVIEW_PATHS
        ));
    }
    for path in conflicts {
        lines.push(format!(
            "  conflict: {} changed since; left as it is",
            path_shown(path)
        ));
    }
    for path in &out.kept {
        lines.push(format!("  kept: {} (left as it is)", path_shown(path)));
    }
    lines
}

fn change_line((path, change): &PathChange) -> String {
    let letter = match change {
        Change::Added => 'A',
        Change::Modified => 'M',
        Change::Deleted => 'D',
    };
    format!("  {letter} {}", path_shown(path))
}

/// `#12  a1b2c3d4  turn 3  edit  │ the line`.
fn blame_line(s: &Snapshot, text: &[u8]) -> String {
    let r = &s.record;
    let session: String = r
        .session
        .as_deref()
        .map_or("-".into(), |s| s.chars().take(8).collect());
    let step = r.step.map_or("-".to_string(), |n| n.to_string());
    let tool = r
        .meta
        .iter()
        .find(|(k, _)| k == "tool")
        .map_or("-", |(_, v)| v.as_str());
    format!(
        "#{:<5} {:<8} {:>4} {:<10} │ {}",
        r.seq,
        text_shown(&session),
        step,
        text_shown(tool),
        text_shown(&String::from_utf8_lossy(text).replace('\t', "    "))
    )
}
