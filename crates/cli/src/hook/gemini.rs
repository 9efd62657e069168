//! Gemini CLI's hook payloads: `hook_event_name` (`SessionStart`, `BeforeAgent` for a
//! prompt, `AfterTool`), `session_id`, `cwd`; the root is `$GEMINI_PROJECT_DIR`. Its stdout
//! must be JSON only, so the reply is `{}`.

use super::agents::{Agent, Extras, Home, Layout};
use super::payload::{EventKind, PayloadFormat, text};

const FORMAT: PayloadFormat = PayloadFormat {
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
    named_paths: &[],
    prompt_context: false,
    reply: |_| "{}",
};

/// The tools whose calls can change files.
const TOOLS: &str = "write_file|replace|run_shell_command|mcp__.*";

/// gemini as snap installs into it.
pub(super) const AGENT: Agent = Agent {
    name: "gemini",
    payload: FORMAT,
    home: Home {
        dir: ".gemini",
        file: "settings.json",
        local_file: None,
        user_dir: None,
    },
    layout: Layout::Grouped {
        events: &[
            ("SessionStart", None),
            ("BeforeAgent", None),
            ("AfterTool", Some(TOOLS)),
        ],
        timeout: ("timeout", 30_000),
    },
    extras: Extras {
        note: Some("Gemini CLI runs hooks when tools.enableHooks is true (set in that file)"),
        reminder: None,
        slash_commands: None,
    },
};
