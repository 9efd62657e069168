//! The race suite (docs/SAFETY.md, "Writers racing a move"): writers rewrite, append to and
//! truncate tracked files in a loop while undo, redo and restore run. After each move, for
//! every path the move exchanged, the last version a writer finished before the exchange
//! began (and did not start to overwrite before it returned) is on disk or in a snapshot
//! `log --all` lists.
//! Run with the exchange, with its fallback forced, and with the fallback as on a filesystem
//! without hard links.

#![allow(clippy::unwrap_used)]

use std::collections::HashMap;
use std::io::{Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use snap_tree::testing::Edge;
use snap_tree::{SaveOptions, Workspace};

const WRITERS: usize = 4;
const ROUNDS: usize = 30;
/// Large enough that a write spans the window between a path's guard and its exchange.
const FILE_BYTES: usize = 192 * 1024;

/// One write a writer finished: the token it left in the file, and when it ran.
#[derive(Clone, Debug)]
struct Done {
    token: String,
    started: Instant,
    returned: Instant,
}

type Log = Arc<Mutex<HashMap<PathBuf, Vec<Done>>>>;

fn content(token: &str) -> Vec<u8> {
    let mut out = format!("{token}\n").into_bytes();
    out.resize(FILE_BYTES, b'.');
    out
}

/// Rewrites, appends to or truncates-then-writes `path` in a loop while `run` is set.
fn writer(
    path: PathBuf,
    run: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    log: Log,
    seq: Arc<AtomicU64>,
) {
    let mut k = 0u64;
    while !stop.load(Ordering::Relaxed) {
        if !run.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        let token = format!("token-{}", seq.fetch_add(1, Ordering::Relaxed));
        let started = Instant::now();
        let wrote = match k % 3 {
            0 => std::fs::write(&path, content(&token)),
            1 => std::fs::OpenOptions::new()
                .append(true)
                .open(&path)
                .and_then(|mut f| f.write_all(format!("{token}\n").as_bytes())),
            _ => std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|mut f| {
                    f.set_len(0)?;
                    f.rewind()?;
                    f.write_all(&content(&token))
                }),
        };
        let returned = Instant::now();
        if wrote.is_ok() {
            let done = Done {
                token,
                started,
                returned,
            };
            // Kept in the order the writes returned: a writer descheduled between its write
            // and this lock pushes after a later write of the hook's (which overwrote it),
            // and `must_survive` would take the overwritten version for the last one.
            let mut log = log.lock().unwrap();
            let writes = log.entry(path.clone()).or_default();
            writes.push(done);
            writes.sort_by_key(|d| d.returned);
        }
        k += 1;
        // Sparse enough that some moves get past their scan, dense enough to race them.
        std::thread::sleep(Duration::from_micros(1_000 + 2_500 * ((k * 7 + 3) % 11)));
    }
}

/// One exchange a move made: it happened at some instant between `before` and `after`.
#[derive(Clone, Debug)]
struct Exchange {
    path: PathBuf,
    before: Instant,
    after: Instant,
}

/// Every exchange a move made, and the paths whose exchange has begun but not returned.
#[derive(Default)]
struct Exchanges {
    done: Vec<Exchange>,
    open: HashMap<PathBuf, Instant>,
}

