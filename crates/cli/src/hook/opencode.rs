//! opencode's events, as snap's own plugin (`opencode_plugin.js`, installed by
//! `snap hook install --agent opencode`) passes them on: opencode hooks are in-process
//! JavaScript, so the plugin writes this payload (`event`, `sessionID`, `tool`, `callID`,
//! `messageID`, `directory`) to `snap-undo hook --agent opencode`.

use super::{EventKind, PayloadFormat, text};

pub(super) const FORMAT: PayloadFormat = PayloadFormat {
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
    prompt_context: false,
    reply: |_| "",
};
