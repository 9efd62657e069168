//! `snap hook --agent A`: one save per agent hook event, with the agent's session, turn and
//! tool recorded, so that every tool call can be undone (docs/AGENTS.md).
//!
//! A hook never fails the agent: whatever happens it exits 0 and prints only what the agent
//! expects on stdout (nothing, or `{}`), never exit 2 (which some agents feed back to the
//! model). What went wrong goes to `.snap/hook.log` (and `snap status`), or, where there is
//! no store, to the user's state directory. One module per agent maps its payload to a
//! [`HookEvent`]; all of them end in the same save.

mod agent_config;
pub(crate) mod agents;
pub(crate) mod bounded;
mod claude;
mod cline;
pub(crate) mod cmd;
mod codex;
mod commands;
mod cursor;
mod gemini;
pub(crate) mod install;
pub(crate) mod known;
pub(crate) mod log;
mod opencode;
pub(crate) mod payload;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;
use snap_tree::{ReadOnlyWorkspace, SaveOptions, Snapshot, Told, Workspace};

use crate::ctx::Ctx;
use payload::{EventKind, HookEvent, PayloadFormat, text};

/// At most this much of stdin is read (a tool's response can be large; snap needs only
/// the fields around it); the rest is drained, so the agent never blocks writing it.
const PAYLOAD_LIMIT: u64 = 32 << 20;

/// How long a hook waits for the store lock: Codex runs matching hooks at once, and the
/// next hook's save captures whatever this one could not.
const HOOK_LOCK_WAIT: Duration = Duration::from_secs(2);

/// Runs the hook; every failure is logged, never returned (see the module doc).
pub(crate) fn cmd_hook(ctx: &Ctx, agent: &str) -> Result<()> {
    snap_tree::cap_lock_wait(HOOK_LOCK_WAIT);
    // Read first, whatever happens next: an agent writing a large payload must never block
    // on, or see EPIPE from, a hook that stopped reading.
    let payload = read_payload();
    let format = match known::agent(agent) {
        Ok(known) => &known.payload,
        Err(why) => {
            log::failure(None, agent, "", &why.to_string());
            return Ok(());
        }
    };
    let event_name = payload
        .as_ref()
        .ok()
        .and_then(|p| text(p, format.event_key))
        .unwrap_or_default();
    if std::env::var_os("SNAP_DISABLE").is_some_and(|v| v == "1") {
        reply(format, &event_name);
        return Ok(());
    }
    match payload {
        Ok(payload) => {
            let mut event = format.event(&payload);
            if event.roots.is_empty() {
                event.roots.push(ctx.start.clone());
            }
            let mut context = Vec::new();
            for root in &event.roots {
                context.extend(save_root(ctx, root, agent, &event, format));
            }
            if !context.is_empty() {
                print_context(&event, &context.join("\n"));
                return Ok(());
            }
        }
        Err(why) => {
            let store = find_store(ctx, &ctx.start);
            log::failure(store.as_deref(), agent, "", &why);
        }
    }
    reply(format, &event_name);
    Ok(())
}

fn reply(format: &PayloadFormat, event: &str) {
    let reply = (format.reply)(event);
    if !reply.is_empty() {
        println!("{reply}");
    }
}

/// The payload on stdin, as JSON. A terminal (someone running the hook by hand) or an empty
/// stdin gives an empty object.
fn read_payload() -> Result<Value, String> {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Ok(Value::Object(Default::default()));
    }
    let mut lock = stdin.lock();
    let mut bytes = Vec::new();
    let read = (&mut lock).take(PAYLOAD_LIMIT).read_to_end(&mut bytes);
    // Drain what is left, so that the agent writing it never blocks or sees EPIPE.
    let _ = std::io::copy(&mut lock, &mut std::io::sink());
    read.map_err(|e| format!("cannot read the hook payload on stdin: {e}"))?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(v @ Value::Object(_)) => Ok(v),
        Ok(_) => Err("the hook payload is not a JSON object".into()),
        Err(e) if bytes.len() as u64 >= PAYLOAD_LIMIT => Err(format!(
            "the hook payload is larger than {} MiB, the most snap reads ({e})",
            PAYLOAD_LIMIT >> 20
        )),
        Err(e) => Err(format!("the hook payload is not JSON: {e}")),
    }
}

