//! Keys: what each does in each mode. Every action goes through [`super::actions`], which
//! calls the library as the CLI does.

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Focus, Mode};
use crate::detail::Base;

/// Whether the UI goes on after a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Draw again and wait for the next key.
    Continue,
    /// Leave the UI.
    Quit,
}

/// Rows or lines a page key moves.
const PAGE: isize = 10;

impl App {
    /// Does what `key` means now.
    pub fn key(&mut self, key: KeyEvent) -> Flow {
        if key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c') {
            return Flow::Quit;
        }
        match &self.mode {
            Mode::Help => self.mode = Mode::Browse,
            Mode::Search(_) => self.search_key(key.code),
            Mode::Confirm(_) => self.confirm_key(key.code),
            Mode::Blame(_) => self.blame_key(key.code),
            Mode::Browse => return self.browse_key(key.code),
        }
        Flow::Continue
    }

    fn browse_key(&mut self, code: KeyCode) -> Flow {
        self.status = None;
        match code {
            KeyCode::Char('q') => return Flow::Quit,
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('/') => self.mode = Mode::Search(String::new()),
            KeyCode::Char('n') => self.search_again(),
            KeyCode::Tab => self.focus = other(self.focus),
            KeyCode::Esc => self.focus = Focus::Timeline,
            KeyCode::Char(' ') => self.toggle_fold(),
            KeyCode::Char('a') => self.toggle_all(),
            KeyCode::Char('d') => self.base = self.base.next(self.marked.is_some()),
            KeyCode::Char('m') => self.toggle_mark(),
            KeyCode::Char('J') => self.scroll_diff(1),
            KeyCode::Char('K') => self.scroll_diff(-1),
            KeyCode::Enter => self.ask_restore(),
            KeyCode::Char('x') => self.ask_revert(),
            KeyCode::Char('u') => self.undo(),
            KeyCode::Char('r') => self.redo(),
            KeyCode::Char('b') => self.blame(),
            code => self.move_key(code),
        }
        Flow::Continue
    }

    fn move_key(&mut self, code: KeyCode) {
        let delta = match code {
            KeyCode::Down | KeyCode::Char('j') => 1,
            KeyCode::Up | KeyCode::Char('k') => -1,
            KeyCode::PageDown => PAGE,
            KeyCode::PageUp => -PAGE,
            KeyCode::Home | KeyCode::Char('g') => isize::MIN / 2,
            KeyCode::End | KeyCode::Char('G') => isize::MAX / 2,
            KeyCode::Left | KeyCode::Char('h') => return self.left(),
            KeyCode::Right | KeyCode::Char('l') => return self.right(),
            _ => return,
        };
        match self.focus {
            Focus::Timeline => self.move_selection(delta),
            Focus::Files => {
                let last = self.detail.files.len().saturating_sub(1);
                self.detail.file = self.detail.file.saturating_add_signed(delta).min(last);
            }
        }
    }

    /// Left: back to the timeline; there, fold the group or go up to the group holding it.
    fn left(&mut self) {
        if self.focus == Focus::Files {
            self.focus = Focus::Timeline;
            return;
        }
        let rows = self.timeline.rows();
        let Some(row) = rows.get(self.selected) else {
            return;
        };
        if row.is_group() && !row.folded {
            return self.toggle_fold();
        }
        let depth = row.depth;
        if let Some(up) = rows[..self.selected].iter().rposition(|r| r.depth < depth) {
            self.selected = up;
        }
    }

    /// Right: unfold a folded group; otherwise to the files.
    fn right(&mut self) {
        match self.timeline.rows().get(self.selected) {
            Some(row) if row.folded => self.toggle_fold(),
            _ => self.focus = Focus::Files,
        }
    }

    fn toggle_fold(&mut self) {
        let id = self.selected_snapshot().map(|s| s.id);
        self.timeline.toggle(&self.history, self.selected);
        self.timeline.rebuild(&self.history, self.lines);
        let at = self.selected;
        self.keep_selection(id);
        // A fold keeps its group's row selected, not the snapshot inside it.
        if self.timeline.rows().get(at).is_some_and(|r| r.is_group()) {
            self.selected = at;
        }
    }

    fn toggle_all(&mut self) {
        self.lines = match self.lines {
            snap_tree::Lines::Current => snap_tree::Lines::All,
            snap_tree::Lines::All => snap_tree::Lines::Current,
        };
        let id = self.selected_snapshot().map(|s| s.id);
        self.timeline.rebuild(&self.history, self.lines);
        self.keep_selection(id);
    }

    fn toggle_mark(&mut self) {
        let id = self.selected_snapshot().map(|s| s.id);
        self.marked = if self.marked == id { None } else { id };
        if self.marked.is_none() && self.base == Base::Marked {
            self.base = Base::Parent;
        }
    }

    fn scroll_diff(&mut self, delta: isize) {
        let last = self.detail.diff.len().saturating_sub(1);
        self.detail.scroll = self.detail.scroll.saturating_add_signed(delta).min(last);
    }

    fn search_key(&mut self, code: KeyCode) {
        let Mode::Search(query) = &mut self.mode else {
            return;
        };
        match code {
            KeyCode::Char(c) => query.push(c),
            KeyCode::Backspace => {
                query.pop();
            }
            KeyCode::Enter => {
                let query = std::mem::take(query);
                self.mode = Mode::Browse;
                self.last_search = Some(query).filter(|q| !q.is_empty());
                self.search_again();
            }
            KeyCode::Esc => self.mode = Mode::Browse,
            _ => {}
        }
    }

    fn confirm_key(&mut self, code: KeyCode) {
        let Mode::Confirm(pending) = &self.mode else {
            return;
        };
        let action = pending.action;
        match code {
            KeyCode::Char('y') | KeyCode::Enter => {
                self.mode = Mode::Browse;
                self.apply(action);
            }
            KeyCode::Char('n') | KeyCode::Char('q') | KeyCode::Esc => {
                self.mode = Mode::Browse;
                self.status = Some("cancelled: nothing changed".into());
            }
            _ => {}
        }
    }

    fn blame_key(&mut self, code: KeyCode) {
        let Mode::Blame(view) = &mut self.mode else {
            return;
        };
        let last = view.lines.len().saturating_sub(1);
        let delta = match code {
            KeyCode::Down | KeyCode::Char('j') => 1,
            KeyCode::Up | KeyCode::Char('k') => -1,
            KeyCode::PageDown | KeyCode::Char(' ') => PAGE,
            KeyCode::PageUp => -PAGE,
            _ => {
                self.mode = Mode::Browse;
                return;
            }
        };
        view.scroll = view.scroll.saturating_add_signed(delta).min(last);
    }
}

fn other(focus: Focus) -> Focus {
    match focus {
        Focus::Timeline => Focus::Files,
        Focus::Files => Focus::Timeline,
    }
}
