//! `snap exec [--agent NAME] -- CMD ARGS`: one line to make any command-line agent undoable.
//! A save before the command, a watcher autosaving while it runs (started for the run when
//! none runs, and stopped after), a save after; all in one session of their own, tagged with
//! the command's name only (its arguments may hold tokens). Signals snap receives go on to
//! the command, and snap exits with the command's exit code (128 + N when a signal N ended
//! it). The store is not held while the command runs, so its autosaves can take the lock.
//!
//! The run is one turn of its session, as an agent's prompt is: the save before is the
//! session's start (step 0), and the autosaves and the save after are its turn 1, so
//! `snap undo --turn` takes the whole run back and `snap redo --turn` brings it again. The
//! autosaves carry meta `autosave=1`, which `snap log` folds into the run's line. (A watcher
//! that was running already, not the run's own, autosaves under its own tags, if any.)
//!
//! The watcher it starts is its own: started with `--owner`, it has no idle timeout and exits
//! once this process is gone (killed, even), and it is stopped when the command ends or
//! cannot start. A watcher that is gone before then (killed) costs the run its autosaves
//! since, and a `warning:`; the save after and the command's exit code are as always. A
//! command that cannot start is one `error:` line and exit 127 (126 when it is there but
//! cannot be run), as a shell gives.

use std::path::Path;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rustix::process::Pid;
use signal_hook::consts::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
use snap_tree::{SaveOptions, Workspace};

use super::files::Files;
use super::{Duties, Place, Started, background};
use crate::ctx::Ctx;
use crate::hook::bounded::{FIELD_CAP, capped};
use snap_tree::watcher::WatchClient;
use snap_tree::watcher::wire::Request;

/// How long the watcher gets to finish an autosave and exit once asked to stop; past it,
/// it is stuck, and killed (an autosave it started goes on by itself).
const STOP_PATIENCE: Duration = Duration::from_secs(120);

/// `snap exec`.
pub(crate) fn cmd_exec(ctx: &Ctx, args: ExecArgs) -> Result<()> {
    let tags = Tags::of(&args);
    let step = save_before(ctx, &tags)?;
    let quiet = snap_tree::parse_duration(&args.quiet_for)
        .map_err(|why| anyhow::anyhow!("--quiet-for: {why}"))?
        .map_or(Duration::from_secs(2), |ns| {
            Duration::from_nanos(ns.max(0) as u64)
        });
    let place = Place::find(ctx)?;
    let watcher = start_watcher(ctx, &place, &tags, step, quiet);
    let ran = run_forwarding_signals(&args, &ctx.start);
    if let Some(child) = watcher {
        stop_own(&place, child);
    }
    let status = match ran? {
        Ran::Exited(status) => status,
        Ran::NotStarted(code, e) => {
            crate::exit::pass_on(code);
            let program = args.command[0].to_string_lossy();
            return Err(e).with_context(|| format!("cannot run {program}"));
        }
    };
    let code = exit_code(status);
    save_after(ctx, &tags, step, code)?;
    crate::exit::pass_on(code);
    Ok(())
}

/// The `snap exec` a watcher lives for: its parent, by pid. Once the parent is another (the
/// exec is gone and the watcher was handed to init), the watcher exits.
#[derive(Debug)]
pub(crate) struct Owner(Pid);

impl Owner {
    pub(crate) fn new(pid: u32) -> Option<Owner> {
        Pid::from_raw(i32::try_from(pid).ok()?).map(Owner)
    }

    /// Why the watcher should exit, once its owner is gone.
    pub(crate) fn gone(&self) -> Option<String> {
        (rustix::process::getppid() != Some(self.0))
            .then(|| format!("the snap exec that started it (pid {}) is gone", self.0))
    }
}

/// Starts this run's autosaving watcher, owned by this process; `None` when one was
/// running already (not ours to stop) or none could start (said in a warning: the run goes
/// on, saved before and after).
fn start_watcher(
    ctx: &Ctx,
    place: &Place,
    tags: &Tags,
    step: u64,
    quiet: Duration,
) -> Option<Child> {
    let duties = Duties {
        autosave: Some(quiet),
        session: Some(tags.session.clone()),
        step: Some(step),
        owner: Some(std::process::id()),
    };
    let quiet_ctx = Ctx {
        quiet: true,
        json: false,
        ..ctx.clone()
    };
    match background(&quiet_ctx, place, &duties) {
        Ok(Started::New(child)) => Some(child),
        Ok(Started::Found) => None,
        Err(e) => {
            let why = crate::render::one_line(&e);
            eprintln!("warning: no autosaves during the run: {why}");
            None
        }
    }
}

/// Stops the watcher this run started and waits for it. One already gone (killed) is said
/// in a warning, and the files it left beside its socket are removed.
fn stop_own(place: &Place, mut child: Child) {
    let asked = place
        .socket()
        .and_then(|socket| Ok(WatchClient { socket }.ask(&Request::Stop)?));
    if asked.is_err() {
        eprintln!(
            "warning: the watcher of this run was gone before the command ended (no \
             autosaves since it went)"
        );
        // Stuck rather than gone: it is ours to end.
        if let Ok(None) = child.try_wait() {
            let _ = rustix::process::kill_process(
                Pid::from_child(&child),
                rustix::process::Signal::TERM,
            );
        }
    }
    wait_or_kill(&mut child);
    if asked.is_err()
        && let Ok(socket) = place.socket()
    {
        Files::of(&socket).remove_unless_held();
    }
}

