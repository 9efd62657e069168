//! `snap push`, `pull`, `clone`, `gc --remote` and `verify --remote`: the history on
//! S3-compatible storage or in a directory (snap-remote; docs/FORMAT.md 9). Naming remotes
//! is `remote_config.rs`; keys and passphrases `remote_crypt.rs` and `remote_keys.rs`.
//!
//! The push and pull protocols are snap-remote's (`snap_remote::sync`); this file opens the
//! store for each of their steps ([`Opened`]) and shows their progress ([`Shown`]). The
//! store's lock is held only while planning: a push reads the remote first, opens the store
//! to plan, closes it (the plan keeps the pack files it reads open), then uploads, so hook
//! saves never wait for the network. A clone builds its store in a staging directory
//! beside the destination, checks HEAD out into the destination through the export engine,
//! moves the store in, and saves once, which records nothing and seeds the caches.

use std::path::Path;
use std::path::PathBuf;

use anyhow::{Context, Result, bail};
use snap_remote::fetch::{choose_workspace, fetch_workspace};
use snap_remote::layout::Marker;
use snap_remote::state::RemoteState;
pub(crate) use snap_remote::sync::PushMode;
use snap_remote::sync::{self, Heard, Local};
use snap_remote::{Reach, Remote, RemoteError, check};
use snap_tree::secrets::SecretScan;
use snap_tree::{ObjectId, ReadOnlyWorkspace, SaveOptions, Staging, Store, StoreError, Workspace};

use super::remote_crypt::{Passphrase, create_encrypted, now_ns, open_remote};
use crate::ctx::{Ctx, emit};
use crate::json;
use crate::open::{open, open_reading};
use crate::render::human_bytes;
use crate::render::path_shown;

/// The name pulled snapshots take when pulled from a URL no configured remote has.
const UNNAMED: &str = "pulled";

/// The URL `given` names: a URL as it is, else a remote of the config (the default one
/// when `None`).
pub(super) fn remote_url(ws: &ReadOnlyWorkspace, given: Option<&str>) -> Result<String> {
    remote_named(ws, given).map(|(_, url)| url)
}

/// The name and URL `given` names. A bare URL takes the name of the configured remote with
/// that URL, else [`UNNAMED`].
fn remote_named(ws: &ReadOnlyWorkspace, given: Option<&str>) -> Result<(String, String)> {
    if let Some(url) = given.filter(|g| g.contains("://")) {
        let remotes = &ws.config().remote;
        let named = remotes
            .iter()
            .find(|(_, r)| r.url == url)
            .map(|(n, _)| n.as_str());
        return Ok((named.unwrap_or(UNNAMED).to_string(), url.to_string()));
    }
    match ws.config().remote_url(given) {
        Some((name, url)) => Ok((name.to_string(), url.to_string())),
        None => match given {
            Some(name) => bail!("there is no remote named {name} (snap remote list)"),
            None => bail!("no remote to use: name one, or add one with snap remote add NAME URL"),
        },
    }
}

/// The existing remote at `url`, opened with the key this store keeps for it (or a
/// passphrase, when it is encrypted and the store has not met it).
pub(super) fn open_at(ctx: &Ctx, url: &str) -> Result<Box<dyn Remote>> {
    let store_dir = open_reading(ctx)?.store_dir().to_path_buf();
    let pass = Passphrase::default();
    Ok(open_remote(Some(&store_dir), url, Reach::Existing, pass)?.remote)
}

/// The remote a push writes to: as [`open_at`], and a remote no push has written to yet
/// made an encrypted one first (a passphrase is asked for), unless `snap remote add
/// --no-encryption` made it a plain one.
fn open_for_push(ctx: &Ctx, url: &str, reach: Reach) -> Result<Box<dyn Remote>> {
    let store_dir = open_reading(ctx)?.store_dir().to_path_buf();
    let opened = open_remote(Some(&store_dir), url, reach, Passphrase::default())?;
    // Only `snap push` makes a remote (Reach::Create): an expunge's push never does.
    let fresh = reach == Reach::Create
        && opened.marker == Marker::Absent
        && !opened.remote.names().sealed();
    match fresh {
        true => create_encrypted(&store_dir, url, opened.remote, Passphrase::default()),
        false => Ok(opened.remote),
    }
}

