//! `snap diff`: unified line diffs, `--stat` and `--name-status`, paginated by files, each
//! file cut at `--max-lines`, binary files summarized by size, colour only on a terminal.

use std::io::IsTerminal;

use anyhow::Result;
use serde_json::Value;
use snap_tree::{Change, DiffEntry, FileDiff, Side, TreeDiff};

use super::workspace_paths;
use crate::args::DiffArgs;
use crate::json;
use crate::render::{change_letter, path_shown, path_str};
use crate::{Ctx, emit, open_reading};

/// The page of entries asked for, and how many pages there are.
fn page<'a>(entries: &'a [DiffEntry], args: &DiffArgs) -> (&'a [DiffEntry], u64) {
    let per = args.per_page().min(entries.len().max(1) as u64) as usize;
    let pages = entries.len().div_ceil(per).max(1) as u64;
    let start = ((args.page - 1) as usize)
        .saturating_mul(per)
        .min(entries.len());
    (&entries[start..(start + per).min(entries.len())], pages)
}

fn side_label(side: &Side) -> String {
    match side {
        Side::Snapshot(Some(s)) => format!("#{}", s.record.seq),
        Side::Snapshot(None) => "empty".into(),
        Side::WorkingTree => "working tree".into(),
    }
}

pub fn run(ctx: &Ctx, args: DiffArgs) -> Result<()> {
    let ws = open_reading(ctx)?;
    let paths = workspace_paths(&ws, &ctx.start, &args.paths)?;
    let diff = ws.diff(args.from.as_deref(), args.to.as_deref(), &paths)?;
    let (shown, pages) = page(&diff.entries, &args);
    if args.page > pages {
        anyhow::bail!(
            "page {} of {pages}: there is no such page ({} files in all)",
            args.page,
            diff.entries.len()
        );
    }
    let files: Vec<(&DiffEntry, FileDiff)> = shown
        .iter()
        .map(|e| ws.file_diff(&diff, e).map(|d| (e, d)))
        .collect::<Result<_, _>>()?;
    if ctx.json {
        println!("{}", diff_json(&diff, &files, &args, pages));
        return Ok(());
    }
    let colour = std::io::stdout().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    emit(ctx, Value::Null, || {
        print_human(&diff, &files, &args, pages, colour)
    });
    Ok(())
}

fn diff_json(
    diff: &TreeDiff,
    files: &[(&DiffEntry, FileDiff)],
    args: &DiffArgs,
    pages: u64,
) -> Value {
    json::value(&json::DiffDoc {
        from: side_label(&diff.from),
        to: side_label(&diff.to),
        total_files: diff.entries.len(),
        page: args.page,
        pages,
        files_per_page: args.per_page().min(diff.entries.len().max(1) as u64),
        files: files.iter().map(|(e, d)| file_doc(e, d, args)).collect(),
    })
}

fn file_doc(entry: &DiffEntry, diff: &FileDiff, args: &DiffArgs) -> json::DiffFileDoc {
    let detail = match diff {
        FileDiff::Text {
            lines,
            added,
            removed,
        } => {
            let full = !args.stat && !args.name_status;
            json::DiffDetail::Text {
                added: *added,
                removed: *removed,
                lines: full.then(|| {
                    lines
                        .iter()
                        .take(shown_lines(args.max_lines))
                        .cloned()
                        .collect()
                }),
                lines_cut: full.then(|| lines.len().saturating_sub(shown_lines(args.max_lines))),
            }
        }
        FileDiff::Binary { old_size, new_size } => json::DiffDetail::Binary {
            old_size: *old_size,
            new_size: *new_size,
        },
    };
    let mode = mode_change(entry);
    json::DiffFileDoc {
        path: path_str(&entry.path),
        status: entry.change.as_str(),
        binary: matches!(diff, FileDiff::Binary { .. }),
        old_mode: mode.map(|(old, _)| format!("{old:o}")),
        new_mode: mode.map(|(_, new)| format!("{new:o}")),
        detail,
    }
}

fn print_human(
    diff: &TreeDiff,
    files: &[(&DiffEntry, FileDiff)],
    args: &DiffArgs,
    pages: u64,
    colour: bool,
) {
    if diff.entries.is_empty() {
        println!(
            "no differences between {} and {}",
            side_label(&diff.from),
            side_label(&diff.to)
        );
        return;
    }
    for (entry, file) in files {
        if args.name_status {
            println!(
                "{}\t{}",
                change_letter(entry.change),
                path_shown(&entry.path)
            );
        } else if args.stat {
            print_stat_row(entry, file);
        } else {
            print_file(entry, file, shown_lines(args.max_lines), colour);
        }
    }
    if pages > 1 && args.page < pages {
        println!(
            "-- page {} of {} ({} files in all); next: {}",
            args.page,
            pages,
            diff.entries.len(),
            args.page_command(args.page + 1)
        );
    } else if pages > 1 {
        println!(
            "-- page {} of {} ({} files in all); the last page",
            args.page,
            pages,
            diff.entries.len()
        );
    }
}

