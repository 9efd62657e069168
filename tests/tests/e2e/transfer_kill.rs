//! History beyond one machine killed with SIGKILL at random instants, not at failpoints
//! (issue 54, "Tests the project keeps"): `push`, `pull`, `clone`, `expunge` and
//! `gc --remote`, each spawned, killed after a random delay within its measured run time,
//! then `snap recover` (in the clone, when a killed clone left one), then the command run
//! again. The history is a small repository-like tree of 30 snapshots where `secret.txt`
//! holds a token in several of them, pushed in steps to a `file://` remote that a clone of
//! it (another workspace, 5 snapshots of its own) also pushed to.
//!
//! Every round starts from a copy of one of three prepared states (the history pushed in
//! part; the same after `expunge secret.txt`; the same pushed whole, pulled, pruned, saved
//! and pushed again, so a remote collection has old refs, records and a pack to mark and
//! delete), and checks, after the kill and `recover`, then after the retry:
//!
//! 1. nothing lost: the working tree is as it was (and the conservation oracle holds), every
//!    snapshot `log --all` listed is listed (after an expunge: the same count, sequence
//!    numbers and messages), and a clone of the remote gives the pushed history whole;
//! 2. no phantom snapshot: the counts are unchanged, but for what the command adds (a pull
//!    its pulled snapshots, all of them or none);
//! 3. `verify --read-data` passes, and `verify --remote --read-data` passes (a killed push
//!    leaves objects no ref names, which are not damage);
//! 4. where history no longer holds `secret.txt` (after an expunge, killed and run again to
//!    the end, and in a store that had expunged before a killed pull), no file under
//!    `.snap/` holds the token (`store_holds`, pack frames decompressed; `.snap/tmp` raw);
//! 5. the retried command succeeds (a killed clone: into the same destination) and ends
//!    where an unkilled run ends.
//!
//! The SeaweedFS half (push and expunge, killed the same way) is `s3_kill.rs`, run by the
//! S3 test of `remote.rs`, which owns the one server of the process.
//!
//! A failing round does not stop the run: each is reported with its seed and what broke,
//! and the counts per command are printed at the end. 12 rounds by default, spread over the
//! five commands; `SNAP_TRANSFER_KILL_ROUNDS=200` for a long run, `SNAP_TRANSFER_KILL_SEED`
//! to replay one (the instants are the seed's, the run times the machine's), and
//! `SNAP_TRANSFER_KILL_KEEP=1` to keep the failed rounds' directories.

use std::collections::{BTreeMap, BTreeSet};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use snap_e2e::*;

const TOKEN: &str = "sk-proj-Qw71Er8Ty2Ui9Op4As6Df3Gh5Jk0Lz1Xc7Vb";

fn url_of(dir: &Path) -> String {
    format!("file://{}", dir.display())
}

/// `cp -a`: a workspace or remote copied as a person copies one.
fn copy_dir(from: &Path, to: &Path) {
    if to.exists() {
        std::fs::remove_dir_all(to).unwrap();
    }
    let status = Command::new("cp").arg("-a").arg(from).arg(to).status();
    assert!(status.unwrap().success(), "cp -a {}", from.display());
}

