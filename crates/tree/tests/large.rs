//! Property test: large files (over the streaming threshold, several chunks each) deleted,
//! truncated, appended to, rewritten in the middle and renamed, with saves, undos and redos
//! in between; after every move the working tree is byte for byte the snapshot's, checked
//! against a model, and every version saved reads back whole.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use proptest::prelude::*;
use snap_store::testing::noise;
use snap_tree::{Run, SaveOptions, Workspace};

const PATHS: [&str; 3] = ["big.bin", "data/log.csv", "moved.bin"];

#[derive(Clone, Debug)]
enum Op {
    Delete(usize),
    Truncate(usize),
    Append(usize, u8),
    Rewrite(usize, u64),
    Rename(usize, usize),
    Save,
    Undo,
    Redo,
}

fn op() -> impl Strategy<Value = Op> {
    let p = 0..PATHS.len();
    prop_oneof![
        1 => p.clone().prop_map(Op::Delete),
        1 => p.clone().prop_map(Op::Truncate),
        2 => (p.clone(), any::<u8>()).prop_map(|(i, b)| Op::Append(i, b)),
        1 => (p.clone(), any::<u64>()).prop_map(|(i, s)| Op::Rewrite(i, s)),
        1 => (p.clone(), p).prop_map(|(a, b)| Op::Rename(a, b)),
        3 => Just(Op::Save),
        2 => Just(Op::Undo),
        1 => Just(Op::Redo),
    ]
}

type Files = BTreeMap<String, Vec<u8>>;

fn on_disk(root: &Path) -> Files {
    PATHS
        .iter()
        .filter_map(|p| Some((p.to_string(), std::fs::read(root.join(p)).ok()?)))
        .collect()
}

fn apply(root: &Path, op: &Op) {
    let at = |i: usize| root.join(PATHS[i]);
    match op {
        Op::Delete(i) => drop(std::fs::remove_file(at(*i))),
        Op::Truncate(i) if at(*i).exists() => drop(std::fs::File::create(at(*i)).unwrap()),
        Op::Append(i, b) if at(*i).exists() => {
            let mut f = std::fs::OpenOptions::new()
                .append(true)
                .open(at(*i))
                .unwrap();
            f.write_all(&[*b; 3]).unwrap();
        }
        Op::Rewrite(i, seed) => {
            std::fs::create_dir_all(at(*i).parent().unwrap()).unwrap();
            let mut bytes = std::fs::read(at(*i)).unwrap_or_else(|_| noise(20 << 20, *seed));
            let mid = bytes.len() / 2;
            let end = (mid + 4096).min(bytes.len());
            bytes[mid..end].copy_from_slice(&noise(end - mid, seed.wrapping_add(1)));
            std::fs::write(at(*i), bytes).unwrap();
        }
        Op::Rename(a, b) if a != b && at(*a).exists() => {
            std::fs::create_dir_all(at(*b).parent().unwrap()).unwrap();
            std::fs::rename(at(*a), at(*b)).unwrap();
        }
        _ => {}
    }
}

/// The files of `PATHS` HEAD's snapshot holds, read back from the store.
fn head_files(ws: &Workspace) -> Files {
    let head = ws.head().unwrap().unwrap();
    PATHS
        .iter()
        .filter_map(|p| Some((p.to_string(), ws.read_file(&head, p.as_bytes()).ok()?)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn large_files_move_through_history_byte_for_byte(ops in proptest::collection::vec(op(), 4..12)) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("data")).unwrap();
        std::fs::write(root.join("big.bin"), noise(24 << 20, 1)).unwrap();
        std::fs::write(root.join("data/log.csv"), b"a,b,c\n".repeat(3 << 20)).unwrap();
        let ws = Workspace::init(root, None, false).unwrap();
        ws.save(&SaveOptions::default()).unwrap();
        // The files each snapshot holds, by tree id: what a move must leave on disk.
        let mut saved: BTreeMap<String, Files> = BTreeMap::new();
        let tree = |ws: &Workspace| ws.head().unwrap().unwrap().record.root.to_hex();
        saved.insert(tree(&ws), on_disk(root));
        for op in &ops {
            match op {
                Op::Save => {
                    ws.save(&SaveOptions::default()).unwrap();
                    saved.insert(tree(&ws), on_disk(root));
                }
                Op::Undo | Op::Redo => {
                    let moved = match op {
                        Op::Undo => ws.undo(1, Run::Apply),
                        _ => ws.redo(1, Run::Apply),
                    };
                    if moved.is_ok() {
                        let now = on_disk(root);
                        prop_assert_eq!(&now, &head_files(&ws), "after {:?}", op);
                        if let Some(want) = saved.get(&tree(&ws)) {
                            prop_assert_eq!(&now, want, "after {:?}", op);
                        }
                    }
                }
                edit => apply(root, edit),
            }
        }
        for entry in ws.log(true).unwrap() {
            let snap = entry.snapshot;
            let Some(files) = saved.get(&snap.record.root.to_hex()) else { continue };
            for (path, bytes) in files {
                prop_assert_eq!(&ws.read_file(&snap, path.as_bytes()).unwrap(), bytes);
            }
        }
    }
}
