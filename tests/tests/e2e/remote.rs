//! `snap remote`, `push`, `clone` and `verify --remote` as a person uses them: on a
//! `file://` remote always, and on a real S3 server (SeaweedFS, started here on 127.0.0.1
//! and stopped by pid) when `weed` is installed. Without it the S3 test says it skipped;
//! with `SNAP_REQUIRE_S3` set (CI) that is a failure.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use snap_e2e::seaweed::Seaweed;

use snap_e2e::*;

/// A small repository-like tree: nested directories, an executable, a symlink, binary data.
fn make_tree(d: &Path) {
    for i in 0..40 {
        let path = format!("src/mod{}/sub{}/file{i}.rs", i % 5, i % 3);
        write(
            d,
            &path,
            format!("pub fn f{i}() -> u32 {{ {i} }}\n")
                .repeat(30)
                .as_bytes(),
        );
    }
    write(d, "bin/run.sh", b"#!/bin/sh\necho run\n");
    chmod(d, "bin/run.sh", 0o755);
    std::os::unix::fs::symlink("bin/run.sh", d.join("run")).unwrap();
    let noise: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    write(d, "data/blob.bin", &noise);
}

fn ids(d: &Path) -> Vec<String> {
    let log = json(d, &["log", "--all"]);
    let snaps = log["snapshots"].as_array().unwrap();
    snaps
        .iter()
        .map(|s| s["id"].as_str().unwrap().to_string())
        .collect()
}

/// The workspace id a store records (`.snap/workspace`: magic and version, 8 bytes, then
/// the id, 16; FORMAT.md 4.9), as hex.
fn workspace_of(d: &Path) -> String {
    let ident = std::fs::read(d.join(".snap/workspace")).unwrap();
    ident[8..24].iter().map(|b| format!("{b:02x}")).collect()
}