/// Incompressible bytes, different for each `seed`.
fn noise(seed: u32, len: u32) -> Vec<u8> {
    (0..len)
        .map(|i| (i.wrapping_add(seed << 20).wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect()
}

/// The workspace id a store records (`.snap/workspace`, FORMAT.md 4.9), as hex.
fn workspace_of(d: &Path) -> String {
    let ident = std::fs::read(d.join(".snap/workspace")).unwrap();
    ident[8..24].iter().map(|b| format!("{b:02x}")).collect()
}

/// The history of workspace `a` (and of `c`, its clone) in `r`, and their remote: 30
/// snapshots, `secret.txt` holding the token in steps 3..=9 and 20..=30; steps 13..=18
/// change only `data/` (a blob added, rewritten, removed), so the pack their push sent is
/// reached by none of the later snapshots. `a` pushes after steps 6, 12, 18 and 24; `c`,
/// cloned after step 12, saves five snapshots of its own and pushes them.
fn build_base(r: &Path) {
    let (a, c) = (r.join("a"), r.join("c"));
    let url = url_of(&r.join("remote"));
    std::fs::create_dir_all(&a).unwrap();
    for i in 0..30 {
        let body = format!("pub fn f{i}() -> u32 {{ {i} }}\n").repeat(20);
        write(&a, &format!("src/mod{}/file{i}.rs", i % 5), body.as_bytes());
    }
    write(&a, "README.md", b"# app\n");
    write(&a, "Cargo.toml", b"[package]\nname = \"app\"\n");
    write(&a, ".gitignore", b"target/\n");
    for n in 1..=30u32 {
        match n {
            13 => write(&a, "data/blob.bin", &noise(n, 200_000)),
            14..=17 => write(&a, "data/blob.bin", &noise(n, 200_000)),
            18 => std::fs::remove_dir_all(a.join("data")).unwrap(),
            _ if n > 1 => {
                let i = (n * 7) % 30;
                let path = format!("src/mod{}/file{i}.rs", i % 5);
                let body = format!("// step {n}\n{}", read(&a, &path));
                write(&a, &path, body.as_bytes());
                if n % 4 == 0 {
                    write(&a, "README.md", format!("# app\n\nstep {n}\n").as_bytes());
                }
            }
            _ => {}
        }
        match n {
            3..=9 | 20..=30 => write(
                &a,
                "secret.txt",
                format!("key={TOKEN}\nrun={n}\n").as_bytes(),
            ),
            10 => std::fs::remove_file(a.join("secret.txt")).unwrap(),
            _ => {}
        }
        ok(&a, &["save", "-m", &format!("step {n}")]);
        if n == 6 {
            // Encrypted, as every new remote: the kills land in sealing and opening too.
            ok(&a, &["remote", "add", "--create", "origin", &url]);
        }
        if n % 6 == 0 && n <= 24 {
            ok(&a, &["push", &url]);
        }
        if n == 12 {
            ok(r, &["clone", &url, "c"]);
            for k in 0..5 {
                write(
                    &c,
                    &format!("docs/c{k}.md"),
                    format!("# c {k}\n").as_bytes(),
                );
                write(&c, "README.md", format!("# app, from c {k}\n").as_bytes());
                ok(&c, &["save", "-m", &format!("c {k}")]);
            }
            ok(&c, &["push", &url]);
        }
    }
}

/// The prepared states rounds start from, each a copy of `round/` kept aside.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Base {
    /// `build_base`: a's last six snapshots not pushed, c's pushed, nothing pulled.
    Pushed,
    /// The same after `snap expunge secret.txt --yes` in a.
    Expunged,
    /// a pushed whole, pulled c, pruned to its last 8, gc, saved once more, pushed, pulled.
    Pruned,
}

/// What a round runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    /// a's six new snapshots to the remote.
    Push,
    /// a's whole history to a remote no push made yet.
    PushFresh,
    /// An expunged history to the remote that holds its old ids.
    PushExpunged,
    /// c's snapshots into a.
    Pull,
    /// c's snapshots (which still hold the secret under ids a's expunge renamed) into a.
    PullExpunged,
    /// a's workspace into a new directory.
    Clone,
    /// `secret.txt` out of a's history.
    Expunge,
    /// `gc --remote --grace 0` marking.
    GcMark,
    /// `gc --remote --grace 0` deleting what a first one marked.
    GcDelete,
}

impl Kind {
    const ALL: [Kind; 9] = [
        Kind::Push,
        Kind::PushFresh,
        Kind::PushExpunged,
        Kind::Pull,
        Kind::PullExpunged,
        Kind::Clone,
        Kind::Expunge,
        Kind::GcMark,
        Kind::GcDelete,
    ];

    /// Round `n`'s: the five commands in turn, each command's variants in turn.
    fn of_round(n: usize) -> Kind {
        let turn = n / 5;
        match n % 5 {
            0 => [Kind::Push, Kind::PushFresh, Kind::PushExpunged][turn % 3],
            1 => [Kind::Pull, Kind::PullExpunged][turn % 2],
            2 => Kind::Clone,
            3 => Kind::Expunge,
            _ => [Kind::GcMark, Kind::GcDelete][turn % 2],
        }
    }

