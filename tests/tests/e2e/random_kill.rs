//! Moves killed with SIGKILL at random instants, not at failpoints: undo, redo, restore and
//! revert between two states of a tree of a few hundred paths (nested directories made and
//! removed, empty ones among them, a file turned into a directory and back, symlinks, file
//! and directory modes changed, an ignored file left alone), each killed after a random
//! delay within its measured run time, then finished by `snap recover`. The tree must then
//! be exactly one of the two states, empty directories and permission bits included, match
//! HEAD, and lose nothing (the conservation oracle of docs/SAFETY.md).
//!
//! 20 rounds by default; `SNAP_RANDOM_KILL_ROUNDS=500` for a long run,
//! `SNAP_RANDOM_KILL_SEED` to replay one.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::Value;
use snap_e2e::*;

/// Every entry under the root but the store: kind, permission bits (none for a symlink)
/// and content (a symlink's target; nothing for a directory).
type State = BTreeMap<String, (char, u32, Vec<u8>)>;

fn state(root: &Path) -> State {
    let mut out = State::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let path = e.unwrap().path();
            let rel = path
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if rel == ".snap" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let mode = meta.mode() & 0o7777;
            let t = meta.file_type();
            let entry = if t.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                ('l', 0, target.to_string_lossy().as_bytes().to_vec())
            } else if t.is_dir() {
                stack.push(path);
                ('d', mode, Vec::new())
            } else {
                ('f', mode, std::fs::read(&path).unwrap())
            };
            out.insert(rel, entry);
        }
    }
    out
}

/// The paths where two states differ, for a failure message.
fn differences(a: &State, b: &State) -> Vec<String> {
    let mut out: Vec<String> = (a.keys().chain(b.keys()))
        .filter(|p| a.get(*p) != b.get(*p))
        .map(|p| {
            let show = |s: &State| s.get(p).map(|(k, m, _)| format!("{k}{m:o}"));
            format!("{p} ({:?} / {:?})", show(a), show(b))
        })
        .collect();
    out.sort();
    out.dedup();
    out.truncate(12);
    out
}

