//! `snap expunge` as a person uses it: an agent session writes a token into 50 snapshots;
//! `--secrets` lists it, `--yes` takes it out, the store (packs decompressed) no longer holds
//! it, undo and redo still work across the rewritten history, and bad input is refused.

use snap_e2e::*;

const TOKEN: &str = "sk-proj-Zx81Qm2Lr7Vb4Nw9Ty3Kp6Hs0Dc5Fg1Ja8Ue";

#[test]
fn an_agent_s_token_in_fifty_snapshots_is_listed_then_gone() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "README.md", b"# app\n");
    ok(d, &["save", "-m", "start"]);
    for n in 0..50 {
        write(
            d,
            ".env",
            format!("OPENAI_API_KEY={TOKEN}\nRUN={n}\n").as_bytes(),
        );
        write(d, "src/app.py", format!("print({n})\n").as_bytes());
        let step = (n / 5 + 1).to_string();
        ok(
            d,
            &[
                "save",
                "--session",
                "agent",
                "--step",
                &step,
                "--meta",
                "tool=Edit",
            ],
        );
    }
    let old_head = json(d, &["log", "-n", "1"])["snapshots"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        stdout_of(d, &["log", "--stats"]).contains(".env"),
        "log --stats names it"
    );

    let listed = json(d, &["expunge", "--secrets"]);
    assert_eq!(listed["dry_run"], true);
    assert_eq!(listed["secrets"][0]["path"], ".env");
    assert_eq!(listed["renamed"].as_array().unwrap().len(), 50);
    assert!(!snap_store::testing::store_holds(&d.join(".snap"), TOKEN.as_bytes()).is_empty());

    let before = everything(d);
    let done = json(d, &["expunge", "--secrets", "--yes"]);
    assert_eq!(done["dry_run"], false);
    assert_eq!(done["paths"][0]["versions"], 50);
    assert_eq!(done["excluded"][0], ".env");
    assert_conserved(d, &before, "expunge");
    assert_eq!(
        snap_store::testing::store_holds(&d.join(".snap"), TOKEN.as_bytes()),
        Vec::<String>::new()
    );
    assert!(
        read(d, ".env").contains(TOKEN),
        "the working tree is never touched"
    );
    assert!(!stdout_of(d, &["log", "--stats"]).contains(".env"));
    ok(d, &["verify", "--read-data"]);

    // Undo and redo across the rewritten history; the old HEAD id still resolves.
    ok(d, &["undo", "3"]);
    assert_eq!(read(d, "src/app.py"), "print(46)\n");
    ok(d, &["redo", "3"]);
    assert_eq!(read(d, "src/app.py"), "print(49)\n");
    let old = json(d, &["show", &old_head[..12]]);
    assert_eq!(old["seq"], 51, "{old}");
    assert_ne!(
        old["id"],
        old_head.as_str(),
        "the old id names the rewritten snapshot"
    );
    let status = json(d, &["status"]);
    assert_eq!(status["clean"], true, "{status}");
}

#[test]
fn expunge_refuses_without_yes_and_outside_the_workspace() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"a\n");
    ok(d, &["save"]);
    let out = snap(d, &["expunge", "a.txt"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with("error: snap expunge deletes history for good"),
        "{}",
        stderr(&out)
    );
    let out = snap(d, &["expunge", "a.txt", "--yes", "--dry-run"]);
    assert_eq!(out.status.code(), Some(2));
    let out = snap(d, &["expunge", "/etc/passwd", "--yes"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let out = snap(d, &["expunge"]);
    assert_eq!(out.status.code(), Some(2), "a path or --secrets is needed");
    assert_eq!(read(d, "a.txt"), "a\n");
    assert!(
        snap(d, &["cat", "@", "a.txt"]).status.success(),
        "nothing was expunged"
    );
}

#[test]
fn expunge_of_a_path_head_holds_changes_head_s_tree_not_the_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "keep.txt", b"keep\n");
    write(d, "creds/key.pem", b"-----BEGIN PRIVATE KEY-----\nMIIE\n");
    ok(d, &["save"]);
    let before = tree_digest(d);
    let doctor = stdout_of(d, &["doctor"]);
    assert!(
        doctor.contains("history holds secret-looking paths: creds/key.pem"),
        "{doctor}"
    );
    let out = ok(d, &["expunge", "creds", "--yes"]);
    assert!(out.contains("creds is now in exclude_paths"), "{out}");
    assert_eq!(tree_digest(d), before);
    let files = ok(d, &["ls", "@"]);
    assert!(
        !files.contains("key.pem") && files.contains("keep.txt"),
        "{files}"
    );
    let status = json(d, &["status"]);
    assert_eq!(
        status["clean"], true,
        "the excluded directory is not unsaved work: {status}"
    );
    assert!(
        !stdout_of(d, &["doctor"]).contains("secret-looking"),
        "history holds none now"
    );
}

fn stdout_of(d: &std::path::Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&snap(d, args).stdout).into_owned()
}
