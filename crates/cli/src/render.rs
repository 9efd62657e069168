//! Human and JSON renderings of snapshots, changes and outcomes.

use snap_tree::flat::{Listed, Rename};
use snap_tree::{Change, EntryKind, LogEntry, MoveOutcome, PathChange, Snapshot};

pub use snap_tree::display::{path_shown, path_str, session_short, text_shown, time_str};

pub fn kind_str(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::File => "file",
        EntryKind::Executable => "exec",
        EntryKind::Symlink => "symlink",
        EntryKind::Dir => "dir",
    }
}

/// A change's status letter: `A`, `M` or `D`.
pub fn change_letter(change: Change) -> char {
    match change {
        Change::Added => 'A',
        Change::Modified => 'M',
        Change::Deleted => 'D',
    }
}

/// One line per changed path: `A path`, `M path`, `D path`.
pub fn print_changes(changes: &[PathChange]) {
    for (path, change) in changes {
        println!("{} {}", change_letter(*change), path_shown(path));
    }
}

/// As [`print_changes`], each rename on one line: `R old -> new`.
pub fn print_changes_renamed(changes: &[PathChange], renames: &[Rename]) {
    let paths = changes.iter().map(|(p, c)| (p.as_slice(), *c));
    for line in snap_tree::flat::listed(paths, renames) {
        match line {
            Listed::Path(path, change) => {
                println!("{} {}", change_letter(change), path_shown(path))
            }
            Listed::Renamed(r) => println!("R {}", rename_shown(r)),
        }
    }
}

/// `old -> new`, and how alike the two are when the content changed too.
pub fn rename_shown(r: &Rename) -> String {
    let alike = match r.similarity {
        100 => String::new(),
        n => format!(" ({n}% alike)"),
    };
    format!("{} -> {}{alike}", path_shown(&r.from), path_shown(&r.to))
}

/// Directory-level changes, with a trailing `/`: `A empty/`, `D gone/`, `M chmodded/`.
pub fn print_dir_changes(dirs: &[PathChange]) {
    for (path, change) in dirs {
        println!("{} {}/", change_letter(*change), path_shown(path));
    }
}

/// Whether a line may carry colour (see [`crate::pager::colour`]: a terminal, no `NO_COLOR`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Colour {
    /// ANSI colours, as `diff` paints its lines.
    On,
    /// Plain text.
    Off,
}

impl Colour {
    /// Colour for what this command prints on stdout.
    pub fn of_stdout() -> Colour {
        match crate::pager::colour() {
            true => Colour::On,
            false => Colour::Off,
        }
    }

    /// `text` in the SGR colour `code`, or as it is.
    fn paint(self, code: &str, text: &str) -> String {
        match self {
            Colour::On => format!("\x1b[{code}m{text}\x1b[0m"),
            Colour::Off => text.to_string(),
        }
    }
}

/// The SGR codes of a log line: ids yellow as git's, sessions cyan.
const ID_COLOUR: &str = "33";
const SESSION_COLOUR: &str = "36";

/// How many hex digits of an id a line shows (as `--oneline` and `blame`); any 4 or more
/// name it back.
const SHORT_ID: usize = 8;

/// `#seq short-id time kind +A ~M -D ...`: one snapshot on one line, the id and session as
/// their first 8 characters (100 columns before the message).
pub fn snapshot_line(s: &Snapshot) -> String {
    snapshot_line_in(s, Colour::Off, None)
}

