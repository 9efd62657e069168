//! `snap hook --agent A`: one save per agent hook event, with the agent's session, turn and
//! tool recorded, so that every tool call can be undone (docs/AGENTS.md).
//!
//! A hook never fails the agent: whatever happens it exits 0 and prints only what the agent
//! expects on stdout (nothing, or `{}`), never exit 2 (which some agents feed back to the
//! model). What went wrong goes to `.snap/hook.log` (and `snap status`), or, where there is
//! no store, to the user's state directory. One module per agent maps its payload to a
//! [`HookEvent`]; all of them end in the same save.

mod agent_config;
mod agents;
pub(crate) mod bounded;
mod claude;
mod cline;
mod codex;
mod commands;
mod cursor;
mod gemini;
pub(crate) mod install;
pub(crate) mod log;
mod opencode;

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;
use snap_tree::{SaveOptions, Snapshot, Told, Workspace};

use crate::Ctx;

/// At most this much of stdin is read (a tool's response can be large; snap needs only
/// the fields around it); the rest is drained, so the agent never blocks writing it.
const PAYLOAD_LIMIT: u64 = 32 << 20;

/// How long a hook waits for the store lock: Codex runs matching hooks at once, and the
/// next hook's save captures whatever this one could not.
const HOOK_LOCK_WAIT: Duration = Duration::from_secs(2);

/// What one hook event asks of snap, whatever agent sent it.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct HookEvent {
    pub kind: EventKind,
    /// The agent's name for the event (`PostToolUse`), kept as meta `event`.
    pub name: String,
    /// The agent's session (Claude's `session_id`, Cursor's `conversation_id`, ...).
    pub session: Option<String>,
    /// The directories to save: the agent's project directory, else those of the payload.
    pub roots: Vec<PathBuf>,
    pub tool: Option<String>,
    /// Ids the agent gives (`tool_use_id`, `prompt_id`, ...), kept as meta.
    pub ids: Vec<(&'static str, String)>,
}

/// The events snap tells apart; every one of them saves.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// A session begins or resumes: the baseline, so the first edit can be undone.
    SessionStart,
    /// The user sent a prompt: a new turn begins; edits made by hand since are saved.
    Prompt,
    /// A tool ran (or failed: a failed shell command may still have written files).
    ToolDone,
    /// Anything else (a turn ended, a subagent stopped, an event snap does not know).
    #[default]
    Other,
}

impl EventKind {
    /// The `hook` meta value of a snapshot saved for this event.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            EventKind::SessionStart => "session-start",
            EventKind::Prompt => PROMPT,
            EventKind::ToolDone => "tool",
            EventKind::Other => "other",
        }
    }
}

/// The `hook` meta value of a prompt's save: where a turn starts.
pub(crate) const PROMPT: &str = snap_tree::PROMPT_EVENT;

/// How one agent's payloads read; each agent module has one.
#[derive(Debug)]
pub(crate) struct PayloadFormat {
    /// The key of the event's name.
    pub event_key: &'static str,
    /// Event names and what they are; names not listed are [`EventKind::Other`].
    pub kinds: &'static [(&'static str, EventKind)],
    pub session_key: &'static str,
    /// The environment variable naming the project root, tried before the payload.
    pub root_env: Option<&'static str>,
    /// Payload keys holding a root (a string) or roots (an array of strings), in order.
    pub root_keys: &'static [&'static str],
    /// The tool that ran, for a [`EventKind::ToolDone`] event.
    pub tool: fn(&Value, &str) -> Option<String>,
    pub id_keys: &'static [&'static str],
    /// What the agent wants on stdout after the hook, by event name (nothing, or JSON).
    pub reply: fn(&str) -> &'static str,
    /// The agent takes context for the model from a prompt event's reply (Claude Code's
    /// `additionalContext`): snap then names the files that changed outside its tool calls.
    pub prompt_context: bool,
}

impl PayloadFormat {
    /// The event a payload describes, each field it records capped (`bounded.rs`); missing
    /// fields are left empty, never an error.
    pub(crate) fn event(&self, payload: &Value) -> HookEvent {
        let name = text(payload, self.event_key).unwrap_or_default();
        let kind = self
            .kinds
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(EventKind::Other, |(_, k)| *k);
        let ids = self
            .id_keys
            .iter()
            .filter_map(|key| Some((*key, text(payload, key)?)))
            .collect();
        bounded::bounded(HookEvent {
            kind,
            tool: (self.tool)(payload, &name),
            session: text(payload, self.session_key),
            roots: self.roots(payload),
            ids,
            name,
        })
    }

    fn roots(&self, payload: &Value) -> Vec<PathBuf> {
        let from_env = self
            .root_env
            .and_then(std::env::var_os)
            .filter(|v| !v.is_empty());
        if let Some(dir) = from_env {
            return vec![PathBuf::from(dir)];
        }
        let mut from_payload = self.root_keys.iter().map(|key| match &payload[*key] {
            Value::String(dir) => vec![PathBuf::from(dir)],
            Value::Array(dirs) => dirs
                .iter()
                .filter_map(Value::as_str)
                .map(PathBuf::from)
                .collect(),
            _ => Vec::new(),
        });
        from_payload
            .find(|dirs| !dirs.is_empty())
            .unwrap_or_default()
    }
}

/// A non-empty string field of the payload.
pub(crate) fn text(payload: &Value, key: &str) -> Option<String> {
    match &payload[key] {
        Value::String(s) if !s.is_empty() => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The payload format of `agent`, by the name `--agent` takes.
pub(crate) fn format_of(agent: &str) -> Option<&'static PayloadFormat> {
    match agent {
        "claude" => Some(&claude::FORMAT),
        "codex" => Some(&codex::FORMAT),
        "gemini" => Some(&gemini::FORMAT),
        "cursor" => Some(&cursor::FORMAT),
        "cline" => Some(&cline::FORMAT),
        "opencode" => Some(&opencode::FORMAT),
        _ => None,
    }
}

/// The agents `--agent` knows, for messages.
pub(crate) const AGENTS: &str = "claude, codex, gemini, cursor, cline, opencode";

/// Runs the hook; every failure is logged, never returned (see the module doc).
pub(crate) fn cmd_hook(ctx: &Ctx, agent: &str) -> Result<()> {
    snap_tree::cap_lock_wait(HOOK_LOCK_WAIT);
    // Read first, whatever happens next: an agent writing a large payload must never block
    // on, or see EPIPE from, a hook that stopped reading.
    let payload = read_payload();
    let Some(format) = format_of(agent) else {
        let why = format!("unknown agent {agent:?} (expected one of {AGENTS})");
        log::failure(None, agent, "", &why);
        return Ok(());
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
            log::failure(Some(&store), agent, &event.name, &crate::exit::one_line(&e));
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
fn last_of_session(ws: &Workspace, session: &str) -> Result<Option<Snapshot>> {
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
        meta: meta(agent, event),
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
/// `prompt`), `event` and `tool`, then the agent's ids, in that order.
fn meta(agent: &str, event: &HookEvent) -> Vec<(String, String)> {
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
    meta
}

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
