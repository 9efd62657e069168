//! `cargo bench -p snap-benches --bench remote`: `snap push` and `snap clone`, encrypted (the
//! default) and plain (`--no-encryption`), against `restic backup` and `restic restore`
//! (which encrypt too), on one generated tree and one store, in one run. The remotes live in
//! a local SeaweedFS (`weed mini` on 127.0.0.1, started and stopped here) when `weed` is on
//! PATH, else on the local disk (`file://`, a restic repository in a directory).
//!
//! Needs the release binary (`cargo build --release -p snap-undo`); restic's cases run when
//! restic is installed. `SNAP_BENCH_FILES` and `SNAP_BENCH_SHAPE` as for the other benches.
//! Ratios and sizes are printed at the end.

#![allow(clippy::unwrap_used, missing_docs)]

use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{BatchSize, Criterion};
use snap_benches::{Shape, dir_size, installed, median, run};
use snap_e2e::seaweed::Seaweed;

/// The passphrase of every encrypted remote and restic repository here.
const PASSPHRASE: &str = "bench";

/// Whether a remote of a case is encrypted.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encryption {
    On,
    Off,
}

/// Where the remotes live.
enum Place {
    /// Directories under the bench's base.
    Disk(PathBuf),
    /// Prefixes of the `snaptest` bucket of a local SeaweedFS.
    S3(Seaweed),
}

struct Bench {
    tree: PathBuf,
    base: PathBuf,
    bin: PathBuf,
    group: String,
    place: Place,
    /// Files the small-change cases append to, in turn.
    targets: Vec<PathBuf>,
    /// Remotes made so far (each case's fresh remote takes a new name).
    made: Cell<usize>,
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
    let place = match installed("weed") {
        true => Place::S3(Seaweed::start()?),
        false => Place::Disk(base.clone()),
    };
    let at = if matches!(place, Place::S3(_)) {
        "s3"
    } else {
        "disk"
    };
    eprintln!(
        "workload ({shape:?}): {} files, {} MB, remotes on {at}",
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
        group: format!("remote-{at}-{shape:?}-{files}").to_lowercase(),
        place,
        targets,
        made: Cell::new(0),
    })
}

impl Bench {
    fn env(&self) -> Vec<(&'static str, String)> {
        match &self.place {
            Place::Disk(_) => Vec::new(),
            Place::S3(server) => server.env(),
        }
    }

    fn snap_in(&self, dir: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-C")
            .arg(dir)
            .args(args)
            .env_remove("SNAP_STORE")
            .env("SNAP_REMOTE_PASSWORD", PASSPHRASE)
            .envs(self.env());
        cmd
    }

    fn snap(&self, args: &[&str]) -> Command {
        self.snap_in(&self.tree, args)
    }

    /// The URL of remote `name`.
    fn url(&self, name: &str) -> String {
        match &self.place {
            Place::Disk(base) => format!("file://{}", base.join(name).display()),
            Place::S3(_) => format!("s3://snaptest/{name}"),
        }
    }

    /// A name no remote has had.
    fn fresh(&self, what: &str) -> String {
        self.made.set(self.made.get() + 1);
        format!("{what}-{}", self.made.get())
    }

    /// A new remote, made as a user makes one (`snap remote add`, which asks for the
    /// passphrase and runs Argon2 once), so a timed push pays for sending, not for making.
    fn fresh_remote(&self, encryption: Encryption) -> String {
        let name = self.fresh("remote");
        let url = self.url(&name);
        let mut add = vec!["remote", "add", "--create", "-q", &name, &url];
        if encryption == Encryption::Off {
            add.push("--no-encryption");
        }
        run(&mut self.snap(&add));
        url
    }

    fn restic(&self, repo: &str) -> Command {
        let mut cmd = Command::new("restic");
        let repo = match &self.place {
            Place::Disk(base) => base.join(repo).display().to_string(),
            Place::S3(server) => format!("s3:{}/snaptest/{repo}", server.endpoint()),
        };
        cmd.env("RESTIC_PASSWORD", PASSPHRASE)
            .env("RESTIC_REPOSITORY", repo)
            .envs(self.env())
            .arg("-q");
        cmd
    }

    /// A small change: one file of the tree rewritten, as an agent's tool call would.
    fn touch(&self, round: &mut usize) {
        *round += 1;
        let path = &self.targets[*round % self.targets.len()];
        std::fs::write(path, format!("edit {round}\n").repeat(40)).unwrap();
    }

