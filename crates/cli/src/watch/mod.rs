//! `snap watch`: the resident watcher, and the client every save, status and diff uses when
//! one runs (ARCHITECTURE.md, "The watcher"). The watcher keeps inotify watches on the
//! directories a save walks and answers, over a unix socket, which of them changed since a
//! token; the capture it serves lives in snap-tree (`ChangeSource`). It never opens the store.
//!
//! `watches.rs` owns the watches and the change log (`linked.rs` the files with more than
//! one name, `mounts.rs` the mounts, which no event tells of), `daemon.rs` the loop and its cookie
//! round trip, `check.rs` its check on its own silence, `autosave.rs` the saves it makes by itself, `wire.rs` the socket's place and
//! frames, `files.rs` its files beside the socket (lock, log; removed on exit, swept when
//! stale), `client.rs` the asking side, `exec.rs` `snap exec` and the watcher it owns.

mod autosave;
mod check;
mod daemon;
pub(crate) mod exec;
mod files;
mod linked;
mod mounts;
mod paths;
pub(crate) mod status;
mod watches;

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use snap_tree::{Config, ReadOnlyWorkspace, STORE_DIR};

use crate::ctx::Ctx;
use crate::json;
use autosave::{Autosave, Tag};
use daemon::{Daemon, Exit};
use snap_tree::watcher::WatchClient;
use snap_tree::watcher::wire::{self, Request};
use status::{NoneDoc, StatusDoc, StoppedDoc};
use watches::Watches;

/// How long `--background` waits for the watcher's first scan.
const START_TIMEOUT: Duration = Duration::from_secs(300);

/// A workspace as the watcher knows it: without opening its store.
#[derive(Debug)]
struct Place {
    root: PathBuf,
    store_dir: PathBuf,
}

impl Place {
    /// The workspace at or above the command's directory, or the one `--store` names.
    fn find(ctx: &Ctx) -> Result<Place> {
        let start = ctx
            .start
            .canonicalize()
            .with_context(|| format!("cannot open {}", ctx.start.display()))?;
        let (root, store_dir) = match &ctx.store {
            Some(store) => (
                snap_tree::find_root(&start).unwrap_or(start),
                store
                    .canonicalize()
                    .with_context(|| format!("no store at {}", store.display()))?,
            ),
            None => {
                let root = snap_tree::find_root(&start).with_context(|| {
                    format!(
                        "no snap workspace at or above {} (run `snap init`)",
                        start.display()
                    )
                })?;
                let store_dir = root.join(STORE_DIR);
                (root, store_dir)
            }
        };
        Ok(Place { root, store_dir })
    }

    fn socket(&self) -> Result<PathBuf> {
        Ok(wire::socket_path(&wire::socket_dir()?, &self.root))
    }
}

/// What a watcher does besides answering saves.
#[derive(Clone, Debug, Default)]
pub(crate) struct Duties {
    /// Save after this long quiet (`--autosave`).
    pub(crate) autosave: Option<Duration>,
    /// The session autosaves are tagged with.
    pub(crate) session: Option<String>,
    /// The session's turn autosaves are tagged with (`snap exec`'s run).
    pub(crate) step: Option<u64>,
    /// The `snap exec` that started it (its parent's pid): while that runs, no idle timeout;
    /// once it is gone, the watcher exits.
    pub(crate) owner: Option<u32>,
}

impl Duties {
    fn from_args(args: &WatchArgs) -> Result<Duties> {
        let autosave = match &args.autosave {
            Some(quiet) => {
                let ns = snap_tree::parse_duration(quiet)
                    .map_err(|why| anyhow::anyhow!("--autosave: {why}"))?;
                Some(Duration::from_nanos(ns.unwrap_or(0).max(0) as u64))
            }
            None => None,
        };
        Ok(Duties {
            autosave,
            session: args.session.clone(),
            step: args.step,
            owner: args.owner,
        })
    }

    /// The arguments that give a watcher started in the background these duties.
    fn as_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(quiet) = self.autosave {
            out.push(format!("--autosave={}s", quiet.as_secs().max(1)));
        }
        if let Some(session) = &self.session {
            out.extend(["--session".to_string(), session.clone()]);
        }
        if let Some(step) = self.step {
            out.push(format!("--step={step}"));
        }
        if let Some(owner) = self.owner {
            out.push(format!("--owner={owner}"));
        }
        out
    }
}

/// `snap watch [--background | --stop | --status] [--autosave[=QUIET]]`.
pub(crate) fn cmd_watch(ctx: &Ctx, args: WatchArgs) -> Result<()> {
    let place = Place::find(ctx)?;
    if args.status {
        return status(ctx, &place);
    }
    if args.stop {
        return stop(ctx, &place);
    }
    let duties = Duties::from_args(&args)?;
    if args.background {
        // This process exits at once: the watcher, its child, is reparented.
        return background(ctx, &place, &duties).map(drop);
    }
    foreground(ctx, &place, &duties)
}

