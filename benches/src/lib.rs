//! Benchmark support: a deterministic workload generator shaped like a large repository, the
//! "floor" walk (the least work any stat-based scanner must do), and helpers to run peers.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A small deterministic PRNG (xorshift64*), so every run builds the same tree.
#[derive(Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from a seed.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A float in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// What the generator made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Workload {
    /// Files written.
    pub files: u64,
    /// Directories holding them.
    pub dirs: u64,
    /// Bytes written.
    pub bytes: u64,
}

const WORDS: [&str; 16] = [
    "fn", "let", "struct", "impl", "return", "match", "self", "use", "pub", "mod", "if", "else",
    "for", "in", "where", "type",
];

/// A file size drawn from a log-normal-like distribution: median near 3 KiB, a long tail.
fn text_size(rng: &mut Rng) -> usize {
    let z: f64 = (0..6).map(|_| rng.unit()).sum::<f64>() - 3.0;
    (8.0 + 1.3 * z).exp() as usize
}

/// Writes `files` files in about `files / 10` directories under `root`: source-like text
/// (compressible), 3% random binaries (incompressible), and one large file (4 MiB) per 20k.
pub fn generate(root: &Path, files: u64, seed: u64) -> std::io::Result<Workload> {
    let mut rng = Rng::new(seed);
    let dirs = (files / 10).max(1);
    let mut made = Workload {
        files,
        dirs,
        bytes: 0,
    };
    for i in 0..files {
        let dir = root
            .join(format!("m{:03}", (i % dirs) / 100))
            .join(format!("d{}", i % dirs));
        if i < dirs {
            std::fs::create_dir_all(&dir)?;
        }
        let data = file_content(&mut rng, i);
        made.bytes += data.len() as u64;
        std::fs::File::create(dir.join(format!("f{i}.rs")))?.write_all(&data)?;
    }
    Ok(made)
}

/// The shape of a generated tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// About ten files a directory, two levels deep ([`generate`]).
    Flat,
    /// Shaped like a real repository ([`generate_real`]).
    Real,
}

impl Shape {
    /// `SNAP_BENCH_SHAPE` (`flat`, the default, or `real`).
    pub fn from_env() -> Shape {
        match std::env::var("SNAP_BENCH_SHAPE").as_deref() {
            Ok("real") => Shape::Real,
            _ => Shape::Flat,
        }
    }

    /// Writes `files` files of this shape under `root`.
    pub fn generate(self, root: &Path, files: u64, seed: u64) -> std::io::Result<Workload> {
        match self {
            Shape::Flat => generate(root, files, seed),
            Shape::Real => generate_real(root, files, seed),
        }
    }
}

/// The deepest a real-shaped tree goes (directories below the root).
const REAL_MAX_DEPTH: usize = 12;

/// Files a directory holds on average in a real-shaped tree: what 33 copies of bevy's tree
/// hold (100k files in 18k directories).
const REAL_FILES_PER_DIR: f64 = 5.5;

/// Writes `files` files shaped like a real repository under `root`: many small directories,
/// each made under a directory chosen at random among those made before (a random
/// recursive tree, so a few shallow directories hold many subdirectories and depth runs to
/// [`REAL_MAX_DEPTH`]), files spread unevenly over them (some directories hold dozens, most
/// a handful), the same file contents as [`generate`]. Deterministic for a seed.
pub fn generate_real(root: &Path, files: u64, seed: u64) -> std::io::Result<Workload> {
    let mut rng = Rng::new(seed);
    let count = ((files as f64 / REAL_FILES_PER_DIR) as usize).max(1);
    let mut dirs: Vec<(std::path::PathBuf, usize)> = vec![(root.to_path_buf(), 0)];
    while dirs.len() <= count {
        let mut parent = (rng.next_u64() % dirs.len() as u64) as usize;
        while dirs[parent].1 >= REAL_MAX_DEPTH {
            parent = (rng.next_u64() % dirs.len() as u64) as usize;
        }
        let (at, depth) = (dirs[parent].0.clone(), dirs[parent].1);
        let name = format!("{}{}", WORDS[(rng.next_u64() % 16) as usize], dirs.len());
        let path = at.join(name);
        std::fs::create_dir_all(&path)?;
        dirs.push((path, depth + 1));
    }
    let mut made = Workload {
        files,
        dirs: dirs.len() as u64 - 1,
        bytes: 0,
    };
    for i in 0..files {
        // Squaring a uniform draw puts more files in the directories made first.
        let u = rng.unit();
        let d = 1 + ((u * u) * (dirs.len() - 1) as f64) as usize;
        let data = file_content(&mut rng, i);
        made.bytes += data.len() as u64;
        std::fs::File::create(dirs[d.min(dirs.len() - 1)].0.join(format!("f{i}.rs")))?
            .write_all(&data)?;
    }
    Ok(made)
}

fn file_content(rng: &mut Rng, i: u64) -> Vec<u8> {
    if i % 20_000 == 19_999 {
        return (0..4 << 20).map(|_| (rng.next_u64() >> 56) as u8).collect();
    }
    if rng.unit() < 0.03 {
        let n = 4096 + (rng.next_u64() % 200_000) as usize;
        return (0..n).map(|_| (rng.next_u64() >> 56) as u8).collect();
    }
    let size = text_size(rng);
    let mut out = Vec::with_capacity(size + 64);
    while out.len() < size {
        for _ in 0..8 {
            out.extend_from_slice(WORDS[(rng.next_u64() % 16) as usize].as_bytes());
            out.push(b' ');
        }
        out.push(b'\n');
    }
    out.truncate(size);
    out
}

