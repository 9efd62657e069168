//! The pager `log`, `diff`, `show` and `blame` print through on a terminal, as git's and
//! jj's do: `SNAP_PAGER`, else `PAGER`, else `less -FRX` (an empty value or `cat`: none).
//! Never under `--json` or `--no-pager`, never when stdout is not a terminal.
//!
//! Stdout's descriptor is pointed at the pager's stdin for the command's life and given back
//! when the command is done, which closes the pipe; then the pager is waited for. A person
//! who quits the pager before the end ends the command quietly (exit 0), not with a broken
//! pipe. A pager that cannot start leaves stdout as it was: the command prints to it.

use std::io::{IsTerminal, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set while stdout flows into a pager: what is printed reaches a terminal after all.
static PAGING: AtomicBool = AtomicBool::new(false);

/// The pager when nothing names one.
const DEFAULT_PAGER: &str = "less -FRX";

/// Characters that make a pager command a shell command (`sh -c`), not a program and words.
const SHELL_CHARS: &[char] = &[
    '|', '&', ';', '<', '>', '(', ')', '$', '`', '\\', '"', '\'', '*', '?', '[', '#', '~', '=',
];

/// Whether a command's output goes through the pager.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Paging {
    /// Through the pager, when stdout is a terminal.
    Page,
    /// Straight to stdout.
    Plain,
}

/// Whether output may be coloured: it reaches a terminal (directly or through the pager) and
/// `NO_COLOR` is unset or empty.
pub(crate) fn colour() -> bool {
    let terminal = PAGING.load(Ordering::Relaxed) || std::io::stdout().is_terminal();
    terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// A running pager: stdout flows into it until this is dropped, which gives stdout back and
/// waits for the pager to finish.
pub(crate) struct Pager {
    child: Child,
    /// Stdout as it was before the pager took it.
    saved: OwnedFd,
}

/// Starts the pager and points stdout at it, when `paging` asks for it and stdout is a
/// terminal; `None` (print as usual) otherwise, or when the pager cannot start.
pub(crate) fn start(paging: Paging) -> Option<Pager> {
    if paging == Paging::Plain || !std::io::stdout().is_terminal() {
        return None;
    }
    let mut child = spawn(&pager_command()?).ok()?;
    let Some(stdin) = child.stdin.take() else {
        let _ = child.wait();
        return None;
    };
    let saved = match rustix::io::dup(std::io::stdout()) {
        Ok(fd) => fd,
        Err(_) => {
            drop(stdin);
            let _ = child.wait();
            return None;
        }
    };
    quit_quietly_on_sigpipe();
    point_stdout_at(stdin.as_raw_fd());
    // Stdout holds the pipe now; this copy must close, or the pager never sees the end.
    drop(stdin);
    PAGING.store(true, Ordering::Relaxed);
    Some(Pager { child, saved })
}

impl Drop for Pager {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // Closes the pipe's last writer: the pager reads the end and shows it.
        point_stdout_at(self.saved.as_raw_fd());
        PAGING.store(false, Ordering::Relaxed);
        let _ = self.child.wait();
    }
}

/// `SNAP_PAGER`, else `PAGER`, else [`DEFAULT_PAGER`]; `None` for an empty value or `cat`.
fn pager_command() -> Option<String> {
    let named = ["SNAP_PAGER", "PAGER"]
        .iter()
        .find_map(|key| std::env::var(key).ok());
    let command = named.unwrap_or_else(|| DEFAULT_PAGER.to_string());
    let command = command.trim();
    (!command.is_empty() && command != "cat").then(|| command.to_string())
}

/// Starts `command`: a program and its words, or `sh -c` for anything the shell must read.
/// `LESS` defaults to `FRX` as git sets it, so a bare `less` shows colour and quits on a
/// short page.
fn spawn(command: &str) -> std::io::Result<Child> {
    let mut cmd = match command.contains(SHELL_CHARS) {
        true => {
            let mut sh = Command::new("sh");
            sh.arg("-c").arg(command);
            sh
        }
        false => {
            let mut words = command.split_whitespace();
            let mut program = Command::new(words.next().unwrap_or("less"));
            program.args(words);
            program
        }
    };
    if std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    cmd.stdin(Stdio::piped()).spawn()
}

/// Makes descriptor 1 a copy of `fd`.
#[allow(unsafe_code)]
fn point_stdout_at(fd: RawFd) {
    // SAFETY: dup2 on two descriptors this process holds open; it touches no memory.
    unsafe {
        libc::dup2(fd, libc::STDOUT_FILENO);
    }
}

/// A person who quits the pager early closes the pipe: the next write raises SIGPIPE, and
/// the command ends there, successfully, as it has nothing more to show anyone.
#[allow(unsafe_code)]
fn quit_quietly_on_sigpipe() {
    extern "C" fn quit(_: libc::c_int) {
        // SAFETY: _exit is async-signal-safe.
        unsafe { libc::_exit(0) }
    }
    // SAFETY: installs a handler that only calls an async-signal-safe function.
    unsafe {
        libc::signal(libc::SIGPIPE, quit as *const () as libc::sighandler_t);
    }
}