fn set_mode(root: &Path, path: &str, mode: u32) {
    std::fs::set_permissions(root.join(path), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// State A (saved as #1): kept directories of files (some executable, one directory
/// private), directories B removes, nested three deep with an empty one and a private one,
/// a directory B turns into a file, a symlink and an ignored file.
fn build_a(d: &Path) {
    write(d, ".gitignore", b"*.log\n");
    write(d, "keep2/build.log", b"ignored, never touched");
    for k in 0..10 {
        for i in 0..24 {
            let body = format!("A keep{k}/f{i}\n").repeat(1 + (i % 7) * 30);
            write(d, &format!("keep{k}/f{i}"), body.as_bytes());
            if i % 6 == 1 {
                set_mode(d, &format!("keep{k}/f{i}"), 0o755);
            }
        }
    }
    set_mode(d, "keep3", 0o700);
    for g in 0..4 {
        for s in 0..3 {
            for i in 0..4 {
                let body = format!("A gone{g}/sub{s}/{i}\n").repeat(40);
                write(d, &format!("gone{g}/sub{s}/deep/f{i}"), body.as_bytes());
            }
        }
        std::fs::create_dir_all(d.join(format!("gone{g}/empty/inner"))).unwrap();
    }
    set_mode(d, "gone1/sub1", 0o750);
    write(d, "swap/inside", b"a directory in A, a file in B");
    std::os::unix::fs::symlink("keep0/f1", d.join("keep1/link")).unwrap();
}

/// State B (saved as #2), from A: files rewritten, removed and given other modes, A's nested
/// directories gone, new ones (with empty directories and private ones) made, a file
/// turned into a directory and a directory into a file, a symlink pointed elsewhere. (No
/// directory both states hold changes its mode: a revert takes back files, links and
/// directories made or removed, not a directory's mode alone.)
fn build_b(d: &Path) {
    for k in 0..10 {
        for i in 0..24 {
            let path = format!("keep{k}/f{i}");
            match i % 5 {
                0 => std::fs::remove_file(d.join(&path)).unwrap(),
                1 | 2 => write(d, &path, format!("B {path}\n").repeat(25).as_bytes()),
                3 => set_mode(d, &path, 0o600),
                _ => {}
            }
        }
    }
    for g in 0..4 {
        std::fs::remove_dir_all(d.join(format!("gone{g}"))).unwrap();
    }
    for n in 0..4 {
        for s in 0..3 {
            for i in 0..4 {
                let body = format!("B new{n}/sub{s}/{i}\n").repeat(35);
                write(d, &format!("new{n}/sub{s}/deep/f{i}"), body.as_bytes());
            }
            std::fs::create_dir_all(d.join(format!("new{n}/sub{s}/empty"))).unwrap();
        }
    }
    set_mode(d, "new1", 0o700);
    set_mode(d, "new2/sub1", 0o750);
    write(d, "keep0/f0/inner/now", b"a file in A, a directory in B");
    std::fs::remove_dir_all(d.join("swap")).unwrap();
    write(d, "swap", b"a directory in A, a file in B");
    std::fs::remove_file(d.join("keep1/link")).unwrap();
    std::os::unix::fs::symlink("keep0/f2", d.join("keep1/link")).unwrap();
}

/// The history as `log --all` lists it: each snapshot's id, tree and parent, and HEAD.
struct History {
    rows: Vec<Value>,
}

impl History {
    fn read(d: &Path) -> History {
        let log = json(d, &["log", "--all"]);
        History {
            rows: log["snapshots"].as_array().unwrap().clone(),
        }
    }

    fn head(&self) -> &Value {
        self.rows.iter().find(|r| r["is_head"] == true).unwrap()
    }

    fn by_id(&self, id: &Value) -> Option<&Value> {
        self.rows.iter().find(|r| r["id"] == *id)
    }

    /// Some snapshot holding `tree`.
    fn holding(&self, tree: &str) -> Option<&Value> {
        self.rows.iter().find(|r| r["tree"] == tree)
    }
}

/// The move for round `round` from the tree now (`now_tree`) to the other state's
/// (`other`), as arguments: undo, redo, revert and restore in turn, each where it applies
/// (undo and revert need HEAD's parent to hold the other state, redo a redoable snapshot
/// holding it on top of HEAD); restore always applies.
fn pick(history: &History, round: usize, now_tree: &str, other: &str) -> Vec<String> {
    let head = history.head();
    let parent = history.by_id(&head["parent"]);
    let back = parent.is_some_and(|p| p["tree"] == other) && head["tree"] == now_tree;
    let redo = (history.rows.iter())
        .find(|r| r["redoable"] == true && r["parent"] == head["id"])
        .is_some_and(|r| r["tree"] == other);
    for turn in 0..4 {
        match (round + turn) % 4 {
            0 if back => return vec!["undo".into()],
            1 if redo => return vec!["redo".into()],
            2 if back => {
                return vec!["revert".into(), head["id"].as_str().unwrap().to_string()];
            }
            3 => {
                let to = history.holding(other).unwrap();
                return vec!["restore".into(), to["id"].as_str().unwrap().to_string()];
            }
            _ => {}
        }
    }
    unreachable!("restore always applies")
}

/// How long each kind of move takes here, run to the end once from the state it starts in:
/// the random delays fall within it.
fn measure(d: &Path, a_tree: &str, b_tree: &str) -> BTreeMap<&'static str, Duration> {
    let mut took = BTreeMap::new();
    let mut timed = |name: &'static str, args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        ok(d, &args);
        took.insert(name, started.elapsed());
    };
    timed("undo", vec!["undo".into()]);
    timed("redo", vec!["redo".into()]);
    let a = History::read(d).holding(a_tree).unwrap()["id"].clone();
    timed(
        "restore",
        vec!["restore".into(), a.as_str().unwrap().into()],
    );
    let head = History::read(d).head()["id"].clone();
    timed(
        "revert",
        vec!["revert".into(), head.as_str().unwrap().into()],
    );
    assert_eq!(History::read(d).head()["tree"], b_tree);
    took
}

