//! `snap ui`: runs `snap-undo-ui`, the terminal UI, in this process's place. It is its own
//! binary so the per-call binary a hook starts hundreds of times a session never loads a
//! terminal library (docs/PERFORMANCE.md).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use crate::ctx::Ctx;
use anyhow::Result;

/// The UI binary's name, installed beside snap-undo.
const UI_BINARY: &str = "snap-undo-ui";

pub(crate) fn cmd_ui(ctx: &Ctx) -> Result<()> {
    if ctx.json {
        anyhow::bail!("snap ui is for a person at a terminal; `snap log --json` gives the history");
    }
    let binary = ui_binary().ok_or_else(|| {
        anyhow::anyhow!(
            "snap ui needs {UI_BINARY}, installed beside snap-undo (`cargo install --path crates/cli` installs both)"
        )
    })?;
    let mut command = std::process::Command::new(&binary);
    command.arg("-C").arg(&ctx.start);
    if let Some(store) = &ctx.store {
        command.arg("--store").arg(store);
    }
    // exec returns only when it failed.
    let error = command.exec();
    Err(anyhow::anyhow!("cannot run {}: {error}", binary.display()))
}

/// `snap-undo-ui` beside this program, else the first on PATH.
fn ui_binary() -> Option<PathBuf> {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join(UI_BINARY)))
        .filter(|p| p.is_file());
    beside.or_else(|| {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|dir| dir.join(UI_BINARY))
            .find(|p| p.is_file())
    })
}

/// `snap ui` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct UiArgs {}

/// Runs `snap ui`.
pub(crate) fn run(ctx: &Ctx, _args: UiArgs) -> Result<()> {
    cmd_ui(ctx)
}
