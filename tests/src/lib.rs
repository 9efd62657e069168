//! The harness of the end-to-end suites: runs the `snap` binary built from this checkout in
//! temp directories, reads trees back, and checks the conservation oracle (docs/SAFETY.md).
//!
//! The binaries belong to another package, so Cargo gives these tests no `CARGO_BIN_EXE_*`:
//! [`bin`] builds them once per test process (`cargo build -p snap-undo --bins --features
//! testing`, in the same profile and target directory as the tests), or takes
//! `SNAP_E2E_BIN_DIR` to test binaries built or installed elsewhere. Binaries without the
//! `testing` feature have no failpoints or injected faults: the suites that need them skip,
//! saying so ([`test_hooks`]).

#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::Value;

pub mod powerloss;
pub mod seaweed;

/// The path of binary `name` (`snap` or `snap-undo`) of this checkout, built on first use.
pub fn bin(name: &str) -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("SNAP_E2E_BIN_DIR") {
            return PathBuf::from(dir);
        }
        // The test executable is `<target>/<profile>/deps/<test>-<hash>`.
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().unwrap().parent().unwrap().to_path_buf();
        let target = profile_dir.parent().unwrap();
        let mut cargo = Command::new(std::env::var_os("CARGO").unwrap_or("cargo".into()));
        cargo
            .args([
                "build",
                "--quiet",
                "-p",
                "snap-undo",
                "--bins",
                "--features",
                "testing",
                "--target-dir",
            ])
            .arg(target)
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        match profile_dir.file_name().and_then(|n| n.to_str()) {
            Some("debug") => {}
            Some(profile) => {
                cargo.args(["--profile", profile]);
            }
            None => panic!("no profile directory above {}", exe.display()),
        }
        let status = cargo
            .status()
            .expect("run cargo to build the snap binaries");
        assert!(status.success(), "building the snap binaries failed");
        profile_dir
    })
    .join(name)
}

/// True when the binaries under test have snap's test hooks (failpoints, injected faults,
/// the durability journal): always for the ones [`bin`] builds; probed once for binaries
/// from `SNAP_E2E_BIN_DIR` (a save told to die at its first pack must die). When they have
/// none, says on stderr that the calling suite is skipped.
pub fn test_hooks() -> bool {
    static HOOKS: OnceLock<bool> = OnceLock::new();
    let hooks = *HOOKS.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"probe").unwrap();
        let out = snap_cmd(dir.path(), &["save"])
            .env("SNAP_FAILPOINT", "pack-written")
            .output()
            .unwrap();
        out.status.code().is_none()
    });
    if !hooks {
        eprintln!(
            "skipped: the binaries in SNAP_E2E_BIN_DIR have no test hooks (build them with \
             --features testing to run this suite)"
        );
    }
    hooks
}

/// The repository's `docs/` directory.
pub fn docs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs")
}

/// The passphrase every suite's remotes are made and opened with: a new remote is encrypted
/// by default, so the suites run the encrypted layout unless one asks for a plain remote.
pub const TEST_PASSPHRASE: &str = "correct horse battery staple";

pub fn snap_cmd(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(bin("snap"));
    cmd.arg("-C")
        .arg(dir)
        .args(args)
        .env_remove("SNAP_STORE")
        .env_remove("SNAP_DISABLE")
        .env_remove("SNAP_REMOTE_NEW_PASSWORD")
        .env("SNAP_REMOTE_PASSWORD", TEST_PASSPHRASE)
        .env("HOME", "/nonexistent-home");
    cmd
}

pub fn snap(dir: &Path, args: &[&str]) -> Output {
    snap_cmd(dir, args).output().expect("run snap")
}

/// Runs snap and insists on success; returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = snap(dir, args);
    assert!(
        out.status.success(),
        "snap {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

pub fn json(dir: &Path, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    serde_json::from_str(&ok(dir, &all)).unwrap()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn write(root: &Path, path: &str, content: &[u8]) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

pub fn read(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(path)).unwrap()
}

/// A digest of every tracked path in the tree: path, kind and content.
pub fn tree_digest(root: &Path) -> BTreeMap<String, Vec<u8>> {
    on_disk(root, true)
}

/// Every entry under `root` but the store: files with their bytes, symlinks with their
/// targets, FIFOs, sockets and devices as `<special>`, and directories as `<dir>` when `dirs`.
pub fn on_disk(root: &Path, dirs: bool) -> Tree {
    let mut out = Tree::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let t = e.file_type().unwrap();
            if rel == ".snap" {
                continue;
            } else if t.is_dir() {
                stack.push(e.path());
                if dirs {
                    out.insert(rel, b"<dir>".to_vec());
                }
            } else if t.is_symlink() {
                let target = std::fs::read_link(e.path()).unwrap();
                out.insert(rel, target.to_string_lossy().as_bytes().to_vec());
            } else if t.is_file() {
                out.insert(rel, std::fs::read(e.path()).unwrap());
            } else {
                // A FIFO, socket or device: its kind, never opened (a FIFO would block).
                out.insert(rel, b"<special>".to_vec());
            }
        }
    }
    out
}

