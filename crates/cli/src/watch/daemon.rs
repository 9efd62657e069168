//! The watcher's loop: one thread, polling the inotify queue and the socket. A query is
//! answered only after a cookie the watcher makes in the store directory comes back through
//! the queue, so the answer accounts for every write made before the query was sent (the
//! queue is read in order). The watcher never opens the store: its lock belongs to writers.

use super::status::StatusDoc;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};

use super::autosave::Autosave;
use super::exec::Owner;
use super::watches::{COOKIE_PREFIX, Watches, check_silence, everything};
use snap_tree::watcher::wire::{self, Request};

/// How long a query waits for its cookie before the watcher doubts itself.
const COOKIE_TIMEOUT: Duration = Duration::from_secs(2);

/// How often the watcher checks that no directory changed without an event.
const CHECK_INTERVAL: Duration = Duration::from_secs(30);

fn check_interval() -> Duration {
    // The suites check sooner; a release build has no such switch.
    #[cfg(feature = "testing")]
    if let Some(ms) = std::env::var("SNAP_WATCH_CHECK_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return Duration::from_millis(ms);
    }
    CHECK_INTERVAL
}

/// How long a client may take to send its request.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);

/// Why the loop ended.
#[derive(Debug)]
pub(crate) enum Exit {
    /// Nobody asked for the idle timeout.
    Idle,
    /// `snap watch --stop`, or a signal.
    Stopped,
    /// The workspace root or the store went away.
    Gone(String),
}

/// A running watcher.
#[derive(Debug)]
pub(crate) struct Daemon {
    pub(crate) watches: Watches,
    pub(crate) listener: UnixListener,
    pub(crate) store_dir: PathBuf,
    pub(crate) root: PathBuf,
    pub(crate) idle: Option<Duration>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) started: Instant,
    /// Saves of its own, with `--autosave`.
    pub(crate) autosave: Option<Autosave>,
    /// The `snap exec` it lives for, if one started it.
    pub(crate) owner: Option<Owner>,
    cookies: u64,
    queries: u64,
}

impl Daemon {
    pub(crate) fn new(
        watches: Watches,
        listener: UnixListener,
        store_dir: PathBuf,
        root: PathBuf,
        idle: Option<Duration>,
        stop: Arc<AtomicBool>,
    ) -> Daemon {
        Daemon {
            watches,
            listener,
            store_dir,
            root,
            idle,
            stop,
            started: Instant::now(),
            autosave: None,
            owner: None,
            cookies: 0,
            queries: 0,
        }
    }

    /// Serves until the idle timeout, a stop, or the workspace going away; an autosave
    /// still running is waited for.
    pub(crate) fn serve(&mut self) -> std::io::Result<Exit> {
        let exit = self.serve_loop();
        if let Some(autosave) = &mut self.autosave {
            autosave.finish();
        }
        exit
    }

