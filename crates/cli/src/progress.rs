//! Progress bars on a terminal, fed by the workspace observer. Never in `--json`, with
//! `--no-progress` or `-q`, or when stderr is not a terminal; never coloured.

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

/// An observer that draws one bar per long phase on stderr.
pub fn observer() -> Observer {
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