    fn command(self) -> &'static str {
        match self {
            Kind::Push | Kind::PushFresh | Kind::PushExpunged => "push",
            Kind::Pull | Kind::PullExpunged => "pull",
            Kind::Clone => "clone",
            Kind::Expunge => "expunge",
            Kind::GcMark | Kind::GcDelete => "gc --remote",
        }
    }

    fn base(self) -> Base {
        match self {
            Kind::PushExpunged | Kind::PullExpunged => Base::Expunged,
            Kind::GcMark | Kind::GcDelete => Base::Pruned,
            _ => Base::Pushed,
        }
    }

    /// True where a's history holds no `secret.txt` once the command is done.
    fn secret_gone(self) -> bool {
        matches!(
            self,
            Kind::PushExpunged | Kind::PullExpunged | Kind::Expunge
        )
    }
}

/// The round's directories: `r/a`, `r/c`, `r/remote`, and what rounds make there.
struct Round {
    r: PathBuf,
    a: PathBuf,
    url: String,
    fresh: PathBuf,
    dest: PathBuf,
}

impl Round {
    fn at(r: &Path) -> Round {
        Round {
            r: r.to_path_buf(),
            a: r.join("a"),
            url: url_of(&r.join("remote")),
            fresh: r.join("fresh"),
            dest: r.join("b"),
        }
    }

    /// Where the command runs and its arguments.
    fn args(&self, kind: Kind, workspace: &str) -> (PathBuf, Vec<String>) {
        let a = self.a.clone();
        let v = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match kind {
            Kind::Push | Kind::PushExpunged => (a, v(&["push", &self.url])),
            Kind::PushFresh => (a, v(&["push", &url_of(&self.fresh)])),
            Kind::Pull | Kind::PullExpunged => (a, v(&["pull", &self.url])),
            Kind::Clone => (
                self.r.clone(),
                v(&["clone", &self.url, "b", "--workspace", &workspace[..8]]),
            ),
            Kind::Expunge => (a, v(&["expunge", "secret.txt", "--yes", "--grace", "0"])),
            Kind::GcMark | Kind::GcDelete => (a, v(&["gc", "--remote", &self.url, "--grace", "0"])),
        }
    }

    /// The remote the command writes or reads.
    fn remote_url(&self, kind: Kind) -> String {
        url_of(&self.remote_dir(kind))
    }

    fn remote_dir(&self, kind: Kind) -> PathBuf {
        match kind {
            Kind::PushFresh => self.fresh.clone(),
            _ => self.r.join("remote"),
        }
    }

    /// What a round does before the command it kills: a first collection, for the one
    /// that deletes.
    fn prepare(&self, kind: Kind) {
        if kind == Kind::GcDelete {
            let marked = json(&self.a, &["gc", "--remote", &self.url, "--grace", "0"]);
            assert!(marked["marked"].as_u64().unwrap() > 0, "{marked}");
        }
    }
}

/// A store's history as `log --all` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Listed {
    ids: BTreeSet<String>,
    /// Each own snapshot's sequence number and message (an expunge keeps both).
    lines: Vec<(u64, String)>,
    pulled: BTreeSet<String>,
    head: Value,
}

fn listed(d: &Path) -> Listed {
    let log = json(d, &["log", "--all"]);
    let own = log["snapshots"].as_array().unwrap();
    let mut lines: Vec<(u64, String)> = (own.iter())
        .map(|s| {
            let msg = s["message"].as_str().unwrap_or_default().to_string();
            (s["seq"].as_u64().unwrap(), msg)
        })
        .collect();
    lines.sort();
    Listed {
        ids: own
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect(),
        lines,
        pulled: (log["pulled"].as_array().into_iter().flatten())
            .map(|p| p["snapshot"]["id"].as_str().unwrap().to_string())
            .collect(),
        head: log["head"]["seq"].clone(),
    }
}