/// Waits for the watcher to exit, [`STOP_PATIENCE`] at most, then kills it.
fn wait_or_kill(child: &mut Child) {
    let asked = Instant::now();
    while asked.elapsed() < STOP_PATIENCE {
        match child.try_wait() {
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Ok(Some(_)) | Err(_) => return,
        }
    }
    eprintln!("warning: the watcher of this run did not stop in time: killed");
    let _ = child.kill();
    let _ = child.wait();
}

/// What the snapshots of one run are tagged with.
#[derive(Debug)]
struct Tags {
    session: String,
    agent: String,
    tool: String,
}

impl Tags {
    /// The command's name (never its arguments), capped as a hook's fields are.
    fn of(args: &ExecArgs) -> Tags {
        let program = &args.command[0];
        let name = Path::new(program)
            .file_name()
            .map_or_else(|| program.to_string_lossy(), |n| n.to_string_lossy())
            .into_owned();
        let name = capped(name, FIELD_CAP);
        Tags {
            session: format!("exec-{name}-{}", run_id()),
            agent: capped(
                args.agent.clone().unwrap_or_else(|| name.clone()),
                FIELD_CAP,
            ),
            tool: name,
        }
    }
}

/// The save before the command, as the session's start (step 0), then the run's turn
/// begun: returns its step, which the autosaves and the save after carry. The workspace is
/// closed again before the command runs, so its autosaves can take the lock.
fn save_before(ctx: &Ctx, tags: &Tags) -> Result<u64> {
    let ws = open_or_init(ctx)?;
    let before = Saved {
        step: Some(ws.turn(&tags.session)?),
        exit: None,
    };
    save(ctx, &ws, tags, &format!("before {}", tags.tool), before)?;
    Ok(ws.start_turn(&tags.session)?)
}

/// The save after the command, in the run's turn, with its exit code.
fn save_after(ctx: &Ctx, tags: &Tags, step: u64, code: u8) -> Result<()> {
    let ws = open_or_init(ctx)?;
    let after = Saved {
        step: Some(step),
        exit: Some(code),
    };
    save(ctx, &ws, tags, &format!("after {}", tags.tool), after)
}

/// The workspace, made if there is none yet.
fn open_or_init(ctx: &Ctx) -> Result<Workspace> {
    Ok(match crate::open::open(ctx) {
        Err(e) if crate::open::is_missing_store(&e) => {
            Workspace::init(&ctx.start, ctx.store.as_deref(), false)?
        }
        other => other?,
    })
}

/// What one save of the run records besides its tags.
#[derive(Clone, Copy, Debug)]
struct Saved {
    /// The session's turn.
    step: Option<u64>,
    /// The command's exit code (the save after).
    exit: Option<u8>,
}

/// One save of the run.
fn save(ctx: &Ctx, ws: &Workspace, tags: &Tags, message: &str, saved: Saved) -> Result<()> {
    let mut meta = vec![
        ("tool".to_string(), tags.tool.clone()),
        ("agent".to_string(), tags.agent.clone()),
        ("source".to_string(), "exec".to_string()),
    ];
    if let Some(code) = saved.exit {
        meta.push(("exit".to_string(), code.to_string()));
    }
    let out = ws.save(&SaveOptions {
        message: message.to_string(),
        step: saved.step,
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

/// How the command went.
#[derive(Debug)]
enum Ran {
    Exited(ExitStatus),
    /// It could not start: the exit code a shell would give (127 not found, else 126).
    NotStarted(u8, std::io::Error),
}

/// Runs the command in `dir` (where snap was started, or `-C`'s directory), handing it
/// every SIGINT, SIGTERM, SIGHUP and SIGQUIT snap gets.
fn run_forwarding_signals(args: &ExecArgs, dir: &Path) -> Result<Ran> {
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP, SIGQUIT])
        .context("cannot watch for signals")?;
    let handle = signals.handle();
    let spawned = std::process::Command::new(&args.command[0])
        .args(&args.command[1..])
        .current_dir(dir)
        .spawn();
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            handle.close();
            let code = match e.kind() {
                std::io::ErrorKind::NotFound => 127,
                _ => 126,
            };
            return Ok(Ran::NotStarted(code, e));
        }
    };
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
    status.map(Ran::Exited)
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

/// `snap exec`: a command run between two saves, with autosaves while it runs.
#[derive(Debug, clap::Args)]
pub struct ExecArgs {
    /// The agent's name for the snapshots (`agent` meta); the command's name otherwise.
    #[arg(long)]
    pub agent: Option<String>,
    /// How long the tree must be quiet before an autosave during the run.
    #[arg(long, value_name = "QUIET", default_value = "2s")]
    pub quiet_for: String,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}
