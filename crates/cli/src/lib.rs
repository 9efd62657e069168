//! The `snap` program (installed as `snap` and as `snap-undo`): parses arguments, opens the
//! workspace, runs one command, and prints its outcome for people or as one JSON document.
//! Exit codes: 0 ok (also "nothing changed"), 1 error, 2 usage, 3 nothing to undo or redo,
//! 128 + N stopped by signal N (`signals`).

mod args;
mod diff;
mod lifecycle;
mod progress;
mod render;
mod signals;

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Parser;
use serde_json::{Value, json};
use snap_tree::{Change, SaveOptions, TreeError, Workspace};

use crate::args::{Category, Cli, Command, MoveArgs, SaveArgs};
use crate::render::*;

/// Exit code when there is nothing to undo or redo.
const EXIT_NOTHING_TO_DO: u8 = 3;

/// Runs one command from the process's arguments; the whole of both binaries.
pub fn main() -> ExitCode {
    restore_sigpipe();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    let json_mode = cli.json;
    // A panic (a bug, or a library meeting damage it did not expect) still ends in one
    // `error:` line and exit 1, never a backtrace: the hook stays silent, the payload is said.
    std::panic::set_hook(Box::new(|_| {}));
    match std::panic::catch_unwind(|| run(cli)) {
        // Asked to stop while finishing a command that could not stop part-way.
        Ok(Ok(())) => signals::exit_code().map_or(ExitCode::SUCCESS, ExitCode::from),
        Ok(Err(e)) => report_error(&e, json_mode),
        Err(payload) => report_error(&anyhow::anyhow!(panic_message(&payload)), json_mode),
    }
}

/// What a caught panic says, with where to go from there.
fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown".into());
    format!(
        "internal error: {what} (the store may be damaged: run `snap verify`, then `snap repair` if it reports problems)"
    )
}

/// A command line clap refused: its own output for `--help` and `--version`, else exit 2,
/// with `{"error": ...}` on stdout too when `--json` was asked for (docs/JSON.md).
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion)
        || e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand && !wants_json()
    {
        let _ = e.print();
        return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
    }
    let _ = e.print();
    if wants_json() {
        let text = e.render().to_string();
        let first = text
            .lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("usage error");
        let message = first.trim().trim_start_matches("error: ");
        println!("{}", json!({ "error": message }));
    }
    ExitCode::from(2)
}

/// True when `--json` is among the arguments (read by hand: clap refused the line).
fn wants_json() -> bool {
    std::env::args_os()
        .skip(1)
        .take_while(|a| a != "--")
        .any(|a| a == "--json")
}

/// Lets `snap log | head` end quietly, as Unix tools do, instead of panicking on EPIPE.
#[allow(unsafe_code)]
fn restore_sigpipe() {
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn report_error(e: &anyhow::Error, json_mode: bool) -> ExitCode {
    let message = one_line(e);
    eprintln!("error: {message}");
    if json_mode {
        println!("{}", json!({ "error": message }));
    }
    match e.downcast_ref::<TreeError>() {
        Some(t) if t.is_nothing_to_do() => ExitCode::from(EXIT_NOTHING_TO_DO),
        Some(TreeError::Interrupted) => ExitCode::from(signals::exit_code().unwrap_or(143)),
        _ => ExitCode::FAILURE,
    }
}

/// The error and its causes on one line. Library errors already name their source in their
/// own message (`path: os error`), so a cause already said is not said twice.
fn one_line(e: &anyhow::Error) -> String {
    let mut message = String::new();
    for cause in e.chain() {
        let text = cause.to_string();
        if !message.contains(&text) {
            if !message.is_empty() {
                message.push_str(": ");
            }
            message.push_str(&text);
        }
    }
    message.replace('\n', " ")
}

/// What every command needs besides its own arguments.
pub(crate) struct Ctx {
    pub(crate) start: PathBuf,
    pub(crate) store: Option<PathBuf>,
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) progress: bool,
}

