//! The `snap` program (installed as `snap` and as `snap-undo`): parses arguments, opens the
//! workspace, runs one command, and prints its outcome for people or as one JSON document.
//! Exit codes: 0 ok (also "nothing changed"), 1 error, 2 usage, 3 nothing to undo or redo,
//! 128 + N stopped by signal N (`signals`).

mod args;
mod commands;
mod exit;
mod help;
mod hook;
mod json;
#[cfg(feature = "mcp")]
mod mcp;
mod pager;
mod progress;
mod render;
mod signals;
mod snapd;
mod watch;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde_json::{Value, json};
use snap_tree::Workspace;

use crate::args::{Cli, Command, HookAction, HookArgs};
use crate::commands::{
    Way, cmd_cat, cmd_doctor, cmd_export, cmd_init, cmd_log, cmd_ls, cmd_move, cmd_recover,
    cmd_restore, cmd_save, cmd_show, cmd_status,
};
use crate::render::{print_kept, recovered_line};

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

/// The file name this program was started under.
fn invoked_name() -> Option<String> {
    std::env::args_os().next().and_then(|a| {
        Path::new(&a)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    })
}

/// The completion script for `snap-undo`, and for `snap` too when that is the name this
/// program runs as (never otherwise: snapd's `snap` keeps its own completions). zsh reads one
/// `#compdef` line per file, so there both names share one script.
fn print_completions(shell: clap_complete::Shell) {
    let invoked = invoked_name();
    let mut names = vec!["snap-undo"];
    if invoked.as_deref() == Some("snap") {
        names.push("snap");
    }
    let mut cmd = <Cli as clap::CommandFactory>::command();
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

/// What every command needs besides its own arguments.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) start: PathBuf,
    pub(crate) store: Option<PathBuf>,
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) progress: bool,
    /// `SNAP_TIMING` is set: print how long each step of a capture took (a measuring aid).
    pub(crate) timing: bool,
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
    let _pager = pager::start(pager::wanted(&cli));
    match cli.command {
        Command::Init { force } => cmd_init(&ctx, force),
        Command::Save(args) => cmd_save(&ctx, args),
        Command::Doctor => cmd_doctor(&ctx),
        #[cfg(feature = "mcp")]
        Command::Mcp => mcp::cmd_mcp(&ctx),
        Command::Hook(args) => match args.action {
            None => hook::cmd_hook(&ctx, args.agent.as_deref().unwrap_or_default()),
            Some(HookAction::Install(a)) => hook::install::cmd_install(&ctx, &a.agent, a.scope),
            Some(HookAction::Uninstall(a)) => hook::install::cmd_uninstall(&ctx, &a.agent, a.scope),
        },
        Command::Undo(args) | Command::Rewind(args) => cmd_move(&ctx, args, Way::Undo),
        Command::Redo(args) => cmd_move(&ctx, args, Way::Redo),
        Command::Export {
            reference,
            into,
            paths,
        } => cmd_export(&ctx, &reference, &into, &paths),
        Command::Restore {
            reference,
            paths,
            dry_run,
        } => cmd_restore(&ctx, &reference, &paths, dry_run),
        Command::Revert {
            reference,
            turn,
            paths,
            dry_run,
        } => commands::cmd_revert(
            &ctx,
            commands::RevertAsk {
                reference: reference.as_deref(),
                turn,
                paths: &paths,
                dry_run,
            },
        ),
        Command::Log(args) => cmd_log(&ctx, args),
        Command::Show { reference } => cmd_show(&ctx, &reference),
        Command::Ls { reference, paths } => {
            cmd_ls(&ctx, reference.as_deref().unwrap_or("@"), &paths)
        }
        Command::Cat { reference, path } => cmd_cat(&ctx, &reference, &path),
        Command::Blame { path, reference } => commands::cmd_blame(&ctx, &path, &reference),
        Command::Ui => commands::ui::cmd_ui(&ctx),
        Command::Expunge(args) => commands::expunge::cmd_expunge(
            &ctx,
            commands::expunge::ExpungeCall {
                paths: &args.paths,
                snapshots: &args.snapshots,
                secrets: args.secrets,
                tracking: match args.keep_tracking {
                    true => snap_tree::Tracking::Keep,
                    false => snap_tree::Tracking::Exclude,
                },
                run: match (args.yes, args.dry_run) {
                    (true, _) => Some(snap_tree::Run::Apply),
                    (false, true) => Some(snap_tree::Run::DryRun),
                    (false, false) => None,
                },
                remotes: match (args.no_remote, args.remote) {
                    (true, _) => commands::expunge_remote::RemoteChoice::None,
                    (false, Some(name)) => commands::expunge_remote::RemoteChoice::Named(name),
                    (false, None) => commands::expunge_remote::RemoteChoice::Every,
                },
                resume: args.resume,
                grace: &args.grace,
            },
        ),
        Command::Status { category } => cmd_status(&ctx, category),
        Command::Recover => cmd_recover(&ctx),
        Command::Diff(args) => commands::diff::run(&ctx, args),
        Command::Completions { shell } => {
            print_completions(shell);
            Ok(())
        }
        Command::Prune {
            keep_last,
            keep_within,
            dry_run,
        } => commands::lifecycle::prune(&ctx, keep_last, keep_within, dry_run),
        #[cfg(feature = "remote")]
        Command::Gc {
            remote: Some(remote),
            grace,
        } => commands::remote::gc(&ctx, Some(&remote), &grace),
        Command::Gc { .. } => commands::lifecycle::gc(&ctx),
        #[cfg(feature = "remote")]
        Command::Verify {
            read_data,
            remote: Some(remote),
        } => commands::remote::verify(&ctx, Some(&remote), read_data),
        Command::Verify { read_data, .. } => commands::lifecycle::verify(&ctx, read_data),
        #[cfg(feature = "remote")]
        Command::Remote { action, .. } => match action.unwrap_or(args::RemoteAction::List) {
            args::RemoteAction::Add {
                name,
                url,
                create,
                no_encryption,
                password_file,
            } => {
                let reach = match create {
                    true => snap_remote::Reach::Create,
                    false => snap_remote::Reach::Existing,
                };
                let encryption = match no_encryption {
                    true => commands::remote_config::Encryption::Off,
                    false => commands::remote_config::Encryption::On,
                };
                let pass = commands::remote_crypt::Passphrase {
                    file: password_file.as_deref(),
                };
                commands::remote_config::add(&ctx, &name, &url, reach, encryption, pass)
            }
            args::RemoteAction::Remove { name } => commands::remote_config::remove(&ctx, &name),
            args::RemoteAction::List => commands::remote_config::list(&ctx),
            args::RemoteAction::Key { action } => commands::remote_keys::run(&ctx, action),
            args::RemoteAction::Encrypt {
                remote,
                password_file,
            } => {
                let pass = commands::remote_crypt::Passphrase {
                    file: password_file.as_deref(),
                };
                commands::remote_keys::encrypt(&ctx, remote.as_deref(), pass)
            }
        },
        #[cfg(feature = "remote")]
        Command::Push { remote, repair } => {
            let mode = match repair {
                true => commands::remote::PushMode::Repair,
                false => commands::remote::PushMode::Missing,
            };
            commands::remote::push(&ctx, remote.as_deref(), mode)
        }
        #[cfg(feature = "remote")]
        Command::Pull { remote } => commands::remote::pull(&ctx, remote.as_deref()),
        #[cfg(feature = "remote")]
        Command::Clone {
            url,
            directory,
            workspace,
            password_file,
        } => {
            let pass = commands::remote_crypt::Passphrase {
                file: password_file.as_deref(),
            };
            commands::remote::clone(&ctx, &url, &directory, workspace.as_deref(), pass)
        }
        Command::Repair => commands::lifecycle::repair(&ctx),
        Command::Delete { all: _, yes } => commands::lifecycle::delete_all(&ctx, yes),
        Command::Watch(args) => watch::cmd_watch(&ctx, args),
        Command::Exec(args) => watch::exec::cmd_exec(&ctx, args),
    }
}

