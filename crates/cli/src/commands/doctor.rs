//! `snap doctor`: is snap wired into the agents, are hook saves working, is the store whole
//! (and does history lie outside its catalog), and does `snap` on PATH name this program or
//! snapd's.

use crate::ctx::{Ctx, emit};
use crate::hook::install::{HookPlace, installed, is_build_output};
use crate::json;
use crate::snapd::snap_on_path;
use crate::watch::status::StatusDoc;
use anyhow::Result;
use serde::Serialize;
use snap_tree::ReadOnlyWorkspace;

pub(crate) fn cmd_doctor(ctx: &Ctx) -> Result<()> {
    let ws = match crate::open::open_reading(ctx) {
        Ok(ws) => ws,
        Err(e) => return doctor_unopened(ctx, e),
    };
    let hooks = installed(ws.root());
    let last_save = last_hook_save(&ws)?;
    let failure = crate::hook::log::last_failure(ws.store_dir());
    let report = ws.verify(false)?;
    let pending: Vec<String> = ws
        .pending()?
        .iter()
        .map(|m| m.op.as_str().to_string())
        .collect();
    let on_path = snap_on_path();
    let doc = DoctorDoc {
        root: ws.root().display().to_string(),
        hooks: hooks.iter().map(hook_doc).collect(),
        last_hook_save: last_save.as_ref().map(json::SnapshotDoc::from),
        hook_failure: failure.as_ref().map(|(time, error)| json::HookFailureDoc {
            time: time.clone(),
            error: error.clone(),
        }),
        store_ok: report.problems.is_empty(),
        store_problems: report.problems.iter().map(|p| p.what.clone()).collect(),
        history_outside_catalog: (ws.history_outside_catalog()?.iter())
            .map(|p| p.display().to_string())
            .collect(),
        set_aside_catalogs: set_aside_catalogs(ws.store_dir()),
        pending,
        secret_paths: (ws.secrets(snap_tree::secrets::SecretScan::Paths)?.iter())
            .map(|h| crate::render::path_str(&h.path))
            .collect(),
        snap_on_path: on_path.as_ref().map(|p| p.display().to_string()),
        watcher: crate::watch::status_of(ws.root()),
        unencrypted_remotes: unencrypted_remotes(&ws),
    };
    emit(ctx, json::value(&doc), || print_doctor(&doc, &hooks));
    Ok(())
}

/// The configured remotes this store keeps no key for: plain ones (pushed before
/// encryption, or added with `--no-encryption`).
#[cfg(feature = "remote")]
fn unencrypted_remotes(ws: &ReadOnlyWorkspace) -> Vec<String> {
    let remotes = &ws.config().remote;
    let plain = |url: &str| !super::remote_crypt::has_key(ws.store_dir(), url);
    (remotes.iter())
        .filter(|(_, r)| plain(&r.url))
        .map(|(name, _)| name.clone())
        .collect()
}

#[cfg(not(feature = "remote"))]
fn unencrypted_remotes(_: &ReadOnlyWorkspace) -> Vec<String> {
    Vec::new()
}

/// The watcher's line: whether one runs, and whether it caught itself missing a change.
fn print_watcher(status: Option<&StatusDoc>) {
    let Some(s) = status else {
        println!(
            "watcher: none running (snap watch --background makes saves read only what changed)"
        );
        return;
    };
    println!(
        "watcher: pid {}, {} directories watched",
        s.pid, s.directories_watched
    );
    if let Some(doubt) = &s.doubt {
        println!("      every save walks the whole tree: {doubt}");
    }
    if let Some(path) = &s.last_silent_change {
        println!(
            "      it missed a change in {path} ({} in all) and started a new epoch: its \
             filesystem may not report every write",
            s.silent_changes
        );
    }
}

/// `doctor` of a workspace whose catalog cannot be opened: everything doctor can say
/// without it, with the catalog named as the store's damage.
fn doctor_unopened(ctx: &Ctx, e: anyhow::Error) -> Result<()> {
    let Some(what) = crate::exit::catalog_damage(&e) else {
        return Err(e);
    };
    let start = ctx
        .start
        .canonicalize()
        .unwrap_or_else(|_| ctx.start.clone());
    let root = snap_tree::find_root(&start).unwrap_or(start);
    let store = (ctx.store.clone()).unwrap_or_else(|| root.join(snap_tree::STORE_DIR));
    let hooks = installed(&root);
    let failure = crate::hook::log::last_failure(&store);
    let doc = DoctorDoc {
        root: root.display().to_string(),
        hooks: hooks.iter().map(hook_doc).collect(),
        last_hook_save: None,
        hook_failure: failure.as_ref().map(|(time, error)| json::HookFailureDoc {
            time: time.clone(),
            error: error.clone(),
        }),
        store_ok: false,
        store_problems: vec![what],
        history_outside_catalog: Vec::new(),
        set_aside_catalogs: set_aside_catalogs(&store),
        pending: Vec::new(),
        secret_paths: Vec::new(),
        snap_on_path: snap_on_path().map(|p| p.display().to_string()),
        watcher: crate::watch::status_of(&root),
        unencrypted_remotes: Vec::new(),
    };
    emit(ctx, json::value(&doc), || print_doctor(&doc, &hooks));
    Ok(())
}

