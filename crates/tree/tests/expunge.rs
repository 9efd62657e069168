//! `Workspace::expunge`: paths taken out of every snapshot (or the named ones), the bytes
//! gone from every file of the store (packs decompressed frame by frame), the rest of history
//! byte for byte as it was, the working tree untouched, old ids still resolving.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use snap_tree::testing::store_holds;
use snap_tree::{ExpungeAsk, Run, SaveOptions, Tracking, Workspace};

const TOKEN: &str = "AKIAIOSFODNN7EXAMPLE-sk-proj-7e3d1f0c9b8a";

fn save(ws: &Workspace, message: &str) -> u64 {
    let opts = SaveOptions {
        message: message.into(),
        ..SaveOptions::default()
    };
    ws.save(&opts).unwrap().snapshot.unwrap().record.seq
}

/// Every file of snapshot `seq`, by path.
fn files_of(ws: &Workspace, seq: u64) -> BTreeMap<String, Vec<u8>> {
    let snapshot = ws.resolve(&format!("#{seq}")).unwrap();
    let flat = ws.files(&snapshot).unwrap();
    (flat.iter())
        .filter(|(_, n)| n.kind != snap_tree::EntryKind::Dir)
        .map(|(p, _)| {
            let path = String::from_utf8(p.clone()).unwrap();
            (path, ws.read_file(&snapshot, p).unwrap())
        })
        .collect()
}

fn write(root: &Path, path: &str, content: &str) {
    let abs = root.join(path);
    std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
    std::fs::write(abs, content).unwrap();
}

fn expunge(
    ws: &Workspace,
    paths: &[&str],
    snapshots: &[&str],
    run: Run,
) -> snap_tree::ExpungeOutcome {
    let paths: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    let snapshots: Vec<String> = snapshots.iter().map(|s| s.to_string()).collect();
    let ask = ExpungeAsk {
        paths: &paths,
        snapshots: &snapshots,
        tracking: Tracking::Exclude,
    };
    ws.expunge(ask, run).unwrap()
}

/// A history where `.env` (small: in a block beside other small files) and `keys/id_rsa`
/// (larger, changing: stored as deltas) hold the token in every snapshot from #2 on.
fn secret_history(root: &Path) -> Workspace {
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "README.md", "# project\n");
    write(root, "src/main.rs", "fn main() {}\n");
    save(&ws, "start");
    let key: String = (0..2000)
        .map(|n| format!("key line {n} {TOKEN}\n"))
        .collect();
    for n in 0..5 {
        write(root, ".env", &format!("TOKEN={TOKEN}\nROUND={n}\n"));
        write(root, "keys/id_rsa", &format!("{key}round {n}\n"));
        write(
            root,
            "src/main.rs",
            &format!("fn main() {{ println!(\"{n}\"); }}\n"),
        );
        save(&ws, &format!("round {n}"));
    }
    ws
}