/// Saves, pushes, pushes a change, clones and undoes in the clone, against `url`; `env`
/// is added to every call (credentials, endpoint).
fn round_trip(url: &str, env: &[(&str, String)]) {
    let top = tempfile::tempdir().unwrap();
    let (a, b) = (top.path().join("a"), top.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    make_tree(&a);
    let run = |dir: &Path, args: &[&str]| {
        let mut cmd = snap_cmd(dir, args);
        cmd.envs(env.iter().map(|(k, v)| (k, v)));
        let out = cmd.output().unwrap();
        assert!(out.status.success(), "snap {args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    };
    let run_json = |dir: &Path, args: &[&str]| -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&run(dir, &all)).unwrap()
    };
    run(&a, &["save", "-m", "one"]);
    write(&a, "src/mod1/sub1/file1.rs", b"changed\n");
    run(&a, &["save", "-m", "two"]);
    run(&a, &["remote", "add", "--create", "origin", url]);
    let first = run_json(&a, &["push"]);
    assert_eq!(first["records"], 2);
    write(&a, "src/mod2/sub2/file2.rs", b"changed again\n");
    run(&a, &["save", "-m", "three"]);
    let second = run_json(&a, &["push"]);
    assert_eq!(second["records"], 1);
    let (sent1, sent2) = (
        first["bytes"].as_u64().unwrap(),
        second["bytes"].as_u64().unwrap(),
    );
    assert!(
        sent2 * 50 < sent1,
        "a push of one change sent {sent2} bytes after {sent1}"
    );
    assert_eq!(run_json(&a, &["push"])["up_to_date"], true);
    assert_eq!(
        run_json(&a, &["verify", "--remote", "--read-data"])["ok"],
        true
    );

    let cloned = run_json(top.path(), &["clone", url, "b"]);
    assert_eq!(cloned["snapshots"], 3);
    assert_eq!(
        cloned["saved"],
        serde_json::Value::Null,
        "a clone's first save records nothing"
    );
    assert_eq!(on_disk(&a, true), on_disk(&b, true), "the clone's tree");
    assert_eq!(ids(&a), ids(&b), "the clone's history");
    assert_eq!(run_json(&b, &["status"])["clean"], true);
    let before = everything(&b);
    run(&b, &["undo"]);
    assert_conserved(&b, &before, "undo in a clone");
    assert_eq!(
        read(&b, "src/mod2/sub2/file2.rs"),
        read(&a, "src/mod2/sub2/file2.rs")
            .replace("changed again\n", &"pub fn f2() -> u32 { 2 }\n".repeat(30))
    );
    run(&b, &["redo"]);
    assert_eq!(on_disk(&a, true), on_disk(&b, true));
    assert_eq!(run_json(&b, &["verify", "--read-data"])["ok"], true);

    // The clone saves and pushes back (its own workspace); the first pulls it apart.
    write(&b, "from-b.txt", b"written in the clone\n");
    run(&b, &["save", "-m", "in b"]);
    run(&b, &["push"]);
    let head_a = json(&a, &["log", "-n", "1"])["head"].clone();
    let pulled = run_json(&a, &["pull"]);
    assert_eq!(
        pulled["snapshots"], 1,
        "only b's own new snapshot: {pulled}"
    );
    assert_eq!(run_json(&a, &["pull"])["snapshots"], 0);
    assert_eq!(
        json(&a, &["log", "-n", "1"])["head"],
        head_a,
        "a pull never moves HEAD"
    );
    let listed = run_json(&a, &["log", "--all"]);
    assert_eq!(listed["pulled"][0]["name"], "origin#4");
    assert!(run(&a, &["log", "--all"]).contains("pulled origin#4"));
    assert!(run(&a, &["diff", "@", "origin#4", "--name-status"]).contains("from-b.txt"));
    let before = everything(&a);
    run(&a, &["restore", "origin#4"]);
    assert_conserved(&a, &before, "restore of a pulled snapshot");
    assert_eq!(on_disk(&a, true), on_disk(&b, true));
    run(&a, &["gc"]);
    assert_eq!(run_json(&a, &["verify", "--read-data"])["ok"], true);

    // a drops its oldest snapshot, pushes, and collects the remote in two rounds.
    run(&a, &["prune", "--keep-last", "1"]);
    run(&a, &["gc"]);
    run(&a, &["push"]);
    // b's ref still names the snapshots a dropped: a cannot judge their reach until a pull.
    let mut lacking = snap_cmd(&a, &["gc", "--remote", "--grace", "0"]);
    let lacking = lacking
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert!(
        stderr(&lacking).contains("snap pull"),
        "{}",
        stderr(&lacking)
    );
    run(&a, &["pull"]);
    let marked = run_json(&a, &["gc", "--remote", "--grace", "0"]);
    assert_eq!(marked["deleted"], 0, "{marked}");
    assert!(marked["refs_deleted"].as_u64().unwrap() >= 2, "{marked}");
    let deleted = run_json(&a, &["gc", "--remote", "--grace", "0"]);
    assert_eq!(deleted["deleted"], marked["marked"], "{deleted}");
    assert_eq!(
        run_json(&a, &["verify", "--remote", "--read-data"])["ok"],
        true
    );
    let c = top.path().join("c");
    run(
        top.path(),
        &["clone", url, "c", "--workspace", &workspace_of(&a)[..8]],
    );
    assert_eq!(on_disk(&a, true), on_disk(&c, true));

    let again = snap_cmd(top.path(), &["clone", url, "b"])
        .envs(env.iter().map(|(k, v)| (k, v)))
        .output()
        .unwrap();
    assert_eq!(
        again.status.code(),
        Some(1),
        "a clone into a non-empty directory is refused"
    );
    assert!(stderr(&again).starts_with("error: "), "{}", stderr(&again));
}

#[test]
fn a_file_remote_round_trip() {
    let top = tempfile::tempdir().unwrap();
    round_trip(
        &format!("file://{}", top.path().join("remote").display()),
        &[],
    );
}

#[test]
fn bad_remotes_are_refused_with_one_error_line() {
    let d = tempfile::tempdir().unwrap();
    let d = d.path();
    write(d, "a.txt", b"a\n");
    ok(d, &["save"]);
    for args in [
        &["remote", "add", "origin", "ftp://x/y"][..],
        &["remote", "add", "bad name", "file:///tmp/x"],
        &["remote", "remove", "nothing"],
        &["push"],
        &["push", "nowhere"],
        &["clone", "file:///nonexistent-snap-remote", "c"],
        &["remote", "add", "typo", "file:///nonexistent-snap-remote"],
        &["verify", "--remote", "file:///nonexistent-snap-remote"],
        &["pull", "file:///nonexistent-snap-remote"],
        &["gc", "--remote", "file:///nonexistent-snap-remote"],
        &["verify", "--remote", "file:///tmp"],
        &["push", "s3://snaptest/../otherbkt/x"],
        &["push", "s3://Bad_Bucket/x"],
        &["push", "file:///tmp/a/../b"],
        &["remote", "add", "mem", "memory://x"],
        &["push", "memory://x"],
    ] {
        let out = snap(d, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    assert!(!Path::new("/nonexistent-snap-remote").exists());
}

/// A pack overwritten and another truncated on the remote: `verify --remote --read-data`
/// names both and the fix, a plain push (reading listings) leaves them, `push --repair`
/// sends their objects again, and a clone then holds the whole history (issue 54, item 12).
#[test]
fn push_repair_heals_an_overwritten_and_a_truncated_pack() {
    let top = tempfile::tempdir().unwrap();
    let (a, remote) = (top.path().join("a"), top.path().join("remote"));
    std::fs::create_dir(&a).unwrap();
    make_tree(&a);
    ok(&a, &["save", "-m", "one"]);
    let url = format!("file://{}", remote.display());
    ok(&a, &["push", &url]);
    write(
        &a,
        "src/mod1/sub1/file1.rs",
        &b"pub fn changed() {}\n".repeat(500),
    );
    ok(&a, &["save", "-m", "two"]);
    ok(&a, &["push", &url]);
    let mut packs: Vec<PathBuf> = std::fs::read_dir(remote.join("sealed/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    packs.sort();
    assert_eq!(packs.len(), 2, "two pushes, two packs");
    let len = std::fs::metadata(&packs[0]).unwrap().len() as usize;
    std::fs::write(&packs[0], vec![0x5a; len]).unwrap();
    let whole = std::fs::read(&packs[1]).unwrap();
    std::fs::write(&packs[1], &whole[..whole.len() / 2]).unwrap();

    let verified = snap(&a, &["verify", "--remote", &url, "--read-data"]);
    assert_eq!(verified.status.code(), Some(1));
    let said = String::from_utf8_lossy(&verified.stdout).to_string();
    assert_eq!(said.matches("push --repair").count(), 2, "{said}");
    ok(&a, &["push", &url]);
    assert_eq!(
        snap(&a, &["verify", "--remote", &url, "--read-data"])
            .status
            .code(),
        Some(1)
    );

    let repaired = json(&a, &["push", "--repair", &url]);
    assert_eq!(
        repaired["repaired"].as_array().unwrap().len(),
        2,
        "{repaired}"
    );
    ok(&a, &["verify", "--remote", &url, "--read-data"]);
    ok(top.path(), &["clone", &url, "b"]);
    assert_eq!(ids(&a), ids(&top.path().join("b")));
    assert_eq!(tree_digest(&a), tree_digest(&top.path().join("b")));
}

/// On SeaweedFS, an encrypted remote's objects, read through the filer as anyone with read
/// access to the bucket reads them, show no content, name or id; a clone is whole.
fn s3_bucket_shows_nothing(server: &Seaweed, env: &[(&str, String)]) {
    let top = tempfile::tempdir().unwrap();
    let a = top.path().join("a");
    std::fs::create_dir(&a).unwrap();
    make_tree(&a);
    write(
        &a,
        ".env",
        b"AWS_SECRET_ACCESS_KEY=s3-scan-secret-0000000000000000\n",
    );
    ok(&a, &["save"]);
    let url = "s3://snaptest/scan";
    let add = snap_env(&a, env, &["--json", "remote", "add", "origin", url]);
    assert!(add.status.success(), "{}", stderr(&add));
    assert!(snap_env(&a, env, &["push"]).status.success());
    let objects = server.objects("scan");
    let files = objects.iter().filter(|(_, b)| !b.is_empty()).count();
    assert!(files >= 5, "{objects:?}");
    assert_shows_nothing(&objects, &must_not_show(&a));
    let out = snap_env(top.path(), env, &["clone", url, "c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(on_disk(&a, true), on_disk(&top.path().join("c"), true));
}

/// On SeaweedFS, a secret pushed in one pack with files that stay leaves the bucket: the
/// expunge (grace 0) rewrites the pack, and no pack object the filer serves holds the token,
/// frames decompressed; a clone is whole.
fn s3_expunge_rewrites_the_pack(server: &Seaweed, env: &[(&str, String)]) {
    const TOKEN: &str = "ghp_S3xExpungeToken0000000000000000000000";
    let top = tempfile::tempdir().unwrap();
    let a = top.path().join("a");
    std::fs::create_dir(&a).unwrap();
    make_tree(&a);
    write(&a, "secret.txt", format!("token={TOKEN}\n").as_bytes());
    ok(&a, &["save"]);
    write(&a, "README.md", b"# changed\n");
    ok(&a, &["save"]);
    let url = "s3://snaptest/expunged";
    // Plain, so the token is there to look for before the expunge (the encrypted layout
    // never shows it: the scan test's).
    let add = snap_env(
        &a,
        env,
        &["remote", "add", "--no-encryption", "origin", url],
    );
    assert!(add.status.success(), "{}", stderr(&add));
    assert!(snap_env(&a, env, &["push"]).status.success());
    let packs = |name: &str| {
        let into = top.path().join(name);
        std::fs::create_dir(&into).unwrap();
        let n = server.copy_objects("expunged", "packs", &into);
        (snap_store::testing::store_holds(&into, TOKEN.as_bytes()), n)
    };
    let (before, n) = packs("before");
    assert!(
        n > 0 && !before.is_empty(),
        "the pushed pack holds the token ({n} packs)"
    );
    let out = snap_env(
        &a,
        env,
        &["--json", "expunge", "secret.txt", "--yes", "--grace", "0"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["remotes"][0]["stale_packs"], 1, "{doc}");
    let (after, n) = packs("after");
    assert!(n > 0 && after.is_empty(), "{after:?} ({n} packs)");
    let check = snap_env(&a, env, &["verify", "--remote", url, "--read-data"]);
    assert!(check.status.success(), "{}", stderr(&check));
    let out = snap_env(top.path(), env, &["clone", url, "c"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = top.path().join("c");
    assert_eq!(on_disk(&c, true).len() + 1, on_disk(&a, true).len());
}

fn snap_env(dir: &Path, env: &[(&str, String)], args: &[&str]) -> std::process::Output {
    let mut cmd = snap_cmd(dir, args);
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    cmd.output().unwrap()
}

#[test]
fn s3_round_trip_two_writers_and_a_killed_push_on_seaweedfs() {
    let Some(server) = Seaweed::start() else {
        return;
    };
    let env = server.env();
    round_trip("s3://snaptest/round", &env);

    // Two workspaces push to one remote at once; each clones back apart.
    let top = tempfile::tempdir().unwrap();
    let dirs: Vec<PathBuf> = (0..2).map(|i| top.path().join(format!("w{i}"))).collect();
    for (i, d) in dirs.iter().enumerate() {
        std::fs::create_dir(d).unwrap();
        make_tree(d);
        write(d, "own.txt", format!("writer {i}\n").as_bytes());
        ok(d, &["save"]);
    }
    let url = "s3://snaptest/shared";
    std::thread::scope(|s| {
        for d in &dirs {
            let env = &env;
            s.spawn(move || assert!(snap_env(d, env, &["push", url]).status.success()));
        }
    });
    let which = snap_env(top.path(), &env, &["clone", url, "x"]);
    assert!(stderr(&which).contains("workspaces"), "{}", stderr(&which));
    for (i, d) in dirs.iter().enumerate() {
        let id = workspace_of(d);
        let into = format!("c{i}");
        let out = snap_env(
            top.path(),
            &env,
            &["clone", url, &into, "--workspace", &id[..8.min(id.len())]],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(on_disk(d, true), on_disk(&top.path().join(&into), true));
    }

    s3_bucket_shows_nothing(&server, &env);
    s3_expunge_rewrites_the_pack(&server, &env);
    crate::s3_kill::killed_transfers_on_s3(&server, &env);

    // A push killed (-9) after its first pack, then resumed: the remote is whole.
    if test_hooks() {
        let d = &dirs[0];
        write(d, "more/big.bin", &[7u8; 100].repeat(300_000));
        ok(d, &["save"]);
        let killed = snap_cmd(d, &["push", "s3://snaptest/killed"])
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env("SNAP_FAILPOINT", "push-after-pack")
            .output()
            .unwrap();
        assert_eq!(killed.status.code(), None, "{}", stderr(&killed));
        let resumed = snap_env(d, &env, &["--json", "push", "s3://snaptest/killed"]);
        assert!(resumed.status.success(), "{}", stderr(&resumed));
        let check = snap_env(
            d,
            &env,
            &[
                "--json",
                "verify",
                "--remote",
                "s3://snaptest/killed",
                "--read-data",
            ],
        );
        assert!(check.status.success(), "{}", stderr(&check));
        let out = snap_env(top.path(), &env, &["clone", "s3://snaptest/killed", "k"]);
        assert!(out.status.success(), "{}", stderr(&out));
        assert_eq!(on_disk(d, true), on_disk(&top.path().join("k"), true));
    }
}

/// Every directory under `store` that is 0700, and every file 0600 or less: the ones that are
/// not, with their modes.
fn open_to_others(store: &Path) -> Vec<String> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    let mut dirs = vec![store.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let mode = std::fs::symlink_metadata(&dir)
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        if mode != 0o700 {
            out.push(format!("{} {mode:o}", dir.display()));
        }
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = entry.metadata().unwrap();
            let mode = meta.permissions().mode() & 0o777;
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if mode & 0o077 != 0 {
                out.push(format!("{} {mode:o}", entry.path().display()));
            }
        }
    }
    out
}

/// A clone's store and the packs a pull brings are no other local user's to read (issue 54,
/// item 7): every directory of `.snap/` 0700, every file 0600, and uid 65534 (as root runs
/// the suite) cannot read a pack.
#[test]
fn cloned_and_pulled_stores_are_their_owner_s_alone() {
    let top = tempfile::tempdir().unwrap();
    let (a, b, remote) = (
        top.path().join("a"),
        top.path().join("b"),
        top.path().join("remote"),
    );
    std::fs::create_dir(&a).unwrap();
    let url = format!("file://{}", remote.display());
    write(&a, "private.txt", b"only mine\n");
    chmod(&a, "private.txt", 0o600);
    ok(&a, &["save"]);
    ok(&a, &["remote", "add", "--create", "origin", &url]);
    ok(&a, &["push"]);
    ok(top.path(), &["clone", &url, "b"]);
    write(&b, "more.txt", b"from the clone\n");
    ok(&b, &["save"]);
    ok(&b, &["push"]);
    let pulled = json(&a, &["pull"]);
    assert_eq!(pulled["snapshots"], 1, "{pulled}");
    for store in [a.join(".snap"), b.join(".snap")] {
        assert_eq!(open_to_others(&store), Vec::<String>::new());
    }
    let root = rustix::process::geteuid().is_root();
    if !(root && Path::new("/usr/bin/setpriv").exists()) {
        eprintln!("skipped the uid 65534 read: needs root and setpriv");
        return;
    }
    for store in [a.join(".snap"), b.join(".snap")] {
        let pack = std::fs::read_dir(store.join("packs"))
            .unwrap()
            .flatten()
            .next()
            .unwrap()
            .path();
        let read = Command::new("/usr/bin/setpriv")
            .args([
                "--reuid",
                "65534",
                "--regid",
                "65534",
                "--clear-groups",
                "cat",
            ])
            .arg(&pack)
            .output()
            .unwrap();
        assert!(!read.status.success(), "uid 65534 read {}", pack.display());
    }
}

/// Every object file under a `file://` remote: its key (path below the root) and bytes.
fn bucket(root: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                let key = path.strip_prefix(root).unwrap().display().to_string();
                out.push((key, std::fs::read(&path).unwrap()));
            }
        }
    }
    out
}

fn unhex(hex: &str) -> Vec<u8> {
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

/// What a reader of an encrypted remote's bucket must not find: 16-byte pieces of every
/// tracked file, every path and every name of 6 bytes or more, the snapshot ids, the
/// workspace id and the local pack names, ids in hex and in binary.
fn must_not_show(a: &Path) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    // Names shorter than 6 bytes would turn up in ciphertext by chance.
    for (path, bytes) in on_disk(a, false) {
        let names = std::iter::once(path.as_str()).chain(path.split('/'));
        out.extend(
            names
                .filter(|n| n.len() >= 6)
                .map(|n| n.as_bytes().to_vec()),
        );
        out.extend(bytes.chunks_exact(16).step_by(61).map(<[u8]>::to_vec));
    }
    let mut ids = ids(a);
    ids.push(workspace_of(a));
    for entry in std::fs::read_dir(a.join(".snap/packs")).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        ids.push(name.trim_end_matches(".pack").to_string());
    }
    for id in ids {
        out.push(unhex(&id));
        out.push(id.into_bytes());
    }
    out
}

/// Nothing of `must` in any object's key or bytes.
fn assert_shows_nothing(objects: &[(String, Vec<u8>)], must: &[Vec<u8>]) {
    assert!(objects.len() > 5, "{} objects", objects.len());
    for needle in must {
        for (key, body) in objects {
            let found = |hay: &[u8]| hay.windows(needle.len()).any(|w| w == needle.as_slice());
            assert!(
                !found(body) && !found(key.as_bytes()),
                "{key} shows {:?}",
                String::from_utf8_lossy(needle)
            );
        }
    }
}

/// A new remote is encrypted: the bucket shows no content, name or id; a clone opens it
/// with the passphrase only (a wrong one fails and makes nothing); keys are added and
/// removed; the store keeps the key 0600; a plain remote is named and moved.
#[test]
fn an_encrypted_remote_shows_nothing_and_opens_with_its_passphrase_only() {
    use std::os::unix::fs::PermissionsExt;
    let top = tempfile::tempdir().unwrap();
    let (a, remote) = (top.path().join("a"), top.path().join("remote"));
    std::fs::create_dir(&a).unwrap();
    make_tree(&a);
    write(
        &a,
        ".env",
        b"OPENAI_API_KEY=sk-proj-encrypted-remote-test-0001\n",
    );
    ok(&a, &["save", "-m", "one"]);
    write(&a, "src/mod1/sub1/file1.rs", b"changed in two\n");
    ok(&a, &["save", "-m", "two"]);
    let url = format!("file://{}", remote.display());
    let added = json(&a, &["remote", "add", "--create", "origin", &url]);
    assert_eq!(added["encrypted"], true, "{added}");
    ok(&a, &["push"]);
    assert_shows_nothing(&bucket(&remote), &must_not_show(&a));
    let keys: Vec<_> = std::fs::read_dir(a.join(".snap/remote-keys"))
        .unwrap()
        .collect();
    assert_eq!(keys.len(), 1);
    let file = keys[0].as_ref().unwrap().path();
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600, "the key file is its owner's alone");
    assert_eq!(mode(file.parent().unwrap()), 0o700);

    // A wrong passphrase: one error line, nothing made.
    let wrong = snap_cmd(top.path(), &["clone", &url, "wrong"])
        .env("SNAP_REMOTE_PASSWORD", "not it")
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(1));
    assert_eq!(
        stderr(&wrong),
        "error: no key of this remote opens with that passphrase\n"
    );
    assert!(
        !top.path().join("wrong").exists(),
        "a failed clone made its directory"
    );
    let names: Vec<_> = std::fs::read_dir(top.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(names.len(), 2, "only a and the remote: {names:?}");
    // No passphrase and no terminal: told where to give it.
    let none = snap_cmd(top.path(), &["clone", &url, "none"])
        .env_remove("SNAP_REMOTE_PASSWORD")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        stderr(&none).contains("SNAP_REMOTE_PASSWORD"),
        "{}",
        stderr(&none)
    );

    // A second passphrase, then the first removed: the old one stops opening it.
    let second = snap_cmd(&a, &["remote", "key", "add"])
        .env("SNAP_REMOTE_NEW_PASSWORD", "second passphrase")
        .output()
        .unwrap();
    assert!(second.status.success(), "{}", stderr(&second));
    let listed = json(&a, &["remote", "key", "list"]);
    assert_eq!(listed["keys"].as_array().unwrap().len(), 2, "{listed}");
    ok(&a, &["remote", "key", "remove", "keys/initial"]);
    let last = snap(&a, &["remote", "key", "list"]);
    assert!(last.status.success());
    let only = String::from_utf8_lossy(&last.stdout)
        .lines()
        .next()
        .unwrap()
        .to_string();
    let refused = snap(
        &a,
        &["remote", "key", "remove", only.split('\t').next().unwrap()],
    );
    assert!(
        stderr(&refused).contains("last key object"),
        "{}",
        stderr(&refused)
    );
    let old = snap(top.path(), &["clone", &url, "old"]);
    assert_eq!(
        stderr(&old),
        "error: no key of this remote opens with that passphrase\n"
    );
    let pass_file = top.path().join("pass");
    std::fs::write(&pass_file, "second passphrase\n").unwrap();
    let b = top.path().join("b");
    ok(
        top.path(),
        &[
            "clone",
            &url,
            "b",
            "--password-file",
            pass_file.to_str().unwrap(),
        ],
    );
    assert_eq!(
        on_disk(&a, true),
        on_disk(&b, true),
        "the clone is byte-identical"
    );
    assert_eq!(ids(&a), ids(&b));
    // The clone keeps the key: its push needs no passphrase.
    write(&b, "from-b.txt", b"b\n");
    ok(&b, &["save"]);
    let pushed = snap_cmd(&b, &["push"])
        .env_remove("SNAP_REMOTE_PASSWORD")
        .output()
        .unwrap();
    assert!(pushed.status.success(), "{}", stderr(&pushed));
    ok(&a, &["verify", "--remote", "--read-data"]);
}

/// A remote added with `--no-encryption` holds the history in the clear, is named by
/// `remote list` and `doctor`, and `snap remote encrypt` moves it: then nothing shows,
/// and a clone with the passphrase is whole.
#[test]
fn a_plain_remote_is_named_and_moved_to_the_encrypted_layout() {
    let top = tempfile::tempdir().unwrap();
    let (a, remote) = (top.path().join("a"), top.path().join("remote"));
    std::fs::create_dir(&a).unwrap();
    make_tree(&a);
    ok(&a, &["save", "-m", "one"]);
    let url = format!("file://{}", remote.display());
    let added = json(
        &a,
        &[
            "remote",
            "add",
            "--create",
            "--no-encryption",
            "plain",
            &url,
        ],
    );
    assert_eq!(added["encrypted"], false, "{added}");
    ok(&a, &["push"]);
    assert!(ok(&a, &["remote", "list"]).contains("NOT encrypted"));
    let doctor = json(&a, &["doctor"]);
    assert_eq!(doctor["unencrypted_remotes"], serde_json::json!(["plain"]));
    assert!(ok(&a, &["doctor"]).contains("snap remote encrypt plain"));
    let moved = json(&a, &["remote", "encrypt"]);
    assert!(moved["copied"].as_u64().unwrap() > 0, "{moved}");
    assert_eq!(
        json(&a, &["doctor"])["unencrypted_remotes"],
        serde_json::json!([])
    );
    assert_shows_nothing(&bucket(&remote), &must_not_show(&a));
    let marker = std::fs::read_to_string(remote.join("snap-remote")).unwrap();
    assert_eq!(marker, "snap-remote 2\n");
    ok(top.path(), &["clone", &url, "b"]);
    assert_eq!(on_disk(&a, true), on_disk(&top.path().join("b"), true));
    write(&a, "after.txt", b"after the move\n");
    ok(&a, &["save"]);
    assert_eq!(json(&a, &["push"])["records"], 1);
}
