//! `snap expunge PATH... [--snapshot REF]... --yes | --dry-run`, and `--secrets`: take paths
//! out of history for good (docs/SAFETY.md names it a deliberate loss), the bytes gone from
//! the store. A person's decision: it needs `--yes`, and no MCP tool offers it.

use crate::render::path_str;
use serde::Serialize;
use snap_tree::PurgeReport;
use snap_tree::secrets::{SecretHit, SecretScan};
use snap_tree::{ExpungeAsk, ExpungeOutcome, Run, Tracking};

use super::expunge_remote::{
    RemoteChoice, RemoteDone, add_pending, chosen, pending, print_remotes, rewrite_remotes,
    set_pending,
};
use super::workspace_paths;
use crate::ctx::{Ctx, emit, json_only};
use crate::json;
use crate::open::open;
use crate::render::path_shown;
use anyhow::Result;
use std::path::PathBuf;

/// What `snap expunge` was asked.
pub(crate) struct ExpungeCall<'a> {
    pub(crate) paths: &'a [PathBuf],
    pub(crate) snapshots: &'a [String],
    pub(crate) secrets: bool,
    pub(crate) tracking: Tracking,
    pub(crate) run: Option<Run>,
    pub(crate) remotes: RemoteChoice,
    /// Only the remote half of an earlier expunge (`--resume`).
    pub(crate) resume: bool,
    /// The grace period of the remotes' old packs.
    pub(crate) grace: &'a str,
}

pub(crate) fn cmd_expunge(ctx: &Ctx, call: ExpungeCall<'_>) -> Result<()> {
    let grace_ns = snap_tree::parse_duration(call.grace)
        .map_err(|e| anyhow::anyhow!("--grace {}: {e}", call.grace))?
        .unwrap_or(0);
    if call.resume {
        return resume(ctx, &call.remotes, call.grace, grace_ns);
    }
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
    let remotes = chosen(&ws, &call.remotes)?;
    let apply = run == Run::Apply && !paths.is_empty();
    // Listed before the local rewrite commits: a kill after it leaves them to `--resume`.
    // `--no-remote` lists every configured remote, left for a later `--resume`.
    let left = match call.remotes {
        RemoteChoice::None => chosen(&ws, &RemoteChoice::Every)?,
        _ => Vec::new(),
    };
    let listed = pending(&ws)?;
    if apply {
        add_pending(&ws, &[&remotes[..], &left[..]].concat())?;
    }
    let out = match paths.is_empty() {
        true => ExpungeOutcome {
            dry_run: run == Run::DryRun,
            ..ExpungeOutcome::default()
        },
        false => ws.expunge(ask, run)?,
    };
    // Nothing renamed: only remotes an earlier (killed) expunge left are rewritten.
    let remotes = match (apply, out.renamed.is_empty()) {
        (true, true) => {
            set_pending(&ws, &listed)?;
            remotes.into_iter().filter(|r| listed.contains(r)).collect()
        }
        _ => remotes,
    };
    // The remotes are rewritten with the store closed: each step opens it as it needs.
    drop(ws);
    let done = match apply {
        true => rewrite_remotes(ctx, &remotes, grace_ns),
        false => Vec::new(),
    };
    emit(
        ctx,
        json_only(ctx, || {
            let secrets = call.secrets.then_some(&found);
            json::value(&ExpungeDoc::new(&out, secrets, &done))
        }),
        || {
            print_expunge(&out, call.secrets.then_some(&found[..]));
            if out.dry_run && !out.taken.is_empty() && !remotes.is_empty() {
                println!(
                    "with --yes, remote(s) {} are rewritten too",
                    remotes.join(", ")
                );
            }
            print_remotes(&done, call.grace);
            if apply && !out.renamed.is_empty() && !left.is_empty() {
                println!(
                    "remote(s) {} still hold the expunged bytes: `snap expunge --resume` \
                     rewrites them",
                    left.join(", ")
                );
            }
        },
    );
    unfinished(&done)
}

/// `snap expunge --resume`: the remote half of earlier expunges, for the remotes they left
/// pending (or the one `--remote` names).
fn resume(ctx: &Ctx, choice: &RemoteChoice, grace: &str, grace_ns: i64) -> Result<()> {
    let names = {
        let ws = open(ctx)?;
        match choice {
            RemoteChoice::Named(_) => chosen(&ws, choice)?,
            _ => pending(&ws)?,
        }
    };
    let done = rewrite_remotes(ctx, &names, grace_ns);
    emit(
        ctx,
        json_only(ctx, || serde_json::json!({ "remotes": &done })),
        || match names.is_empty() {
            true => println!("nothing to resume: no expunge left a remote to rewrite"),
            false => print_remotes(&done, grace),
        },
    );
    unfinished(&done)
}