#[test]
fn moves_killed_at_random_instants_end_in_one_state_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().canonicalize().unwrap();
    build_a(d);
    ok(d, &["save"]);
    let a = state(d);
    build_b(d);
    ok(d, &["save"]);
    let b = state(d);
    let trees = History::read(d);
    let b_tree = trees.head()["tree"].as_str().unwrap().to_string();
    let a_tree = trees.by_id(&trees.head()["parent"]).unwrap()["tree"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        a.len() > 250 && b.len() > 250,
        "{} / {} paths",
        a.len(),
        b.len()
    );
    let took = measure(d, &a_tree, &b_tree);
    assert_eq!(state(d), b, "a move run to the end leaves its target");
    let rounds = env_number("SNAP_RANDOM_KILL_ROUNDS", 20) as usize;
    let seed = env_number("SNAP_RANDOM_KILL_SEED", 0x5eed_cafe_f00d);
    let mut rng = Lcg(seed);
    let (mut interrupted, mut recovered, mut moved) = (0, 0, 0);
    let mut per_op: BTreeMap<String, (u32, u32)> = BTreeMap::new();
    for round in 0..rounds {
        let before = state(d);
        let at_a = before == a;
        let (now_tree, other) = match at_a {
            true => (&a_tree, &b_tree),
            false => (&b_tree, &a_tree),
        };
        let args = pick(&History::read(d), round, now_tree, other);
        let full = took[args[0].as_str()];
        let delay = Duration::from_micros(rng.below(full.as_micros() as u64 * 11 / 10));
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut child = snap_cmd(d, &argv)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(delay);
        let running = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let status = child.wait().unwrap();
        let stats = per_op.entry(args[0].clone()).or_default();
        stats.0 += 1;
        if running {
            interrupted += 1;
            stats.1 += 1;
        } else {
            assert!(
                status.success(),
                "round {round}: {args:?} failed on its own"
            );
        }
        recovered += json(d, &["recover"])["recovered"]
            .as_array()
            .map_or(0, Vec::len);
        let at = format!("round {round} (seed {seed:#x}): {args:?} killed after {delay:?}");
        let now = state(d);
        assert!(
            now == a || now == b,
            "{at}: the tree is neither state; against A: {:?}; against B: {:?}",
            differences(&now, &a),
            differences(&now, &b)
        );
        moved += usize::from(now != before);
        let st = json(d, &["status"]);
        assert_eq!(st["clean"], true, "{at}: the tree must match HEAD: {st}");
        assert!(st["pending"].is_null(), "{at}: a marker is left: {st}");
        // Both states stay listed, so nothing of either is lost; every few rounds the oracle
        // reads each file the round changed back from the store.
        let history = History::read(d);
        assert!(history.holding(&a_tree).is_some() && history.holding(&b_tree).is_some());
        if round % 10 == 0 || round + 1 == rounds {
            assert_conserved(d, &everything_of(&before), &at);
        }
    }
    eprintln!(
        "random kill -9 (seed {seed:#x}): {rounds} rounds, {interrupted} interrupted while \
         running, {recovered} rolled forward from a marker, {moved} ended in the other state; \
         per move (rounds, interrupted): {per_op:?}"
    );
    assert!(interrupted > 0, "no round interrupted a running move");
}

/// A state's files and symlinks as the oracle takes them (bytes; a symlink's target).
fn everything_of(s: &State) -> Tree {
    (s.iter())
        .filter(|(_, (kind, _, _))| *kind != 'd')
        .map(|(p, (_, _, bytes))| (p.clone(), bytes.clone()))
        .collect()
}