/// `snap push [REMOTE|URL] [--repair]`.
pub(crate) fn push(ctx: &Ctx, given: Option<&str>, mode: PushMode) -> Result<()> {
    let url = {
        let ws = open_reading(ctx)?;
        warn_secrets(ctx, &ws)?;
        remote_url(&ws, given)?
    };
    let pushed = push_to(ctx, &url, mode, Reach::Create)?;
    let report = &pushed.sync.report;
    let doc = json::PushDoc {
        remote: url.clone(),
        workspace: pushed.workspace.clone(),
        up_to_date: report.ref_n.is_none(),
        objects: pushed.sync.objects,
        local_bytes: pushed.sync.local_bytes,
        packs: report.packs,
        bytes: report.bytes,
        records: pushed.sync.records,
        ref_n: report.ref_n,
        repaired: pushed.sync.repaired.iter().map(|p| p.to_hex()).collect(),
        expunged: report.expunged,
        records_deleted: report.records_deleted,
    };
    emit(ctx, json::value(&doc), || {
        match report.ref_n {
            None => println!("{url} is up to date"),
            Some(n) => println!(
                "pushed to {url}: {} snapshot record(s), {} object(s) in {} pack(s), {} sent (ref {n})",
                pushed.sync.records,
                pushed.sync.objects,
                report.packs,
                human_bytes(report.bytes)
            ),
        }
        print_push_expunged(&url, report);
    });
    Ok(())
}

/// What [`push_to`] did: the protocol's report, and the workspace it pushed as.
pub(super) struct Pushed {
    pub(super) workspace: String,
    pub(super) sync: snap_remote::sync::Pushed,
}

/// The store as the remote protocols open it: for one step at a time, each a command's
/// own opening (reading ones leave an interrupted move for a writing command).
pub(super) struct Opened<'a>(pub(super) &'a Ctx);

impl Local for Opened<'_> {
    type Error = anyhow::Error;

    fn reading<T>(&self, step: impl FnOnce(&Store) -> Result<T, RemoteError>) -> Result<T> {
        Ok(step(open_reading(self.0)?.store())?)
    }

    fn writing<T>(&self, step: impl FnOnce(&Store) -> Result<T, StoreError>) -> Result<T> {
        Ok(step(open(self.0)?.store())?)
    }
}

/// What a transfer shows while it runs: a progress bar (stderr, unless `-q` or `--json`)
/// and the packs a repair sends again.
pub(super) struct Shown<'a> {
    ctx: &'a Ctx,
    label: &'static str,
    bar: std::cell::RefCell<Option<crate::progress::Transfer>>,
}

impl<'a> Shown<'a> {
    pub(super) fn new(ctx: &'a Ctx, label: &'static str) -> Shown<'a> {
        Shown {
            ctx,
            label,
            bar: std::cell::RefCell::new(None),
        }
    }
}

impl Heard for Shown<'_> {
    fn repairing(&self, pack: &ObjectId) {
        eprintln!("repairing: pack {pack} was damaged; what it held is sent again");
    }

    fn started(&self, total: u64) {
        let bar = crate::progress::Transfer::new(self.ctx, self.label, total);
        *self.bar.borrow_mut() = Some(bar);
    }

    fn moved(&self, done: u64) {
        if let Some(bar) = self.bar.borrow().as_ref() {
            bar.update(done);
        }
    }
}

/// Pushes this store's history to `url`; prints only the progress bar and repairs. Only
/// `snap push` itself may make a new remote (`reach`).
pub(super) fn push_to(ctx: &Ctx, url: &str, mode: PushMode, reach: Reach) -> Result<Pushed> {
    let workspace = open_reading(ctx)?
        .workspace_id()?
        .context("the store records no workspace id yet: save first")?;
    let remote = open_for_push(ctx, url, reach)?;
    let shown = Shown::new(ctx, "pushing");
    let sync = sync::push(
        &Opened(ctx),
        remote.as_ref(),
        &workspace,
        mode,
        reach,
        &shown,
    )?;
    Ok(Pushed { workspace, sync })
}

/// What a push told the remote of expunges: the ids it now lists, the old records deleted,
/// and what still holds the bytes there.
fn print_push_expunged(url: &str, report: &snap_remote::push::PushReport) {
    if report.expunged == 0 && report.records_deleted == 0 {
        return;
    }
    println!(
        "{url} now lists {} more expunged snapshot id(s) (never pulled, cloned or pushed again) \
         and {} old snapshot record(s) were deleted; the packs still hold the expunged bytes \
         until `snap gc --remote` has run twice past its grace period",
        report.expunged, report.records_deleted
    );
}