/// An error naming the remotes an expunge could not rewrite (each was named on stderr).
fn unfinished(done: &[RemoteDone]) -> Result<()> {
    let failed: Vec<&str> = (done.iter())
        .filter(|d| d.error.is_some())
        .map(|d| d.name.as_str())
        .collect();
    match failed.is_empty() {
        true => Ok(()),
        false => anyhow::bail!(
            "the expunge is not finished on remote(s) {}: `snap expunge --resume` finishes it",
            failed.join(", ")
        ),
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

/// `snap expunge`.
#[derive(Debug, clap::Args)]
pub struct ExpungeArgs {
    /// Files or directories to take out of history.
    #[arg(required_unless_present_any = ["secrets", "resume"])]
    pub paths: Vec<PathBuf>,
    /// Only from this snapshot (repeatable); by default from every one.
    #[arg(long = "snapshot", value_name = "REF")]
    pub snapshots: Vec<String>,
    /// Find secret-looking paths and contents in history and list them (with --yes, expunge
    /// them too).
    #[arg(long)]
    pub secrets: bool,
    /// Leave the config alone: by default each expunged path still on disk joins
    /// exclude_paths, or the next save would record it again.
    #[arg(long)]
    pub keep_tracking: bool,
    /// Expunge: history loses the paths for good.
    #[arg(long, conflicts_with = "dry_run")]
    pub yes: bool,
    /// Say which snapshots and bytes would go; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Rewrite only this remote (by default every configured one: the expunge is pushed
    /// there and each pack holding the bytes is rewritten without them).
    #[arg(long, value_name = "NAME", conflicts_with = "no_remote")]
    pub remote: Option<String>,
    /// Leave the remotes as they are (they keep the bytes until `snap expunge --resume`).
    #[arg(long)]
    pub no_remote: bool,
    /// Finish the remote half of an earlier expunge (a remote that could not be reached,
    /// or a kill).
    #[arg(long, conflicts_with_all = ["paths", "secrets", "dry_run", "snapshots", "no_remote"])]
    pub resume: bool,
    /// How long a rewritten remote keeps the old packs before they are deleted (for pushes
    /// from other machines that planned against them); 0 deletes them at once.
    #[arg(long, value_name = "DUR", default_value = "1h")]
    pub grace: String,
}

/// Runs `snap expunge`.
pub(crate) fn run(ctx: &Ctx, args: ExpungeArgs) -> Result<()> {
    let call = ExpungeCall {
        paths: &args.paths,
        snapshots: &args.snapshots,
        secrets: args.secrets,
        tracking: match args.keep_tracking {
            true => snap_tree::Tracking::Keep,
            false => snap_tree::Tracking::Exclude,
        },
        run: match (args.yes, args.dry_run) {
            (true, _) => Some(snap_tree::Run::Apply),
            (false, true) => Some(snap_tree::Run::DryRun),
            (false, false) => None,
        },
        remotes: match (args.no_remote, args.remote.clone()) {
            (true, _) => RemoteChoice::None,
            (false, Some(name)) => RemoteChoice::Named(name),
            (false, None) => RemoteChoice::Every,
        },
        resume: args.resume,
        grace: &args.grace,
    };
    cmd_expunge(ctx, call)
}

/// `snap expunge`: the snapshots given new ids, what was taken out by path, the paths
/// excluded from now on, the purge, and (`--secrets`) what looked secret.
#[derive(Serialize)]
pub struct ExpungeDoc {
    pub dry_run: bool,
    pub renamed: Vec<RenamedDoc>,
    pub paths: Vec<ExpungedPathDoc>,
    pub excluded: Vec<String>,
    pub purge: Option<PurgeDoc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secrets: Option<Vec<SecretDoc>>,
    /// What the expunge did on each remote it rewrote.
    pub remotes: Vec<RemoteDone>,
}

#[derive(Serialize)]
pub struct RenamedDoc {
    pub seq: u64,
    pub old: String,
    pub new: String,
    pub held: bool,
}

#[derive(Serialize)]
pub struct ExpungedPathDoc {
    pub path: String,
    pub versions: usize,
    pub bytes: u64,
    pub files: usize,
}

#[derive(Serialize)]
pub struct PurgeDoc {
    pub packs_rewritten: usize,
    pub objects_removed: usize,
    pub objects_reencoded: usize,
    pub bytes_before: u64,
    pub bytes_after: u64,
}

#[derive(Serialize)]
pub struct SecretDoc {
    pub path: String,
    pub why: String,
}

impl ExpungeDoc {
    pub fn new(
        o: &ExpungeOutcome,
        secrets: Option<&Vec<SecretHit>>,
        remotes: &[RemoteDone],
    ) -> ExpungeDoc {
        ExpungeDoc {
            remotes: remotes.to_vec(),
            dry_run: o.dry_run,
            renamed: (o.renamed.iter())
                .map(|r| RenamedDoc {
                    seq: r.seq,
                    old: r.old.to_hex(),
                    new: r.new.to_hex(),
                    held: r.held,
                })
                .collect(),
            paths: (o.taken.iter())
                .map(|(p, t)| ExpungedPathDoc {
                    path: path_str(p),
                    versions: t.versions.len(),
                    bytes: t.bytes,
                    files: t.files.len(),
                })
                .collect(),
            excluded: o.excluded.iter().map(|p| path_str(p)).collect(),
            purge: o.purge.as_ref().map(PurgeDoc::from),
            secrets: secrets.map(|hits| hits.iter().map(SecretDoc::from).collect()),
        }
    }
}

impl From<&PurgeReport> for PurgeDoc {
    fn from(p: &PurgeReport) -> PurgeDoc {
        PurgeDoc {
            packs_rewritten: p.packs_rewritten,
            objects_removed: p.objects_removed,
            objects_reencoded: p.objects_reencoded,
            bytes_before: p.bytes_before,
            bytes_after: p.bytes_after,
        }
    }
}

impl From<&SecretHit> for SecretDoc {
    fn from(h: &SecretHit) -> SecretDoc {
        SecretDoc {
            path: path_str(&h.path),
            why: h.why.clone(),
        }
    }
}
