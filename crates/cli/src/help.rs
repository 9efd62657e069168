//! The top-level `--help`: the commands listed by what they are for, as git lists its own.
//! clap lists subcommands in one flat list, so the list is written here by group and each
//! line's words are taken from the command's own help; a test checks that every command
//! is in exactly one group, so a new command cannot be left out.

use std::fmt::Write as _;

/// The groups, in the order the help shows them, each with its commands in order.
const GROUPS: &[(&str, &[&str])] = &[
    (
        "History",
        &[
            "init", "save", "log", "show", "diff", "status", "blame", "ui",
        ],
    ),
    (
        "Moves",
        &["undo", "rewind", "redo", "restore", "revert", "recover"],
    ),
    ("Inspection", &["ls", "cat", "export", "verify", "doctor"]),
    (
        "Store upkeep",
        &["prune", "gc", "expunge", "repair", "delete"],
    ),
    ("Remotes", &["remote", "push", "pull", "clone"]),
    ("Agents", &["hook", "mcp", "watch", "exec"]),
    ("Shell", &["completions"]),
];

/// `cmd` (the whole program) with a help that lists its commands by group.
pub(crate) fn grouped(cmd: clap::Command) -> clap::Command {
    let listing = listing(&cmd);
    cmd.help_template(format!(
        "{{about-with-newline}}\n{{usage-heading}} {{usage}}\n\n{listing}Options:\n{{options}}{{after-help}}"
    ))
}

/// One heading a group, then a line a command: its name and the first words of its help.
fn listing(cmd: &clap::Command) -> String {
    let mut out = String::new();
    for (group, names) in GROUPS {
        let _ = writeln!(out, "{group}:");
        for name in *names {
            let about = (cmd.find_subcommand(name))
                .and_then(clap::Command::get_about)
                .map(|about| summary(&about.to_string()))
                .unwrap_or_default();
            let _ = writeln!(out, "  {name:<12} {about}");
        }
        out.push('\n');
    }
    out
}

/// A command's help up to its first colon or semicolon, or its example (`(\`snap ...\`)`):
/// one short line; its own `--help` keeps the rest.
fn summary(about: &str) -> String {
    let cut = [" (`", ": ", "; "]
        .iter()
        .filter_map(|stop| about.find(stop))
        .min()
        .unwrap_or(about.len());
    about[..cut].trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use clap::CommandFactory;

    use super::{GROUPS, grouped, summary};
    use crate::args::Cli;

    /// Every command clap knows is in one group, once; every name grouped is a command.
    #[test]
    fn every_command_is_in_exactly_one_group() {
        let cmd = Cli::command();
        let real: BTreeSet<&str> = (cmd.get_subcommands())
            .filter(|c| !c.is_hide_set())
            .map(clap::Command::get_name)
            .collect();
        let grouped_names: Vec<&str> = GROUPS
            .iter()
            .flat_map(|(_, names)| *names)
            .copied()
            .collect();
        let unique: BTreeSet<&str> = grouped_names.iter().copied().collect();
        assert_eq!(unique.len(), grouped_names.len(), "a command in two groups");
        assert_eq!(unique, real, "the groups of --help and the commands differ");
    }

    #[test]
    fn the_help_shows_the_groups_in_order() {
        let help = grouped(Cli::command()).render_help().to_string();
        let mut from = 0;
        for (group, names) in GROUPS {
            let at = help[from..].find(&format!("\n{group}:\n")).expect(group) + from;
            for name in *names {
                assert!(help[at..].contains(&format!("\n  {name} ")), "{name}");
            }
            from = at;
        }
        assert!(
            help.contains("\n  save         Snapshot the directory"),
            "{help}"
        );
        assert!(help.contains("Options:\n"), "{help}");
    }

    #[test]
    fn a_summary_stops_before_the_example() {
        assert_eq!(
            summary("Create the store (`snap init`)."),
            "Create the store"
        );
        assert_eq!(summary("Check the store."), "Check the store");
        assert_eq!(
            summary("Check the wiring: hooks (`snap doctor`)."),
            "Check the wiring"
        );
    }
}