/// Every file of a `file://` remote but the temporary files of puts (`.tmp/`).
fn remote_keys(dir: &Path) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let rel = e.path().strip_prefix(dir).unwrap().display().to_string();
            if rel == ".tmp" {
                continue;
            }
            match e.file_type().unwrap().is_dir() {
                true => stack.push(e.path()),
                false => {
                    out.insert(rel);
                }
            }
        }
    }
    out
}

fn count_under(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |e| e.count())
}

/// The staging directories of killed transfers under `.snap/tmp` (`push-`, `pull-`,
/// `clone-`).
fn staged(a: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(a.join(".snap/tmp")) else {
        return Vec::new();
    };
    (entries.flatten())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            ["push-", "pull-", "clone-"]
                .iter()
                .any(|p| n.starts_with(p))
        })
        .collect()
}

/// (4): no file under `.snap/` holds the token, pack frames decompressed, and none under
/// `.snap/tmp` as raw bytes.
fn secret_anywhere(a: &Path) -> Vec<String> {
    let mut found = snap_store::testing::store_holds(&a.join(".snap"), TOKEN.as_bytes());
    let mut stack = vec![a.join(".snap/tmp")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else if std::fs::read(e.path())
                .is_ok_and(|b| b.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()))
            {
                found.push(format!("raw: {}", e.path().display()));
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

/// Runs snap, returning the exit code and the `--json` document (Null when none).
fn run_json(dir: &Path, args: &[&str]) -> (Option<i32>, Value, String) {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = snap(dir, &all);
    let doc = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), doc, stderr(&out))
}

/// (3) on the remote: `verify --remote --read-data` finds no problem.
fn remote_verifies(a: &Path, url: &str, at: &str) {
    let (code, doc, err) = run_json(a, &["verify", "--remote", url, "--read-data"]);
    assert!(
        code == Some(0) && doc["ok"] == true,
        "{at}: verify --remote --read-data: {doc} {err}"
    );
}

fn store_verifies(d: &Path, at: &str) {
    let (code, doc, err) = run_json(d, &["verify", "--read-data"]);
    assert!(
        code == Some(0) && doc["ok"] == true,
        "{at}: verify --read-data in {}: {doc} {err}",
        d.display()
    );
}

/// Clones workspace `ws` of `url` into `r/<name>` and returns its history and tree.
fn clone_of(r: &Path, url: &str, ws: &str, name: &str, at: &str) -> (Listed, Tree) {
    let into = r.join(name);
    if into.exists() {
        std::fs::remove_dir_all(&into).unwrap();
    }
    let out = snap(r, &["clone", url, name, "--workspace", &ws[..8]]);
    assert!(
        out.status.success(),
        "{at}: a clone of {url} (workspace {ws}): {}",
        stderr(&out)
    );
    store_verifies(&into, at);
    (listed(&into), on_disk(&into, true))
}

/// What an unkilled run of a kind leaves.
struct Clean {
    took: Duration,
    listed: Listed,
    remote: BTreeSet<String>,
    /// For a clone: its history and tree.
    cloned: Option<(Listed, Tree)>,
}

/// Counts, for the report at the end.
#[derive(Default, Debug)]
struct Tally {
    rounds: u32,
    killed_running: u32,
    /// A clone whose store is in the destination (it finished, or was killed after moving
    /// its store in): recovered there, no retry.
    clone_left_store: u32,
    /// A killed clone that left the destination not empty and without a store.
    clone_left_debris: u32,
    /// Staging directories under `.snap/tmp` a kill left (swept by the retry).
    staging_left: u32,
    /// Temporary files of killed puts left on the remote (`.tmp/`).
    remote_tmp_left: u32,
    /// A killed pull whose snapshots were all taken; a killed expunge whose rewrite landed.
    landed: u32,
    /// Rounds where, after the kill and `snap recover`, the token was in `.snap/packs/`
    /// (a pack the catalog does not name) ...
    secret_in_packs: u32,
    /// ... or in `.snap/tmp/` (a killed transfer's staging).
    secret_in_tmp: u32,
    /// A retried clone refused: the destination held a killed export's staging directory ...
    clone_refused_export: u32,
    /// ... or HEAD's files without a store (docs/SAFETY.md, "Not yet covered").
    clone_refused_files: u32,
}

