//! Command-line arguments (clap derive). Each command's help line carries an example.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Undo and redo for any directory. Snapshots live in `.snap/` beside your files.
#[derive(Debug, Parser)]
#[command(
    name = "snap",
    version,
    about = "Undo and redo for any directory: snapshots in .snap/, never touching .git",
    after_help = "Typical use:\n  snap save -m \"before refactor\"   snapshot (creates .snap/ the first time)\n  snap undo                         back one snapshot; unsaved edits are saved first\n  snap redo                         forward again\n  snap log                          what there is to go back to\n  snap diff @~1                     what changed since the snapshot before HEAD\n\nReferences: @ (HEAD), @~N, last, #SEQ, step:N, or an id prefix (4+ hex digits).\nExit codes: 0 ok, 1 error, 2 usage, 3 nothing to undo or redo. --json on every command.",
    propagate_version = true
)]
pub struct Cli {
    /// Run as if started in DIR.
    #[arg(
        short = 'C',
        visible_short_alias = 'w',
        long = "dir",
        global = true,
        value_name = "DIR"
    )]
    pub dir: Option<PathBuf>,
    /// Keep the store in DIR instead of `.snap/` (also SNAP_STORE).
    #[arg(long, global = true, value_name = "DIR", env = "SNAP_STORE")]
    pub store: Option<PathBuf>,
    /// Print one JSON document on stdout.
    #[arg(long, global = true)]
    pub json: bool,
    /// Print less.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Never show progress bars.
    #[arg(long, global = true)]
    pub no_progress: bool,
    /// Print straight to the terminal: no pager for log, diff, show and blame (the pager is
    /// SNAP_PAGER, else PAGER, else `less -FRX`, and runs only when stdout is a terminal).
    #[arg(long, global = true)]
    pub no_pager: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the store (`snap init`).
    Init {
        /// Allow a store in `/` or your home directory, and claim an external store recorded
        /// for another root (a workspace that moved).
        #[arg(long)]
        force: bool,
    },
    /// Snapshot the directory if anything changed (`snap save -m "after edit"`).
    Save(SaveArgs),
    /// Go back N snapshots, saving unsaved changes first (`snap undo`, `snap undo 3`).
    Undo(MoveArgs),
    /// The same as undo, under the name other checkpoint tools use (`snap rewind 2`).
    Rewind(MoveArgs),
    /// Go forward N snapshots along what undo left (`snap redo`).
    Redo(MoveArgs),
    /// Write a snapshot into another directory, leaving the workspace alone
    /// (`snap export @~2 /tmp/old -- src`).
    Export {
        /// Snapshot: @, @~N, last, #SEQ, step:N or an id prefix.
        reference: String,
        /// An empty or absent directory outside the workspace. (Not named `dir`: that is the
        /// global `-C`'s id, and clap would give this value to it.)
        #[arg(value_name = "DIR")]
        into: PathBuf,
        /// Only these paths.
        #[arg(last = true)]
        paths: Vec<PathBuf>,
    },
    /// Save a snapshot for an agent's hook event, read as JSON on stdin; always exits 0
    /// (`snap-undo hook --agent claude`, run by the agent; see docs/AGENTS.md).
    Hook(HookArgs),
    /// Check the wiring: agent hooks installed, the last hook save and any failures, the
    /// store's health, and which `snap` is on PATH (`snap doctor`).
    Doctor,
    /// Serve MCP on stdin and stdout for this workspace (`claude mcp add snap -- snap-undo mcp -C DIR`).
    #[cfg(feature = "mcp")]
    Mcp,
    /// Make the directory (or PATHS) match a snapshot, as a new snapshot (`snap restore "#3" -- src`).
    Restore {
        /// Snapshot: @, @~N, last, #SEQ, step:N or an id prefix.
        reference: String,
        /// Only these paths.
        #[arg(last = true)]
        paths: Vec<PathBuf>,
        /// Show what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Take back what one snapshot changed, keeping what came after (`snap revert "#5"`).
    Revert {
        /// Snapshot: @, @~N, last, #SEQ, step:N or an id prefix (with --turn, default @).
        #[arg(required_unless_present = "turn")]
        reference: Option<String>,
        /// Take back the whole agent turn holding the snapshot.
        #[arg(long)]
        turn: bool,
        /// Only these paths.
        #[arg(last = true)]
        paths: Vec<PathBuf>,
        /// Show what would be taken back and what conflicts, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// List snapshots, newest first (`snap log -n 10`).
    #[command(alias = "list")]
    Log(LogArgs),
    /// One snapshot's record and changed files (`snap show @`).
    Show {
        /// Snapshot reference.
        reference: String,
    },
    /// The files in a snapshot (`snap ls @ -- src`).
    Ls {
        /// Snapshot reference (default @).
        reference: Option<String>,
        /// Only these paths.
        #[arg(last = true)]
        paths: Vec<PathBuf>,
    },
    /// One file's content at a snapshot (`snap cat @~1 src/main.rs`).
    Cat {
        /// Snapshot reference.
        reference: String,
        /// Path in the snapshot.
        path: PathBuf,
    },
    /// Each line of a file with the snapshot, session, tool and agent that brought it
    /// (`snap blame src/lib.rs`, `snap blame README.md @~3`).
    Blame {
        /// The file.
        path: PathBuf,
        /// The snapshot whose version is blamed: @, @~N, last, #SEQ, step:N or an id prefix.
        #[arg(default_value = "@")]
        reference: String,
    },
    /// Take paths out of every snapshot for good, their bytes gone from the store; a
    /// deliberate loss of history (`snap expunge .env --dry-run`, `snap expunge --secrets`).
    Expunge(ExpungeArgs),
    /// Browse the history in the terminal: sessions, turns, tool calls and their diffs;
    /// restore, revert, undo and redo from there (`snap ui`).
    Ui,
    /// Line diffs between snapshots or against the working tree (`snap diff @~1`, `snap diff "#3" "#5" -- src`).
    Diff(DiffArgs),
    /// Print a shell completion script for snap-undo (and snap, run as that) (`snap-undo completions bash > /etc/bash_completion.d/snap-undo`).
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
    /// The working tree against HEAD (`snap status`).
    Status {
        /// Only changes of this kind.
        #[arg(long, value_enum)]
        category: Option<Category>,
    },
    /// Finish an interrupted undo, redo or restore (`snap recover`).
    Recover,
    /// Drop old snapshots by policy; the config's [retention] unless flags say (`snap prune --keep-last 100`).
    Prune {
        /// Keep the newest N snapshots.
        #[arg(long)]
        keep_last: Option<u64>,
        /// Keep snapshots younger than this (30m, 12h, 7d, 2w).
        #[arg(long, value_name = "DUR")]
        keep_within: Option<String>,
        /// Show what would be dropped, drop nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Reclaim the space of objects no snapshot references (`snap gc`; `snap gc --remote`
    /// for a remote: what no workspace's newest push reaches, after a grace period).
    Gc {
        /// Collect a remote instead (the default one, or the one named).
        #[cfg(feature = "remote")]
        #[arg(long, value_name = "REMOTE", num_args = 0..=1, default_missing_value = "")]
        remote: Option<String>,
        /// With --remote: how long an object stays marked before it is deleted (a push
        /// running longer than this while a gc runs may lose what it relies on).
        #[cfg(feature = "remote")]
        #[arg(long, value_name = "DUR", default_value = "1h", requires = "remote")]
        grace: String,
    },
    /// Check the store and name what is damaged (`snap verify --read-data`).
    Verify {
        /// Also decompress and rehash every object.
        #[arg(long)]
        read_data: bool,
        /// Check a remote instead (the default one, or the one named): refs, records, packs.
        #[cfg(feature = "remote")]
        #[arg(long, value_name = "REMOTE", num_args = 0..=1, default_missing_value = "")]
        remote: Option<String>,
    },
    /// Name the remotes push and clone use (`snap remote add origin s3://bucket/prefix`).
    #[cfg(feature = "remote")]
    Remote {
        /// With no action, list the remotes, each with its URL and whether it is encrypted
        /// (`snap remote -v`, git's spelling; `snap remote list` says the same).
        #[arg(short, long)]
        verbose: bool,
        #[command(subcommand)]
        action: Option<RemoteAction>,
    },
    /// Send the history to a remote, only what it lacks (`snap push`, `snap push origin`).
    #[cfg(feature = "remote")]
    Push {
        /// A remote's name or URL (default: the default remote).
        remote: Option<String>,
        /// First read and hash every pack on the remote; a damaged one is deleted and what
        /// it held is sent again.
        #[arg(long)]
        repair: bool,
    },
    /// Take the other workspaces' snapshots from a remote, kept apart as REMOTE#N; never
    /// moves HEAD or the working tree (`snap pull`, then `snap log --all`).
    #[cfg(feature = "remote")]
    Pull {
        /// A remote's name or URL (default: the default remote).
        remote: Option<String>,
    },
    /// Make a new directory from a workspace's history on a remote, HEAD checked out
    /// (`snap clone s3://bucket/prefix dir`).
    #[cfg(feature = "remote")]
    Clone {
        /// `s3://bucket/prefix` or `file:///path`.
        url: String,
        /// The new directory (absent or empty).
        #[arg(value_name = "DIR")]
        directory: PathBuf,
        /// The workspace to take, when the remote holds several (a prefix of its id).
        #[arg(long)]
        workspace: Option<String>,
        /// Read an encrypted remote's passphrase from the first line of FILE (else
        /// SNAP_REMOTE_PASSWORD, else a prompt).
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// Rebuild a lost or damaged catalog from the pack files (`snap repair`).
    Repair,
    /// Keep a watcher on the directory so that saves read only what changed
    /// (`snap watch --background`).
    Watch(WatchArgs),
    /// Run a command between two saves, autosaving while it runs: any CLI agent made
    /// undoable step by step (`snap exec -- aider --yes`). Exits with the command's code.
    Exec(ExecArgs),
    /// Remove every snapshot and reclaim the space (`snap delete --all --yes`).
    Delete {
        /// Every snapshot (the only mode there is).
        #[arg(long, required = true)]
        all: bool,
        /// Confirm.
        #[arg(long)]
        yes: bool,
    },
}

impl Command {
    /// True for the commands that may write the store or the working tree (and so roll an
    /// interrupted move forward); the others only read.
    pub fn writes(&self) -> bool {
        !matches!(
            self,
            Command::Log(_)
                | Command::Export { .. }
                | Command::Show { .. }
                | Command::Ls { .. }
                | Command::Cat { .. }
                | Command::Blame { .. }
                | Command::Ui
                | Command::Diff(_)
                | Command::Completions { .. }
                | Command::Status { .. }
                | Command::Verify { .. }
                | Command::Doctor
                | Command::Watch(_)
                | Command::Exec(_)
        ) && !self.serves()
            && !self.pushes()
    }

    /// `snap push` reads the store and writes only the remote.
    fn pushes(&self) -> bool {
        #[cfg(feature = "remote")]
        if matches!(self, Command::Push { .. }) {
            return true;
        }
        false
    }

    /// A long-running server, which stops on a signal like any program (each tool call is a
    /// process of its own, with its own signal handling).
    fn serves(&self) -> bool {
        #[cfg(feature = "mcp")]
        if matches!(self, Command::Mcp) {
            return true;
        }
        false
    }
}

/// `snap remote`'s actions.
#[cfg(feature = "remote")]
#[derive(Debug, Subcommand)]
pub enum RemoteAction {
    /// Name a remote, after checking that it honours create-only puts (the first is the default).
    Add {
        /// Letters, digits, - and _.
        name: String,
        /// `s3://bucket/prefix` or `file:///path`.
        url: String,
        /// Make a `file://` remote's directory if it is not there (a mistyped path is
        /// otherwise an error).
        #[arg(long)]
        create: bool,
        /// Keep a new remote's objects in the clear (by default they are encrypted under a
        /// passphrase, asked once).
        #[arg(long)]
        no_encryption: bool,
        /// Read the passphrase from the first line of FILE (else SNAP_REMOTE_PASSWORD, else
        /// a prompt).
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// The passphrases of an encrypted remote: each key object is one.
    Key {
        #[command(subcommand)]
        action: RemoteKeyAction,
    },
    /// Move a plain remote to the encrypted layout in place (run it again if it stops).
    Encrypt {
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
        /// Read the new passphrase from the first line of FILE.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// Forget a remote's name; its objects stay.
    Remove {
        /// The remote's name.
        name: String,
    },
    /// The remotes, the default marked.
    List,
}

/// `snap remote key`'s actions.
#[cfg(feature = "remote")]
#[derive(Debug, Subcommand)]
pub enum RemoteKeyAction {
    /// Add a passphrase (SNAP_REMOTE_NEW_PASSWORD, --password-file, or asked twice).
    Add {
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
        /// Read the new passphrase from the first line of FILE.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
    },
    /// The key objects, with when each was made and its KDF parameters.
    List {
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
    },
    /// Remove a key object: its passphrase no longer opens the remote (not the last one).
    Remove {
        /// The key object (`keys/NAME` or NAME, as `snap remote key list` shows).
        name: String,
        /// The remote's name or URL (default: the default remote).
        remote: Option<String>,
    },
}

/// `snap expunge`.
#[derive(Debug, Args)]
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

/// `snap watch`: in the foreground (for a service manager) unless a flag says otherwise.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Start the watcher in the background; returns once its first scan is done.
    #[arg(long, conflicts_with_all = ["stop", "status"])]
    pub background: bool,
    /// Stop the running watcher.
    #[arg(long, conflicts_with = "status")]
    pub stop: bool,
    /// How the running watcher is doing (with --json: its pid, directories, epoch, memory).
    #[arg(long)]
    pub status: bool,
    /// Save by itself once the tree has been quiet this long (default 2s), with meta
    /// `source=watch`: writers without hooks get snapshots too.
    #[arg(long, value_name = "QUIET", num_args = 0..=1, default_missing_value = "2s",
          conflicts_with_all = ["stop", "status"])]
    pub autosave: Option<String>,
    /// The session its autosaves are tagged with (`snap exec` passes its own).
    #[arg(long, hide = true, requires = "autosave")]
    pub session: Option<String>,
    /// The session's turn its autosaves are tagged with (`snap exec` passes its run's).
    #[arg(long, hide = true, requires = "session")]
    pub step: Option<u64>,
    /// The pid of the `snap exec` that started it, as its parent: no idle timeout, and it
    /// exits once that process is gone.
    #[arg(long, hide = true, conflicts_with_all = ["stop", "status"])]
    pub owner: Option<u32>,
}

/// `snap exec`: a command run between two saves, with autosaves while it runs.
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The agent's name for the snapshots (`agent` meta); the command's name otherwise.
    #[arg(long)]
    pub agent: Option<String>,
    /// How long the tree must be quiet before an autosave during the run.
    #[arg(long, value_name = "QUIET", default_value = "2s")]
    pub quiet_for: String,
    /// The command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<std::ffi::OsString>,
}

#[derive(Debug, Args)]
pub struct SaveArgs {
    /// Message.
    #[arg(short, long, default_value = "")]
    pub message: String,
    /// Agent step (turn) number.
    #[arg(long)]
    pub step: Option<u64>,
    /// Agent session name.
    #[arg(long)]
    pub session: Option<String>,
    /// Free metadata, repeatable (`--meta tool=edit --meta turn=12`).
    #[arg(long, value_name = "K=V", value_parser = parse_meta)]
    pub meta: Vec<(String, String)>,
    /// Snapshot even if nothing changed.
    #[arg(long)]
    pub allow_empty: bool,
    /// Start a new store's history from a snapshot of an empty tree, reading and touching no
    /// file (as a first `git commit --allow-empty`): the files are then unsaved changes, and
    /// going back to it saves them first. Refused once the store has a snapshot.
    #[arg(long, conflicts_with = "allow_empty")]
    pub empty_tree: bool,
    /// Allow creating a store in `/` or your home directory.
    #[arg(long)]
    pub force: bool,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// From this snapshot (default @, HEAD).
    pub from: Option<String>,
    /// To this snapshot (default: the working tree).
    pub to: Option<String>,
    /// Only these paths.
    #[arg(last = true)]
    pub paths: Vec<PathBuf>,
    /// One line per file with lines added and removed, and a total line under them.
    #[arg(long, conflicts_with = "name_status")]
    pub stat: bool,
    /// One line per file with its status letter (A, M, D; R and how alike, OLD NEW, for a file moved).
    #[arg(long)]
    pub name_status: bool,
    /// Which page of files to show.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub page: u64,
    /// Files per page (default 25; with --stat or --name-status, every file).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub files_per_page: Option<u64>,
    /// Diff lines shown per file (0: every line); the rest is cut with a note.
    #[arg(long, default_value_t = 500)]
    pub max_lines: usize,
}

#[derive(Debug, Args)]
pub struct MoveArgs {
    /// How many snapshots (with --turn: agent turns) to move.
    #[arg(default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub n: u64,
    /// Whole agent turns, as `snap hook` recorded them: undo goes back to the start of the
    /// Nth last turn of HEAD's session (hand edits made before it kept); redo brings back
    /// the N turns an undo passed.
    #[arg(long, conflicts_with = "to")]
    pub turn: bool,
    /// Undo back to this snapshot, one of HEAD's ancestors, as an undo of that many steps
    /// (redo brings them back): @~N, #SEQ, step:N or an id prefix.
    #[arg(long, value_name = "REF")]
    pub to: Option<String>,
    /// Show what would change, change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `snap hook`: run for one event (by the agent), or install and uninstall (by you).
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookArgs {
    /// The agent sending the event: claude, codex, gemini, cursor, cline or opencode.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    #[command(subcommand)]
    pub action: Option<HookAction>,
}

#[derive(Debug, Subcommand)]
pub enum HookAction {
    /// Add snap's hook to the agent's config, exclude that config from snapshots, and
    /// create the store if needed (`snap-undo hook install --agent claude`).
    Install(HookInstallArgs),
    /// Remove exactly snap's hook from the agent's config (`snap-undo hook uninstall --agent claude`).
    Uninstall(HookInstallArgs),
}

#[derive(Debug, Args)]
pub struct HookInstallArgs {
    /// claude, codex, gemini, cursor, cline or opencode.
    #[arg(long, value_name = "AGENT")]
    pub agent: String,
    /// Where the config goes: local (Claude Code's settings.local.json, the default for
    /// claude), project (the default for the others) or user (your home directory).
    #[arg(long, value_enum)]
    pub scope: Option<HookScope>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
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

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Category {
    Added,
    Modified,
    Deleted,
}

fn parse_meta(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

/// `--since DUR`: nanoseconds back from now, `None` for "0" (no limit).
#[derive(Clone, Copy, Debug)]
pub struct Since(pub Option<i64>);

/// Parsed by clap, so a bad duration is a usage error (exit 2), as a bad number is.
fn parse_since(value: &str) -> Result<Since, String> {
    snap_tree::parse_duration(value).map(Since)
}

impl DiffArgs {
    /// Files per page: as given, else 25 for full diffs and every file for the one-line forms.
    pub fn per_page(&self) -> u64 {
        let one_line = self.stat || self.name_status;
        self.files_per_page
            .unwrap_or(if one_line { u64::MAX } else { 25 })
    }

    /// The command line that shows `page`, with every flag given kept.
    pub fn page_command(&self, page: u64) -> String {
        let mut cmd = String::from("snap diff");
        for side in [&self.from, &self.to].into_iter().flatten() {
            cmd.push_str(&format!(" '{side}'"));
        }
        if self.stat {
            cmd.push_str(" --stat");
        }
        if self.name_status {
            cmd.push_str(" --name-status");
        }
        if let Some(n) = self.files_per_page {
            cmd.push_str(&format!(" --files-per-page {n}"));
        }
        if self.max_lines != 500 {
            cmd.push_str(&format!(" --max-lines {}", self.max_lines));
        }
        cmd.push_str(&format!(" --page {page}"));
        if !self.paths.is_empty() {
            cmd.push_str(" --");
            for p in &self.paths {
                cmd.push_str(&format!(" '{}'", p.display()));
            }
        }
        cmd
    }
}

/// `snap log`'s filters.
#[derive(Debug, Args)]
pub struct LogArgs {
    /// At most N rows.
    #[arg(short = 'n', long = "max-count")]
    pub max_count: Option<usize>,
    /// Include snapshots abandoned by a save after an undo.
    #[arg(long)]
    pub all: bool,
    /// Only snapshots saved with this step.
    #[arg(long)]
    pub step: Option<u64>,
    /// Only snapshots saved with this session, or with the one session it begins (the 8
    /// characters --oneline prints).
    #[arg(long)]
    pub session: Option<String>,
    /// Only snapshots younger than this (30m, 12h, 7d, 2w).
    #[arg(long, value_name = "DUR", value_parser = parse_since)]
    pub since: Option<Since>,
    /// Also show the store's size and what gc would reclaim.
    #[arg(long)]
    pub stats: bool,
    /// One short line a snapshot: short id, sequence, short session, message, tool.
    #[arg(long)]
    pub oneline: bool,
    /// Every autosave on a line of its own (else a turn's autosaves are folded into the
    /// line above them: "(+3 autosaves)").
    #[arg(short, long)]
    pub verbose: bool,
    /// Only snapshots that changed these paths (files or directories: anything under them).
    #[arg(last = true, value_name = "PATHS")]
    pub paths: Vec<std::path::PathBuf>,
}