fn run(cli: Cli) -> Result<()> {
    let cwd = std::env::current_dir().context("cannot read the current directory")?;
    let start = cli.dir.as_ref().map_or(cwd.clone(), |d| cwd.join(d));
    let store = cli.store.as_ref().map(|s| cwd.join(s));
    if !cli.quiet {
        snap_tree::snap_store::on_lock_wait(|m| eprintln!("snap: {m}"));
    }
    if cli.command.writes() {
        signals::watch().context("cannot watch for SIGTERM")?;
    }
    let ctx = Ctx {
        start,
        store,
        json: cli.json,
        quiet: cli.quiet,
        progress: progress::wanted(cli.json, cli.quiet, cli.no_progress),
    };
    match cli.command {
        Command::Init { force } => cmd_init(&ctx, force),
        Command::Save(args) => cmd_save(&ctx, args),
        Command::Undo(args) | Command::Rewind(args) => cmd_move(&ctx, args, false),
        Command::Redo(args) => cmd_move(&ctx, args, true),
        Command::Restore {
            reference,
            paths,
            dry_run,
        } => cmd_restore(&ctx, &reference, &paths, dry_run),
        Command::Log {
            max_count,
            all,
            step,
            session,
            since,
            stats,
        } => cmd_log(
            &ctx,
            LogFilter {
                max_count,
                all,
                step,
                session,
                since,
                stats,
            },
        ),
        Command::Show { reference } => cmd_show(&ctx, &reference),
        Command::Ls { reference, paths } => {
            cmd_ls(&ctx, reference.as_deref().unwrap_or("@"), &paths)
        }
        Command::Cat { reference, path } => cmd_cat(&ctx, &reference, &path),
        Command::Status { category } => cmd_status(&ctx, category),
        Command::Recover => cmd_recover(&ctx),
        Command::Diff(args) => diff::run(&ctx, args),
        Command::Completions { shell } => {
            let mut cmd = <Cli as clap::CommandFactory>::command();
            clap_complete::generate(shell, &mut cmd, "snap", &mut std::io::stdout());
            Ok(())
        }
        Command::Prune {
            keep_last,
            keep_within,
            dry_run,
        } => lifecycle::prune(&ctx, keep_last, keep_within, dry_run),
        Command::Gc => lifecycle::gc(&ctx),
        Command::Verify { read_data } => lifecycle::verify(&ctx, read_data),
        Command::Repair => lifecycle::repair(&ctx),
        Command::Delete { all: _, yes } => lifecycle::delete_all(&ctx, yes),
    }
}

pub(crate) fn open(ctx: &Ctx) -> Result<Workspace> {
    let mut ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
    if ctx.progress {
        ws.set_observer(progress::observer());
    }
    for r in ws.recovered() {
        eprintln!(
            "snap: finished an interrupted {} (HEAD is #{}, {} paths touched)",
            r.op.as_str(),
            r.head.record.seq,
            r.paths_touched
        );
        print_kept(r.op.as_str(), &r.kept);
    }
    Ok(ws)
}

/// Opens the workspace for a command that only reads: an interrupted operation is left for
/// a writing command or `snap recover` (DESIGN §7), and named on stderr.
pub(crate) fn open_reading(ctx: &Ctx) -> Result<Workspace> {
    let ws = Workspace::discover_reading(&ctx.start, ctx.store.as_deref())?;
    for m in ws.pending()? {
        eprintln!(
            "snap: an interrupted {} is pending; run `snap recover` to finish it",
            m.op.as_str()
        );
    }
    Ok(ws)
}

/// `value()` in JSON mode, else nothing: a save or undo of 100k files would otherwise build a
/// JSON value of every change (over 100 MB) only to print a one-line summary.
pub(crate) fn json_only(ctx: &Ctx, value: impl FnOnce() -> Value) -> Value {
    if ctx.json { value() } else { Value::Null }
}

pub(crate) fn emit(ctx: &Ctx, value: Value, human: impl FnOnce()) {
    if ctx.json {
        println!("{value}");
    } else {
        human();
    }
}

