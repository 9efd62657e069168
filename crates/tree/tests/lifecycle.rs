//! Store lifecycle through the library: bounded growth, prune + gc, verify naming damage,
//! repair from packs, automatic retention, delete-all.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use snap_store::{Retention, Store};
use snap_tree::{SaveOptions, Workspace};

fn write(root: &Path, path: &str, content: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

fn save(ws: &Workspace) -> u64 {
    ws.save(&SaveOptions::default())
        .unwrap()
        .snapshot
        .map_or(0, |s| s.record.seq)
}

/// A tree of `n` files in `n / 50` directories, a few hundred bytes each.
fn source_tree(root: &Path, n: usize) {
    for i in 0..n {
        let body = format!("// file {i}\nfn f{i}() -> u64 {{ {i} * 7 }}\n").repeat(8);
        write(
            root,
            &format!("src/m{}/f{i}.rs", i % (n / 50).max(1)),
            &body,
        );
    }
}

fn store_bytes(ws: &Workspace) -> u64 {
    let s = ws.stats().unwrap();
    s.pack_bytes
}

/// Runs `check` on `ws`, then again after the catalog is deleted and rebuilt from the packs
/// alone (which must verify); returns the repaired workspace.
fn checked_after_repair(ws: Workspace, root: &Path, check: impl Fn(&Workspace)) -> Workspace {
    assert!(ws.verify(true).unwrap().problems.is_empty());
    check(&ws);
    drop(ws);
    std::fs::remove_file(root.join(".snap/catalog.redb")).unwrap();
    snap_tree::repair(root, None).unwrap();
    let ws = Workspace::discover(root, None).unwrap();
    assert!(ws.verify(true).unwrap().problems.is_empty());
    check(&ws);
    ws
}

fn keep_last(n: u64) -> Retention {
    Retention {
        keep_last: n,
        keep_within_ns: None,
    }
}

#[test]
fn many_small_saves_grow_the_store_by_little_and_gc_gives_it_back() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    source_tree(root, 3000);
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws);
    let base = store_bytes(&ws);
    for i in 0..300 {
        write(root, "src/m0/f0.rs", &format!("// edit {i}\n"));
        assert!(save(&ws) > 0);
    }
    let grown = store_bytes(&ws);
    eprintln!("base {base} B, after 300 saves {grown} B");
    // Each save adds one chunk, one snapshot and the trees on its path: a few hundred bytes.
    assert!(
        grown - base < 3 << 20,
        "300 one-line saves grew the store by {} bytes",
        grown - base
    );
    let pruned = ws.prune(&keep_last(10), snap_tree::Run::Apply).unwrap();
    assert_eq!(pruned.removed.len(), 291);
    let gc = ws.gc().unwrap();
    let after = store_bytes(&ws);
    eprintln!("after prune + gc {after} B ({gc:?})");
    assert!(
        after < base + base / 10,
        "gc left {after} bytes over a base of {base}"
    );
    let problems = ws.verify(true).unwrap().problems;
    assert!(problems.is_empty(), "{problems:?}");
    ws.undo(9, snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("src/m0/f0.rs")).unwrap(),
        "// edit 290\n"
    );
}

#[test]
fn save_prunes_by_itself_past_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".snap")).unwrap();
    std::fs::write(
        root.join(".snap/config.toml"),
        "[retention]\nkeep_last = 5\nkeep_within = \"0\"\n",
    )
    .unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    let mut pruned = 0;
    for i in 0..40 {
        write(root, "f", &i.to_string());
        let out = ws.save(&SaveOptions::default()).unwrap();
        pruned += out.retention.map_or(0, |(p, _)| p.removed.len());
    }
    let count = ws.log(true).unwrap().len();
    assert!(count <= 15, "{count} snapshots kept with keep_last = 5");
    assert_eq!(pruned + count, 40);
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