/// The store a command started in `start` would use, without opening it.
fn find_store(ctx: &Ctx, start: &Path) -> Option<PathBuf> {
    match &ctx.store {
        Some(store) => Some(store.clone()),
        None => snap_tree::find_root(start).map(|root| root.join(snap_tree::STORE_DIR)),
    }
}

/// Claude Code's answer to a prompt event: context the model reads with the prompt.
fn print_context(event: &HookEvent, context: &str) {
    let reply = serde_json::json!({"hookSpecificOutput": {
        "hookEventName": event.name,
        "additionalContext": context,
    }});
    println!("{reply}");
}

/// Saves `root` for `event`, logging the outcome; without a store, only says so in the
/// user's log (a hook never creates a store). Returns context for the model, if any.
fn save_root(
    ctx: &Ctx,
    root: &Path,
    agent: &str,
    event: &HookEvent,
    format: &PayloadFormat,
) -> Option<String> {
    let Some(store) = find_store(ctx, root).filter(|s| s.is_dir()) else {
        let why = format!(
            "no snap store for {}; run `snap-undo hook install --agent {agent}` or `snap-undo init` there",
            root.display()
        );
        log::failure(None, agent, &event.name, &why);
        return None;
    };
    match save(ctx, root, agent, event, format) {
        Ok(context) => {
            log::success(&store);
            context
        }
        Err(e) => {
            log::failure(
                Some(&store),
                agent,
                &event.name,
                &crate::render::one_line(&e),
            );
            None
        }
    }
}

/// Most paths named to the model; the rest are counted.
const CONTEXT_PATHS: usize = 40;

/// What changed between the tree the agent last knew and the tree now saved: an undo, redo
/// or restore made outside its tool calls, or hand edits. The agent knew its session's
/// newest snapshot, or what the last prompt's context told it, if no snapshot came since.
fn changed_under_agent(
    ws: &Workspace,
    session: &str,
    newest: Option<Snapshot>,
    saved: Option<&Snapshot>,
) -> Result<Option<String>> {
    let (Some(newest), Some(now)) = (newest, ws.head()?) else {
        return Ok(None);
    };
    let known = match ws.told(session)? {
        Some(told) if told.snapshot == newest.id => told.tree,
        _ => newest.record.root,
    };
    if known == now.record.root {
        return Ok(None);
    }
    // This event's own snapshot, if it made one, is now the session's newest.
    let newest_now = saved.map_or(newest.id, |s| s.id);
    let told = Told {
        snapshot: newest_now,
        tree: now.record.root,
    };
    ws.set_told(session, told)?;
    // Only the directories whose trees differ are read: the agent changed a few files.
    let changes = ws.files_changed(&known, &now.record.root)?;
    let mut named: Vec<String> = changes
        .iter()
        .take(CONTEXT_PATHS)
        .map(|(path, change)| format!("{} ({})", crate::render::path_shown(path), change.as_str()))
        .collect();
    if changes.len() > CONTEXT_PATHS {
        named.push(format!("and {} more", changes.len() - CONTEXT_PATHS));
    }
    Ok(Some(format!(
        "snap: files in {} changed outside your tool calls since your last one (an undo, \
         redo or restore, or edits by hand). Read them again before relying on what you \
         remember of them: {}.",
        ws.root().display(),
        named.join(", ")
    )))
}

/// The newest snapshot of `session`, made before this event's save.
fn last_of_session(ws: &ReadOnlyWorkspace, session: &str) -> Result<Option<Snapshot>> {
    Ok(ws.newest_where(|r| r.session.as_deref() == Some(session))?)
}

