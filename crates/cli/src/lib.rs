//! The `snap` program (installed as `snap` and as `snap-undo`): parses arguments, opens the
//! workspace, runs one command, and prints its outcome for people or as one JSON document.
//! Exit codes: 0 ok (also "nothing changed"), 1 error, 2 usage, 3 nothing to undo or redo,
//! 128 + N stopped by signal N (`signals`).

mod args;
mod commands;
mod hook;
mod json;
#[cfg(feature = "mcp")]
mod mcp;
mod progress;
mod render;
mod signals;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use serde_json::{Value, json};
use snap_tree::snap_store::StoreError;
use snap_tree::{TreeError, Workspace};

use crate::args::{Cli, Command, HookAction, HookArgs};
use crate::commands::{
    cmd_cat, cmd_doctor, cmd_export, cmd_init, cmd_log, cmd_ls, cmd_move, cmd_recover, cmd_restore,
    cmd_save, cmd_show, cmd_status,
};
use crate::render::{print_kept, recovered_line};

/// Exit code when there is nothing to undo or redo.
const EXIT_NOTHING_TO_DO: u8 = 3;

/// Runs one command from the process's arguments; the whole of both binaries.
pub fn main() -> ExitCode {
    restore_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if hook::invoked() && !is_help(&e) => {
            hook::log::failure(None, "", "", &format!("snap hook: {}", first_line(&e)));
            return ExitCode::SUCCESS;
        }
        Err(e) if e.kind() == clap::error::ErrorKind::InvalidSubcommand => {
            if let Some(verb) = snapd_verb() {
                let snapd = match commands::doctor::snapd_binary() {
                    Some(at) => format!("at {}", at.display()),
                    None => "not installed here".to_string(),
                };
                eprintln!(
                    "error: `{verb}` is a command of snapd's `snap` ({snapd}); this is \
                     snap-undo, undo and redo for directories (README: the name)"
                );
                return ExitCode::from(2);
            }
            return usage_error(&e);
        }
        Err(e) => return usage_error(&e),
    };
    if let Command::Hook(HookArgs {
        agent,
        action: None,
        ..
    }) = &cli.command
    {
        // Never fail the agent, not even on a panic: log it, exit 0 (hook::log).
        let agent = agent.clone().unwrap_or_default();
        std::panic::set_hook(Box::new(|_| {}));
        if let Err(payload) = std::panic::catch_unwind(|| run(cli)) {
            hook::log::failure(None, &agent, "", &panic_message(&payload));
        }
        return ExitCode::SUCCESS;
    }
    let json_mode = cli.json;
    // A panic (a bug, or a library meeting damage it did not expect) still ends in one
    // `error:` line and exit 1, never a backtrace: the hook stays silent, the payload is said.
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(|| run(cli)) {
        // Asked to stop while finishing a command that could not stop part-way.
        Ok(Ok(())) => signals::exit_code().map_or(ExitCode::SUCCESS, ExitCode::from),
        Ok(Err(e)) => report_error(&e, json_mode),
        Err(payload) => report_error(&anyhow::anyhow!(panic_message(&payload)), json_mode),
    }
}

/// What a caught panic says, with where to go from there.
fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!(
        "internal error: {what} (the store may be damaged: run `snap verify`, then `snap repair` if it reports problems)"
    )
}

/// A command line clap refused: its own output for `--help` and `--version`, else exit 2,
/// with `{"error": ...}` on stdout too when `--json` was asked for (docs/JSON.md).
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand && !wants_json()
    {
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    let _ = e.print();
    if wants_json() {
        let message = first_line(e);
        println!("{}", json::value(&json::ErrorDoc { error: &message }));
    }
    ExitCode::from(2)
}

/// `--help` or `--version`, which clap reports as errors.
fn is_help(e: &clap::Error) -> bool {
    use clap::error::ErrorKind;
    matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
}

/// The first line of clap's message, without its `error: `.
fn first_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let first = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("usage error");
    first.trim().trim_start_matches("error: ").to_string()
}

/// Commands of snapd's `snap` that snap-undo does not have: a person who meant snapd (which
/// also has `save` and `restore`) gets told where it is.
#[rustfmt::skip]
const SNAPD_VERBS: &[&str] = &[
    "install", "remove", "refresh", "revert", "find", "info", "list", "connections", "connect",
    "disconnect", "interfaces", "services", "start", "stop", "logs", "enable", "disable",
    "download", "ack", "known", "changes", "tasks", "abort", "snap", "run", "aliases", "alias",
    "unalias", "prefer", "switch", "saved", "forget", "check-snapshot", "login", "logout",
    "whoami", "buy", "version", "model", "warnings", "okay", "set", "get", "unset", "try",
    "pack", "debug", "routine",
];

