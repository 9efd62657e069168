//! The inotify watches of one workspace, and the log of what their events say changed.
//!
//! Watches follow the walk: every directory a save would enter is watched (its plan comes
//! from `snap_tree::watch_plan`), so ignored and excluded trees cost no watch. A directory
//! made or moved in is watched, then named whole (its contents may predate its watch); one
//! removed or moved out loses its watches. An event in a watched directory marks it; an
//! ignore file's event marks its directory whole and watches what the new rules let in.
//! Whatever breaks the account (an overflowed queue, a watch the kernel refuses, the budget
//! passed) starts a new epoch, or puts the watcher in doubt, where it answers *everything*.
//!
//! What no event tells of is named instead (docs/SAFETY.md, "What the watcher cannot see"):
//! the directories of files with more than one name (`linked.rs`) and the mount points below
//! the root (`mounts.rs`) are in every answer, and before each answer the config and the
//! mount table are read again: any change in either is a new epoch.

use std::collections::{BTreeSet, HashMap};
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
use rustix::io::Errno;
use snap_tree::{Changes, Config, DirtyDir, Scope, WatchToken, flat};

use super::check::{Stamp, Stamps};
use super::linked::{self, Linked};
use super::mounts::{self, Mounts};
use super::paths::snap_abs;

/// What a workspace watch listens for. Watches are added through `/proc/self/fd/N` of a
/// directory opened with `O_NOFOLLOW`, so the link is followed on purpose (no `DONT_FOLLOW`).
const DIR_EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR)
    .union(WatchFlags::EXCL_UNLINK);

/// The store directory's watch: cookies, the config changing in any way (written, made,
/// removed, renamed away or over, its mode), and the store going away.
const STORE_EVENTS: WatchFlags = WatchFlags::CREATE
    .union(WatchFlags::CLOSE_WRITE)
    .union(WatchFlags::MODIFY)
    .union(WatchFlags::ATTRIB)
    .union(WatchFlags::DELETE)
    .union(WatchFlags::MOVED_FROM)
    .union(WatchFlags::MOVED_TO)
    .union(WatchFlags::DELETE_SELF)
    .union(WatchFlags::MOVE_SELF)
    .union(WatchFlags::ONLYDIR);

/// What the watcher's doubt says while the config cannot be read.
const CONFIG_DOUBT: &str = "cannot read the config";

/// Cookie files in the store directory start with this.
pub(crate) const COOKIE_PREFIX: &str = "watch-cookie-";

/// Of `max_user_watches`, the share a watcher may take before it stops trusting itself.
const BUDGET_PERCENT: usize = 80;

/// The two marks a directory can carry: the sequence numbers of its last change, and of its
/// last change that calls for its whole subtree.
#[derive(Clone, Copy, Debug, Default)]
struct Marks {
    dir: u64,
    subtree: u64,
}

/// What changed, by sequence number, in the current epoch.
#[derive(Debug)]
pub(crate) struct Log {
    /// This epoch's instance id: tokens of other epochs get *everything*.
    pub(crate) instance: [u8; 16],
    pub(crate) seq: u64,
    marks: HashMap<Vec<u8>, Marks>,
    /// Epochs started since the watcher did.
    pub(crate) epochs: u64,
}

impl Log {
    fn new() -> Log {
        Log {
            instance: fresh_instance(),
            seq: 0,
            marks: HashMap::new(),
            epochs: 1,
        }
    }

    fn mark(&mut self, path: &[u8], scope: Scope) {
        self.seq += 1;
        let marks = self.marks.entry(path.to_vec()).or_default();
        match scope {
            Scope::Dir => marks.dir = self.seq,
            Scope::Subtree => marks.subtree = self.seq,
        }
    }

    /// Forgets everything: no token from before can be answered.
    pub(crate) fn new_epoch(&mut self) {
        self.instance = fresh_instance();
        self.marks.clear();
        self.seq += 1;
        self.epochs += 1;
    }

    pub(crate) fn token(&self) -> WatchToken {
        WatchToken {
            instance: self.instance,
            seq: self.seq,
        }
    }

