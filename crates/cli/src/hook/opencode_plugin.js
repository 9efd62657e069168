// snap-undo's opencode plugin, written by `snap-undo hook install --agent opencode`.
// Saves a snapshot when a session starts, before each prompt and after each tool call, by
// handing the event to `snap-undo hook`, which never fails (it exits 0 and logs problems to
// .snap/hook.log). Remove it with `snap-undo hook uninstall --agent opencode`.
import { spawnSync } from "node:child_process";

const SNAP_UNDO = __SNAP_UNDO__;

function hook(directory, payload) {
  try {
    // Synchronous on purpose: the snapshot is taken before the next tool runs.
    spawnSync(SNAP_UNDO, ["hook", "--agent", "opencode"], {
      input: JSON.stringify({ ...payload, directory }),
      cwd: directory,
      stdio: ["pipe", "ignore", "ignore"],
      timeout: 30000,
    });
  } catch {
    // A missing binary must not break opencode either.
  }
}

export const SnapUndo = async ({ directory }) => ({
  event: async ({ event }) => {
    if (event?.type === "session.created") {
      hook(directory, { event: "session.created", sessionID: event.properties?.info?.id });
    }
  },
  "chat.message": async (input) => {
    hook(directory, { event: "chat.message", sessionID: input?.sessionID, messageID: input?.messageID });
  },
  "tool.execute.after": async (input) => {
    hook(directory, {
      event: "tool.execute.after",
      sessionID: input?.sessionID,
      tool: input?.tool,
      callID: input?.callID,
    });
  },
});