fn pack_paths(root: &Path) -> Vec<std::path::PathBuf> {
    let mut v: Vec<_> = std::fs::read_dir(root.join(".snap/packs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    v.sort();
    v
}

/// Two snapshots in two packs: #1 with `a` and `b`, #2 adding `c` (its own pack).
fn two_packs(root: &Path) -> (Workspace, std::path::PathBuf) {
    two_packs_with(root, false)
}

/// As [`two_packs`]; with `settled`, `c` is written before the clock tick of the second save,
/// so that the walk memo vouches for it without reading it.
fn two_packs_with(root: &Path, settled: bool) -> (Workspace, std::path::PathBuf) {
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "a", &"a".repeat(5000));
    write(root, "dir/b", &"b".repeat(5000));
    save(&ws);
    let first = pack_paths(root);
    write(root, "c", &"c".repeat(5000));
    if settled {
        wait_past_mtime(&root.join("c"));
    }
    save(&ws);
    let second = pack_paths(root)
        .into_iter()
        .find(|p| !first.contains(p))
        .unwrap();
    (ws, second)
}

#[test]
fn a_flipped_byte_is_named_down_to_snapshot_and_path() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (ws, second) = two_packs(root);
    drop(ws);
    let mut bytes = std::fs::read(&second).unwrap();
    let at = bytes
        .windows(100)
        .position(|w| w.iter().all(|&b| b == b'c'))
        .map(|i| i + 50);
    // zstd may have compressed the run away; flip a byte in the first payload then.
    let at = at.unwrap_or(16 + 44 + 2);
    bytes[at] ^= 0x01;
    std::fs::write(&second, &bytes).unwrap();
    let ws = Workspace::discover(root, None).unwrap();
    let quick = ws.verify(false).unwrap();
    assert!(
        !quick.problems.is_empty(),
        "the pack's body hash no longer matches"
    );
    let report = ws.verify(true).unwrap();
    let named: Vec<_> = report
        .problems
        .iter()
        .filter(|p| p.paths.contains(b"c".as_slice()) || p.paths.contains(b"".as_slice()))
        .collect();
    assert!(!named.is_empty(), "{:?}", report.problems);
    assert!(report.problems.iter().any(|p| p.snapshots.contains(&2)));
    assert!(
        report.problems.iter().all(|p| !p.snapshots.contains(&1)),
        "#1 does not use the damaged pack"
    );
    ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("a")).unwrap(),
        "a".repeat(5000)
    );
    assert!(!root.join("c").exists());
}

#[test]
fn a_missing_or_truncated_pack_is_named_and_the_rest_still_restores() {
    for damage in ["missing", "truncated"] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let (ws, second) = two_packs(root);
        drop(ws);
        if damage == "missing" {
            std::fs::remove_file(&second).unwrap();
        } else {
            let bytes = std::fs::read(&second).unwrap();
            std::fs::write(&second, &bytes[..bytes.len() / 2]).unwrap();
        }
        let ws = Workspace::discover(root, None).unwrap();
        let report = ws.verify(false).unwrap();
        assert!(
            report.problems.iter().any(|p| p.pack.is_some()),
            "{damage}: {:?}",
            report.problems
        );
        assert!(
            report.problems.iter().any(|p| p.snapshots.contains(&2)),
            "{damage}"
        );
        ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("dir/b")).unwrap(),
            "b".repeat(5000),
            "{damage}"
        );
    }
}

