//! `snap-undo-ui`: the terminal UI that `snap ui` runs (crates/ui), a binary of its own so
//! the per-call `snap-undo` never loads it.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// Browse a workspace's history in the terminal.
#[derive(Debug, Parser)]
#[command(name = "snap-undo-ui", version)]
struct Args {
    /// The workspace (or a directory inside it).
    #[arg(short = 'C', long = "dir", value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Its store, when it is not `.snap/` (also SNAP_STORE).
    #[arg(long, value_name = "DIR", env = "SNAP_STORE")]
    store: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match snap_ui::run(snap_ui::Source::new(&args.dir, args.store.as_deref())) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
