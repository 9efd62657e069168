//! Cursor's hook payloads: `hook_event_name` (`afterFileEdit`, `afterShellExecution`, ...),
//! `conversation_id` as the session, `generation_id` per turn, and `workspace_roots` (every
//! root with a store is saved). Its `after*` events want `{}` back, its prompt event
//! `{"continue":true}`.

use serde_json::Value;

use super::agents::{Agent, Extras, Home, Layout};
use super::payload::{EventKind, PayloadFormat, text};

const FORMAT: PayloadFormat = PayloadFormat {
    event_key: "hook_event_name",
    kinds: &[
        ("sessionStart", EventKind::SessionStart),
        ("beforeSubmitPrompt", EventKind::Prompt),
        ("afterFileEdit", EventKind::ToolDone),
        ("afterShellExecution", EventKind::ToolDone),
        ("afterMCPExecution", EventKind::ToolDone),
        ("postToolUse", EventKind::ToolDone),
    ],
    session_key: "conversation_id",
    root_env: None,
    root_keys: &["workspace_roots", "cwd"],
    tool,
    id_keys: &["generation_id"],
    named_paths: &[],
    prompt_context: false,
    reply,
};

/// Cursor's answer: `beforeSubmitPrompt` may block the prompt, so it is told to go on;
/// the `after*` events are fire-and-forget and want `{}`.
fn reply(event: &str) -> &'static str {
    if event == "beforeSubmitPrompt" {
        r#"{"continue":true}"#
    } else {
        "{}"
    }
}

/// Cursor names the tool only in `postToolUse`; its older events are one tool each.
fn tool(payload: &Value, event: &str) -> Option<String> {
    match event {
        "afterFileEdit" => Some("edit".into()),
        "afterShellExecution" => Some("shell".into()),
        _ => text(payload, "tool_name"),
    }
}

/// cursor as snap installs into it.
pub(super) const AGENT: Agent = Agent {
    name: "cursor",
    payload: FORMAT,
    home: Home {
        dir: ".cursor",
        file: "hooks.json",
        local_file: None,
        user_dir: None,
    },
    layout: Layout::Flat {
        events: &["beforeSubmitPrompt", "afterFileEdit", "afterShellExecution"],
    },
    extras: Extras {
        note: None,
        reminder: None,
        slash_commands: None,
    },
};
