//! OpenAI Codex CLI's hook payloads: like Claude Code's, with `turn_id`; the root is `cwd`.
//! Its `PostToolUse` schema forbids extra fields, so snap reads only what it names.

use super::agents::{Agent, Extras, Home, Layout};
use super::payload::{EventKind, PayloadFormat, text};

const FORMAT: PayloadFormat = PayloadFormat {
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
    id_keys: &["tool_use_id", "turn_id", "agent_id", "agent_type"],
    named_paths: &["file_path"],
    prompt_context: false,
    reply: |_| "",
};

/// codex as snap installs into it.
pub(super) const AGENT: Agent = Agent {
    name: "codex",
    payload: FORMAT,
    home: Home {
        dir: ".codex",
        file: "hooks.json",
        local_file: None,
        user_dir: None,
    },
    layout: Layout::Grouped {
        events: &[
            ("SessionStart", None),
            ("UserPromptSubmit", None),
            ("PostToolUse", None),
        ],
        timeout: ("timeout_sec", 30),
    },
    extras: Extras {
        note: Some(
            "Codex skips a new hook until you trust it: run /hooks in Codex and trust the snap-undo hook",
        ),
        reminder: Some("Codex runs it only once you trust it in /hooks"),
        slash_commands: None,
    },
};
