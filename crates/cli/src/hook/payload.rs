//! What an agent's hook payload says, whatever agent sent it: the [`HookEvent`] one save is
//! made for, and each agent's [`PayloadFormat`] that reads it.

use std::path::PathBuf;

use serde_json::Value;

use super::bounded::{FIELD_CAP, capped};

/// The most files one tool call may name as written (a payload is the agent's to shape).
const MAX_NAMED_PATHS: usize = 16;

/// What one hook event asks of snap, whatever agent sent it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct HookEvent {
    pub kind: EventKind,
    /// The agent's name for the event (`PostToolUse`), kept as meta `event`.
    pub name: String,
    /// The agent's session (Claude's `session_id`, Cursor's `conversation_id`, ...).
    pub session: Option<String>,
    /// The directories to save: the agent's project directory, else those of the payload.
    pub roots: Vec<PathBuf>,
    pub tool: Option<String>,
    /// Ids the agent gives (`tool_use_id`, `prompt_id`, ...), kept as meta.
    pub ids: Vec<(&'static str, String)>,
    /// The files the tool call itself names as the ones it writes (`tool_input.file_path`
    /// of Write, Edit, MultiEdit; `notebook_path` of NotebookEdit), as given.
    pub paths: Vec<PathBuf>,
}

/// The events snap tells apart; every one of them saves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A session begins or resumes: the baseline, so the first edit can be undone.
    SessionStart,
    /// The user sent a prompt: a new turn begins; edits made by hand since are saved.
    Prompt,
    /// A tool ran (or failed: a failed shell command may still have written files).
    ToolDone,
    /// Anything else (a turn ended, a subagent stopped, an event snap does not know).
    #[default]
    Other,
}

impl EventKind {
    /// The `hook` meta value of a snapshot saved for this event.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStart => "session-start",
            EventKind::Prompt => PROMPT,
            EventKind::ToolDone => "tool",
            EventKind::Other => "other",
        }
    }
}

/// The `hook` meta value of a prompt's save: where a turn starts.
pub(crate) const PROMPT: &str = snap_tree::PROMPT_EVENT;

/// How one agent's payloads read; each agent module has one.
#[derive(Debug)]
pub(crate) struct PayloadFormat {
    /// The key of the event's name.
    pub event_key: &'static str,
    /// Event names and what they are; names not listed are [`EventKind::Other`].
    pub kinds: &'static [(&'static str, EventKind)],
    pub session_key: &'static str,
    /// The environment variable naming the project root, tried before the payload.
    pub root_env: Option<&'static str>,
    /// Payload keys holding a root (a string) or roots (an array of strings), in order.
    pub root_keys: &'static [&'static str],
    /// The tool that ran, for a [`EventKind::ToolDone`] event.
    pub tool: fn(&Value, &str) -> Option<String>,
    pub id_keys: &'static [&'static str],
    /// The keys of `tool_input` naming the file a tool call writes (see [`HookEvent::paths`]).
    pub named_paths: &'static [&'static str],
    /// What the agent wants on stdout after the hook, by event name (nothing, or JSON).
    pub reply: fn(&str) -> &'static str,
    /// The agent takes context for the model from a prompt event's reply (Claude Code's
    /// `additionalContext`): snap then names the files that changed outside its tool calls.
    pub prompt_context: bool,
}

impl PayloadFormat {
    /// The event a payload describes, each field it records capped (`bounded.rs`); missing
    /// fields are left empty, never an error.
    pub(crate) fn event(&self, payload: &Value) -> HookEvent {
        let name = text(payload, self.event_key).unwrap_or_default();
        let kind = self
            .kinds
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(EventKind::Other, |(_, k)| *k);
        let ids = self
            .id_keys
            .iter()
            .filter_map(|key| Some((*key, text(payload, key)?)))
            .collect();
        HookEvent {
            kind,
            tool: (self.tool)(payload, &name),
            session: text(payload, self.session_key),
            roots: self.roots(payload),
            ids,
            paths: self.named_paths(payload),
            name,
        }
        .bounded()
    }

    /// The files the call names as written, at most [`MAX_NAMED_PATHS`] of them.
    fn named_paths(&self, payload: &Value) -> Vec<PathBuf> {
        (self.named_paths.iter())
            .filter_map(|key| text(&payload["tool_input"], key))
            .take(MAX_NAMED_PATHS)
            .map(PathBuf::from)
            .collect()
    }

    fn roots(&self, payload: &Value) -> Vec<PathBuf> {
        let from_env = self
            .root_env
            .and_then(std::env::var_os)
            .filter(|v| !v.is_empty());
        if let Some(dir) = from_env {
            return vec![PathBuf::from(dir)];
        }
        let mut from_payload = self.root_keys.iter().map(|key| match &payload[*key] {
            Value::String(dir) => vec![PathBuf::from(dir)],
            Value::Array(dirs) => dirs
                .iter()
                .filter_map(Value::as_str)
                .map(PathBuf::from)
                .collect(),
            _ => Vec::new(),
        });
        from_payload
            .find(|dirs| !dirs.is_empty())
            .unwrap_or_default()
    }
}

/// A non-empty string field of the payload.
pub(crate) fn text(payload: &Value, key: &str) -> Option<String> {
    match &payload[key] {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

impl HookEvent {
    /// The event with every field it records within [`FIELD_CAP`].
    pub(crate) fn bounded(self) -> HookEvent {
        let field = |text: String| capped(text, FIELD_CAP);
        HookEvent {
            name: field(self.name),
            session: self.session.map(field),
            tool: self.tool.map(field),
            ids: (self.ids.into_iter())
                .map(|(key, value)| (key, field(value)))
                .collect(),
            ..self
        }
    }
}