    /// The directories changed since `since`, `always` among them (what no event vouches for).
    pub(crate) fn since(&self, since: Option<&WatchToken>, always: &[DirtyDir]) -> Changes {
        let now = self.token();
        let seq = match since {
            Some(t) if t.instance == self.instance && t.seq <= self.seq => t.seq,
            Some(_) => return everything(Some(now), "the watcher started a new epoch since"),
            None => return everything(Some(now), "no token yet"),
        };
        let mut dirs: Vec<DirtyDir> = (self.marks.iter())
            .filter_map(|(path, m)| {
                let scope = match (m.subtree > seq, m.dir > seq) {
                    (true, _) => Scope::Subtree,
                    (false, true) => Scope::Dir,
                    (false, false) => return None,
                };
                Some(DirtyDir {
                    path: path.clone(),
                    scope,
                })
            })
            .collect();
        dirs.extend_from_slice(always);
        Changes::Dirs { now, dirs }
    }
}

pub(crate) fn everything(now: Option<WatchToken>, reason: &str) -> Changes {
    Changes::Everything {
        now,
        reason: reason.to_string(),
    }
}

/// Sixteen bytes from the kernel's random source; the time and pid if it cannot be read.
fn fresh_instance() -> [u8; 16] {
    let mut id = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut id))
        .is_ok()
    {
        return id;
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let hash = blake3::hash(
        &[
            now.to_le_bytes(),
            u128::from(std::process::id()).to_le_bytes(),
        ]
        .concat(),
    );
    id.copy_from_slice(&hash.as_bytes()[..16]);
    id
}

/// The watches and the log.
#[derive(Debug)]
pub(crate) struct Watches {
    fd: OwnedFd,
    root: PathBuf,
    store_dir: PathBuf,
    config: Config,
    by_wd: HashMap<i32, Vec<u8>>,
    by_path: HashMap<Vec<u8>, i32>,
    store_wd: i32,
    /// Directories no watch can cover (`EACCES`, `ENAMETOOLONG`): named whole in every answer.
    pub(crate) unwatched: BTreeSet<Vec<u8>>,
    budget: usize,
    pub(crate) log: Log,
    /// Events read since the start.
    pub(crate) events: u64,
    /// Set when the watcher can no longer vouch for anything: every answer is *everything*.
    pub(crate) doubt: Option<String>,
    /// Set when the workspace root or the store went away: the watcher exits.
    pub(crate) gone: Option<String>,
    /// Each watch's stamp, for the check on silence.
    pub(crate) stamps: Stamps,
    /// The directories of files with more than one name.
    linked: Linked,
    /// The mounts at, above and below the root, as last read.
    mounts: Mounts,
    /// The config file as last read, to compare with before each answer.
    config_seen: ConfigSeen,
}

/// What `config.toml` held when last read (through a symlink, as the config is loaded).
#[derive(Debug, PartialEq, Eq)]
enum ConfigSeen {
    Text(Vec<u8>),
    Missing,
    Unreadable(std::io::ErrorKind),
}

impl ConfigSeen {
    fn read(store_dir: &Path) -> ConfigSeen {
        match std::fs::read(store_dir.join("config.toml")) {
            Ok(text) => ConfigSeen::Text(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => ConfigSeen::Missing,
            Err(e) => ConfigSeen::Unreadable(e.kind()),
        }
    }
}

/// What reading the queue found besides changes.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    /// Cookie files seen made, by name.
    pub(crate) cookies: Vec<String>,
}

