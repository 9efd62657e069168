//! Property test: random edits interleaved with save, undo, redo and restore, checked byte for
//! byte (content, exec bit, symlink target, empty directories) against an in-memory model of
//! the working tree and of the history rules of ARCHITECTURE.md after every step.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use proptest::prelude::*;
use snap_tree::{SaveOptions, TreeError, Workspace};

const FILES: [&str; 5] = ["a", "b", "d/x", "d/e/z", "g/h"];
const EMPTY_DIRS: [&str; 2] = ["emp", "d/e/q"];

#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    File(Vec<u8>, bool),
    Link(String),
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    files: BTreeMap<String, Entry>,
    dirs: BTreeSet<String>,
}

#[derive(Clone, Debug)]
enum Op {
    Write(usize, Vec<u8>),
    Delete(usize),
    Chmod(usize, bool),
    Symlink(usize, usize),
    EmptyDir(usize),
    Rename(usize, usize),
    Save,
    Undo(u64),
    Redo(u64),
    Restore(usize),
    /// Snapshot (index), step size, and the path exported (index into `EXPORTED`, or all).
    Export(usize, usize, Option<usize>),
}

/// Paths an export may be limited to: files, directories, and one that is never there.
const EXPORTED: [&str; 6] = ["a", "d", "d/e", "d/e/z", "g", "nowhere"];

fn op() -> impl Strategy<Value = Op> {
    let f = 0..FILES.len();
    prop_oneof![
        3 => (f.clone(), proptest::collection::vec(any::<u8>(), 0..40)).prop_map(|(i, c)| Op::Write(i, c)),
        1 => f.clone().prop_map(Op::Delete),
        1 => (f.clone(), any::<bool>()).prop_map(|(i, x)| Op::Chmod(i, x)),
        1 => (f.clone(), f.clone()).prop_map(|(i, t)| Op::Symlink(i, t)),
        1 => (0..EMPTY_DIRS.len()).prop_map(Op::EmptyDir),
        1 => (f.clone(), f).prop_map(|(a, b)| Op::Rename(a, b)),
        3 => Just(Op::Save),
        2 => (1..3u64).prop_map(Op::Undo),
        2 => (1..3u64).prop_map(Op::Redo),
        1 => (0..8usize).prop_map(Op::Restore),
        1 => (0..8usize, 1..5usize, proptest::option::of(0..EXPORTED.len()))
            .prop_map(|(k, step, path)| Op::Export(k, step, path)),
    ]
}

/// The history rules, as the model sees them.
#[derive(Default)]
struct Model {
    wt: State,
    snaps: BTreeMap<u64, (State, Option<u64>)>,
    head: Option<u64>,
    redo: Vec<u64>,
}

impl Model {
    fn add(&mut self, state: State, parent: Option<u64>) -> u64 {
        let seq = self.snaps.len() as u64 + 1;
        self.snaps.insert(seq, (state, parent));
        seq
    }

    fn head_state(&self) -> Option<&State> {
        self.head.map(|h| &self.snaps[&h].0)
    }

    fn dirty(&self) -> bool {
        self.head_state() != Some(&self.wt)
    }

    fn save(&mut self) {
        if self.dirty() {
            self.head = Some(self.add(self.wt.clone(), self.head));
            self.redo.clear();
        }
    }

    fn depth(&self, mut seq: u64) -> u64 {
        let mut d = 0;
        while let Some(p) = self.snaps[&seq].1 {
            d += 1;
            seq = p;
        }
        d
    }

    /// Returns false when there is nothing to undo (and nothing changes).
    fn undo(&mut self, n: u64) -> bool {
        let Some(head) = self.head else { return false };
        let steps = if self.dirty() { n - 1 } else { n };
        if self.depth(head) < steps {
            return false;
        }
        if self.dirty() {
            self.save();
        }
        let mut seq = self.head.unwrap_or(head);
        for _ in 0..n {
            self.redo.push(seq);
            seq = self.snaps[&seq].1.unwrap_or(seq);
        }
        self.head = Some(seq);
        self.wt = self.snaps[&seq].0.clone();
        true
    }

    fn redo(&mut self, n: u64) -> bool {
        if (self.redo.len() as u64) < n {
            return false;
        }
        if self.dirty() {
            self.add(self.wt.clone(), self.head);
        }
        let mut seq = 0;
        for _ in 0..n {
            seq = self.redo.pop().unwrap_or(seq);
        }
        self.head = Some(seq);
        self.wt = self.snaps[&seq].0.clone();
        true
    }

    fn restore(&mut self, seq: u64) {
        let source = self.snaps[&seq].0.clone();
        // Unsaved changes are saved first; a tree that already matches the source then
        // needs nothing more (HEAD names it: the snapshot of those changes, if any).
        self.save();
        if source == self.wt {
            return;
        }
        self.head = Some(self.add(source.clone(), self.head));
        self.redo.clear();
        self.wt = source;
    }
}

