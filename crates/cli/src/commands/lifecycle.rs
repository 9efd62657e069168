//! The store-lifecycle commands: prune, gc, verify, repair, delete --all, and `log --stats`.

use anyhow::{Result, bail};
use serde_json::Value;
use snap_tree::ReadOnlyWorkspace;
use snap_tree::secrets::SecretHit;
use snap_tree::{GcReport, Retention, StoreStats};
use snap_tree::{Workspace, parse_duration};

use crate::ctx::{Ctx, emit, emit_done};
use crate::json;
use crate::open::open;
use crate::render::{human_bytes, path_shown, path_str, snapshot_line};

/// What `log --stats` shows: the store, what large files cost it, and secret-looking paths.
pub struct StatsView<'a> {
    pub store: &'a StoreStats,
    pub large: snap_tree::LargeCost,
    /// `large_file_size`.
    pub large_threshold: u64,
    pub secrets: &'a [SecretHit],
}

pub fn stats_json(v: &StatsView<'_>) -> Value {
    let s = v.store;
    json::value(&json::StoreStatsDoc {
        snapshots: s.snapshots,
        packs: s.packs,
        pack_bytes: s.pack_bytes,
        catalog_bytes: s.catalog_bytes,
        store_bytes: s.pack_bytes + s.catalog_bytes,
        reclaimable_bytes: s.reclaimable_bytes,
        secret_paths: v.secrets.iter().map(|h| path_str(&h.path)).collect(),
        large_files: json::LargeCostDoc {
            threshold: v.large_threshold,
            files: v.large.files,
            bytes: v.large.bytes,
            stored_bytes: v.large.stored_bytes,
        },
    })
}

pub fn print_stats(v: &StatsView<'_>) {
    let s = v.store;
    println!(
        "store: {} in {} pack(s) + {} catalog, {} snapshot(s); gc would reclaim {}",
        human_bytes(s.pack_bytes),
        s.packs,
        human_bytes(s.catalog_bytes),
        s.snapshots,
        human_bytes(s.reclaimable_bytes)
    );
    if v.large.files > 0 {
        println!(
            "large files (at least {}): {} version(s), {} in all, {} in packs",
            human_bytes(v.large_threshold),
            v.large.files,
            human_bytes(v.large.bytes),
            human_bytes(v.large.stored_bytes)
        );
    }
    print_secrets(v.secrets);
}

/// One line naming the secret-looking paths history holds, when it holds any.
pub fn print_secrets(secrets: &[SecretHit]) {
    if secrets.is_empty() {
        return;
    }
    let names: Vec<String> = secrets
        .iter()
        .take(5)
        .map(|h| path_shown(&h.path))
        .collect();
    let more = match secrets.len() {
        n if n > 5 => format!(" and {} more", n - 5),
        _ => String::new(),
    };
    println!(
        "history holds secret-looking paths: {}{more} (`snap expunge --secrets` lists them)",
        names.join(", ")
    );
}

fn gc_doc(g: &GcReport) -> json::GcDoc {
    json::GcDoc {
        bytes_before: g.bytes_before,
        bytes_after: g.bytes_after,
        reclaimed_bytes: g.bytes_before.saturating_sub(g.bytes_after),
        packs_deleted: g.packs_deleted,
        packs_repacked: g.packs_repacked,
        objects_removed: g.objects_removed,
        orphan_packs_deleted: g.orphan_packs_deleted,
        orphan_packs_kept: (g.orphan_packs_kept.iter())
            .map(|p| p.display().to_string())
            .collect(),
        tmp_files_removed: g.tmp_files_removed,
        held_back: g.held_back,
    }
}

fn print_gc(g: &GcReport) {
    println!(
        "gc: {} -> {} ({} pack(s) deleted, {} repacked, {} object(s) removed)",
        human_bytes(g.bytes_before),
        human_bytes(g.bytes_after),
        g.packs_deleted + g.orphan_packs_deleted,
        g.packs_repacked,
        g.objects_removed
    );
    if g.held_back {
        eprintln!(
            "warning: gc dropped nothing: packs the catalog does not name hold history it \
             lacks, which may need what it calls dead (`snap repair` takes that history back; \
             gc reclaims after it)"
        );
    }
    for path in &g.orphan_packs_kept {
        eprintln!(
            "warning: kept {}: the catalog does not name it, and it may hold history the \
             catalog lacks (`snap repair` rebuilds the catalog from the packs)",
            path.display()
        );
    }
}