#[test]
fn transfers_killed_at_random_instants_lose_nothing_and_leave_no_secret() {
    let top_dir = tempfile::tempdir().unwrap();
    let top = &top_dir.path().canonicalize().unwrap();
    let r = &top.join("round");
    let tpl = |b: Base| top.join(format!("tpl-{b:?}"));
    build_base(r);
    let workspace = workspace_of(&r.join("a"));
    let round = Round::at(r);
    std::fs::rename(r, tpl(Base::Pushed)).unwrap();

    copy_dir(&tpl(Base::Pushed), r);
    ok(&round.a, &["expunge", "secret.txt", "--yes", "--no-remote"]);
    assert_eq!(secret_anywhere(&round.a), Vec::<String>::new());
    std::fs::rename(r, tpl(Base::Expunged)).unwrap();

    copy_dir(&tpl(Base::Pushed), r);
    let a = &round.a;
    ok(a, &["push", &round.url]);
    ok(a, &["pull", &round.url]);
    ok(a, &["prune", "--keep-last", "8"]);
    ok(a, &["gc"]);
    write(a, "src/mod0/file0.rs", b"pub fn pruned() {}\n");
    ok(a, &["save", "-m", "after the prune"]);
    ok(a, &["push", &round.url]);
    ok(a, &["pull", &round.url]);
    std::fs::rename(r, tpl(Base::Pruned)).unwrap();

    // One unkilled run of each kind: how long it takes, and where it ends.
    let mut clean: BTreeMap<Kind, Clean> = BTreeMap::new();
    for kind in Kind::ALL {
        copy_dir(&tpl(kind.base()), r);
        round.prepare(kind);
        let (dir, args) = round.args(kind, &workspace);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let started = Instant::now();
        let out = snap(&dir, &args);
        let took = started.elapsed();
        assert!(out.status.success(), "{kind:?}: {}", stderr(&out));
        let at = format!("unkilled {kind:?}");
        store_verifies(&round.a, &at);
        remote_verifies(&round.a, &round.remote_url(kind), &at);
        if kind.secret_gone() {
            assert_eq!(secret_anywhere(&round.a), Vec::<String>::new(), "{at}");
        }
        if kind == Kind::Expunge {
            let remote = round.remote_dir(kind);
            let found = snap_store::testing::store_holds(&remote, TOKEN.as_bytes());
            assert_eq!(
                found,
                Vec::<String>::new(),
                "{at}: the token is on the remote"
            );
        }
        let cloned = (kind == Kind::Clone).then(|| {
            store_verifies(&round.dest, &at);
            (listed(&round.dest), on_disk(&round.dest, true))
        });
        let remote = remote_keys(&round.remote_dir(kind));
        eprintln!(
            "unkilled {kind:?}: {took:?}, {}",
            String::from_utf8_lossy(&out.stdout).trim()
        );
        clean.insert(
            kind,
            Clean {
                took,
                listed: listed(&round.a),
                remote,
                cloned,
            },
        );
    }
    assert!(
        clean[&Kind::GcMark].remote != clean[&Kind::GcDelete].remote,
        "the collection that deletes deletes something"
    );

    let rounds = env_number("SNAP_TRANSFER_KILL_ROUNDS", 12) as usize;
    let seed = env_number("SNAP_TRANSFER_KILL_SEED", 0x7a57_c0de_5eed);
    let mut rng = Lcg(seed);
    let mut tally: BTreeMap<&'static str, Tally> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    for n in 0..rounds {
        let kind = Kind::of_round(n);
        let full = clean[&kind].took;
        let delay = Duration::from_micros(rng.below(full.as_micros() as u64 * 11 / 10));
        let at = format!("round {n} (seed {seed:#x}): {kind:?} killed after {delay:?}");
        let t = tally.entry(kind.command()).or_default();
        t.rounds += 1;
        let result = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let settled_gc = &clean[&Kind::GcDelete].remote;
            let base = tpl(kind.base());
            one_round(
                &round,
                &base,
                kind,
                &workspace,
                &clean[&kind],
                settled_gc,
                delay,
                &at,
                t,
            )
        }));
        if let Err(panic) = result {
            let why = (panic.downcast_ref::<String>().cloned())
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            failures.push(format!("{at}: {why}"));
            // Keep the round's directories for a look, once.
            let kept = top.join(format!("failed-{n}"));
            let _ = std::fs::rename(r, &kept);
            eprintln!("FAILED {at}: {why} (left in {})", kept.display());
        }
    }
    if !failures.is_empty() && std::env::var_os("SNAP_TRANSFER_KILL_KEEP").is_some() {
        eprintln!("kept {}", top.display());
        std::mem::forget(top_dir);
    }
    let killed: u32 = tally.values().map(|t| t.killed_running).sum();
    eprintln!(
        "transfer kill -9 (seed {seed:#x}): {rounds} rounds, {killed} killed while running, \
         {} failed",
        failures.len()
    );
    for (command, t) in &tally {
        eprintln!("  {command}: {t:?}");
    }
    assert!(
        failures.is_empty(),
        "{} round(s) failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(killed > 0, "no round killed a running command");
}

