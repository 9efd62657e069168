//! `snap mcp`: a stdio MCP server bound to one workspace at launch (`-C DIR` or the current
//! directory; it never learns roots from the client). Each tool runs this program once with
//! `--json`, so a result is exactly the document docs/JSON.md describes, the store lock is
//! held only during a call (the server may live for a whole session), and a failed call is
//! a tool error carrying snap's message, never a crash of the server.
//!
//! Read-only tools are annotated so; `snap_save` is not destructive; `snap_undo`,
//! `snap_redo`, `snap_restore` and `snap_revert` are, and preview by default (`dry_run`
//! true), so a model looks first and passes `dry_run: false` to act. There is no prune, gc
//! or delete here.

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ErrorData, ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use crate::ctx::Ctx;

mod args;
mod framing;

use args::{
    CatArgs, Checked, DiffArgs, LogArgs, MoveArgs, NoArgs, RefArgs, RestoreArgs, RevertArgs,
    SaveArgs,
};

/// The server: the workspace it is bound to and how to run snap on it.
#[derive(Clone, Debug)]
pub(crate) struct SnapServer {
    root: PathBuf,
    store: Option<PathBuf>,
    bin: PathBuf,
    tool_router: ToolRouter<SnapServer>,
}

#[tool_router]
impl SnapServer {
    fn new(root: PathBuf, store: Option<PathBuf>, bin: PathBuf) -> SnapServer {
        SnapServer {
            root,
            store,
            bin,
            tool_router: Self::tool_router(),
        }
    }

