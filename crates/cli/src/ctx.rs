//! `Ctx`: what every command needs besides its own arguments, and how a command prints its
//! outcome (one JSON document with `--json`, else its human lines).

use std::path::PathBuf;

use serde_json::Value;

/// What every command needs besides its own arguments.
#[derive(Clone, Debug)]
pub(crate) struct Ctx {
    pub(crate) start: PathBuf,
    pub(crate) store: Option<PathBuf>,
    pub(crate) json: bool,
    pub(crate) quiet: bool,
    pub(crate) progress: bool,
    /// `SNAP_TIMING` is set: print how long each step of a capture took (a measuring aid).
    pub(crate) timing: bool,
}

/// `value()` in JSON mode, else nothing: a save or undo of 100k files would otherwise build a
/// JSON value of every change (larger than the rest of the command) only to print a
/// one-line summary.
pub(crate) fn json_only(ctx: &Ctx, value: impl FnOnce() -> Value) -> Value {
    if ctx.json { value() } else { Value::Null }
}

/// As [`emit`], for a command whose human output only reports what it did: `-q` silences it
/// (errors and kept paths still go to stderr).
pub(crate) fn emit_done(ctx: &Ctx, value: Value, human: impl FnOnce()) {
    emit(ctx, value, || {
        if !ctx.quiet {
            human();
        }
    });
}

/// Prints `value` as one JSON document with `--json`, else runs `human`.
pub(crate) fn emit(ctx: &Ctx, value: Value, human: impl FnOnce()) {
    if ctx.json {
        println!("{value}");
    } else {
        human();
    }
}