/// [`snapshot_line`], its id and session coloured when `colour` says so; with `renamed`
/// (files it moved), `+A ~M -D RN`, each rename counted once, not as an addition and a
/// deletion.
fn snapshot_line_in(s: &Snapshot, colour: Colour, renamed: Option<u64>) -> String {
    let r = &s.record;
    let moved = renamed.unwrap_or(0);
    let mut line = format!(
        "#{:<4} {}  {}  {:<7} +{} ~{} -{}",
        r.seq,
        colour.paint(ID_COLOUR, &s.id.to_hex()[..SHORT_ID]),
        time_str(r.time_ns),
        r.kind.as_str(),
        r.stats.added.saturating_sub(moved),
        r.stats.modified,
        r.stats.deleted.saturating_sub(moved)
    );
    if moved > 0 {
        line.push_str(&format!(" R{moved}"));
    }
    if let Some((added, removed)) = r.stats.lines {
        line.push_str(&format!("  lines +{added} -{removed}"));
    }
    if let Some(step) = r.step {
        line.push_str(&format!("  step {step}"));
    }
    if let Some(session) = &r.session {
        let short = text_shown(&session_short(session));
        line.push_str(&format!(
            "  session {}",
            colour.paint(SESSION_COLOUR, &short)
        ));
    }
    if !r.message.is_empty() {
        line.push_str(&format!("  {}", text_shown(&r.message)));
    }
    line
}

/// A `log` row: where it stands, then [`snapshot_line`] (`renamed`: the files it moved).
pub fn log_line(e: &LogEntry, colour: Colour, renamed: Option<u64>) -> String {
    format!(
        "{}{}",
        log_tag(e, colour),
        snapshot_line_in(&e.snapshot, colour, renamed)
    )
}

/// `snap log --oneline`: tag, short id, sequence, the session's first 8 characters, the
/// message (or the kind), and the `tool` meta when there is one.
pub fn oneline(e: &LogEntry, colour: Colour) -> String {
    let r = &e.snapshot.record;
    let session = r.session.as_deref().map_or("-".into(), session_short);
    let what = match r.message.is_empty() {
        true => r.kind.as_str().to_string(),
        false => r.message.clone(),
    };
    let mut line = format!(
        "{}{} #{:<4} {} {}",
        log_tag(e, colour),
        colour.paint(ID_COLOUR, &e.snapshot.id.to_hex()[..SHORT_ID]),
        r.seq,
        colour.paint(SESSION_COLOUR, &format!("{:<8}", text_shown(&session))),
        text_shown(&what)
    );
    if let Some((_, tool)) = r.meta.iter().find(|(k, _)| k == "tool") {
        line.push_str(&format!(" [{}]", text_shown(tool)));
    }
    line
}

/// `HEAD `, `redo `, `gone ` or blanks: where a log row stands (HEAD green, redo yellow,
/// gone red, as git colours its refs).
fn log_tag(e: &LogEntry, colour: Colour) -> String {
    let (tag, code) = if e.is_head {
        ("HEAD", "1;32")
    } else if e.redoable {
        ("redo", "33")
    } else if e.abandoned {
        ("gone", "31")
    } else {
        return "     ".to_string();
    };
    format!("{} ", colour.paint(code, tag))
}

/// `finished an interrupted undo: HEAD is #N (M paths touched)`.
pub fn recovered_line(r: &snap_tree::Recovered) -> String {
    format!(
        "finished an interrupted {}: HEAD is #{} ({} paths touched)",
        r.op.as_str(),
        r.head.record.seq,
        r.paths_touched
    )
}

/// Names each path a roll-forward saved before replacing it; never silent, even with `-q`:
/// the file the user sees is no longer what they left there.
pub fn print_saved_first(r: &snap_tree::Recovered) {
    for path in &r.saved_first {
        eprintln!(
            "warning: {} had changed since the interrupted {op}: saved as an auto-before-{op} \
             snapshot (`snap log --all`), then replaced as the {op} planned",
            path_shown(path),
            op = r.op.as_str()
        );
    }
}

/// Names each path a move left as it was; never silent, even with `-q`.
pub fn print_kept(verb: &str, kept: &[Vec<u8>]) {
    for path in kept {
        eprintln!(
            "kept {} as it is: {verb} does not touch ignored, oversize, unreadable or changed files",
            path_shown(path)
        );
    }
}