/// The policy from the flags, or from the config when no flag is given.
fn policy(
    ws: &ReadOnlyWorkspace,
    keep_last: Option<u64>,
    keep_within: Option<String>,
) -> Result<Retention> {
    if keep_last.is_none() && keep_within.is_none() {
        return ws.config().retention.policy().map_err(anyhow::Error::msg);
    }
    let keep_within_ns = match keep_within {
        Some(d) => parse_duration(&d).map_err(anyhow::Error::msg)?,
        None => None,
    };
    Ok(Retention {
        keep_last: keep_last.unwrap_or(0),
        keep_within_ns,
    })
}

pub fn prune(
    ctx: &Ctx,
    keep_last: Option<u64>,
    keep_within: Option<String>,
    dry_run: bool,
) -> Result<()> {
    let ws = open(ctx)?;
    let run = snap_tree::Run::dry_run_if(dry_run);
    let report = ws.prune(&policy(&ws, keep_last, keep_within)?, run)?;
    let removed = report.removed.iter().map(|(id, r)| {
        json::SnapshotDoc::from(&snap_tree::Snapshot {
            id: *id,
            record: r.clone(),
        })
    });
    let doc = json::PruneDoc {
        dry_run,
        removed: removed.collect(),
        removed_count: report.removed.len(),
        kept: report.kept,
    };
    emit(ctx, json::value(&doc), || {
        if ctx.quiet && !dry_run {
            return;
        }
        let verb = if dry_run { "would drop" } else { "dropped" };
        println!(
            "{verb} {} snapshot(s), kept {}",
            report.removed.len(),
            report.kept
        );
        if !ctx.quiet {
            for (id, r) in &report.removed {
                println!(
                    "  {}",
                    snapshot_line(&snap_tree::Snapshot {
                        id: *id,
                        record: r.clone()
                    })
                );
            }
        }
        if !dry_run && !report.removed.is_empty() {
            println!("run `snap gc` to reclaim their space");
        }
    });
    Ok(())
}

pub fn gc(ctx: &Ctx) -> Result<()> {
    let ws = open(ctx)?;
    let report = ws.gc()?;
    emit_done(ctx, json::value(&gc_doc(&report)), || print_gc(&report));
    Ok(())
}

pub fn verify(ctx: &Ctx, read_data: bool) -> Result<()> {
    let ws = match crate::open::open_reading(ctx) {
        Ok(ws) => ws,
        Err(e) => return verify_unopened(ctx, read_data, e),
    };
    let report = ws.verify(read_data)?;
    let problems = report.problems.iter().map(|p| json::ProblemDoc {
        what: p.what.clone(),
        pack: p.pack.map(|x| x.to_hex()),
        object: p.object.map(|x| x.to_hex()),
        snapshots: p.snapshots.iter().copied().collect(),
        paths: p.paths.iter().map(|x| path_str(x)).collect(),
    });
    let ok = report.problems.is_empty();
    let outside = ws.history_outside_catalog()?;
    let doc = json::VerifyDoc {
        ok,
        read_data,
        packs: report.packs,
        objects: report.objects,
        snapshots: report.snapshots,
        bytes_read: report.bytes_read,
        problems: problems.collect(),
        history_outside_catalog: outside.iter().map(|p| p.display().to_string()).collect(),
        recreated: (ws.mended().iter())
            .map(|p| p.display().to_string())
            .collect(),
    };
    emit(ctx, json::value(&doc), || {
        for dir in &doc.recreated {
            println!("recreated missing {dir} (it holds nothing durable)");
        }
        println!(
            "checked {} pack(s), {} object(s), {} snapshot(s), read {}",
            report.packs,
            report.objects,
            report.snapshots,
            human_bytes(report.bytes_read)
        );
        for p in &report.problems {
            println!("damaged: {}", p.what);
            if !p.snapshots.is_empty() {
                let seqs: Vec<String> = p.snapshots.iter().map(|s| format!("#{s}")).collect();
                println!("  snapshots: {}", seqs.join(" "));
            }
            for path in &p.paths {
                println!(
                    "  path: {}",
                    if path.is_empty() {
                        "/".into()
                    } else {
                        crate::render::path_shown(path)
                    }
                );
            }
        }
        if ok {
            println!("ok");
        }
        for pack in &outside {
            eprintln!(
                "warning: {} is not in the catalog and holds snapshots it lacks (a catalog put \
                 back from an older copy, or a save whose commit failed): `snap repair` takes \
                 them back",
                pack.display()
            );
        }
    });
    if !ok {
        return Err(crate::exit::Reported(format!(
            "the store is damaged: {} problem(s) found; `snap repair` rebuilds the catalog from the packs",
            report.problems.len()
        ))
        .into());
    }
    Ok(())
}

