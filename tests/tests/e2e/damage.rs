//! A damaged catalog: never a panic, never a damaged row trusted.

use std::path::Path;

use snap_e2e::*;

#[test]
fn a_damaged_catalog_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..30 {
        write(d, &format!("d{}/f{i}", i % 3), format!("{i}").as_bytes());
    }
    ok(d, &["save"]);
    write(d, "d0/f0", b"changed");
    ok(d, &["save"]);
    let catalog = d.join(".snap/catalog.redb");
    let pristine = std::fs::read(&catalog).unwrap();
    // SNAP_CATALOG_ROUNDS and SNAP_CATALOG_SEED run it longer or elsewhere (see the README).
    let rounds = std::env::var("SNAP_CATALOG_ROUNDS").map_or(24, |r| r.parse().unwrap());
    let mut seed = std::env::var("SNAP_CATALOG_SEED")
        .map_or(0x9e37_79b9_7f4a_7c15_u64, |s| s.parse().unwrap());
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for round in 0..rounds {
        let mut bytes = pristine.clone();
        for _ in 0..20 {
            let at = (next() as usize) % bytes.len().saturating_sub(4).max(1);
            bytes[at..at + 4].copy_from_slice(&(next() as u32).to_le_bytes());
        }
        let commands = [
            &["log"][..],
            &["status"],
            &["verify"],
            &["diff"],
            &["save"],
            &["undo"],
            &["restore", "#1"],
            // Reads the damaged catalog's HEAD before rebuilding it from the packs.
            &["repair"],
        ];
        for args in commands {
            std::fs::write(&catalog, &bytes).unwrap();
            let out = snap(d, args);
            let err = stderr(&out);
            assert_ne!(
                out.status.code(),
                Some(101),
                "round {round} {args:?}: {err}"
            );
            assert!(!err.contains("panicked"), "round {round} {args:?}: {err}");
            // A library's panic text is no message for a person.
            assert!(
                !err.contains("unreachable"),
                "round {round} {args:?}: {err}"
            );
            if !out.status.success() {
                // Notices may come first (`snap: an interrupted undo is pending`: an undo on
                // the damaged catalog moved the tree, then could not commit HEAD, so its
                // marker waits for a roll-forward); the failure itself is one error line.
                let last = err.lines().last().unwrap_or("");
                assert!(last.starts_with("error: "), "round {round} {args:?}: {err}");
                let errors = err.lines().filter(|l| l.starts_with("error: ")).count();
                assert_eq!(errors, 1, "round {round} {args:?}: {err}");
            }
        }
    }
    std::fs::write(&catalog, &pristine).unwrap();
}

/// A catalog with 64 bytes of garbage every 8 KiB (the database library panics reading it):
/// every command names the catalog damaged and points at `snap repair` on one line, never
/// an internal error; `verify` reports it as damage (exit 1, with its report), `doctor`
/// as the store's problem; and `repair` brings every snapshot back.
#[test]
fn a_catalog_striped_with_garbage_is_named_damaged_by_every_command() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for i in 0..40 {
        write(d, &format!("d{}/f{i}", i % 4), format!("{i}").as_bytes());
    }
    ok(d, &["save"]);
    for round in 0..3 {
        write(d, "d0/f0", format!("round {round}").as_bytes());
        ok(d, &["save"]);
    }
    let catalog = d.join(".snap/catalog.redb");
    let mut bytes = std::fs::read(&catalog).unwrap();
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    for stripe in (4096..bytes.len()).step_by(8192) {
        for b in bytes.iter_mut().skip(stripe).take(64) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *b = seed as u8;
        }
    }
    std::fs::write(&catalog, &bytes).unwrap();
    for args in [
        &["status"][..],
        &["log"],
        &["show", "@"],
        &["diff"],
        &["save"],
        &["undo"],
    ] {
        let out = snap(d, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("error: the catalog") && err.contains("snap repair"),
            "{args:?}: {err}"
        );
        assert!(
            !err.contains("(the store may be damaged"),
            "{args:?}: {err}"
        );
    }
    let verify = snap(d, &["--json", "verify"]);
    assert_eq!(verify.status.code(), Some(1), "{}", stderr(&verify));
    let report: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["ok"], false, "{report}");
    assert!(
        report["problems"][0]["what"]
            .as_str()
            .unwrap()
            .contains("catalog")
    );
    let doctor = json(d, &["doctor"]);
    assert_eq!(doctor["store_ok"], false, "{doctor}");
    // Each failed before touching anything (the oracle itself needs a readable catalog).
    assert_eq!(read(d, "d0/f0"), "round 2");
    assert_eq!(read(d, "d3/f39"), "39");
    ok(d, &["repair"]);
    assert_eq!(json(d, &["log"])["snapshots"].as_array().unwrap().len(), 4);
    ok(d, &["verify"]);
}

/// Flips one bit of `id` wherever the catalog file holds it as the stat cache row's id of a
/// 5-byte file that is not executable (FORMAT.md 6.1: flags 0 or 2 (settled), the id, then
/// the size as a one-byte varint). Returns how many copies it found.
fn flip_stat_row_id(d: &Path, id: &[u8]) -> usize {
    let path = d.join(".snap/catalog.redb");
    let mut bytes = std::fs::read(&path).unwrap();
    let is_row = |w: &[u8]| matches!(w[0], 0 | 2) && &w[1..33] == id && w[33] == 5;
    let at: Vec<usize> = bytes
        .windows(34)
        .enumerate()
        .filter(|(_, w)| is_row(w))
        .map(|(i, _)| i + 1)
        .collect();
    for &i in &at {
        bytes[i] ^= 0x01;
    }
    std::fs::write(&path, bytes).unwrap();
    at.len()
}

#[test]
fn a_flipped_bit_in_the_stat_cache_is_caught_and_never_recorded() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"hello");
    write(d, "g", b"one");
    std::fs::set_permissions(d.join("f"), std::fs::Permissions::from_mode(0o644)).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    ok(d, &["save"]);
    let ls = json(d, &["ls", "@"]);
    let hex = ls["entries"][0]["id"].as_str().unwrap();
    let id: Vec<u8> = (0..32)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert!(flip_stat_row_id(d, &id) > 0, "no stat cache row found");
    let out = snap(d, &["verify", "--read-data"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "verify passed a damaged cache row"
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("stat cache row"),
        "{out:?}"
    );
    // A save that looks f up in the stat cache reads f again instead of trusting the row.
    write(d, "g", b"two");
    ok(d, &["save"]);
    assert_eq!(ok(d, &["cat", "@", "f"]), "hello");
    ok(d, &["verify", "--read-data"]);
}