fn save(
    ctx: &Ctx,
    root: &Path,
    agent: &str,
    event: &HookEvent,
    format: &PayloadFormat,
) -> Result<Option<String>> {
    let ws = Workspace::discover(root, ctx.store.as_deref())?;
    let wants_context = format.prompt_context && event.kind == EventKind::Prompt;
    let seen = match (&event.session, wants_context) {
        (Some(session), true) => last_of_session(&ws, session)?,
        _ => None,
    };
    let step = match event.session.as_deref() {
        Some(session) if event.kind == EventKind::Prompt => Some(ws.start_turn(session)?),
        Some(session) => Some(ws.turn(session)?),
        None => None,
    };
    let opts = SaveOptions {
        message: message(event),
        step,
        session: event.session.clone(),
        meta: meta(agent, event, ws.root()),
        allow_empty: false,
    };
    let out = ws.save(&opts)?;
    if let Some(e) = &out.upkeep_error {
        log::failure(
            Some(ws.store_dir()),
            agent,
            &event.name,
            &format!("saved, but merging small packs failed: {e}"),
        );
    }
    // No snapshot can bring these back: said on stderr, and to the agent with its context.
    crate::render::print_untracked_removed(&out.untracked_removed);
    let gone = crate::render::untracked_removed_lines(&out.untracked_removed);
    let saved = out.snapshot;
    let context = match &event.session {
        Some(session) if wants_context => changed_under_agent(&ws, session, seen, saved.as_ref())?,
        _ => None,
    };
    Ok(match (context, gone.is_empty() || !wants_context) {
        (context, true) => context,
        (Some(text), false) => Some(format!("{text}\n{}", gone.join("\n"))),
        (None, false) => Some(gone.join("\n")),
    })
}

/// The snapshot's message: what happened just before it.
fn message(event: &HookEvent) -> String {
    match (event.kind, &event.tool) {
        (EventKind::SessionStart, _) => "session start".into(),
        (EventKind::Prompt, _) => "before prompt".into(),
        (EventKind::ToolDone, Some(tool)) => format!("after {tool}"),
        (_, _) if event.name.is_empty() => "hook".into(),
        (_, _) => format!("at {}", event.name),
    }
}

/// `agent`, `hook` (what snap made of the event: `undo --turn` finds a turn's start by its
/// `prompt`), `event` and `tool`, then the agent's ids, then a `tool_path` for each file
/// the call names as written (a changed path's attribution), in that order.
fn meta(agent: &str, event: &HookEvent, root: &Path) -> Vec<(String, String)> {
    let mut meta = vec![
        ("agent".to_string(), agent.to_string()),
        ("hook".to_string(), event.kind.as_str().to_string()),
    ];
    if !event.name.is_empty() {
        meta.push(("event".into(), event.name.clone()));
    }
    if let Some(tool) = &event.tool {
        meta.push(("tool".into(), tool.clone()));
    }
    meta.extend(event.ids.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let named = (event.paths.iter()).filter_map(|p| workspace_relative(root, p));
    meta.extend(named.map(|p| (snap_tree::TOOL_PATH_KEY.to_string(), p)));
    meta
}

/// `path` (absolute, or relative to the root) as a workspace-relative path, if it lies in
/// the workspace and is not too long to keep: a path the call names outside it writes
/// nothing snap saves.
fn workspace_relative(root: &Path, path: &Path) -> Option<String> {
    let path = root.join(path);
    let mut out = PathBuf::new();
    for part in path.strip_prefix(root).ok()?.components() {
        match part {
            std::path::Component::Normal(name) => out.push(name),
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    let text = out.to_str()?.to_string();
    (!text.is_empty() && text.len() <= MAX_NAMED_PATH_BYTES).then_some(text)
}

/// The longest named path kept (a longer one is left out: its change is then `shared`).
const MAX_NAMED_PATH_BYTES: usize = 1024;

/// True when the command line asks for `snap hook` run by an agent: read by hand, for a
/// line clap refused (an unknown flag must still exit 0).
/// (`hook install` and `hook uninstall` are run by people, and report errors as usual.)
pub(crate) fn invoked() -> bool {
    let positionals: Vec<_> = {
        let mut args = std::env::args_os().skip(1);
        let mut out = Vec::new();
        while let Some(arg) = args.next() {
            if ["-C", "-w", "--dir", "--store", "--agent"]
                .iter()
                .any(|f| arg == *f)
            {
                args.next();
            } else if !arg.to_string_lossy().starts_with('-') {
                out.push(arg);
            }
        }
        out
    };
    positionals.first().is_some_and(|a| a == "hook")
        && !positionals
            .get(1)
            .is_some_and(|a| a == "install" || a == "uninstall")
}

#[cfg(test)]
mod tests;
