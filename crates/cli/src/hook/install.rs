//! `snap hook install|uninstall --agent A [--scope S]`: snap's entries merged into the
//! agent's own hook config, or removed from it, keeping every other key and hook.
//!
//! Install is idempotent (snap's entries are replaced, never doubled) and names the binary
//! by absolute path (`snap-undo`, never the `snap` that snapd also installs). It creates the
//! store if the project has none, and lists the agent's config directory in the store's
//! `exclude_paths`, so that no undo ever removes or rewrites the hook. A config that is not
//! plain JSON (comments, or not JSON at all) is left untouched, with one line saying why.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde_json::Value;
use snap_tree::{SaveOptions, Workspace};

use super::agent_config::{OURS_MARK, PLUGIN_MARK, apply, write_ours};
use crate::Ctx;
use crate::args::HookScope;

/// How an agent reads its hooks.
pub(super) enum Layout {
    /// `{"hooks": {EVENT: [{"matcher"?: M, "hooks": [HANDLER]}]}}` (Claude Code, Codex,
    /// Gemini CLI); `timeout` is the handler's timeout field and its value.
    Grouped {
        events: &'static [(&'static str, Option<&'static str>)],
        timeout: (&'static str, u64),
    },
    /// `{"version": 1, "hooks": {EVENT: [{"command": C}]}}` (Cursor).
    Flat { events: &'static [&'static str] },
    /// One executable per event, named after it, in a directory (Cline).
    Scripts { events: &'static [&'static str] },
    /// A plugin file of snap's own that calls the hook (opencode, whose hooks are
    /// in-process JavaScript).
    Plugin,
}

/// The tools whose calls can change files, for agents whose hooks take a matcher.
const CLAUDE_TOOLS: &str = "Edit|Write|MultiEdit|NotebookEdit|Bash|mcp__.*";
const GEMINI_TOOLS: &str = "write_file|replace|run_shell_command|mcp__.*";

/// Where an agent keeps its hooks, for one scope, and the directory to exclude.
pub(super) struct Target {
    /// The config file, or the scripts directory.
    pub(super) path: PathBuf,
    pub(super) layout: Layout,
    /// Workspace-relative directory of the agent's own files (project scopes only).
    exclude: Option<&'static str>,
}

fn target(agent: &str, scope: HookScope, root: &Path) -> Result<Target> {
    let home = || -> Result<PathBuf> {
        std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .context("HOME is not set, so the user scope has no config file")
    };
    let (dir, file) = match agent {
        "claude" => (
            ".claude",
            if scope == HookScope::Local {
                "settings.local.json"
            } else {
                "settings.json"
            },
        ),
        "codex" => (".codex", "hooks.json"),
        "gemini" => (".gemini", "settings.json"),
        "cursor" => (".cursor", "hooks.json"),
        "cline" => (".clinerules/hooks", ""),
        "opencode" => (".opencode", "plugins/snap-undo.js"),
        other => bail!(
            "unknown agent {other:?} (expected one of {})",
            super::AGENTS
        ),
    };
    let base = if scope == HookScope::User {
        home()?
    } else {
        root.to_path_buf()
    };
    let (dir, exclude) = match (agent, scope) {
        // Cline's user hooks live in its own documents directory.
        ("cline", HookScope::User) => (base.join("Documents/Cline/Hooks"), None),
        ("opencode", HookScope::User) => (base.join(".config/opencode"), None),
        (_, HookScope::User) => (base.join(dir), None),
        _ => (base.join(dir), Some(dir)),
    };
    let layout = match agent {
        "claude" => Layout::Grouped {
            events: &[
                ("SessionStart", None),
                ("UserPromptSubmit", None),
                ("PostToolUse", Some(CLAUDE_TOOLS)),
                ("PostToolUseFailure", Some(CLAUDE_TOOLS)),
            ],
            timeout: ("timeout", 30),
        },
        "codex" => Layout::Grouped {
            events: &[
                ("SessionStart", None),
                ("UserPromptSubmit", None),
                ("PostToolUse", None),
            ],
            timeout: ("timeout_sec", 30),
        },
        "gemini" => Layout::Grouped {
            events: &[
                ("SessionStart", None),
                ("BeforeAgent", None),
                ("AfterTool", Some(GEMINI_TOOLS)),
            ],
            timeout: ("timeout", 30_000),
        },
        "cursor" => Layout::Flat {
            events: &["beforeSubmitPrompt", "afterFileEdit", "afterShellExecution"],
        },
        "opencode" => Layout::Plugin,
        _ => Layout::Scripts {
            events: &["TaskStart", "TaskResume", "UserPromptSubmit", "PostToolUse"],
        },
    };
    let path = if file.is_empty() { dir } else { dir.join(file) };
    Ok(Target {
        path,
        layout,
        exclude,
    })
}

