//! The `snap` program (installed as `snap` and as `snap-undo`): parses arguments, opens the
//! workspace, runs one command, and prints its outcome for people or as one JSON document.
//! Exit codes: 0 ok (also "nothing changed"), 1 error, 2 usage, 3 nothing to undo or redo,
//! 128 + N stopped by signal N (`signals`).

mod args;
mod commands;
mod ctx;
mod exit;
mod help;
mod hints;
mod hook;
mod json;
#[cfg(feature = "mcp")]
mod mcp;
mod open;
mod pager;
mod progress;
mod render;
mod signals;
mod snapd;
mod watch;

use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::args::{Cli, Command};
use crate::commands::completions::invoked_name;
use crate::commands::moves::Way;
use crate::ctx::Ctx;
use crate::hook::cmd::HookArgs;

/// Runs one command from the process's arguments; the whole of both binaries.
pub fn main() -> ExitCode {
    exit::restore_sigpipe();
    let cli = match parse_args() {
        Ok(cli) => cli,
        Err(e) => return exit::refused(&e),
    };
    if let Command::Hook(HookArgs {
        agent,
        action: None,
        ..
    }) = &cli.command
    {
        let agent = agent.clone().unwrap_or_default();
        return exit::run_hook(&agent, || run(cli));
    }
    let json_mode = cli.json;
    let code = exit::run_command(json_mode, || run(cli));
    if std::env::var_os("SNAP_TIMING").is_some() {
        // The whole command's peak, restores included: the timing events come from scans.
        eprintln!("snap timing: exit{}", progress::peak_memory());
    }
    code
}

/// The process's arguments, under the name this program runs as, so `--version` and usage
/// lines name the binary the user typed (`snap` or `snap-undo`).
fn parse_args() -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let name = match invoked_name().as_deref() {
        Some("snap-undo") => "snap-undo",
        _ => "snap",
    };
    let cmd = help::grouped(Cli::command().name(name).bin_name(name));
    let matches = cmd.try_get_matches()?;
    Cli::from_arg_matches(&matches)
}

fn run(cli: Cli) -> Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let start = cli.dir.as_ref().map_or(cwd.clone(), |d| cwd.join(d));
    let store = cli.store.as_ref().map(|s| cwd.join(s));
    let hook = matches!(cli.command, Command::Hook(HookArgs { action: None, .. }));
    if !cli.quiet && !hook {
        snap_tree::on_lock_wait(|m| eprintln!("snap: {m}"));
    }
    if cli.command.writes() {
        signals::watch().context("cannot watch for SIGTERM")?;
    }
    let ctx = Ctx {
        start,
        store,
        json: cli.json,
        quiet: cli.quiet,
        progress: !hook && progress::wanted(cli.json, cli.quiet, cli.no_progress),
        timing: std::env::var_os("SNAP_TIMING").is_some(),
    };
    // Given back, and waited for, when the command is done (before an error line).
    let _pager = pager::start(cli.paging());
    match cli.command {
        Command::Init(args) => commands::init::run(&ctx, args),
        Command::Save(args) => commands::save::run(&ctx, args),
        Command::Undo(args) | Command::Rewind(args) => {
            commands::moves::cmd_move(&ctx, args, Way::Undo)
        }
        Command::Redo(args) => commands::moves::cmd_move(&ctx, args, Way::Redo),
        Command::Export(args) => commands::export::run(&ctx, args),
        Command::Hook(args) => hook::cmd::run(&ctx, args),
        Command::Doctor(args) => commands::doctor::run(&ctx, args),
        #[cfg(feature = "mcp")]
        Command::Mcp(args) => mcp::run(&ctx, args),
        Command::Restore(args) => commands::restore::run(&ctx, args),
        Command::Revert(args) => commands::revert::run(&ctx, args),
        Command::Log(args) => commands::log::run(&ctx, args),
        Command::Show(args) => commands::show::run(&ctx, args),
        Command::Ls(args) => commands::ls::run(&ctx, args),
        Command::Cat(args) => commands::cat::run(&ctx, args),
        Command::Blame(args) => commands::blame::run(&ctx, args),
        Command::Expunge(args) => commands::expunge::run(&ctx, args),
        Command::Ui(args) => commands::ui::run(&ctx, args),
        Command::Diff(args) => commands::diff::run(&ctx, args),
        Command::Completions(args) => {
            let cli = <Cli as clap::CommandFactory>::command();
            commands::completions::run(&ctx, args, cli)
        }
        Command::Status(args) => commands::status::run(&ctx, args),
        Command::Recover(args) => commands::recover::run(&ctx, args),
        Command::Prune(args) => commands::lifecycle::run_prune(&ctx, args),
        Command::Gc(args) => commands::lifecycle::run_gc(&ctx, args),
        Command::Verify(args) => commands::lifecycle::run_verify(&ctx, args),
        #[cfg(feature = "remote")]
        Command::Remote(args) => commands::remote_config::run(&ctx, args),
        #[cfg(feature = "remote")]
        Command::Push(args) => commands::remote::run_push(&ctx, args),
        #[cfg(feature = "remote")]
        Command::Pull(args) => commands::remote::run_pull(&ctx, args),
        #[cfg(feature = "remote")]
        Command::Clone(args) => commands::remote::run_clone(&ctx, args),
        Command::Repair(args) => commands::lifecycle::run_repair(&ctx, args),
        Command::Delete(args) => commands::lifecycle::run_delete(&ctx, args),
        Command::Watch(args) => watch::cmd_watch(&ctx, args),
        Command::Exec(args) => watch::exec::cmd_exec(&ctx, args),
    }
}
