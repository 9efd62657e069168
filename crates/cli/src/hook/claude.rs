//! Claude Code's hook payloads: `hook_event_name`, `session_id`, `cwd`, and for tools
//! `tool_name` and `tool_use_id`; the root is `$CLAUDE_PROJECT_DIR`.

use super::{EventKind, PayloadFormat, text};

pub(super) const FORMAT: PayloadFormat = PayloadFormat {
    event_key: "hook_event_name",
    kinds: &[
        ("SessionStart", EventKind::SessionStart),
        ("UserPromptSubmit", EventKind::Prompt),
        ("PostToolUse", EventKind::ToolDone),
        ("PostToolUseFailure", EventKind::ToolDone),
    ],
    session_key: "session_id",
    root_env: Some("CLAUDE_PROJECT_DIR"),
    root_keys: &["cwd"],
    tool: |payload, _| text(payload, "tool_name"),
    id_keys: &["tool_use_id", "prompt_id", "agent_id"],
    prompt_context: true,
    reply: |_| "",
};