/// HEAD's snapshot as the rebuilt catalog names it, for the JSON document.
fn repaired_head(ctx: &Ctx) -> Result<Option<snap_tree::Snapshot>> {
    let ws = Workspace::discover_reading(&ctx.start, ctx.store.as_deref())?;
    let head = ws.head();
    head.map_err(|e| anyhow::anyhow!("the catalog is rebuilt, but HEAD cannot be read: {e}"))
}

pub fn repair(ctx: &Ctx) -> Result<()> {
    let report = snap_tree::repair(&ctx.start, ctx.store.as_deref())?;
    let head = match report.head {
        Some(_) => repaired_head(ctx)?,
        None => None,
    };
    let damaged: Vec<String> = report
        .damaged_packs
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    emit(
        ctx,
        json::value(&json::RepairDoc {
            packs: report.packs,
            damaged_packs: damaged.clone(),
            headers_rewritten: (report.headers_rewritten.iter())
                .map(|p| p.display().to_string())
                .collect(),
            objects: report.objects,
            damaged_objects: report.damaged_objects,
            snapshots: report.snapshots,
            head: head.as_ref().map(json::SnapshotDoc::from),
            history_kept: report.history_kept,
            redo: report.redo,
            old_catalog: report.old_catalog.as_ref().map(|p| p.display().to_string()),
            snapshots_left_dropped: report.snapshots_left_dropped,
        }),
        || {
            println!(
                "rebuilt the catalog from {} pack(s): {} object(s), {} snapshot(s)",
                report.packs, report.objects, report.snapshots
            );
            match report.head {
                Some((id, seq)) if report.history_kept => println!(
                    "HEAD is #{seq} {}, as the old catalog had it; the redo stack keeps {} snapshot(s)",
                    id.short(),
                    report.redo
                ),
                Some((id, seq)) => println!(
                    "HEAD is #{seq} {} (the newest snapshot found); the redo stack is empty",
                    id.short()
                ),
                None => {}
            }
            if report.snapshots_left_dropped > 0 {
                println!(
                    "left out {} snapshot record(s) the old catalog had pruned",
                    report.snapshots_left_dropped
                );
            }
            if report.damaged_objects > 0 || !damaged.is_empty() {
                println!(
                    "skipped {} damaged object(s) and {} unreadable pack(s)",
                    report.damaged_objects,
                    damaged.len()
                );
            }
            for p in &report.headers_rewritten {
                println!(
                    "rewrote the rotted header of {} (the rest of the pack hashes to its name)",
                    p.display()
                );
            }
            if let Some(p) = &report.old_catalog {
                println!("the old catalog was kept as {}", p.display());
            }
        },
    );
    Ok(())
}

pub fn delete_all(ctx: &Ctx, yes: bool) -> Result<()> {
    if !yes {
        bail!("`snap delete --all` removes every snapshot; add --yes to confirm");
    }
    let ws = open(ctx)?;
    let (removed, gc) = ws.delete_all()?;
    let doc = json::DeleteDoc {
        gc: gc_doc(&gc),
        removed_count: removed,
    };
    emit_done(ctx, json::value(&doc), || {
        println!("deleted {removed} snapshot(s)");
        print_gc(&gc);
    });
    Ok(())
}

