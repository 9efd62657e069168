//! Large files are kept (docs/FORMAT.md 3): deleted, truncated, appended to and renamed by an
//! agent, brought back byte for byte by undo and redo, in bounded memory; named when first
//! taken; and, past `max_file_size`, their loss named by the next save.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use snap_e2e::*;
use snap_store::testing::noise;

/// BLAKE3 of a file, read in pieces.
fn hash(path: &Path) -> blake3::Hash {
    let mut hasher = blake3::Hasher::new();
    let mut file = std::fs::File::open(path).unwrap();
    let mut buf = vec![0; 1 << 20];
    loop {
        match file.read(&mut buf).unwrap() {
            0 => return hasher.finalize(),
            n => hasher.update(&buf[..n]),
        };
    }
}

/// The peak resident memory a `SNAP_TIMING` run reported, in MiB.
fn peak_mib(d: &Path, args: &[&str]) -> u64 {
    let out = snap_cmd(d, args).env("SNAP_TIMING", "1").output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    let kb = (stderr(&out).lines())
        .filter_map(|l| l.split("VmHWM: ").nth(1))
        .filter_map(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .max()
        .expect("SNAP_TIMING reports VmHWM");
    kb / 1024
}

fn pack_bytes(d: &Path) -> u64 {
    json(d, &["log", "--stats", "-n", "1"])["stats"]["pack_bytes"]
        .as_u64()
        .unwrap()
}

/// A line of text repeated to `len` bytes: a CSV an agent truncates.
fn text(len: usize) -> Vec<u8> {
    let line = b"2026-12-06,training,loss=0.0421,acc=0.9813,lr=0.0003\n";
    line.iter().copied().cycle().take(len).collect()
}

/// The session: an agent deletes one large file and truncates another; undo brings
/// both back byte for byte, redo takes them away again, all under the conservation oracle
/// and in bounded memory; the next save reads nothing again.
#[test]
fn large_files_deleted_and_truncated_come_back_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "src/main.rs", b"fn main() {}\n");
    write(d, "data/model.bin", &noise(96 << 20, 1));
    write(d, "data/train.csv", &text(72 << 20));
    let (model, csv) = (
        hash(&d.join("data/model.bin")),
        hash(&d.join("data/train.csv")),
    );
    let first = json(d, &["save"]);
    let added: Vec<&str> = (first["large_added"].as_array().unwrap().iter())
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(added, ["data/model.bin", "data/train.csv"]);
    assert_eq!(first["large_added"][0]["size"], 96u64 << 20);

    std::fs::remove_file(d.join("data/model.bin")).unwrap();
    std::fs::File::create(d.join("data/train.csv")).unwrap();
    let second = json(d, &["save"]);
    assert_eq!(second["large_added"], serde_json::json!([]));

    let undo = conserving(d, &["undo"]);
    assert!(undo.status.success(), "{}", stderr(&undo));
    assert_eq!(hash(&d.join("data/model.bin")), model);
    assert_eq!(hash(&d.join("data/train.csv")), csv);
    assert_eq!(json(d, &["status"])["clean"], true);

    // The restore vouched for what it wrote: the next save reads neither file again.
    let timing = snap_cmd(d, &["save"])
        .env("SNAP_TIMING", "1")
        .output()
        .unwrap();
    let stored = stderr(&timing);
    assert!(stored.contains("files stored (0 hashed"), "{stored}");

    let redo = conserving(d, &["redo"]);
    assert!(redo.status.success(), "{}", stderr(&redo));
    assert!(!d.join("data/model.bin").exists());
    assert_eq!(
        std::fs::metadata(d.join("data/train.csv")).unwrap().len(),
        0
    );
    assert!(peak_mib(d, &["undo"]) < 256, "undo over 256 MB");
    assert_eq!(hash(&d.join("data/model.bin")), model);
}

/// Appending a line to a large file stores about one chunk; renaming it stores nothing new;
/// undo of both is byte-identical; save and undo stay under 256 MB.
#[test]
fn an_append_costs_about_one_chunk_and_a_rename_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "big.bin", &noise(80 << 20, 7));
    assert!(peak_mib(d, &["save"]) < 256, "first save over 256 MB");
    let before = hash(&d.join("big.bin"));
    let packs = pack_bytes(d);

    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(d.join("big.bin"))
        .unwrap();
    f.write_all(b"one more line\n").unwrap();
    drop(f);
    ok(d, &["save"]);
    let grown = pack_bytes(d) - packs;
    assert!(
        grown < 3 * (4 << 20),
        "an appended line grew the store by {grown} bytes"
    );

    std::fs::rename(d.join("big.bin"), d.join("moved.bin")).unwrap();
    let at = pack_bytes(d);
    ok(d, &["save"]);
    assert!(
        pack_bytes(d) - at < 64 << 10,
        "a rename stored the file again"
    );

    assert!(conserving(d, &["undo"]).status.success());
    assert!(conserving(d, &["undo"]).status.success());
    assert_eq!(hash(&d.join("big.bin")), before);
    assert!(!d.join("moved.bin").exists());
}

