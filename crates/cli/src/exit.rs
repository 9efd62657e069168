//! How the process ends: the exit codes, one `error:` line for every failure (and
//! `{"error": ...}` on stdout under `--json`), a command line clap refused, a word of
//! snapd's `snap` typed to this one, and panics caught so that a bug still ends in one line
//! and a hook never fails its agent.

use std::process::ExitCode;

use anyhow::Result;
use snap_tree::{StoreError, TreeError};

use crate::render::one_line;
use crate::{hints, hook, json, signals};

/// Exit code when there is nothing to undo or redo.
const EXIT_NOTHING_TO_DO: u8 = 3;

/// What a command line clap refused ends in: a hook logs it and exits 0; a verb of
/// snapd's says where snapd is; anything else is a usage error.
pub(crate) fn refused(e: &clap::Error) -> ExitCode {
    if hook::invoked() && !is_help(e) {
        hook::log::failure(None, "", "", &format!("snap hook: {}", first_line(e)));
        return ExitCode::SUCCESS;
    }
    if e.kind() == clap::error::ErrorKind::InvalidSubcommand
        && let Some(verb) = snapd_verb()
    {
        let snapd = match crate::snapd::snapd_binary() {
            Some(at) => format!("at {}", at.display()),
            None => "not installed here".to_string(),
        };
        eprintln!(
            "error: `{verb}` is a command of snapd's `snap` ({snapd}); this is \
             snap-undo, undo and redo for directories (README: the name)"
        );
        return ExitCode::from(2);
    }
    usage_error(e)
}

/// Runs a hook: never fail the agent, not even on a panic: log it, exit 0 (hook::log).
pub(crate) fn run_hook(
    agent: &str,
    run: impl FnOnce() -> Result<()> + std::panic::UnwindSafe,
) -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    if let Err(payload) = std::panic::catch_unwind(run) {
        hook::log::failure(None, agent, "", &panic_message(&payload));
    }
    ExitCode::SUCCESS
}

/// The exit code of a command snap ran (`snap exec`), which snap exits with.
static PASSED_ON: std::sync::OnceLock<u8> = std::sync::OnceLock::new();

/// Makes snap exit with `code` once the command returns.
pub(crate) fn pass_on(code: u8) {
    let _ = PASSED_ON.set(code);
}

/// Runs a command. A panic (a bug, or a library meeting damage it did not expect) still ends
/// in one `error:` line and exit 1, never a backtrace.
pub(crate) fn run_command(
    json_mode: bool,
    run: impl FnOnce() -> Result<()> + std::panic::UnwindSafe,
) -> ExitCode {
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(run) {
        // Asked to stop while finishing a command that could not stop part-way.
        Ok(Ok(())) => (signals::exit_code().or_else(|| PASSED_ON.get().copied()))
            .map_or(ExitCode::SUCCESS, ExitCode::from),
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
    // A library's own words ("entered unreachable code") say nothing to a person; they are
    // for a bug report, with SNAP_DEBUG set.
    let detail = match std::env::var_os("SNAP_DEBUG") {
        Some(_) => format!(" (the fault: {what})"),
        None => String::new(),
    };
    format!(
        "snap stopped on a fault it did not expect, most likely a damaged store: run `snap \
         verify`, then `snap repair` if it reports problems{detail}"
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
    if e.kind() == ErrorKind::MissingRequiredArgument && e.to_string().contains("<REFERENCE>") {
        eprintln!(
            "hint: an unquoted # starts a shell comment, so `snap restore #4` reaches snap as \
             `snap restore`: quote it, as in snap restore '#4'"
        );
    }
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
    "install", "remove", "refresh", "find", "info", "list", "connections", "connect",
    "disconnect", "interfaces", "services", "start", "stop", "logs", "enable", "disable",
    "download", "ack", "known", "changes", "tasks", "abort", "snap", "run", "aliases", "alias",
    "unalias", "prefer", "switch", "saved", "forget", "check-snapshot", "login", "logout",
    "whoami", "buy", "version", "model", "warnings", "okay", "set", "get", "unset", "try",
    "pack", "debug", "routine",
];

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
pub(crate) fn restore_sigpipe() {
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
    if let Some(hint) = hints::after(e) {
        message.push_str(hint);
    }
    if is_damage(e) {
        message.push_str(
            " (`snap verify` names every damaged snapshot and path; `snap repair` rebuilds \
             the catalog from what the packs still hold)",
        );
    }
    if remote_damage(e) {
        message.push_str(
            " (nothing of it was used; `snap verify --remote --read-data` lists every damaged \
             object, and `snap push --repair` from a store that holds their content sends \
             it again)",
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
        // A command `snap exec` could not start: the code a shell gives.
        _ => PASSED_ON
            .get()
            .map_or(ExitCode::FAILURE, |code| ExitCode::from(*code)),
    }
}

/// True when a remote object failed its check (damaged, cut, moved, or failing
/// authentication on an encrypted remote).
#[cfg(feature = "remote")]
fn remote_damage(e: &anyhow::Error) -> bool {
    (e.chain()).any(|c| {
        matches!(
            c.downcast_ref::<snap_remote::RemoteError>(),
            Some(snap_remote::RemoteError::Corrupt { .. })
        )
    })
}

#[cfg(not(feature = "remote"))]
fn remote_damage(_: &anyhow::Error) -> bool {
    false
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