    /// The working tree against HEAD: what changed since the last snapshot.
    #[tool(annotations(read_only_hint = true))]
    async fn snap_status(
        &self,
        Parameters(a): Parameters<Checked<NoArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_status", a, Effect::Reads, |NoArgs {}| {
            vec!["status".into()]
        })
        .await
    }

    /// The snapshots, newest first, with their messages, sessions, steps and changes.
    #[tool(annotations(read_only_hint = true))]
    async fn snap_log(
        &self,
        Parameters(a): Parameters<Checked<LogArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_log", a, Effect::Reads, |a| {
            let mut args = vec!["log".into(), "-n".into(), a.limit.unwrap_or(20).to_string()];
            if a.all {
                args.push("--all".into());
            }
            if let Some(session) = a.session {
                args.extend(["--session".into(), session]);
            }
            if let Some(agent) = a.agent {
                args.extend(["--agent".into(), agent]);
            }
            args
        })
        .await
    }

    /// Line diffs between two snapshots, or a snapshot and the working tree.
    #[tool(annotations(read_only_hint = true))]
    async fn snap_diff(
        &self,
        Parameters(a): Parameters<Checked<DiffArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_diff", a, Effect::Reads, |a| {
            let mut args = vec!["diff".to_string()];
            args.extend(a.from);
            args.extend(a.to);
            if a.stat {
                args.push("--stat".into());
            }
            with_paths(&mut args, a.paths);
            args
        })
        .await
    }

    /// One snapshot and the files it changed.
    #[tool(annotations(read_only_hint = true))]
    async fn snap_show(
        &self,
        Parameters(a): Parameters<Checked<RefArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_show", a, Effect::Reads, |a| {
            vec!["show".into(), a.reference]
        })
        .await
    }

    /// A file's content in a snapshot.
    #[tool(annotations(read_only_hint = true))]
    async fn snap_cat(
        &self,
        Parameters(a): Parameters<Checked<CatArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_cat", a, Effect::Reads, |a| {
            vec!["cat".into(), a.reference, a.path]
        })
        .await
    }

    /// Snapshot the working tree if anything changed (it can be undone like any change).
    #[tool(annotations(
        read_only_hint = false,
        destructive_hint = false,
        idempotent_hint = true
    ))]
    async fn snap_save(
        &self,
        Parameters(a): Parameters<Checked<SaveArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_save", a, Effect::Saves, |a| {
            let mut args = vec!["save".to_string()];
            if let Some(message) = a.message {
                args.extend(["-m".into(), message]);
            }
            if let Some(step) = a.step {
                args.extend(["--step".into(), step.to_string()]);
            }
            if let Some(session) = a.session {
                args.extend(["--session".into(), session]);
            }
            args
        })
        .await
    }

    /// Go back N snapshots (or agent turns). Previews unless dry_run is false; unsaved
    /// changes are saved first, and snap_redo brings everything back.
    #[tool(annotations(destructive_hint = true))]
    async fn snap_undo(
        &self,
        Parameters(a): Parameters<Checked<MoveArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_undo", a, Effect::Moves, |a| move_args("undo", &a))
            .await
    }

    /// Go forward again along what undo left. Previews unless dry_run is false.
    #[tool(annotations(destructive_hint = true))]
    async fn snap_redo(
        &self,
        Parameters(a): Parameters<Checked<MoveArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_redo", a, Effect::Moves, |a| move_args("redo", &a))
            .await
    }

    /// Make the working tree (or some paths) match a snapshot, recorded as a new snapshot.
    /// Previews unless dry_run is false.
    #[tool(annotations(destructive_hint = true))]
    async fn snap_restore(
        &self,
        Parameters(a): Parameters<Checked<RestoreArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_restore", a, Effect::Moves, |a| {
            let mut args = vec!["restore".to_string(), a.reference];
            if a.dry_run.unwrap_or(true) {
                args.push("--dry-run".into());
            }
            with_paths(&mut args, a.paths);
            args
        })
        .await
    }

    /// Take back what one snapshot (or with turn, one agent turn) changed, keeping what came
    /// after; files changed since are conflicts, left alone and listed. Previews unless
    /// dry_run is false.
    #[tool(annotations(destructive_hint = true))]
    async fn snap_revert(
        &self,
        Parameters(a): Parameters<Checked<RevertArgs>>,
    ) -> Result<CallToolResult, ErrorData> {
        self.checked("snap_revert", a, Effect::Moves, |a| {
            let mut args = vec!["revert".to_string()];
            args.extend(a.reference);
            if a.turn {
                args.push("--turn".into());
            }
            if a.dry_run.unwrap_or(true) {
                args.push("--dry-run".into());
            }
            with_paths(&mut args, a.paths);
            args
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for SnapServer {
    fn get_info(&self) -> ServerConfig {
        let mut config = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions(format!(
                "Undo and redo for the files of {}. Every change snap makes can itself be \
                 undone. snap_undo, snap_redo, snap_restore and snap_revert preview by default: look at the \
                 preview, then pass dry_run: false to act.",
                self.root.display()
            ));
        config.server_info = Implementation::new("snap-undo", env!("CARGO_PKG_VERSION"));
        config
    }
}

/// What a tool does to the workspace, for the note on its result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    Reads,
    Saves,
    Moves,
}

fn move_args(op: &str, a: &MoveArgs) -> Vec<String> {
    let mut args = vec![op.to_string(), a.n.unwrap_or(1).max(1).to_string()];
    if a.turn {
        args.push("--turn".into());
    }
    if a.dry_run.unwrap_or(true) {
        args.push("--dry-run".into());
    }
    args
}

fn with_paths(args: &mut Vec<String>, paths: Vec<String>) {
    if !paths.is_empty() {
        args.push("--".into());
        args.extend(paths);
    }
}

impl SnapServer {
    /// Runs the command `build` makes of a call's arguments, if they fit the tool's schema;
    /// otherwise answers with a tool error naming what does not fit, and runs nothing.
    async fn checked<T>(
        &self,
        tool: &str,
        args: Checked<T>,
        effect: Effect,
        build: impl FnOnce(T) -> Vec<String>,
    ) -> Result<CallToolResult, ErrorData> {
        match args.0 {
            Ok(args) => self.call(build(args), effect).await,
            Err(why) => Ok(CallToolResult::structured_error(json!({
                "error": format!("invalid arguments for {tool}: {why}; nothing was done"),
                "exit_code": 2,
            }))),
        }
    }

    /// Runs `snap --json ARGS` on the bound workspace: its document as the structured result,
    /// or a tool error with snap's message and exit code.
    async fn call(&self, args: Vec<String>, effect: Effect) -> Result<CallToolResult, ErrorData> {
        let mut cmd = Command::new(&self.bin);
        cmd.arg("-C")
            .arg(&self.root)
            .arg("--json")
            .arg("--no-progress");
        if let Some(store) = &self.store {
            cmd.arg("--store").arg(store);
        }
        cmd.args(&args).env_remove("SNAP_STORE");
        let out = tokio::task::spawn_blocking(move || cmd.output())
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
            .map_err(|e| ErrorData::internal_error(format!("cannot run snap: {e}"), None))?;
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let code = out.status.code().unwrap_or(1);
        if code != 0 {
            let message = doc["error"]
                .as_str()
                .map(str::to_owned)
                .unwrap_or_else(|| String::from_utf8_lossy(&out.stderr).trim().to_string());
            return Ok(CallToolResult::structured_error(
                json!({"error": message, "exit_code": code}),
            ));
        }
        let mut result = CallToolResult::structured(doc.clone());
        if let Some(note) = note(effect, &doc) {
            result.content.push(ContentBlock::text(note));
        }
        Ok(result)
    }
}

/// What a model should know after a change: that it can be undone, and what was put aside.
fn note(effect: Effect, doc: &Value) -> Option<String> {
    match effect {
        Effect::Reads => None,
        Effect::Saves => Some("Saved; snap_undo goes back to before this snapshot.".into()),
        Effect::Moves if doc["dry_run"] == true => Some(
            "This was a preview: nothing changed. Call again with dry_run: false to act.".into(),
        ),
        Effect::Moves => {
            let auto = doc["auto_saved"]["seq"]
                .as_u64()
                .map_or(String::new(), |seq| {
                    format!(" Unsaved changes were saved first as snapshot #{seq}.")
                });
            Some(format!(
                "Done. This can itself be undone (snap_undo after a restore, snap_redo after \
                 an undo).{auto} Read changed files again before relying on them."
            ))
        }
    }
}

/// Serves MCP on stdin and stdout until the client closes them.
pub(crate) fn cmd_mcp(ctx: &Ctx) -> Result<()> {
    let root = ctx
        .start
        .canonicalize()
        .with_context(|| format!("cannot open {}", ctx.start.display()))?;
    let root = snap_tree::find_root(&root).unwrap_or(root);
    let bin = std::env::current_exe().context("cannot find the snap binary")?;
    let server = SnapServer::new(root, ctx.store.clone(), bin);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    let served = runtime.block_on(async {
        let (transport, framing) = framing::stdio();
        let service = server
            .serve(transport)
            .await
            .context("MCP initialization failed")?;
        service.waiting().await.context("the MCP session failed")?;
        framing.finish().await;
        Ok(())
    });
    // The task reading stdin may still wait in a blocking read: not waited for.
    runtime.shutdown_background();
    served
}

/// `snap mcp` takes no arguments of its own.
#[derive(Debug, clap::Args)]
pub(crate) struct McpArgs {}

/// Runs `snap mcp`.
pub(crate) fn run(ctx: &Ctx, _args: McpArgs) -> Result<()> {
    cmd_mcp(ctx)
}
