#![allow(clippy::unwrap_used)]

use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Flow, Focus, Mode};
use crate::Theme;
use crate::fixture::Fixture;

fn press(app: &mut App, code: KeyCode) -> Flow {
    let flow = app.key(KeyEvent::new(code, KeyModifiers::NONE));
    app.load_detail();
    flow
}

fn typed(app: &mut App, text: &str) {
    for c in text.chars() {
        press(app, KeyCode::Char(c));
    }
}

fn open(f: &Fixture) -> App {
    let mut app = App::open(f.source.clone(), Theme::new(false)).unwrap();
    app.load_detail();
    app
}

fn selected_seq(app: &App) -> u64 {
    app.selected_snapshot().unwrap().record.seq
}

fn select(app: &mut App, seq: u64) {
    let id = (app.history.items().iter())
        .find(|i| i.snapshot.record.seq == seq)
        .map(|i| i.snapshot.id);
    app.select_snapshot(id);
    app.load_detail();
    assert_eq!(selected_seq(app), seq);
}

#[test]
fn opens_on_head_and_moves_through_rows_and_files() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    assert_eq!(selected_seq(&app), 7);
    assert_eq!(app.detail.files.len(), 1, "#7 changed d.txt");
    press(&mut app, KeyCode::Char('j'));
    assert_eq!(selected_seq(&app), 6);
    press(&mut app, KeyCode::Char('G'));
    assert_eq!(selected_seq(&app), 1);
    press(&mut app, KeyCode::Char('g'));
    assert_eq!(app.selected, 0);
    press(&mut app, KeyCode::Tab);
    assert_eq!(app.focus, Focus::Files);
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.focus, Focus::Timeline);
    assert_eq!(press(&mut app, KeyCode::Char('q')), Flow::Quit);
}

#[test]
fn enter_previews_then_y_restores_and_u_undoes_it() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 4);
    press(&mut app, KeyCode::Enter);
    let Mode::Confirm(pending) = &app.mode else {
        panic!("no confirmation: {:?}", app.mode);
    };
    assert!(pending.title.contains("#4"), "{}", pending.title);
    assert!(
        pending.lines.iter().any(|l| l.contains("M a.txt")),
        "{:?}",
        pending.lines
    );
    assert_eq!(
        f.read("a.txt").unwrap(),
        "one\ntwo\n",
        "a preview changes nothing"
    );

    press(&mut app, KeyCode::Char('y'));
    assert_eq!(f.read("a.txt").unwrap(), "one\n");
    assert_eq!(f.read("d.txt"), None);
    let head = app.history.head().unwrap();
    assert_eq!(head.snapshot.record.seq, 8, "{:?}", app.status);
    assert_eq!(selected_seq(&app), 8, "the selection follows HEAD");

    press(&mut app, KeyCode::Char('u'));
    assert_eq!(f.read("d.txt").unwrap(), "d\nd2\n");
    assert!(
        app.status
            .as_deref()
            .unwrap()
            .starts_with("undo: now at #7"),
        "{:?}",
        app.status
    );
    press(&mut app, KeyCode::Char('r'));
    assert_eq!(f.read("d.txt"), None);
}

#[test]
fn n_cancels_a_confirmation_and_nothing_changes() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 1);
    press(&mut app, KeyCode::Enter);
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(app.mode, Mode::Browse);
    assert_eq!(f.read("d.txt").unwrap(), "d\nd2\n");
    assert_eq!(app.history.items().len(), 7);
}

#[test]
fn x_reverts_one_snapshot_and_keeps_the_later_ones() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 4); // c.txt created
    press(&mut app, KeyCode::Char('x'));
    assert!(matches!(app.mode, Mode::Confirm(_)), "{:?}", app.status);
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(f.read("c.txt"), None, "the call's file is gone");
    assert_eq!(f.read("a.txt").unwrap(), "one\ntwo\n", "#5 stays");
    assert_eq!(f.read("d.txt").unwrap(), "d\nd2\n", "#6 and #7 stay");
    assert!(
        app.status.as_deref().unwrap().starts_with("reverted #4"),
        "{:?}",
        app.status
    );
    let head = app.history.head().unwrap();
    assert!(head.meta("revert").is_some());
}

#[test]
fn a_revert_that_meets_later_work_names_the_conflict() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 6); // d.txt created, then changed by #7
    press(&mut app, KeyCode::Char('x'));
    let Mode::Confirm(pending) = &app.mode else {
        panic!("no confirmation: {:?}", app.status);
    };
    assert!(
        pending.lines.iter().any(|l| l.contains("conflict: d.txt")),
        "{:?}",
        pending.lines
    );
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(f.read("d.txt").unwrap(), "d\nd2\n", "left as it is");
}

