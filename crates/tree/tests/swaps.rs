//! Reads stay inside the workspace (docs/SAFETY.md): a directory swapped for a symlink to
//! outside while saves run must never bring outside bytes into a snapshot.

#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use snap_tree::{SaveOptions, Workspace};

#[test]
fn a_directory_swapped_for_a_link_mid_save_brings_nothing_in() {
    let (dir, outside) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let root = dir.path().canonicalize().unwrap();
    for i in 0..80 {
        let name = format!("f{i}");
        std::fs::write(outside.path().join(&name), b"OUTSIDE SECRET").unwrap();
        std::fs::create_dir_all(root.join("d")).unwrap();
        std::fs::write(root.join("d").join(&name), format!("inside {i}")).unwrap();
    }
    drop(Workspace::init(&root, None, false).unwrap());
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (root, target, stop) = (root.clone(), outside.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(root.join("d"), root.join("d.real")).unwrap();
                std::os::unix::fs::symlink(&target, root.join("d")).unwrap();
                std::thread::yield_now();
                std::fs::remove_file(root.join("d")).unwrap();
                std::fs::rename(root.join("d.real"), root.join("d")).unwrap();
                std::thread::yield_now();
            }
        })
    };
    let ws = Workspace::discover(&root, None).unwrap();
    let mut saves = 0;
    for round in 0..150 {
        // Each round writes something new, so that every save reads the files again.
        for i in 0..80 {
            let path = root.join(format!("d.real/f{i}"));
            let _ = std::fs::write(&path, format!("inside {i} round {round}"));
            let path = root.join(format!("d/f{i}"));
            if std::fs::symlink_metadata(root.join("d")).is_ok_and(|m| m.is_dir()) {
                let _ = std::fs::write(&path, format!("inside {i} round {round}"));
            }
        }
        let saved = match ws.save(&SaveOptions::default()) {
            Ok(saved) => saved,
            Err(e) => {
                eprintln!("round {round}: {e}");
                continue;
            }
        };
        let Some(snapshot) = saved.snapshot else {
            continue;
        };
        saves += 1;
        for (path, node) in ws.files(&snapshot).unwrap() {
            if node.kind == snap_tree::EntryKind::Dir || node.kind == snap_tree::EntryKind::Symlink
            {
                continue;
            }
            let bytes = ws.read_file(&snapshot, &path).unwrap();
            assert_ne!(
                bytes,
                b"OUTSIDE SECRET",
                "round {round}: {} came from outside",
                String::from_utf8_lossy(&path)
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    eprintln!("{saves} saves recorded under the swaps");
    assert!(saves > 0, "no save finished under the swaps");
}