#[test]
fn a_secret_leaves_every_snapshot_and_every_file_of_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = secret_history(root);
    ws.undo(1, Run::Apply).unwrap(); // #6 on the redo stack
    let old_head = ws.head().unwrap().unwrap();
    let before: Vec<_> = (1..=6).map(|s| files_of(&ws, s)).collect();
    assert!(!store_holds(&root.join(".snap"), TOKEN.as_bytes()).is_empty());
    let on_disk = std::fs::read(root.join(".env")).unwrap();

    let preview = expunge(&ws, &[".env", "keys"], &[], Run::DryRun);
    assert!(preview.dry_run && preview.purge.is_none());
    assert_eq!(
        preview.renamed.len(),
        5,
        "#2..#6 held them (and #1 did not)"
    );
    let taken: Vec<&[u8]> = preview.taken.iter().map(|(p, _)| p.as_slice()).collect();
    assert_eq!(taken, [&b".env"[..], b"keys"]);
    assert_eq!(preview.taken[0].1.versions.len(), 5);
    assert_eq!(files_of(&ws, 3), before[2], "a preview changes nothing");

    let out = expunge(&ws, &[".env", "keys"], &[], Run::Apply);
    assert_eq!(
        out.renamed, preview.renamed,
        "the preview named the same new ids"
    );
    let purge = out.purge.unwrap();
    assert!(purge.packs_rewritten > 0, "{purge:?}");
    assert_eq!(
        store_holds(&root.join(".snap"), TOKEN.as_bytes()),
        Vec::<String>::new()
    );

    // Every snapshot as it was, less the two paths; same numbers.
    drop(ws);
    let ws = Workspace::discover(root, None).unwrap();
    for (at, was) in before.iter().enumerate() {
        let mut want = was.clone();
        want.retain(|p, _| p != ".env" && !p.starts_with("keys/"));
        assert_eq!(files_of(&ws, at as u64 + 1), want, "#{}", at + 1);
    }
    // The working tree is untouched; the paths are excluded, so a save records nothing.
    assert_eq!(std::fs::read(root.join(".env")).unwrap(), on_disk);
    let config = std::fs::read_to_string(root.join(".snap/config.toml")).unwrap();
    assert!(
        config.contains(".env") && config.contains("keys"),
        "{config}"
    );
    assert!(ws.save(&SaveOptions::default()).unwrap().snapshot.is_none());
    // HEAD and the redo stack were remapped; the old id still names HEAD.
    let head = ws.head().unwrap().unwrap();
    assert_eq!(head.record.seq, old_head.record.seq);
    assert_ne!(head.id, old_head.id);
    assert_eq!(ws.resolve(&old_head.id.to_hex()[..12]).unwrap().id, head.id);
    let redone = ws.redo(1, Run::Apply).unwrap();
    assert_eq!(redone.target.record.seq, 6);
    assert_eq!(
        std::fs::read(root.join(".env")).unwrap(),
        on_disk,
        "redo keeps an excluded path"
    );
    let report = ws.verify(true).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn expunging_one_snapshot_re_encodes_the_later_version_stored_against_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    let body: String = (0..4000).map(|n| format!("config line {n}\n")).collect();
    write(root, "config.txt", &format!("{body}password={TOKEN}\n"));
    save(&ws, "with the password");
    write(root, "config.txt", &format!("{body}password=redacted\n"));
    save(&ws, "without");
    let kept = files_of(&ws, 2);
    let out = expunge(&ws, &["config.txt"], &["#1"], Run::Apply);
    assert_eq!(
        out.renamed.len(),
        2,
        "#1 rewritten, #2 renamed for its parent"
    );
    assert!(out.renamed[0].held && !out.renamed[1].held);
    assert!(out.excluded.is_empty() || out.excluded == [b"config.txt".to_vec()]);
    assert_eq!(
        store_holds(&root.join(".snap"), TOKEN.as_bytes()),
        Vec::<String>::new()
    );
    drop(ws);
    let ws = Workspace::discover(root, None).unwrap();
    assert_eq!(
        files_of(&ws, 2),
        kept,
        "the later version, stored as a delta on #1's, reads"
    );
    assert!(files_of(&ws, 1).is_empty());
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

#[test]
fn a_path_no_snapshot_holds_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = secret_history(root);
    let head = ws.head().unwrap().unwrap();
    let out = expunge(&ws, &["nowhere.txt"], &[], Run::Apply);
    assert!(out.renamed.is_empty() && out.taken.is_empty() && out.purge.is_none());
    assert_eq!(ws.head().unwrap().unwrap().id, head.id);
}

/// An unnamed pack gc would keep (here one whose trailer does not read) refuses an expunge
/// before it changes anything: its purge could not delete that pack, and would stop with
/// the purge pending, failing every writing command until a repair.
#[test]
fn an_unnamed_pack_gc_keeps_refuses_an_expunge_up_front() {
    let dir = tempfile::tempdir().unwrap();
    let ws = secret_history(dir.path());
    let before = ws.log(true).unwrap();
    let stray = dir
        .path()
        .join(".snap/packs")
        .join(format!("{}.pack", "ab".repeat(32)));
    std::fs::write(&stray, b"SNAPPACK\x01\0\0\0\0\0\0\0 not a sealed pack").unwrap();
    let paths = vec![b".env".to_vec()];
    let ask = ExpungeAsk {
        paths: &paths,
        snapshots: &[],
        tracking: Tracking::Exclude,
    };
    let refused = ws.expunge(ask, Run::Apply);
    assert!(
        matches!(refused, Err(snap_tree::TreeError::ExpungeRefused(_))),
        "{refused:?}"
    );
    assert_eq!(ws.log(true).unwrap().len(), before.len());
    assert!(stray.exists(), "the pack is left for a person and repair");
    ws.save(&SaveOptions::default()).unwrap();
}

