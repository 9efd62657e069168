//! `snap exec [--agent NAME] -- CMD ARGS`: one line to make any command-line agent undoable.
//! A save before the command, a watcher autosaving while it runs (started for the run when
//! none runs, and stopped after), a save after; all in one session of their own, tagged with
//! the command's name only (its arguments may hold tokens). Signals snap receives go on to
//! the command, and snap exits with the command's exit code (128 + N when a signal N ended
//! it). The store is not held while the command runs, so its autosaves can take the lock.

use std::path::Path;
use std::process::ExitStatus;
use std::time::Duration;

use anyhow::{Context, Result};
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use snap_tree::{SaveOptions, Workspace};

use super::{Duties, Place, Started, background, stop_child};
use crate::Ctx;
use crate::args::ExecArgs;

/// `snap exec`.
pub(crate) fn cmd_exec(ctx: &Ctx, args: ExecArgs) -> Result<()> {
    let program = &args.command[0];
    let name = Path::new(program)
        .file_name()
        .map_or_else(|| program.to_string_lossy(), |n| n.to_string_lossy())
        .into_owned();
    let tags = Tags {
        session: format!("exec-{name}-{}", run_id()),
        agent: args.agent.clone().unwrap_or_else(|| name.clone()),
        tool: name,
    };
    save(ctx, &tags, &format!("before {}", tags.tool), None)?;
    let quiet = snap_tree::parse_duration(&args.quiet_for)
        .map_err(|why| anyhow::anyhow!("--quiet-for: {why}"))?
        .map_or(Duration::from_secs(2), |ns| {
            Duration::from_nanos(ns.max(0) as u64)
        });
    let place = Place::find(ctx)?;
    let duties = Duties {
        autosave: Some(quiet),
        session: Some(tags.session.clone()),
    };
    let quiet_ctx = Ctx {
        quiet: true,
        json: false,
        ..ctx.clone()
    };
    let started = background(&quiet_ctx, &place, &duties)?;
    let status = run_forwarding_signals(&args, &ctx.start)?;
    if let Started::New(child) = started {
        stop_child(&place, child)?;
    }
    let code = exit_code(status);
    save(ctx, &tags, &format!("after {}", tags.tool), Some(code))?;
    crate::exit::pass_on(code);
    Ok(())
}

/// What the snapshots of one run are tagged with.
#[derive(Debug)]
struct Tags {
    session: String,
    agent: String,
    tool: String,
}

/// One save of the run, the workspace made if there is none yet.
fn save(ctx: &Ctx, tags: &Tags, message: &str, exit: Option<u8>) -> Result<()> {
    let ws = match crate::open(ctx) {
        Err(e) if crate::commands::is_missing_store(&e) => {
            Workspace::init(&ctx.start, ctx.store.as_deref(), false)?
        }
        other => other?,
    };
    let mut meta = vec![
        ("tool".to_string(), tags.tool.clone()),
        ("agent".to_string(), tags.agent.clone()),
        ("source".to_string(), "exec".to_string()),
    ];
    if let Some(code) = exit {
        meta.push(("exit".to_string(), code.to_string()));
    }
    let out = ws.save(&SaveOptions {
        message: message.to_string(),
        session: Some(tags.session.clone()),
        meta,
        ..SaveOptions::default()
    })?;
    crate::render::print_untracked_removed(&out.untracked_removed);
    if let (Some(s), false) = (&out.snapshot, ctx.quiet) {
        eprintln!(
            "snap: saved #{} {} ({message})",
            s.record.seq,
            &s.id.to_hex()[..12]
        );
    }
    Ok(())
}

/// Runs the command in `dir` (where snap was started, or `-C`'s directory), handing it
/// every SIGINT, SIGTERM, SIGHUP and SIGQUIT snap gets.
fn run_forwarding_signals(args: &ExecArgs, dir: &Path) -> Result<ExitStatus> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])
        .context("cannot watch for signals")?;
    let handle = signals.handle();
    let mut child = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .current_dir(dir)
        .spawn()
        .with_context(|| format!("cannot run {}", args.command[0].to_string_lossy()))?;
    let pid = rustix::process::Pid::from_child(&child);
    let forward = std::thread::spawn(move || {
        for signal in signals.forever() {
            if let Some(signal) = rustix::process::Signal::from_named_raw(signal) {
                let _ = rustix::process::kill_process(pid, signal);
            }
        }
    });
    let status = child.wait().context("cannot wait for the command");
    handle.close();
    let _ = forward.join();
    status
}

/// The code a shell would give: the command's, or 128 + the signal that ended it.
fn exit_code(status: ExitStatus) -> u8 {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + signal).unwrap_or(u8::MAX),
        (None, None) => 1,
    }
}

/// Eight hex digits that tell this run's session from others of the same command.
fn run_id() -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = [
        now.to_le_bytes(),
        u128::from(std::process::id()).to_le_bytes(),
    ]
    .concat();
    blake3::hash(&seed).to_hex()[..8].to_string()
}