fn cmd_init(ctx: &Ctx, force: bool) -> Result<()> {
    let ws = Workspace::init(&ctx.start, ctx.store.as_deref(), force)?;
    let store = ws.store().dir().display().to_string();
    emit(
        ctx,
        json!({
            "root": ws.root().display().to_string(),
            "store": store,
            "workspace_id": ws.workspace_id()?,
        }),
        || println!("initialized snap store in {store}"),
    );
    Ok(())
}

fn cmd_save(ctx: &Ctx, args: SaveArgs) -> Result<()> {
    if std::env::var_os("SNAP_DISABLE").is_some_and(|v| v == "1") {
        emit(ctx, json!({"created": false, "disabled": true}), || {
            println!("snap is disabled (SNAP_DISABLE=1); nothing saved")
        });
        return Ok(());
    }
    let ws = match open(ctx) {
        Err(e) if is_missing_store(&e) => {
            let mut ws = Workspace::init(&ctx.start, ctx.store.as_deref(), args.force)?;
            if ctx.progress {
                ws.set_observer(progress::observer());
            }
            ws
        }
        other => other?,
    };
    let opts = SaveOptions {
        message: args.message,
        step: args.step,
        session: args.session,
        meta: args.meta,
        allow_empty: args.allow_empty,
    };
    let out = ws.save(&opts)?;
    let head = ws.head()?;
    let value = json_only(ctx, || {
        let mut value = json!({
            "created": out.snapshot.is_some(),
            "id": out.snapshot.as_ref().map(|s| s.id.to_hex()),
            "seq": out.snapshot.as_ref().map(|s| s.record.seq),
            "head": head.as_ref().map(|h| h.id.to_hex()),
            "changes": changes_json(&out.changes),
        });
        value["skipped"] = report_json(&out.report);
        if let Some(s) = &out.snapshot {
            value["snapshot"] = snapshot_json(s);
        }
        value
    });
    emit(ctx, value, || {
        match &out.snapshot {
            Some(s) => println!(
                "saved #{} {} ({} added, {} modified, {} deleted)",
                s.record.seq,
                s.id.short(),
                s.record.stats.added,
                s.record.stats.modified,
                s.record.stats.deleted
            ),
            None => println!(
                "nothing changed since #{}",
                head.as_ref().map_or(0, |h| h.record.seq)
            ),
        }
        print_skipped(&out.report, ctx.quiet);
    });
    Ok(())
}

/// True when `e` says there is no store yet (so `save` creates one).
fn is_missing_store(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<TreeError>(),
        Some(
            TreeError::NoWorkspace(_)
                | TreeError::Store(snap_tree::snap_store::StoreError::NotFound(_))
        )
    )
}

fn print_skipped(report: &snap_tree::ScanReport, quiet: bool) {
    if quiet {
        return;
    }
    for (path, size) in &report.too_large {
        eprintln!(
            "skipped {} ({size} bytes, over max_file_size)",
            path_str(path)
        );
    }
    if report.special > 0 {
        eprintln!(
            "skipped {} special file(s) (fifo, socket or device)",
            report.special
        );
    }
}

fn cmd_move(ctx: &Ctx, args: MoveArgs, redo: bool) -> Result<()> {
    let ws = open(ctx)?;
    let out = if redo {
        ws.redo(args.n, args.dry_run)?
    } else {
        ws.undo(args.n, args.dry_run)?
    };
    emit(ctx, json_only(ctx, || move_json(&out)), || {
        print_move(&out, ctx.quiet)
    });
    Ok(())
}

fn cmd_restore(ctx: &Ctx, reference: &str, paths: &[PathBuf], dry_run: bool) -> Result<()> {
    let ws = open(ctx)?;
    let rel = workspace_paths(&ws, &ctx.start, paths)?;
    let out = ws.restore(reference, &rel, dry_run)?;
    emit(ctx, json_only(ctx, || move_json(&out)), || {
        print_move(&out, ctx.quiet)
    });
    Ok(())
}