/// `snap pull [REMOTE|URL]`: the other workspaces' snapshots, kept apart as `REMOTE#N`;
/// never HEAD, never the working tree. The store is open to plan and to commit, not while
/// downloading.
pub(crate) fn pull(ctx: &Ctx, given: Option<&str>) -> Result<()> {
    let p = pull_from(ctx, given)?;
    let doc = json::PullDoc {
        remote: p.url.clone(),
        name: p.name.clone(),
        snapshots: p.pulled,
        bytes: p.bytes,
        packs: p.packs,
        refused: p.refused,
    };
    emit(ctx, json::value(&doc), || match p.pulled {
        0 => println!("{}: nothing new to pull", p.url),
        n => println!(
            "pulled {n} snapshot(s) from {} as {}#N ({}); snap log --all lists them",
            p.url,
            p.name,
            human_bytes(p.bytes)
        ),
    });
    Ok(())
}

/// What [`pull_from`] did.
pub(super) struct PullDone {
    pub(super) name: String,
    pub(super) url: String,
    pub(super) pulled: usize,
    pub(super) bytes: u64,
    pub(super) packs: usize,
    pub(super) refused: usize,
}

/// Pulls from `given`; prints only the progress bar and the refusals (stderr).
pub(super) fn pull_from(ctx: &Ctx, given: Option<&str>) -> Result<PullDone> {
    let ((name, url), own) = {
        let ws = open_reading(ctx)?;
        (
            remote_named(&ws, given)?,
            ws.workspace_id()?.unwrap_or_default(),
        )
    };
    let remote = open_at(ctx, &url)?;
    let shown = Shown::new(ctx, "pulling");
    let done = sync::pull(&Opened(ctx), remote.as_ref(), &name, &own, &shown)?;
    drop(shown);
    warn_refused(done.refused, &url);
    Ok(PullDone {
        name,
        url,
        pulled: done.pulled,
        bytes: done.bytes,
        packs: done.packs,
        refused: done.refused,
    })
}

/// Names the snapshots a pull refused because an expunge here renamed them away (stderr,
/// even with `-q`: history the person asked to be gone was offered again).
fn warn_refused(refused: usize, url: &str) {
    if refused > 0 {
        eprintln!(
            "warning: refused {refused} snapshot(s) from {url}: their ids are ones `snap expunge` \
             renamed away (here, or in a workspace that pushed there), so they may hold what \
             it took out"
        );
    }
}

/// `snap gc --remote [REMOTE|URL] [--grace DUR]`: the reach of every workspace's newest
/// ref is computed from this store, which must hold all their trees (after a push and a
/// pull); what it does not reach is marked, and deleted by a later gc past the grace period.
pub(crate) fn gc(ctx: &Ctx, given: Option<&str>, grace: &str) -> Result<()> {
    let grace_ns = snap_tree::parse_duration(grace)
        .map_err(|e| anyhow::anyhow!("--grace {grace}: {e}"))?
        .unwrap_or(0);
    let url = remote_url(&open_reading(ctx)?, given.filter(|g| !g.is_empty()))?;
    let remote = open_at(ctx, &url)?;
    let state = RemoteState::read_existing(remote.as_ref())?;
    let live = live_of(ctx, remote.as_ref(), &state)?.live;
    let grace = std::time::Duration::from_nanos(u64::try_from(grace_ns).unwrap_or(0));
    let report = snap_remote::gc::collect(remote.as_ref(), &state, &live, grace, now_ns())?;
    let doc = json::RemoteGcDoc {
        remote: url.clone(),
        refs_deleted: report.refs_deleted,
        marked: report.marked,
        deleted: report.deleted,
        bytes_deleted: report.bytes_deleted,
        rescued: report.rescued,
        waiting: report.waiting,
    };
    emit(ctx, json::value(&doc), || {
        println!(
            "{url}: {} old ref(s) deleted; {} pack(s) and record(s) marked, {} deleted ({}), \
             {} waiting out the grace period, {} reached again",
            report.refs_deleted,
            report.marked,
            report.deleted,
            human_bytes(report.bytes_deleted),
            report.waiting,
            report.rescued
        )
    });
    Ok(())
}

