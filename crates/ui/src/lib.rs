//! snap-ui: `snap ui`, a terminal browser of a workspace's history (ratatui over crossterm).
//!
//! The timeline on the left is snap-tree's history model (sessions, turns, tool calls,
//! snapshots; HEAD, the redo stack, abandoned lines); on the right, the selected snapshot's
//! changed files and a file's diff. Restore, revert, undo and redo go through the same
//! [`snap_tree::Workspace`] calls the CLI makes, so each saves a dirty tree first and can be
//! undone. The store is opened for each read or action and closed again: idle, the UI holds
//! no lock, and it notices other commands' changes by polling the catalog file.
//!
//! - [`source`] opens the workspace for one read or one action.
//! - [`timeline`] turns the history into foldable rows.
//! - [`detail`] reads a snapshot's files and one file's diff.
//! - [`app`] is the state and what keys do to it; [`draw`] draws it; `term` runs the loop.

pub mod app;
pub mod detail;
pub mod draw;
mod error;
#[cfg(test)]
mod fixture;
pub mod source;
mod term;
pub mod timeline;

pub use app::App;
pub use draw::Theme;
pub use error::UiError;
pub use source::Source;
pub use term::run;
