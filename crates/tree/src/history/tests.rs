use proptest::prelude::*;
use snap_store::{ChangeStats, ObjectId, SnapshotKind, SnapshotRecord};

use super::*;
use crate::error::TreeError;

fn id(n: u64) -> ObjectId {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&n.to_le_bytes());
    ObjectId(bytes)
}

/// One record to build a history from: its parent's number, session, step and meta.
struct Rec {
    parent: Option<u64>,
    session: Option<&'static str>,
    step: Option<u64>,
    meta: Vec<(&'static str, &'static str)>,
    lines: Option<(u64, u64)>,
}

fn rec(parent: Option<u64>, session: Option<&'static str>, step: Option<u64>) -> Rec {
    Rec {
        parent,
        session,
        step,
        meta: Vec::new(),
        lines: None,
    }
}

fn prompt(parent: Option<u64>, session: &'static str, step: u64) -> Rec {
    let mut r = rec(parent, Some(session), Some(step));
    r.meta.push(("hook", PROMPT_EVENT));
    r
}

/// Records numbered 1.. in the order given.
fn records(recs: Vec<Rec>) -> Vec<(ObjectId, SnapshotRecord)> {
    (recs.into_iter().enumerate())
        .map(|(i, r)| {
            let seq = i as u64 + 1;
            let record = SnapshotRecord {
                seq,
                root: id(1000 + seq),
                parent: r.parent.map(id),
                time_ns: seq as i64,
                kind: SnapshotKind::Save,
                message: format!("s{seq}"),
                step: r.step,
                session: r.session.map(str::to_owned),
                meta: (r.meta.into_iter())
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect(),
                stats: ChangeStats {
                    lines: r.lines,
                    ..ChangeStats::default()
                },
            };
            (id(seq), record)
        })
        .collect()
}

fn seqs(history: &History, at: impl Iterator<Item = usize>) -> Vec<u64> {
    at.map(|i| history.items()[i].snapshot.record.seq).collect()
}

/// 1 <- 2 <- 3 <- 4, and 5 on 2: HEAD 5, 3 still listed on the redo stack, 4 abandoned.
#[test]
fn standing_marks_head_line_redo_and_abandoned() {
    let recs = vec![
        rec(None, None, None),
        rec(Some(1), None, None),
        rec(Some(2), None, None),
        rec(Some(3), None, None),
        rec(Some(2), None, None),
    ];
    // The model takes the redo stack as the catalog holds it.
    let history = History::new(Some(id(5)), vec![id(3)], records(recs));
    let standing: Vec<(u64, Standing)> = (history.items().iter())
        .map(|i| (i.snapshot.record.seq, i.standing))
        .collect();
    assert_eq!(
        standing,
        [
            (5, Standing::Head),
            (4, Standing::Abandoned),
            (3, Standing::Redo),
            (2, Standing::Line),
            (1, Standing::Line),
        ]
    );
    let log: Vec<u64> = (history.log(Lines::Current).iter())
        .map(|e| e.snapshot.record.seq)
        .collect();
    assert_eq!(log, [5, 3, 2, 1]);
    assert_eq!(history.log(Lines::All).len(), 5);
}

#[test]
fn groups_follow_sessions_turns_and_calls_in_time_order() {
    let mut call_a = rec(Some(2), Some("s"), Some(1));
    call_a.meta.push(("tool_use_id", "a"));
    call_a.lines = Some((3, 1));
    let mut call_a_again = rec(Some(3), Some("s"), Some(1));
    call_a_again.meta.push(("tool_use_id", "a"));
    call_a_again.lines = Some((2, 0));
    let recs = vec![
        rec(None, None, None),
        prompt(Some(1), "s", 1),
        call_a,
        call_a_again,
        rec(Some(4), Some("s"), Some(1)),
        prompt(Some(5), "s", 2),
        rec(Some(6), None, None),
        rec(Some(7), Some("s"), Some(2)),
    ];
    let history = History::new(Some(id(8)), Vec::new(), records(recs));
    let groups = history.groups(Lines::Current);
    type Turns = Vec<(Option<u64>, Vec<Vec<u64>>)>;
    let shape: Vec<(Option<&str>, Turns)> = (groups.iter())
        .map(|g| {
            let turns = (g.turns.iter())
                .map(|t| {
                    let calls = (t.calls.iter())
                        .map(|c| seqs(&history, c.items.iter().copied()))
                        .collect();
                    (t.step, calls)
                })
                .collect();
            (g.session.as_deref(), turns)
        })
        .collect();
    assert_eq!(
        shape,
        [
            (Some("s"), vec![(Some(2), vec![vec![8]])]),
            (None, vec![(None, vec![vec![7]])]),
            (
                Some("s"),
                vec![
                    (Some(2), vec![vec![6]]),
                    (Some(1), vec![vec![5], vec![4, 3], vec![2]]),
                ]
            ),
            (None, vec![(None, vec![vec![1]])]),
        ]
    );
    let turn_one = &groups[2].turns[1];
    assert_eq!(
        turn_one.lines(&history),
        LineCount {
            added: 5,
            removed: 1
        }
    );
}