/// One round: copy the base, run the command, kill it, recover, check; retry, check.
#[allow(clippy::too_many_arguments)]
fn one_round(
    round: &Round,
    base: &Path,
    kind: Kind,
    workspace: &str,
    clean: &Clean,
    settled_gc: &BTreeSet<String>,
    delay: Duration,
    at: &str,
    t: &mut Tally,
) {
    let (r, a) = (&round.r, &round.a);
    copy_dir(base, r);
    round.prepare(kind);
    let before = listed(a);
    let files = everything(a);
    let (dir, args) = round.args(kind, workspace);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut child = snap_cmd(&dir, &argv)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    if running {
        t.killed_running += 1;
    } else {
        assert!(
            out.status.success(),
            "{at}: it failed on its own: {}",
            stderr(&out)
        );
    }
    let remote_dir = round.remote_dir(kind);
    t.remote_tmp_left += count_under(&remote_dir.join(".tmp")) as u32;

    // After the kill and `snap recover`.
    let recovered = snap(a, &["recover"]);
    assert!(
        recovered.status.success(),
        "{at}: recover: {}",
        stderr(&recovered)
    );
    t.staging_left += staged(a).len() as u32;
    let now = listed(a);
    check_history(kind, &before, &now, &clean.listed, at, "after the kill", t);
    assert_eq!(everything(a), files, "{at}: the working tree changed");
    assert_conserved(a, &files, at);
    store_verifies(a, &format!("{at}, after the kill"));
    assert!(
        !a.join(".snap/writing-packs").exists(),
        "{at}: an expunge's intent is left"
    );
    let url = round.remote_url(kind);
    if remote_dir.join("snap-remote").exists() {
        remote_verifies(a, &url, &format!("{at}, after the kill"));
    }
    // What breaks an invariant without stopping the round (so a long run counts each kind
    // of failure): reported together at the end of the round.
    let mut broke: Vec<String> = Vec::new();
    if kind.base() == Base::Expunged || expunged_all(a) {
        let found = secret_anywhere(a);
        if !found.is_empty() {
            t.secret_in_packs += u32::from(found.iter().any(|f| f.contains("/.snap/packs/")));
            t.secret_in_tmp += u32::from(found.iter().any(|f| f.contains("/.snap/tmp/")));
            broke.push(format!(
                "{at}: after the kill and `snap recover`, the expunged token is in the store: \
                 {found:?}"
            ));
        }
    }
    if kind == Kind::Clone {
        settle_clone(round, workspace, clean, at, t, &mut broke);
        assert!(broke.is_empty(), "{}", broke.join("\n"));
        return;
    }

    // (5) The command again, to the end.
    let again = snap(&dir, &argv);
    assert!(
        again.status.success(),
        "{at}: the retry failed: {}",
        stderr(&again)
    );
    let done = listed(a);
    check_history(
        kind,
        &before,
        &done,
        &clean.listed,
        at,
        "after the retry",
        t,
    );
    let at = &format!("{at}, after the retry");
    assert_eq!(everything(a), files, "{at}: the working tree changed");
    store_verifies(a, at);
    remote_verifies(a, &url, at);
    assert_eq!(
        staged(a),
        Vec::<String>::new(),
        "{at}: staging left under .snap/tmp"
    );
    if kind.secret_gone() {
        assert_eq!(
            secret_anywhere(a),
            Vec::<String>::new(),
            "{at}: the token is in the store"
        );
    }
    match kind {
        Kind::Push | Kind::PushFresh | Kind::PushExpunged => {
            let (code, doc, err) = run_json(a, &["push", &url]);
            assert!(
                code == Some(0) && doc["up_to_date"] == true,
                "{at}: {doc} {err}"
            );
            // How many records, refs (by number) and expunged ids an unkilled push leaves (a
            // killed one may also leave packs no ref names). Counted, not named: an
            // encrypted remote's names are tokens under its own key.
            let named = |keys: BTreeSet<String>| -> BTreeMap<String, usize> {
                let kept = ["snapshots/", "expunged/", "refs/"];
                let mut counts = BTreeMap::new();
                for key in keys {
                    let key = key.strip_prefix("sealed/").unwrap_or(&key);
                    let Some(folder) = kept.iter().find(|p| key.starts_with(**p)) else {
                        continue;
                    };
                    let n = (*folder == "refs/").then(|| key.rsplit('/').next().unwrap_or(""));
                    *counts
                        .entry(format!("{folder}{}", n.unwrap_or("")))
                        .or_insert(0) += 1;
                }
                counts
            };
            assert_eq!(
                named(remote_keys(&remote_dir)),
                named(clean.remote.clone()),
                "{at}: the remote's records, refs and expunged ids"
            );
            let (cloned, tree) = clone_of(r, &url, workspace, "check", at);
            assert_eq!(cloned.ids, done.ids, "{at}: the clone's history is a's");
            let mut mine = on_disk(a, true);
            if kind == Kind::PushExpunged {
                // Still on disk, out of history and in exclude_paths.
                mine.remove("secret.txt");
            }
            assert_eq!(tree, mine, "{at}: the clone's tree is a's");
        }
        Kind::Expunge => {
            let found = snap_store::testing::store_holds(&remote_dir, TOKEN.as_bytes());
            assert_eq!(
                found,
                Vec::<String>::new(),
                "{at}: the token is on the remote"
            );
            assert!(
                !a.join(".snap/expunge-remotes").exists(),
                "{at}: left pending"
            );
            let (cloned, _) = clone_of(r, &url, workspace, "check", at);
            assert_eq!(cloned.ids, done.ids, "{at}: the clone's history is a's");
        }
        Kind::GcMark | Kind::GcDelete => {
            // What the killed run marked, the retry (grace 0) may have deleted already: one
            // more collection, and the remote is where an unkilled mark and delete leave it.
            ok(a, &["gc", "--remote", &url, "--grace", "0"]);
            assert_eq!(
                remote_keys(&r.join("remote")),
                *settled_gc,
                "{at}: the remote is not where an unkilled mark and delete leave it"
            );
            let (cloned, _) = clone_of(r, &url, workspace, "check", at);
            assert_eq!(cloned.ids, done.ids, "{at}: the clone's history is a's");
            let c = workspace_of(&r.join("c"));
            let (of_c, _) = clone_of(r, &url, &c, "check-c", at);
            assert_eq!(
                of_c.ids,
                listed(&r.join("c")).ids,
                "{at}: c's history on the remote"
            );
        }
        _ => {}
    }
    assert!(broke.is_empty(), "{}", broke.join("\n"));
}

