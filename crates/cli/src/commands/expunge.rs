//! `snap expunge PATH... [--snapshot REF]... --yes | --dry-run`, and `--secrets`: take paths
//! out of history for good (docs/SAFETY.md names it a deliberate loss), the bytes gone from
//! the store. A person's decision: it needs `--yes`, and no MCP tool offers it.

use snap_tree::secrets::{SecretHit, SecretScan};
use snap_tree::{ExpungeAsk, ExpungeOutcome, Run, Tracking};

use super::{Ctx, PathBuf, Result, emit, json, json_only, open, path_shown, workspace_paths};

/// What `snap expunge` was asked.
pub(crate) struct ExpungeCall<'a> {
    pub(crate) paths: &'a [PathBuf],
    pub(crate) snapshots: &'a [String],
    pub(crate) secrets: bool,
    pub(crate) tracking: Tracking,
    pub(crate) run: Option<Run>,
}

pub(crate) fn cmd_expunge(ctx: &Ctx, call: ExpungeCall<'_>) -> Result<()> {
    let ws = open(ctx)?;
    let mut paths = workspace_paths(&ws, &ctx.start, call.paths)?;
    if paths.iter().any(|p| p.is_empty()) {
        anyhow::bail!("snap expunge takes paths inside the workspace, not the workspace itself");
    }
    let found = match call.secrets {
        true => ws.secrets(SecretScan::PathsAndContents)?,
        false => Vec::new(),
    };
    paths.extend(found.iter().map(|h| h.path.clone()));
    paths.sort();
    paths.dedup();
    // `--secrets` alone lists; paths alone must say which of preview or deletion is meant.
    let run = match (call.run, call.secrets) {
        (Some(run), _) => run,
        (None, true) => Run::DryRun,
        (None, false) => anyhow::bail!(
            "snap expunge deletes history for good: add --yes, or --dry-run to see what it takes"
        ),
    };
    let ask = ExpungeAsk {
        paths: &paths,
        snapshots: call.snapshots,
        tracking: call.tracking,
    };
    let out = match paths.is_empty() {
        true => ExpungeOutcome {
            dry_run: run == Run::DryRun,
            ..ExpungeOutcome::default()
        },
        false => ws.expunge(ask, run)?,
    };
    emit(
        ctx,
        json_only(ctx, || {
            json::value(&json::ExpungeDoc::new(&out, call.secrets.then_some(&found)))
        }),
        || {
            print_expunge(&out, call.secrets.then_some(&found[..]));
            print_remotes_left(&out, ws.config().remote.keys());
        },
    );
    Ok(())
}

/// After an expunge that renamed snapshots, one line per configured remote: its copy still
/// holds the bytes until a push records the expunge there and two remote collections past
/// the grace period delete what only the old snapshots reached (docs/SAFETY.md, Remotes).
fn print_remotes_left<'a>(out: &ExpungeOutcome, remotes: impl Iterator<Item = &'a String>) {
    if out.dry_run || out.renamed.is_empty() {
        return;
    }
    for name in remotes {
        println!(
            "remote {name} still holds the expunged bytes: run `snap push {name}`, then \
             `snap gc --remote {name}` twice, the second past the grace period (1 hour \
             unless --grace says)"
        );
    }
}

fn print_expunge(out: &ExpungeOutcome, secrets: Option<&[SecretHit]>) {
    if let Some(hits) = secrets {
        match hits.len() {
            0 => println!("no secret-looking path or content in history"),
            n => println!("{} in history:", plural(n, "secret-looking path")),
        }
        for hit in hits {
            println!("  {}: {}", path_shown(&hit.path), hit.why);
        }
    }
    if out.taken.is_empty() {
        if secrets.is_none() {
            println!("nothing to expunge: no snapshot holds those paths");
        }
        return;
    }
    let held = out.renamed.iter().filter(|r| r.held).count();
    let verb = if out.dry_run { "would take" } else { "took" };
    println!(
        "expunge {verb} {} out of {held} (of {} given new ids; their numbers stay):",
        plural(out.taken.len(), "path"),
        plural(out.renamed.len(), "snapshot")
    );
    for (path, taken) in &out.taken {
        println!(
            "  {}: {} versions, {} bytes",
            path_shown(path),
            taken.versions.len(),
            taken.bytes
        );
    }
    for path in &out.excluded {
        let verb = if out.dry_run { "would be" } else { "is now" };
        println!(
            "{} {verb} in exclude_paths (it stays on disk)",
            path_shown(path)
        );
    }
    if let Some(purge) = &out.purge {
        println!(
            "purged: {} packs rewritten, {} objects removed, {} re-encoded; packs {} -> {} bytes",
            purge.packs_rewritten,
            purge.objects_removed,
            purge.objects_reencoded,
            purge.bytes_before,
            purge.bytes_after
        );
    } else if out.dry_run && secrets.is_none() {
        println!("nothing written: run again with --yes to expunge");
    } else if out.dry_run {
        println!("nothing written: snap expunge --secrets --yes expunges them");
    }
}

/// `1 path`, `3 paths`.
fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}