fn hook_doc(h: &HookPlace) -> HookPlaceDoc {
    HookPlaceDoc {
        agent: h.agent,
        installed: h.installed,
        binary: h.binary.as_ref().map(|b| b.display().to_string()),
        binary_exists: h.binary.as_ref().is_some_and(|b| b.is_file()),
        binary_is_build_output: h.binary.as_deref().is_some_and(is_build_output),
        scope: match h.scope {
            crate::hook::agents::HookScope::Local => "local",
            crate::hook::agents::HookScope::Project => "project",
            crate::hook::agents::HookScope::User => "user",
        },
        path: h.path.display().to_string(),
    }
}

/// The newest snapshot a `snap hook` call made (its meta names the hook event).
fn last_hook_save(ws: &ReadOnlyWorkspace) -> Result<Option<snap_tree::Snapshot>> {
    Ok(ws.newest_where(|r| r.meta.iter().any(|(k, _)| k == "hook"))?)
}

/// The old catalogs `snap repair` moved aside (`catalog.redb.damaged-*`, or `.old-*` when
/// they read), which nothing else deletes or reports.
fn set_aside_catalogs(store: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(store) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.starts_with("catalog.redb.damaged-") || name.starts_with("catalog.redb.old-")
        })
        .map(|e| e.path().display().to_string())
        .collect();
    found.sort();
    found
}

fn print_doctor(doc: &DoctorDoc, hooks: &[HookPlace]) {
    println!("workspace {}", doc.root);
    print_watcher(doc.watcher.as_ref());
    for h in hooks {
        if h.installed {
            println!("hook: {} installed ({})", h.agent, h.path.display());
            if let Some(bin) = h.binary.as_ref().filter(|b| !b.is_file()) {
                println!(
                    "      its binary {} is gone: every hook call fails; run hook install again",
                    bin.display()
                );
            } else if let Some(bin) = h.binary.as_deref().filter(|b| is_build_output(b)) {
                println!(
                    "      its binary {} is a cargo build output: `cargo clean` deletes it and \
                     breaks the hook (install snap-undo, then run hook install again)",
                    bin.display()
                );
            }
            if let Some(reminder) = h.reminder {
                println!("      {reminder}");
            }
        }
    }
    if !hooks.iter().any(|h| h.installed) {
        let agents = crate::hook::known::names().replace(", ", "|");
        println!("hook: none installed (snap-undo hook install --agent {agents})");
    }
    match &doc.last_hook_save {
        Some(s) => println!(
            "last hook snapshot: #{} at {} ({})",
            s.seq, s.time, s.message
        ),
        None => println!("last hook snapshot: none yet"),
    }
    if let Some(f) = &doc.hook_failure {
        println!(
            "hook saves are failing: the last at {}: {}",
            f.time, f.error
        );
    }
    if doc.store_ok {
        println!("store: ok");
    }
    if !doc.secret_paths.is_empty() {
        println!(
            "history holds secret-looking paths: {} (`snap expunge --secrets` lists them; they would leave with a push)",
            doc.secret_paths.join(", ")
        );
    }
    for problem in &doc.store_problems {
        println!("store: damaged: {problem} (snap verify, then snap repair)");
    }
    for name in &doc.unencrypted_remotes {
        println!(
            "remote {name} is NOT encrypted: whoever reads its bucket reads the history \
             (snap remote encrypt {name} moves it to the encrypted layout)"
        );
    }
    for pack in &doc.history_outside_catalog {
        println!(
            "store: {pack} may hold history the catalog lacks (a catalog put back from an \
             older copy, or a save whose commit failed): snap repair takes it back"
        );
    }
    for catalog in &doc.set_aside_catalogs {
        println!(
            "store: {catalog} is an old catalog a repair set aside; delete it once snap verify passes"
        );
    }
    for op in &doc.pending {
        println!("pending: an interrupted {op} (snap recover finishes it)");
    }
    if let Some(other) = &doc.snap_on_path {
        println!(
            "PATH: `snap` is {other}, not this program (snapd's?): type snap-undo, or put this one first"
        );
    }
}

/// `snap doctor` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct DoctorArgs {}

/// Runs `snap doctor`.
pub(crate) fn run(ctx: &Ctx, _args: DoctorArgs) -> Result<()> {
    cmd_doctor(ctx)
}

/// `snap doctor`.
#[derive(Serialize)]
pub(crate) struct DoctorDoc {
    pub root: String,
    pub hooks: Vec<HookPlaceDoc>,
    pub last_hook_save: Option<json::SnapshotDoc>,
    pub hook_failure: Option<json::HookFailureDoc>,
    pub store_ok: bool,
    pub store_problems: Vec<String>,
    pub history_outside_catalog: Vec<String>,
    pub set_aside_catalogs: Vec<String>,
    pub pending: Vec<String>,
    /// Secret-looking paths history holds (names only).
    pub secret_paths: Vec<String>,
    pub snap_on_path: Option<String>,
    /// The running watcher's `snap watch --status`, or null.
    pub watcher: Option<StatusDoc>,
    /// The configured remotes whose objects are not encrypted, by name.
    pub unencrypted_remotes: Vec<String>,
}

/// Where one agent's hook is, or would go.
#[derive(Serialize)]
pub(crate) struct HookPlaceDoc {
    pub agent: &'static str,
    pub installed: bool,
    pub binary: Option<String>,
    pub binary_exists: bool,
    /// The binary is a cargo build output (`target/<profile>/`), which `cargo clean` deletes.
    pub binary_is_build_output: bool,
    pub scope: &'static str,
    pub path: String,
}