/// The scope used when none is given: Claude Code's local settings (an absolute path to one
/// person's binary does not belong in a shared file), the project's config for the others.
fn default_scope(agent: &str) -> HookScope {
    if agent == "claude" {
        HookScope::Local
    } else {
        HookScope::Project
    }
}

/// The command an agent runs: this binary as `snap-undo`, by absolute path.
fn hook_command(agent: &str) -> Result<String> {
    let exe = invoked_as().map_or_else(std::env::current_exe, Ok)?;
    let sibling = exe.with_file_name("snap-undo");
    let bin = if sibling.is_file() { sibling } else { exe };
    Ok(format!(
        "{} hook --agent {agent}",
        shell_quote(&bin.to_string_lossy())
    ))
}

/// The path this program was started by, links kept: a package manager's stable
/// `bin/snap-undo` link outlives the versioned file it points to today (which
/// `current_exe` would give), so hooks keep working after an upgrade.
fn invoked_as() -> Option<PathBuf> {
    let arg0 = PathBuf::from(std::env::args_os().next()?);
    if arg0.components().count() > 1 {
        return std::path::absolute(&arg0).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(&arg0))
        .find(|p| p.is_file())
        .and_then(|p| std::path::absolute(p).ok())
}

fn shell_quote(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// The inverse of [`shell_quote`].
pub(super) fn shell_unquote(s: &str) -> String {
    match s.strip_prefix('\'').and_then(|s| s.strip_suffix('\'')) {
        Some(inner) => inner.replace(r"'\''", "'"),
        None => s.to_string(),
    }
}

/// True for a command snap installed for `agent`: `<…/snap-undo, …/snap or this program>
/// hook --agent A`. A renamed binary installs its hook under its own name, and must find
/// it again to replace it (not add a second) and to uninstall it.
pub(super) fn is_ours(command: &str, agent: &str) -> bool {
    let Some((program, rest)) = command.trim().split_once(" hook --agent ") else {
        return false;
    };
    let name = shell_unquote(program)
        .rsplit('/')
        .next()
        .unwrap_or("")
        .to_string();
    let own = || own_name().is_some_and(|own| own == name);
    (name == "snap-undo" || name == "snap" || own()) && rest.trim() == agent
}

/// The file name of the program the hook command runs (see [`hook_command`]).
fn own_name() -> Option<&'static str> {
    static NAME: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let name = NAME.get_or_init(|| {
        let exe = invoked_as().or_else(|| std::env::current_exe().ok())?;
        Some(exe.file_name()?.to_string_lossy().into_owned())
    });
    name.as_deref()
}

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
}

/// Every agent, with the first scope (local, project, user) whose config holds snap's hook.
pub(crate) fn installed(root: &Path) -> Vec<HookPlace> {
    let agents = ["claude", "codex", "gemini", "cursor", "cline", "opencode"];
    agents
        .into_iter()
        .filter_map(|agent| place(agent, root))
        .collect()
}