/// Six saves, each with a new `.env`; keeps the last two.
fn pruned_history(root: &Path) -> Workspace {
    let ws = Workspace::init(root, None, false).unwrap();
    for n in 0..6 {
        write(root, ".env", &format!("TOKEN={TOKEN}\nROUND={n}\n"));
        write(root, "src/main.rs", &format!("fn main() {{ {n}; }}\n"));
        save(&ws, &format!("round {n}"));
    }
    ws.prune(&keep_last(2), Run::Apply).unwrap();
    ws.gc().unwrap();
    ws
}

fn keep_last(n: u64) -> snap_tree::Retention {
    snap_tree::Retention {
        keep_last: n,
        keep_within_ns: None,
    }
}

/// The oldest kept snapshot names a parent prune dropped and gc collected: the expunge
/// rewrites it against nothing (as `show` counts it) instead of failing on the missing
/// parent (issue 54, item 0).
#[test]
fn an_expunge_after_prune_and_gc_rewrites_the_oldest_snapshot_against_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = pruned_history(root);
    let kept = files_of(&ws, 6);
    let hits = ws
        .secrets(snap_tree::secrets::SecretScan::PathsAndContents)
        .unwrap();
    assert!(hits.iter().any(|h| h.path == b".env"), "{hits:?}");

    let preview = expunge(&ws, &[".env"], &[], Run::DryRun);
    assert_eq!(preview.renamed.len(), 2, "#5 and #6 held it");
    let out = expunge(&ws, &[".env"], &[], Run::Apply);
    assert_eq!(out.renamed, preview.renamed);
    assert_eq!(
        store_holds(&root.join(".snap"), TOKEN.as_bytes()),
        Vec::<String>::new()
    );
    let oldest = ws.resolve("#5").unwrap();
    assert_eq!(oldest.record.stats.added, oldest.record.stats.files);
    let mut want = kept;
    want.remove(".env");
    assert_eq!(files_of(&ws, 6), want);
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

/// One step of a random history.
#[derive(Clone, Debug)]
enum Step {
    /// Writes `.env` (the token and this round) and a file beside it, then saves.
    Save(u8),
    /// Keeps the last N snapshots.
    Prune(u64),
    Gc,
    Undo,
    Redo,
}

fn step() -> impl proptest::strategy::Strategy<Value = Step> {
    use proptest::prelude::*;
    prop_oneof![
        4 => any::<u8>().prop_map(Step::Save),
        1 => (1..4u64).prop_map(Step::Prune),
        1 => Just(Step::Gc),
        1 => Just(Step::Undo),
        1 => Just(Step::Redo),
    ]
}

fn run_step(ws: &Workspace, root: &Path, step: &Step) {
    match step {
        Step::Save(n) => {
            write(root, ".env", &format!("TOKEN={TOKEN}\nROUND={n}\n"));
            write(root, "notes.txt", &format!("note {}\n", n % 3));
            ws.save(&SaveOptions::default()).unwrap();
        }
        Step::Prune(n) => {
            ws.prune(&keep_last(*n), Run::Apply).unwrap();
        }
        Step::Gc => {
            ws.gc().unwrap();
        }
        // Nothing to undo or redo (or the parent was pruned) is refused; either is fine.
        Step::Undo => drop(ws.undo(1, Run::Apply)),
        Step::Redo => drop(ws.redo(1, Run::Apply)),
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig {
        cases: 12,
        ..proptest::prelude::ProptestConfig::default()
    })]

    /// Whatever saves, prunes, gcs and moves made the history, an expunge of `.env` succeeds
    /// and no file of the store holds the token afterwards.
    #[test]
    fn an_expunge_succeeds_after_any_history(steps in proptest::collection::vec(step(), 1..14)) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let ws = Workspace::init(root, None, false).unwrap();
        for step in &steps {
            run_step(&ws, root, step);
        }
        expunge(&ws, &[".env"], &[], Run::Apply);
        proptest::prop_assert_eq!(
            store_holds(&root.join(".snap"), TOKEN.as_bytes()),
            Vec::<String>::new()
        );
        let problems = ws.verify(true).unwrap().problems;
        proptest::prop_assert!(problems.is_empty(), "{:?}", problems);
    }
}
