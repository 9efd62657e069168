//! Drawing the state: the timeline on the left, the selected snapshot's files and a diff (or
//! a blame) on the right, a status line, and the confirmation, search and help over them.
//! Only what is on screen is turned into text, so a long history draws as fast as a short one.

mod overlay;
mod panes;
mod rows;
mod theme;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};

use crate::app::App;

pub use theme::Theme;

/// Draws the whole screen.
pub fn draw(frame: &mut Frame<'_>, app: &mut App) {
    let [body, status] =
        Layout::vertical([Constraint::Fill(1), Constraint::Length(1)]).areas(frame.area());
    let left = match body.width {
        0..100 => Constraint::Percentage(50),
        _ => Constraint::Percentage(45),
    };
    let [timeline, detail] = Layout::horizontal([left, Constraint::Fill(1)]).areas(body);
    rows::draw_timeline(frame, app, timeline);
    panes::draw_detail(frame, app, detail);
    overlay::draw_status(frame, app, status);
    overlay::draw_overlay(frame, app, body);
}

/// `1 turn`, `3 turns`.
fn plural(n: usize, what: &str) -> String {
    match n {
        1 => format!("1 {what}"),
        n => format!("{n} {what}s"),
    }
}

#[cfg(test)]
mod tests;