fn print_stat_row(entry: &DiffEntry, file: &FileDiff) {
    let mode = mode_change(entry).map_or(String::new(), |(old, new)| {
        format!(" (mode {old:o} -> {new:o})")
    });
    match file {
        FileDiff::Text { added, removed, .. } => {
            println!("{} | +{added} -{removed}{mode}", path_shown(&entry.path))
        }
        FileDiff::Binary { old_size, new_size } => {
            println!(
                "{} | binary {} -> {} bytes",
                path_shown(&entry.path),
                old_size.unwrap_or(0),
                new_size.unwrap_or(0)
            )
        }
    }
}

/// How many lines of a file's diff `--max-lines N` shows: N, or every line for 0.
fn shown_lines(max_lines: usize) -> usize {
    if max_lines == 0 {
        usize::MAX
    } else {
        max_lines
    }
}

fn print_file(entry: &DiffEntry, file: &FileDiff, max_lines: usize, colour: bool) {
    let path = path_shown(&entry.path);
    let (a, b) = match entry.change {
        Change::Added => ("/dev/null".to_string(), format!("b/{path}")),
        Change::Deleted => (format!("a/{path}"), "/dev/null".to_string()),
        Change::Modified => (format!("a/{path}"), format!("b/{path}")),
    };
    print_mode_change(entry);
    if let Some(line) = symlink_line(entry, file) {
        println!("{line}");
        return;
    }
    match file {
        FileDiff::Binary { old_size, new_size } => {
            let size = |s: &Option<u64>| s.map_or("absent".to_string(), |n| format!("{n} bytes"));
            println!(
                "Binary file {path} differs ({} -> {})",
                size(old_size),
                size(new_size)
            );
        }
        FileDiff::Text { lines, .. } => {
            println!("--- {a}\n+++ {b}");
            for line in lines.iter().take(max_lines) {
                println!("{}", paint(line, colour));
            }
            if lines.len() > max_lines {
                println!(
                    "... {} more diff lines cut (raise --max-lines to see them)",
                    lines.len() - max_lines
                );
            }
        }
    }
}

/// `old mode 644` / `new mode 600` when only (or also) the permission bits changed.
fn print_mode_change(entry: &DiffEntry) {
    if let Some((old, new)) = mode_change(entry) {
        println!("{} mode {old:o} -> {new:o}", path_shown(&entry.path));
    }
}

/// The two modes of a file whose permission bits differ between the sides.
fn mode_change(entry: &DiffEntry) -> Option<(u16, u16)> {
    let (old, new) = (entry.old?.mode?, entry.new?.mode?);
    (old != new).then_some((old, new))
}

/// A symlink is shown as a link with its target, not as a one-line text file.
fn symlink_line(entry: &DiffEntry, file: &FileDiff) -> Option<String> {
    let link =
        |n: Option<snap_tree::Node>| n.is_some_and(|n| n.kind == snap_tree::EntryKind::Symlink);
    if !link(entry.old) && !link(entry.new) {
        return None;
    }
    let FileDiff::Text { lines, .. } = file else {
        return None;
    };
    let side = |mark: &str, skip: &str| {
        lines
            .iter()
            .find(|l| l.starts_with(mark) && !l.starts_with(skip))
            .map(|l| l[1..].to_string())
    };
    let (old, new) = (side("-", "---"), side("+", "+++"));
    let path = path_shown(&entry.path);
    let shown = |kind: Option<snap_tree::Node>, target: Option<String>| match (link(kind), target) {
        (true, Some(t)) => format!("symlink to {t}"),
        (_, _) if kind.is_none() => "absent".to_string(),
        _ => "a file".to_string(),
    };
    Some(format!(
        "{path}: {} -> {}",
        shown(entry.old, old),
        shown(entry.new, new)
    ))
}

fn paint(line: &str, colour: bool) -> String {
    let code = match line.as_bytes().first() {
        _ if !colour => return line.to_string(),
        Some(b'+') => "32",
        Some(b'-') => "31",
        Some(b'@') => "36",
        _ => return line.to_string(),
    };
    format!("\x1b[{code}m{line}\x1b[0m")
}
