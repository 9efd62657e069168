//! Claude Code's hook payloads: `hook_event_name`, `session_id`, `cwd`, and for tools
//! `tool_name` and `tool_use_id`; the root is `$CLAUDE_PROJECT_DIR`.

use super::agents::{Agent, Extras, Home, Layout};
use super::payload::{EventKind, PayloadFormat, text};

const FORMAT: PayloadFormat = PayloadFormat {
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
    id_keys: &["tool_use_id", "prompt_id", "agent_id", "agent_type"],
    named_paths: &["file_path", "notebook_path"],
    prompt_context: true,
    reply: |_| "",
};

/// The tools whose calls can change files.
const TOOLS: &str = "Edit|Write|MultiEdit|NotebookEdit|Bash|mcp__.*";

/// claude as snap installs into it.
pub(super) const AGENT: Agent = Agent {
    name: "claude",
    payload: FORMAT,
    home: Home {
        dir: ".claude",
        file: "settings.json",
        local_file: Some("settings.local.json"),
        user_dir: None,
    },
    layout: Layout::Grouped {
        events: &[
            ("SessionStart", None),
            ("UserPromptSubmit", None),
            ("PostToolUse", Some(TOOLS)),
            ("PostToolUseFailure", Some(TOOLS)),
        ],
        timeout: ("timeout", 30),
    },
    extras: Extras {
        note: Some("slash commands: /snap-undo (the last turn), /snap-redo, /snap-log"),
        reminder: None,
        slash_commands: Some(super::commands::claude),
    },
};
