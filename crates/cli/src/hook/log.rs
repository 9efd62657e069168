//! The hook's log: one line per failed hook call, and one `ok` line when a call succeeds
//! after failures, in `.snap/hook.log` (bounded: past [`LOG_LIMIT`] the file is moved to
//! `hook.log.old`, so at most twice that is kept). Without a store, in
//! `$XDG_STATE_HOME/snap-undo/hook.log` (else `~/.local/state/snap-undo/hook.log`).
//! `snap status` reads the last line to say that hook saves are failing, and since when.
//!
//! Line format: `<UTC time> error agent=<agent> event=<event>: <message>` or
//! `<UTC time> ok`, each line at most 2 KiB (`bounded.rs`). Writing the log is best effort:
//! a hook that cannot log still exits 0.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::render::time_str;

/// The log's file name inside the store (and inside the user's state directory).
pub(crate) const LOG_FILE: &str = "hook.log";

/// Past this size the log is moved aside and started again.
const LOG_LIMIT: u64 = 256 << 10;

/// Records a failed hook call in the store's log, or the user's without a store.
pub(crate) fn failure(store: Option<&Path>, agent: &str, event: &str, why: &str) {
    let line = format!(
        "{} error agent={agent} event={event}: {}",
        now(),
        why.replace('\n', " ")
    );
    // An agent's name or event from a hostile payload cannot grow the log by megabytes.
    let line = super::bounded::capped(line, super::bounded::LINE_CAP);
    // A store that cannot be written (a read-only mount) still gets its failure said.
    let logged = store.is_some_and(|store| append(&store.join(LOG_FILE), &line));
    if let Some(path) = user_log().filter(|_| !logged) {
        append(&path, &line);
    }
}

/// Records a successful hook call, when it ends a run of failures (so `status` stops
/// reporting them); otherwise writes nothing.
pub(crate) fn success(store: &Path) {
    let path = store.join(LOG_FILE);
    if last_line(&path).is_some_and(|l| is_failure(&l)) {
        append(&path, &format!("{} ok", now()));
    }
}

/// The last failure, when the store's log ends in one: `(time, message)`.
pub(crate) fn last_failure(store: &Path) -> Option<(String, String)> {
    let line = last_line(&store.join(LOG_FILE))?;
    if !is_failure(&line) {
        return None;
    }
    let (time, rest) = line.split_once(' ')?;
    let message = rest.split_once(": ").map_or(rest, |(_, m)| m);
    Some((time.to_string(), message.to_string()))
}

fn is_failure(line: &str) -> bool {
    line.split(' ').nth(1) == Some("error")
}

fn now() -> String {
    let ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX));
    format!("{}Z", time_str(ns).replace(' ', "T"))
}

fn user_log() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".local/state")))?;
    Some(state.join("snap-undo").join(LOG_FILE))
}

/// Appends `line`; false when the log cannot be written.
fn append(path: &Path, line: &str) -> bool {
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if std::fs::metadata(path).is_ok_and(|m| m.len() > LOG_LIMIT) {
        let _ = std::fs::rename(path, path.with_extension("log.old"));
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path);
    file.and_then(|mut f| writeln!(f, "{line}")).is_ok()
}

/// The last line of the file at `path`, read from its end.
fn last_line(path: &Path) -> Option<String> {
    let mut file = std::fs::File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(4096))).ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    // The window may begin inside a character of an earlier line.
    String::from_utf8_lossy(&tail)
        .lines()
        .rev()
        .find(|l| !l.is_empty())
        .map(str::to_owned)
}