/// `verify` of a store whose catalog cannot be opened: that is damage, reported as verify
/// reports any (one problem, exit 1), not a bare error. Any other failure stays an error.
fn verify_unopened(ctx: &Ctx, read_data: bool, e: anyhow::Error) -> Result<()> {
    let Some(what) = crate::exit::catalog_damage(&e) else {
        return Err(e);
    };
    let doc = json::VerifyDoc {
        ok: false,
        read_data,
        packs: 0,
        objects: 0,
        snapshots: 0,
        bytes_read: 0,
        problems: vec![json::ProblemDoc {
            what: what.clone(),
            pack: None,
            object: None,
            snapshots: Vec::new(),
            paths: Vec::new(),
        }],
        history_outside_catalog: Vec::new(),
        recreated: Vec::new(),
    };
    emit(ctx, json::value(&doc), || println!("damaged: {what}"));
    Err(crate::exit::Reported(
        "the store is damaged: its catalog cannot be read; `snap repair` rebuilds it from the packs"
            .to_string(),
    )
    .into())
}

/// `snap prune`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct PruneArgs {
    /// Keep the newest N snapshots.
    #[arg(long)]
    pub(crate) keep_last: Option<u64>,
    /// Keep snapshots younger than this (30m, 12h, 7d, 2w).
    #[arg(long, value_name = "DUR")]
    pub(crate) keep_within: Option<String>,
    /// Show what would be dropped, drop nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// `snap gc`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct GcArgs {
    /// Collect a remote instead (the default one, or the one named).
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "REMOTE", num_args = 0..=1, default_missing_value = "")]
    pub(crate) remote: Option<String>,
    /// With --remote: how long an object stays marked before it is deleted (a push
    /// running longer than this while a gc runs may lose what it relies on).
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "DUR", default_value = "1h", requires = "remote")]
    pub(crate) grace: String,
}

/// `snap verify`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct VerifyArgs {
    /// Also decompress and rehash every object.
    #[arg(long)]
    pub(crate) read_data: bool,
    /// Check a remote instead (the default one, or the one named): refs, records, packs.
    #[cfg(feature = "remote")]
    #[arg(long, value_name = "REMOTE", num_args = 0..=1, default_missing_value = "")]
    pub(crate) remote: Option<String>,
}

/// `snap repair` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct RepairArgs {}

/// `snap delete`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct DeleteArgs {
    /// Every snapshot (the only mode there is).
    #[arg(long, required = true)]
    pub(crate) all: bool,
    /// Confirm.
    #[arg(long)]
    pub(crate) yes: bool,
}

/// Runs `snap prune`.
pub(crate) fn run_prune(ctx: &Ctx, args: PruneArgs) -> Result<()> {
    prune(ctx, args.keep_last, args.keep_within, args.dry_run)
}

/// Runs `snap gc`: the store's, or with `--remote` a remote's.
pub(crate) fn run_gc(ctx: &Ctx, args: GcArgs) -> Result<()> {
    #[cfg(feature = "remote")]
    if let Some(remote) = &args.remote {
        return crate::commands::remote::gc(ctx, Some(remote), &args.grace);
    }
    let _ = args;
    gc(ctx)
}

/// Runs `snap verify`: the store's, or with `--remote` a remote's.
pub(crate) fn run_verify(ctx: &Ctx, args: VerifyArgs) -> Result<()> {
    #[cfg(feature = "remote")]
    if let Some(remote) = &args.remote {
        return crate::commands::remote::verify(ctx, Some(remote), args.read_data);
    }
    verify(ctx, args.read_data)
}

/// Runs `snap repair`.
pub(crate) fn run_repair(ctx: &Ctx, _args: RepairArgs) -> Result<()> {
    repair(ctx)
}

/// Runs `snap delete`.
pub(crate) fn run_delete(ctx: &Ctx, args: DeleteArgs) -> Result<()> {
    delete_all(ctx, args.yes)
}
