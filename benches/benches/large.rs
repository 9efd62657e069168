//! `cargo bench -p snap-benches --bench large`: a real-shape source tree with a few large
//! files (1 GiB, 512 MiB, 256 MiB by default; `SNAP_BENCH_LARGE_MIB=1024,512,256`), snap
//! against `restic backup`/`restore` on the same tree: the first save, a save after a line
//! appended to the largest file, and an undo that brings the largest back after its
//! deletion. Needs the release binary (`cargo build --release -p snap-undo`); restic's cases
//! run when restic is installed. Also measures the FastCDC chunk sizes for large files:
//! chunking and hashing speed, chunks per GiB, and what an insert in the middle stores.
//! Ratios, store growth and peak memory are printed at the end.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{BatchSize, Criterion, Throughput};
use snap_benches::{dir_size, installed, median, run};

struct Bench {
    tree: PathBuf,
    base: PathBuf,
    bin: PathBuf,
    group: String,
    /// The large files, largest first.
    large: Vec<PathBuf>,
}

/// Bytes zstd cannot shrink, made fast: a xorshift stream, 8 bytes a step.
fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out
}

fn setup() -> Option<Bench> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/snap-undo");
    if !bin.exists() {
        eprintln!(
            "{} is not built: skipping the large-file bench",
            bin.display()
        );
        return None;
    }
    let sizes: Vec<usize> = std::env::var("SNAP_BENCH_LARGE_MIB")
        .unwrap_or_else(|_| "1024,512,256".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let base = std::env::temp_dir().join("snap-bench-large");
    let _ = std::fs::remove_dir_all(&base);
    let tree = base.join("tree");
    std::fs::create_dir_all(tree.join("data")).unwrap();
    let w = snap_benches::generate_real(&tree, 2_000, 42).unwrap();
    let large: Vec<PathBuf> = (sizes.iter().enumerate())
        .map(|(i, mib)| {
            let path = tree.join(format!("data/large-{i}.bin"));
            std::fs::write(&path, noise(mib << 20, i as u64 + 1)).unwrap();
            path
        })
        .collect();
    eprintln!(
        "workload: {} source files ({} MB) and large files of {sizes:?} MiB",
        w.files,
        w.bytes >> 20
    );
    Some(Bench {
        tree,
        base,
        bin,
        group: "large".into(),
        large,
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

    fn restic(&self, repo: &Path) -> Command {
        let mut cmd = Command::new("restic");
        cmd.env("RESTIC_PASSWORD", "bench")
            .env("RESTIC_REPOSITORY", repo)
            .arg("-q");
        cmd
    }

    fn backup(&self, repo: &Path) {
        let tree = self.tree.to_str().unwrap();
        run(self
            .restic(repo)
            .args(["backup", tree, "--exclude", ".snap"]));
    }

    /// Appends one line to the largest file, as an agent's log write would.
    fn append(&self, round: &mut usize) {
        use std::io::Write;
        *round += 1;
        let mut f = (std::fs::OpenOptions::new().append(true))
            .open(&self.large[0])
            .unwrap();
        writeln!(f, "line {round}").unwrap();
    }
}

fn fresh(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
}

fn bench_snap(c: &mut Criterion, b: &Bench) {
    let mut g = c.benchmark_group(&b.group);
    g.sample_size(10);
    let store = b.tree.join(".snap");
    g.bench_function("snap-first-save", |bch| {
        bch.iter_batched(
            || fresh(&store),
            |()| run(&mut b.snap(&["save", "-q"])),
            BatchSize::PerIteration,
        )
    });
    let mut round = 0;
    g.bench_function("snap-append-save", |bch| {
        bch.iter_batched(
            || b.append(&mut round),
            |()| run(&mut b.snap(&["save", "-q"])),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("snap-unchanged-save", |bch| {
        bch.iter(|| run(&mut b.snap(&["save", "-q"])))
    });
    g.bench_function("snap-undo-deleted-large", |bch| {
        bch.iter_batched(
            || {
                std::fs::remove_file(&b.large[0]).unwrap();
                run(&mut b.snap(&["save", "-q"]));
            },
            |()| run(&mut b.snap(&["undo", "-q"])),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

fn bench_restic(c: &mut Criterion, b: &Bench) {
    let mut g = c.benchmark_group(&b.group);
    g.sample_size(10);
    let first = b.base.join("restic-first");
    g.bench_function("restic-first-backup", |bch| {
        bch.iter_batched(
            || {
                fresh(&first);
                run(b.restic(&first).arg("init"));
            },
            |()| b.backup(&first),
            BatchSize::PerIteration,
        )
    });
    let repo = b.base.join("restic");
    run(b.restic(&repo).arg("init"));
    b.backup(&repo);
    let mut round = 1000;
    g.bench_function("restic-append-backup", |bch| {
        bch.iter_batched(
            || b.append(&mut round),
            |()| b.backup(&repo),
            BatchSize::PerIteration,
        )
    });
    let restored = b.base.join("restored");
    let largest = b.large[0].to_str().unwrap().to_string();
    g.bench_function("restic-restore-large", |bch| {
        bch.iter_batched(
            || fresh(&restored),
            |()| {
                let target = restored.to_str().unwrap();
                run(b.restic(&repo).args([
                    "restore",
                    "latest",
                    "--target",
                    target,
                    "--include",
                    &largest,
                ]))
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// FastCDC with each candidate's (min, avg, max) over 256 MiB, BLAKE3 of each chunk: the
/// speed, and after one line inserted in the middle, how many bytes are in new chunks.
fn bench_chunk_sizes(c: &mut Criterion) {
    let data = noise(256 << 20, 9);
    let mut edited = data.clone();
    edited.splice(128 << 20..128 << 20, b"an inserted line\n".iter().copied());
    let mut g = c.benchmark_group("large-chunking");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(data.len() as u64));
    for (min, avg, max) in CANDIDATES {
        let ids = |bytes: &[u8]| -> Vec<(blake3::Hash, usize)> {
            fastcdc::v2020::FastCDC::new(bytes, min, avg, max)
                .map(|ch| {
                    (
                        blake3::hash(&bytes[ch.offset..ch.offset + ch.length]),
                        ch.length,
                    )
                })
                .collect()
        };
        g.bench_function(format!("fastcdc-{}k", avg >> 10), |bch| {
            bch.iter(|| ids(&data))
        });
        let before: std::collections::HashSet<_> = ids(&data).into_iter().map(|(h, _)| h).collect();
        let after = ids(&edited);
        let new: usize = after
            .iter()
            .filter(|(h, _)| !before.contains(h))
            .map(|(_, l)| l)
            .sum();
        eprintln!(
            "chunks avg {} KiB: {} chunks per GiB; an inserted line stores {} KiB",
            avg >> 10,
            (after.len() as u64 * 4),
            new >> 10
        );
    }
    g.finish();
}

/// (min, avg, max) chunk sizes measured; the second is FORMAT.md 3's.
const CANDIDATES: [(usize, usize, usize); 3] = [
    (64 << 10, 256 << 10, 1 << 20),
    (256 << 10, 1 << 20, 4 << 20),
    (1 << 20, 4 << 20, 16 << 20),
];

fn report(b: &Bench) {
    let m = |case: &str| median(&b.group, case);
    let pairs = [
        (
            "first save / restic first backup",
            "snap-first-save",
            "restic-first-backup",
        ),
        (
            "append save / restic backup",
            "snap-append-save",
            "restic-append-backup",
        ),
        (
            "undo of the largest / restic restore of it",
            "snap-undo-deleted-large",
            "restic-restore-large",
        ),
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
    if let Some(u) = m("snap-unchanged-save") {
        eprintln!("unchanged save: {:.1} ms", u / 1e6);
    }
    // One more append, its growth measured on the packs.
    let packs = b.tree.join(".snap/packs");
    let before = dir_size(&packs);
    b.append(&mut 0);
    run(&mut b.snap(&["save", "-q"]));
    eprintln!(
        "an appended line grew the store by {} KiB",
        (dir_size(&packs) - before) >> 10
    );
    for (what, args) in [
        ("save after the append", ["save", "-q"]),
        ("undo of the append", ["undo", "-q"]),
    ] {
        if what.starts_with("save") {
            b.append(&mut 0);
        }
        let out = b.snap(&args).env("SNAP_TIMING", "1").output().unwrap();
        let peak = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter_map(|l| {
                l.split("VmHWM: ")
                    .nth(1)?
                    .split_whitespace()
                    .next()?
                    .parse::<u64>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        eprintln!("{what}: peak RSS {} MiB", peak >> 10);
    }
    eprintln!(
        "store {} MiB; restic repository {} MiB",
        dir_size(&b.tree.join(".snap")) >> 20,
        dir_size(&b.base.join("restic")) >> 20
    );
}

fn main() {
    let mut c = Criterion::default().configure_from_args();
    bench_chunk_sizes(&mut c);
    let Some(b) = setup() else {
        return;
    };
    bench_snap(&mut c, &b);
    if installed("restic") {
        bench_restic(&mut c, &b);
    } else {
        eprintln!("restic is not installed: its cases are skipped");
    }
    report(&b);
    fresh(&b.base);
}
