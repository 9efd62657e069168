//! The store belongs to one workspace: external stores, moved workspaces.

use std::path::Path;

use serde_json::Value;
use snap_e2e::*;

#[test]
fn an_external_store_from_a_subdirectory_acts_on_its_recorded_root() {
    let (ws, st) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (d, s) = (ws.path(), st.path().join("store"));
    write(d, "a", b"a1");
    write(d, "sub/b", b"b1");
    assert!(with_store(d, &s, &["save"]).status.success());
    write(d, "a", b"a2");
    assert!(with_store(d, &s, &["save"]).status.success());
    let before = everything(d);
    let out = with_store(&d.join("sub"), &s, &["undo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(read(d, "a"), "a1", "the undo acted on the recorded root");
    assert_eq!(read(d, "sub/b"), "b1");
    assert!(!d.join("sub/a").exists() && !d.join("sub/sub").exists());
    assert_conserved_with(d, &s, &before);
    let status = with_store(&d.join("sub"), &s, &["--json", "status"]);
    let v: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(v["root"], d.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(v["workspace_id"].as_str().map(str::len), Some(32));
}

/// [`assert_conserved`] for a workspace whose store is `store`: every file of `before` is on
/// disk or in one of its snapshots.
fn assert_conserved_with(d: &Path, store: &Path, before: &Tree) {
    let now = everything(d);
    let log = with_store(d, store, &["--json", "log", "--all"]);
    let log: Value = serde_json::from_slice(&log.stdout).unwrap();
    let seqs = log["snapshots"].as_array().unwrap();
    for (path, bytes) in before.iter().filter(|(p, b)| now.get(*p) != Some(*b)) {
        let saved = seqs.iter().any(|row| {
            let out = with_store(d, store, &["cat", &format!("#{}", row["seq"]), path]);
            out.status.success() && &out.stdout == bytes
        });
        assert!(saved, "{path} was lost");
    }
}

#[test]
fn a_store_recorded_for_another_workspace_is_refused() {
    let (a, b, st) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let s = st.path().join("store");
    write(a.path(), "x", b"from a");
    assert!(with_store(a.path(), &s, &["save"]).status.success());
    write(b.path(), "y", b"from b");
    let before = everything(b.path());
    for args in [
        &["save"][..],
        &["undo"],
        &["status"],
        &["restore", "#1"],
        &["log"],
    ] {
        let out = with_store(b.path(), &s, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.starts_with("error: ") && err.lines().count() == 1,
            "{err}"
        );
        assert!(err.contains("belongs to the workspace at"), "{err}");
        assert_eq!(everything(b.path()), before, "{args:?} touched b");
    }
    assert!(!b.path().join(".snap").exists());
    assert!(
        !a.path().join(".snap").exists(),
        "a has no store of its own"
    );
    let log = with_store(a.path(), &s, &["--json", "log"]);
    let log: Value = serde_json::from_slice(&log.stdout).unwrap();
    assert_eq!(log["snapshots"].as_array().unwrap().len(), 1);
    // A workspace that moved claims its store again with `init --force`.
    let out = with_store(b.path(), &s, &["init", "--force"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(with_store(b.path(), &s, &["status"]).status.success());
    assert!(!with_store(a.path(), &s, &["status"]).status.success());
}

#[test]
fn a_workspace_with_its_own_store_can_be_moved() {
    let top = tempfile::tempdir().unwrap();
    let (old, new) = (top.path().join("old"), top.path().join("new"));
    write(&old, "f", b"1");
    ok(&old, &["save"]);
    let id = json(&old, &["status"])["workspace_id"].clone();
    write(&old, "f", b"2");
    ok(&old, &["save"]);
    std::fs::rename(&old, &new).unwrap();
    ok(&new.join("."), &["undo"]);
    assert_eq!(read(&new, "f"), "1");
    let v = json(&new, &["status"]);
    assert_eq!(v["root"], new.canonicalize().unwrap().to_str().unwrap());
    assert_eq!(v["workspace_id"], id, "the id is kept when the root moves");
    // Named explicitly, the moved store is still its directory's own.
    let out = with_store(&new, &new.join(".snap"), &["status"]);
    assert!(out.status.success(), "{}", stderr(&out));
}