/// Sleeps until the filesystem's clock is past `path`'s mtime, so that the next save's walk
/// memo vouches for it without reading it (it is not racily modified).
fn wait_past_mtime(path: &Path) {
    use std::os::unix::fs::MetadataExt;
    let mtime = |p: &Path| {
        let m = std::fs::metadata(p).unwrap();
        (m.mtime(), m.mtime_nsec())
    };
    let written = mtime(path);
    for _ in 0..3000 {
        let probe = tempfile::NamedTempFile::new_in(path.parent().unwrap()).unwrap();
        if mtime(probe.path()) > written {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    panic!("the filesystem clock did not pass {}", path.display());
}

/// A whole-tree restore plans from HEAD's stored trees when the walk memo vouches for the
/// tree on disk. With HEAD's pack gone it reads the tree on disk instead, as it did before it
/// took the memo, and the snapshot before still restores.
#[test]
fn a_restore_from_a_head_whose_pack_is_gone_reads_the_disk_instead() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (ws, second) = two_packs_with(root, true);
    drop(ws);
    std::fs::remove_file(second).unwrap();
    let ws = Workspace::discover(root, None).unwrap();
    ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
    let b = std::fs::read_to_string(root.join("dir/b")).unwrap();
    assert_eq!(b, "b".repeat(5000));
    assert!(!root.join("c").exists());
}

#[test]
fn repair_rebuilds_a_zero_length_catalog_from_the_packs() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (ws, _) = two_packs(root);
    drop(ws);
    std::fs::write(root.join(".snap/catalog.redb"), b"").unwrap();
    let err = Workspace::discover(root, None).unwrap_err();
    assert!(err.to_string().contains("snap repair"), "{err}");
    let report = snap_tree::repair(root, None).unwrap();
    assert_eq!(report.snapshots, 2);
    assert_eq!(report.head.map(|(_, seq)| seq), Some(2));
    assert!(report.old_catalog.is_some());
    let ws = Workspace::discover(root, None).unwrap();
    assert!(ws.verify(true).unwrap().problems.is_empty());
    assert_eq!(ws.status().unwrap().changes, vec![]);
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert!(!root.join("c").exists());
}

#[test]
fn repair_keeps_what_a_damaged_pack_still_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (ws, second) = two_packs(root);
    drop(ws);
    let bytes = std::fs::read(&second).unwrap();
    std::fs::write(&second, &bytes[..bytes.len() - 30]).unwrap();
    std::fs::remove_file(root.join(".snap/catalog.redb")).unwrap();
    let report = Store::repair(&root.join(".snap")).unwrap();
    assert_eq!(
        report.snapshots, 2,
        "the trailer is gone but a forward scan finds the frames"
    );
    let ws = Workspace::discover(root, None).unwrap();
    ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
    ws.restore("#2", &[], snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("c")).unwrap(),
        "c".repeat(5000)
    );
}

#[test]
fn delete_all_empties_the_store_and_it_stays_usable() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (ws, _) = two_packs(root);
    let (removed, gc) = ws.delete_all().unwrap();
    assert_eq!(removed, 2);
    assert_eq!(gc.bytes_after, 0);
    assert!(pack_paths(root).is_empty());
    assert!(ws.head().unwrap().is_none());
    assert_eq!(
        std::fs::read_to_string(root.join("c")).unwrap(),
        "c".repeat(5000),
        "the working tree is untouched"
    );
    assert_eq!(save(&ws), 1);
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

/// Found by the workspace_model fuzz target: gc "repacked" a small, fully live pack into a
/// byte-identical pack of the same name, then deleted that name, losing the only copy.
#[test]
fn gc_never_deletes_a_pack_it_rewrote_to_the_same_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws);
    ws.gc().unwrap();
    ws.gc().unwrap();
    assert!(ws.verify(true).unwrap().problems.is_empty());
    ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
    write(root, "f", "x");
    save(&ws);
    ws.gc().unwrap();
    assert!(ws.verify(true).unwrap().problems.is_empty());
    assert_eq!(pack_paths(root).len(), 2, "fully live packs are left alone");
}

