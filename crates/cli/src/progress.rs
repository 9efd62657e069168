//! Progress bars on a terminal, fed by the workspace observer. Never in `--json`, with
//! `--no-progress` or `-q`, or when stderr is not a terminal; never coloured. With
//! `SNAP_TIMING` set, the same observer prints each capture step's time and peak memory.

use std::io::IsTerminal;
use std::sync::Mutex;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use snap_tree::{Event, Observer, Phase};

/// Phases with fewer items than this finish too fast to be worth a bar.
const MIN_ITEMS: u64 = 2000;

/// True when bars may be drawn for this run.
pub fn wanted(json: bool, quiet: bool, no_progress: bool) -> bool {
    !json && !quiet && !no_progress && std::io::stderr().is_terminal()
}

fn label(phase: Phase) -> &'static str {
    match phase {
        Phase::Scan => "scanning",
        Phase::Restore => "restoring",
        Phase::Gc => "repacking",
        Phase::Verify => "verifying",
    }
}

/// The observer this run wants: bars, timing lines, both or neither (`None`).
pub fn observer(ctx: &crate::ctx::Ctx) -> Option<Observer> {
    let bars = ctx.progress.then(bars);
    if !ctx.timing {
        return bars;
    }
    Some(Box::new(move |event| match *event {
        Event::Timing { step, elapsed } => eprintln!(
            "snap timing: {step} at {:.1} ms{}",
            elapsed.as_secs_f64() * 1e3,
            peak_memory()
        ),
        _ => {
            if let Some(bars) = &bars {
                bars(event);
            }
        }
    }))
}

/// `, VmHWM: N kB`: the peak resident size so far, where the kernel reports it.
pub(crate) fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(str::to_owned)
        })
        .map_or(String::new(), |l| {
            format!(", {}", l.split_whitespace().collect::<Vec<_>>().join(" "))
        })
}

/// An observer that draws one bar per long phase on stderr.
fn bars() -> Observer {
    let current: Mutex<Option<(Phase, ProgressBar)>> = Mutex::new(None);
    Box::new(move |event| {
        let Event::Progress { phase, done, total } = *event else {
            return;
        };
        let mut slot = current.lock().unwrap_or_else(|p| p.into_inner());
        if slot.as_ref().is_none_or(|(p, _)| *p != phase) {
            if let Some((_, old)) = slot.take() {
                old.finish_and_clear();
            }
            if total >= MIN_ITEMS || matches!(phase, Phase::Gc | Phase::Verify) && total > 0 {
                *slot = Some((phase, new_bar(phase, total)));
            }
        }
        if let Some((_, bar)) = slot.as_ref() {
            bar.set_position(done);
            if done >= total {
                bar.finish_and_clear();
            }
        }
    })
}

fn new_bar(phase: Phase, total: u64) -> ProgressBar {
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    let style = ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {elapsed}")
        .map(|s| s.progress_chars("=> "));
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar.set_prefix(label(phase));
    bar
}

/// A byte bar for an upload or download (`snap push`, `pull`, `clone`), when bars are
/// wanted; cleared when dropped.
#[cfg(feature = "remote")]
#[derive(Debug)]
pub struct Transfer(Option<ProgressBar>);

#[cfg(feature = "remote")]
impl Transfer {
    /// A bar labelled `label` for `total` bytes (a guess is fine: it only draws).
    pub fn new(ctx: &crate::ctx::Ctx, label: &'static str, total: u64) -> Transfer {
        let bar = ctx.progress.then(|| {
            let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            let style = ProgressStyle::with_template("{msg} {bytes}/{total_bytes} {wide_bar}")
                .unwrap_or_else(|_| ProgressStyle::default_bar());
            bar.set_style(style);
            bar.set_message(label);
            bar
        });
        Transfer(bar)
    }

    /// `done` bytes have gone.
    pub fn update(&self, done: u64) {
        if let Some(bar) = &self.0 {
            bar.set_position(done);
        }
    }
}

#[cfg(feature = "remote")]
impl Drop for Transfer {
    fn drop(&mut self) {
        if let Some(bar) = &self.0 {
            bar.finish_and_clear();
        }
    }
}
