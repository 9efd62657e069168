//! `cargo bench -p snap-benches`: snap against the floor walk and its peers (git into a shadow
//! GIT_DIR, jj, restic), on one generated tree, one after another in the same run. Peers not
//! installed are skipped with a note. Ratios snap/peer and snap/floor are printed at the end.
//!
//! `SNAP_BENCH_FILES` sets the tree size (default 20000; the README's table uses 100000).
//! `SNAP_BENCH_SMALL_SAVES` sets how many small saves the growth case makes (default 1000).

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion};
use snap_benches::{
    dir_size, floor_walk, generate, git_add_commit, git_shadow, installed, median, run,
};
use snap_tree::{SaveOptions, Workspace};

struct Bench {
    tree: PathBuf,
    peers: PathBuf,
    files: u64,
    small: PathBuf,
}

fn setup() -> Bench {
    let files = std::env::var("SNAP_BENCH_FILES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let base = std::env::temp_dir().join(format!("snap-bench-{files}"));
    let _ = std::fs::remove_dir_all(&base);
    let tree = base.join("tree");
    let small = base.join("small");
    std::fs::create_dir_all(&tree).unwrap();
    std::fs::create_dir_all(&small).unwrap();
    std::fs::create_dir_all(base.join("peers")).unwrap();
    let w = generate(&tree, files, 42).unwrap();
    generate(&small, 3000, 7).unwrap();
    // Every tool meets a settled tree: without this the first case (snap's first save) runs
    // while the kernel writes back the tree just generated, and the peers, measured minutes
    // later, do not.
    rustix::fs::sync();
    eprintln!(
        "workload: {} files in {} directories, {} MB",
        w.files,
        w.dirs,
        w.bytes >> 20
    );
    Bench {
        tree,
        peers: base.join("peers"),
        files,
        small,
    }
}

/// Appends a line to `n` files, a different set each call.
fn touch_files(tree: &Path, n: u64, round: &mut u64) {
    for k in 0..n {
        *round += 1;
        let i = (*round * 7919 + k) % 100;
        let path = tree
            .join("m000")
            .join(format!("d{i}"))
            .join(format!("f{i}.rs"));
        let mut data = std::fs::read(&path).unwrap_or_default();
        data.extend_from_slice(format!("// edit {round}\n").as_bytes());
        std::fs::write(&path, data).unwrap();
    }
}

fn save(tree: &Path) {
    let ws = Workspace::discover(tree, None).unwrap();
    ws.save(&SaveOptions::default()).unwrap();
}

/// One timed run of a command, for cases too slow to sample (first saves).
fn once(label: &str, f: impl FnOnce()) -> Duration {
    let start = Instant::now();
    f();
    let took = start.elapsed();
    eprintln!("{label}: {took:.2?}");
    took
}

fn git(b: &Bench, tree: &Path) -> Command {
    git_shadow(&b.peers.join("git"), tree)
}

fn restic(b: &Bench) -> Command {
    let mut cmd = Command::new("restic");
    cmd.env("RESTIC_PASSWORD", "bench")
        .env("RESTIC_REPOSITORY", b.peers.join("restic"))
        .env("RESTIC_CACHE_DIR", b.peers.join("restic-cache"))
        .arg("-q");
    cmd
}

fn bench_snap(c: &mut Criterion, b: &Bench, first: &mut Vec<(String, Duration)>) {
    let first_save = || {
        let ws = Workspace::init(&b.tree, None, false).unwrap();
        ws.save(&SaveOptions::default()).unwrap();
    };
    first.push((
        "snap first save".into(),
        once("snap first save", first_save),
    ));
    let store = b.tree.join(".snap");
    eprintln!(
        "snap store after first save: {} MB on disk (packs {} MB, catalog and the rest {} MB; the \
         catalog's length {} MB)",
        dir_size(&store) >> 20,
        dir_size(&store.join("packs")) >> 20,
        (dir_size(&store) - dir_size(&store.join("packs"))) >> 20,
        std::fs::metadata(store.join("catalog.redb")).map_or(0, |m| m.len()) >> 20
    );
    let mut g = c.benchmark_group(format!("{}-files", b.files));
    g.sample_size(10);
    g.bench_function("floor", |bch| bch.iter(|| floor_walk(&b.tree, 2).unwrap()));
    g.bench_function("snap-no-change-save", |bch| bch.iter(|| save(&b.tree)));
    let mut round = 0;
    g.bench_function("snap-small-change-save", |bch| {
        bch.iter_batched(
            || touch_files(&b.tree, 3, &mut round),
            |()| save(&b.tree),
            BatchSize::PerIteration,
        )
    });
    // What a user sees: the `snap undo` command (as `jj undo` is timed), some time after the
    // save it undoes (a clock tick later, so that the walk memo the save left is trusted,
    // as it is when a person or an agent undoes).
    let bin = snap_bin();
    g.bench_function("snap-undo", |bch| {
        bch.iter_batched(
            || {
                touch_files(&b.tree, 3, &mut round);
                save(&b.tree);
                std::thread::sleep(Duration::from_millis(20));
            },
            |()| snap_move(bin.as_deref(), &b.tree, "undo"),
            BatchSize::PerIteration,
        )
    });
    // Redo right after an undo: the tree the undo made, which the undo's walk memo vouches
    // for (what it wrote is read again).
    g.bench_function("snap-redo", |bch| {
        bch.iter_batched(
            || {
                touch_files(&b.tree, 3, &mut round);
                save(&b.tree);
                std::thread::sleep(Duration::from_millis(20));
                snap_move(bin.as_deref(), &b.tree, "undo");
                std::thread::sleep(Duration::from_millis(20));
            },
            |()| snap_move(bin.as_deref(), &b.tree, "redo"),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// `snap undo` or `snap redo` by the release binary, or in process without it.
fn snap_move(bin: Option<&Path>, tree: &Path, op: &str) {
    match bin {
        Some(bin) => run(Command::new(bin).arg("-C").arg(tree).args([op, "-q"])),
        None => {
            let ws = Workspace::discover(tree, None).unwrap();
            let moved = match op {
                "undo" => ws.undo(1, snap_tree::Run::Apply),
                _ => ws.redo(1, snap_tree::Run::Apply),
            };
            drop(moved.unwrap());
        }
    }
}

/// The release binary, when it is built (`cargo build --release -p snap-undo`).
fn snap_bin() -> Option<PathBuf> {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/snap");
    if bin.exists() {
        Some(bin)
    } else {
        eprintln!(
            "{} is not built (cargo build --release -p snap-undo): timing undo in process",
            bin.display()
        );
        None
    }
}

fn bench_git(c: &mut Criterion, b: &Bench, first: &mut Vec<(String, Duration)>) {
    if !installed("git") {
        eprintln!("git is not installed: skipping the git cases");
        return;
    }
    run(git(b, &b.tree).args(["init", "-q"]));
    let took = once("git first add+commit", || {
        run(git(b, &b.tree).args(["add", "-A"]));
        run(git(b, &b.tree).args(["commit", "-q", "-m", "first"]));
    });
    first.push(("git first add+commit".into(), took));
    let commit = |msg: &str| {
        run(git(b, &b.tree).args(["add", "-A"]));
        let _ = git(b, &b.tree).args(["commit", "-q", "-m", msg]).output();
    };
    let mut g = c.benchmark_group(format!("{}-files", b.files));
    g.sample_size(10);
    g.bench_function("git-no-change-add-commit", |bch| {
        bch.iter(|| commit("none"))
    });
    let mut round = 10_000;
    g.bench_function("git-small-change-add-commit", |bch| {
        bch.iter_batched(
            || touch_files(&b.tree, 3, &mut round),
            |()| commit("small"),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("git-undo", |bch| {
        bch.iter_batched(
            || {
                touch_files(&b.tree, 3, &mut round);
                commit("to undo");
            },
            |()| {
                run(git(b, &b.tree).args(["reset", "-q", "--hard", "HEAD~1"]));
                run(git(b, &b.tree).args(["clean", "-q", "-fd"]));
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    eprintln!("git objects: {} MB", dir_size(&b.peers.join("git")) >> 20);
    save(&b.tree);
}

fn bench_restic(c: &mut Criterion, b: &Bench, first: &mut Vec<(String, Duration)>) {
    if !installed("restic") {
        eprintln!("restic is not installed (apt-get install restic): skipping the restic cases");
        return;
    }
    run(restic(b).arg("init"));
    let backup = || {
        run(restic(b)
            .args([
                "backup",
                "--exclude",
                ".snap",
                "--exclude",
                ".jj",
                "--exclude",
                ".git",
            ])
            .arg(&b.tree))
    };
    first.push((
        "restic first backup".into(),
        once("restic first backup", backup),
    ));
    // restic keeps its index and trees in a local cache outside the repository as well.
    eprintln!(
        "restic repo: {} MB (and its local cache: {} MB)",
        dir_size(&b.peers.join("restic")) >> 20,
        dir_size(&b.peers.join("restic-cache")) >> 20
    );
    let mut g = c.benchmark_group(format!("{}-files", b.files));
    g.sample_size(10);
    g.bench_function("restic-no-change-backup", |bch| bch.iter(backup));
    g.finish();
    save(&b.tree);
}

fn bench_jj(c: &mut Criterion, b: &Bench, first: &mut Vec<(String, Duration)>) {
    if !installed("jj") {
        eprintln!(
            "jj is not installed (cargo install --locked jj-cli@0.45.1): skipping the jj cases"
        );
        return;
    }
    let jj = || {
        let mut cmd = Command::new("jj");
        cmd.current_dir(&b.tree)
            .env("JJ_USER", "bench")
            .env("JJ_EMAIL", "bench@example.invalid");
        cmd
    };
    run(jj().args(["git", "init"]));
    let took = once("jj first snapshot", || run(jj().args(["util", "snapshot"])));
    first.push(("jj first snapshot".into(), took));
    let mut g = c.benchmark_group(format!("{}-files", b.files));
    g.sample_size(10);
    g.bench_function("jj-no-change-snapshot", |bch| {
        bch.iter(|| run(jj().args(["util", "snapshot"])))
    });
    let mut round = 20_000;
    g.bench_function("jj-undo", |bch| {
        bch.iter_batched(
            || {
                touch_files(&b.tree, 3, &mut round);
                run(jj().args(["util", "snapshot"]));
            },
            |()| run(jj().args(["undo"])),
            BatchSize::PerIteration,
        )
    });
    g.bench_function("jj-redo", |bch| {
        bch.iter_batched(
            || {
                touch_files(&b.tree, 3, &mut round);
                run(jj().args(["util", "snapshot"]));
                run(jj().args(["undo"]));
            },
            |()| run(jj().args(["redo"])),
            BatchSize::PerIteration,
        )
    });
    g.finish();
    save(&b.tree);
}

/// Per-call overhead on a 3k-file tree: the snap binary (when built) against git add+commit.
fn bench_per_call(c: &mut Criterion, b: &Bench) {
    let bin = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/release/snap");
    let mut g = c.benchmark_group("3000-files");
    g.sample_size(20);
    let mut round = 0;
    if bin.exists() {
        run(Command::new(&bin).arg("-C").arg(&b.small).arg("save"));
        g.bench_function("snap-per-call-save", |bch| {
            bch.iter_batched(
                || touch_files(&b.small, 1, &mut round),
                |()| {
                    run(Command::new(&bin)
                        .arg("-C")
                        .arg(&b.small)
                        .args(["save", "-q"]))
                },
                BatchSize::PerIteration,
            )
        });
        bench_hook_call(&mut g, &bin.with_file_name("snap-undo"), b, &mut round);
    } else {
        eprintln!(
            "{} is not built (cargo build --release -p snap-undo): skipping snap-per-call-save",
            bin.display()
        );
    }
    if installed("git") {
        let git_dir = b.peers.join("git-small");
        run(git_shadow(&git_dir, &b.small).args(["init", "-q"]));
        git_add_commit(&git_dir, &b.small, "first");
        g.bench_function("git-per-call-add-commit", |bch| {
            bch.iter_batched(
                || touch_files(&b.small, 1, &mut round),
                |()| git_add_commit(&git_dir, &b.small, "call"),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// What an agent pays per tool call through `snap-undo hook --agent claude` (the payload on
/// stdin, one save), and the binary's bare start-up (`--version`), which any feature added to
/// the per-call binary must not slow.
fn bench_hook_call(
    g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    bin: &Path,
    b: &Bench,
    round: &mut u64,
) {
    use std::io::Write;
    use std::process::Stdio;
    let payload = serde_json::json!({"session_id": "bench", "hook_event_name": "PostToolUse",
        "tool_name": "Edit", "tool_use_id": "t", "cwd": b.small});
    let payload = payload.to_string();
    g.bench_function("snap-per-call-hook", |bch| {
        bch.iter_batched(
            || touch_files(&b.small, 1, round),
            |()| {
                let mut child = Command::new(bin)
                    .args(["hook", "--agent", "claude"])
                    .env_remove("CLAUDE_PROJECT_DIR")
                    .stdin(Stdio::piped())
                    .spawn()
                    .unwrap();
                let mut stdin = child.stdin.take().unwrap();
                stdin.write_all(payload.as_bytes()).unwrap();
                drop(stdin);
                assert!(child.wait().unwrap().success());
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("snap-version-start", |bch| {
        bch.iter(|| run(Command::new(bin).arg("--version").stdout(Stdio::null())))
    });
}

/// Restore of a whole old snapshot into an empty directory: every file is written. Timed
/// once, beside `restic restore` of its first backup and git checking out its first commit,
/// each into an empty directory of its own.
fn whole_restore(b: &Bench) {
    // `snap export` writes a snapshot into another directory with the restore engine; a
    // store belongs to its own workspace, so restoring into a stranger is not a thing.
    let target = b.peers.join("snap-restore");
    let restore = || {
        let ws = Workspace::discover(&b.tree, None).unwrap();
        ws.export("#1", &[], &target).unwrap();
    };
    let snap = once("snap restore of the first snapshot, whole tree", restore);
    let mut peers = Vec::new();
    if installed("restic") && b.peers.join("restic").exists() {
        let target = b.peers.join("restic-restore");
        let took = once("restic restore of the first backup", || {
            run(restic(b)
                .args(["restore", "latest", "--target"])
                .arg(&target))
        });
        peers.push(("restic restore", took));
    }
    if installed("git") && b.peers.join("git").exists() {
        let target = b.peers.join("git-checkout");
        std::fs::create_dir_all(&target).unwrap();
        let first = String::from_utf8(
            git(b, &b.tree)
                .args(["rev-list", "--max-parents=0", "HEAD"])
                .output()
                .unwrap()
                .stdout,
        )
        .unwrap();
        let took = once("git checkout of the first commit", || {
            run(git(b, &target)
                .env("GIT_INDEX_FILE", b.peers.join("checkout-index"))
                .args(["checkout", first.trim(), "--", "."]))
        });
        peers.push(("git checkout", took));
    }
    for (name, took) in peers {
        println!(
            "snap whole restore / {name:<26} = {:>6.2}  ({:.2} s / {:.2} s)",
            snap.as_secs_f64() / took.as_secs_f64(),
            snap.as_secs_f64(),
            took.as_secs_f64()
        );
    }
}

/// Store growth over many small saves (1-5 files changed each), against the zstd-compressed
/// size of what changed: the ideal a store cannot beat.
fn growth(b: &Bench) {
    let saves: u64 = std::env::var("SNAP_BENCH_SMALL_SAVES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let before = dir_size(&b.tree.join(".snap"));
    let ws = Workspace::discover(&b.tree, None).unwrap();
    let (mut round, mut changed) = (50_000, 0u64);
    let start = Instant::now();
    for i in 0..saves {
        let n = 1 + i % 5;
        let paths = touched(&b.tree, n, round);
        touch_files(&b.tree, n, &mut round);
        for path in paths {
            let data = std::fs::read(path).unwrap();
            changed += zstd::bulk::compress(&data, 3).unwrap().len() as u64;
        }
        ws.save(&SaveOptions::default()).unwrap();
    }
    let took = start.elapsed();
    // Measured closed, as `before` was and as every `snap save` process leaves it: redb
    // grows its file in steps while open, and trims the free tail when it closes.
    drop(ws);
    let grown = dir_size(&b.tree.join(".snap")).saturating_sub(before);
    println!(
        "store growth over {saves} small saves: {:.1} MB ({:.1} KB per save), compressed size of \
         the changed files {:.1} MB; ratio {:.2}; {:.0} ms per save",
        grown as f64 / 1e6,
        grown as f64 / 1e3 / saves as f64,
        changed as f64 / 1e6,
        grown as f64 / changed.max(1) as f64,
        took.as_secs_f64() * 1e3 / saves as f64
    );
}

/// Agents run hooks in parallel: 8 processes each saving 40 times at once on the 3k-file
/// tree, each editing a file of its own. Prints the per-save latency's median and tail, and
/// the wall time of all of them.
fn concurrent_writers(b: &Bench) {
    const WRITERS: usize = 8;
    const SAVES: usize = 40;
    let Some(bin) = snap_bin() else { return };
    let start = Instant::now();
    let mut took: Vec<f64> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (bin, small) = (&bin, &b.small);
                s.spawn(move || {
                    (0..SAVES)
                        .map(|i| {
                            std::fs::write(small.join(format!("writer{w}.txt")), format!("{i}\n"))
                                .unwrap();
                            let t = Instant::now();
                            run(Command::new(bin).arg("-C").arg(small).args(["save", "-q"]));
                            t.elapsed().as_secs_f64() * 1e3
                        })
                        .collect::<Vec<f64>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    let wall = start.elapsed();
    took.sort_by(f64::total_cmp);
    let q = |p: f64| took[((took.len() as f64 * p) as usize).min(took.len() - 1)];
    println!(
        "{WRITERS} writers x {SAVES} saves at once: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, \
         p99/p50 {:.1}; all in {:.2} s",
        q(0.5),
        q(0.99),
        took[took.len() - 1],
        q(0.99) / q(0.5),
        wall.as_secs_f64()
    );
}

/// File deltas: 300 saves, each appending one line to a 71 KB source file of the 3k-file
/// tree, against the zstd-compressed size of the lines appended (what a store cannot beat)
/// and of the file itself (what storing it whole each time costs).
fn appended_file_growth(b: &Bench) {
    let path = b.small.join("appended.rs");
    let mut body: String = (0..2600)
        .map(|i| {
            format!(
                "    let v{i} = table[{}] ^ {};\n",
                i * 7919 % 1013,
                i * i % 65_521
            )
        })
        .collect();
    std::fs::write(&path, &body).unwrap();
    let ws = Workspace::discover(&b.small, None).unwrap();
    ws.save(&SaveOptions::default()).unwrap();
    drop(ws);
    let store = b.small.join(".snap");
    let before = dir_size(&store);
    let (mut lines, whole) = (
        0u64,
        zstd::bulk::compress(body.as_bytes(), 3).unwrap().len(),
    );
    let ws = Workspace::discover(&b.small, None).unwrap();
    for i in 0..300 {
        let line = format!("    appended({i}, \"line {i}\");\n");
        lines += zstd::bulk::compress(line.as_bytes(), 3).unwrap().len() as u64;
        body.push_str(&line);
        std::fs::write(&path, &body).unwrap();
        ws.save(&SaveOptions::default()).unwrap();
    }
    drop(ws);
    let grown = dir_size(&store).saturating_sub(before);
    let packs = std::fs::read_dir(store.join("packs")).map_or(0, |d| d.count());
    println!(
        "300 lines appended to a {} KB file, one save each: store +{:.0} KB ({:.0} B per \
         save); the lines compressed {:.0} KB, the file whole {:.0} KB per save; {packs} pack \
         files",
        body.len() >> 10,
        grown as f64 / 1e3,
        grown as f64 / 300.0,
        lines as f64 / 1e3,
        whole as f64 / 1e3,
    );
}

/// The files `touch_files(tree, n, round)` will edit.
fn touched(tree: &Path, n: u64, round: u64) -> Vec<PathBuf> {
    (1..=n)
        .map(|k| {
            let i = ((round + k) * 7919 + (k - 1)) % 100;
            tree.join("m000")
                .join(format!("d{i}"))
                .join(format!("f{i}.rs"))
        })
        .collect()
}

fn print_ratios(b: &Bench, first: &[(String, Duration)]) {
    let group = format!("{}-files", b.files);
    println!("\n== ratios (median times, this run; below 1.0 means snap is faster)");
    let pairs = [
        ("snap-no-change-save", "floor"),
        ("snap-small-change-save", "floor"),
        ("snap-no-change-save", "jj-no-change-snapshot"),
        ("snap-no-change-save", "git-no-change-add-commit"),
        ("snap-small-change-save", "git-small-change-add-commit"),
        ("snap-no-change-save", "restic-no-change-backup"),
        ("snap-undo", "jj-undo"),
        ("snap-undo", "git-undo"),
        ("snap-redo", "jj-redo"),
    ];
    for (ours, theirs) in pairs {
        match (median(&group, ours), median(&group, theirs)) {
            (Some(a), Some(t)) => println!(
                "{ours:<24} / {theirs:<28} = {:>6.2}  ({:.1} ms / {:.1} ms)",
                a / t,
                a / 1e6,
                t / 1e6
            ),
            _ => println!("{ours:<24} / {theirs:<28} =   n/a (not run)"),
        }
    }
    for ours in ["snap-per-call-save", "snap-per-call-hook"] {
        if let (Some(a), Some(t)) = (
            median("3000-files", ours),
            median("3000-files", "git-per-call-add-commit"),
        ) {
            println!(
                "{ours:<24} / {:<28} = {:>6.2}  ({:.1} ms / {:.1} ms)",
                "git-per-call-add-commit",
                a / t,
                a / 1e6,
                t / 1e6
            );
        }
    }
    if let Some(start) = median("3000-files", "snap-version-start") {
        println!("snap-undo --version start-up: {:.2} ms", start / 1e6);
    }
    let snap_first = first
        .iter()
        .find(|(n, _)| n.starts_with("snap"))
        .map(|(_, d)| d.as_secs_f64());
    for (name, took) in first.iter().filter(|(n, _)| !n.starts_with("snap")) {
        if let Some(s) = snap_first {
            println!(
                "snap first save / {name:<28} = {:>6.2}  ({s:.2} s / {:.2} s)",
                s / took.as_secs_f64(),
                took.as_secs_f64()
            );
        }
    }
}

fn main() {
    let b = setup();
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    let mut first = Vec::new();
    bench_snap(&mut c, &b, &mut first);
    bench_git(&mut c, &b, &mut first);
    bench_jj(&mut c, &b, &mut first);
    bench_restic(&mut c, &b, &mut first);
    bench_per_call(&mut c, &b);
    concurrent_writers(&b);
    whole_restore(&b);
    growth(&b);
    appended_file_growth(&b);
    c.final_summary();
    print_ratios(&b, &first);
    let _ = std::fs::remove_dir_all(b.tree.parent().unwrap_or(&b.tree));
}