fn listed_versions(
    ws: &Workspace,
    rel: &str,
    cache: &mut HashMap<(String, String), Vec<u8>>,
) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for entry in ws.log(true).unwrap() {
        let key = (entry.snapshot.id.to_string(), rel.to_string());
        if let Some(bytes) = cache.get(&key) {
            out.push(bytes.clone());
        } else if let Ok(bytes) = ws.read_file(&entry.snapshot, rel.as_bytes()) {
            cache.insert(key, bytes.clone());
            out.push(bytes);
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

/// The tokens one of which must survive `exchange`: the last write finished before it
/// began, unless the next write began before it returned (that write may have overwritten
/// the token in place before the exchange took the file, which is the writer's doing, not
/// snap's). A write the last one overlapped (the hook's and a writer's, at once) may have
/// landed after it, so its token counts as well.
fn must_survive(writes: &[Done], exchange: &Exchange) -> Vec<String> {
    let Some(last) = writes.iter().rposition(|d| d.returned < exchange.before) else {
        return Vec::new();
    };
    if writes
        .get(last + 1)
        .is_some_and(|next| next.started < exchange.after)
    {
        return Vec::new();
    }
    let candidate = &writes[last];
    let overlapping = writes[..last]
        .iter()
        .filter(|d| d.returned > candidate.started);
    (std::iter::once(candidate).chain(overlapping))
        .map(|d| d.token.clone())
        .collect()
}

/// Prints what the suite saw of a path whose version was lost.
fn explain(exchange: &Exchange, writes: Option<&Vec<Done>>, on_disk: &[u8], versions: &[Vec<u8>]) {
    let first_line = |b: &[u8]| {
        let line = b.split(|&c| c == b'\n').next().unwrap_or_default();
        String::from_utf8_lossy(line).into_owned()
    };
    eprintln!("exchange: {exchange:?}");
    for write in writes.into_iter().flatten() {
        eprintln!("  write {write:?}");
    }
    eprintln!("  on disk: {:?}", first_line(on_disk));
    for version in versions {
        eprintln!("  listed: {:?}", first_line(version));
    }
}

fn race((fallback, no_links): (bool, bool)) -> (usize, usize) {
    snap_tree::testing::force_link_fallback(fallback);
    snap_tree::testing::force_no_links(no_links);
    let dir = tempfile::tempdir().unwrap();
    let root = &dir.path().canonicalize().unwrap();
    drop(Workspace::init(root, None, false).unwrap());
    let names: Vec<String> = (0..WRITERS).map(|i| format!("d{i}/f{i}.txt")).collect();
    for name in &names {
        std::fs::create_dir_all(root.join(name).parent().unwrap()).unwrap();
        std::fs::write(root.join(name), content(&format!("first {name}"))).unwrap();
    }
    let ws = Workspace::discover(root, None).unwrap();
    ws.save(&SaveOptions::default()).unwrap();
    for name in &names {
        std::fs::write(root.join(name), content(&format!("second {name}"))).unwrap();
    }
    ws.save(&SaveOptions::default()).unwrap();
    drop(ws);

    let exchanges: Arc<Mutex<Exchanges>> = Arc::default();
    let (run, stop, log, seq) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Log::default(),
        Arc::new(AtomicU64::new(0)),
    );
    let (seen, hook_log, hook_seq) = (Arc::clone(&exchanges), log.clone(), seq.clone());
    snap_tree::testing::on_exchange(Box::new(move |path: &Path, edge: Edge| {
        if edge == Edge::After {
            let mut seen = seen.lock().unwrap();
            if let Some(before) = seen.open.remove(path) {
                let (path, after) = (path.to_path_buf(), Instant::now());
                seen.done.push(Exchange {
                    path,
                    before,
                    after,
                });
            }
            return;
        }
        // Every other exchange of a writer's file, a write lands exactly in the window
        // between the guard and the exchange, as a writer's would by chance.
        let n = hook_seq.fetch_add(1, Ordering::Relaxed);
        let ours = path.extension().is_some_and(|e| e == "txt");
        if ours && n % 2 == 0 {
            let token = format!("hook-{n}");
            let started = Instant::now();
            if std::fs::write(path, content(&token)).is_ok() {
                let done = Done {
                    token,
                    started,
                    returned: Instant::now(),
                };
                let mut log = hook_log.lock().unwrap();
                let writes = log.entry(path.to_path_buf()).or_default();
                writes.push(done);
                writes.sort_by_key(|d| d.returned);
            }
        }
        seen.lock()
            .unwrap()
            .open
            .insert(path.to_path_buf(), Instant::now());
    }));
    let threads: Vec<_> = names
        .iter()
        .map(|name| {
            let (path, run, stop, log, seq) = (
                root.join(name),
                run.clone(),
                stop.clone(),
                log.clone(),
                seq.clone(),
            );
            std::thread::spawn(move || writer(path, run, stop, log, seq))
        })
        .collect();

    let mut cache = HashMap::new();
    let (mut checked, mut moved) = (0, 0);
    for round in 0..ROUNDS {
        let ws = Workspace::discover(root, None).unwrap();
        exchanges.lock().unwrap().done.clear();
        // Background writers every other round (most such moves find a file changed since
        // their scan and refuse, which is right too); the hook's writes in every round.
        run.store(round % 2 == 1, Ordering::SeqCst);
        let result = match round % 3 {
            0 => ws.undo(1, snap_tree::Run::Apply).map(drop),
            1 => ws.redo(1, snap_tree::Run::Apply).map(drop),
            _ => ws.restore("#1", &[], snap_tree::Run::Apply).map(drop),
        };
        run.store(false, Ordering::SeqCst);
        // Let a write in flight finish before looking.
        std::thread::sleep(Duration::from_millis(20));
        moved += usize::from(result.is_ok());
        if let Err(e) = &result {
            eprintln!("round {round}: {e}");
        }
        let writes = log.lock().unwrap().clone();
        for exchange in &exchanges.lock().unwrap().done {
            let path = &exchange.path;
            let tokens = writes
                .get(path)
                .map_or_else(Vec::new, |w| must_survive(w, exchange));
            if tokens.is_empty() {
                continue;
            }
            let rel = path.strip_prefix(root).unwrap().to_str().unwrap();
            let on_disk = std::fs::read(path).unwrap_or_default();
            let versions = listed_versions(&ws, rel, &mut cache);
            let kept = tokens.iter().any(|token| {
                contains(&on_disk, token) || versions.iter().any(|v| contains(v, token))
            });
            if !kept {
                explain(exchange, writes.get(path), &on_disk, &versions);
            }
            assert!(
                kept,
                "round {round} (fallback {fallback}, no links {no_links}): {rel}'s {tokens:?} \
                 was lost ({result:?})"
            );
            checked += 1;
        }
    }
    stop.store(true, Ordering::SeqCst);
    for t in threads {
        t.join().unwrap();
    }
    snap_tree::testing::clear_exchange_hook();
    snap_tree::testing::force_link_fallback(false);
    snap_tree::testing::force_no_links(false);
    (checked, moved)
}

/// One test runs both ways in turn: the hook and the fallback switch are process-wide.
#[test]
fn writes_racing_moves_are_never_lost() {
    // The exchange; its fallback; the fallback on a filesystem without hard links.
    for (fallback, no_links) in [(false, false), (true, false), (true, true)] {
        let (checked, moved) = race((fallback, no_links));
        eprintln!(
            "fallback {fallback} (no links {no_links}): {moved} of {ROUNDS} moves done, \
             {checked} exchanges checked"
        );
        assert!(
            checked > 0,
            "no exchange raced a write (fallback {fallback}, no links {no_links})"
        );
    }
}
