//! Command-line arguments (clap derive). Each command's help line carries an example.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use crate::commands::blame::BlameArgs;
use crate::commands::cat::CatArgs;
use crate::commands::completions::CompletionsArgs;
use crate::commands::diff::DiffArgs;
use crate::commands::doctor::DoctorArgs;
use crate::commands::export::ExportArgs;
use crate::commands::expunge::ExpungeArgs;
use crate::commands::init::InitArgs;
use crate::commands::lifecycle::{DeleteArgs, GcArgs, PruneArgs, RepairArgs, VerifyArgs};
use crate::commands::log::LogArgs;
use crate::commands::ls::LsArgs;
use crate::commands::moves::MoveArgs;
use crate::commands::recover::RecoverArgs;
#[cfg(feature = "remote")]
use crate::commands::remote::{CloneArgs, PullArgs, PushArgs};
#[cfg(feature = "remote")]
use crate::commands::remote_config::RemoteArgs;
use crate::commands::restore::RestoreArgs;
use crate::commands::revert::RevertArgs;
use crate::commands::save::SaveArgs;
use crate::commands::show::ShowArgs;
use crate::commands::status::StatusArgs;
use crate::commands::ui::UiArgs;
use crate::hook::cmd::HookArgs;
#[cfg(feature = "mcp")]
use crate::mcp::McpArgs;
use crate::pager::Paging;
use crate::watch::WatchArgs;
use crate::watch::exec::ExecArgs;

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

impl Cli {
    /// `log`, `diff`, `show` and `blame` page, unless `--json` or `--no-pager` was given.
    pub(crate) fn paging(&self) -> Paging {
        use Command as C;
        let reads_history = matches!(
            self.command,
            C::Log(_) | C::Diff(_) | C::Show { .. } | C::Blame { .. }
        );
        match reads_history && !self.json && !self.no_pager {
            true => Paging::Page,
            false => Paging::Plain,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the store (`snap init`).
    Init(InitArgs),
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
    Export(ExportArgs),
    /// Save a snapshot for an agent's hook event, read as JSON on stdin; always exits 0
    /// (`snap-undo hook --agent claude`, run by the agent; see docs/AGENTS.md).
    Hook(HookArgs),
    /// Check the wiring: agent hooks installed, the last hook save and any failures, the
    /// store's health, and which `snap` is on PATH (`snap doctor`).
    Doctor(DoctorArgs),
    /// Serve MCP on stdin and stdout for this workspace (`claude mcp add snap -- snap-undo mcp -C DIR`).
    #[cfg(feature = "mcp")]
    Mcp(McpArgs),
    /// Make the directory (or PATHS) match a snapshot, as a new snapshot (`snap restore "#3" -- src`).
    Restore(RestoreArgs),
    /// Take back what one snapshot changed, keeping what came after (`snap revert "#5"`).
    Revert(RevertArgs),
    /// List snapshots, newest first (`snap log -n 10`).
    #[command(alias = "list")]
    Log(LogArgs),
    /// One snapshot's record and changed files (`snap show @`).
    Show(ShowArgs),
    /// The files in a snapshot (`snap ls @ -- src`).
    Ls(LsArgs),
    /// One file's content at a snapshot (`snap cat @~1 src/main.rs`).
    Cat(CatArgs),
    /// Each line of a file with the snapshot, session, tool and agent that brought it
    /// (`snap blame src/lib.rs`, `snap blame README.md @~3`).
    Blame(BlameArgs),
    /// Take paths out of every snapshot for good, their bytes gone from the store; a
    /// deliberate loss of history (`snap expunge .env --dry-run`, `snap expunge --secrets`).
    Expunge(ExpungeArgs),
    /// Browse the history in the terminal: sessions, turns, tool calls and their diffs;
    /// restore, revert, undo and redo from there (`snap ui`).
    Ui(UiArgs),
    /// Line diffs between snapshots or against the working tree (`snap diff @~1`, `snap diff "#3" "#5" -- src`).
    Diff(DiffArgs),
    /// Print a shell completion script for snap-undo (and snap, run as that) (`snap-undo completions bash > /etc/bash_completion.d/snap-undo`).
    Completions(CompletionsArgs),
    /// The working tree against HEAD (`snap status`).
    Status(StatusArgs),
    /// Finish an interrupted undo, redo or restore (`snap recover`).
    Recover(RecoverArgs),
    /// Drop old snapshots by policy; the config's [retention] unless flags say (`snap prune --keep-last 100`).
    Prune(PruneArgs),
    /// Reclaim the space of objects no snapshot references (`snap gc`; `snap gc --remote`
    /// for a remote: what no workspace's newest push reaches, after a grace period).
    Gc(GcArgs),
    /// Check the store and name what is damaged (`snap verify --read-data`).
    Verify(VerifyArgs),
    /// Name the remotes push and clone use (`snap remote add origin s3://bucket/prefix`).
    #[cfg(feature = "remote")]
    Remote(RemoteArgs),
    /// Send the history to a remote, only what it lacks (`snap push`, `snap push origin`).
    #[cfg(feature = "remote")]
    Push(PushArgs),
    /// Take the other workspaces' snapshots from a remote, kept apart as REMOTE#N; never
    /// moves HEAD or the working tree (`snap pull`, then `snap log --all`).
    #[cfg(feature = "remote")]
    Pull(PullArgs),
    /// Make a new directory from a workspace's history on a remote, HEAD checked out
    /// (`snap clone s3://bucket/prefix dir`).
    #[cfg(feature = "remote")]
    Clone(CloneArgs),
    /// Rebuild a lost or damaged catalog from the pack files (`snap repair`).
    Repair(RepairArgs),
    /// Keep a watcher on the directory so that saves read only what changed
    /// (`snap watch --background`).
    Watch(WatchArgs),
    /// Run a command between two saves, autosaving while it runs: any CLI agent made
    /// undoable step by step (`snap exec -- aider --yes`). Exits with the command's code.
    Exec(ExecArgs),
    /// Remove every snapshot and reclaim the space (`snap delete --all --yes`).
    Delete(DeleteArgs),
}

impl Command {
    /// True for the commands that may write the store or the working tree (and so roll an
    /// interrupted move forward); the others only read.
    pub fn writes(&self) -> bool {
        !matches!(
            self,
            Command::Log(_)
                | Command::Export(_)
                | Command::Show(_)
                | Command::Ls(_)
                | Command::Cat(_)
                | Command::Blame(_)
                | Command::Ui(_)
                | Command::Diff(_)
                | Command::Completions(_)
                | Command::Status(_)
                | Command::Verify(_)
                | Command::Doctor(_)
                | Command::Watch(_)
                | Command::Exec(_)
        ) && !self.serves()
            && !self.pushes()
    }

    /// `snap push` reads the store and writes only the remote.
    fn pushes(&self) -> bool {
        #[cfg(feature = "remote")]
        if matches!(self, Command::Push(_)) {
            return true;
        }
        false
    }

    /// A long-running server, which stops on a signal like any program (each tool call is a
    /// process of its own, with its own signal handling).
    fn serves(&self) -> bool {
        #[cfg(feature = "mcp")]
        if matches!(self, Command::Mcp(_)) {
            return true;
        }
        false
    }
}
