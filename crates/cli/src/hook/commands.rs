//! Slash commands installed beside the hook, named so that they cannot collide with the
//! agent's own (`/undo` is Claude Code's alias of `/rewind`): `/snap-undo`, `/snap-redo`,
//! `/snap-log`. Each runs snap-undo by absolute path and asks the model to report what
//! changed on disk, so that it does not keep working from files that are gone.

/// Claude Code's `.claude/commands/<name>` files for the binary `bin` (shell-quoted).
pub(super) fn claude(bin: &str) -> Vec<(&'static str, String)> {
    let page = |description: &str, args: &str, after: &str| {
        format!(
            "---\ndescription: {description}\nallowed-tools: Bash({bin}:*)\n---\n\
             !`{bin} {args}`\n\n{after}\n\n{}\n",
            super::agents::OURS_MARK
        )
    };
    vec![
        (
            "snap-undo.md",
            page(
                "Undo the agent's last turn on disk with snap (the files, not the conversation)",
                "undo --turn",
                "The output above is snap undoing the files of the last turn. Tell the user in \
                 one or two lines what was restored, and read those files again before relying \
                 on them. `/snap-redo` brings the turn back.",
            ),
        ),
        (
            "snap-redo.md",
            page(
                "Redo what /snap-undo undid",
                "redo --turn",
                "The output above is snap redoing files. Say in one line what came back, and \
                 read those files again before relying on them.",
            ),
        ),
        (
            "snap-log.md",
            page(
                "Show snap's recent snapshots of this project",
                "log -n 20",
                "Show the user the snapshot list above as it is.",
            ),
        ),
    ]
}
