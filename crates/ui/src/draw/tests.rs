#![allow(clippy::unwrap_used)]

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::style::Color;

use crate::fixture::Fixture;
use crate::{App, Theme};

/// The screen as lines of text, after drawing `app` at `width` x `height`.
fn screen(app: &mut App, width: u16, height: u16) -> (Vec<String>, ratatui::buffer::Buffer) {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal.draw(|frame| super::draw(frame, app)).unwrap();
    let buffer = terminal.backend().buffer().clone();
    let lines = (0..height)
        .map(|y| {
            (0..width)
                .map(|x| buffer[(x, y)].symbol().to_string())
                .collect()
        })
        .collect();
    (lines, buffer)
}

fn open(f: &Fixture, theme: Theme) -> App {
    let mut app = App::open(f.source.clone(), theme).unwrap();
    app.load_detail();
    app
}

fn press(app: &mut App, code: KeyCode) {
    app.key(KeyEvent::new(code, KeyModifiers::NONE));
    app.load_detail();
}

fn holds(lines: &[String], text: &str) -> bool {
    lines.iter().any(|l| l.contains(text))
}

#[test]
fn the_main_screen_at_80_by_24() {
    let f = Fixture::agent_history();
    let mut app = open(&f, Theme::new(true));
    press(&mut app, KeyCode::Char('j'));
    let (lines, buffer) = screen(&mut app, 80, 24);
    let all = lines.join("\n");
    for text in [
        "history: 7 snapshots",
        "session s-two",
        "session s-one",
        "turn 1",
        "HEAD #7",
        "›    #6",
        "#6 changed 1 file",
        "A d.txt",
        "d.txt against its parent",
        "+d",
        "? help",
    ] {
        assert!(all.contains(text), "{text:?} not on screen:\n{all}");
    }
    // HEAD is green, an added line green, a removed one would be red.
    let (x, y) = find(&lines, "HEAD #7");
    assert_eq!(buffer[(x, y)].fg, Color::Green);
}

#[test]
fn without_colour_the_selection_still_shows() {
    let f = Fixture::agent_history();
    let mut app = open(&f, Theme::new(false));
    let (lines, buffer) = screen(&mut app, 80, 24);
    let colours: Vec<Color> = buffer.content().iter().map(|c| c.fg).collect();
    assert!(
        colours.iter().all(|c| *c == Color::Reset),
        "NO_COLOR draws no colour"
    );
    assert!(holds(&lines, "›    HEAD #7"), "{}", lines.join("\n"));
}

#[test]
fn the_confirmation_shows_the_preview() {
    let f = Fixture::agent_history();
    let mut app = open(&f, Theme::new(true));
    press(&mut app, KeyCode::Char('G'));
    press(&mut app, KeyCode::Enter);
    let (lines, _) = screen(&mut app, 80, 24);
    assert!(
        holds(&lines, "Restore the working tree to #1?"),
        "{}",
        lines.join("\n")
    );
    assert!(holds(&lines, "D d.txt"));
    assert!(holds(&lines, "y: go ahead"));
}

#[test]
fn help_lists_the_keys_and_folds_show() {
    let f = Fixture::agent_history();
    let mut app = open(&f, Theme::new(true));
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char(' '));
    press(&mut app, KeyCode::Char('?'));
    let (lines, _) = screen(&mut app, 100, 30);
    assert!(holds(&lines, "keys (any key closes)"));
    assert!(holds(&lines, "restore the tree to the selection"));
    press(&mut app, KeyCode::Char('x'));
    let (lines, _) = screen(&mut app, 100, 30);
    assert!(
        holds(&lines, "▸ session s-two"),
        "the space folded it:\n{}",
        lines.join("\n")
    );
}

#[test]
fn a_long_history_draws_only_what_fits() {
    let f = Fixture::new();
    for n in 0..60 {
        f.write("a.txt", &format!("{n}\n"));
        f.call("s", 1, "Edit", &format!("c{n}"));
    }
    let mut app = open(&f, Theme::new(true));
    press(&mut app, KeyCode::Char('G'));
    let (lines, _) = screen(&mut app, 80, 24);
    assert!(
        holds(&lines, "›    #1 "),
        "the selection scrolled into view:\n{}",
        lines.join("\n")
    );
    assert!(!holds(&lines, "HEAD #60"));
}

fn find(lines: &[String], text: &str) -> (u16, u16) {
    for (y, line) in lines.iter().enumerate() {
        if let Some(at) = line.find(text) {
            let x = line[..at].chars().count();
            return (u16::try_from(x).unwrap(), u16::try_from(y).unwrap());
        }
    }
    panic!("{text:?} not on screen");
}
