//! What sits over the panes: the status line, the search prompt, a confirmation with its
//! preview, and the help.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use crate::app::{App, Mode};

/// The keys, as `?` shows them.
pub const HELP: &[&str] = &[
    "j/k, arrows   move          PgUp/PgDn, g/G   page, top, bottom",
    "space         fold or unfold a session, turn or call",
    "h/l, ←/→      fold, unfold, or go to the files and back (Tab too)",
    "J/K           scroll the diff",
    "d             diff against the parent, the working tree or the marked snapshot",
    "m             mark the selection for d",
    "enter         restore the tree to the selection (preview, then y)",
    "x             take back the selection's change, keep later work (preview, then y)",
    "u / r         undo / redo one snapshot",
    "b             blame the selected file",
    "/ then n      search messages, tools, sessions and paths; n finds the next",
    "a             show abandoned lines too (log --all)",
    "q             quit",
];

pub(super) fn draw_status(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let text = match (&app.mode, &app.status) {
        (Mode::Search(query), _) => format!("/{query}"),
        (_, Some(status)) => status.clone(),
        _ => "enter restore  u undo  r redo  x revert  b blame  d diff  / search  ? help  q quit"
            .to_string(),
    };
    frame.render_widget(Paragraph::new(text), area);
}

pub(super) fn draw_overlay(frame: &mut Frame<'_>, app: &App, area: Rect) {
    let (title, lines) = match &app.mode {
        Mode::Help => (
            " keys (any key closes) ".to_string(),
            HELP.iter().map(|l| l.to_string()).collect(),
        ),
        Mode::Confirm(pending) => {
            let mut lines = pending.lines.clone();
            lines.push(String::new());
            lines.push("y: go ahead    n: cancel".to_string());
            (format!(" {} ", pending.title), lines)
        }
        _ => return,
    };
    let width = (lines.iter().map(|l| l.chars().count()).max().unwrap_or(0) + 4)
        .max(title.chars().count() + 4);
    let width = u16::try_from(width).unwrap_or(u16::MAX).min(area.width);
    let height = u16::try_from(lines.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let popup = centered(area, width, height);
    let text: Vec<Line<'_>> = lines.into_iter().map(Line::raw).collect();
    let block = Block::bordered()
        .title(title)
        .border_style(app.theme.focused());
    frame.render_widget(Clear, popup);
    frame.render_widget(
        Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
        popup,
    );
}

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [cell] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(row);
    cell
}
