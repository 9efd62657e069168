//! The SeaweedFS half of the transfer kill suite (`transfer_kill.rs` is the `file://` half,
//! with every command): `push` and `expunge` (which pushes, pulls where it must, repacks and
//! collects) against a real S3 server, killed with SIGKILL at random instants. Each round
//! takes a fresh prefix of the bucket and a copy of one workspace (8 snapshots, `secret.txt`
//! holding a token in 3..=8 beside files that stay), kills the command, runs `snap recover`,
//! then runs the command again, and checks:
//!
//! 1. nothing lost: the working tree is as it was (the conservation oracle holds), and the
//!    own history has as many snapshots as before, sequence numbers and messages kept;
//! 2. `verify --read-data` here and `verify --remote --read-data` on the prefix pass;
//! 3. a clone of the prefix has the workspace's history, id for id;
//! 4. after an expunge, no file under `.snap/` and no pack object the filer serves holds the
//!    token (frames decompressed), and no remote is left pending.
//!
//! Run from the S3 test of `remote.rs`, which owns the one server of the process. 6 rounds
//! by default; `SNAP_S3_KILL_ROUNDS`, `SNAP_S3_KILL_SEED` as in the `file://` half.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use snap_e2e::*;

use snap_e2e::seaweed::Seaweed;

const TOKEN: &str = "xoxb-4815162342-4815162342-S3KillRoundTokenZq";

/// snap with the server's credentials.
fn cmd(dir: &Path, env: &[(&str, String)], args: &[&str]) -> Command {
    let mut c = snap_cmd(dir, args);
    c.envs(env.iter().map(|(k, v)| (k, v)));
    c
}

fn run(dir: &Path, env: &[(&str, String)], args: &[&str], at: &str) -> Output {
    let out = cmd(dir, env, args).output().unwrap();
    assert!(
        out.status.success(),
        "{at}: snap {args:?}: {}",
        stderr(&out)
    );
    out
}

fn doc(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null)
}

/// The template: 8 snapshots, the token in 3..=8 with files that stay.
fn build(a: &Path) {
    std::fs::create_dir_all(a).unwrap();
    for i in 0..12 {
        let body = format!("pub fn f{i}() -> u32 {{ {i} }}\n").repeat(30);
        write(a, &format!("src/m{}/f{i}.rs", i % 3), body.as_bytes());
    }
    for n in 1..=8u32 {
        write(a, "README.md", format!("# app {n}\n").as_bytes());
        if n >= 3 {
            write(a, "secret.txt", format!("key={TOKEN}\nn={n}\n").as_bytes());
        }
        ok(a, &["save", "-m", &format!("step {n}")]);
    }
}

/// Own history: (sequence number, message) of each snapshot, and the ids.
fn history(a: &Path) -> (Vec<(u64, String)>, Vec<String>) {
    let log = json(a, &["log", "--all"]);
    let own = log["snapshots"].as_array().unwrap();
    let mut lines: Vec<(u64, String)> = (own.iter())
        .map(|s| {
            let msg = s["message"].as_str().unwrap_or_default().to_string();
            (s["seq"].as_u64().unwrap(), msg)
        })
        .collect();
    lines.sort();
    let mut ids: Vec<String> = (own.iter())
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    (lines, ids)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Push,
    Expunge,
}

/// Where round `n` starts: a copy of the template, and for an expunge, pushed whole.
fn prepare(
    tpl: &Path,
    r: &Path,
    url: &str,
    kind: Kind,
    env: &[(&str, String)],
) -> std::path::PathBuf {
    let a = r.join("a");
    let status = Command::new("cp").arg("-a").arg(tpl).arg(&a).status();
    assert!(status.unwrap().success());
    run(
        &a,
        env,
        &["remote", "add", "--no-encryption", "origin", url],
        "prepare",
    );
    if kind == Kind::Expunge {
        run(&a, env, &["push"], "prepare");
    }
    a
}

fn args(kind: Kind) -> Vec<&'static str> {
    match kind {
        Kind::Push => vec!["push"],
        Kind::Expunge => vec!["expunge", "secret.txt", "--yes", "--grace", "0"],
    }
}

