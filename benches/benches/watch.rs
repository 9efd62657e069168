//! `cargo bench -p snap-benches --bench watch`: saves with and without `snap watch`, against
//! the floor walk and git, on a generated tree of either shape, in one run. Needs the release
//! binary (`cargo build --release -p snap-undo`); skips with a note without it.
//!
//! `SNAP_BENCH_FILES` sets the tree size (default 20000; the README's table uses 100000 and
//! 1000000, which stays out of CI), `SNAP_BENCH_SHAPE` its shape (`flat`, the default, or
//! `real`: many small directories, deep, as a real repository is). Ratios are printed at the
//! end, with the watcher's start-up and memory.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use snap_benches::{Shape, floor_walk, git_add_commit, git_shadow, installed, median, run};

struct Bench {
    tree: PathBuf,
    small: PathBuf,
    runtime: PathBuf,
    files: u64,
    shape: Shape,
    /// Files the small-change cases append to, in turn.
    targets: Vec<PathBuf>,
    bin: PathBuf,
}

fn setup() -> Option<Bench> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/snap-undo");
    if !bin.exists() {
        eprintln!(
            "{} is not built (cargo build --release -p snap-undo): skipping the watch bench",
            bin.display()
        );
        return None;
    }
    let files = std::env::var("SNAP_BENCH_FILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let shape = Shape::from_env();
    let base = std::env::temp_dir().join(format!("snap-bench-watch-{files}-{shape:?}"));
    let _ = std::fs::remove_dir_all(&base);
    let (tree, small, runtime) = (base.join("tree"), base.join("small"), base.join("run"));
    for dir in [&tree, &small, &runtime] {
        std::fs::create_dir_all(dir).unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&runtime, std::fs::Permissions::from_mode(0o700)).unwrap();
    let w = shape.generate(&tree, files, 42).unwrap();
    Shape::Flat.generate(&small, 3000, 7).unwrap();
    rustix::fs::sync();
    eprintln!(
        "workload ({shape:?}): {} files in {} directories, {} MB",
        w.files,
        w.dirs,
        w.bytes >> 20
    );
    let targets = some_files(&tree, 64);
    Some(Bench {
        tree,
        small,
        runtime,
        files,
        shape,
        targets,
        bin,
    })
}

/// Up to `n` regular files of `tree`, spread over its directories.
fn some_files(tree: &Path, n: usize) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let mut files = Vec::new();
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            match e.file_type().unwrap().is_dir() {
                true => stack.insert(0, e.path()),
                false => files.push(e.path()),
            }
        }
        out.extend(files.into_iter().take(1));
        if out.len() >= n {
            break;
        }
    }
    out
}

