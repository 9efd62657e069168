//! `cargo bench -p snap-benches --bench ui`: what `snap ui` costs on a long history. A store
//! of `SNAP_BENCH_SNAPSHOTS` snapshots (default 10,000: 10 sessions of 100 turns of 10 tool
//! calls, each editing one file of a small, deep source tree) is made once through the
//! library and kept in the temp directory for the next run. Measured: opening the UI (the
//! history read and the timeline built), one frame drawn at 120x40, a move with the detail
//! it reads, folding a session, and a search that finds nothing in the messages.

#![allow(clippy::unwrap_used, missing_docs)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use criterion::Criterion;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use snap_tree::{SaveOptions, Workspace};
use snap_ui::{App, Source, Theme};

/// The store, made on the first run.
fn store(snapshots: u64) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("snap-bench-ui-{snapshots}"));
    let done = dir.join(".bench-complete");
    if done.exists() {
        return dir;
    }
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let ws = Workspace::init(&dir, None, false).unwrap();
    drop(ws);
    // Keep every snapshot: the default keeps 1,000 beyond a week.
    std::fs::write(
        dir.join(".snap/config.toml"),
        "[retention]\nkeep_last = 1000000\nkeep_within = \"3650d\"\n",
    )
    .unwrap();
    let ws = Workspace::discover(&dir, None).unwrap();
    eprintln!("making {snapshots} snapshots in {} (once)", dir.display());
    for n in 0..snapshots {
        edit(&dir, n);
        ws.save(&call(n)).unwrap();
    }
    std::fs::write(done, b"").unwrap();
    dir
}

/// Call `n` appends a line to one of 200 files in a tree four directories deep.
fn edit(dir: &Path, n: u64) {
    let file = n % 200;
    let path = dir.join(format!(
        "src/m{}/sub{}/deep{}/f{file}.rs",
        file % 5,
        file % 3,
        file % 2
    ));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    text.push_str(&format!("pub fn f{n}() -> u64 {{ {n} }}\n"));
    std::fs::write(path, text).unwrap();
}

fn call(n: u64) -> SaveOptions {
    SaveOptions {
        session: Some(format!("session-{:04}", n / 1000)),
        step: Some(n / 10 % 100 + 1),
        meta: vec![
            (
                "tool".into(),
                ["Edit", "Write", "Bash"][(n % 3) as usize].into(),
            ),
            ("tool_use_id".into(), format!("call-{n}")),
        ],
        ..SaveOptions::default()
    }
}

fn key(app: &mut App, code: KeyCode) {
    app.key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn main() {
    let snapshots = std::env::var("SNAP_BENCH_SNAPSHOTS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10_000);
    let dir = store(snapshots);
    let source = Source::new(&dir, None);
    let mut c = Criterion::default()
        .configure_from_args()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4))
        .sample_size(20);
    let mut group = c.benchmark_group(format!("ui {snapshots} snapshots"));
    group.bench_function("open (history read, rows built)", |b| {
        b.iter(|| App::open(source.clone(), Theme::new(true)).unwrap())
    });
    let mut app = App::open(source.clone(), Theme::new(true)).unwrap();
    app.load_detail();
    let mut terminal = Terminal::new(TestBackend::new(120, 40)).unwrap();
    group.bench_function("draw one frame 120x40", |b| {
        b.iter(|| {
            terminal
                .draw(|frame| snap_ui::draw::draw(frame, &mut app))
                .unwrap();
        })
    });
    group.bench_function("move down and read the detail", |b| {
        b.iter(|| {
            key(&mut app, KeyCode::Char('j'));
            app.load_detail();
        })
    });
    group.bench_function("fold and unfold the top session", |b| {
        key(&mut app, KeyCode::Char('g'));
        b.iter(|| key(&mut app, KeyCode::Char(' ')))
    });
    group.bench_function("reload after a save elsewhere", |b| {
        b.iter(|| app.reload().unwrap())
    });
    group.finish();
    c.final_summary();
}
