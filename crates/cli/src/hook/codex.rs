//! OpenAI Codex CLI's hook payloads: like Claude Code's, with `turn_id`; the root is `cwd`.
//! Its `PostToolUse` schema forbids extra fields, so snap reads only what it names.

use super::{EventKind, PayloadFormat, text};

pub(super) const FORMAT: PayloadFormat = PayloadFormat {
    event_key: "hook_event_name",
    kinds: &[
        ("SessionStart", EventKind::SessionStart),
        ("UserPromptSubmit", EventKind::Prompt),
        ("PostToolUse", EventKind::ToolDone),
    ],
    session_key: "session_id",
    root_env: None,
    root_keys: &["cwd"],
    tool: |payload, _| text(payload, "tool_name"),
    id_keys: &["tool_use_id", "turn_id", "agent_id"],
    prompt_context: false,
    reply: |_| "",
};
