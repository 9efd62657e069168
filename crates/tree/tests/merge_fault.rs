//! A write that fails while small packs are merged (a full disk) ends the merge before its
//! commit: no pack is dropped whose frames were not all copied into a pack that reached the
//! disk. In a test binary of its own, because an armed fault is process-wide.

#![allow(clippy::unwrap_used)]

use snap_store::testing::fault::{Fault, arm};
use snap_store::{AUTO_MERGE_PACKS, Commit, ObjectKind};
use snap_tree::{SaveOptions, Workspace};

fn pack_count(root: &std::path::Path) -> usize {
    std::fs::read_dir(root.join(".snap/packs")).unwrap().count()
}

#[test]
fn a_write_failing_mid_merge_drops_no_pack() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    for i in 0..AUTO_MERGE_PACKS {
        std::fs::write(root.join(format!("f{}", i % 5)), format!("version {i}\n")).unwrap();
        ws.save(&SaveOptions::default()).unwrap();
    }
    // One more pack, committed without a save, so that the merge is due but has not run.
    let store = ws.store();
    let writer = store.writer();
    writer.put(ObjectKind::Chunk, b"one more pack").unwrap();
    let packs = writer.finish().unwrap();
    store
        .commit(&Commit {
            packs,
            ..Commit::default()
        })
        .unwrap();
    let before = pack_count(root);
    assert_eq!(before as u64, AUTO_MERGE_PACKS + 1);
    // The fifth frame copied fails, after frames of earlier packs went into the new pack.
    arm(Fault::parse("pack-write@5:ENOSPC"));
    let merged = store.merge_small_packs();
    arm(None);
    assert!(merged.is_err(), "{merged:?}");
    assert_eq!(pack_count(root), before, "a pack was dropped");
    let problems = ws.verify(true).unwrap().problems;
    assert!(problems.is_empty(), "{problems:?}");
    for entry in ws.log(true).unwrap() {
        let i = entry.snapshot.record.seq - 1;
        let got = ws.read_file(&entry.snapshot, format!("f{}", i % 5).as_bytes());
        assert_eq!(got.unwrap(), format!("version {i}\n").as_bytes());
    }
    // With the disk healthy again, the merge goes through.
    let report = store.merge_small_packs().unwrap().unwrap();
    assert!(report.packs_merged > 1);
    assert!(pack_count(root) < before);
    assert!(ws.verify(true).unwrap().problems.is_empty());
}
