//! The UI's state: the history read last, the timeline's rows and selection, the detail on
//! the right, and what the person is doing (browsing, confirming, searching, reading help or
//! a blame). It draws nothing; [`crate::draw`] does. [`keys`] turns keys into changes of it and
//! [`actions`] runs the library calls behind them.

mod actions;
mod keys;

use std::path::PathBuf;

use snap_tree::{History, Lines, ObjectId, Snapshot};

use crate::detail::{self, Base, DiffLine, FileRow};
use crate::source::{self, Source, Stamp};
use crate::timeline::Timeline;
use crate::{Theme, UiError};

pub use keys::Flow;

/// Which side the arrow keys move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Focus {
    /// The timeline on the left.
    Timeline,
    /// The changed files on the right.
    Files,
}

/// What the person is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Looking around.
    Browse,
    /// Reading the keys.
    Help,
    /// Typing a search.
    Search(String),
    /// Asked to confirm an action, with its preview.
    Confirm(Pending),
    /// Reading a file's blame.
    Blame(BlameView),
}

/// An action waiting for `y`, and the preview shown for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pending {
    /// What `y` does.
    pub action: Action,
    /// The question.
    pub title: String,
    /// The preview: what would change and what would be left alone.
    pub lines: Vec<String>,
}

/// An action that needs a confirmation, naming its snapshot by sequence number (`#N`, as
/// the snapshot the action records names it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Make the tree match this snapshot (a new `restore` snapshot).
    Restore(u64),
    /// Take back what this snapshot changed.
    Revert(u64),
    /// Take back what the turn holding this snapshot changed.
    RevertTurn(u64),
}

/// A file's lines with the snapshots that brought them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlameView {
    /// The title: the file and the snapshot blamed at.
    pub title: String,
    /// One line each: who, then the text.
    pub lines: Vec<String>,
    /// The first line on screen.
    pub scroll: usize,
}

/// The right-hand side, for the snapshot selected.
#[derive(Debug, Default)]
pub struct Detail {
    /// The snapshot the files are of; `None` until read.
    pub of: Option<ObjectId>,
    /// Its changed files.
    pub files: Vec<FileRow>,
    /// The file selected.
    pub file: usize,
    /// The selected file's diff.
    pub diff: Vec<DiffLine>,
    /// The first diff line on screen.
    pub scroll: usize,
    /// Why the detail could not be read, if it could not.
    pub error: Option<String>,
    /// The snapshot's parent was pruned: nothing to compare it with, so no file is listed.
    pub first_kept: bool,
    /// What the diff was read for: a new selection or base reads it again.
    diff_of: Option<DiffKey>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct DiffKey {
    snapshot: ObjectId,
    path: Vec<u8>,
    base: Base,
    marked: Option<ObjectId>,
}

/// The whole state of the UI.
#[derive(Debug)]
pub struct App {
    source: Source,
    catalog: PathBuf,
    stamp: Stamp,
    /// The history as last read.
    pub history: History,
    /// Current lines, or all of them (`a`).
    pub lines: Lines,
    /// The rows on show.
    pub timeline: Timeline,
    /// The selected row.
    pub selected: usize,
    /// The first row on screen.
    pub offset: usize,
    /// Which side the keys move.
    pub focus: Focus,
    /// The selected snapshot's files and diff.
    pub detail: Detail,
    /// What the diff compares with.
    pub base: Base,
    /// The snapshot marked with `m`.
    pub marked: Option<ObjectId>,
    /// What the person is doing.
    pub mode: Mode,
    /// The last action's result or error, shown at the bottom.
    pub status: Option<String>,
    /// The last search, for `n`.
    pub last_search: Option<String>,
    /// Colours, or none (`NO_COLOR`).
    pub theme: Theme,
}

impl App {
    /// Reads the history of `source`, with HEAD selected.
    pub fn open(source: Source, theme: Theme) -> Result<App, UiError> {
        let (history, stamp, catalog) = source.history()?;
        let mut app = App {
            source,
            catalog,
            stamp,
            history,
            lines: Lines::Current,
            timeline: Timeline::default(),
            selected: 0,
            offset: 0,
            focus: Focus::Timeline,
            detail: Detail::default(),
            base: Base::Parent,
            marked: None,
            mode: Mode::Browse,
            status: None,
            last_search: None,
            theme,
        };
        let head = app.history.head().map(|h| h.snapshot.id);
        let at = head.and_then(|id| app.history.position(&id));
        app.timeline.fold_turns_except(&app.history, at);
        app.select_snapshot(head);
        Ok(app)
    }

