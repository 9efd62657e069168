//! Gemini CLI's hook payloads: `hook_event_name` (`SessionStart`, `BeforeAgent` for a
//! prompt, `AfterTool`), `session_id`, `cwd`; the root is `$GEMINI_PROJECT_DIR`. Its stdout
//! must be JSON only, so the reply is `{}`.

use super::{EventKind, PayloadFormat, text};

pub(super) const FORMAT: PayloadFormat = PayloadFormat {
    event_key: "hook_event_name",
    kinds: &[
        ("SessionStart", EventKind::SessionStart),
        ("BeforeAgent", EventKind::Prompt),
        ("AfterTool", EventKind::ToolDone),
    ],
    session_key: "session_id",
    root_env: Some("GEMINI_PROJECT_DIR"),
    root_keys: &["cwd"],
    tool: |payload, _| text(payload, "tool_name"),
    id_keys: &[],
    prompt_context: false,
    reply: |_| "{}",
};
