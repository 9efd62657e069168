//! What each agent is, as snap installs into it: where its hooks live for a scope (the
//! [`Target`]: a file or a directory, its [`Layout`], the directory to exclude), the scope
//! used when none is given, the command its hook runs, and how snap recognises its own
//! entries (the command's shape, the marks on the files it writes). Installing, editing an
//! agent's config and writing its slash commands all read this; it reads none of them.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::payload::PayloadFormat;

/// First line of every file snap writes whole into an agent's directory (slash commands).
pub(super) const OURS_MARK: &str = "<!-- written by snap-undo hook install -->";
/// First line of the opencode plugin snap writes.
pub(super) const PLUGIN_MARK: &str = "// snap-undo's opencode plugin";

/// How an agent reads its hooks.
#[derive(Clone, Copy)]
pub(crate) enum Layout {
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

/// Where an agent keeps its hooks, for one scope, and the directory to exclude.
pub(crate) struct Target {
    /// The config file, or the scripts directory.
    pub(super) path: PathBuf,
    pub(super) layout: Layout,
    /// Workspace-relative directory of the agent's own files (project scopes only).
    pub(super) exclude: Option<&'static str>,
}

/// One agent as snap knows it: the one definition (in the agent's own file) that reading
/// its hooks' payloads, installing them and listing them all read.
pub(crate) struct Agent {
    /// The name `--agent` takes.
    pub(crate) name: &'static str,
    /// How its hook payloads read.
    pub(crate) payload: PayloadFormat,
    /// Where its hooks live.
    pub(crate) home: Home,
    /// How its config holds them.
    pub(crate) layout: Layout,
    /// What an install says or writes beside the hook.
    pub(crate) extras: Extras,
}

/// Where an agent keeps its hooks.
pub(crate) struct Home {
    /// Its directory in a project, and in the home directory unless `user_dir` says.
    pub(crate) dir: &'static str,
    /// The config file in it (empty: the directory itself holds the hooks).
    pub(crate) file: &'static str,
    /// The config file of the local scope, for the agent that has one (Claude Code's
    /// personal settings beside the shared ones); it is then the default scope.
    pub(crate) local_file: Option<&'static str>,
    /// Its directory under `$HOME` for the user scope, where that is not `dir`.
    pub(crate) user_dir: Option<&'static str>,
}

/// The slash command files for a binary: (file name, text) each.
pub(crate) type SlashCommands = fn(&str) -> Vec<(&'static str, String)>;

/// What an install adds for an agent beside its hook.
pub(crate) struct Extras {
    /// A line the user needs after installing (a trust step, a setting).
    pub(crate) note: Option<&'static str>,
    /// What `snap doctor` reminds of beside an installed hook.
    pub(crate) reminder: Option<&'static str>,
    /// Slash commands written beside the config, for the binary given: (file name, text).
    pub(crate) slash_commands: Option<SlashCommands>,
}

impl Agent {
    /// The scopes this agent has, narrowest first.
    pub(crate) fn scopes(&self) -> impl Iterator<Item = HookScope> + '_ {
        let local = self.home.local_file.is_some();
        (HookScope::all().into_iter()).filter(move |s| *s != HookScope::Local || local)
    }

    /// The scope used when none is given: the local settings where the agent has them (an
    /// absolute path to one person's binary does not belong in a shared file), else the
    /// project's config.
    pub(crate) fn default_scope(&self) -> HookScope {
        match self.home.local_file {
            Some(_) => HookScope::Local,
            None => HookScope::Project,
        }
    }

    /// Where this agent keeps its hooks for `scope`, in the workspace at `root`.
    pub(crate) fn target(&self, scope: HookScope, root: &Path) -> Result<Target> {
        let home = self.home.user_dir;
        let (dir, exclude) = match scope {
            HookScope::User => (home_dir()?.join(home.unwrap_or(self.home.dir)), None),
            _ => (root.join(self.home.dir), Some(self.home.dir)),
        };
        let file = match (scope, self.home.local_file) {
            (HookScope::Local, Some(local)) => local,
            _ => self.home.file,
        };
        let path = if file.is_empty() { dir } else { dir.join(file) };
        Ok(Target {
            path,
            layout: self.layout,
            exclude,
        })
    }
}

/// The user's home directory, for the user scope.
fn home_dir() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .context("HOME is not set, so the user scope has no config file")
}

/// The command an agent runs: this binary as `snap-undo`, by absolute path.
pub(super) fn hook_command(agent: &str) -> Result<String> {
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
pub(super) fn invoked_as() -> Option<PathBuf> {
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

pub(super) fn shell_quote(s: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum HookScope {
    Local,
    Project,
    User,
}

impl HookScope {
    /// Every scope, narrowest first.
    pub fn all() -> [HookScope; 3] {
        [HookScope::Local, HookScope::Project, HookScope::User]
    }
}