/// The status of the workspace's watcher, when one answers.
pub(crate) fn status_of(root: &Path) -> Option<StatusDoc> {
    let socket = wire::socket_path(&wire::existing_socket_dir()?, root);
    ask_status(&WatchClient { socket })
}

/// Starts a watcher in the background for a save under `[watch] auto`, when none runs.
pub(crate) fn autostart(ws: &ReadOnlyWorkspace, store: Option<&Path>) {
    if !ws.config().watch.auto {
        return;
    }
    let Ok(dir) = wire::socket_dir() else {
        return;
    };
    if !wire::socket_path(&dir, ws.root()).exists() {
        let _ = spawn(ws.root(), store, &dir, &Duties::default());
    }
}

fn foreground(ctx: &Ctx, place: &Place, duties: &Duties) -> Result<()> {
    let config = Config::load(&place.store_dir)?;
    let socket = place.socket()?;
    let _lock = files::take_lock(&socket, &place.root)?;
    // We hold the lock: a socket left there is a dead watcher's.
    let _ = std::fs::remove_file(&socket);
    if let Some(dir) = socket.parent() {
        files::sweep(dir, &socket);
    }
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(signal, Arc::clone(&stop))
            .context("cannot watch for signals")?;
    }
    let watches = Watches::start(&place.root, &place.store_dir, config.clone())
        .with_context(|| format!("cannot watch {}", place.root.display()))?;
    let listener = UnixListener::bind(&socket)
        .with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(&socket, std::fs::Permissions::from_mode(0o600))
        .with_context(|| format!("cannot restrict {}", socket.display()))?;
    if !ctx.quiet {
        eprintln!(
            "snap: watching {} ({} directories)",
            place.root.display(),
            watches.watched()
        );
    }
    let idle = match duties.owner {
        Some(_) => None,
        None => idle_timeout(&config)?,
    };
    let mut daemon = Daemon::new(
        watches,
        listener,
        place.store_dir.clone(),
        place.root.clone(),
        idle,
        stop,
    );
    let tag = Tag {
        session: duties.session.clone(),
        step: duties.step,
    };
    daemon.autosave = (duties.autosave).map(|quiet| Autosave::new(quiet, tag, ctx.store.clone()));
    daemon.owner = duties.owner.and_then(exec::Owner::new);
    let exit = daemon.serve();
    let _ = std::fs::remove_file(&socket);
    let exit = exit.context("the watcher failed")?;
    // A clean exit leaves nothing beside the socket (the lock is still ours).
    files::Files::of(&socket).remove();
    let why = match exit {
        Exit::Idle => "idle timeout".to_string(),
        Exit::Stopped => "stopped".to_string(),
        Exit::Gone(why) => why,
    };
    if !ctx.quiet {
        eprintln!("snap: watcher exits: {why}");
    }
    Ok(())
}

fn idle_timeout(config: &Config) -> Result<Option<Duration>> {
    let ns = config
        .watch
        .idle_timeout_ns()
        .map_err(|why| anyhow::anyhow!("[watch] idle_timeout: {why}"))?;
    Ok(ns.map(|ns| Duration::from_nanos(ns.max(0) as u64)))
}

/// Starts `snap-undo watch` for `root` as a process of its own group (a terminal's Ctrl-C
/// does not reach it), its stderr appended to a log beside the socket.
fn spawn(
    root: &Path,
    store: Option<&Path>,
    dir: &Path,
    duties: &Duties,
) -> Result<std::process::Child> {
    let log_path = wire::socket_path(dir, root).with_extension("log");
    let log = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .mode(0o600)
        .open(&log_path)
        .with_context(|| format!("cannot open {}", log_path.display()))?;
    files::settle(&log);
    let exe = std::env::current_exe().context("cannot find this program's path")?;
    let mut cmd = std::process::Command::new(exe);
    cmd.arg("--dir").arg(root);
    if let Some(store) = store {
        cmd.arg("--store").arg(store);
    }
    cmd.arg("watch")
        .args(duties.as_args())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .process_group(0);
    cmd.spawn().context("cannot start the watcher")
}

