//! `snap-undo mcp` driven by rmcp's own client over stdio: initialize, the tool list with
//! its annotations, each tool called, a preview that changes nothing, an undo that does,
//! and errors as tool errors.

use std::path::Path;

use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};
use snap_e2e::*;

type Client = RunningService<rmcp::RoleClient, ()>;

async fn connect(d: &Path) -> Client {
    let mut cmd = tokio::process::Command::new(bin("snap-undo"));
    cmd.arg("mcp").arg("-C").arg(d).env_remove("SNAP_STORE");
    ().serve(TokioChildProcess::new(cmd).unwrap())
        .await
        .unwrap()
}

async fn call(client: &Client, tool: &'static str, args: Value) -> CallToolResult {
    let args = args.as_object().cloned().unwrap_or_default();
    client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(args))
        .await
        .unwrap()
}

fn doc(result: &CallToolResult) -> &Value {
    result.structured_content.as_ref().unwrap()
}

#[tokio::test(flavor = "current_thread")]
async fn an_mcp_client_lists_previews_and_undoes_through_snap_mcp() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\n");
    ok(d, &["save", "-m", "first"]);
    let client = connect(d).await;
    let server = client.peer_info().unwrap().server_info.clone().unwrap();
    assert_eq!(server.name, "snap-undo");
    let tools = client.list_all_tools().await.unwrap();
    let hint = |name: &str| {
        let tool = tools.iter().find(|t| t.name == name).unwrap();
        let a = tool.annotations.clone().unwrap();
        (a.read_only_hint, a.destructive_hint)
    };
    for read in [
        "snap_status",
        "snap_log",
        "snap_diff",
        "snap_show",
        "snap_cat",
    ] {
        assert_eq!(hint(read).0, Some(true), "{read}");
    }
    assert_eq!(hint("snap_save").1, Some(false));
    for moving in ["snap_undo", "snap_redo", "snap_restore", "snap_revert"] {
        assert_eq!(hint(moving).1, Some(true), "{moving}");
    }
    assert!(
        !tools
            .iter()
            .any(|t| ["prune", "gc", "delete"].iter().any(|w| t.name.contains(w)))
    );

    write(d, "a.txt", b"two\n");
    assert_eq!(
        doc(&call(&client, "snap_status", json!({})).await)["clean"],
        false
    );
    let saved = call(&client, "snap_save", json!({"message": "from mcp"})).await;
    assert_eq!(doc(&saved)["snapshot"]["message"], "from mcp");
    let log = call(&client, "snap_log", json!({"limit": 5})).await;
    assert_eq!(doc(&log)["snapshots"].as_array().unwrap().len(), 2);
    let diff = call(&client, "snap_diff", json!({"from": "@~1", "to": "@"})).await;
    assert_eq!(doc(&diff)["files"][0]["path"], "a.txt");
    let show = call(&client, "snap_show", json!({"reference": "@"})).await;
    assert_eq!(doc(&show)["message"], "from mcp");
    let cat = call(
        &client,
        "snap_cat",
        json!({"reference": "@~1", "path": "a.txt"}),
    )
    .await;
    assert_eq!(doc(&cat)["content"], "one\n");

    // A destructive tool previews unless told otherwise.
    let preview = call(&client, "snap_undo", json!({})).await;
    assert_eq!(doc(&preview)["dry_run"], true);
    assert_eq!(read(d, "a.txt"), "two\n");
    let undone = call(&client, "snap_undo", json!({"dry_run": false})).await;
    assert_eq!(doc(&undone)["dry_run"], false);
    assert_eq!(read(d, "a.txt"), "one\n");
    let said = format!("{:?}", undone.content);
    assert!(said.contains("can itself be undone"), "{said}");
    call(&client, "snap_redo", json!({"dry_run": false})).await;
    assert_eq!(read(d, "a.txt"), "two\n");
    let restored = call(
        &client,
        "snap_restore",
        json!({"reference": "#1", "dry_run": false}),
    )
    .await;
    assert_eq!(doc(&restored)["op"], "restore");
    assert_eq!(read(d, "a.txt"), "one\n");
    // Reverting the restore (#3, on #2) previews, then takes a.txt back to two.
    let preview = call(&client, "snap_revert", json!({"reference": "@"})).await;
    assert_eq!(doc(&preview)["dry_run"], true);
    assert_eq!(read(d, "a.txt"), "one\n");
    let reverted = call(
        &client,
        "snap_revert",
        json!({"reference": "@", "dry_run": false}),
    )
    .await;
    assert_eq!(doc(&reverted)["op"], "revert");
    assert_eq!(doc(&reverted)["conflicts"], json!([]));
    assert_eq!(read(d, "a.txt"), "two\n");

    // Failures are tool errors with snap's message; the server goes on.
    let bad = call(&client, "snap_show", json!({"reference": "nope"})).await;
    assert_eq!(bad.is_error, Some(true));
    assert!(doc(&bad)["error"].as_str().unwrap().contains("nope"));
    let nothing = call(&client, "snap_redo", json!({"dry_run": false})).await;
    assert_eq!(
        (nothing.is_error, doc(&nothing)["exit_code"].as_i64()),
        (Some(true), Some(3))
    );
    assert_eq!(
        doc(&call(&client, "snap_status", json!({})).await)["clean"],
        true
    );
    client.cancel().await.unwrap();
    ok(d, &["verify"]);
}