pub(crate) fn open(ctx: &Ctx) -> Result<Workspace> {
    let mut ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
    watch::attach(&mut ws);
    if let Some(observer) = progress::observer(ctx) {
        ws.set_observer(observer);
    }
    for r in ws.recovered() {
        eprintln!("snap: {}", recovered_line(r));
        print_kept(r.op.as_str(), &r.kept);
        crate::render::print_saved_first(r);
    }
    Ok(ws)
}

/// True when `e` says there is no store yet (so `save` creates one).
pub(crate) fn is_missing_store(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<snap_tree::TreeError>(),
        Some(
            snap_tree::TreeError::NoWorkspace(_)
                | snap_tree::TreeError::Store(snap_tree::StoreError::NotFound(_))
        )
    )
}

/// Opens the workspace for a command that only reads: an interrupted operation is left for
/// a writing command or `snap recover` (docs/SAFETY.md), and named on stderr.
pub(crate) fn open_reading(ctx: &Ctx) -> Result<Workspace> {
    let mut ws = Workspace::discover_reading(&ctx.start, ctx.store.as_deref())?;
    watch::attach(&mut ws);
    for m in ws.pending()? {
        eprintln!(
            "snap: an interrupted {} is pending; run `snap recover` to finish it",
            m.op.as_str()
        );
    }
    Ok(ws)
}

/// `value()` in JSON mode, else nothing: a save or undo of 100k files would otherwise build a
/// JSON value of every change (larger than the rest of the command) only to print a
/// one-line summary.
pub(crate) fn json_only(ctx: &Ctx, value: impl FnOnce() -> Value) -> Value {
    if ctx.json { value() } else { Value::Null }
}

/// As [`emit`], for a command whose human output only reports what it did: `-q` silences it
/// (errors and kept paths still go to stderr).
pub(crate) fn emit_done(ctx: &Ctx, value: Value, human: impl FnOnce()) {
    emit(ctx, value, || {
        if !ctx.quiet {
            human();
        }
    });
}

pub(crate) fn emit(ctx: &Ctx, value: Value, human: impl FnOnce()) {
    if ctx.json {
        println!("{value}");
    } else {
        human();
    }
}