    /// The snapshot of the selected row (a group's newest).
    pub fn selected_snapshot(&self) -> Option<&Snapshot> {
        let row = self.timeline.rows().get(self.selected)?;
        Some(&self.history.items()[row.at].snapshot)
    }

    /// The marked snapshot, if it is still in the history.
    pub fn marked_snapshot(&self) -> Option<&Snapshot> {
        let id = self.marked?;
        self.history.get(&id).map(|i| &i.snapshot)
    }

    /// The selected file of the detail.
    pub fn selected_file(&self) -> Option<&FileRow> {
        self.detail.files.get(self.detail.file)
    }

    /// Reads the history again when the catalog changed (a save, an undo from elsewhere).
    pub fn poll(&mut self) -> Result<(), UiError> {
        if source::stamp(&self.catalog)? != self.stamp {
            self.reload()?;
        }
        Ok(())
    }

    /// Reads the history again, keeping the selected snapshot selected where it still is.
    pub fn reload(&mut self) -> Result<(), UiError> {
        let keep = self.selected_snapshot().map(|s| s.id);
        let (history, stamp, _) = self.source.history()?;
        self.history = history;
        self.stamp = stamp;
        self.timeline.rebuild(&self.history, self.lines);
        self.keep_selection(keep.or_else(|| self.history.head().map(|h| h.snapshot.id)));
        self.detail.of = None;
        self.detail.diff_of = None;
        Ok(())
    }

    /// Selects the row of snapshot `id`, unfolding the groups that hide it.
    pub fn select_snapshot(&mut self, id: Option<ObjectId>) {
        if let Some(at) = id.and_then(|id| self.history.position(&id)) {
            self.timeline.reveal(&self.history, at);
        }
        self.timeline.rebuild(&self.history, self.lines);
        self.keep_selection(id);
    }

    /// Selects the row nearest to snapshot `id` as the rows are: its own, or the folded
    /// group holding it, or the first row.
    pub fn keep_selection(&mut self, id: Option<ObjectId>) {
        let item = id.and_then(|id| self.history.position(&id));
        self.selected = item
            .and_then(|at| self.timeline.nearest_row(at))
            .unwrap_or(0);
    }

    /// Moves the selection by `delta` rows, within the rows.
    pub fn move_selection(&mut self, delta: isize) {
        let last = self.timeline.rows().len().saturating_sub(1);
        self.selected = self.selected.saturating_add_signed(delta).min(last);
    }

    /// Reads what the right-hand side needs for the selection, if it is not read yet.
    pub fn load_detail(&mut self) {
        if let Err(e) = self.try_load_detail() {
            self.detail.error = Some(e.to_string());
        }
    }

    /// True when the right-hand side waits for a read.
    pub fn detail_stale(&self) -> bool {
        let id = self.selected_snapshot().map(|s| s.id);
        self.detail.of != id || self.detail.diff_of != self.diff_key()
    }

    fn try_load_detail(&mut self) -> Result<(), UiError> {
        let Some(snapshot) = self.selected_snapshot().cloned() else {
            self.detail = Detail::default();
            return Ok(());
        };
        if self.detail.of != Some(snapshot.id) {
            let first_kept = self.source.read(|ws| Ok(ws.parent_pruned(&snapshot)?))?;
            let files = match first_kept {
                true => Vec::new(),
                false => (self.source).read(|ws| detail::changed_files(ws, &snapshot))?,
            };
            self.detail = Detail {
                of: Some(snapshot.id),
                files,
                first_kept,
                ..Detail::default()
            };
        }
        let key = self.diff_key();
        if self.detail.diff_of != key {
            self.detail.diff = match (&key, self.selected_file()) {
                (Some(k), Some(file)) => {
                    let (path, marked) = (file.path.clone(), self.marked_snapshot().cloned());
                    let (base, snap) = (k.base, &snapshot);
                    (self.source)
                        .read(|ws| detail::file_diff(ws, snap, &path, base, marked.as_ref()))?
                }
                _ => Vec::new(),
            };
            self.detail.scroll = 0;
            self.detail.diff_of = key;
            self.detail.error = None;
        }
        Ok(())
    }

    fn diff_key(&self) -> Option<DiffKey> {
        let file = self.selected_file()?;
        Some(DiffKey {
            snapshot: self.detail.of?,
            path: file.path.clone(),
            base: self.base,
            marked: self.marked.filter(|_| self.base == Base::Marked),
        })
    }
}

#[cfg(test)]
mod tests;
