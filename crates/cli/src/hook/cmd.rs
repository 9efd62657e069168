//! `snap hook`'s arguments and dispatch: one event run by the agent (`mod.rs`), or install
//! and uninstall run by you (`install.rs`).

use anyhow::Result;

use super::cmd_hook;
use super::install::{self, HookInstallArgs};
use crate::ctx::Ctx;

/// `snap hook`: run for one event (by the agent), or install and uninstall (by you).
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct HookArgs {
    /// The agent sending the event: claude, codex, gemini, cursor, cline or opencode.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    #[command(subcommand)]
    pub action: Option<HookAction>,
}

#[derive(Debug, clap::Subcommand)]
pub enum HookAction {
    /// Add snap's hook to the agent's config, exclude that config from snapshots, and
    /// create the store if needed (`snap-undo hook install --agent claude`).
    Install(HookInstallArgs),
    /// Remove exactly snap's hook from the agent's config (`snap-undo hook uninstall --agent claude`).
    Uninstall(HookInstallArgs),
}

/// Runs `snap hook`: one event (by the agent), or install and uninstall (by you).
pub(crate) fn run(ctx: &Ctx, args: HookArgs) -> Result<()> {
    match args.action {
        None => cmd_hook(ctx, args.agent.as_deref().unwrap_or_default()),
        Some(HookAction::Install(a)) => install::cmd_install(ctx, &a.agent, a.scope),
        Some(HookAction::Uninstall(a)) => install::cmd_uninstall(ctx, &a.agent, a.scope),
    }
}