/// True when a's history holds `secret.txt` nowhere (an expunge's rewrite landed).
fn expunged_all(a: &Path) -> bool {
    let dry = json(a, &["expunge", "secret.txt", "--dry-run"]);
    dry["renamed"].as_array().is_some_and(Vec::is_empty)
}

/// (1) and (2): nothing lost, no phantom.
fn check_history(
    kind: Kind,
    before: &Listed,
    now: &Listed,
    clean: &Listed,
    at: &str,
    when: &str,
    t: &mut Tally,
) {
    assert_eq!(now.head, before.head, "{at}, {when}: HEAD moved");
    match kind {
        Kind::Expunge => {
            assert_eq!(
                now.lines, before.lines,
                "{at}, {when}: the snapshots (sequence numbers, messages) changed"
            );
            assert_eq!(now.lines, clean.lines, "{at}, {when}");
            if now.ids != before.ids {
                assert_eq!(
                    now.ids, clean.ids,
                    "{at}, {when}: a rewrite other than the clean one"
                );
                if when == "after the kill" {
                    t.landed += 1;
                }
            }
        }
        Kind::Pull | Kind::PullExpunged => {
            assert_eq!(now.ids, before.ids, "{at}, {when}: own history changed");
            let all = now.pulled == clean.pulled;
            assert!(
                all || (now.pulled == before.pulled && when == "after the kill"),
                "{at}, {when}: pulled {} snapshot(s) where an unkilled pull takes {} (had {})",
                now.pulled.len(),
                clean.pulled.len(),
                before.pulled.len()
            );
            if all && when == "after the kill" {
                t.landed += 1;
            }
        }
        _ => {
            assert_eq!(now.ids, before.ids, "{at}, {when}: own history changed");
            assert_eq!(
                now.pulled, before.pulled,
                "{at}, {when}: pulled snapshots changed"
            );
        }
    }
}

