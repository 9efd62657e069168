//! The terminal: set up and given back (also on a panic, by ratatui's hook), and the loop that
//! draws, waits for a key, and meanwhile reads what the selection needs and polls the catalog.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use ratatui::DefaultTerminal;
use ratatui::crossterm::event::{self, Event, KeyEventKind};

use crate::app::{App, Flow};
use crate::{Source, Theme, UiError};

/// How often the catalog's stamp is looked at while idle.
const POLL: Duration = Duration::from_millis(500);
/// How long keys must pause before the selection's detail is read: holding `j` through a
/// thousand snapshots reads one detail, not a thousand.
const SETTLE: Duration = Duration::from_millis(40);

/// Runs the UI on this process's terminal until `q`.
pub fn run(source: Source) -> Result<(), UiError> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(UiError::NoTerminal);
    }
    // Read before the screen is taken, so a missing store is one plain `error:` line.
    let mut app = App::open(source, Theme::from_env())?;
    let mut terminal = ratatui::try_init().map_err(UiError::Terminal)?;
    let result = event_loop(&mut terminal, &mut app);
    ratatui::restore();
    result
}

fn event_loop(terminal: &mut DefaultTerminal, app: &mut App) -> Result<(), UiError> {
    let mut polled = Instant::now();
    loop {
        terminal
            .draw(|frame| crate::draw::draw(frame, app))
            .map_err(UiError::Terminal)?;
        let wait = if app.detail_stale() { SETTLE } else { POLL };
        if event::poll(wait).map_err(UiError::Terminal)? {
            if let Event::Key(key) = event::read().map_err(UiError::Terminal)?
                && key.kind == KeyEventKind::Press
                && app.key(key) == Flow::Quit
            {
                return Ok(());
            }
            continue;
        }
        if app.detail_stale() {
            app.load_detail();
        }
        if polled.elapsed() >= POLL {
            polled = Instant::now();
            if let Err(e) = app.poll() {
                app.status = Some(format!("error: {e}"));
            }
        }
    }
}