fn ensure_parents(state: &mut State, path: &str) {
    let mut p = Path::new(path).parent();
    while let Some(dir) = p.filter(|d| !d.as_os_str().is_empty()) {
        state.dirs.insert(dir.to_string_lossy().into_owned());
        p = dir.parent();
    }
}

/// Applies an edit to the disk and the model alike.
fn edit(root: &Path, model: &mut State, op: &Op) {
    let write_parents = |state: &mut State, path: &str| {
        ensure_parents(state, path);
        if let Some(parent) = root.join(path).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
    };
    match op {
        Op::Write(i, content) => {
            let path = FILES[*i];
            write_parents(model, path);
            let exec = matches!(model.files.get(path), Some(Entry::File(_, true)));
            let _ = std::fs::remove_file(root.join(path));
            std::fs::write(root.join(path), content).unwrap();
            set_exec(&root.join(path), exec);
            model
                .files
                .insert(path.into(), Entry::File(content.clone(), exec));
        }
        Op::Delete(i) => {
            if model.files.remove(FILES[*i]).is_some() {
                std::fs::remove_file(root.join(FILES[*i])).unwrap();
            }
        }
        Op::Chmod(i, exec) => {
            if let Some(Entry::File(_, x)) = model.files.get_mut(FILES[*i]) {
                *x = *exec;
                set_exec(&root.join(FILES[*i]), *exec);
            }
        }
        Op::Symlink(i, t) => {
            let path = FILES[*i];
            write_parents(model, path);
            let _ = std::fs::remove_file(root.join(path));
            std::os::unix::fs::symlink(FILES[*t], root.join(path)).unwrap();
            model
                .files
                .insert(path.into(), Entry::Link(FILES[*t].into()));
        }
        Op::EmptyDir(i) => {
            std::fs::create_dir_all(root.join(EMPTY_DIRS[*i])).unwrap();
            model.dirs.insert(EMPTY_DIRS[*i].into());
            ensure_parents(model, EMPTY_DIRS[*i]);
        }
        Op::Rename(a, b) => {
            let (a, b) = (FILES[*a], FILES[*b]);
            if a != b
                && let Some(entry) = model.files.remove(a)
            {
                write_parents(model, b);
                std::fs::rename(root.join(a), root.join(b)).unwrap();
                model.files.insert(b.into(), entry);
            }
        }
        _ => unreachable!("not an edit"),
    }
}

fn set_exec(path: &Path, exec: bool) {
    std::fs::set_permissions(
        path,
        std::fs::Permissions::from_mode(if exec { 0o755 } else { 0o644 }),
    )
    .unwrap();
}

/// Reads the working tree back into a `State`.
fn read_disk(root: &Path) -> State {
    let mut state = State::default();
    read_dir(root, "", &mut state);
    state
}

fn read_dir(root: &Path, rel: &str, state: &mut State) {
    for entry in std::fs::read_dir(root.join(rel)).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().into_string().unwrap();
        let path = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if path == ".snap" {
            continue;
        }
        let meta = std::fs::symlink_metadata(entry.path()).unwrap();
        if meta.is_dir() {
            state.dirs.insert(path.clone());
            read_dir(root, &path, state);
        } else if meta.file_type().is_symlink() {
            state.files.insert(
                path,
                Entry::Link(
                    std::fs::read_link(entry.path())
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                ),
            );
        } else {
            state.files.insert(
                path,
                Entry::File(
                    std::fs::read(entry.path()).unwrap(),
                    meta.permissions().mode() & 0o100 != 0,
                ),
            );
        }
    }
}

