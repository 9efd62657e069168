//! `snap completions`: the shell completion scripts.

use std::path::Path;

use anyhow::Result;

use crate::ctx::Ctx;

/// `snap completions`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CompletionsArgs {
    /// bash, zsh, fish, elvish or powershell.
    pub(crate) shell: clap_complete::Shell,
}

/// The file name this program was started under.
pub(crate) fn invoked_name() -> Option<String> {
    std::env::args_os().next().and_then(|a| {
        Path::new(&a)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    })
}

/// The completion script for `snap-undo`, and for `snap` too when that is the name this
/// program runs as (never otherwise: snapd's `snap` keeps its own completions). zsh reads one
/// `#compdef` line per file, so there both names share one script.
fn print_completions(shell: clap_complete::Shell, mut cmd: clap::Command) {
    let invoked = invoked_name();
    let mut names = vec!["snap-undo"];
    if invoked.as_deref() == Some("snap") {
        names.push("snap");
    }
    if shell == clap_complete::Shell::Zsh {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut cmd, "snap-undo", &mut script);
        let both = names.join(" ");
        let script = String::from_utf8_lossy(&script)
            .replacen("#compdef snap-undo", &format!("#compdef {both}"), 1)
            .replace(
                "compdef _snap-undo snap-undo",
                &format!("compdef _snap-undo {both}"),
            );
        print!("{script}");
        return;
    }
    for name in names {
        clap_complete::generate(shell, &mut cmd, name, &mut std::io::stdout());
    }
}

/// Runs `snap completions` for `cli`, the whole command line's parser.
pub(crate) fn run(_ctx: &Ctx, args: CompletionsArgs, cli: clap::Command) -> Result<()> {
    print_completions(args.shell, cli);
    Ok(())
}