/// A killed clone: its store in the destination (recovered, and whole), or a retry into the
/// same destination that succeeds (when it is refused, that is noted in `broke`, and the
/// clone is made in a new directory); either way the clone is the unkilled one's, and no
/// staging directory of it is left beside.
fn settle_clone(
    round: &Round,
    workspace: &str,
    clean: &Clean,
    at: &str,
    t: &mut Tally,
    broke: &mut Vec<String>,
) {
    let r = &round.r;
    let mut name = "b";
    let mut dest = round.dest.clone();
    let entries: Vec<String> = std::fs::read_dir(&dest)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let retried = !dest.join(".snap").is_dir();
    if !retried {
        t.clone_left_store += 1;
        let recovered = snap(&dest, &["recover"]);
        assert!(
            recovered.status.success(),
            "{at}: recover in the clone: {}",
            stderr(&recovered)
        );
    } else {
        if !entries.is_empty() {
            t.clone_left_debris += 1;
        }
        let again = snap(
            r,
            &["clone", &round.url, name, "--workspace", &workspace[..8]],
        );
        if !again.status.success() {
            let staging = entries.iter().any(|e| e.starts_with(".snap-export-"));
            let why = match staging {
                true => {
                    t.clone_refused_export += 1;
                    "the destination holds a killed export's staging directory"
                }
                false => {
                    t.clone_refused_files += 1;
                    "the destination holds HEAD's files and no store (docs/SAFETY.md, \
                     \"Not yet covered\")"
                }
            };
            broke.push(format!(
                "{at}: a retried clone into the same destination failed: {why} ({} held \
                 {entries:?}): {}",
                dest.display(),
                stderr(&again).trim()
            ));
            name = "b2";
            dest = r.join(name);
            let elsewhere = snap(
                r,
                &["clone", &round.url, name, "--workspace", &workspace[..8]],
            );
            assert!(
                elsewhere.status.success(),
                "{at}: a clone into a new directory failed too: {}",
                stderr(&elsewhere)
            );
        }
    }
    let at = &format!("{at}, settled");
    store_verifies(&dest, at);
    let (want_log, want_tree) = clean.cloned.as_ref().unwrap();
    let got = listed(&dest);
    assert_eq!(got.ids, want_log.ids, "{at}: the clone's history");
    assert_eq!(got.head, want_log.head, "{at}: the clone's HEAD");
    assert_eq!(&on_disk(&dest, true), want_tree, "{at}: the clone's tree");
    let st = json(&dest, &["status"]);
    assert_eq!(st["clean"], true, "{at}: {st}");
    let prefix = format!(".{name}.snap-clone-");
    let beside: Vec<String> = std::fs::read_dir(r)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&prefix))
        .collect();
    if retried {
        assert_eq!(
            beside,
            Vec::<String>::new(),
            "{at}: a clone's staging is left beside"
        );
    } else if !beside.is_empty() {
        eprintln!("{at}: a killed clone's staging is left beside its finished clone: {beside:?}");
    }
}
