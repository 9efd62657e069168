//! Cline's hook payloads: `hookName` (`TaskStart`, `TaskResume`, `UserPromptSubmit`,
//! `PostToolUse`, ...), `taskId` as the session, `workspaceRoots`, and the tool under
//! `postToolUse.toolName`. Cline reads a JSON answer; `{"cancel":false}` lets it go on.

use serde_json::Value;

use super::{EventKind, PayloadFormat};

pub(super) const FORMAT: PayloadFormat = PayloadFormat {
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
    prompt_context: false,
    reply: |_| r#"{"cancel":false}"#,
};

fn tool(payload: &Value, _: &str) -> Option<String> {
    payload["postToolUse"]["toolName"]
        .as_str()
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
}
