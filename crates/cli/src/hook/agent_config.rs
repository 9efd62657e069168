//! An agent's hook config rewritten: snap's entries merged into or removed from a JSON
//! config (keeping every other key and hook), Cline's per-event scripts, and opencode's
//! plugin file. A file snap did not write is never replaced or removed, and every file is
//! written atomically (a temporary file, synced, renamed).

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

use super::agents::{Layout, OURS_MARK, PLUGIN_MARK, Target, is_ours, shell_unquote};

/// opencode's plugin, with `__SNAP_UNDO__` standing for the binary's path (a JS string).
const OPENCODE_PLUGIN: &str = include_str!("opencode_plugin.js");

/// Installs (`command` given) or removes snap's entries; true when the config changed.
pub(super) fn apply(target: &Target, agent: &str, command: Option<&str>) -> Result<bool> {
    match &target.layout {
        Layout::Scripts { events } => return apply_scripts(&target.path, events, agent, command),
        Layout::Plugin => return apply_plugin(&target.path, command),
        Layout::Grouped { .. } | Layout::Flat { .. } => {}
    }
    let path = &target.path;
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let mut config: Value = if text.trim().is_empty() {
        json!({})
    } else {
        serde_json::from_str(&text).map_err(|e| not_plain_json(path, &text, e))?
    };
    let Some(root) = config.as_object_mut() else {
        bail!("{} is not a JSON object; left untouched", path.display());
    };
    if let Some(key) = command.and_then(|_| misshapen(root, &target.layout)) {
        bail!(
            "{}: {key} is not what the agent reads there (an object of events, each a list); left untouched",
            path.display()
        );
    }
    let before = root.clone();
    remove_ours(root, agent);
    if let Some(command) = command {
        add_ours(root, &target.layout, command);
    }
    if *root == before {
        return Ok(false);
    }
    if command.is_none() && root.is_empty() {
        // Nothing but snap's hooks was in it: no `{}` is left behind.
        std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
        return Ok(true);
    }
    let text = serde_json::to_string_pretty(&config)? + "\n";
    write_atomically(path, &text)?;
    Ok(true)
}

fn not_plain_json(path: &Path, text: &str, e: serde_json::Error) -> anyhow::Error {
    let has_comments =
        text.lines().any(|l| l.trim_start().starts_with("//")) || text.contains("/*");
    if has_comments {
        anyhow::anyhow!(
            "{} has comments, which rewriting it would drop; left untouched (add the hook by hand: docs/AGENTS.md)",
            path.display()
        )
    } else {
        anyhow::anyhow!("{} is not valid JSON ({e}); left untouched", path.display())
    }
}

/// The first key snap would merge into that holds something else: `"hooks"` when it is not
/// an object, or an event snap adds to that is not a list. Merging would drop or skip it.
fn misshapen(root: &Map<String, Value>, layout: &Layout) -> Option<String> {
    let events: Vec<&str> = match layout {
        Layout::Grouped { events, .. } => events.iter().map(|(e, _)| *e).collect(),
        Layout::Flat { events } => events.to_vec(),
        Layout::Scripts { .. } | Layout::Plugin => Vec::new(),
    };
    match root.get("hooks") {
        None => None,
        Some(Value::Object(hooks)) => events
            .into_iter()
            .find(|e| hooks.get(*e).is_some_and(|v| !v.is_array()))
            .map(|e| format!("\"hooks\".\"{e}\"")),
        Some(_) => Some("\"hooks\"".to_string()),
    }
}

/// Drops snap's handlers for `agent`, then groups and events left empty.
fn remove_ours(root: &mut Map<String, Value>, agent: &str) {
    let Some(Value::Object(hooks)) = root.get_mut("hooks") else {
        return;
    };
    for groups in hooks.values_mut() {
        let Value::Array(groups) = groups else {
            continue;
        };
        groups.retain_mut(|group| {
            if group["command"].as_str().is_some_and(|c| is_ours(c, agent)) {
                return false;
            }
            if let Some(Value::Array(handlers)) = group.get_mut("hooks") {
                let before = handlers.len();
                handlers.retain(|h| !h["command"].as_str().is_some_and(|c| is_ours(c, agent)));
                return !(handlers.is_empty() && before > 0);
            }
            true
        });
    }
    hooks.retain(|_, groups| !groups.as_array().is_some_and(Vec::is_empty));
    if hooks.is_empty() {
        root.remove("hooks");
    }
}

