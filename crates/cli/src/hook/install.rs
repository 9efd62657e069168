//! `snap hook install|uninstall --agent A [--scope S]`: snap's entries merged into the
//! agent's own hook config, or removed from it, keeping every other key and hook.
//!
//! Install is idempotent (snap's entries are replaced, never doubled) and names the binary
//! by absolute path (`snap-undo`, never the `snap` that snapd also installs). It creates the
//! store if the project has none, and lists the agent's config directory in the store's
//! `exclude_paths`, so that no undo ever removes or rewrites the hook. A config that is not
//! plain JSON (comments, or not JSON at all) is left untouched, with one line saying why.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde_json::Value;
use snap_tree::{SaveOptions, Workspace};

use super::agent_config::{apply, write_ours};
use super::agents::{
    Agent, HookScope, Layout, OURS_MARK, PLUGIN_MARK, Target, hook_command, is_ours, shell_quote,
    shell_unquote,
};
use super::known;
use crate::ctx::Ctx;

/// Where snap's hook for one agent is installed, for `snap doctor`.
#[derive(Debug)]
pub(crate) struct HookPlace {
    pub agent: &'static str,
    /// The scope it was found in, or the default scope when it is not installed.
    pub scope: HookScope,
    pub path: PathBuf,
    pub installed: bool,
    /// The binary the installed hook runs (a hook whose binary is gone fails silently in
    /// the agent, with nothing in snap's log).
    pub binary: Option<PathBuf>,
    /// What `snap doctor` reminds of beside it (the agent's [`super::agents::Extras`]).
    pub reminder: Option<&'static str>,
}

/// Every agent, with the first scope (local, project, user) whose config holds snap's hook.
pub(crate) fn installed(root: &Path) -> Vec<HookPlace> {
    (known::ALL.into_iter())
        .filter_map(|agent| place(agent, root))
        .collect()
}

fn place(agent: &'static Agent, root: &Path) -> Option<HookPlace> {
    let mut found =
        (agent.scopes()).filter_map(|scope| Some((scope, agent.target(scope, root).ok()?)));
    let found = found.find(|(_, t)| holds_ours(t, agent.name));
    let (scope, target) = match found {
        Some(found) => found,
        None => {
            let scope = agent.default_scope();
            (scope, agent.target(scope, root).ok()?)
        }
    };
    let commands = our_commands(&target, agent.name);
    Some(HookPlace {
        agent: agent.name,
        reminder: agent.extras.reminder,
        scope,
        installed: !commands.is_empty(),
        binary: commands.first().map(|c| command_binary(c)),
        path: target.path,
    })
}

/// True when `target` holds a hook snap installed for `agent`.
fn holds_ours(target: &Target, agent: &str) -> bool {
    !our_commands(target, agent).is_empty()
}