/// Two states of a small tree: A is saved as #1, B as #2 (B's save is left to the caller).
pub fn two_states(d: &Path) -> (BTreeMap<String, Vec<u8>>, BTreeMap<String, Vec<u8>>) {
    for i in 0..40 {
        write(
            d,
            &format!("dir{}/f{i}", i % 4),
            format!("A {i}\n").repeat(50).as_bytes(),
        );
    }
    ok(d, &["save"]);
    let a = tree_digest(d);
    for i in 0..40 {
        if i % 5 == 0 {
            std::fs::remove_file(d.join(format!("dir{}/f{i}", i % 4))).unwrap();
        } else {
            write(
                d,
                &format!("dir{}/f{i}", i % 4),
                format!("B {i}\n").repeat(60).as_bytes(),
            );
        }
    }
    write(d, "newdir/added", b"B only");
    (a, tree_digest(d))
}

pub type Tree = BTreeMap<String, Vec<u8>>;

pub fn seqs(d: &Path) -> Vec<Value> {
    json(d, &["log", "--all"])["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["seq"].clone())
        .collect()
}

/// The store verifies, every snapshot the log lists reads back, and so after a gc.
pub fn check_store(d: &Path, at: &str) {
    assert_eq!(json(d, &["verify", "--read-data"])["ok"], true, "{at}");
    for s in json(d, &["log", "--all"])["snapshots"].as_array().unwrap() {
        let seq = format!("#{}", s["seq"]);
        for e in json(d, &["ls", &seq])["entries"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["kind"] == "file")
        {
            // Any bytes, not only text: `ok` would read them as UTF-8.
            let path = e["path"].as_str().unwrap();
            let out = snap(d, &["cat", &seq, path]);
            assert!(
                out.status.success(),
                "{at}: cat {seq} {path}: {}",
                stderr(&out)
            );
        }
    }
    ok(d, &["gc"]);
    assert_eq!(
        json(d, &["verify", "--read-data"])["ok"],
        true,
        "{at}, after gc"
    );
}

// ---- The safety invariant (docs/SAFETY.md) ----

/// Every file and symlink under `root` (the store aside), ignored ones included, with its
/// bytes (a symlink's target for a link).
pub fn everything(root: &Path) -> Tree {
    on_disk(root, false)
}

/// The conservation oracle: every file that was in `before` is still at its path with its
/// bytes, or some snapshot that `log --all` lists holds those bytes at that path. A killed
/// move's temporary files (`.snap-tmp-<op>-<pid>-<n>`) are snap's, not the user's: the
/// roll-forward removes them once it finds their content stored (FORMAT.md 7.2).
pub fn assert_conserved(d: &Path, before: &Tree, what: &str) {
    let now = everything(d);
    let seqs = seqs(d);
    let snaps_own = |path: &str| {
        let name = path.rsplit('/').next().unwrap_or(path);
        snap_tree::is_temp_name(name.as_bytes())
    };
    for (path, bytes) in before.iter().filter(|(p, _)| !snaps_own(p)) {
        if now.get(path) == Some(bytes) {
            continue;
        }
        let saved = seqs.iter().any(|seq| {
            let out = snap(d, &["cat", &format!("#{seq}"), path]);
            out.status.success() && &out.stdout == bytes
        });
        assert!(saved, "{what}: {path} ({} bytes) was lost", bytes.len());
    }
}

/// Runs snap with `args`, checks the oracle around it, and returns the output.
pub fn conserving(d: &Path, args: &[&str]) -> Output {
    let before = everything(d);
    let out = snap(d, args);
    assert_ne!(
        out.status.code(),
        Some(101),
        "{args:?} panicked: {}",
        stderr(&out)
    );
    assert_conserved(d, &before, &format!("snap {args:?}"));
    out
}

/// Runs snap with `args` and a failpoint that kills it there; it must die by the signal.
pub fn killed_at(d: &Path, args: &[&str], point: &str) {
    assert!(
        test_hooks(),
        "killed_at needs binaries with the testing feature"
    );
    let out = snap_cmd(d, args)
        .env("SNAP_FAILPOINT", point)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "{}", stderr(&out));
}

/// `snap --store STORE ARGS` run in `dir` (which need not be a workspace root).
pub fn with_store(dir: &Path, store: &Path, args: &[&str]) -> Output {
    let mut all = vec!["--store", store.to_str().unwrap()];
    all.extend_from_slice(args);
    snap(dir, &all)
}

pub fn mode_of(d: &Path, path: &str) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::symlink_metadata(d.join(path))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

pub fn chmod(d: &Path, path: &str, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(d.join(path), std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A read-only bind mount of `src` at a new temp dir, unmounted on drop. `None` where
/// mounting is not allowed (not root).
#[derive(Debug)]
pub struct ReadOnlyMount(pub tempfile::TempDir);

impl ReadOnlyMount {
    pub fn of(src: &Path) -> Option<ReadOnlyMount> {
        let dir = tempfile::tempdir().ok()?;
        let at = dir.path().to_path_buf();
        let run = |args: &[&str]| {
            Command::new("mount")
                .args(args)
                .arg(&at)
                .output()
                .is_ok_and(|o| o.status.success())
        };
        let src = src.to_str()?;
        if !run(&["--bind", src]) {
            return None;
        }
        let mount = ReadOnlyMount(dir);
        run(&["-o", "remount,ro,bind"]).then_some(mount)
    }
}

impl Drop for ReadOnlyMount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).output();
    }
}

/// A pseudo-random number generator for the random-instant kill suites (64-bit LCG, the
/// high bits): the same seed, the same rounds.
#[derive(Debug)]
pub struct Lcg(pub u64);

impl Lcg {
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = (self.0)
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n.max(1)
    }
}

/// The number environment variable `name` holds, else `default`.
pub fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}