/// Small files are stored as slices of shared blocks (FORMAT.md 5.2). When most of a block's
/// files are gone, gc rewrites its pack: the live slices and their block go to a new pack, and
/// every file still reads back, after gc and after a repair from the packs alone.
#[test]
fn gc_and_repair_keep_the_blocks_of_live_small_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    source_tree(root, 400);
    save(&ws);
    let before = store_bytes(&ws);
    for i in (0..400).filter(|i| i % 10 != 0) {
        std::fs::remove_file(root.join(format!("src/m{}/f{i}.rs", i % 8))).unwrap();
    }
    save(&ws);
    ws.prune(&keep_last(1), snap_tree::Run::Apply).unwrap();
    let gc = ws.gc().unwrap();
    assert!(gc.packs_repacked + gc.packs_deleted > 0, "{gc:?}");
    assert!(
        store_bytes(&ws) < before / 2,
        "{} of {before}",
        store_bytes(&ws)
    );
    assert!(ws.verify(true).unwrap().problems.is_empty());
    let check = |ws: &Workspace| {
        let head = ws.head().unwrap().unwrap();
        for i in (0..400).step_by(10) {
            let path = format!("src/m{}/f{i}.rs", i % 8);
            let body = format!("// file {i}\nfn f{i}() -> u64 {{ {i} * 7 }}\n").repeat(8);
            assert_eq!(
                ws.read_file(&head, path.as_bytes()).unwrap(),
                body.as_bytes()
            );
        }
    };
    checked_after_repair(ws, root, check);
}

/// A 70 KB source file of varied lines (zstd takes it to about a fifth).
fn long_source(lines: usize) -> String {
    (0..lines)
        .map(|i| {
            format!(
                "    let v{i} = table[{}] ^ {};\n",
                i * 7919 % 1013,
                i * i % 65_521
            )
        })
        .collect()
}

/// A changed file is stored as a delta against its path's previous version (FORMAT.md 5.2):
/// 300 saves each appending a line to a 70 KB file grow the packs by far less than one whole
/// copy per save. Pruning every version a delta chain starts from keeps the bases gc needs;
/// every kept version reads back after gc, after a repair from the packs alone, and on undo.
#[test]
fn an_edited_file_is_stored_as_a_delta_and_gc_keeps_its_bases() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    let mut body = long_source(2500);
    assert!(body.len() > 70_000);
    write(root, "big.rs", &body);
    save(&ws);
    let base = store_bytes(&ws);
    for i in 0..300 {
        body.push_str(&format!("    appended({i});\n"));
        write(root, "big.rs", &body);
        save(&ws);
    }
    let grown = store_bytes(&ws) - base;
    // Whole copies alone (a frame of about 15 KB per save) would be over 4 MB.
    assert!(
        grown < 1 << 20,
        "300 appended lines grew the packs by {grown} bytes"
    );
    ws.prune(&keep_last(7), snap_tree::Run::Apply).unwrap();
    ws.gc().unwrap();
    assert!(ws.verify(true).unwrap().problems.is_empty());
    let check = |ws: &Workspace| {
        let head = ws.head().unwrap().unwrap();
        assert_eq!(ws.read_file(&head, b"big.rs").unwrap(), body.as_bytes());
    };
    let ws = checked_after_repair(ws, root, check);
    ws.undo(6, snap_tree::Run::Apply).unwrap();
    let want = body.lines().count() - 6;
    let now = std::fs::read_to_string(root.join("big.rs")).unwrap();
    assert_eq!(now.lines().count(), want);
    assert!(body.starts_with(&now));
}

/// Saves past `AUTO_MERGE_PACKS` packs merge the small ones by themselves, without gc: the
/// pack count stays bounded, every snapshot still reads back and verifies, and a repair
/// from the packs alone finds everything.
#[test]
fn saves_merge_small_packs_by_themselves() {
    use snap_store::AUTO_MERGE_PACKS;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    source_tree(root, 100);
    save(&ws);
    let saves = 3 * AUTO_MERGE_PACKS as usize;
    for i in 0..saves {
        write(root, &format!("edits/e{}", i % 7), &format!("edit {i}\n"));
        save(&ws);
        let packs = pack_paths(root).len() as u64;
        assert!(
            packs <= AUTO_MERGE_PACKS + 1,
            "{packs} packs after save {i}"
        );
    }
    assert!(ws.verify(true).unwrap().problems.is_empty());
    let check = |ws: &Workspace| {
        let log = ws.log(true).unwrap();
        assert_eq!(log.len(), saves + 1);
        // Snapshot #1 is the first save; #(i + 2) holds edit i.
        for entry in log.iter().filter(|e| e.snapshot.record.seq % 11 == 0) {
            let i = entry.snapshot.record.seq - 2;
            let got = ws.read_file(&entry.snapshot, format!("edits/e{}", i % 7).as_bytes());
            assert_eq!(got.unwrap(), format!("edit {i}\n").as_bytes());
        }
    };
    checked_after_repair(ws, root, check);
}

