//! The remote half of `snap expunge` (docs/SAFETY.md, Remotes): for each remote it is to
//! rewrite, a push records the expunge there (the renamed ids, the new records and ref, the
//! old records deleted), then every pack holding an object no live record reaches is
//! rewritten without it (`snap_remote::repack`), and a remote collection runs with the
//! expunge's grace period.
//!
//! The remotes still to rewrite are listed in `.snap/expunge-remotes` (one name per line,
//! docs/FORMAT.md) from before the local expunge commits until each is done, so a remote
//! that could not be reached, or a kill, is finished by `snap expunge --resume`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;
#[cfg(feature = "remote")]
use snap_remote::repack::{RepackReport, mark_stale, send_again, stale_packs};
#[cfg(feature = "remote")]
use snap_remote::state::RemoteState;
#[cfg(feature = "remote")]
use snap_remote::{Reach, Remote};
use snap_tree::ReadOnlyWorkspace;

#[cfg(feature = "remote")]
use super::remote::{LacksTrees, PushMode, live_of, pull_from, push_to};
#[cfg(feature = "remote")]
use super::remote_crypt::now_ns;
use crate::ctx::Ctx;
use crate::open::open_reading;
use crate::render::human_bytes;

/// The file listing the remotes an expunge has still to rewrite.
const PENDING: &str = "expunge-remotes";

/// Which remotes an expunge rewrites.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RemoteChoice {
    /// Every configured remote (the default).
    Every,
    /// Only this one (`--remote NAME`).
    Named(String),
    /// None (`--no-remote`): they keep the bytes until a later `snap expunge --resume`.
    None,
}

/// What the expunge did on one remote.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct RemoteDone {
    pub(crate) name: String,
    pub(crate) url: String,
    /// Snapshot records the push deleted, and expunged ids it recorded.
    pub(crate) records_deleted: usize,
    pub(crate) expunged: usize,
    /// Snapshots of other workspaces pulled to learn what they reach.
    pub(crate) pulled: usize,
    /// Packs found holding what no live record reaches, and their bytes.
    pub(crate) stale_packs: usize,
    pub(crate) stale_bytes: u64,
    /// Packs sent with the live objects those held.
    pub(crate) packs_sent: usize,
    pub(crate) bytes_sent: u64,
    /// Packs and records the collection deleted, and those waiting out the grace.
    pub(crate) deleted: usize,
    pub(crate) waiting: usize,
    /// Why it did not finish (it then still lists the remote as pending).
    pub(crate) error: Option<String>,
}

/// The remotes `choice` names among those configured.
pub(crate) fn chosen(ws: &ReadOnlyWorkspace, choice: &RemoteChoice) -> Result<Vec<String>> {
    match choice {
        RemoteChoice::Every => Ok(ws.config().remote.keys().cloned().collect()),
        RemoteChoice::Named(name) => match ws.config().remote.contains_key(name) {
            true => Ok(vec![name.clone()]),
            false => anyhow::bail!("there is no remote named {name} (snap remote list)"),
        },
        RemoteChoice::None => Ok(Vec::new()),
    }
}

/// The remotes an earlier expunge left to rewrite.
pub(crate) fn pending(ws: &ReadOnlyWorkspace) -> Result<Vec<String>> {
    let path = pending_path(ws);
    match std::fs::read_to_string(&path) {
        Ok(text) => Ok(text
            .lines()
            .filter(|l| !l.is_empty())
            .map(String::from)
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| path.display().to_string()),
    }
}

/// Lists `names` (with those pending already) as still to rewrite, durably.
pub(crate) fn add_pending(ws: &ReadOnlyWorkspace, names: &[String]) -> Result<()> {
    let mut all = pending(ws)?;
    all.extend(names.iter().cloned());
    all.sort();
    all.dedup();
    set_pending(ws, &all)
}

/// Makes `names` the whole pending list (none: the file goes).
pub(crate) fn set_pending(ws: &ReadOnlyWorkspace, names: &[String]) -> Result<()> {
    let path = pending_path(ws);
    if names.is_empty() {
        return match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| path.display().to_string())
            }
            _ => Ok(()),
        };
    }
    let body: String = names.iter().map(|n| format!("{n}\n")).collect();
    snap_tree::write_atomic(&path, body.as_bytes())?;
    Ok(())
}

fn pending_path(ws: &ReadOnlyWorkspace) -> PathBuf {
    ws.store().dir().join(PENDING)
}

/// Rewrites each of `names` in turn; each one done leaves the pending list. A remote that
/// fails is reported with its error and stays listed. The store must not be open here.
pub(crate) fn rewrite_remotes(ctx: &Ctx, names: &[String], grace_ns: i64) -> Vec<RemoteDone> {
    let mut out = Vec::with_capacity(names.len());
    for name in names {
        let done = match rewrite_one(ctx, name, grace_ns) {
            Ok(done) => done,
            Err(e) => RemoteDone {
                error: Some(format!("{e:#}")),
                ..RemoteDone::new(name, url_of(ctx, name))
            },
        };
        if done.error.is_none()
            && let Err(e) = settle_pending(ctx, name)
        {
            eprintln!("warning: remote {name} is rewritten but still listed as pending: {e:#}");
        }
        out.push(done);
    }
    out
}