/// Starts a watcher in the background, or finds the one running; returns whether it started
/// one.
fn background(ctx: &Ctx, place: &Place, duties: &Duties) -> Result<Started> {
    let socket = place.socket()?;
    let client = WatchClient { socket };
    if let Some(status) = ask_status(&client) {
        report_started(ctx, &status, "a watcher already runs")?;
        return Ok(Started::Found);
    }
    let dir = wire::socket_dir()?;
    let mut child = spawn(&place.root, ctx.store.as_deref(), &dir, duties)?;
    let started = Instant::now();
    while started.elapsed() < START_TIMEOUT {
        // It listens only once its first scan and watches are done.
        if let Some(status) = ask_status(&client) {
            report_started(ctx, &status, "watching")?;
            return Ok(Started::New(child));
        }
        if let Some(code) = child.try_wait()? {
            let log =
                std::fs::read_to_string(wire::socket_path(&dir, &place.root).with_extension("log"))
                    .unwrap_or_default();
            let last = log
                .lines()
                .rev()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("");
            bail!(
                "the watcher exited at once ({code}): {}",
                last.trim_start_matches("error: ")
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    bail!(
        "the watcher did not finish its first scan in {} s",
        START_TIMEOUT.as_secs()
    )
}

/// Whether [`background`] started a watcher.
#[derive(Debug)]
enum Started {
    /// This process started it: its child, to wait for once stopped.
    New(std::process::Child),
    Found,
}

fn ask_status(client: &WatchClient) -> Option<StatusDoc> {
    let frame = client.ask(&Request::Status).ok()?;
    serde_json::from_slice(&frame).ok()
}

fn report_started(ctx: &Ctx, status: &StatusDoc, what: &str) -> Result<()> {
    crate::ctx::emit_done(ctx, json::value(status), || {
        println!(
            "{what} {} (pid {}, {} directories)",
            status.root, status.pid, status.directories_watched
        );
    });
    Ok(())
}

fn stop(ctx: &Ctx, place: &Place) -> Result<()> {
    let socket = place.socket()?;
    let client = WatchClient {
        socket: socket.clone(),
    };
    let Some(status) = ask_status(&client) else {
        let doc = StoppedDoc {
            running: false,
            stopped: false,
            pid: None,
        };
        crate::ctx::emit_done(ctx, json::value(&doc), || {
            println!("no watcher runs for {}", place.root.display());
        });
        return Ok(());
    };
    client
        .ask(&Request::Stop)
        .context("cannot reach the watcher to stop it")?;
    // Gone once its process is: until then it holds the lock a new watcher needs. (A
    // watcher's child is not ours to wait for, so its pid is polled.)
    let pid = i32::try_from(status.pid).ok();
    let pid = pid.and_then(rustix::process::Pid::from_raw);
    let alive = |pid: Option<rustix::process::Pid>| {
        pid.is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
    };
    let asked = Instant::now();
    while (socket.exists() || alive(pid)) && asked.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    let doc = StoppedDoc {
        running: false,
        stopped: true,
        pid: Some(status.pid),
    };
    crate::ctx::emit_done(ctx, json::value(&doc), || {
        println!(
            "stopped the watcher of {} (pid {})",
            place.root.display(),
            status.pid
        );
    });
    Ok(())
}

fn status(ctx: &Ctx, place: &Place) -> Result<()> {
    let client = WatchClient {
        socket: place.socket()?,
    };
    let Some(status) = ask_status(&client) else {
        let root = place.root.to_string_lossy().into_owned();
        crate::ctx::emit(
            ctx,
            json::value(&NoneDoc {
                running: false,
                root: root.clone(),
            }),
            || {
                println!("no watcher runs for {root}");
            },
        );
        return Ok(());
    };
    crate::ctx::emit(ctx, json::value(&status), || print_status(&status));
    Ok(())
}

fn print_status(s: &StatusDoc) {
    println!("watching {} (pid {})", s.root, s.pid);
    println!("  directories watched: {}", s.directories_watched);
    println!(
        "  epoch {}, {} events, {} queries",
        s.epoch, s.events, s.queries
    );
    if let Some(bytes) = s.memory_bytes {
        println!("  memory: {:.1} MiB", bytes as f64 / f64::from(1 << 20));
    }
    if !s.unwatched.is_empty() {
        println!(
            "  unwatched (read again at every save): {}",
            s.unwatched.len()
        );
    }
    if let Some(doubt) = &s.doubt {
        println!("  every save walks the whole tree: {doubt}");
    }
}

/// `snap watch`: in the foreground (for a service manager) unless a flag says otherwise.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
    /// Start the watcher in the background; returns once its first scan is done.
    #[arg(long, conflicts_with_all = ["stop", "status"])]
    pub background: bool,
    /// Stop the running watcher.
    #[arg(long, conflicts_with = "status")]
    pub stop: bool,
    /// How the running watcher is doing (with --json: its pid, directories, epoch, memory).
    #[arg(long)]
    pub status: bool,
    /// Save by itself once the tree has been quiet this long (default 2s), with meta
    /// `source=watch`: writers without hooks get snapshots too.
    #[arg(long, value_name = "QUIET", num_args = 0..=1, default_missing_value = "2s",
          conflicts_with_all = ["stop", "status"])]
    pub autosave: Option<String>,
    /// The session its autosaves are tagged with (`snap exec` passes its own).
    #[arg(long, hide = true, requires = "autosave")]
    pub session: Option<String>,
    /// The session's turn its autosaves are tagged with (`snap exec` passes its run's).
    #[arg(long, hide = true, requires = "session")]
    pub step: Option<u64>,
    /// The pid of the `snap exec` that started it, as its parent: no idle timeout, and it
    /// exits once that process is gone.
    #[arg(long, hide = true, conflicts_with_all = ["stop", "status"])]
    pub owner: Option<u32>,
}