/// A session of three turns: prompt, two tool calls each.
fn three_turns() -> Vec<Rec> {
    let mut recs = vec![rec(None, None, None)];
    for step in 1..=3u64 {
        let before = recs.len() as u64;
        recs.push(prompt(Some(before), "s", step));
        recs.push(rec(Some(before + 1), Some("s"), Some(step)));
        recs.push(rec(Some(before + 2), Some("s"), Some(step)));
    }
    recs
}

#[test]
fn turn_start_and_redo_count_read_turns() {
    // 1 | 2p 3 4 | 5p 6 7 | 8p 9 10
    let history = History::new(Some(id(10)), Vec::new(), records(three_turns()));
    assert_eq!(history.turn_start(1).ok(), Some(id(8)));
    assert_eq!(history.turn_start(2).ok(), Some(id(5)));
    assert_eq!(history.turn_start(3).ok(), Some(id(2)));
    // Turn 0 (before the first prompt) ends at the snapshot before the session.
    assert_eq!(history.turn_start(4).ok(), Some(id(1)));
    assert!(history.turn_start(5).is_err());
    // HEAD on a turn's prompt: that empty turn does not count.
    let at_prompt = History::new(Some(id(8)), Vec::new(), records(three_turns()));
    assert_eq!(at_prompt.turn_start(1).ok(), Some(id(5)));
    // Undone by a turn: 10, 9, 8 on the redo stack (next redo last).
    let undone = History::new(
        Some(id(7)),
        vec![id(10), id(9), id(8)],
        records(three_turns()),
    );
    assert_eq!(undone.turn_redo_count(1).ok(), Some(3));
    let none = History::new(Some(id(10)), Vec::new(), records(three_turns()));
    assert!(matches!(
        none.turn_redo_count(1),
        Err(TreeError::NothingToRedo(_))
    ));
}

/// A watcher autosaving with no session of its own beside an agent's hooks: its autosaves
/// inside a turn are the turn's, so `undo --turn` goes back past them to the turn's start and
/// `redo --turn` brings them back with it.
#[test]
fn a_sessionless_autosave_burst_inside_a_turn_is_the_turn_s() {
    let autosave = |parent: u64| {
        let mut r = rec(Some(parent), None, None);
        r.meta.push((AUTOSAVE_KEY, "1"));
        r
    };
    // 1 | 2p 3 a4 a5 6 | 7p a8 9
    let recs = || {
        vec![
            rec(None, None, None),
            prompt(Some(1), "s", 1),
            rec(Some(2), Some("s"), Some(1)),
            autosave(3),
            autosave(4),
            rec(Some(5), Some("s"), Some(1)),
            prompt(Some(6), "s", 2),
            autosave(7),
            rec(Some(8), Some("s"), Some(2)),
        ]
    };
    let history = History::new(Some(id(9)), Vec::new(), records(recs()));
    assert_eq!(history.turn_start(1).ok(), Some(id(7)));
    assert_eq!(history.turn_start(2).ok(), Some(id(2)));
    // HEAD on an autosave in the middle of turn 1: the turn began at its prompt.
    let mid = History::new(Some(id(5)), Vec::new(), records(recs()));
    assert_eq!(mid.turn_start(1).ok(), Some(id(2)));
    // Undone by a turn: 9, 8, 7 on the redo stack; one turn redoes all three, and turn 1's
    // five (3, 4, 5, 6 after its prompt 2) with its burst in the middle.
    let undone = History::new(Some(id(6)), vec![id(9), id(8), id(7)], records(recs()));
    assert_eq!(undone.turn_redo_count(1).ok(), Some(3));
    let back = History::new(
        Some(id(2)),
        (3..=9).rev().map(id).collect(),
        records(recs()),
    );
    assert_eq!(back.turn_redo_count(1).ok(), Some(4));
}

#[test]
fn turn_of_spans_a_turn_from_any_of_its_snapshots() {
    let history = History::new(Some(id(10)), Vec::new(), records(three_turns()));
    for member in [5, 6, 7] {
        let span = history.turn_of(&id(member)).ok();
        assert_eq!(
            span.map(|s| (s.step, s.before, s.last)),
            Some((2, id(5), id(7))),
            "from #{member}"
        );
    }
    // Not an agent's snapshot.
    assert!(history.turn_of(&id(1)).is_err());
}