pub(crate) fn killed_transfers_on_s3(server: &Seaweed, env: &[(&str, String)]) {
    let top = tempfile::tempdir().unwrap();
    let tpl = top.path().join("tpl");
    build(&tpl);
    // One unkilled run of each: how long it takes.
    let mut took = Vec::new();
    for (i, kind) in [Kind::Push, Kind::Expunge].into_iter().enumerate() {
        let r = top.path().join(format!("clean{i}"));
        std::fs::create_dir(&r).unwrap();
        let a = prepare(&tpl, &r, &format!("s3://snaptest/clean{i}"), kind, env);
        let started = Instant::now();
        run(&a, env, &args(kind), "unkilled");
        took.push(started.elapsed());
    }
    let rounds = env_number("SNAP_S3_KILL_ROUNDS", 6);
    let seed = env_number("SNAP_S3_KILL_SEED", 0x53_6b11);
    let mut rng = Lcg(seed);
    let mut killed = 0;
    for n in 0..rounds {
        let kind = [Kind::Push, Kind::Expunge][n as usize % 2];
        let full = took[n as usize % 2];
        let delay = Duration::from_micros(rng.below(full.as_micros() as u64 * 11 / 10));
        let at = format!("s3 round {n} (seed {seed:#x}): {kind:?} killed after {delay:?}");
        let r = top.path().join(format!("r{n}"));
        std::fs::create_dir(&r).unwrap();
        let prefix = format!("kill{n}");
        let url = format!("s3://snaptest/{prefix}");
        let a = prepare(&tpl, &r, &url, kind, env);
        killed += u32::from(one_round(
            server, env, &a, &r, kind, &url, &prefix, delay, &at,
        ));
    }
    eprintln!("s3 kill -9 (seed {seed:#x}): {rounds} rounds, {killed} killed while running");
}

/// One round; true when the command was still running when killed.
#[allow(clippy::too_many_arguments)]
fn one_round(
    server: &Seaweed,
    env: &[(&str, String)],
    a: &Path,
    r: &Path,
    kind: Kind,
    url: &str,
    prefix: &str,
    delay: Duration,
    at: &str,
) -> bool {
    let before = history(a);
    let files = everything(a);
    let mut child = cmd(a, env, &args(kind))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(delay);
    let running = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(
        running || out.status.success(),
        "{at}: failed alone: {}",
        stderr(&out)
    );
    run(a, env, &["recover"], at);
    assert_eq!(everything(a), files, "{at}: the working tree changed");
    assert_conserved(a, &files, at);
    assert_eq!(history(a).0, before.0, "{at}: the history's lines changed");
    run(a, env, &["verify", "--read-data"], at);

    run(a, env, &args(kind), &format!("{at}, the retry"));
    let at = &format!("{at}, after the retry");
    assert_eq!(everything(a), files, "{at}: the working tree changed");
    let (lines, ids) = history(a);
    assert_eq!(lines, before.0, "{at}: the history's lines changed");
    run(a, env, &["verify", "--read-data"], at);
    let check = run(
        a,
        env,
        &["--json", "verify", "--remote", url, "--read-data"],
        at,
    );
    assert_eq!(doc(&check)["ok"], true, "{at}: {}", doc(&check));
    run(r, env, &["clone", url, "check"], at);
    let (_, cloned) = history(&r.join("check"));
    assert_eq!(cloned, ids, "{at}: the clone's history is a's");
    if kind == Kind::Expunge {
        let held = snap_store::testing::store_holds(&a.join(".snap"), TOKEN.as_bytes());
        assert_eq!(
            held,
            Vec::<String>::new(),
            "{at}: the token is in the store"
        );
        assert!(
            !a.join(".snap/expunge-remotes").exists(),
            "{at}: left pending"
        );
        let packs = r.join("packs");
        std::fs::create_dir(&packs).unwrap();
        assert!(server.copy_objects(prefix, "packs", &packs) > 0, "{at}");
        let held = snap_store::testing::store_holds(&packs, TOKEN.as_bytes());
        assert_eq!(
            held,
            Vec::<String>::new(),
            "{at}: the token is on the remote"
        );
    }
    running
}