impl RemoteDone {
    fn new(name: &str, url: String) -> RemoteDone {
        RemoteDone {
            name: name.to_string(),
            url,
            records_deleted: 0,
            expunged: 0,
            pulled: 0,
            stale_packs: 0,
            stale_bytes: 0,
            packs_sent: 0,
            bytes_sent: 0,
            deleted: 0,
            waiting: 0,
            error: None,
        }
    }
}

fn url_of(ctx: &Ctx, name: &str) -> String {
    let ws = open_reading(ctx);
    let url = ws
        .ok()
        .and_then(|ws| Some(ws.config().remote.get(name)?.url.clone()));
    url.unwrap_or_default()
}

/// Takes `name` off the pending list.
fn settle_pending(ctx: &Ctx, name: &str) -> Result<()> {
    let ws = open_reading(ctx)?;
    let left: Vec<String> = (pending(&ws)?.into_iter()).filter(|n| n != name).collect();
    set_pending(&ws, &left)
}

/// Without remotes built in, nothing can be rewritten.
#[cfg(not(feature = "remote"))]
fn rewrite_one(_: &Ctx, _: &str, _: i64) -> Result<RemoteDone> {
    anyhow::bail!("this snap was built without remotes (the `remote` feature)")
}

/// Push, repack and collect on one remote.
#[cfg(feature = "remote")]
fn rewrite_one(ctx: &Ctx, name: &str, grace_ns: i64) -> Result<RemoteDone> {
    let url = url_of(ctx, name);
    if url.is_empty() {
        anyhow::bail!("there is no remote named {name} any more (snap remote list)");
    }
    let pushed = push_to(ctx, &url, PushMode::Missing, Reach::Existing)?;
    let mut done = RemoteDone::new(name, url.clone());
    done.records_deleted = pushed.sync.report.records_deleted;
    done.expunged = pushed.sync.report.expunged;
    let remote = super::remote::open_at(ctx, &url)?;
    let state = RemoteState::read_existing(remote.as_ref())?;
    // Another workspace's newest snapshots decide what stays: their trees are pulled first
    // when this store lacks them (pulled snapshots stay apart, as `NAME#N`).
    if let Err(e) = live_of(ctx, remote.as_ref(), &state) {
        if e.downcast_ref::<LacksTrees>().is_none() {
            return Err(e);
        }
        done.pulled = pull_from(ctx, Some(name))?.pulled;
    }
    let repacked = repack(ctx, remote.as_ref())?;
    done.stale_packs = repacked.stale;
    done.stale_bytes = repacked.stale_bytes;
    done.packs_sent = repacked.packs;
    done.bytes_sent = repacked.bytes;
    let state = RemoteState::read_existing(remote.as_ref())?;
    let live = live_of(ctx, remote.as_ref(), &state)?.live;
    let grace = std::time::Duration::from_nanos(u64::try_from(grace_ns).unwrap_or(0));
    let gc = snap_remote::gc::collect(remote.as_ref(), &state, &live, grace, now_ns())?;
    done.deleted = gc.deleted;
    done.waiting = gc.waiting;
    Ok(done)
}

/// Sends again what the stale packs held that is live, then marks them.
#[cfg(feature = "remote")]
fn repack(ctx: &Ctx, remote: &dyn Remote) -> Result<RepackReport> {
    let mut report = RepackReport::default();
    let state = RemoteState::read_existing(remote)?;
    let reach = live_of(ctx, remote, &state)?;
    let stale = stale_packs(&state, &reach.live.objects);
    if stale.is_empty() {
        return Ok(report);
    }
    let sizes = state.pack_files.clone();
    let mut after = state;
    after.forget_packs(&stale);
    let (outgoing, staging) = {
        let ws = open_reading(ctx)?;
        ws.store().sweep_staging()?;
        let have = |id: &snap_tree::ObjectId| after.objects.contains(id);
        let outgoing = ws.store().outgoing_trees(&reach.roots, &have)?;
        (outgoing, ws.store().staging(snap_tree::Staging::Push))
    };
    send_again(remote, outgoing, &after, &staging, &mut report)?;
    mark_stale(remote, &stale, &sizes, now_ns(), &mut report)?;
    Ok(report)
}

/// One line per remote: what it still holds, or what went.
pub(crate) fn print_remotes(done: &[RemoteDone], grace: &str) {
    for d in done {
        print_remote(d, grace);
    }
}

fn print_remote(d: &RemoteDone, grace: &str) {
    let name = &d.name;
    if let Some(e) = &d.error {
        eprintln!(
            "remote {name} may still hold the expunged bytes: {e}; once it can be reached, \
             run `snap expunge --resume`"
        );
        return;
    }
    let waiting = match d.waiting {
        0 => String::new(),
        n => format!(
            "; {n} pack(s) or record(s) wait out the grace period ({grace}), then \
             `snap gc --remote {name}` deletes them"
        ),
    };
    if d.pulled > 0 {
        println!(
            "remote {name}: pulled {} snapshot(s) of other workspaces to learn what they reach",
            d.pulled
        );
    }
    println!(
        "remote {name}: {} old record(s) deleted, {} pack(s) ({}) held what no snapshot \
         reaches; {} sent again in {} pack(s); {} deleted{waiting}",
        d.records_deleted,
        d.stale_packs,
        human_bytes(d.stale_bytes),
        human_bytes(d.bytes_sent),
        d.packs_sent,
        d.deleted,
    );
}
