//! Colours, or none: with `NO_COLOR` set (no-color.org) every style keeps only bold, dim and
//! reverse, which a monochrome terminal shows.

use ratatui::style::{Color, Modifier, Style};

/// The styles the UI draws with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Theme {
    color: bool,
}

impl Theme {
    /// Colours unless `NO_COLOR` is set to anything but the empty string.
    pub fn from_env() -> Theme {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Theme { color: !no_color }
    }

    /// With colours or without.
    pub fn new(color: bool) -> Theme {
        Theme { color }
    }

    fn fg(self, color: Color) -> Style {
        match self.color {
            true => Style::new().fg(color),
            false => Style::new(),
        }
    }

    /// HEAD's row.
    pub fn head(self) -> Style {
        self.fg(Color::Green).add_modifier(Modifier::BOLD)
    }

    /// The redo stack and abandoned lines.
    pub fn dim(self) -> Style {
        self.fg(Color::DarkGray).add_modifier(Modifier::DIM)
    }

    /// A session's row.
    pub fn session(self) -> Style {
        self.fg(Color::Magenta).add_modifier(Modifier::BOLD)
    }

    /// A turn's row.
    pub fn turn(self) -> Style {
        self.fg(Color::Cyan)
    }

    /// The selected row: reversed, so it shows without colours too.
    pub fn selected(self) -> Style {
        Style::new().add_modifier(Modifier::REVERSED)
    }

    /// Added lines and files.
    pub fn added(self) -> Style {
        self.fg(Color::Green)
    }

    /// Removed lines and deleted files.
    pub fn removed(self) -> Style {
        self.fg(Color::Red)
    }

    /// Hunk headers and modified files.
    pub fn hunk(self) -> Style {
        self.fg(Color::Blue)
    }

    /// Notes: binary sizes, mode changes.
    pub fn note(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::ITALIC)
    }

    /// A pane's border when it has the keys.
    pub fn focused(self) -> Style {
        self.fg(Color::Yellow).add_modifier(Modifier::BOLD)
    }
}