impl Watches {
    /// Watches every directory the walk enters, and the store directory for cookies.
    pub(crate) fn start(root: &Path, store_dir: &Path, config: Config) -> std::io::Result<Watches> {
        let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
        let store_wd = inotify::add_watch(&fd, store_dir, STORE_EVENTS)?;
        // Read before the config is taken again: a change in between is seen at the first
        // answer, never missed.
        let config_seen = ConfigSeen::read(store_dir);
        let (config, config_doubt) = match Config::load(store_dir) {
            Ok(now) => (now, None),
            Err(e) => (config, Some(format!("{CONFIG_DOUBT}: {e}"))),
        };
        let (mounts, mount_doubt) = match mounts::read(root) {
            Ok(mounts) => (mounts, None),
            Err(why) => (Mounts::default(), Some(why)),
        };
        let mut watches = Watches {
            fd,
            root: root.to_path_buf(),
            store_dir: store_dir.to_path_buf(),
            config,
            by_wd: HashMap::new(),
            by_path: HashMap::new(),
            store_wd,
            unwatched: BTreeSet::new(),
            budget: watch_budget(),
            log: Log::new(),
            events: 0,
            doubt: (config_doubt.or(mount_doubt)).or_else(|| untrusted_filesystem(root)),
            gone: None,
            stamps: Stamps::default(),
            linked: Linked::default(),
            mounts,
            config_seen,
        };
        watches.watch_under(b"");
        Ok(watches)
    }

    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }

    pub(crate) fn watched(&self) -> usize {
        self.by_wd.len()
    }

    /// The answer to a query, once the queue is read up to the query's cookie and
    /// [`Watches::revalidate`] has run.
    pub(crate) fn answer(&self, since: Option<&WatchToken>) -> Changes {
        match &self.doubt {
            Some(reason) => everything(None, reason),
            None => self.log.since(since, &self.always()),
        }
    }

    /// What every answer names, no event vouching for it: directories no watch covers and
    /// mount points below the root (whole), and the directories of files with more than one
    /// name (their own entries).
    fn always(&self) -> Vec<DirtyDir> {
        let whole = |path: &Vec<u8>| DirtyDir {
            path: path.clone(),
            scope: Scope::Subtree,
        };
        let mut always: Vec<DirtyDir> = self.unwatched.iter().map(whole).collect();
        // Only those a save walks: one under an ignored or excluded tree is no business of it.
        let walked = (self.mounts.below.iter()).filter(|p| self.by_path.contains_key(*p));
        always.extend(walked.map(whole));
        always.extend(self.linked.dirs().map(|path| DirtyDir {
            path: path.clone(),
            scope: Scope::Dir,
        }));
        always
    }

    /// Reads the config and the mount table again (a write through another name of the
    /// config, or a mount, raises no event here): a change in either starts a new epoch.
    pub(crate) fn revalidate(&mut self) {
        if ConfigSeen::read(&self.store_dir) != self.config_seen {
            self.reload_config();
        }
        match mounts::read(&self.root) {
            Ok(now) if now == self.mounts => {}
            Ok(now) => {
                // Watches on directories a mount now hides would never fire: all are taken
                // again over what is mounted now.
                self.mounts = now;
                self.log.new_epoch();
                self.forget_under(b"");
                self.watch_under(b"");
            }
            Err(why) => self.doubt = Some(why),
        }
    }

    /// Watches `under` and every directory the walk enters below it, each before the walk
    /// reads it (through its open descriptor), so a subdirectory made meanwhile is either
    /// read or reported by the watch.
    fn watch_under(&mut self, under: &[u8]) {
        let added = std::sync::Mutex::new(Vec::new());
        let on_dir = |rel: &[u8], dir: &OwnedFd| {
            // The descriptor was opened without following links: its /proc name is that
            // directory, whatever its path holds now.
            let path = format!("/proc/self/fd/{}", dir.as_raw_fd());
            let result = inotify::add_watch(&self.fd, path.as_str(), DIR_EVENTS);
            // Stamped once watched: a change after this is an event.
            let stamp = rustix::fs::fstat(dir).ok().map(|st| Stamp::of(&st));
            // Scanned once watched too: a second name made after this is an event.
            let links = linked::scan_dir(dir);
            added.lock().unwrap_or_else(|p| p.into_inner()).push((
                rel.to_vec(),
                result,
                stamp,
                links,
            ));
        };
        let plan = snap_tree::watch_tree(
            &self.root,
            &self.config,
            Some(&self.store_dir),
            under,
            &on_dir,
        );
        if under.is_empty() {
            self.linked.clear();
        }
        for (rel, result, stamp, links) in added.into_inner().unwrap_or_else(|p| p.into_inner()) {
            if let (Ok(wd), Some(stamp)) = (&result, stamp) {
                self.stamps.set(*wd, stamp);
            }
            self.linked.add(rel.clone(), links);
            self.record(rel, result);
        }
        match plan {
            Ok(plan) => self.unwatched.extend(plan.unreadable),
            Err(e) => self.doubt = Some(format!("cannot walk the tree to watch it: {e}")),
        }
    }

    /// Records what adding the watch of `rel` gave.
    fn record(&mut self, rel: Vec<u8>, added: rustix::io::Result<i32>) {
        match added {
            Ok(wd) => {
                // The same directory under a new name (moved): one watch, the new path.
                if let Some(old) = self.by_wd.insert(wd, rel.clone()) {
                    self.by_path.remove(&old);
                }
                self.by_path.insert(rel, wd);
                if self.by_wd.len() > self.budget {
                    self.doubt = Some(format!(
                        "{} directories passed {BUDGET_PERCENT}% of fs.inotify.max_user_watches; raise it (sysctl fs.inotify.max_user_watches=N)",
                        self.by_wd.len()
                    ));
                }
            }
            Err(Errno::ACCESS | Errno::NAMETOOLONG) => {
                self.unwatched.insert(rel);
            }
            Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => {}
            Err(Errno::NOSPC) => {
                self.doubt = Some(
                    "the inotify watch limit is reached; raise it (sysctl fs.inotify.max_user_watches=N)".into(),
                );
            }
            Err(e) => {
                let path = snap_abs(&self.root, &rel);
                self.doubt = Some(format!("cannot watch {}: {e}", path.display()));
            }
        }
    }

    /// Drops the watches of `rel` and of every directory under it.
    fn forget_under(&mut self, rel: &[u8]) {
        let gone: Vec<(Vec<u8>, i32)> = (self.by_path.iter())
            .filter(|(path, _)| flat::is_within(path, rel))
            .map(|(path, wd)| (path.clone(), *wd))
            .collect();
        for (path, wd) in gone {
            let _ = inotify::remove_watch(&self.fd, wd);
            self.by_path.remove(&path);
            self.by_wd.remove(&wd);
            self.stamps.remove(wd);
        }
        self.unwatched.retain(|path| !flat::is_within(path, rel));
        self.linked.forget_under(rel);
    }

    /// Reads every event queued now.
    pub(crate) fn drain(&mut self) -> Drained {
        let mut drained = Drained::default();
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 64 << 10];
        let fd = self.fd.try_clone();
        let Ok(fd) = fd else {
            self.doubt = Some("cannot read the inotify queue".into());
            return drained;
        };
        let mut reader = inotify::Reader::new(&fd, &mut buf);
        loop {
            match reader.next() {
                Ok(event) => {
                    self.events += 1;
                    let name = event.file_name().map(|n| n.to_bytes().to_vec());
                    self.on_event(event.wd(), event.events(), name, &mut drained);
                }
                Err(Errno::AGAIN) => break,
                Err(Errno::INTR) => continue,
                Err(e) => {
                    self.doubt = Some(format!("cannot read the inotify queue: {e}"));
                    break;
                }
            }
        }
        if std::mem::take(&mut self.linked.relearn) {
            // A second name of a file not known to have one: its other names' directories
            // are found by looking at everything again (their tokens stay good: the
            // directories found are named in every answer from now on).
            self.watch_under(b"");
        }
        drained
    }

    fn on_event(&mut self, wd: i32, mask: ReadFlags, name: Option<Vec<u8>>, drained: &mut Drained) {
        if mask.contains(ReadFlags::QUEUE_OVERFLOW) {
            // Events were lost: nothing from before can be vouched for, and directories
            // made meanwhile may have no watch yet.
            self.log.new_epoch();
            self.watch_under(b"");
            return;
        }
        if wd == self.store_wd {
            self.on_store_event(mask, name, drained);
            return;
        }
        let Some(dir) = self.by_wd.get(&wd).cloned() else {
            return;
        };
        #[cfg(feature = "testing")]
        if deaf_to(&dir) {
            return;
        }
        self.stamps.touch(wd);
        match name {
            Some(name) => self.on_entry_event(&dir, &name, mask),
            None => self.on_self_event(wd, &dir, mask),
        }
    }

    fn on_store_event(&mut self, mask: ReadFlags, name: Option<Vec<u8>>, drained: &mut Drained) {
        if mask.intersects(ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED) {
            self.gone = Some("the store directory went away".into());
            return;
        }
        let Some(name) = name.and_then(|n| String::from_utf8(n).ok()) else {
            return;
        };
        if name.starts_with(COOKIE_PREFIX) && mask.contains(ReadFlags::CREATE) {
            drained.cookies.push(name);
        } else if name == "config.toml" && ConfigSeen::read(&self.store_dir) != self.config_seen {
            self.reload_config();
        }
    }

    /// Takes the config again after `config.toml` changed in any way (written, removed,
    /// renamed away, replaced by a link, written through another name): nothing from before
    /// can be vouched for, and other directories may be tracked now.
    fn reload_config(&mut self) {
        // Read before it is loaded: a change in between is seen by the next answer.
        self.config_seen = ConfigSeen::read(&self.store_dir);
        match Config::load(&self.store_dir) {
            Ok(config) => {
                if (self.doubt.as_deref()).is_some_and(|d| d.starts_with(CONFIG_DOUBT)) {
                    self.doubt = None;
                }
                self.config = config;
                self.log.new_epoch();
                self.watch_under(b"");
            }
            Err(e) => self.doubt = Some(format!("{CONFIG_DOUBT}: {e}")),
        }
    }

    /// An event on a watched directory itself (no name).
    fn on_self_event(&mut self, wd: i32, dir: &[u8], mask: ReadFlags) {
        let lost = ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::IGNORED;
        if mask.intersects(lost) {
            if dir.is_empty() {
                self.gone = Some("the workspace root went away".into());
                return;
            }
            if mask.contains(ReadFlags::IGNORED) {
                self.by_wd.remove(&wd);
                self.by_path.remove(dir);
                self.stamps.remove(wd);
            }
            self.log.mark(flat::split(dir).0, Scope::Dir);
            self.log.mark(dir, Scope::Dir);
            return;
        }
        // Its own mode or times: its parent's tree holds its mode.
        self.log.mark(dir, Scope::Dir);
        if !dir.is_empty() {
            self.log.mark(flat::split(dir).0, Scope::Dir);
        }
    }

    /// An event on entry `name` of watched directory `dir`.
    fn on_entry_event(&mut self, dir: &[u8], name: &[u8], mask: ReadFlags) {
        let path = flat::join(dir, name);
        self.log.mark(dir, Scope::Dir);
        let is_dir = mask.contains(ReadFlags::ISDIR);
        if !is_dir
            && mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
            && let Ok(st) = rustix::fs::lstat(snap_abs(&self.root, &path))
        {
            self.linked.on_new_name(dir, &st);
        }
        if is_dir && mask.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO) {
            self.log.mark(&path, Scope::Subtree);
            self.watch_under(&path);
        } else if is_dir && mask.intersects(ReadFlags::DELETE | ReadFlags::MOVED_FROM) {
            self.forget_under(&path);
        } else if is_dir && mask.contains(ReadFlags::ATTRIB) {
            self.log.mark(&path, Scope::Dir);
        }
        if name == b".gitignore" || name == b".snapignore" {
            self.log.mark(dir, Scope::Subtree);
            self.watch_under(dir);
        }
    }
}

