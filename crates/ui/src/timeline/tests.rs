#![allow(clippy::unwrap_used)]

use snap_tree::Lines;

use super::{RowKind, Timeline};
use crate::fixture::Fixture;

/// Each row as `depth kind #seq`, newest first.
fn shape(f: &Fixture, timeline: &Timeline) -> Vec<String> {
    let history = f.source.history().unwrap().0;
    (timeline.rows().iter())
        .map(|r| {
            let seq = history.items()[r.at].snapshot.record.seq;
            let kind = match &r.kind {
                RowKind::Session { name, .. } => {
                    format!("session {}", name.as_deref().unwrap_or("-"))
                }
                RowKind::Turn { step, .. } => {
                    format!("turn {}", step.map_or("-".into(), |s| s.to_string()))
                }
                RowKind::Call => "call".to_string(),
                RowKind::Snapshot => "snapshot".to_string(),
            };
            format!(
                "{} {kind} #{seq}{}",
                r.depth,
                if r.folded { " folded" } else { "" }
            )
        })
        .collect()
}

#[test]
fn rows_are_sessions_turns_calls_and_snapshots_newest_first() {
    let f = Fixture::agent_history();
    let history = f.source.history().unwrap().0;
    let mut timeline = Timeline::default();
    timeline.rebuild(&history, Lines::Current);
    assert_eq!(
        shape(&f, &timeline),
        [
            "0 session s-two #7",
            "1 turn 1 #7",
            "2 snapshot #7",
            "2 snapshot #6",
            "0 session s-one #5",
            "1 turn 2 #5",
            "2 snapshot #5",
            "1 turn 1 #4",
            "2 snapshot #4",
            "2 call #3",
            "3 snapshot #3",
            "3 snapshot #2",
            "0 session - #1",
            "1 turn - #1",
            "2 snapshot #1",
        ]
    );
    let turn = &timeline.rows()[7];
    assert_eq!(
        (turn.count, turn.lines.added),
        (3, 3),
        "turn 1 of s-one: b1, b2, c"
    );
}

#[test]
fn folds_hide_a_group_survive_a_reload_and_reveal_undoes_them() {
    let f = Fixture::agent_history();
    let history = f.source.history().unwrap().0;
    let mut timeline = Timeline::default();
    timeline.rebuild(&history, Lines::Current);
    timeline.toggle(&history, 4); // session s-one
    timeline.rebuild(&history, Lines::Current);
    let rows = shape(&f, &timeline);
    assert_eq!(rows[4], "0 session s-one #5 folded");
    assert_eq!(rows[5], "0 session - #1");
    // Item 5 (#2) is inside the folded session: that row stands nearest to it.
    assert_eq!(timeline.nearest_row(5), Some(4));
    assert_eq!(timeline.row_of(5), None);

    // A new save makes new items; the fold is remembered by its newest snapshot's id.
    f.write("e.txt", "e\n");
    f.call("s-three", 1, "Write", "call-6");
    let history = f.source.history().unwrap().0;
    timeline.rebuild(&history, Lines::Current);
    assert!(shape(&f, &timeline).contains(&"0 session s-one #5 folded".to_string()));

    let at = history.position(&history.items()[6].snapshot.id).unwrap();
    timeline.reveal(&history, at);
    timeline.rebuild(&history, Lines::Current);
    assert!(timeline.row_of(at).is_some());
}

#[test]
fn abandoned_lines_show_only_with_all() {
    let f = Fixture::agent_history();
    let ws = snap_tree::Workspace::discover(f.root(), None).unwrap();
    ws.undo(2, snap_tree::Run::Apply).unwrap();
    drop(ws);
    f.write("z.txt", "z\n");
    f.save("after undo");
    let history = f.source.history().unwrap().0;
    let mut timeline = Timeline::default();
    timeline.rebuild(&history, Lines::Current);
    let current = timeline.rows().len();
    timeline.rebuild(&history, Lines::All);
    assert!(timeline.rows().len() > current, "#6 and #7 are shown again");
    assert!(
        shape(&f, &timeline)
            .iter()
            .any(|r| r.ends_with("snapshot #7"))
    );
}
