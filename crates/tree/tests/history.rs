//! `Workspace::log_touching` (the log of only the snapshots that changed some paths, found by
//! reading the trees along those paths) and `Workspace::blame`, checked against a replay.

#![allow(clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt;

use snap_tree::{SaveOptions, Workspace};

fn seqs(ws: &Workspace, paths: &[&str]) -> Vec<u64> {
    let paths: Vec<Vec<u8>> = paths.iter().map(|p| p.as_bytes().to_vec()).collect();
    (ws.log_touching(true, &paths).unwrap().iter())
        .map(|e| e.snapshot.record.seq)
        .collect()
}

#[test]
fn only_the_snapshots_that_changed_a_path_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let save = |ws: &Workspace| ws.save(&SaveOptions::default()).unwrap();
    std::fs::create_dir_all(root.join("b/deep")).unwrap();
    std::fs::write(root.join("a.txt"), "1").unwrap();
    std::fs::write(root.join("b/deep/c.txt"), "1").unwrap();
    let ws = Workspace::init(root, None, false).unwrap();
    save(&ws); // #1: everything
    std::fs::write(root.join("a.txt"), "2").unwrap();
    save(&ws); // #2: a.txt
    std::fs::write(root.join("b/deep/c.txt"), "2").unwrap();
    save(&ws); // #3: b/deep/c.txt
    std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o755)).unwrap();
    save(&ws); // #4: a.txt's mode
    std::fs::remove_file(root.join("b/deep/c.txt")).unwrap();
    save(&ws); // #5: c.txt gone (b/deep stays, empty)
    std::fs::write(root.join("d.txt"), "new").unwrap();
    save(&ws); // #6: d.txt
    assert_eq!(seqs(&ws, &["a.txt"]), [4, 2, 1]);
    assert_eq!(seqs(&ws, &["b"]), [5, 3, 1]);
    assert_eq!(seqs(&ws, &["b/deep/c.txt"]), [5, 3, 1]);
    assert_eq!(seqs(&ws, &["d.txt"]), [6]);
    assert_eq!(seqs(&ws, &["a.txt", "d.txt"]), [6, 4, 2, 1]);
    assert_eq!(seqs(&ws, &["nowhere"]), Vec::<u64>::new());
    assert_eq!(seqs(&ws, &[""]), [6, 5, 4, 3, 2, 1]);
    // An undone snapshot is on the redo stack, still listed; the undo itself is a move, not
    // a snapshot.
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(seqs(&ws, &["d.txt"]), [6]);
}

/// Each line is credited to the snapshot that brought it: lines kept across edits keep their
/// first snapshot, an edited line its edit's, a mode-only change credits nothing, a restore
/// brings lines back as its own; binary files and absent paths are refused.
#[test]
fn blame_credits_each_line_to_the_snapshot_that_brought_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let f = root.join("f.txt");
    let ws = Workspace::init(root, None, false).unwrap();
    let save = |text: &str| {
        std::fs::write(&f, text).unwrap();
        ws.save(&SaveOptions::default())
            .unwrap()
            .snapshot
            .unwrap()
            .record
            .seq
    };
    let blamed = |ws: &Workspace| -> Vec<(String, u64)> {
        let head = ws.head().unwrap().unwrap();
        (ws.blame(&head, b"f.txt").unwrap().into_iter())
            .map(|l| (String::from_utf8(l.text).unwrap(), l.snapshot.record.seq))
            .collect()
    };
    assert_eq!(save("a\nb\nc\n"), 1);
    assert_eq!(save("a\nB\nc\nd\n"), 2);
    std::fs::write(root.join("other"), "x").unwrap();
    ws.save(&SaveOptions::default()).unwrap(); // #3: f.txt untouched
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o755)).unwrap();
    ws.save(&SaveOptions::default()).unwrap(); // #4: its mode only
    assert_eq!(save("z\na\nB\nc\nd"), 5);
    let want = [("z", 5), ("a", 1), ("B", 2), ("c", 1), ("d", 5)];
    let got = blamed(&ws);
    assert_eq!(got, want.map(|(t, s)| (t.to_string(), s)));
    // The first version, restored: the line it brings back is the restore's; the lines the
    // version before it kept are still their first snapshot's.
    ws.restore("#1", &[], snap_tree::Run::Apply).unwrap();
    let restore_seq = ws.head().unwrap().unwrap().record.seq;
    let want = [("a", 1), ("b", restore_seq), ("c", 1)];
    assert_eq!(blamed(&ws), want.map(|(t, s)| (t.to_string(), s)));
    std::fs::write(root.join("bin"), [0u8, 1, 2]).unwrap();
    ws.save(&SaveOptions::default()).unwrap();
    let head = ws.head().unwrap().unwrap();
    assert!(ws.blame(&head, b"bin").is_err());
    assert!(ws.blame(&head, b"nowhere").is_err());
}

/// One edit of the replayed file: at a position (taken modulo the file's length).
#[derive(Clone, Debug)]
enum Edit {
    Insert(usize),
    Delete(usize),
    Replace(usize),
    /// Saves something else: the file is not in this snapshot's change.
    Elsewhere,
}

fn edit() -> impl proptest::strategy::Strategy<Value = Vec<Edit>> {
    use proptest::prelude::{Strategy, any, prop_oneof};
    let one = prop_oneof![
        3 => any::<usize>().prop_map(Edit::Insert),
        1 => any::<usize>().prop_map(Edit::Delete),
        2 => any::<usize>().prop_map(Edit::Replace),
        1 => proptest::strategy::Just(Edit::Elsewhere),
    ];
    proptest::collection::vec(proptest::collection::vec(one, 1..4), 1..12)
        .prop_map(|saves| saves.into_iter().flatten().collect())
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 48, ..Default::default() })]
    /// Blame against a replay: every line is unique, and the replay remembers which save
    /// wrote it, so its answer is exact; blame must give the same, line for line.
    #[test]
    fn blame_agrees_with_a_replay_of_the_history(edits in edit()) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let ws = Workspace::init(root, None, false).unwrap();
        // The replay: the file's lines, each with the sequence number of the save that wrote it.
        let mut lines: Vec<(String, u64)> = vec![("first".into(), 1)];
        let mut fresh = 0u64;
        let write = |lines: &[(String, u64)]| {
            let text: String = lines.iter().map(|(t, _)| format!("{t}\n")).collect();
            std::fs::write(root.join("f.txt"), text).unwrap();
        };
        write(&lines);
        let mut seq = ws.save(&SaveOptions::default()).unwrap().snapshot.unwrap().record.seq;
        for e in edits {
            let next = seq + 1;
            let mut name = || { fresh += 1; format!("line {fresh}") };
            match e {
                Edit::Insert(at) => lines.insert(at % (lines.len() + 1), (name(), next)),
                Edit::Delete(at) if lines.len() > 1 => { lines.remove(at % lines.len()); }
                Edit::Delete(_) => continue,
                Edit::Replace(at) => { let at = at % lines.len(); lines[at] = (name(), next); }
                Edit::Elsewhere => std::fs::write(root.join("other.txt"), name()).unwrap(),
            }
            write(&lines);
            seq = ws.save(&SaveOptions::default()).unwrap().snapshot.unwrap().record.seq;
            proptest::prop_assert_eq!(seq, next);
        }
        let head = ws.head().unwrap().unwrap();
        let got: Vec<(String, u64)> = (ws.blame(&head, b"f.txt").unwrap().into_iter())
            .map(|l| (String::from_utf8(l.text).unwrap(), l.snapshot.record.seq))
            .collect();
        proptest::prop_assert_eq!(got, lines);
    }
}