/// Checks that no watched directory changed without an event; one that did starts a new
/// epoch. Call after the queue was read up to a cookie; returns how many did.
pub(crate) fn check_silence(watches: &mut Watches) -> usize {
    let moved = watches.stamps.moved_silently(&watches.root, &watches.by_wd);
    // An event may have come in since the cookie: read the queue, and forgive those.
    watches.drain();
    let silent: Vec<Vec<u8>> = (moved.into_iter())
        .filter(|(wd, _)| !watches.stamps.was_touched(*wd))
        .map(|(_, path)| path)
        .collect();
    if let Some(path) = silent.first() {
        let shown = String::from_utf8_lossy(path).into_owned();
        eprintln!("snap: watcher check: {shown:?} changed without an event; starting a new epoch");
        watches.stamps.mismatches += silent.len() as u64;
        watches.stamps.last_mismatch = Some(shown);
        watches.log.new_epoch();
        watches.stamps.forget_all();
    }
    silent.len()
}

/// A test's stand-in for a silent watcher: events in directories whose path holds
/// `SNAP_WATCH_DEAF` are dropped (only with the `testing` feature).
#[cfg(feature = "testing")]
fn deaf_to(dir: &[u8]) -> bool {
    std::env::var("SNAP_WATCH_DEAF")
        .is_ok_and(|deaf| !deaf.is_empty() && dir.windows(deaf.len()).any(|w| w == deaf.as_bytes()))
}