/// `max_store_bytes`: past it, saves drop the oldest snapshots (whatever `keep_last` says)
/// until the store fits, and never HEAD or the redo stack; what stays still reads back.
#[test]
fn saves_keep_the_store_within_max_store_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".snap")).unwrap();
    let max: u64 = 3 << 20;
    std::fs::write(
        root.join(".snap/config.toml"),
        format!("[retention]\nkeep_last = 1000\nmax_store_bytes = {max}\n"),
    )
    .unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    // Each save rewrites a file with 256 KiB that does not compress: the budget holds about
    // ten versions of it.
    let noise = |seed: u64| -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..256 << 10)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    let mut pruned = 0;
    for i in 0..40u64 {
        std::fs::write(root.join("blob"), noise(i)).unwrap();
        let out = ws.save(&SaveOptions::default()).unwrap();
        pruned += out.retention.map_or(0, |(p, _)| p.removed.len());
        let bytes = ws.store().disk_bytes().unwrap();
        assert!(bytes <= max, "{bytes} bytes after save {i}");
    }
    assert!(pruned > 0);
    let log = ws.log(true).unwrap();
    assert_eq!(pruned + log.len(), 40);
    assert!(log.len() >= 5, "only {} snapshots kept", log.len());
    assert!(ws.verify(true).unwrap().problems.is_empty());
    let head = ws.head().unwrap().unwrap();
    assert_eq!(ws.read_file(&head, b"blob").unwrap(), noise(39));
    // The undo chain ends where pruning cut it, and undo still works down to there.
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(std::fs::read(root.join("blob")).unwrap(), noise(38));
    ws.redo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(std::fs::read(root.join("blob")).unwrap(), noise(39));
}

/// A budget smaller than what must stay never takes undo away: HEAD's nearest
/// `BUDGET_KEEPS_UNDO` ancestors stay, and undo reaches back through them.
#[test]
fn a_budget_too_small_keeps_the_nearest_undo_steps() {
    use snap_store::BUDGET_KEEPS_UNDO;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join(".snap")).unwrap();
    std::fs::write(
        root.join(".snap/config.toml"),
        "[retention]\nmax_store_bytes = 1000\n",
    )
    .unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    for i in 0..30 {
        write(root, "f", &format!("version {i}\n"));
        save(&ws);
    }
    let kept = ws.log(true).unwrap().len();
    assert_eq!(kept, BUDGET_KEEPS_UNDO + 1);
    ws.undo(BUDGET_KEEPS_UNDO as u64, snap_tree::Run::Apply)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("f")).unwrap(),
        format!("version {}\n", 29 - BUDGET_KEEPS_UNDO)
    );
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

/// The automatic merge leaves alone a pack of many objects (a first save's, full of small
/// files): re-pointing each of them would rewrite most of the catalog. Only the packs of
/// later one-file saves are merged.
#[test]
fn the_merge_leaves_a_first_saves_pack_alone() {
    use snap_store::{AUTO_MERGE_PACKS, MERGE_MAX_PACK_OBJECTS};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    source_tree(root, 4 * MERGE_MAX_PACK_OBJECTS as usize);
    save(&ws);
    // Threads storing at once may each fill a pack of their own: the largest then holds at
    // least half the files, far more than the merge takes.
    let first = pack_paths(root);
    let largest = (first.iter())
        .max_by_key(|p| std::fs::metadata(p).unwrap().len())
        .unwrap()
        .clone();
    // Edits of 8 KiB that do not compress: their packs soon add up to more than the first
    // one, which the size rule alone would then merge.
    for i in 0..3 * AUTO_MERGE_PACKS {
        let noise: String = (0..8192u64)
            .map(|k| char::from(b'a' + ((k * 7919 + i * 104_729) % 251 % 26) as u8))
            .collect();
        write(root, "edits/e", &noise);
        save(&ws);
    }
    let now = pack_paths(root);
    assert!(now.contains(&largest), "the first save's pack was merged");
    assert!(
        now.len() as u64 <= AUTO_MERGE_PACKS + first.len() as u64,
        "{} packs",
        now.len()
    );
    assert!(ws.verify(true).unwrap().problems.is_empty());
}

