//! `snap diff`: unified line diffs, `--stat` and `--name-status`, paginated by files, each
//! file cut at `--max-lines`, binary files summarized by size, colour only on a terminal.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Result;
use serde_json::Value;
use snap_tree::flat::{Listed, Rename};
use snap_tree::{Change, DiffEntry, FileDiff, Side, TreeDiff};

use super::workspace_paths;
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::open_reading;
use crate::render::{change_letter, path_shown, path_str};

/// One file as the diff shows it: a changed path, or a rename (an addition whose `old`
/// side is the deletion it pairs with, `from` naming that path).
struct Shown {
    entry: DiffEntry,
    from: Option<Vec<u8>>,
    /// How alike a rename's two contents are, in percent (100 for other files).
    similarity: u8,
}

/// The diff's entries, each rename as one file where its new path stands.
fn shown_files(diff: &TreeDiff, renames: &[Rename]) -> Vec<Shown> {
    let by_path: HashMap<&[u8], &DiffEntry> = (diff.entries.iter())
        .map(|e| (e.path.as_slice(), e))
        .collect();
    let paths = diff.entries.iter().map(|e| (e.path.as_slice(), e.change));
    (snap_tree::flat::listed(paths, renames).into_iter())
        .filter_map(|l| match l {
            Listed::Path(path, _) => by_path.get(path).map(|e| Shown {
                entry: (*e).clone(),
                from: None,
                similarity: 100,
            }),
            Listed::Renamed(r) => {
                let (old, new) = (
                    by_path.get(r.from.as_slice())?,
                    by_path.get(r.to.as_slice())?,
                );
                Some(Shown {
                    entry: DiffEntry {
                        path: r.to.clone(),
                        change: Change::Modified,
                        old: old.old,
                        new: new.new,
                    },
                    from: Some(r.from.clone()),
                    similarity: r.similarity,
                })
            }
        })
        .collect()
}

/// The page of files asked for, and how many pages there are.
fn page<'a>(entries: &'a [Shown], args: &DiffArgs) -> (&'a [Shown], u64) {
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
    let all = shown_files(&diff, &ws.renames_in(&diff)?);
    let (shown, pages) = page(&all, &args);
    if args.page > pages {
        anyhow::bail!(
            "page {} of {pages}: there is no such page ({} files in all)",
            args.page,
            all.len()
        );
    }
    let files: Vec<(&Shown, FileDiff)> = shown
        .iter()
        .map(|s| ws.file_diff(&diff, &s.entry).map(|d| (s, d)))
        .collect::<Result<_, _>>()?;
    if ctx.json {
        println!("{}", diff_json(&diff, all.len(), &files, &args, pages));
        return Ok(());
    }
    let colour = crate::pager::colour();
    emit(ctx, Value::Null, || {
        print_human(&diff, all.len(), &files, &args, pages, colour)
    });
    Ok(())
}

fn diff_json(
    diff: &TreeDiff,
    total: usize,
    files: &[(&Shown, FileDiff)],
    args: &DiffArgs,
    pages: u64,
) -> Value {
    json::value(&json::DiffDoc {
        from: side_label(&diff.from),
        to: side_label(&diff.to),
        total_files: total,
        page: args.page,
        pages,
        files_per_page: args.per_page().min(total.max(1) as u64),
        files: files.iter().map(|(s, d)| file_doc(s, d, args)).collect(),
    })
}

fn file_doc(shown: &Shown, diff: &FileDiff, args: &DiffArgs) -> json::DiffFileDoc {
    let entry = &shown.entry;
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
        status: match shown.from {
            Some(_) => json::RENAMED,
            None => entry.change.as_str(),
        },
        from: shown.from.as_deref().map(path_str),
        binary: matches!(diff, FileDiff::Binary { .. }),
        old_mode: mode.map(|(old, _)| format!("{old:o}")),
        new_mode: mode.map(|(_, new)| format!("{new:o}")),
        detail,
    }
}

fn print_human(
    diff: &TreeDiff,
    total: usize,
    files: &[(&Shown, FileDiff)],
    args: &DiffArgs,
    pages: u64,
    colour: bool,
) {
    if total == 0 {
        println!(
            "no differences between {} and {}",
            side_label(&diff.from),
            side_label(&diff.to)
        );
        return;
    }
    for (shown, file) in files {
        if args.name_status {
            println!("{}", name_status(shown));
        } else if args.stat {
            print_stat_row(shown, file);
        } else {
            print_file(shown, file, shown_lines(args.max_lines), colour);
        }
    }
    if args.stat {
        println!("{}", stat_summary(files));
    }
    if pages > 1 && args.page < pages {
        println!(
            "-- page {} of {} ({} files in all); next: {}",
            args.page,
            pages,
            total,
            args.page_command(args.page + 1)
        );
    } else if pages > 1 {
        println!(
            "-- page {} of {} ({} files in all); the last page",
            args.page, pages, total
        );
    }
}

/// git's `--name-status` line: `A\tpath`, or `R100\told\tnew` for a rename (the number
/// how alike the contents are, in percent).
fn name_status(shown: &Shown) -> String {
    let path = path_shown(&shown.entry.path);
    match &shown.from {
        Some(from) => format!("R{:03}\t{}\t{path}", shown.similarity, path_shown(from)),
        None => format!("{}\t{path}", change_letter(shown.entry.change)),
    }
}