/// What every workspace's newest ref reaches, and the trees it starts from.
pub(super) struct LiveReach {
    pub(super) live: snap_remote::gc::Live,
    pub(super) roots: Vec<snap_tree::ObjectId>,
}

/// The reach of every workspace's newest ref, computed from this store, which must hold all
/// their trees (after a push and a pull). Ids listed under `expunged/` are dead whatever a
/// stale ref names: what only they reach is not in it.
pub(super) fn live_of(ctx: &Ctx, remote: &dyn Remote, state: &RemoteState) -> Result<LiveReach> {
    let records = snap_remote::gc::live_records(remote, state)?;
    let ws = open_reading(ctx)?;
    let store = ws.store();
    let mut roots = Vec::with_capacity(records.len());
    for id in &records {
        match store.snapshot(id) {
            Ok(record) => roots.push(record.root),
            Err(_) => roots.push(state.read_record(remote, id)?.root),
        }
    }
    let lacking = roots
        .iter()
        .filter(|r| !store.contains(r).unwrap_or(false))
        .count();
    if lacking > 0 {
        return Err(LacksTrees { lacking }.into());
    }
    let objects = store.closure(&roots)?;
    Ok(LiveReach {
        live: snap_remote::gc::Live { objects, records },
        roots,
    })
}

/// The remote's refs name snapshots whose trees this store lacks: what they reach cannot
/// be told.
#[derive(Debug)]
pub(super) struct LacksTrees {
    pub(super) lacking: usize,
}

impl std::fmt::Display for LacksTrees {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the remote's refs name {} snapshot(s) whose trees this store lacks: run \
             `snap push` and `snap pull` first",
            self.lacking
        )
    }
}

impl std::error::Error for LacksTrees {}

/// Before anything leaves: names the secret-looking paths history holds (stderr).
fn warn_secrets(ctx: &Ctx, ws: &ReadOnlyWorkspace) -> Result<()> {
    let hits = ws.secrets(SecretScan::Paths)?;
    if hits.is_empty() || ctx.quiet {
        return Ok(());
    }
    let names: Vec<String> = hits.iter().take(5).map(|h| path_shown(&h.path)).collect();
    eprintln!(
        "warning: history holds {} secret-looking path(s), which this push sends: {}{} \
         (snap expunge --secrets takes them out first)",
        hits.len(),
        names.join(", "),
        if hits.len() > 5 { ", ..." } else { "" }
    );
    Ok(())
}

/// `snap verify --remote [REMOTE|URL]`.
pub(crate) fn verify(ctx: &Ctx, given: Option<&str>, read_data: bool) -> Result<()> {
    let url = remote_url(&open_reading(ctx)?, given.filter(|g| !g.is_empty()))?;
    let remote = open_at(ctx, &url)?;
    let found = check::verify(remote.as_ref(), read_data)?;
    let doc = json::RemoteVerifyDoc {
        ok: found.problems.is_empty(),
        remote: url.clone(),
        read_data,
        workspaces: found.workspaces,
        snapshots: found.snapshots,
        packs: found.packs,
        bytes_read: found.bytes,
        problems: found.problems.clone(),
    };
    emit(ctx, json::value(&doc), || {
        println!(
            "{url}: {} workspace(s), {} snapshot(s), {} pack(s){}",
            found.workspaces,
            found.snapshots,
            found.packs,
            if read_data { ", every pack read" } else { "" }
        );
        for p in &found.problems {
            println!("problem: {p}");
        }
    });
    if !found.problems.is_empty() {
        bail!("{} problem(s) on {url}", found.problems.len());
    }
    Ok(())
}