fn add_ours(root: &mut Map<String, Value>, layout: &Layout, command: &str) {
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    let Value::Object(hooks) = hooks else { return };
    let mut push = |event: &str, group: Value| {
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
        if let Value::Array(groups) = groups {
            groups.push(group);
        }
    };
    match layout {
        Layout::Grouped {
            events,
            timeout: (key, secs),
        } => {
            for (event, matcher) in *events {
                let mut handler = json!({"type": "command", "command": command});
                handler[*key] = json!(secs);
                let mut group = json!({"hooks": [handler]});
                if let Some(m) = matcher {
                    group["matcher"] = json!(m);
                }
                push(event, group);
            }
        }
        Layout::Flat { events } => {
            for event in *events {
                push(event, json!({"command": command}));
            }
        }
        Layout::Scripts { .. } | Layout::Plugin => {}
    }
    if matches!(layout, Layout::Flat { .. }) {
        root.entry("version").or_insert(json!(1));
    }
    if matches!(
        layout,
        Layout::Grouped {
            timeout: ("timeout", 30_000),
            ..
        }
    ) {
        let tools = root.entry("tools").or_insert_with(|| json!({}));
        // Only when the user has not said: an explicit false is theirs to change.
        if let Value::Object(tools) = tools {
            tools.entry("enableHooks").or_insert(json!(true));
        }
    }
}

/// Cline: one script per event. A script snap did not write is never replaced or removed.
fn apply_scripts(dir: &Path, events: &[&str], agent: &str, command: Option<&str>) -> Result<bool> {
    let mut changed = false;
    for event in events {
        let path = dir.join(event);
        let existing = std::fs::read_to_string(&path).ok();
        let ours = existing.as_deref().is_some_and(|t| {
            t.lines()
                .any(|l| is_ours(l.trim_start_matches("exec "), agent))
        });
        if existing.is_some() && !ours && command.is_some() {
            bail!(
                "{} exists and is not snap's; left untouched",
                path.display()
            );
        }
        match command {
            Some(command) => {
                let script = format!(
                    "#!/bin/sh\n# Saves a snap snapshot for Cline's {event} hook.\nexec {command}\n"
                );
                if existing.as_deref() != Some(script.as_str()) {
                    write_atomically(&path, &script)?;
                    set_executable(&path)?;
                    changed = true;
                }
            }
            None if ours => {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
                changed = true;
            }
            None => {}
        }
    }
    Ok(changed)
}

/// opencode: snap's plugin file, written with the binary's path, or removed. A file of that
/// name snap did not write is never replaced or removed.
fn apply_plugin(path: &Path, command: Option<&str>) -> Result<bool> {
    let existing = std::fs::read_to_string(path).ok();
    let ours = existing
        .as_deref()
        .is_some_and(|t| t.starts_with(PLUGIN_MARK));
    match command {
        Some(_) if existing.is_some() && !ours => {
            bail!(
                "{} exists and is not snap's; left untouched",
                path.display()
            )
        }
        Some(command) => {
            let bin = shell_unquote(command.trim_end_matches(" hook --agent opencode"));
            let plugin = OPENCODE_PLUGIN.replace("__SNAP_UNDO__", &serde_json::to_string(&bin)?);
            let changed = existing.as_deref() != Some(plugin.as_str());
            if changed {
                write_atomically(path, &plugin)?;
            }
            Ok(changed)
        }
        None if ours => {
            std::fs::remove_file(path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            Ok(true)
        }
        None => Ok(false),
    }
}

fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// Writes `text` to `path` (creating its directory) through a temporary file and a rename,
/// so that an agent never reads half a config.
/// The temporary file is synced before the rename, so a crash leaves the old config or the
/// new one, never an empty file; it keeps the old file's permission bits; and a config that
/// is a symlink (a dotfiles setup) has its target rewritten, the link kept.
fn write_atomically(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let path = &std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let dir = path.parent().context("a config path has a directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())?;
    let mode = std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777);
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))?;
    tmp.as_file().sync_all()?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    std::fs::File::open(dir)?.sync_all()?;
    Ok(())
}

/// Writes a file snap owns (a slash command), replacing an older version of it; false, and
/// nothing written, when a file of that name is someone else's.
pub(super) fn write_ours(path: &Path, text: &str) -> Result<bool> {
    match std::fs::read_to_string(path) {
        Ok(old) if old == text => Ok(true),
        Ok(old) if !old.contains(OURS_MARK) => Ok(false),
        _ => write_atomically(path, text).map(|()| true),
    }
}