/// The completion script for `snap-undo`, and for `snap` too when that is the name this
/// program runs as (never otherwise: snapd's `snap` keeps its own completions). zsh reads one
/// `#compdef` line per file, so there both names share one script.
fn print_completions(shell: clap_complete::Shell) {
    let invoked = std::env::args_os().next().and_then(|a| {
        Path::new(&a)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    });
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

/// The first argument, when it is one of [`SNAPD_VERBS`].
fn snapd_verb() -> Option<String> {
    let first = std::env::args().nth(1)?;
    SNAPD_VERBS.contains(&first.as_str()).then_some(first)
}

/// True when `--json` is among the arguments (read by hand: clap refused the line).
fn wants_json() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// Lets `snap log | head` end quietly, as Unix tools do, instead of panicking on EPIPE.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A failure whose command has already printed its JSON document (`verify` finding
/// damage prints its report): the error line goes to stderr only, so that stdout still
/// holds exactly one document.
#[derive(Debug)]
pub(crate) struct Reported(pub(crate) String);

impl std::fmt::Display for Reported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Reported {}

fn report_error(e: &anyhow::Error, json_mode: bool) -> ExitCode {
    let mut message = one_line(e);
    if is_damage(e) {
        message.push_str(
            " (`snap verify` names every damaged snapshot and path; `snap repair` rebuilds \
             the catalog from what the packs still hold)",
        );
    }
    eprintln!("error: {message}");
    if json_mode && e.downcast_ref::<Reported>().is_none() {
        println!("{}", json::value(&json::ErrorDoc { error: &message }));
    }
    if stopped_waiting(e) {
        return ExitCode::from(signals::exit_code().unwrap_or(143));
    }
    match e.downcast_ref::<TreeError>() {
        Some(t) if t.is_nothing_to_do() => ExitCode::from(EXIT_NOTHING_TO_DO),
        Some(TreeError::Interrupted) => ExitCode::from(signals::exit_code().unwrap_or(143)),
        _ => ExitCode::FAILURE,
    }
}

/// True when a signal ended the wait for the store lock.
fn stopped_waiting(e: &anyhow::Error) -> bool {
    store_errors(e).any(|s| matches!(s, StoreError::LockWaitStopped { .. }))
}

/// What an unreadable catalog in the error's chain says, if that is what failed.
pub(crate) fn catalog_damage(e: &anyhow::Error) -> Option<String> {
    store_errors(e)
        .find(|s| matches!(s, StoreError::CatalogUnreadable { .. }))
        .map(StoreError::to_string)
}

/// True when the error comes from damage in the store (a rotted pack, a missing object).
fn is_damage(e: &anyhow::Error) -> bool {
    store_errors(e).any(StoreError::is_damage)
}

/// Every store error in the chain, whether raised bare or wrapped in a `TreeError`.
fn store_errors(e: &anyhow::Error) -> impl Iterator<Item = &StoreError> {
    e.chain().filter_map(|cause| {
        let tree = match cause.downcast_ref::<TreeError>() {
            Some(TreeError::Store(s)) => Some(s),
            _ => None,
        };
        cause.downcast_ref::<StoreError>().or(tree)
    })
}

/// The error and its causes on one line. Library errors already name their source in their
/// own message (`path: os error`), so a cause already said is not said twice.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !message.contains(&text) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text);
        }
    }
    message.replace('\n', " ")
}

/// What every command needs besides its own arguments.
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
        snap_tree::snap_store::on_lock_wait(|m| eprintln!("snap: {m}"));
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
        Command::Undo(args) | Command::Rewind(args) => cmd_move(&ctx, args, false),
        Command::Redo(args) => cmd_move(&ctx, args, true),
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
        Command::Log(args) => cmd_log(&ctx, args),
        Command::Show { reference } => cmd_show(&ctx, &reference),
        Command::Ls { reference, paths } => {
            cmd_ls(&ctx, reference.as_deref().unwrap_or("@"), &paths)
        }
        Command::Cat { reference, path } => cmd_cat(&ctx, &reference, &path),
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
        Command::Gc => commands::lifecycle::gc(&ctx),
        Command::Verify { read_data } => commands::lifecycle::verify(&ctx, read_data),
        Command::Repair => commands::lifecycle::repair(&ctx),
        Command::Delete { all: _, yes } => commands::lifecycle::delete_all(&ctx, yes),
    }
}

pub(crate) fn open(ctx: &Ctx) -> Result<Workspace> {
    let mut ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
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

/// Opens the workspace for a command that only reads: an interrupted operation is left for
/// a writing command or `snap recover` (docs/SAFETY.md), and named on stderr.
pub(crate) fn open_reading(ctx: &Ctx) -> Result<Workspace> {
    let ws = Workspace::discover_reading(&ctx.start, ctx.store.as_deref())?;
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