/// Two saves of small files: #1 holds `a`, #2 rewrites `a` and adds `b`, whose contents
/// share one block in #2's own pack; then the frames of object kind `kind` in that pack rot
/// (5: the block, 3: the trees). Returns the workspace directory, its store closed.
fn two_small_versions_rotted(kind: u8) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "a", "first a\n");
    save(&ws);
    let first = pack_paths(root);
    write(root, "a", "second a, its only copy\n");
    write(root, "b", "b, its only copy\n");
    save(&ws);
    let second = pack_paths(root)
        .into_iter()
        .find(|p| !first.contains(p))
        .unwrap();
    drop(ws);
    rot_frames(&second, kind);
    dir
}

/// Flips every payload byte of the frames of object kind `kind` in `pack`, leaving the other
/// frames (those naming them included) sound: objects the catalog names, rotted.
fn rot_frames(pack: &Path, kind: u8) {
    let mut bytes = std::fs::read(pack).unwrap();
    let footer = bytes.len() - 56;
    let index = u64::from_le_bytes(bytes[footer + 8..footer + 16].try_into().unwrap()) as usize;
    let (mut at, mut rotted) = (16, 0);
    while at < index {
        let stored = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        if bytes[at] == kind {
            bytes[at + 44..at + 44 + stored]
                .iter_mut()
                .for_each(|b| *b ^= 0x5a);
            rotted += 1;
        }
        at += 44 + stored;
    }
    assert!(rotted > 0, "no frame of kind {kind} in {pack:?}");
    std::fs::write(pack, bytes).unwrap();
}

/// A pack can rot after it was written: the catalog still names the files' contents, but
/// they no longer read back, and the working tree holds the only sound copy. An undo or a
/// restore about to replace or remove such files stores them again first, so every version
/// stays readable (docs/SAFETY.md); before, the move destroyed them.
#[test]
fn a_move_stores_again_the_files_whose_saved_copies_rotted() {
    for op in ["undo", "restore"] {
        let dir = two_small_versions_rotted(5);
        let root = dir.path();
        let ws = Workspace::discover(root, None).unwrap();
        let two = ws.resolve("#2").unwrap();
        assert!(ws.read_file(&two, b"a").is_err(), "{op}: the copy rotted");
        match op {
            "undo" => ws.undo(1, snap_tree::Run::Apply),
            _ => ws.restore("#1", &[], snap_tree::Run::Apply),
        }
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join("a")).unwrap(),
            "first a\n"
        );
        assert!(!root.join("b").exists(), "{op}");
        drop(ws);
        let ws = Workspace::discover(root, None).unwrap();
        let two = ws.resolve("#2").unwrap();
        assert_eq!(
            ws.read_file(&two, b"a").unwrap(),
            b"second a, its only copy\n"
        );
        assert_eq!(ws.read_file(&two, b"b").unwrap(), b"b, its only copy\n");
        // Nothing live is left in the rotted frames: gc drops them, and the store is whole.
        ws.gc().unwrap();
        let problems = ws.verify(true).unwrap().problems;
        assert!(problems.is_empty(), "{op}: {problems:?}");
    }
}

/// A repair drops the slices whose block rotted (and so every delta or slice down a chain
/// from a lost frame): a catalog naming them would make the next save take them for stored.
#[test]
fn repair_drops_slices_whose_block_rotted_and_the_next_save_stores_them_again() {
    let dir = two_small_versions_rotted(5);
    let root = dir.path();
    std::fs::remove_file(root.join(".snap/catalog.redb")).unwrap();
    let report = Store::repair(&root.join(".snap")).unwrap();
    assert!(report.damaged_objects >= 3, "{report:?}");
    let ws = Workspace::discover(root, None).unwrap();
    save(&ws);
    let head = ws.head().unwrap().unwrap();
    assert_eq!(
        ws.read_file(&head, b"a").unwrap(),
        b"second a, its only copy\n"
    );
    assert_eq!(ws.read_file(&head, b"b").unwrap(), b"b, its only copy\n");
}