impl Bench {
    fn snap(&self, dir: &Path) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-C")
            .arg(dir)
            .env("XDG_RUNTIME_DIR", &self.runtime)
            .env_remove("SNAP_STORE");
        cmd
    }

    fn save(&self, dir: &Path) {
        run(self.snap(dir).args(["save", "-q"]));
    }

    fn watch(&self, dir: &Path) -> serde_json::Value {
        let out = self
            .snap(dir)
            .args(["--json", "watch", "--background"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn status(&self, dir: &Path) -> serde_json::Value {
        let out = self
            .snap(dir)
            .args(["--json", "watch", "--status"])
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn stop(&self, dir: &Path) {
        run(self.snap(dir).args(["watch", "--stop"]));
    }
}

/// Appends a line to the next target file.
fn touch(targets: &[PathBuf], round: &mut usize) {
    *round += 1;
    let path = &targets[*round % targets.len()];
    let mut data = std::fs::read(path).unwrap();
    data.extend_from_slice(format!("// edit {round}\n").as_bytes());
    std::fs::write(path, data).unwrap();
}

fn group_name(b: &Bench) -> String {
    format!("watch-{:?}-{}", b.shape, b.files).to_lowercase()
}

fn bench_tree(c: &mut Criterion, b: &Bench, notes: &mut Vec<String>) {
    run(b.snap(&b.tree).args(["init", "-q"]));
    b.save(&b.tree);
    let mut g = c.benchmark_group(group_name(b));
    g.sample_size(20);
    let mut round = 0;
    g.bench_function("floor", |bch| bch.iter(|| floor_walk(&b.tree, 2).unwrap()));
    g.bench_function("snap-no-change-save", |bch| bch.iter(|| b.save(&b.tree)));
    g.bench_function("snap-small-change-save", |bch| {
        bch.iter_batched(
            || touch(&b.targets, &mut round),
            |()| b.save(&b.tree),
            BatchSize::PerIteration,
        )
    });
    let start = Instant::now();
    let started = b.watch(&b.tree);
    notes.push(format!(
        "watcher start ({} directories): {:.0} ms",
        started["directories_watched"],
        start.elapsed().as_secs_f64() * 1e3
    ));
    // The first save after the start has no token: it walks, and records one.
    b.save(&b.tree);
    g.bench_function("snap-watched-no-change-save", |bch| {
        bch.iter(|| b.save(&b.tree))
    });
    g.bench_function("snap-watched-small-change-save", |bch| {
        bch.iter_batched(
            || touch(&b.targets, &mut round),
            |()| b.save(&b.tree),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("snap-watched-undo", |bch| {
        bch.iter_batched(
            || {
                touch(&b.targets, &mut round);
                b.save(&b.tree);
            },
            |()| run(b.snap(&b.tree).args(["undo", "-q"])),
            BatchSize::PerIteration,
        )
    });
    g.finish();
    let status = b.status(&b.tree);
    notes.push(format!(
        "watcher memory: {:.1} MiB ({} events, epoch {})",
        status["memory_bytes"].as_f64().unwrap_or(0.0) / f64::from(1 << 20),
        status["events"],
        status["epoch"]
    ));
    b.stop(&b.tree);
}

fn bench_per_call(c: &mut Criterion, b: &Bench) {
    let mut g = c.benchmark_group("watch-3000-files");
    g.sample_size(20);
    let targets = some_files(&b.small, 64);
    let mut round = 0;
    run(b.snap(&b.small).args(["init", "-q"]));
    b.save(&b.small);
    g.bench_function("snap-per-call-save", |bch| {
        bch.iter_batched(
            || touch(&targets, &mut round),
            |()| b.save(&b.small),
            BatchSize::PerIteration,
        )
    });
    b.watch(&b.small);
    b.save(&b.small);
    g.bench_function("snap-watched-per-call-save", |bch| {
        bch.iter_batched(
            || touch(&targets, &mut round),
            |()| b.save(&b.small),
            BatchSize::PerIteration,
        )
    });
    b.stop(&b.small);
    if installed("git") {
        let git_dir = b.small.with_file_name("git");
        run(git_shadow(&git_dir, &b.small).args(["init", "-q"]));
        git_add_commit(&git_dir, &b.small, "first");
        g.bench_function("git-per-call-add-commit", |bch| {
            bch.iter_batched(
                || touch(&targets, &mut round),
                |()| git_add_commit(&git_dir, &b.small, "call"),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn print_ratios(b: &Bench, notes: &[String]) {
    let group = group_name(b);
    println!("\n== ratios (median times, this run; below 1.0 means faster)");
    let pairs = [
        (&group, "snap-no-change-save", "floor"),
        (&group, "snap-small-change-save", "floor"),
        (&group, "snap-watched-no-change-save", "floor"),
        (&group, "snap-watched-small-change-save", "floor"),
        (&group, "snap-watched-undo", "floor"),
    ];
    let per_call = "watch-3000-files".to_string();
    let calls = [
        (&per_call, "snap-per-call-save", "git-per-call-add-commit"),
        (
            &per_call,
            "snap-watched-per-call-save",
            "git-per-call-add-commit",
        ),
    ];
    for (g, ours, theirs) in pairs.iter().chain(&calls) {
        match (median(g, ours), median(g, theirs)) {
            (Some(a), Some(t)) => println!(
                "{ours:<32} / {theirs:<24} = {:>6.3}  ({:.1} ms / {:.1} ms)",
                a / t,
                a / 1e6,
                t / 1e6
            ),
            _ => println!("{ours:<32} / {theirs:<24} =   n/a (not run)"),
        }
    }
    if let Some(floor) = median(&group, "floor") {
        println!("floor walk: {:.1} ms", floor / 1e6);
    }
    for note in notes {
        println!("{note}");
    }
}

fn main() {
    let Some(b) = setup() else {
        return;
    };
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut notes = Vec::new();
    bench_tree(&mut c, &b, &mut notes);
    bench_per_call(&mut c, &b);
    c.final_summary();
    print_ratios(&b, &notes);
    let _ = std::fs::remove_dir_all(b.tree.parent().unwrap_or(&b.tree));
}