/// The path a `--stat` row names: `old => new` for a rename.
fn stat_path(shown: &Shown) -> String {
    let path = path_shown(&shown.entry.path);
    match &shown.from {
        Some(from) => format!("{} => {path}", path_shown(from)),
        None => path,
    }
}

fn print_stat_row(shown: &Shown, file: &FileDiff) {
    let entry = &shown.entry;
    let mode = mode_change(entry).map_or(String::new(), |(old, new)| {
        format!(" (mode {old:o} -> {new:o})")
    });
    match file {
        FileDiff::Text { added, removed, .. } => {
            println!("{} | +{added} -{removed}{mode}", stat_path(shown))
        }
        FileDiff::Binary { old_size, new_size } => {
            println!(
                "{} | binary {} -> {} bytes",
                stat_path(shown),
                old_size.unwrap_or(0),
                new_size.unwrap_or(0)
            )
        }
    }
}

/// git's line under `--stat`: ` 2 files changed, 3 insertions(+), 1 deletion(-)`, a count
/// of none left out.
fn stat_summary(files: &[(&Shown, FileDiff)]) -> String {
    let (added, removed) = files.iter().fold((0, 0), |(a, r), (_, file)| match file {
        FileDiff::Text { added, removed, .. } => (a + added, r + removed),
        FileDiff::Binary { .. } => (a, r),
    });
    let plural = |n: u64, one: &str, many: &str| match n {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    };
    let mut line = format!(
        " {}",
        plural(files.len() as u64, "file changed", "files changed")
    );
    if added > 0 {
        line.push_str(&format!(
            ", {}",
            plural(added, "insertion(+)", "insertions(+)")
        ));
    }
    if removed > 0 {
        line.push_str(&format!(
            ", {}",
            plural(removed, "deletion(-)", "deletions(-)")
        ));
    }
    line
}

/// How many lines of a file's diff `--max-lines N` shows: N, or every line for 0.
fn shown_lines(max_lines: usize) -> usize {
    if max_lines == 0 {
        usize::MAX
    } else {
        max_lines
    }
}

fn print_file(shown: &Shown, file: &FileDiff, max_lines: usize, colour: bool) {
    let entry = &shown.entry;
    let path = path_shown(&entry.path);
    let old_path = shown.from.as_deref().map_or(path.clone(), path_shown);
    let (a, b) = match entry.change {
        Change::Added => ("/dev/null".to_string(), format!("b/{path}")),
        Change::Deleted => (format!("a/{path}"), "/dev/null".to_string()),
        Change::Modified => (format!("a/{old_path}"), format!("b/{path}")),
    };
    if shown.from.is_some() {
        println!("similarity index {}%", shown.similarity);
        println!("rename from {old_path}\nrename to {path}");
    }
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
        // An exact rename: the content is the same, the lines above say it all.
        FileDiff::Text { lines, .. } if lines.is_empty() && shown.from.is_some() => {}
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

#[derive(Debug, clap::Args)]
pub struct DiffArgs {
    /// From this snapshot (default @, HEAD).
    pub from: Option<String>,
    /// To this snapshot (default: the working tree).
    pub to: Option<String>,
    /// Only these paths.
    #[arg(last = true)]
    pub paths: Vec<PathBuf>,
    /// One line per file with lines added and removed, and a total line under them.
    #[arg(long, conflicts_with = "name_status")]
    pub stat: bool,
    /// One line per file with its status letter (A, M, D; R and how alike, OLD NEW, for a file moved).
    #[arg(long)]
    pub name_status: bool,
    /// Which page of files to show.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub page: u64,
    /// Files per page (default 25; with --stat or --name-status, every file).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub files_per_page: Option<u64>,
    /// Diff lines shown per file (0: every line); the rest is cut with a note.
    #[arg(long, default_value_t = 500)]
    pub max_lines: usize,
}

impl DiffArgs {
    /// Files per page: as given, else 25 for full diffs and every file for the one-line forms.
    pub fn per_page(&self) -> u64 {
        let one_line = self.stat || self.name_status;
        self.files_per_page
            .unwrap_or(if one_line { u64::MAX } else { 25 })
    }

    /// The command line that shows `page`, with every flag given kept.
    pub fn page_command(&self, page: u64) -> String {
        let mut cmd = String::from("snap diff");
        for side in [&self.from, &self.to].into_iter().flatten() {
            cmd.push_str(&format!(" '{side}'"));
        }
        if self.stat {
            cmd.push_str(" --stat");
        }
        if self.name_status {
            cmd.push_str(" --name-status");
        }
        if let Some(n) = self.files_per_page {
            cmd.push_str(&format!(" --files-per-page {n}"));
        }
        if self.max_lines != 500 {
            cmd.push_str(&format!(" --max-lines {}", self.max_lines));
        }
        cmd.push_str(&format!(" --page {page}"));
        if !self.paths.is_empty() {
            cmd.push_str(" --");
            for p in &self.paths {
                cmd.push_str(&format!(" '{}'", p.display()));
            }
        }
        cmd
    }
}