pub fn print_move(o: &MoveOutcome, quiet: bool) {
    let verb = o.op.as_str();
    if o.dry_run {
        println!("{verb} would move to {}", snapshot_line(&o.target));
        if o.was_dirty {
            println!("unsaved changes would be saved first");
        }
        for s in &o.passed {
            println!("  passes {}", snapshot_line(s));
        }
        print_changes(&o.changes);
        for path in &o.kept {
            println!("  would keep {} (ignored or excluded)", path_shown(path));
        }
        return;
    }
    if quiet {
        // Kept paths are never silent.
        print_kept(verb, &o.kept);
        return;
    }
    match (&o.auto_saved, o.op) {
        // An undo over unsaved edits takes back those edits first: say it in those words.
        (Some(auto), snap_tree::Op::Undo) => println!(
            "took back your unsaved changes: saved as #{} {} (snap redo returns them)",
            auto.record.seq,
            auto.id.short()
        ),
        (Some(auto), _) => println!(
            "saved unsaved changes as #{} {}",
            auto.record.seq,
            auto.id.short()
        ),
        (None, _) => {}
    }
    if o.changes.is_empty() && o.created.is_none() && o.op == snap_tree::Op::Restore {
        let but = if o.kept.is_empty() {
            ""
        } else {
            ", but for what it keeps:"
        };
        println!("already matches #{}{but}", o.target.record.seq);
        print_kept(verb, &o.kept);
        return;
    }
    println!("{verb}: now at {}", snapshot_line(&o.target));
    print_changes(&o.changes);
    print_kept(verb, &o.kept);
}

/// One line per file of at least `large_file_size` a save takes (or would take) for the
/// first time, on stderr.
pub fn print_large_added(files: &[snap_tree::LargeFile], verb: &str, quiet: bool) {
    if quiet {
        return;
    }
    for f in files {
        eprintln!(
            "large file {verb}: {} ({})",
            path_shown(&f.path),
            human_bytes(f.size)
        );
    }
}

/// One line per file no snapshot held that went away since the last save: even quiet, as
/// nothing can bring it back and the person should learn it now.
pub fn print_untracked_removed(files: &[snap_tree::UntrackedFile]) {
    for line in untracked_removed_lines(files) {
        eprintln!("{line}");
    }
}

/// The lines [`print_untracked_removed`] prints.
pub fn untracked_removed_lines(files: &[snap_tree::UntrackedFile]) -> Vec<String> {
    let line = |f: &snap_tree::UntrackedFile| {
        let why = match f.why {
            snap_tree::UntrackedWhy::TooLarge => "it was over max_file_size",
            snap_tree::UntrackedWhy::Excluded => "it is excluded by exclude_paths",
        };
        format!(
            "warning: {} ({}) is gone, and no snapshot holds it ({why}): snap cannot bring it back",
            path_shown(&f.path),
            human_bytes(f.size)
        )
    };
    files.iter().map(line).collect()
}

pub fn print_skipped(report: &snap_tree::ScanReport, quiet: bool) {
    if quiet {
        return;
    }
    for (path, size) in &report.too_large {
        eprintln!(
            "skipped {} ({size} bytes, over max_file_size)",
            path_shown(path)
        );
    }
    for file in &report.refused_rules {
        eprintln!(
            "refused {} (over max_ignore_file_bytes): everything in its directory is left out, \
             and never touched, until it shrinks",
            path_shown(file)
        );
    }
    for file in &report.unreadable {
        eprintln!(
            "skipped {} (cannot read it: {})",
            path_shown(&file.path),
            file.error
        );
    }
    if report.special > 0 {
        eprintln!(
            "skipped {} special file(s) (fifo, socket or device)",
            report.special
        );
    }
}

/// `1.2 MiB`-style sizes for people.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// The error and its causes on one line. Library errors already name their source in their
/// own message (`path: os error`), so a cause already said is not said twice.
pub(crate) fn one_line(e: &anyhow::Error) -> String {
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