/// A 2 GiB file, sparse but for a few written pieces, is saved, deleted and brought back
/// byte for byte, its store small (zeros compress and dedupe), in bounded memory.
#[test]
fn a_sparse_two_gib_file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let path = d.join("disk.img");
    let mut f = std::fs::File::create(&path).unwrap();
    f.set_len(2 << 30).unwrap();
    for (i, at) in [0u64, 700 << 20, (2 << 30) - 4096].into_iter().enumerate() {
        f.seek(SeekFrom::Start(at)).unwrap();
        f.write_all(&noise(4096, i as u64 + 11)).unwrap();
    }
    drop(f);
    let want = hash(&path);
    assert!(peak_mib(d, &["save"]) < 256, "save over 256 MB");
    assert!(
        pack_bytes(d) < 16 << 20,
        "2 GiB of mostly zeros took {}",
        pack_bytes(d)
    );
    std::fs::remove_file(&path).unwrap();
    ok(d, &["save"]);
    assert!(peak_mib(d, &["undo"]) < 256, "undo over 256 MB");
    assert_eq!(hash(&path), want);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 2 << 30);
}

/// Past `max_file_size` nothing is kept; the save after such a file is deleted says so, once,
/// and so it does for a file `exclude_paths` names. An undo keeps such a file as it is.
#[test]
fn the_loss_of_a_file_no_snapshot_holds_is_named_by_the_next_save() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"a");
    ok(d, &["save"]);
    write(
        d,
        ".snap/config.toml",
        b"max_file_size = 1000\nexclude_paths = [\"local.env\"]\n",
    );
    write(d, "huge.bin", &noise(5000, 3));
    write(d, "local.env", b"TOKEN=1");
    let first = json(d, &["save"]);
    assert_eq!(first["skipped"]["skipped_too_large"][0]["path"], "huge.bin");
    assert_eq!(first["untracked_removed"], serde_json::json!([]));

    // An undo neither removes nor replaces what it cannot bring back.
    write(d, "a.txt", b"b");
    ok(d, &["save"]);
    assert!(conserving(d, &["undo"]).status.success());
    assert!(d.join("huge.bin").exists() && d.join("local.env").exists());

    std::fs::remove_file(d.join("huge.bin")).unwrap();
    std::fs::remove_file(d.join("local.env")).unwrap();
    let out = snap(d, &["save"]);
    let err = stderr(&out);
    assert!(err.contains("warning: huge.bin (4.9 KiB) is gone"), "{err}");
    assert!(err.contains("local.env"), "{err}");
    let again = json(d, &["save"]);
    assert_eq!(
        again["untracked_removed"],
        serde_json::json!([]),
        "named once"
    );

    // A file that left `exclude_paths` is saved from then on: deleting it loses nothing.
    write(d, "was.env", b"W=1");
    let config = b"max_file_size = 1000\nexclude_paths = [\"./was.env/\"]\n";
    write(d, ".snap/config.toml", config);
    ok(d, &["save"]);
    write(d, ".snap/config.toml", b"max_file_size = 1000\n");
    ok(d, &["save"]);
    std::fs::remove_file(d.join("was.env")).unwrap();
    let saved = json(d, &["save"]);
    assert_eq!(
        saved["untracked_removed"],
        serde_json::json!([]),
        "it was saved"
    );

    write(d, "huge.bin", &noise(5000, 4));
    ok(d, &["save"]);
    std::fs::remove_file(d.join("huge.bin")).unwrap();
    let gone = json(d, &["save"]);
    assert_eq!(
        gone["untracked_removed"],
        serde_json::json!([{"path": "huge.bin", "size": 5000, "reason": "too_large"}])
    );
}

/// `status` names a large file the next save would take; `log --stats` says what large
/// files cost; `cat` streams one out whole.
#[test]
fn status_log_stats_and_cat_show_large_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "small.txt", b"s");
    ok(d, &["save"]);
    write(d, ".snap/config.toml", b"large_file_size = 1048576\n");
    write(d, "blob.bin", &noise(3 << 20, 5));
    let st = json(d, &["status"]);
    assert_eq!(st["large_added"][0]["path"], "blob.bin");
    let text = snap(d, &["status"]);
    assert!(stderr(&text).contains("large file to add: blob.bin (3.0 MiB)"));
    let saved = snap(d, &["save"]);
    assert!(stderr(&saved).contains("large file added: blob.bin (3.0 MiB)"));
    let stats = &json(d, &["log", "--stats"])["stats"]["large_files"];
    assert_eq!(stats["files"], 1);
    assert_eq!(stats["bytes"], 3u64 << 20);
    assert!(stats["stored_bytes"].as_u64().unwrap() >= 3 << 20);
    let cat = snap(d, &["cat", "@", "blob.bin"]);
    assert!(cat.status.success());
    assert_eq!(cat.stdout, noise(3 << 20, 5));
}

/// A large file a job keeps writing while a save reads it: the save still lands, holding
/// either a version the file really had or nothing of it (named), never failing the rest.
#[test]
fn a_large_file_written_during_the_save_never_fails_it() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"a");
    write(d, "run/ckpt.bin", &noise(24 << 20, 8));
    ok(d, &["save"]);
    write(d, "a.txt", b"b");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, stop) = (d.join("run/ckpt.bin"), stop.clone());
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                f.write_all(&[7; 4096]).unwrap();
            }
        })
    };
    let out = json(d, &["save"]);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    assert_eq!(out["created"], true, "a.txt's change is saved");
    let named = (out["skipped"]["skipped_unreadable"]
        .as_array()
        .unwrap()
        .iter())
    .any(|u| u["path"] == "run/ckpt.bin");
    let listed = snap(d, &["cat", "@", "run/ckpt.bin"]);
    assert!(named != listed.status.success(), "named or saved: {out}");
    if listed.status.success() {
        // The writer only appends: every version the file had is a prefix of the last.
        let last = std::fs::read(d.join("run/ckpt.bin")).unwrap();
        assert!(
            last.starts_with(&listed.stdout),
            "a version the file never had"
        );
    }
}
