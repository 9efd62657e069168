//! `cargo bench -p snap-benches --bench remote`: `snap push` and `snap clone` to a `file://`
//! remote against `restic backup` and `restic restore` to a local repository, on one
//! generated tree, in one run. Needs the release binary (`cargo build --release -p
//! snap-undo`); restic's cases run when restic is installed. `SNAP_BENCH_FILES` and
//! `SNAP_BENCH_SHAPE` as for the other benches. Ratios and sizes are printed at the end.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{BatchSize, Criterion};
use snap_benches::{Shape, dir_size, installed, median, run};

struct Bench {
    tree: PathBuf,
    base: PathBuf,
    bin: PathBuf,
    group: String,
    /// Files the small-change cases append to, in turn.
    targets: Vec<PathBuf>,
}

fn setup() -> Option<Bench> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/snap-undo");
    if !bin.exists() {
        eprintln!("{} is not built: skipping the remote bench", bin.display());
        return None;
    }
    let files = std::env::var("SNAP_BENCH_FILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let shape = Shape::from_env();
    let base = std::env::temp_dir().join(format!("snap-bench-remote-{files}-{shape:?}"));
    let _ = std::fs::remove_dir_all(&base);
    let tree = base.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let w = shape.generate(&tree, files, 42).unwrap();
    eprintln!(
        "workload ({shape:?}): {} files, {} MB",
        w.files,
        w.bytes >> 20
    );
    let targets = (0..32)
        .map(|i| tree.join(format!("bench-edit-{i}.txt")))
        .collect();
    Some(Bench {
        tree,
        base,
        bin,
        group: format!("remote-{shape:?}-{files}").to_lowercase(),
        targets,
    })
}

impl Bench {
    fn snap(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-C")
            .arg(&self.tree)
            .args(args)
            .env_remove("SNAP_STORE");
        cmd
    }

    fn url(&self, name: &str) -> String {
        format!("file://{}", self.base.join(name).display())
    }

    fn restic(&self, repo: &Path) -> Command {
        let mut cmd = Command::new("restic");
        cmd.env("RESTIC_PASSWORD", "bench")
            .env("RESTIC_REPOSITORY", repo)
            .arg("-q");
        cmd
    }

    /// A small change: one file of the tree rewritten, as an agent's tool call would.
    fn touch(&self, round: &mut usize) {
        *round += 1;
        let path = &self.targets[*round % self.targets.len()];
        std::fs::write(path, format!("edit {round}\n").repeat(40)).unwrap();
    }
}

fn fresh(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

fn bench_snap(c: &mut Criterion, b: &Bench) {
    run(&mut b.snap(&["save", "-q"]));
    let mut g = c.benchmark_group(&b.group);
    g.sample_size(10);
    let first = b.base.join("first");
    g.bench_function("snap-first-push", |bch| {
        bch.iter_batched(
            || fresh(&first),
            |()| run(&mut b.snap(&["push", "-q", &b.url("first")])),
            BatchSize::PerIteration,
        )
    });
    run(&mut b.snap(&["push", "-q", &b.url("remote")]));
    let mut round = 0;
    g.bench_function("snap-small-change-push", |bch| {
        bch.iter_batched(
            || {
                b.touch(&mut round);
                run(&mut b.snap(&["save", "-q"]));
            },
            |()| run(&mut b.snap(&["push", "-q", &b.url("remote")])),
            BatchSize::PerIteration,
        )
    });
    let clone = b.base.join("clone");
    g.bench_function("snap-clone", |bch| {
        bch.iter_batched(
            || fresh(&clone),
            |()| run(&mut b.snap(&["clone", "-q", &b.url("remote"), clone.to_str().unwrap()])),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_restic(c: &mut Criterion, b: &Bench) {
    let mut g = c.benchmark_group(&b.group);
    g.sample_size(10);
    let first = b.base.join("restic-first");
    let backup = |repo: &Path| {
        let tree = b.tree.to_str().unwrap();
        run(b.restic(repo).args(["backup", tree, "--exclude", ".snap"]))
    };
    g.bench_function("restic-first-backup", |bch| {
        bch.iter_batched(
            || {
                fresh(&first);
                run(b.restic(&first).arg("init"));
            },
            |()| backup(&first),
            BatchSize::PerIteration,
        )
    });
    let repo = b.base.join("restic");
    run(b.restic(&repo).arg("init"));
    backup(&repo);
    let mut round = 1000;
    g.bench_function("restic-small-change-backup", |bch| {
        bch.iter_batched(
            || b.touch(&mut round),
            |()| backup(&repo),
            BatchSize::PerIteration,
        )
    });
    let restored = b.base.join("restored");
    g.bench_function("restic-restore", |bch| {
        bch.iter_batched(
            || fresh(&restored),
            |()| {
                let target = restored.to_str().unwrap();
                run(b
                    .restic(&repo)
                    .args(["restore", "latest", "--target", target]))
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn ratios(b: &Bench) {
    let m = |case: &str| median(&b.group, case);
    let pairs = [
        (
            "first push / restic first backup",
            "snap-first-push",
            "restic-first-backup",
        ),
        (
            "small-change push / restic backup",
            "snap-small-change-push",
            "restic-small-change-backup",
        ),
        ("clone / restic restore", "snap-clone", "restic-restore"),
    ];
    for (what, ours, theirs) in pairs {
        match (m(ours), m(theirs)) {
            (Some(o), Some(t)) => eprintln!(
                "{what}: {:.1} ms / {:.1} ms = {:.2}x",
                o / 1e6,
                t / 1e6,
                o / t
            ),
            (Some(o), None) => eprintln!("{what}: {:.1} ms (no peer)", o / 1e6),
            _ => {}
        }
    }
    let local = dir_size(&b.tree.join(".snap/packs"));
    let remote = dir_size(&b.base.join("remote/packs"));
    eprintln!(
        "local packs {} MB, remote packs {} MB",
        local >> 20,
        remote >> 20
    );
    if installed("restic") {
        eprintln!(
            "restic repository {} MB",
            dir_size(&b.base.join("restic")) >> 20
        );
    }
}

fn main() {
    let Some(b) = setup() else { return };
    let mut c = Criterion::default().configure_from_args();
    bench_snap(&mut c, &b);
    if installed("restic") {
        bench_restic(&mut c, &b);
    }
    c.final_summary();
    ratios(&b);
}
