//! opencode's events, as snap's own plugin (`opencode_plugin.js`, installed by
//! `snap hook install --agent opencode`) passes them on: opencode hooks are in-process
//! JavaScript, so the plugin writes this payload (`event`, `sessionID`, `tool`, `callID`,
//! `messageID`, `directory`) to `snap-undo hook --agent opencode`.

use super::agents::{Agent, Extras, Home, Layout};
use super::payload::{EventKind, PayloadFormat, text};

const FORMAT: PayloadFormat = PayloadFormat {
    event_key: "event",
    kinds: &[
        ("session.created", EventKind::SessionStart),
        ("chat.message", EventKind::Prompt),
        ("tool.execute.after", EventKind::ToolDone),
    ],
    session_key: "sessionID",
    root_env: None,
    root_keys: &["directory"],
    tool: |payload, _| text(payload, "tool"),
    id_keys: &["callID", "messageID"],
    named_paths: &[],
    prompt_context: false,
    reply: |_| "",
};

/// opencode as snap installs into it.
pub(super) const AGENT: Agent = Agent {
    name: "opencode",
    payload: FORMAT,
    home: Home {
        dir: ".opencode",
        file: "plugins/snap-undo.js",
        local_file: None,
        user_dir: Some(".config/opencode"),
    },
    layout: Layout::Plugin,
    extras: Extras {
        note: None,
        reminder: None,
        slash_commands: None,
    },
};
