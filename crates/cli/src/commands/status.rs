//! `snap status`: the working tree against HEAD, what waits to be finished, and whether
//! agent hook saves are failing.

use crate::ctx::{Ctx, emit, json_only};
use crate::json;
use crate::open::open_reading;
use crate::render::{print_dir_changes, print_large_added, print_skipped, snapshot_line};
use anyhow::Result;
use snap_tree::{Change, PathChange};

pub(crate) fn cmd_status(ctx: &Ctx, category: Option<Category>) -> Result<()> {
    let ws = open_reading(ctx)?;
    let status = ws.status()?;
    let wanted = |c: &Change| match category {
        None => true,
        Some(Category::Added) => *c == Change::Added,
        Some(Category::Modified) => *c == Change::Modified,
        Some(Category::Deleted) => *c == Change::Deleted,
    };
    let of_category = |all: &[PathChange]| -> Vec<PathChange> {
        all.iter().filter(|(_, c)| wanted(c)).cloned().collect()
    };
    let (changes, dirs) = (of_category(&status.changes), of_category(&status.dirs));
    // A rename is neither an addition nor a deletion: listed as one only with no category.
    let renames = match category {
        None => status.renames.as_slice(),
        Some(_) => &[],
    };
    // Before the first snapshot nothing is clean: a save would record the tree.
    let clean = status.head.is_some() && status.changes.is_empty() && status.dirs.is_empty();
    let pending: Vec<json::PendingDoc> = ws.pending()?.iter().map(Into::into).collect();
    let workspace_id = ws.workspace_id()?;
    let hook_failure = crate::hook::log::last_failure(ws.store_dir());
    let value = json_only(ctx, || {
        json::value(&json::StatusDoc {
            head: status.head.as_ref().map(json::SnapshotDoc::from),
            clean,
            changes: json::changes_renamed(&changes, renames),
            dirs: json::changes(&dirs),
            redo_depth: status.redo_depth,
            pending: pending.first().map(|p| json::PendingDoc {
                op: p.op,
                target: p.target.clone(),
            }),
            root: ws.root().display().to_string(),
            workspace_id,
            hook_failure: hook_failure
                .as_ref()
                .map(|(time, error)| json::HookFailureDoc {
                    time: time.clone(),
                    error: error.clone(),
                }),
            skipped: json::SkippedDoc::from(&status.report),
            large_added: json::LargeDoc::list(&status.large_added),
        })
    });
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
                p.op
            );
        }
        if let Some((time, error)) = &hook_failure {
            println!("hook saves are failing: the last at {time}: {error} (see .snap/hook.log)");
        }
        crate::render::print_changes_renamed(&changes, renames);
        print_dir_changes(&dirs);
        print_skipped(&status.report, ctx.quiet);
        print_large_added(&status.large_added, "to add", ctx.quiet);
    });
    Ok(())
}

/// `snap status`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct StatusArgs {
    /// Only changes of this kind.
    #[arg(long, value_enum)]
    pub(crate) category: Option<Category>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Category {
    Added,
    Modified,
    Deleted,
}

/// Runs `snap status`.
pub(crate) fn run(ctx: &Ctx, args: StatusArgs) -> Result<()> {
    cmd_status(ctx, args.category)
}