/// Turns paths given relative to the start directory into workspace-relative path bytes.
pub(crate) fn workspace_paths(
    ws: &Workspace,
    start: &Path,
    paths: &[PathBuf],
) -> Result<Vec<Vec<u8>>> {
    let base = start
        .canonicalize()
        .with_context(|| start.display().to_string())?;
    paths
        .iter()
        .map(|p| workspace_path(ws.root(), &base, p))
        .collect()
}

fn workspace_path(root: &Path, base: &Path, path: &Path) -> Result<Vec<u8>> {
    let mut out = PathBuf::new();
    for component in base.join(path).components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            c => out.push(c),
        }
    }
    match out.strip_prefix(root) {
        Ok(rel) => Ok(rel.as_os_str().as_bytes().to_vec()),
        Err(_) => Err(TreeError::OutsideWorkspace {
            path: path.to_path_buf(),
            root: root.to_path_buf(),
        }
        .into()),
    }
}

/// `snap log`'s filters.
struct LogFilter {
    max_count: Option<usize>,
    all: bool,
    step: Option<u64>,
    session: Option<String>,
    since: Option<String>,
    stats: bool,
}

fn cmd_log(ctx: &Ctx, f: LogFilter) -> Result<()> {
    let ws = open_reading(ctx)?;
    let since_ns = match &f.since {
        Some(d) => snap_tree::parse_duration(d).map_err(anyhow::Error::msg)?,
        None => None,
    };
    let now_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64);
    let entries: Vec<_> = ws
        .log(f.all)?
        .into_iter()
        .filter(|e| since_ns.is_none_or(|d| e.snapshot.record.time_ns >= now_ns - d))
        .filter(|e| f.step.is_none_or(|s| e.snapshot.record.step == Some(s)))
        .filter(|e| {
            f.session
                .as_ref()
                .is_none_or(|s| e.snapshot.record.session.as_ref() == Some(s))
        })
        .take(f.max_count.unwrap_or(usize::MAX))
        .collect();
    let head = ws.head()?.map(|h| h.id.to_hex());
    let stats = if f.stats { Some(ws.stats()?) } else { None };
    let mut value =
        json!({"head": head, "snapshots": entries.iter().map(log_entry_json).collect::<Vec<_>>()});
    if let Some(s) = &stats {
        value["stats"] = lifecycle::stats_json(s);
    }
    emit(ctx, value, || {
        if let Some(s) = &stats {
            lifecycle::print_stats(s);
        }
        if entries.is_empty() {
            println!("no snapshots yet");
        }
        for e in &entries {
            println!("{}", log_line(e));
        }
    });
    Ok(())
}

fn cmd_show(ctx: &Ctx, reference: &str) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let changes = ws.changes_of(&snap)?;
    let mut value = snapshot_json(&snap);
    value["changes"] = changes_json(&changes);
    emit(ctx, value, || {
        println!("{}", snapshot_line(&snap));
        println!("id      {}", snap.id);
        if let Some(p) = snap.record.parent {
            println!("parent  {p}");
        }
        for (k, v) in &snap.record.meta {
            println!("meta    {k}={v}");
        }
        print_changes(&changes);
    });
    Ok(())
}

fn cmd_ls(ctx: &Ctx, reference: &str, paths: &[PathBuf]) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let filter = workspace_paths(&ws, &ctx.start, paths)?;
    let under = |p: &[u8]| {
        filter.is_empty()
            || filter.iter().any(|f| {
                f.is_empty()
                    || p == f.as_slice()
                    || (p.starts_with(f) && p.get(f.len()) == Some(&b'/'))
            })
    };
    let files: Vec<_> = ws
        .files(&snap)?
        .into_iter()
        .filter(|(p, _)| under(p))
        .collect();
    let rows: Vec<Value> = files.iter().map(|(p, n)| json!({"path": path_str(p), "kind": kind_str(n.kind), "size": n.size, "id": n.id.to_hex()})).collect();
    emit(
        ctx,
        json!({"snapshot": snap.id.to_hex(), "seq": snap.record.seq, "entries": rows}),
        || {
            for (p, n) in &files {
                println!(
                    "{:<7} {:>10}  {}  {}",
                    kind_str(n.kind),
                    n.size,
                    n.id.short(),
                    path_str(p)
                );
            }
        },
    );
    Ok(())
}