/// How many watches this watcher may hold: [`BUDGET_PERCENT`] of the system's limit.
fn watch_budget() -> usize {
    // The suites force the limit; a release build has no such switch.
    #[cfg(feature = "testing")]
    if let Some(n) = std::env::var("SNAP_WATCH_BUDGET")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return n;
    }
    let limit = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_watches")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .unwrap_or(8192);
    limit / 100 * BUDGET_PERCENT
}

/// Why the filesystem of `root` cannot be trusted to report its changes, if it cannot:
/// a network or FUSE filesystem sees writes made elsewhere that no inotify event tells of.
fn untrusted_filesystem(root: &Path) -> Option<String> {
    const NETWORK: [(i64, &str); 7] = [
        (0x6969, "NFS"),
        (0xFF53_4D42, "CIFS"),
        (0xFE53_4D42, "SMB2"),
        (0x517B, "SMB"),
        (0x6573_5546, "FUSE"),
        (0x0102_1997, "9p"),
        (0x00C3_6400, "Ceph"),
    ];
    // The suites force this fallback; a release build has no such switch.
    #[cfg(feature = "testing")]
    if std::env::var_os("SNAP_WATCH_ASSUME_NETWORK_FS").is_some() {
        return Some("a network filesystem (SNAP_WATCH_ASSUME_NETWORK_FS is set)".into());
    }
    let stat = rustix::fs::statfs(root).ok()?;
    let kind = stat.f_type as i64;
    let (_, name) = NETWORK.iter().find(|(magic, _)| *magic == kind)?;
    Some(format!(
        "the workspace is on {name}, whose writes from elsewhere no inotify event reports"
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_token_is_answered_by_what_changed_after_it_and_only_in_its_epoch() {
        let mut log = Log::new();
        log.mark(b"a", Scope::Dir);
        let t = log.token();
        log.mark(b"b", Scope::Dir);
        log.mark(b"c", Scope::Subtree);
        log.mark(b"c", Scope::Dir);
        let Changes::Dirs { dirs, now } = log.since(Some(&t), &[]) else {
            panic!("a token of this epoch gets directories");
        };
        let mut got: Vec<(Vec<u8>, Scope)> = dirs.into_iter().map(|d| (d.path, d.scope)).collect();
        got.sort_by(|x, y| x.0.cmp(&y.0));
        assert_eq!(
            got,
            [(b"b".to_vec(), Scope::Dir), (b"c".to_vec(), Scope::Subtree)]
        );
        assert_eq!(now, log.token());
        log.new_epoch();
        assert!(matches!(
            log.since(Some(&t), &[]),
            Changes::Everything { now: Some(_), .. }
        ));
        assert!(matches!(log.since(None, &[]), Changes::Everything { .. }));
        let ahead = WatchToken {
            seq: log.seq + 1,
            ..log.token()
        };
        assert!(matches!(
            log.since(Some(&ahead), &[]),
            Changes::Everything { .. }
        ));
    }
}