/// The commands of snap's hooks for `agent` in `target` (for opencode, its plugin's binary
/// as a command).
fn our_commands(target: &Target, agent: &str) -> Vec<String> {
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_default();
    match &target.layout {
        Layout::Scripts { events } => events
            .iter()
            .flat_map(|event| {
                let text = read(&target.path.join(event));
                let lines: Vec<String> = text
                    .lines()
                    .map(|l| l.trim_start_matches("exec ").to_string())
                    .collect();
                lines
            })
            .filter(|l| is_ours(l, agent))
            .collect(),
        Layout::Plugin => {
            let text = read(&target.path);
            let bin = text
                .lines()
                .find_map(|l| l.strip_prefix("const SNAP_UNDO = ")?.strip_suffix(';'))
                .and_then(|js| serde_json::from_str::<String>(js).ok());
            match bin {
                Some(bin) if text.starts_with(PLUGIN_MARK) => {
                    vec![format!("{} hook --agent {agent}", shell_quote(&bin))]
                }
                _ => Vec::new(),
            }
        }
        Layout::Grouped { .. } | Layout::Flat { .. } => {
            serde_json::from_str::<Value>(&read(&target.path))
                .map(|v| {
                    commands_in(&v)
                        .filter(|c| is_ours(c, agent))
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        }
    }
}

/// The binary a hook command runs.
fn command_binary(command: &str) -> PathBuf {
    let program = command
        .split_once(" hook --agent ")
        .map_or(command, |(p, _)| p);
    PathBuf::from(shell_unquote(program.trim()))
}

/// Every `command` string anywhere in a JSON config.
fn commands_in(v: &Value) -> Box<dyn Iterator<Item = &str> + '_> {
    match v {
        Value::Object(map) => Box::new(map.iter().flat_map(|(k, v)| {
            let own = (k == "command").then(|| v.as_str()).flatten();
            own.into_iter().chain(commands_in(v))
        })),
        Value::Array(items) => Box::new(items.iter().flat_map(commands_in)),
        _ => Box::new(std::iter::empty()),
    }
}

pub(crate) fn cmd_install(ctx: &Ctx, name: &str, scope: Option<HookScope>) -> Result<()> {
    let agent = known::agent(name)?;
    let scope = scope.unwrap_or_else(|| agent.default_scope());
    let command = hook_command(agent.name)?;
    // A store is created only where there is none: any other failure (a held lock, a bad
    // config) is reported, never answered with a second store in a subdirectory.
    let ws =
        match Workspace::discover(&ctx.start, ctx.store.as_deref()).map_err(anyhow::Error::from) {
            Ok(ws) => ws,
            Err(e) if crate::open::is_missing_store(&e) => {
                Workspace::init(&ctx.start, ctx.store.as_deref(), false)
                    .context("cannot create the store for the hook")?
            }
            Err(e) => return Err(e),
        };
    let target = agent.target(scope, ws.root())?;
    // Before the hook is written, so that no undo ever removes it; taken back if the
    // agent's config refuses the hook.
    let excluded = match target.exclude {
        Some(dir) => snap_tree::add_exclude_path(ws.store_dir(), dir)?.then_some(dir),
        None => None,
    };
    if let Some(dir) = excluded {
        say(
            ctx,
            &format!("excluded {dir}/ from snapshots and moves (.snap/config.toml)"),
        );
    }
    // A baseline, so that the first edit is undoable even before the agent next starts a
    // session (the hook fires from the next event on).
    let baseline = SaveOptions {
        message: format!("baseline at hook install ({name})"),
        ..SaveOptions::default()
    };
    let installed = ws
        .save(&baseline)
        .map_err(anyhow::Error::from)
        .and_then(|_| apply(&target, name, Some(&command)));
    let changed = match installed {
        Ok(changed) => changed,
        Err(e) => {
            let undone = excluded.map(|dir| snap_tree::remove_exclude_path(ws.store_dir(), dir));
            if let Some(Err(undo)) = undone {
                eprintln!("warning: could not take back the exclude_paths entry: {undo}");
            }
            return Err(e);
        }
    };
    let what = target.path.display();
    say(
        ctx,
        &if changed {
            format!("installed the snap hook in {what}")
        } else {
            format!("the snap hook is already in {what}")
        },
    );
    if let Some(bin) = std::env::current_exe().ok().filter(|b| is_build_output(b)) {
        eprintln!(
            "warning: the hook runs {}, a cargo build output: `cargo clean` deletes it and every \
             hook call then fails; install snap-undo (cargo install --path crates/cli) and run \
             hook install again",
            bin.display()
        );
    }
    after_install(ctx, agent, &target, &command)
}

/// True when `bin` lies in a cargo build directory (`.../target/<profile>/`), which
/// `cargo clean` deletes.
pub(crate) fn is_build_output(bin: &Path) -> bool {
    let profile_dir = bin.parent();
    let target = profile_dir.and_then(Path::parent);
    target
        .and_then(Path::file_name)
        .is_some_and(|n| n == "target")
}

pub(crate) fn cmd_uninstall(ctx: &Ctx, name: &str, scope: Option<HookScope>) -> Result<()> {
    let agent = known::agent(name)?;
    let scope = scope.unwrap_or_else(|| agent.default_scope());
    let root = snap_tree::find_root(&ctx.start.canonicalize()?).unwrap_or(ctx.start.clone());
    let target = agent.target(scope, &root)?;
    let changed = apply(&target, name, None)?;
    let what = target.path.display();
    say(
        ctx,
        &if changed {
            format!("removed the snap hook from {what}")
        } else {
            format!("no snap hook in {what}")
        },
    );
    if let Some(commands) = agent.extras.slash_commands {
        for (file, _) in commands("") {
            remove_our_file(&commands_dir(&target).join(file))?;
        }
        // Directories install made, if nothing else is in them now.
        remove_if_empty(&commands_dir(&target));
        if let Some(dir) = target.path.parent().filter(|d| *d != root.as_path()) {
            remove_if_empty(dir);
        }
    }
    let still_hooked = HookScope::all().iter().any(|s| {
        (agent.target(*s, &root)).is_ok_and(|t| t.exclude.is_some() && holds_ours(&t, name))
    });
    let store = ctx
        .store
        .clone()
        .unwrap_or_else(|| root.join(snap_tree::STORE_DIR));
    if let (Some(dir), false, true) = (target.exclude, still_hooked, store.is_dir())
        && snap_tree::remove_exclude_path(&store, dir)?
    {
        say(
            ctx,
            &format!("{dir}/ is snapshotted again (.snap/config.toml)"),
        );
    }
    Ok(())
}

/// Where Claude Code's slash commands of this scope live: beside its settings file.
fn commands_dir(target: &Target) -> PathBuf {
    let dir = target.path.parent().unwrap_or(&target.path);
    dir.join("commands")
}

/// Removes directory `dir` if it is empty (anything in it, or any failure, leaves it).
fn remove_if_empty(dir: &Path) {
    let _ = std::fs::remove_dir(dir);
}

/// Removes a file snap wrote (it carries [`OURS_MARK`]); any other file is left.
fn remove_our_file(path: &Path) -> Result<()> {
    let ours = std::fs::read_to_string(path).is_ok_and(|t| t.contains(OURS_MARK));
    if ours {
        std::fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}

fn say(ctx: &Ctx, line: &str) {
    if !ctx.quiet {
        println!("{line}");
    }
}

/// What the agent needs after an install (its [`super::agents::Extras`]): a note, slash commands.
fn after_install(ctx: &Ctx, agent: &Agent, target: &Target, command: &str) -> Result<()> {
    if let Some(commands) = agent.extras.slash_commands {
        let bin = command.trim_end_matches(&format!(" hook --agent {}", agent.name));
        for (file, text) in commands(bin) {
            let path = commands_dir(target).join(file);
            if !write_ours(&path, &text)? {
                say(
                    ctx,
                    &format!("{} is not snap's: left as it is", path.display()),
                );
            }
        }
    }
    if let Some(note) = agent.extras.note {
        say(ctx, note);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn target_of(agent: &str, scope: HookScope, root: &Path) -> Result<Target> {
        known::agent(agent)?.target(scope, root)
    }

    fn claude(dir: &Path) -> Target {
        target_of("claude", HookScope::Project, dir).unwrap()
    }

    #[test]
    fn install_keeps_other_hooks_is_idempotent_and_uninstall_removes_exactly_snap_s() {
        let dir = tempfile::tempdir().unwrap();
        let t = claude(dir.path());
        let theirs = json!({"model": "opus", "hooks": {"PostToolUse": [
            {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/bin/lint"}]}]}});
        std::fs::create_dir_all(t.path.parent().unwrap()).unwrap();
        std::fs::write(&t.path, theirs.to_string()).unwrap();
        let cmd = "/opt/bin/snap-undo hook --agent claude";
        assert!(apply(&t, "claude", Some(cmd)).unwrap());
        let once = std::fs::read_to_string(&t.path).unwrap();
        assert!(!apply(&t, "claude", Some(cmd)).unwrap(), "twice is once");
        assert_eq!(std::fs::read_to_string(&t.path).unwrap(), once);
        let v: Value = serde_json::from_str(&once).unwrap();
        assert_eq!(v["model"], "opus");
        assert_eq!(v["hooks"]["PostToolUse"].as_array().unwrap().len(), 2);
        assert_eq!(v["hooks"]["SessionStart"][0]["hooks"][0]["command"], cmd);
        assert!(apply(&t, "claude", None).unwrap());
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&t.path).unwrap()).unwrap();
        assert_eq!(back, theirs);
    }

    #[test]
    fn a_config_with_comments_or_broken_json_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let t = target_of("gemini", HookScope::Project, dir.path()).unwrap();
        std::fs::create_dir_all(t.path.parent().unwrap()).unwrap();
        for text in ["// mine\n{\"a\": 1}\n", "{\"a\": "] {
            std::fs::write(&t.path, text).unwrap();
            let err = apply(&t, "gemini", Some("snap-undo hook --agent gemini")).unwrap_err();
            assert!(err.to_string().contains("left untouched"), "{err}");
            assert_eq!(std::fs::read_to_string(&t.path).unwrap(), text);
        }
    }

    #[test]
    fn cline_scripts_are_written_once_and_only_snap_s_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let t = target_of("cline", HookScope::Project, dir.path()).unwrap();
        let cmd = "/x/snap-undo hook --agent cline";
        assert!(apply(&t, "cline", Some(cmd)).unwrap());
        assert!(!apply(&t, "cline", Some(cmd)).unwrap());
        assert!(t.path.join("PostToolUse").is_file());
        assert!(apply(&t, "cline", None).unwrap());
        assert!(!t.path.join("PostToolUse").exists());
        std::fs::write(t.path.join("TaskStart"), "#!/bin/sh\necho mine\n").unwrap();
        assert!(apply(&t, "cline", Some(cmd)).is_err());
        assert!(apply(&t, "cline", None).is_ok());
        assert!(t.path.join("TaskStart").is_file(), "not snap's: kept");
    }

    #[test]
    fn the_opencode_plugin_names_the_binary_as_a_js_string_and_is_removed_only_if_ours() {
        let dir = tempfile::tempdir().unwrap();
        let t = target_of("opencode", HookScope::Project, dir.path()).unwrap();
        let bin = "/opt/it's here/snap-undo";
        let cmd = format!("{} hook --agent opencode", shell_quote(bin));
        assert!(apply(&t, "opencode", Some(&cmd)).unwrap());
        assert!(!apply(&t, "opencode", Some(&cmd)).unwrap());
        let js = std::fs::read_to_string(&t.path).unwrap();
        assert!(
            js.contains(r#"const SNAP_UNDO = "/opt/it's here/snap-undo";"#),
            "{js}"
        );
        assert!(apply(&t, "opencode", None).unwrap());
        std::fs::write(&t.path, "export const Mine = 1;\n").unwrap();
        assert!(apply(&t, "opencode", Some(&cmd)).is_err());
        assert!(!apply(&t, "opencode", None).unwrap());
        assert!(t.path.exists());
    }

    #[test]
    fn doctor_learns_which_binary_each_installed_hook_runs() {
        let dir = tempfile::tempdir().unwrap();
        let claude = target_of("claude", HookScope::Local, dir.path()).unwrap();
        let gone = "/nonexistent dir/snap-undo";
        let cmd = format!("{} hook --agent claude", shell_quote(gone));
        apply(&claude, "claude", Some(&cmd)).unwrap();
        let opencode = target_of("opencode", HookScope::Project, dir.path()).unwrap();
        let cmd = format!("{} hook --agent opencode", shell_quote("/opt/snap-undo"));
        apply(&opencode, "opencode", Some(&cmd)).unwrap();
        let places = installed(dir.path());
        let binary = |agent: &str| {
            let place = places.iter().find(|p| p.agent == agent).unwrap();
            (place.installed, place.binary.clone())
        };
        assert_eq!(binary("claude"), (true, Some(PathBuf::from(gone))));
        assert_eq!(
            binary("opencode"),
            (true, Some(PathBuf::from("/opt/snap-undo")))
        );
        assert_eq!(binary("codex"), (false, None));
    }

    /// A `"hooks"` that is not an object, or an event snap adds to that is not a list, is
    /// refused and left as it is: merging once dropped the one and skipped the other while
    /// install said it had installed the hook.
    #[test]
    fn a_config_whose_hooks_have_another_shape_is_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let t = claude(dir.path());
        std::fs::create_dir_all(t.path.parent().unwrap()).unwrap();
        for text in [r#"{"hooks": 5}"#, r#"{"hooks": {"PostToolUse": 7}}"#] {
            std::fs::write(&t.path, text).unwrap();
            let err = apply(&t, "claude", Some("/x/snap-undo hook --agent claude")).unwrap_err();
            assert!(err.to_string().contains("left untouched"), "{err}");
            assert_eq!(std::fs::read_to_string(&t.path).unwrap(), text);
        }
        let other = r#"{"hooks": {"Notification": 7}}"#;
        std::fs::write(&t.path, other).unwrap();
        assert!(apply(&t, "claude", Some("/x/snap-undo hook --agent claude")).unwrap());
    }
}

#[derive(Debug, clap::Args)]
pub struct HookInstallArgs {
    /// claude, codex, gemini, cursor, cline or opencode.
    #[arg(long, value_name = "AGENT")]
    pub agent: String,
    /// Where the config goes: local (Claude Code's settings.local.json, the default for
    /// claude), project (the default for the others) or user (your home directory).
    #[arg(long, value_enum)]
    pub scope: Option<HookScope>,
}
