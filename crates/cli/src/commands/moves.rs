//! `snap undo`, `snap rewind` and `snap redo`: move along the undo chain.

use snap_tree::{ObjectId, Snapshot};

use super::{
    Ctx, MoveArgs, Result, Run, TreeError, Workspace, bail, emit, json, json_only, open, print_move,
};

pub(crate) fn cmd_move(ctx: &Ctx, args: MoveArgs, redo: bool) -> Result<()> {
    let ws = open(ctx)?;
    let run = Run::dry_run_if(args.dry_run);
    if redo && args.to.is_some() {
        bail!("redo has no --to: `snap redo N` or `snap redo --turn`");
    }
    let out = if let Some(reference) = &args.to {
        ws.undo_to(&ws.resolve(reference)?.id, run)?
    } else if redo && args.turn {
        ws.redo(turn_redo_count(&ws, args.n)?, run)?
    } else if redo {
        ws.redo(args.n, run)?
    } else if args.turn {
        ws.undo_to(&turn_start(&ws, args.n)?, run)?
    } else {
        ws.undo(args.n, run)?
    };
    emit(
        ctx,
        json_only(ctx, || json::value(&json::MoveDoc::from(&out))),
        || print_move(&out, ctx.quiet),
    );
    Ok(())
}

/// Where the `n`th last turn of HEAD's session began: its prompt's snapshot, or else the
/// last snapshot before the turn. A turn in which nothing happened yet (HEAD is its
/// prompt's snapshot) does not count.
fn turn_start(ws: &Workspace, n: u64) -> Result<ObjectId> {
    let head = ws
        .head()?
        .ok_or_else(|| nothing("there are no snapshots yet"))?;
    let Some(session) = head.record.session.clone() else {
        return Err(nothing("HEAD was not saved by an agent hook (it has no session)").into());
    };
    let turn = head.record.step.unwrap_or(0);
    // An empty current turn (HEAD is its prompt's snapshot) is not one of the n.
    let empty = turn_start_at(ws, &head, &session, turn)? == head.id;
    let skip = if empty { n } else { n - 1 };
    let first = turn
        .checked_sub(skip)
        .ok_or_else(|| nothing("this session has fewer turns"))?;
    turn_start_at(ws, &head, &session, first)
}

/// Walks back from `head` to the start of turn `first` of `session`.
fn turn_start_at(ws: &Workspace, head: &Snapshot, session: &str, first: u64) -> Result<ObjectId> {
    let mut current = head.clone();
    loop {
        let r = &current.record;
        let in_turn = r.session.as_deref() == Some(session) && r.step.is_some_and(|s| s >= first);
        let prompt = r
            .meta
            .iter()
            .any(|(k, v)| k == "hook" && v == crate::hook::PROMPT);
        if !in_turn || (prompt && r.step == Some(first)) {
            return Ok(current.id);
        }
        current = ws
            .parent_of(&current)?
            .ok_or_else(|| nothing(&format!("no snapshot before turn {first} of this session")))?;
    }
}

fn nothing(why: &str) -> TreeError {
    TreeError::NothingToUndo(why.to_string())
}

/// How many snapshots of the redo stack the next `n` turns hold: the snapshots an
/// `undo --turn` passed, one turn (session and step) after another.
fn turn_redo_count(ws: &Workspace, n: u64) -> Result<u64> {
    let redo = ws.store().history()?.redo;
    let mut count = 0;
    let mut turns = 0;
    let mut current = None;
    for id in redo.iter().rev() {
        let record = ws.snapshot(*id)?.record;
        let turn = (record.session, record.step);
        if current.as_ref() != Some(&turn) {
            turns += 1;
            if turns > n {
                break;
            }
            current = Some(turn);
        }
        count += 1;
    }
    if count == 0 {
        return Err(TreeError::NothingToRedo("the redo stack is empty".into()).into());
    }
    Ok(count)
}