fn place(agent: &'static str, root: &Path) -> Option<HookPlace> {
    let scopes = HookScope::all();
    let scopes = scopes
        .iter()
        .filter(|s| **s != HookScope::Local || agent == "claude");
    let mut found = scopes.filter_map(|scope| Some((*scope, target(agent, *scope, root).ok()?)));
    let found = found.find(|(_, t)| holds_ours(t, agent));
    let (scope, target) = match found {
        Some(found) => found,
        None => (
            default_scope(agent),
            target(agent, default_scope(agent), root).ok()?,
        ),
    };
    let commands = our_commands(&target, agent);
    Some(HookPlace {
        agent,
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

pub(crate) fn cmd_install(ctx: &Ctx, agent: &str, scope: Option<HookScope>) -> Result<()> {
    let scope = scope.unwrap_or_else(|| default_scope(agent));
    let command = hook_command(agent)?;
    // A store is created only where there is none: any other failure (a held lock, a bad
    // config) is reported, never answered with a second store in a subdirectory.
    let ws =
        match Workspace::discover(&ctx.start, ctx.store.as_deref()).map_err(anyhow::Error::from) {
            Ok(ws) => ws,
            Err(e) if crate::commands::is_missing_store(&e) => {
                Workspace::init(&ctx.start, ctx.store.as_deref(), false)
                    .context("cannot create the store for the hook")?
            }
            Err(e) => return Err(e),
        };
    let target = target(agent, scope, ws.root())?;
    // Before the hook is written, so that no undo ever removes it; taken back if the
    // agent's config refuses the hook.
    let excluded = match target.exclude {
        Some(dir) => snap_tree::add_exclude_path(ws.store().dir(), dir)?.then_some(dir),
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
        message: format!("baseline at hook install ({agent})"),
        ..SaveOptions::default()
    };
    let installed = ws
        .save(&baseline)
        .map_err(anyhow::Error::from)
        .and_then(|_| apply(&target, agent, Some(&command)));
    let changed = match installed {
        Ok(changed) => changed,
        Err(e) => {
            let undone = excluded.map(|dir| snap_tree::remove_exclude_path(ws.store().dir(), dir));
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

pub(crate) fn cmd_uninstall(ctx: &Ctx, agent: &str, scope: Option<HookScope>) -> Result<()> {
    let scope = scope.unwrap_or_else(|| default_scope(agent));
    let root = snap_tree::find_root(&ctx.start.canonicalize()?).unwrap_or(ctx.start.clone());
    let target = target(agent, scope, &root)?;
    let changed = apply(&target, agent, None)?;
    let what = target.path.display();
    say(
        ctx,
        &if changed {
            format!("removed the snap hook from {what}")
        } else {
            format!("no snap hook in {what}")
        },
    );
    if agent == "claude" {
        for (name, _) in super::commands::claude("") {
            remove_our_file(&commands_dir(&target).join(name))?;
        }
        // Directories install made, if nothing else is in them now.
        remove_if_empty(&commands_dir(&target));
        if let Some(dir) = target.path.parent().filter(|d| *d != root.as_path()) {
            remove_if_empty(dir);
        }
    }
    let still_hooked = HookScope::all().iter().any(|s| {
        self::target(agent, *s, &root).is_ok_and(|t| t.exclude.is_some() && holds_ours(&t, agent))
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

/// What the agent needs after an install: Codex's trust step, Claude's slash commands.
fn after_install(ctx: &Ctx, agent: &str, target: &Target, command: &str) -> Result<()> {
    match agent {
        "codex" => say(
            ctx,
            "Codex skips a new hook until you trust it: run /hooks in Codex and trust snap-undo's",
        ),
        "gemini" => say(
            ctx,
            "Gemini CLI runs hooks when tools.enableHooks is true (set in that file)",
        ),
        "claude" => {
            let bin = command.trim_end_matches(" hook --agent claude");
            for (name, text) in super::commands::claude(bin) {
                let path = commands_dir(target).join(name);
                if !write_ours(&path, &text)? {
                    say(
                        ctx,
                        &format!("{} is not snap's: left as it is", path.display()),
                    );
                }
            }
            say(
                ctx,
                "slash commands: /snap-undo (the last turn), /snap-redo, /snap-log",
            );
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn claude(dir: &Path) -> Target {
        target("claude", HookScope::Project, dir).unwrap()
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
        let t = target("gemini", HookScope::Project, dir.path()).unwrap();
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
        let t = target("cline", HookScope::Project, dir.path()).unwrap();
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
        let t = target("opencode", HookScope::Project, dir.path()).unwrap();
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
        let claude = target("claude", HookScope::Local, dir.path()).unwrap();
        let gone = "/nonexistent dir/snap-undo";
        let cmd = format!("{} hook --agent claude", shell_quote(gone));
        apply(&claude, "claude", Some(&cmd)).unwrap();
        let opencode = target("opencode", HookScope::Project, dir.path()).unwrap();
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

    #[test]
    fn only_snap_s_own_commands_count_as_ours() {
        assert!(is_ours("/a/b/snap-undo hook --agent claude", "claude"));
        assert!(is_ours("'/my dir/snap' hook --agent codex", "codex"));
        assert!(!is_ours("/a/snap-undo hook --agent codex", "claude"));
        assert!(!is_ours("/usr/bin/other hook --agent claude", "claude"));
        // A renamed binary's own hook, which it must replace (not double) and uninstall.
        let own = own_name().unwrap();
        let renamed = format!(
            "{} hook --agent claude",
            shell_quote(&format!("/x y/{own}"))
        );
        assert!(is_ours(&renamed, "claude"), "{renamed}");
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
