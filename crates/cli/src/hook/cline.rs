//! Cline's hook payloads: `hookName` (`TaskStart`, `TaskResume`, `UserPromptSubmit`,
//! `PostToolUse`, ...), `taskId` as the session, `workspaceRoots`, and the tool under
//! `postToolUse.toolName`. Cline reads a JSON answer; `{"cancel":false}` lets it go on.

use serde_json::Value;

use super::agents::{Agent, Extras, Home, Layout};
use super::payload::{EventKind, PayloadFormat};

const FORMAT: PayloadFormat = PayloadFormat {
    event_key: "hookName",
    kinds: &[
        ("TaskStart", EventKind::SessionStart),
        ("TaskResume", EventKind::SessionStart),
        ("UserPromptSubmit", EventKind::Prompt),
        ("PostToolUse", EventKind::ToolDone),
    ],
    session_key: "taskId",
    root_env: None,
    root_keys: &["workspaceRoots"],
    tool,
    id_keys: &[],
    named_paths: &[],
    prompt_context: false,
    reply: |_| r#"{"cancel":false}"#,
};

fn tool(payload: &Value, _: &str) -> Option<String> {
    payload["postToolUse"]["toolName"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}

/// cline as snap installs into it.
pub(super) const AGENT: Agent = Agent {
    name: "cline",
    payload: FORMAT,
    home: Home {
        dir: ".clinerules/hooks",
        file: "",
        local_file: None,
        // Cline's user hooks live in its own documents directory.
        user_dir: Some("Documents/Cline/Hooks"),
    },
    layout: Layout::Scripts {
        events: &["TaskStart", "TaskResume", "UserPromptSubmit", "PostToolUse"],
    },
    extras: Extras {
        note: None,
        reminder: None,
        slash_commands: None,
    },
};