/// `snap clone URL DIR [--workspace ID]`.
pub(crate) fn clone(
    ctx: &Ctx,
    url: &str,
    dir: &Path,
    workspace: Option<&str>,
    pass: Passphrase,
) -> Result<()> {
    let dest = ctx.start.join(dir);
    // A clone killed during its checkout left the export's staging there: gone with its
    // process, so the retry finds the destination empty again.
    snap_tree::remove_stale_export_staging(&dest)?;
    let parent = dest
        .parent()
        .context("the destination has no parent directory")?;
    let name = dest.file_name().context("the destination has no name")?;
    let prefix = format!(".{}.snap-clone-", name.to_string_lossy());
    if let Some(ws) = super::resume_clone::finish_killed_clone(&dest, parent, &prefix, url)? {
        return report_finished(ctx, &ws, &dest, url);
    }
    refuse_occupied(&dest)?;
    // A wrong passphrase stops the clone here, before anything is made.
    let opened = open_remote(None, url, Reach::Existing, pass)?;
    let remote = opened.remote;
    let state = RemoteState::read_existing(remote.as_ref())?;
    let id = choose_workspace(remote.as_ref(), &state, workspace)?;
    std::fs::create_dir_all(parent).with_context(|| parent.display().to_string())?;
    sweep_stale_clones(parent, &prefix);
    let staging = parent.join(format!("{prefix}{}", std::process::id()));
    std::fs::create_dir(&staging).with_context(|| staging.display().to_string())?;
    let bar = crate::progress::Transfer::new(ctx, "cloning", state.pack_files.values().sum());
    let from = From {
        remote: remote.as_ref(),
        url,
        key: opened.unlocked.as_ref(),
    };
    let cloned = clone_through(&from, &state, &id, &staging, &dest, &bar);
    drop(bar);
    let _ = std::fs::remove_dir_all(&staging);
    let fetched = cloned?;
    warn_refused(fetched.taken.refused, url);
    let ws = Workspace::discover(&dest, None)?;
    let seeded = ws.save(&SaveOptions::default())?;
    finished(&ws)?;
    let doc = json::CloneDoc {
        dir: dest.display().to_string(),
        remote: url.to_string(),
        workspace: id.clone(),
        snapshots: fetched.taken.snapshots,
        packs: fetched.taken.packs,
        objects: fetched.taken.objects,
        bytes: fetched.bytes,
        refused: fetched.taken.refused,
        head: ws.head()?.as_ref().map(json::SnapshotDoc::from),
        saved: seeded.snapshot.as_ref().map(json::SnapshotDoc::from),
    };
    emit(ctx, json::value(&doc), || {
        println!(
            "cloned workspace {} from {url} into {}: {} snapshot(s), {} downloaded",
            &id[..8.min(id.len())],
            dest.display(),
            fetched.taken.snapshots,
            human_bytes(fetched.bytes)
        )
    });
    Ok(())
}

/// The report of a clone that finished one a kill interrupted (crate::commands::resume_clone).
fn report_finished(ctx: &Ctx, ws: &Workspace, dest: &Path, url: &str) -> Result<()> {
    let seeded = ws.save(&SaveOptions::default())?;
    finished(ws)?;
    let head = ws.head()?;
    let doc = json::CloneFinishedDoc {
        dir: dest.display().to_string(),
        remote: url.to_string(),
        finished_interrupted: true,
        head: head.as_ref().map(json::SnapshotDoc::from),
        saved: seeded.snapshot.as_ref().map(json::SnapshotDoc::from),
    };
    emit(ctx, json::value(&doc), || {
        let seq = head.as_ref().map_or(0, |h| h.record.seq);
        println!(
            "finished the clone into {} that a kill interrupted: HEAD is #{seq}",
            dest.display()
        )
    });
    Ok(())
}

/// Removes the clone's unfinished mark, after its first save.
fn finished(ws: &ReadOnlyWorkspace) -> Result<()> {
    let mark = ws.store_dir().join(super::resume_clone::CLONING);
    match std::fs::remove_file(&mark) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| mark.display().to_string())
        }
        _ => Ok(()),
    }
}

/// The remote a clone takes from.
struct From<'a> {
    remote: &'a dyn Remote,
    url: &'a str,
    /// Its key, kept by the new store, when it is encrypted.
    key: Option<&'a snap_remote::crypt::MasterKey>,
}

