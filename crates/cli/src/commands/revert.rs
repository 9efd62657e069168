//! `snap revert [REF] [--turn] [-- PATHS]`: take back what one snapshot (or the turn holding
//! it) changed, keeping what came after; paths changed since are conflicts, left alone.

use snap_tree::{RevertOf, RevertOutcome};

use super::workspace_paths;
use crate::ctx::{Ctx, emit, json_only};
use crate::json;
use crate::open::open;
use crate::render::{path_shown, print_changes, print_kept, snapshot_line};
use anyhow::Result;
use snap_tree::Run;
use std::path::PathBuf;

/// What `snap revert` was asked.
pub(crate) struct RevertAsk<'a> {
    pub(crate) reference: Option<&'a str>,
    pub(crate) turn: bool,
    pub(crate) paths: &'a [PathBuf],
    pub(crate) dry_run: bool,
}

pub(crate) fn cmd_revert(ctx: &Ctx, ask: RevertAsk<'_>) -> Result<()> {
    let ws = open(ctx)?;
    let rel = workspace_paths(&ws, &ctx.start, ask.paths)?;
    let of = match (ask.turn, ask.reference) {
        (true, reference) => RevertOf::Turn(reference.unwrap_or("@")),
        (false, Some(reference)) => RevertOf::Snapshot(reference),
        (false, None) => {
            anyhow::bail!("snap revert needs a snapshot (`snap revert '#5'`) or --turn")
        }
    };
    let out = ws.revert(of, &rel, Run::dry_run_if(ask.dry_run))?;
    emit(
        ctx,
        json_only(ctx, || json::value(&json::RevertDoc::from(&out))),
        || print_revert(&out, &named(&out, ask.turn), ctx.quiet),
    );
    Ok(())
}

/// How the output names what is taken back: one snapshot, or a turn by where it starts and
/// ends (its snapshots may not be numbered one after another).
fn named(o: &RevertOutcome, turn: bool) -> String {
    match turn {
        true => format!(
            "the turn after #{} through #{}",
            o.before.record.seq, o.reverted.record.seq
        ),
        false => format!("#{}", o.reverted.record.seq),
    }
}

/// What was taken back, what is now HEAD, and each conflict (never silent, even with `-q`).
fn print_revert(o: &RevertOutcome, what: &str, quiet: bool) {
    let moved = &o.moved;
    if moved.dry_run && moved.changes.is_empty() {
        println!("revert would take back nothing: every path {what} changed has changed since");
    } else if moved.dry_run {
        println!(
            "revert would take back {what} (back to #{} there)",
            o.before.record.seq
        );
        if moved.was_dirty {
            println!("unsaved changes would be saved first");
        }
        print_changes(&moved.changes);
    } else if let (Some(created), false) = (&moved.created, quiet) {
        if let Some(auto) = &moved.auto_saved {
            println!(
                "saved unsaved changes as #{} {}",
                auto.record.seq,
                auto.id.short()
            );
        }
        println!(
            "revert: took back {what}, now at {}",
            snapshot_line(created)
        );
        print_changes(&moved.changes);
        print_kept("revert", &moved.kept);
    } else if moved.created.is_some() {
        print_kept("revert", &moved.kept);
    } else if !quiet {
        println!("nothing taken back: every path {what} changed has changed since");
        print_kept("revert", &moved.kept);
    }
    let verb = if moved.dry_run { "would be" } else { "is" };
    for path in &o.conflicts {
        eprintln!(
            "conflict: {} changed since {what}; it {verb} left as it is",
            path_shown(path)
        );
    }
}

/// `snap revert`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct RevertArgs {
    /// Snapshot: @, @~N, last, #SEQ, step:N or an id prefix (with --turn, default @).
    #[arg(required_unless_present = "turn")]
    pub(crate) reference: Option<String>,
    /// Take back the whole agent turn holding the snapshot.
    #[arg(long)]
    pub(crate) turn: bool,
    /// Only these paths.
    #[arg(last = true)]
    pub(crate) paths: Vec<PathBuf>,
    /// Show what would be taken back and what conflicts, change nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Runs `snap revert`.
pub(crate) fn run(ctx: &Ctx, args: RevertArgs) -> Result<()> {
    let ask = RevertAsk {
        reference: args.reference.as_deref(),
        turn: args.turn,
        paths: &args.paths,
        dry_run: args.dry_run,
    };
    cmd_revert(ctx, ask)
}