    /// A directory for a clone or restore, empty.
    fn empty(&self, name: &str) -> PathBuf {
        let dir = self.base.join(name);
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }
}

fn bench_snap(c: &mut Criterion, b: &Bench) {
    run(&mut b.snap(&["save", "-q"]));
    let mut g = c.benchmark_group(&b.group);
    g.sample_size(10);
    for (case, encryption) in [
        ("snap-first-push", Encryption::On),
        ("snap-first-push-plain", Encryption::Off),
    ] {
        g.bench_function(case, |bch| {
            bch.iter_batched(
                || b.fresh_remote(encryption),
                |url| run(&mut b.snap(&["push", "-q", &url])),
                BatchSize::PerIteration,
            )
        });
    }
    let sealed = b.fresh_remote(Encryption::On);
    let plain = b.fresh_remote(Encryption::Off);
    run(&mut b.snap(&["push", "-q", &sealed]));
    run(&mut b.snap(&["push", "-q", &plain]));
    let mut round = 0;
    for (case, url) in [
        ("snap-small-change-push", &sealed),
        ("snap-small-change-push-plain", &plain),
    ] {
        g.bench_function(case, |bch| {
            bch.iter_batched(
                || {
                    b.touch(&mut round);
                    run(&mut b.snap(&["save", "-q"]));
                },
                |()| run(&mut b.snap(&["push", "-q", url])),
                BatchSize::PerIteration,
            )
        });
    }
    for (case, url) in [("snap-clone", &sealed), ("snap-clone-plain", &plain)] {
        g.bench_function(case, |bch| {
            bch.iter_batched(
                || b.empty("clone"),
                |into| run(&mut b.snap(&["clone", "-q", url, into.to_str().unwrap()])),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

fn bench_restic(c: &mut Criterion, b: &Bench) {
    let mut g = c.benchmark_group(&b.group);
    g.sample_size(10);
    let tree = b.tree.to_str().unwrap();
    let backup = |repo: &str| run(b.restic(repo).args(["backup", tree, "--exclude", ".snap"]));
    g.bench_function("restic-first-backup", |bch| {
        bch.iter_batched(
            || {
                let repo = b.fresh("restic-first");
                run(b.restic(&repo).arg("init"));
                repo
            },
            |repo| backup(&repo),
            BatchSize::PerIteration,
        )
    });
    run(b.restic("restic").arg("init"));
    backup("restic");
    let mut round = 1000;
    g.bench_function("restic-small-change-backup", |bch| {
        bch.iter_batched(
            || b.touch(&mut round),
            |()| backup("restic"),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("restic-restore", |bch| {
        bch.iter_batched(
            || b.empty("restored"),
            |into| {
                let target = into.to_str().unwrap();
                run(b
                    .restic("restic")
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
        (
            "first push, encrypted / plain",
            "snap-first-push",
            "snap-first-push-plain",
        ),
        (
            "small-change push, encrypted / plain",
            "snap-small-change-push",
            "snap-small-change-push-plain",
        ),
        ("clone, encrypted / plain", "snap-clone", "snap-clone-plain"),
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
    sizes(b);
}

/// The remote's size encrypted and plain, from one push of each to the local disk.
fn sizes(b: &Bench) {
    let (sealed, plain) = (b.base.join("size-sealed"), b.base.join("size-plain"));
    let url = |p: &Path| format!("file://{}", p.display());
    let add = [
        "remote",
        "add",
        "--create",
        "--no-encryption",
        "-q",
        "size-plain",
    ];
    run(&mut b.snap(&[&add[..], &[url(&plain).as_str()]].concat()));
    let push = |u: String| {
        let mut cmd = Command::new(&b.bin);
        cmd.arg("-C").arg(&b.tree).args(["push", "-q", &u]);
        run(cmd
            .env_remove("SNAP_STORE")
            .env("SNAP_REMOTE_PASSWORD", PASSPHRASE))
    };
    push(url(&sealed));
    push(url(&plain));
    let (s, p) = (dir_size(&sealed), dir_size(&plain));
    let local = dir_size(&b.tree.join(".snap/packs"));
    eprintln!(
        "remote size: encrypted {} MB, plain {} MB = {:.3}x (local packs {} MB)",
        s >> 20,
        p >> 20,
        s as f64 / p.max(1) as f64,
        local >> 20
    );
    if installed("restic") && matches!(b.place, Place::Disk(_)) {
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