fn cmd_cat(ctx: &Ctx, reference: &str, path: &Path) -> Result<()> {
    let ws = open_reading(ctx)?;
    let snap = ws.resolve(reference)?;
    let rel = workspace_paths(&ws, &ctx.start, &[path.to_path_buf()])?.remove(0);
    let content = ws.read_file(&snap, &rel)?;
    if ctx.json {
        let text = String::from_utf8(content.clone()).ok();
        println!(
            "{}",
            json!({"path": path_str(&rel), "size": content.len(), "binary": text.is_none(), "content": text})
        );
        return Ok(());
    }
    std::io::stdout()
        .write_all(&content)
        .context("writing to stdout")?;
    Ok(())
}

fn cmd_status(ctx: &Ctx, category: Option<Category>) -> Result<()> {
    let ws = open_reading(ctx)?;
    let status = ws.status()?;
    let wanted = |c: &Change| match category {
        None => true,
        Some(Category::Added) => *c == Change::Added,
        Some(Category::Modified) => *c == Change::Modified,
        Some(Category::Deleted) => *c == Change::Deleted,
    };
    let changes: Vec<_> = status
        .changes
        .iter()
        .filter(|(_, c)| wanted(c))
        .cloned()
        .collect();
    let dirs: Vec<_> = status
        .dirs
        .iter()
        .filter(|(_, c)| wanted(c))
        .cloned()
        .collect();
    // Before the first snapshot nothing is clean: a save would record the tree.
    let clean = status.head.is_some() && status.changes.is_empty() && status.dirs.is_empty();
    let pending: Vec<Value> = ws
        .pending()?
        .iter()
        .map(|m| json!({"op": m.op.as_str(), "target": m.head.to_hex()}))
        .collect();
    let mut value = json!({
        "head": status.head.as_ref().map(|h| h.id.to_hex()),
        "clean": clean,
        "changes": changes_json(&changes),
        "dirs": changes_json(&dirs),
        "redo_depth": status.redo_depth,
        "pending": pending.first(),
        "root": ws.root().display().to_string(),
        "workspace_id": ws.workspace_id()?,
    });
    value["skipped"] = report_json(&status.report);
    emit(ctx, value, || {
        match &status.head {
            Some(h) => println!("HEAD {}", snapshot_line(h)),
            None => println!("no snapshots yet"),
        }
        if clean {
            println!("clean: the working tree matches HEAD");
        }
        for p in &pending {
            println!(
                "pending: an interrupted {} (run `snap recover` to finish it)",
                p["op"].as_str().unwrap_or("move")
            );
        }
        print_changes(&changes);
        print_dir_changes(&dirs);
        print_skipped(&status.report, ctx.quiet);
    });
    Ok(())
}

fn cmd_recover(ctx: &Ctx) -> Result<()> {
    let ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
    let done: Vec<Value> = ws
        .recovered()
        .iter()
        .map(|r| {
            let kept: Vec<String> = r.kept.iter().map(|p| path_str(p)).collect();
            json!({"op": r.op.as_str(), "head": r.head.id.to_hex(), "paths_touched": r.paths_touched, "kept": kept})
        })
        .collect();
    emit(ctx, json!({"recovered": done}), || {
        if ws.recovered().is_empty() {
            println!("nothing to recover");
        }
        for r in ws.recovered() {
            println!(
                "finished an interrupted {}: HEAD is #{} ({} paths touched)",
                r.op.as_str(),
                r.head.record.seq,
                r.paths_touched
            );
            print_kept(r.op.as_str(), &r.kept);
        }
    });
    if done.len() > 1 {
        bail!("more than one interrupted operation was found; check `snap status`");
    }
    Ok(())
}