#[test]
fn turn_of_without_a_prompt_begins_before_its_first_and_stays_on_its_line() {
    // 1 <- 2(s,1) <- 3(s,1); 4(s,1) on 2, another line.
    let recs = vec![
        rec(None, None, None),
        rec(Some(1), Some("s"), Some(1)),
        rec(Some(2), Some("s"), Some(1)),
        rec(Some(2), Some("s"), Some(1)),
    ];
    let history = History::new(Some(id(3)), Vec::new(), records(recs));
    let span = history.turn_of(&id(3)).ok();
    assert_eq!(span.map(|s| (s.before, s.last)), Some((id(1), id(3))));
    let from_two = history.turn_of(&id(2)).ok();
    // 4 is newer and descends from 2 as well: the newest descendant wins.
    assert_eq!(from_two.map(|s| s.last), Some(id(4)));
    // The state before the turn pruned: refused.
    let mut pruned = records(vec![
        rec(None, None, None),
        rec(Some(1), Some("s"), Some(1)),
    ]);
    pruned.remove(0);
    let history = History::new(Some(id(2)), Vec::new(), pruned);
    assert!(matches!(
        history.turn_of(&id(2)),
        Err(TreeError::ParentPruned(_))
    ));
}

fn arb_history() -> impl Strategy<Value = (History, Lines)> {
    let one = (any::<u8>(), 0..3u8, 0..3u64, 0..3u8, any::<bool>());
    (
        prop::collection::vec(one, 1..40),
        any::<u8>(),
        any::<bool>(),
    )
        .prop_map(|(shape, head, all)| {
            let recs: Vec<Rec> = (shape.iter().enumerate())
                .map(|(i, (parent, session, step, call, is_prompt))| {
                    let parent = (i > 0).then(|| (*parent as u64 % i as u64) + 1);
                    let session = [None, Some("a"), Some("b")][*session as usize];
                    let mut r = rec(parent, session, Some(*step));
                    if *call > 0 {
                        r.meta
                            .push(("tool_use_id", ["x", "y", "z"][*call as usize - 1]));
                    }
                    if *is_prompt {
                        r.meta.push(("hook", PROMPT_EVENT));
                    }
                    r
                })
                .collect();
            let head = id(head as u64 % recs.len() as u64 + 1);
            let history = History::new(Some(head), Vec::new(), records(recs));
            (history, Lines::all_if(all))
        })
}

proptest! {
    /// The groups hold exactly the listed snapshots, newest first, each once; every group's
    /// members share what names the group.
    #[test]
    fn groups_partition_the_listing((history, lines) in arb_history()) {
        let listed: Vec<usize> = (0..history.items().len())
            .filter(|&i| lines.holds(history.items()[i].standing))
            .collect();
        let groups = history.groups(lines);
        let mut seen = Vec::new();
        for g in &groups {
            for t in &g.turns {
                for at in t.items() {
                    let item = &history.items()[at];
                    prop_assert_eq!(item.session(), g.session.as_deref());
                    prop_assert_eq!(item.step(), t.step);
                    seen.push(at);
                }
            }
        }
        prop_assert_eq!(seen, listed);
        // Every turn span found from a snapshot holds it between its ends.
        for item in history.items() {
            if let Ok(span) = history.turn_of(&item.snapshot.id) {
                let last = history.get(&span.last).expect("listed");
                let before = history.get(&span.before).expect("listed");
                prop_assert!(history.descends(last, item));
                prop_assert!(history.descends(item, before));
            }
        }
    }
}

/// A session is named whole or by a prefix only it begins; an abandoned line's sessions
/// count too.
#[test]
fn resolve_session_takes_unique_prefixes() {
    let recs = vec![
        rec(None, Some("aaaa1111-x"), None),
        rec(Some(1), Some("aaaa2222-y"), None),
        rec(Some(2), Some("aaaa"), None),
        rec(Some(1), Some("bbbb3333-z"), None),
    ];
    let history = History::new(Some(id(4)), Vec::new(), records(recs));
    assert_eq!(history.resolve_session("bbbb").unwrap(), "bbbb3333-z");
    assert_eq!(history.resolve_session("aaaa2").unwrap(), "aaaa2222-y");
    // A whole session wins over the longer ones it begins.
    assert_eq!(history.resolve_session("aaaa").unwrap(), "aaaa");
    match history.resolve_session("aaa") {
        Err(TreeError::AmbiguousSession { candidates, .. }) => {
            assert_eq!(candidates, ["aaaa", "aaaa1111-x", "aaaa2222-y"])
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        history.resolve_session("c"),
        Err(TreeError::UnknownSession(_))
    ));
    assert!(matches!(
        history.resolve_session(""),
        Err(TreeError::UnknownSession(_))
    ));
}