#[test]
fn search_finds_messages_and_paths_and_n_finds_the_next() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "by hand");
    press(&mut app, KeyCode::Enter);
    assert_eq!(selected_seq(&app), 1);
    press(&mut app, KeyCode::Char('g'));
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "b.txt");
    press(&mut app, KeyCode::Enter);
    assert_eq!(selected_seq(&app), 3);
    press(&mut app, KeyCode::Char('n'));
    assert_eq!(selected_seq(&app), 2);
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "nowhere");
    press(&mut app, KeyCode::Enter);
    assert!(
        app.status
            .as_deref()
            .unwrap()
            .contains("no snapshot matches")
    );
}

#[test]
fn search_unfolds_the_group_it_finds_in() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 5);
    press(&mut app, KeyCode::Char('h')); // up to turn 2
    press(&mut app, KeyCode::Char('k')); // session s-one
    press(&mut app, KeyCode::Char(' ')); // fold it
    assert!(app.timeline.rows()[app.selected].folded);
    press(&mut app, KeyCode::Char('/'));
    typed(&mut app, "c.txt");
    press(&mut app, KeyCode::Enter);
    assert_eq!(selected_seq(&app), 4);
}

#[test]
fn b_blames_the_selected_file_line_by_line() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 3);
    press(&mut app, KeyCode::Char('b'));
    let Mode::Blame(view) = &app.mode else {
        panic!("no blame: {:?}", app.status);
    };
    assert_eq!(view.lines.len(), 2);
    assert!(view.lines[0].starts_with("#2 "), "{:?}", view.lines);
    assert!(
        view.lines[1].starts_with("#3 ") && view.lines[1].ends_with("b2"),
        "{:?}",
        view.lines
    );
    press(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Browse);
}

#[test]
fn d_and_m_change_what_the_diff_compares_with() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    select(&mut app, 3);
    assert!(app.detail.diff.iter().any(|l| l.text == "+b2"));
    press(&mut app, KeyCode::Char('d'));
    assert_eq!(app.base, crate::detail::Base::WorkingTree);
    assert_eq!(
        app.detail.diff[0].text, "no difference",
        "b.txt is as #3 left it"
    );
    select(&mut app, 1);
    press(&mut app, KeyCode::Char('m'));
    select(&mut app, 3);
    press(&mut app, KeyCode::Char('d'));
    assert_eq!(app.base, crate::detail::Base::Marked);
    assert!(
        app.detail.diff.iter().any(|l| l.text == "+b1"),
        "{:?}",
        app.detail.diff
    );
}

#[test]
fn a_save_elsewhere_is_seen_by_polling_the_catalog() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    f.write("new.txt", "new\n");
    f.save("from another process");
    app.poll().unwrap();
    assert_eq!(app.history.items().len(), 8);
    assert_eq!(app.history.head().unwrap().snapshot.record.seq, 8);
}

#[test]
fn the_store_is_free_while_the_ui_is_open() {
    let f = Fixture::agent_history();
    let _app = open(&f);
    // A writer gets the lock at once: the UI read its data and closed the store.
    snap_tree::cap_lock_wait(std::time::Duration::from_millis(100));
    f.write("x.txt", "x\n");
    f.save("while the ui is open");
}

#[test]
fn x_on_a_turn_s_row_reverts_the_whole_turn() {
    let f = Fixture::agent_history();
    let mut app = open(&f);
    // Turn 1 of s-one (folded, as every turn but HEAD's is on opening): #2 and #3 (b.txt),
    // #4 (c.txt).
    app.selected = (app.timeline.rows().iter())
        .position(|r| {
            matches!(r.kind, crate::timeline::RowKind::Turn { .. })
                && app.history.items()[r.at].snapshot.record.seq == 4
        })
        .unwrap();
    assert!(app.timeline.rows()[app.selected].folded);
    app.load_detail();
    press(&mut app, KeyCode::Char('x'));
    let Mode::Confirm(pending) = &app.mode else {
        panic!("no confirmation: {:?}", app.status);
    };
    assert!(pending.title.contains("#2..#4"), "{}", pending.title);
    press(&mut app, KeyCode::Char('y'));
    assert_eq!(f.read("b.txt"), None);
    assert_eq!(f.read("c.txt"), None);
    assert_eq!(f.read("a.txt").unwrap(), "one\ntwo\n", "turn 2 stays");
    assert_eq!(f.read("d.txt").unwrap(), "d\nd2\n", "s-two stays");
}
