//! Test fixtures: real workspaces in temp directories holding an agent's history.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use snap_tree::{SaveOptions, Snapshot, Workspace};
use tempfile::TempDir;

use crate::Source;

/// A workspace and a [`Source`] over it.
pub(crate) struct Fixture {
    pub(crate) dir: TempDir,
    pub(crate) source: Source,
}

impl Fixture {
    /// An empty workspace.
    pub(crate) fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        Workspace::init(dir.path(), None, false).unwrap();
        let source = Source::new(dir.path(), None);
        Fixture { dir, source }
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn write(&self, path: &str, content: &str) {
        let abs = self.root().join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, content).unwrap();
    }

    pub(crate) fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root().join(path)).ok()
    }

    /// Saves as an agent's hook does after tool call `call` of turn `step`.
    pub(crate) fn call(&self, session: &str, step: u64, tool: &str, call: &str) -> Snapshot {
        let ws = Workspace::discover(self.root(), None).unwrap();
        let opts = SaveOptions {
            session: Some(session.into()),
            step: Some(step),
            meta: vec![
                ("tool".into(), tool.into()),
                ("tool_use_id".into(), call.into()),
            ],
            ..SaveOptions::default()
        };
        ws.save(&opts).unwrap().snapshot.unwrap()
    }

    /// A plain save with a message.
    pub(crate) fn save(&self, message: &str) -> Snapshot {
        let ws = Workspace::discover(self.root(), None).unwrap();
        let opts = SaveOptions {
            message: message.into(),
            ..SaveOptions::default()
        };
        ws.save(&opts).unwrap().snapshot.unwrap()
    }

    /// `a.txt` saved by hand, then two sessions: `s-one` with turn 1 (one call of two
    /// snapshots on `b.txt`, one on `c.txt`) and turn 2 (`a.txt`), then `s-two` turn 1
    /// (`d.txt`). Seven snapshots, #7 HEAD.
    pub(crate) fn agent_history() -> Fixture {
        let f = Fixture::new();
        f.write("a.txt", "one\n");
        f.save("by hand");
        f.write("b.txt", "b1\n");
        f.call("s-one", 1, "Write", "call-1");
        f.write("b.txt", "b1\nb2\n");
        f.call("s-one", 1, "Edit", "call-1");
        f.write("c.txt", "c\n");
        f.call("s-one", 1, "Write", "call-2");
        f.write("a.txt", "one\ntwo\n");
        f.call("s-one", 2, "Edit", "call-3");
        f.write("d.txt", "d\n");
        f.call("s-two", 1, "Write", "call-4");
        f.write("d.txt", "d\nd2\n");
        f.call("s-two", 1, "Edit", "call-5");
        f
    }
}
