//! Opening the workspace for a command: writing commands finish an interrupted move first,
//! reading ones leave it and say so; both attach the watcher and the progress observer.

use anyhow::Result;
use snap_tree::{ReadOnlyWorkspace, Workspace};

use crate::ctx::Ctx;
use crate::progress;
use crate::render::{print_kept, recovered_line};
use snap_tree::watcher;

/// Opens the workspace for a command that writes (an interrupted move is finished first).
pub(crate) fn open(ctx: &Ctx) -> Result<Workspace> {
    let mut ws = Workspace::discover(&ctx.start, ctx.store.as_deref())?;
    watcher::attach(&mut ws);
    if let Some(observer) = progress::observer(ctx) {
        ws.set_observer(observer);
    }
    for r in ws.recovered() {
        eprintln!("snap: {}", recovered_line(r));
        print_kept(r.op.as_str(), &r.kept);
        crate::render::print_saved_first(r);
    }
    Ok(ws)
}

/// True when `e` says there is no store yet (so `save` creates one).
pub(crate) fn is_missing_store(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<snap_tree::TreeError>(),
        Some(
            snap_tree::TreeError::NoWorkspace(_)
                | snap_tree::TreeError::Store(snap_tree::StoreError::NotFound(_))
        )
    )
}

/// Opens the workspace for a command that only reads: an interrupted operation is left for
/// a writing command or `snap recover` (docs/SAFETY.md), and named on stderr.
pub(crate) fn open_reading(ctx: &Ctx) -> Result<ReadOnlyWorkspace> {
    let mut ws = Workspace::discover_reading(&ctx.start, ctx.store.as_deref())?;
    watcher::attach(&mut ws);
    for m in ws.pending()? {
        eprintln!(
            "snap: an interrupted {} is pending; run `snap recover` to finish it",
            m.op.as_str()
        );
    }
    Ok(ws)
}
