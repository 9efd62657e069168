//! `snap save`: snapshot the working tree if it changed (creating the store the first time).

use crate::ctx::{Ctx, emit, emit_done, json_only};
use crate::open::open;
use crate::render::{print_large_added, print_skipped, print_untracked_removed};
use crate::{json, progress};
use anyhow::Result;
use snap_tree::{ReadOnlyWorkspace, SaveOptions, Workspace};

pub(crate) fn cmd_save(ctx: &Ctx, args: SaveArgs) -> Result<()> {
    if std::env::var_os("SNAP_DISABLE").is_some_and(|v| v == "1") {
        let doc = json::DisabledDoc {
            created: false,
            disabled: true,
        };
        emit(ctx, json::value(&doc), || {
            println!("snap is disabled (SNAP_DISABLE=1); nothing saved")
        });
        return Ok(());
    }
    let mut initialized = false;
    let ws = match open(ctx) {
        Err(e) if crate::open::is_missing_store(&e) => {
            let mut ws = Workspace::init(&ctx.start, ctx.store.as_deref(), args.force)?;
            if let Some(observer) = progress::observer(ctx) {
                ws.set_observer(observer);
            }
            initialized = true;
            if !ctx.quiet {
                say_created(&ws);
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
    let out = if args.empty_tree {
        if let Some(head) = ws.head()? {
            anyhow::bail!(
                "--empty-tree starts a new store's history, and this one has snapshots (HEAD is #{})",
                head.record.seq
            );
        }
        ws.save_empty_tree(&opts)?
    } else {
        ws.save(&opts)?
    };
    crate::watch::autostart(&ws, ctx.store.as_deref());
    if let Some(e) = &out.upkeep_error {
        eprintln!("warning: saved, but merging small packs failed (the next save retries): {e}");
    }
    let head = ws.head()?;
    let value = json_only(ctx, || {
        json::value(&json::SaveDoc {
            created: out.snapshot.is_some(),
            initialized,
            id: out.snapshot.as_ref().map(|s| s.id.to_hex()),
            seq: out.snapshot.as_ref().map(|s| s.record.seq),
            head: head.as_ref().map(json::SnapshotDoc::from),
            changes: json::changes(&out.changes),
            skipped: json::SkippedDoc::from(&out.report),
            large_added: json::LargeDoc::list(&out.large_added),
            untracked_removed: json::UntrackedRemovedDoc::list(&out.untracked_removed),
            snapshot: out.snapshot.as_ref().map(json::SnapshotDoc::from),
        })
    });
    emit_done(ctx, value, || {
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
        print_large_added(&out.large_added, "added", ctx.quiet);
        print_untracked_removed(&out.untracked_removed);
    });
    Ok(())
}

/// Tells, on stderr, that this save created the store, and where; and, when a directory
/// above the workspace holds a `.git`, that the project's root may be there instead.
fn say_created(ws: &ReadOnlyWorkspace) {
    eprintln!(
        "snap: created the store {} for the workspace {}",
        ws.store_dir().display(),
        ws.root().display()
    );
    let above = ws
        .root()
        .ancestors()
        .skip(1)
        .find(|dir| dir.join(".git").exists());
    if let Some(project) = above {
        eprintln!(
            "snap: note: {} holds a .git, so the project's root may be there; to snapshot it \
             whole, remove {} and run `snap init` in {}",
            project.display(),
            ws.store_dir().display(),
            project.display()
        );
    }
}

#[derive(Debug, clap::Args)]
pub struct SaveArgs {
    /// Message.
    #[arg(short, long, default_value = "")]
    pub message: String,
    /// Agent step (turn) number.
    #[arg(long)]
    pub step: Option<u64>,
    /// Agent session name.
    #[arg(long)]
    pub session: Option<String>,
    /// Free metadata, repeatable (`--meta tool=edit --meta turn=12`).
    #[arg(long, value_name = "K=V", value_parser = parse_meta)]
    pub meta: Vec<(String, String)>,
    /// Snapshot even if nothing changed.
    #[arg(long)]
    pub allow_empty: bool,
    /// Start a new store's history from a snapshot of an empty tree, reading and touching no
    /// file (as a first `git commit --allow-empty`): the files are then unsaved changes, and
    /// going back to it saves them first. Refused once the store has a snapshot.
    #[arg(long, conflicts_with = "allow_empty")]
    pub empty_tree: bool,
    /// Allow creating a store in `/` or your home directory.
    #[arg(long)]
    pub force: bool,
}

fn parse_meta(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// Runs `snap save`.
pub(crate) fn run(ctx: &Ctx, args: SaveArgs) -> Result<()> {
    cmd_save(ctx, args)
}