/// The floor: a parallel walk that opens each directory relative to its parent and lstats
/// every entry (`openat` + `fstatat`, no hashing, no store). Returns the entries seen.
pub fn floor_walk(root: &Path, threads: usize) -> std::io::Result<u64> {
    let flags =
        rustix::fs::OFlags::DIRECTORY | rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC;
    let top = rustix::fs::open(root, flags, rustix::fs::Mode::empty())?;
    let queue = Mutex::new(vec![top]);
    let pending = AtomicUsize::new(1);
    let seen = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| floor_worker(&queue, &pending, &seen));
        }
    });
    Ok(seen.load(Ordering::Relaxed))
}

fn floor_worker(queue: &Mutex<Vec<OwnedFd>>, pending: &AtomicUsize, seen: &AtomicU64) {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags};
    while pending.load(Ordering::Acquire) > 0 {
        let Some(dir) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop() else {
            std::thread::yield_now();
            continue;
        };
        if let Ok(entries) = rustix::fs::Dir::read_from(&dir) {
            for entry in entries.flatten() {
                let name = entry.file_name();
                if name.to_bytes() == b"."
                    || name.to_bytes() == b".."
                    || name.to_bytes() == b".snap"
                {
                    continue;
                }
                let Ok(st) = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
                    continue;
                };
                seen.fetch_add(1, Ordering::Relaxed);
                if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                    let flags =
                        OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
                    if let Ok(child) = rustix::fs::openat(&dir, name, flags, Mode::empty()) {
                        pending.fetch_add(1, Ordering::AcqRel);
                        queue.lock().unwrap_or_else(|p| p.into_inner()).push(child);
                    }
                }
            }
        }
        pending.fetch_sub(1, Ordering::AcqRel);
    }
}

/// True when `program --version` (or `program version`, as restic spells it) runs.
pub fn installed(program: &str) -> bool {
    ["--version", "version"].iter().any(|arg| {
        Command::new(program)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// `git` over `work_tree` with its repository in `git_dir` (a shadow `GIT_DIR`, so the tree
/// holds no `.git`), with a fixed identity and no global excludes file.
pub fn git_shadow(git_dir: &Path, work_tree: &Path) -> Command {
    let mut cmd = Command::new("git");
    cmd.env("GIT_DIR", git_dir)
        .env("GIT_WORK_TREE", work_tree)
        .current_dir(work_tree);
    cmd.args([
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.invalid",
        "-c",
        "core.excludesFile=/dev/null",
    ]);
    cmd
}

/// `git add -A && git commit`, what a per-call peer pays for each tool call.
pub fn git_add_commit(git_dir: &Path, work_tree: &Path, message: &str) {
    run(git_shadow(git_dir, work_tree).args(["add", "-A"]));
    run(git_shadow(git_dir, work_tree).args(["commit", "-q", "-m", message]));
}

/// A criterion case's median time in nanoseconds, this run's, from `target/criterion`
/// (`CARGO_TARGET_DIR`'s when set).
pub fn median(group: &str, case: &str) -> Option<f64> {
    let dir = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
        std::path::PathBuf::from,
    );
    let path = dir
        .join("criterion")
        .join(group)
        .join(case)
        .join("new/estimates.json");
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    v["median"]["point_estimate"].as_f64()
}

/// Runs a command, panicking with its stderr if it fails (a bench cannot go on without it).
pub fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Bytes of disk under `dir`, as `du` counts them: the blocks each file holds. A file's length
/// would count the holes of a sparse file (redb grows its file by doubling, and the tail it
/// has not written yet takes no disk) and not the rest of a file's last block (a pack of a few
/// hundred bytes takes 4 KiB).
pub fn dir_size(dir: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => stack.push(e.path()),
                Ok(m) => total += m.blocks() * 512,
                Err(_) => {}
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_real_shape_is_deep_and_deterministic() {
        let a = tempfile_dir();
        let b = tempfile_dir();
        let wa = generate_real(&a, 2000, 7).unwrap();
        assert_eq!(wa, generate_real(&b, 2000, 7).unwrap());
        assert_eq!(wa.dirs, 363);
        assert_eq!(floor_walk(&a, 2).unwrap(), 2000 + 363);
        let deepest = walk_depth(&a);
        assert!((6..=REAL_MAX_DEPTH).contains(&deepest), "{deepest}");
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
    }

    fn walk_depth(dir: &Path) -> usize {
        std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().unwrap().is_dir())
            .map(|e| 1 + walk_depth(&e.path()))
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn generator_is_deterministic_and_floor_sees_everything() {
        let a = tempfile_dir();
        let b = tempfile_dir();
        let wa = generate(&a, 300, 7).unwrap();
        let wb = generate(&b, 300, 7).unwrap();
        assert_eq!(wa, wb);
        assert_eq!(wa.dirs, 30);
        assert_eq!(
            floor_walk(&a, 2).unwrap(),
            300 + 30 + 1,
            "files, leaf dirs and the m000 dir"
        );
        std::fs::remove_dir_all(&a).unwrap();
        std::fs::remove_dir_all(&b).unwrap();
    }

    fn tempfile_dir() -> std::path::PathBuf {
        let p = std::env::temp_dir().join(format!(
            "snap-bench-test-{}-{}",
            std::process::id(),
            Rng::new(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
            )
            .next_u64()
        ));
        std::fs::create_dir_all(&p).unwrap();
        p
    }
}