/// Another process writes, during an undo, content saved long ago whose copy has rotted
/// since: the undo saves what it found before replacing it, and that saved copy must read
/// back too (deduplicated against the rotted one, it did not).
#[test]
fn content_found_during_a_move_whose_old_copy_rotted_is_stored_again() {
    use snap_tree::{Event, Phase};
    use std::sync::atomic::{AtomicBool, Ordering};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    write(root, "x", "version zero of x\n");
    write(root, "w", "w stays as it is\n");
    save(&ws);
    let first = pack_paths(root);
    write(root, "x", "version one of x\n");
    save(&ws);
    write(root, "x", "version two of x\n");
    write(root, "r", "removed by the undo\n");
    save(&ws);
    drop(ws);
    first.iter().for_each(|pack| rot_frames(pack, 5));
    let mut ws = Workspace::discover(root, None).unwrap();
    let fired = AtomicBool::new(false);
    let writer_root = root.to_path_buf();
    // After the scan and the read-back, before the guarded steps.
    ws.set_observer(Box::new(move |e| {
        let restoring = matches!(
            e,
            Event::Progress {
                phase: Phase::Restore,
                ..
            }
        );
        if restoring && !fired.swap(true, Ordering::SeqCst) {
            std::fs::write(writer_root.join("x"), "version zero of x\n").unwrap();
        }
    }));
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("x")).unwrap(),
        "version one of x\n"
    );
    let readable = (ws.log(true).unwrap().iter())
        .filter_map(|e| ws.read_file(&e.snapshot, b"x").ok())
        .any(|x| x == b"version zero of x\n");
    assert!(readable, "what the undo found reads back from a snapshot");
}

/// HEAD's trees rot and a repair leaves them out of the catalog: a save must still work
/// (every path counts as added, and the trees are written anew), and so must a restore of
/// an older snapshot; before, every save failed on HEAD's missing root.
#[test]
fn saves_go_on_after_a_repair_lost_heads_trees() {
    let dir = two_small_versions_rotted(3);
    let root = dir.path();
    snap_tree::repair(root, None).unwrap();
    let ws = Workspace::discover(root, None).unwrap();
    write(root, "c", "after the repair\n");
    save(&ws);
    let head = ws.head().unwrap().unwrap();
    assert_eq!(head.record.stats.files, 3);
    for (path, body) in [
        ("a", "second a, its only copy\n"),
        ("b", "b, its only copy\n"),
    ] {
        assert_eq!(
            ws.read_file(&head, path.as_bytes()).unwrap(),
            body.as_bytes()
        );
    }
    ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
    assert_eq!(
        std::fs::read_to_string(root.join("a")).unwrap(),
        "first a\n"
    );
    assert!(!root.join("c").exists());
}

/// A repair of a catalog that still reads (run because objects rotted, say) keeps its HEAD
/// and redo stack: after an undo, HEAD must not jump to the newest snapshot, and the redo
/// must still be there.
#[test]
fn repair_keeps_head_and_the_redo_stack_of_a_catalog_that_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    for version in ["one\n", "two\n", "three\n"] {
        write(root, "f", version);
        save(&ws);
    }
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    drop(ws);
    let report = Store::repair(&root.join(".snap")).unwrap();
    assert!(report.history_kept, "{report:?}");
    assert_eq!((report.head.map(|(_, seq)| seq), report.redo), (Some(2), 1));
    let ws = Workspace::discover(root, None).unwrap();
    assert_eq!(ws.head().unwrap().unwrap().record.seq, 2);
    ws.redo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("f")).unwrap(), "three\n");
}
