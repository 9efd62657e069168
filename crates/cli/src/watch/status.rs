//! `snap watch --status`, `--background` and `--stop` as documents (docs/JSON.md): what a
//! running watcher says of itself over its socket, and what the client prints when none
//! runs or one was stopped. The watcher and its client are one program, but a watcher
//! started by an older snap may answer with fields missing: each has a default.

use serde::{Deserialize, Serialize};

/// A running watcher, as it answers a status request.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq, Serialize)]
#[serde(default)]
pub(crate) struct StatusDoc {
    pub(crate) running: bool,
    pub(crate) pid: u32,
    pub(crate) root: String,
    /// The inotify watches it holds.
    pub(crate) directories_watched: usize,
    /// Directories no watch can cover, read again at every save.
    pub(crate) unwatched: Vec<String>,
    /// Epochs started since it did (each makes the next answer *everything*).
    pub(crate) epoch: u64,
    pub(crate) instance: String,
    pub(crate) seq: u64,
    pub(crate) events: u64,
    pub(crate) queries: u64,
    /// Why every answer is *everything*, when it is.
    pub(crate) doubt: Option<String>,
    pub(crate) memory_bytes: Option<u64>,
    pub(crate) uptime_s: u64,
    pub(crate) idle_timeout_s: Option<u64>,
    pub(crate) autosaves: Option<u64>,
    /// Its checks on its own silence, the changes they found no event for, and the last.
    pub(crate) checks: u64,
    pub(crate) silent_changes: u64,
    pub(crate) last_silent_change: Option<String>,
}

/// No watcher runs for the workspace at `root`.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct NoneDoc {
    pub(crate) running: bool,
    pub(crate) root: String,
}

/// `snap watch --stop`: whether a watcher was running and was stopped, and its pid.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct StoppedDoc {
    pub(crate) running: bool,
    pub(crate) stopped: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) pid: Option<u32>,
}