fn run(ops: Vec<Op>) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    drop(Workspace::init(root, None, false).unwrap());
    let mut model = Model::default();
    for op in &ops {
        let ws = Workspace::discover(root, None).unwrap();
        match op {
            Op::Save => {
                ws.save(&SaveOptions::default()).unwrap();
                model.save();
            }
            Op::Undo(n) => {
                let ok = model.undo(*n);
                match ws.undo(*n, snap_tree::Run::Apply) {
                    Ok(_) => prop_assert!(ok, "undo {n} succeeded, model says nothing to undo"),
                    Err(e @ TreeError::NothingToUndo(_)) => {
                        prop_assert!(!ok, "undo {n} refused: {e}")
                    }
                    Err(e) => panic!("undo failed: {e}"),
                }
            }
            Op::Redo(n) => {
                let ok = model.redo(*n);
                match ws.redo(*n, snap_tree::Run::Apply) {
                    Ok(_) => prop_assert!(ok, "redo {n} succeeded, model says nothing to redo"),
                    Err(e @ TreeError::NothingToRedo(_)) => {
                        prop_assert!(!ok, "redo {n} refused: {e}")
                    }
                    Err(e) => panic!("redo failed: {e}"),
                }
            }
            Op::Restore(k) => {
                if model.snaps.is_empty() {
                    continue;
                }
                let seq = (*k as u64 % model.snaps.len() as u64) + 1;
                ws.restore(&format!("#{seq}"), &[], snap_tree::Run::Apply)
                    .unwrap();
                model.restore(seq);
            }
            Op::Export(k, step, path) => {
                if model.snaps.is_empty() {
                    continue;
                }
                let seq = (*k as u64 % model.snaps.len() as u64) + 1;
                export_matches(&ws, &model.snaps[&seq].0, seq, *step, *path)?;
            }
            edit_op => edit(root, &mut model.wt, edit_op),
        }
        prop_assert_eq!(
            &read_disk(root),
            &model.wt,
            "working tree differs from the model after {:?}",
            op
        );
        let head = ws.head().unwrap().map(|h| h.record.seq);
        prop_assert_eq!(head, model.head, "HEAD differs after {:?}", op);
    }
    Ok(())
}

/// Exports snapshot `seq` in steps of `step` entries (of `EXPORTED[path]` only, when given)
/// into a new directory, and checks that it holds exactly what the snapshot does there: the
/// path, everything under it, and the directories above it.
fn export_matches(
    ws: &Workspace,
    snap: &State,
    seq: u64,
    step: usize,
    path: Option<usize>,
) -> Result<(), TestCaseError> {
    let out = tempfile::tempdir().unwrap();
    let dest = out.path().join("export");
    let paths: Vec<Vec<u8>> = path
        .map(|i| EXPORTED[i].as_bytes().to_vec())
        .into_iter()
        .collect();
    let result = ws.export_in_steps(&format!("#{seq}"), &paths, &dest, step);
    let Some(p) = path.map(|i| EXPORTED[i]) else {
        result.unwrap();
        prop_assert_eq!(
            &read_disk(&dest),
            snap,
            "export of #{} in steps of {}",
            seq,
            step
        );
        return Ok(());
    };
    let within = |q: &str| q == p || q.starts_with(&format!("{p}/"));
    let above = |q: &str| p.starts_with(&format!("{q}/"));
    let want = State {
        files: snap
            .files
            .iter()
            .filter(|(q, _)| within(q))
            .map(|(q, e)| (q.clone(), e.clone()))
            .collect(),
        dirs: snap
            .dirs
            .iter()
            .filter(|q| within(q) || above(q))
            .cloned()
            .collect(),
    };
    if want.files.is_empty() && !want.dirs.contains(p) {
        prop_assert!(
            matches!(result, Err(TreeError::PathNotInSnapshot(..))),
            "{:?}",
            result
        );
        prop_assert!(!dest.exists(), "a refused export creates nothing");
        return Ok(());
    }
    let files = result.unwrap().files;
    prop_assert_eq!(files, want.files.len());
    prop_assert_eq!(
        &read_disk(&dest),
        &want,
        "export of {} from #{} in steps of {}",
        p,
        seq,
        step
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn history_matches_the_model(ops in proptest::collection::vec(op(), 1..40)) {
        run(ops)?;
    }
}

#[test]
fn restore_of_paths_keeps_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let ws = Workspace::init(root, None, false).unwrap();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/a"), "1").unwrap();
    std::fs::write(root.join("b"), "1").unwrap();
    ws.save(&SaveOptions::default()).unwrap();
    std::fs::write(root.join("src/a"), "2").unwrap();
    std::fs::write(root.join("b"), "2").unwrap();
    ws.save(&SaveOptions::default()).unwrap();
    let out = ws
        .restore("#1", &[b"src".to_vec()], snap_tree::Run::Apply)
        .unwrap();
    assert_eq!(out.changes.len(), 1);
    assert_eq!(std::fs::read(root.join("src/a")).unwrap(), b"1");
    assert_eq!(std::fs::read(root.join("b")).unwrap(), b"2");
    ws.undo(1, snap_tree::Run::Apply).unwrap();
    assert_eq!(std::fs::read(root.join("src/a")).unwrap(), b"2");
}

#[test]
fn exec_bits_and_links_survive_undo_and_redo() {
    use Op::*;
    let ops = vec![
        Write(0, b"x".to_vec()),
        Chmod(0, true),
        Symlink(1, 0),
        Save,
        Write(0, b"y".to_vec()),
        Chmod(0, false),
        Delete(1),
        Save,
        Undo(1),
        Redo(1),
        Undo(1),
    ];
    run(ops).unwrap();
}