/// Fills a store in `staging`, checks HEAD out into `dest`, then moves the store there.
fn clone_through(
    from: &From,
    state: &RemoteState,
    id: &str,
    staging: &Path,
    dest: &Path,
    bar: &crate::progress::Transfer,
) -> Result<snap_remote::fetch::FetchReport> {
    let (remote, url) = (from.remote, from.url);
    let ws = Workspace::init(staging, None, false)?;
    if let Some(key) = from.key {
        super::remote_crypt::save_key(ws.store_dir(), url, key)?;
    }
    // Until the first save in DIR: a clone run again finishes this one if it is killed.
    let mark = ws.store_dir().join(super::resume_clone::CLONING);
    std::fs::write(&mark, b"").with_context(|| mark.display().to_string())?;
    let tmp = ws.store().staging(Staging::Clone);
    let fetched = fetch_workspace(remote, state, id, ws.store(), &tmp, &|done| {
        bar.update(done)
    })?;
    snap_tree::add_remote(ws.store_dir(), super::resume_clone::CLONED_FROM, url)?;
    if ws.head()?.is_some() {
        ws.export("@", &[], dest)?;
    } else {
        std::fs::create_dir_all(dest).with_context(|| dest.display().to_string())?;
    }
    let store = ws.store_dir().to_path_buf();
    drop(ws);
    let into = dest.join(snap_tree::STORE_DIR);
    std::fs::rename(&store, &into).with_context(|| into.display().to_string())?;
    Ok(fetched)
}

/// Removes the staging directories `prefix<pid>` in `parent` that killed clones left: only
/// where that process is gone and the directory holds nothing but the store it was filling
/// (a clone stages only its `.snap` there). Best effort: a clone goes on without it.
fn sweep_stale_clones(parent: &Path, prefix: &str) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let gone =
            snap_tree::owner_in(&name.to_string_lossy(), prefix).is_some_and(snap_tree::owner_gone);
        let path = entry.path();
        if gone && holds_only_a_store(&path) {
            let _ = std::fs::remove_dir_all(&path);
        }
    }
}

/// True when `dir` is a directory (not a link) whose one entry is a store directory, or
/// which is empty.
fn holds_only_a_store(dir: &Path) -> bool {
    let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
    let Ok(entries) = std::fs::read_dir(dir) else {
        return false;
    };
    let names: Vec<_> = entries.flatten().map(|e| e.file_name()).collect();
    is_dir && names.iter().all(|n| n == snap_tree::STORE_DIR)
}

/// A clone writes only into an absent or empty directory.
fn refuse_occupied(dest: &Path) -> Result<()> {
    match std::fs::read_dir(dest) {
        Ok(mut entries) => match entries.next() {
            Some(_) => bail!("{} exists and is not empty", dest.display()),
            None => Ok(()),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| dest.display().to_string()),
    }
}

/// `snap push`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct PushArgs {
    /// A remote's name or URL (default: the default remote).
    pub(crate) remote: Option<String>,
    /// First read and hash every pack on the remote; a damaged one is deleted and what
    /// it held is sent again.
    #[arg(long)]
    pub(crate) repair: bool,
}

/// `snap pull`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct PullArgs {
    /// A remote's name or URL (default: the default remote).
    pub(crate) remote: Option<String>,
}

/// `snap clone`'s arguments.
#[derive(Debug, clap::Args)]
pub(crate) struct CloneArgs {
    /// `s3://bucket/prefix` or `file:///path`.
    pub(crate) url: String,
    /// The new directory (absent or empty).
    #[arg(value_name = "DIR")]
    pub(crate) directory: PathBuf,
    /// The workspace to take, when the remote holds several (a prefix of its id).
    #[arg(long)]
    pub(crate) workspace: Option<String>,
    /// Read an encrypted remote's passphrase from the first line of FILE (else
    /// SNAP_REMOTE_PASSWORD, else a prompt).
    #[arg(long, value_name = "FILE")]
    pub(crate) password_file: Option<PathBuf>,
}

/// Runs `snap push`.
pub(crate) fn run_push(ctx: &Ctx, args: PushArgs) -> Result<()> {
    let mode = match args.repair {
        true => PushMode::Repair,
        false => PushMode::Missing,
    };
    push(ctx, args.remote.as_deref(), mode)
}

/// Runs `snap pull`.
pub(crate) fn run_pull(ctx: &Ctx, args: PullArgs) -> Result<()> {
    pull(ctx, args.remote.as_deref())
}

/// Runs `snap clone`.
pub(crate) fn run_clone(ctx: &Ctx, args: CloneArgs) -> Result<()> {
    let pass = Passphrase {
        file: args.password_file.as_deref(),
    };
    clone(
        ctx,
        &args.url,
        &args.directory,
        args.workspace.as_deref(),
        pass,
    )
}