    fn serve_loop(&mut self) -> std::io::Result<Exit> {
        self.listener.set_nonblocking(true)?;
        let mut last_asked = Instant::now();
        let mut last_check = Instant::now();
        let check_every = check_interval();
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return Ok(Exit::Stopped);
            }
            if let Some(why) = self.watches.gone.take() {
                return Ok(Exit::Gone(why));
            }
            if !self.root.is_dir() || !self.store_dir.is_dir() {
                return Ok(Exit::Gone("the workspace or its store went away".into()));
            }
            if let Some(why) = self.owner.as_ref().and_then(Owner::gone) {
                return Ok(Exit::Gone(why));
            }
            // An autosaving watcher is asked by its own saves; without changes it idles too.
            if self.idle.is_some_and(|idle| last_asked.elapsed() >= idle) {
                return Ok(Exit::Idle);
            }
            let seq = self.watches.log.seq;
            let next = match &mut self.autosave {
                Some(autosave) => autosave.tick(&self.root, &self.store_dir, seq),
                None => Duration::from_millis(500),
            };
            let (events, client) = self.wait(next.min(Duration::from_millis(500)))?;
            if events {
                self.watches.drain();
            }
            if last_check.elapsed() >= check_every {
                last_check = Instant::now();
                if self.sync().is_ok() {
                    self.watches.revalidate();
                    check_silence(&mut self.watches);
                }
            }
            if client {
                while let Ok((stream, _)) = self.listener.accept() {
                    last_asked = Instant::now();
                    if self.serve_one(stream) == Some(Request::Stop) {
                        return Ok(Exit::Stopped);
                    }
                }
            }
        }
    }

    /// Waits up to `timeout` for events or a client.
    fn wait(&self, timeout: Duration) -> std::io::Result<(bool, bool)> {
        let mut fds = [
            PollFd::new(self.watches.fd(), PollFlags::IN),
            PollFd::new(&self.listener, PollFlags::IN),
        ];
        let timeout = rustix::event::Timespec {
            tv_sec: timeout.as_secs() as i64,
            tv_nsec: i64::from(timeout.subsec_nanos()),
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        Ok((!fds[0].revents().is_empty(), !fds[1].revents().is_empty()))
    }

    /// Answers one client; returns what it asked, if it could be read.
    fn serve_one(&mut self, mut stream: UnixStream) -> Option<Request> {
        stream.set_nonblocking(false).ok()?;
        stream.set_read_timeout(Some(CLIENT_TIMEOUT)).ok()?;
        stream.set_write_timeout(Some(CLIENT_TIMEOUT)).ok()?;
        let request = Request::decode(&wire::receive(&mut stream).ok()?)?;
        let body = match &request {
            Request::Query(since) => {
                self.queries += 1;
                let changes = match self.sync() {
                    Ok(()) => {
                        self.watches.revalidate();
                        self.watches.answer(since.as_ref())
                    }
                    Err(why) => {
                        self.watches.log.new_epoch();
                        everything(None, &why)
                    }
                };
                wire::encode_changes(&changes)
            }
            Request::Status => serde_json::to_vec(&self.status()).unwrap_or_default(),
            Request::Stop => b"ok".to_vec(),
        };
        let _ = wire::send(&mut stream, &body);
        Some(request)
    }

    /// Makes a cookie in the store directory and reads the queue until it shows up.
    fn sync(&mut self) -> Result<(), String> {
        self.cookies += 1;
        let name = format!("{COOKIE_PREFIX}{}-{}", std::process::id(), self.cookies);
        let path = self.store_dir.join(&name);
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| format!("cannot make a cookie in {}: {e}", self.store_dir.display()))?;
        let deadline = Instant::now() + COOKIE_TIMEOUT;
        let seen = loop {
            if self.watches.drain().cookies.contains(&name) {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            let mut fds = [PollFd::new(self.watches.fd(), PollFlags::IN)];
            let timeout = rustix::event::Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let _ = rustix::event::poll(&mut fds, Some(&timeout));
        };
        let _ = std::fs::remove_file(&path);
        match seen {
            true => Ok(()),
            false => Err("the watcher's cookie did not come back in time".into()),
        }
    }

    fn status(&self) -> StatusDoc {
        let w = &self.watches;
        let text = |p: &Vec<u8>| String::from_utf8_lossy(p).into_owned();
        StatusDoc {
            running: true,
            pid: std::process::id(),
            root: self.root.to_string_lossy().into_owned(),
            directories_watched: w.watched(),
            unwatched: w.unwatched.iter().map(text).collect(),
            epoch: w.log.epochs,
            instance: w.log.instance.iter().map(|b| format!("{b:02x}")).collect(),
            seq: w.log.seq,
            events: w.events,
            queries: self.queries,
            doubt: w.doubt.clone(),
            memory_bytes: resident_bytes(),
            uptime_s: self.started.elapsed().as_secs(),
            idle_timeout_s: self.idle.map(|d| d.as_secs()),
            autosaves: self.autosave.as_ref().map(|a| a.saves),
            checks: w.stamps.checks,
            silent_changes: w.stamps.mismatches,
            last_silent_change: w.stamps.last_mismatch.clone(),
        }
    }
}

/// This process's resident memory, from `/proc/self/statm` (pages times the page size).
fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * rustix::param::page_size() as u64)
}