/// A typo'd or ill-typed argument is a tool error naming it, and nothing runs: every
/// tool's schema refuses fields it does not know.
#[tokio::test(flavor = "current_thread")]
async fn unknown_or_ill_typed_arguments_are_refused_before_acting() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.txt", b"one\n");
    ok(d, &["save"]);
    write(d, "a.txt", b"two\n");
    ok(d, &["save"]);
    let client = connect(d).await;
    for tool in client.list_all_tools().await.unwrap() {
        let schema = Value::Object((*tool.input_schema).clone());
        assert_eq!(
            schema["additionalProperties"], false,
            "{}: {schema}",
            tool.name
        );
    }
    let cases = [
        ("snap_undo", json!({"steps": 99, "dry_run": false}), "steps"),
        (
            "snap_undo",
            json!({"n": "3", "dry_run": false}),
            "invalid type",
        ),
        ("snap_status", json!({"verbose": true}), "verbose"),
        (
            "snap_restore",
            json!({"ref": "#1", "dry_run": false}),
            "ref",
        ),
        ("snap_save", json!({"msg": "typo"}), "msg"),
        (
            "snap_revert",
            json!({"reference": "#2", "path": "a.txt", "dry_run": false}),
            "path",
        ),
    ];
    for (tool, args, named) in cases {
        let refused = call(&client, tool, args.clone()).await;
        assert_eq!(refused.is_error, Some(true), "{tool} {args}");
        let error = doc(&refused)["error"].as_str().unwrap().to_string();
        assert!(error.contains(named) && error.contains(tool), "{error}");
        assert_eq!(doc(&refused)["exit_code"], 2);
    }
    client.cancel().await.unwrap();
    assert_eq!(read(d, "a.txt"), "two\n", "nothing was undone or restored");
    assert_eq!(json(d, &["log"])["snapshots"].as_array().unwrap().len(), 2);
}

/// A line that is not JSON gets a JSON-RPC parse error (-32700, id null); the server goes
/// on answering the next request.
#[test]
fn a_malformed_line_gets_a_parse_error_and_the_server_goes_on() {
    use std::io::{BufRead, Write};
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut server = std::process::Command::new(bin("snap-undo"))
        .arg("mcp")
        .arg("-C")
        .arg(d)
        .env_remove("SNAP_STORE")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut reply = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap()
    };
    writeln!(stdin, "{{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ").unwrap();
    let parse = reply();
    assert_eq!(parse["error"]["code"], -32700, "{parse}");
    assert_eq!(parse["id"], Value::Null);
    let init = json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}});
    writeln!(stdin, "{init}").unwrap();
    let answered = reply();
    assert_eq!(answered["id"], 2, "{answered}");
    assert_eq!(answered["result"]["serverInfo"]["name"], "snap-undo");
    drop(stdin);
    assert!(server.wait().unwrap().success());
}
