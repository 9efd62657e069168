//! `snap-undo hook --agent A` fed the payloads each agent sends (as docs/AGENTS.md describes them):
//! the snapshots and their metadata, a session's turns undone, and every way a hook can go
//! wrong ending in exit 0 with nothing lost.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};
use snap_e2e::*;

/// Runs `snap-undo hook --agent AGENT` with `payload` on stdin, as an agent does: from the
/// workspace, with no project-dir variables unless `env` sets them, and the user's state
/// directory in `state`.
fn hook_with(d: &Path, state: &Path, agent: &str, payload: &[u8], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(bin("snap-undo"));
    cmd.args(["hook", "--agent", agent])
        .current_dir(d)
        .env_remove("SNAP_STORE")
        .env_remove("SNAP_DISABLE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("GEMINI_PROJECT_DIR")
        .env("HOME", "/nonexistent-home")
        .env("XDG_STATE_HOME", state)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let payload = payload.to_vec();
    // Written from a thread: a hook that stopped reading must not block the test.
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&payload);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    assert!(
        out.status.success(),
        "hook exit {:?}: {}",
        out.status,
        stderr(&out)
    );
    out
}

fn hook(d: &Path, agent: &str, payload: Value) -> Output {
    let state = d.join(".snap-test-state");
    hook_with(d, &state, agent, payload.to_string().as_bytes(), &[])
}

fn head(d: &Path) -> Value {
    json(d, &["show", "@"])
}

#[test]
fn a_claude_session_is_saved_turn_by_turn_and_a_turn_undoes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    let cwd = d.to_str().unwrap();
    write(d, "notes.md", b"before the session\n");
    let ev = |name: &str, extra: Value| {
        let mut p = json!({"session_id": "sess-1", "cwd": cwd, "hook_event_name": name,
                           "transcript_path": "/tmp/t.jsonl", "permission_mode": "default"});
        p.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        p
    };
    hook(
        d,
        "claude",
        ev("SessionStart", json!({"source": "startup"})),
    );
    assert_eq!(head(d)["message"], "session start");
    // Turn 1: a Bash call and an Edit.
    hook(
        d,
        "claude",
        ev(
            "UserPromptSubmit",
            json!({"prompt": "add a build", "prompt_id": "p1"}),
        ),
    );
    write(d, "build.sh", b"make\n");
    hook(
        d,
        "claude",
        ev(
            "PostToolUse",
            json!({"tool_name": "Bash", "tool_use_id": "tu1",
        "tool_input": {"command": "echo make > build.sh"}, "tool_response": {}, "prompt_id": "p1"}),
        ),
    );
    let after_bash = head(d);
    assert_eq!(after_bash["message"], "after Bash");
    assert_eq!(after_bash["step"], 1);
    assert_eq!(after_bash["session"], "sess-1");
    assert_eq!(after_bash["meta"]["tool_use_id"], "tu1");
    assert_eq!(after_bash["meta"]["prompt_id"], "p1");
    assert_eq!(after_bash["meta"]["agent"], "claude");
    let end_of_turn_1 = everything(d);
    // A hand edit between turns is saved by the next prompt, as its own snapshot.
    write(d, "notes.md", b"edited by hand\n");
    hook(
        d,
        "claude",
        ev(
            "UserPromptSubmit",
            json!({"prompt": "now break it", "prompt_id": "p2"}),
        ),
    );
    let turn_2_start = head(d);
    assert_eq!(
        (
            turn_2_start["message"].as_str(),
            turn_2_start["step"].as_u64()
        ),
        (Some("before prompt"), Some(2))
    );
    let start_of_turn_2 = everything(d);
    std::fs::remove_file(d.join("build.sh")).unwrap();
    write(d, "notes.md", b"clobbered\n");
    hook(
        d,
        "claude",
        ev(
            "PostToolUseFailure",
            json!({"tool_name": "Edit", "tool_use_id": "tu2",
        "tool_input": {"file_path": d.join("notes.md")}, "error": "failed"}),
        ),
    );
    assert_eq!(head(d)["step"], 2);
    let end_of_turn_2 = everything(d);
    // The person undoes the agent's last turn: back to where turn 2 began, exactly (the
    // hand edit made before it kept); redo brings the turn back; two turns go back further.
    ok(d, &["undo", "--turn"]);
    assert_eq!(everything(d), start_of_turn_2);
    assert_eq!(head(d)["id"], turn_2_start["id"]);
    ok(d, &["redo", "--turn"]);
    assert_eq!(everything(d), end_of_turn_2);
    ok(d, &["undo", "--turn", "2"]);
    assert_ne!(everything(d), end_of_turn_1, "turn 1 is undone too");
    assert!(!d.join("build.sh").exists());
    ok(d, &["redo", "--turn"]);
    assert_eq!(everything(d), end_of_turn_1);
    assert_eq!(head(d)["id"], after_bash["id"]);
    // step:N names this session's turn N; another session's with step:N@SESSION.
    ok(
        d,
        &[
            "save",
            "--session",
            "other",
            "--step",
            "1",
            "-m",
            "elsewhere",
            "--allow-empty",
        ],
    );
    assert_eq!(json(d, &["show", "step:1"])["message"], "elsewhere");
    assert_eq!(json(d, &["show", "step:1@sess-1"])["id"], after_bash["id"]);
    ok(d, &["undo"]);
    assert_eq!(json(d, &["show", "step:1"])["id"], after_bash["id"]);
    // The next prompt tells Claude which files changed under it.
    ok(d, &["undo", "--turn"]);
    let out = hook(
        d,
        "claude",
        ev("UserPromptSubmit", json!({"prompt": "go on"})),
    );
    let reply: Value = serde_json::from_slice(&out.stdout).unwrap();
    let context = reply["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert_eq!(
        reply["hookSpecificOutput"]["hookEventName"],
        "UserPromptSubmit"
    );
    // The agent last saw turn 2's end (notes.md clobbered, build.sh gone).
    assert!(context.ends_with("notes.md (modified)."), "{context}");
    let quiet = hook(
        d,
        "claude",
        ev("UserPromptSubmit", json!({"prompt": "and again"})),
    );
    assert!(quiet.stdout.is_empty(), "nothing changed since: no context");
    // Every step is in the log, with its session and turn.
    let log = json(d, &["log", "--all"]);
    let steps: Vec<u64> = log["snapshots"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["session"] == "sess-1")
        .filter_map(|s| s["step"].as_u64())
        .collect();
    assert!(
        steps.contains(&0) && steps.contains(&1) && steps.contains(&2),
        "{steps:?}"
    );
    ok(d, &["verify"]);
}

#[test]
fn every_agent_s_payloads_save_and_get_the_reply_the_agent_expects() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    let cwd = d.to_str().unwrap();
    let cases = [
        (
            "codex",
            json!({"session_id": "c1", "turn_id": "t1", "cwd": cwd, "hook_event_name": "PostToolUse",
            "model": "gpt-5", "permission_mode": "default", "transcript_path": null, "tool_name": "apply_patch",
            "tool_input": {}, "tool_response": {}, "tool_use_id": "call_1"}),
            "",
            "apply_patch",
        ),
        (
            "gemini",
            json!({"session_id": "g1", "cwd": cwd, "hook_event_name": "AfterTool",
            "timestamp": "2026-12-01T00:00:00Z", "tool_name": "write_file", "tool_input": {}, "tool_response": {}}),
            "{}",
            "write_file",
        ),
        (
            "cursor",
            json!({"hook_event_name": "afterFileEdit", "conversation_id": "cv1", "generation_id": "gen1",
            "workspace_roots": [cwd], "file_path": d.join("x").to_str(), "edits": []}),
            "{}",
            "edit",
        ),
        (
            "cline",
            json!({"clineVersion": "3.40", "hookName": "PostToolUse", "timestamp": "1",
            "taskId": "task1", "workspaceRoots": [cwd],
            "postToolUse": {"toolName": "write_to_file", "parameters": {}}}),
            "{\"cancel\":false}",
            "write_to_file",
        ),
    ];
    for (i, (agent, payload, reply, tool)) in cases.into_iter().enumerate() {
        write(d, &format!("file{i}"), agent.as_bytes());
        let out = hook(d, agent, payload);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            reply,
            "{agent}"
        );
        let h = head(d);
        assert_eq!(h["meta"]["tool"], tool, "{agent}: {h}");
        assert_eq!(h["meta"]["agent"], agent);
        assert_eq!(h["message"], format!("after {tool}"));
        assert!(
            h["changes"].to_string().contains(&format!("file{i}")),
            "{agent}: {h}"
        );
    }
    // Gemini's project directory wins over the payload's cwd.
    let other = tempfile::tempdir().unwrap();
    ok(other.path(), &["init"]);
    write(other.path(), "g", b"gemini project");
    let state = d.join(".snap-test-state");
    let payload = json!({"session_id": "g1", "cwd": cwd, "hook_event_name": "AfterTool", "tool_name": "replace"});
    hook_with(
        d,
        &state,
        "gemini",
        payload.to_string().as_bytes(),
        &[("GEMINI_PROJECT_DIR", other.path())],
    );
    assert_eq!(head(other.path())["meta"]["tool"], "replace");
}

#[test]
fn a_hook_that_cannot_save_exits_0_logs_why_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let state = tempfile::tempdir().unwrap();
    write(d, "a", b"one");
    // No store: nothing is created, the user's log says why.
    let start = json!({"session_id": "s", "cwd": d, "hook_event_name": "SessionStart"}).to_string();
    hook_with(d, state.path(), "claude", start.as_bytes(), &[]);
    assert!(!d.join(".snap").exists(), "a hook never creates a store");
    let user_log = std::fs::read_to_string(state.path().join("snap-undo/hook.log")).unwrap();
    assert!(user_log.contains("no snap store"), "{user_log}");
    ok(d, &["init"]);
    ok(d, &["save"]);
    let before = everything(d);
    // Garbage, a JSON array, empty input, a huge payload, an unknown agent and flag.
    let huge = format!(
        "{{\"hook_event_name\": \"PostToolUse\", \"cwd\": {:?}, \"tool_response\": \"{}\"}}",
        d,
        "x".repeat(40 << 20)
    );
    for (agent, payload) in [
        ("claude", b"not json".to_vec()),
        ("codex", b"[1, 2]".to_vec()),
        ("gemini", Vec::new()),
        ("claude", huge.into_bytes()),
        ("vim", b"{}".to_vec()),
    ] {
        hook_with(d, state.path(), agent, &payload, &[]);
    }
    let out = Command::new(bin("snap-undo"))
        .args(["hook", "--agnet", "claude"])
        .current_dir(d)
        .env("XDG_STATE_HOME", state.path())
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.is_empty(),
        "{}",
        stderr(&out)
    );
    let status = json(d, &["status"]);
    assert!(
        status["hook_failure"]["error"]
            .as_str()
            .unwrap()
            .contains("larger than"),
        "{status}"
    );
    assert!(ok(d, &["status"]).contains("hook saves are failing"));
    assert_eq!(everything(d), before);
    ok(d, &["verify"]);
    // The next good call saves, and status no longer reports failures.
    write(d, "a", b"two");
    hook(
        d,
        "claude",
        json!({"session_id": "s", "cwd": d, "hook_event_name": "PostToolUse", "tool_name": "Write"}),
    );
    assert_eq!(json(d, &["status"])["hook_failure"], Value::Null);
    assert_eq!(head(d)["message"], "after Write");
}

#[test]
fn a_hook_waits_briefly_for_a_held_lock_then_gives_up_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    write(d, "a", b"one");
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(d.join(".snap/lock"))
        .unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).unwrap();
    let started = std::time::Instant::now();
    hook(
        d,
        "codex",
        json!({"session_id": "c", "cwd": d, "hook_event_name": "PostToolUse", "tool_name": "Bash"}),
    );
    let waited = started.elapsed();
    assert!(
        waited < std::time::Duration::from_secs(30),
        "the hook waited {waited:?}"
    );
    drop(lock);
    let status = json(d, &["status"]);
    assert!(
        status["hook_failure"]["error"]
            .as_str()
            .unwrap()
            .contains("locked"),
        "{status}"
    );
    // Hooks run at once (as Codex runs them) all exit 0, and the store stays whole.
    let payload =
        json!({"session_id": "c", "cwd": d, "hook_event_name": "PostToolUse", "tool_name": "Bash"});
    let children: Vec<_> = (0..6)
        .map(|i| {
            write(d, &format!("f{i}"), b"x");
            let mut child = Command::new(bin("snap-undo"))
                .args(["hook", "--agent", "codex"])
                .current_dir(d)
                .env("XDG_STATE_HOME", d.join(".snap-test-state"))
                .env("HOME", "/nonexistent-home")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            child
                .stdin
                .take()
                .unwrap()
                .write_all(payload.to_string().as_bytes())
                .unwrap();
            child
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success() && out.stdout.is_empty());
    }
    ok(d, &["save"]);
    ok(d, &["verify"]);
    let files = json(d, &["ls", "@"]).to_string();
    assert!((0..6).all(|i| files.contains(&format!("f{i}"))), "{files}");
}

#[test]
fn install_wires_claude_in_one_command_and_an_undo_never_removes_the_hook() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "app.py", b"print(1)\n");
    std::fs::create_dir_all(d.join(".claude")).unwrap();
    let theirs = r#"{"permissions": {"allow": ["Bash(ls)"]}}"#;
    std::fs::write(d.join(".claude/settings.local.json"), theirs).unwrap();
    let out = ok(d, &["hook", "install", "--agent", "claude"]);
    assert!(out.contains("installed"), "{out}");
    assert!(d.join(".snap").is_dir(), "install creates the store");
    let settings: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(settings["permissions"]["allow"][0], "Bash(ls)");
    let command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap();
    assert!(
        command.starts_with('/') && command.contains("snap-undo hook --agent claude"),
        "{command}"
    );
    assert!(ok(d, &["hook", "install", "--agent", "claude"]).contains("already"));
    assert!(d.join(".claude/commands/snap-undo.md").is_file());
    // The installed command is what the agent runs.
    write(d, "app.py", b"print(2)\n");
    let mut parts = command.splitn(2, ' ');
    let (program, rest) = (parts.next().unwrap(), parts.next().unwrap());
    let mut child = Command::new(program)
        .args(rest.split(' '))
        .current_dir(d)
        .env("CLAUDE_PROJECT_DIR", d)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let payload = json!({"session_id": "s", "hook_event_name": "PostToolUse", "tool_name": "Edit"});
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(head(d)["message"], "after Edit");
    let doctor = json(d, &["doctor"]);
    let claude = &doctor["hooks"][0];
    assert_eq!(
        (claude["agent"].as_str(), claude["installed"].as_bool()),
        (Some("claude"), Some(true))
    );
    assert_eq!(claude["scope"], "local");
    assert_eq!(doctor["hooks"][1]["installed"], false, "codex is not");
    assert_eq!(claude["binary_exists"], true);
    assert!(claude["binary"].as_str().unwrap().ends_with("snap-undo"));
    assert_eq!(doctor["last_hook_save"]["message"], "after Edit");
    assert_eq!(doctor["store_ok"], true);
    // The agent's config is never in a snapshot, so no undo can touch it.
    let files = json(d, &["ls", "@"]).to_string();
    assert!(!files.contains(".claude"), "{files}");
    let hook_config = std::fs::read(d.join(".claude/settings.local.json")).unwrap();
    ok(d, &["undo"]);
    assert_eq!(read(d, "app.py"), "print(1)\n", "the install's baseline");
    assert!(d.join(".claude/commands/snap-undo.md").is_file());
    assert_eq!(
        std::fs::read(d.join(".claude/settings.local.json")).unwrap(),
        hook_config
    );
    assert!(ok(d, &["hook", "uninstall", "--agent", "claude"]).contains("removed"));
    assert!(!d.join(".claude/commands/snap-undo.md").exists());
    let config = std::fs::read_to_string(d.join(".snap/config.toml")).unwrap();
    assert!(!config.contains(".claude"), "{config}");
    let back: Value = serde_json::from_str(
        &std::fs::read_to_string(d.join(".claude/settings.local.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(back, serde_json::from_str::<Value>(theirs).unwrap());
    // A person's mistakes in install are errors as usual.
    assert_eq!(
        snap(d, &["hook", "install", "--agent", "vim"])
            .status
            .code(),
        Some(1)
    );
    // A settings file install refuses (comments) leaves the store's config as it was too.
    let commented = "{\n// mine\n\"a\": 1}\n";
    std::fs::write(d.join(".claude/settings.local.json"), commented).unwrap();
    let out = snap(d, &["hook", "install", "--agent", "claude"]);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(stderr(&out).contains("left untouched"), "{}", stderr(&out));
    assert_eq!(
        std::fs::read_to_string(d.join(".snap/config.toml")).unwrap(),
        config
    );
    assert_eq!(
        std::fs::read_to_string(d.join(".claude/settings.local.json")).unwrap(),
        commented
    );
}

/// Each agent's own event names and fields for: a session start, a prompt, a tool call.
fn agent_event(agent: &str, d: &Path, kind: &str, session: &str) -> Value {
    let cwd = d.to_str().unwrap();
    match (agent, kind) {
        ("claude" | "codex", "start") => {
            json!({"hook_event_name": "SessionStart", "session_id": session, "cwd": cwd})
        }
        ("claude" | "codex", "prompt") => {
            json!({"hook_event_name": "UserPromptSubmit", "session_id": session, "cwd": cwd, "prompt": "go"})
        }
        ("claude" | "codex", _) => {
            json!({"hook_event_name": "PostToolUse", "session_id": session, "cwd": cwd, "tool_name": "Bash", "tool_use_id": "t"})
        }
        ("gemini", "start") => {
            json!({"hook_event_name": "SessionStart", "session_id": session, "cwd": cwd})
        }
        ("gemini", "prompt") => {
            json!({"hook_event_name": "BeforeAgent", "session_id": session, "cwd": cwd, "prompt": "go"})
        }
        ("gemini", _) => {
            json!({"hook_event_name": "AfterTool", "session_id": session, "cwd": cwd, "tool_name": "write_file"})
        }
        ("cursor", "start") => {
            json!({"hook_event_name": "sessionStart", "conversation_id": session, "workspace_roots": [cwd]})
        }
        ("cursor", "prompt") => {
            json!({"hook_event_name": "beforeSubmitPrompt", "conversation_id": session, "generation_id": "g", "workspace_roots": [cwd], "prompt": "go"})
        }
        ("cursor", _) => {
            json!({"hook_event_name": "afterShellExecution", "conversation_id": session, "generation_id": "g", "workspace_roots": [cwd], "command": "make"})
        }
        ("cline", "start") => {
            json!({"hookName": "TaskStart", "taskId": session, "workspaceRoots": [cwd]})
        }
        ("cline", "prompt") => {
            json!({"hookName": "UserPromptSubmit", "taskId": session, "workspaceRoots": [cwd]})
        }
        ("cline", _) => {
            json!({"hookName": "PostToolUse", "taskId": session, "workspaceRoots": [cwd], "postToolUse": {"toolName": "execute_command"}})
        }
        (_, "start") => json!({"event": "session.created", "sessionID": session, "directory": cwd}),
        (_, "prompt") => {
            json!({"event": "chat.message", "sessionID": session, "messageID": "m", "directory": cwd})
        }
        _ => {
            json!({"event": "tool.execute.after", "sessionID": session, "tool": "bash", "callID": "c", "directory": cwd})
        }
    }
}

/// A session's worth of each agent's payloads: two turns of tool calls, a hand edit between
/// them; `undo --turn` then brings back exactly the start of the second turn, and the log
/// shows the turns.
#[test]
fn every_agent_s_session_undoes_by_turn() {
    for agent in ["claude", "codex", "gemini", "cursor", "cline", "opencode"] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        ok(d, &["init"]);
        write(d, "f", b"0");
        let session = format!("{agent}-session");
        hook(d, agent, agent_event(agent, d, "start", &session));
        hook(d, agent, agent_event(agent, d, "prompt", &session));
        write(d, "f", b"turn 1");
        hook(d, agent, agent_event(agent, d, "tool", &session));
        write(d, "hand", b"by hand");
        hook(d, agent, agent_event(agent, d, "prompt", &session));
        let start_of_turn_2 = everything(d);
        write(d, "f", b"turn 2, call 1");
        hook(d, agent, agent_event(agent, d, "tool", &session));
        write(d, "g", b"turn 2, call 2");
        hook(d, agent, agent_event(agent, d, "tool", &session));
        let h = head(d);
        assert_eq!(
            (h["session"].as_str(), h["step"].as_u64()),
            (Some(session.as_str()), Some(2)),
            "{agent}: {h}"
        );
        assert_eq!(h["meta"]["agent"], agent);
        ok(d, &["undo", "--turn"]);
        assert_eq!(everything(d), start_of_turn_2, "{agent}");
        ok(d, &["redo", "--turn"]);
        assert_eq!(read(d, "g"), "turn 2, call 2", "{agent}");
    }
}

/// The opencode plugin file install writes, run by node as opencode would run it (opencode
/// itself is not installed here): its hooks reach `snap-undo hook` and save.
#[test]
fn the_opencode_plugin_saves_through_the_hook() {
    if std::process::Command::new("node")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("SKIPPED: node is not installed, so the opencode plugin is not run");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "app.txt", b"before\n");
    ok(d, &["hook", "install", "--agent", "opencode"]);
    let plugin = d.join(".opencode/plugins/snap-undo.js");
    let module = dir.path().join(".opencode/plugin.mjs");
    std::fs::copy(&plugin, &module).unwrap();
    let script = r#"
        const [module, dir] = process.argv.slice(1);
        const fs = await import("node:fs");
        const { pathToFileURL } = await import("node:url");
        const { SnapUndo } = await import(pathToFileURL(module).href);
        const hooks = await SnapUndo({ directory: dir });
        await hooks.event({ event: { type: "session.created", properties: { info: { id: "ses_1" } } } });
        await hooks["chat.message"]({ sessionID: "ses_1", messageID: "msg_1" });
        fs.writeFileSync(dir + "/app.txt", "edited by the agent\n");
        await hooks["tool.execute.after"]({ tool: "edit", sessionID: "ses_1", callID: "call_1" }, {});
    "#;
    let out = std::process::Command::new("node")
        .args(["--input-type=module", "-e", script])
        .arg(&module)
        .arg(d)
        .env("XDG_STATE_HOME", d.join(".snap-test-state"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let h = head(d);
    assert_eq!(h["message"], "after edit", "{h}");
    assert_eq!(
        (h["session"].as_str(), h["step"].as_u64()),
        (Some("ses_1"), Some(1))
    );
    assert_eq!(h["meta"]["callID"], "call_1");
    ok(d, &["undo", "--turn"]);
    assert_eq!(read(d, "app.txt"), "before\n");
    assert!(
        plugin.is_file(),
        "the plugin is excluded: no undo removes it"
    );
}

/// A workspace on a read-only mount: the hook exits 0 with nothing on stdout, changes
/// nothing, and says why in the user's log (the store's cannot be written).
#[test]
fn a_hook_on_a_read_only_workspace_exits_0_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "a", b"one");
    ok(dir.path(), &["save"]);
    write(dir.path(), "a", b"two");
    let Some(mount) = ReadOnlyMount::of(dir.path()) else {
        eprintln!("SKIPPED: mounting needs root");
        return;
    };
    let d = mount.0.path();
    let before = everything(d);
    let state = tempfile::tempdir().unwrap();
    let payload =
        json!({"session_id": "s", "cwd": d, "hook_event_name": "PostToolUse", "tool_name": "Bash"});
    let out = hook_with(
        d,
        state.path(),
        "codex",
        payload.to_string().as_bytes(),
        &[],
    );
    assert!(out.stdout.is_empty());
    assert_eq!(everything(d), before);
    let log = std::fs::read_to_string(state.path().join("snap-undo/hook.log")).unwrap();
    assert!(log.contains("read-only"), "{log}");
    drop(mount);
    ok(dir.path(), &["verify"]);
}

/// Uninstall removes what install created and what is empty after it: no `{}` settings file,
/// no empty `.claude/commands/` or `.claude/`, so `snap status` lists nothing new.
#[test]
fn uninstall_after_a_fresh_install_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "app.py", b"print(1)\n");
    ok(d, &["save"]);
    let installed = snap(d, &["hook", "install", "--agent", "claude"]);
    assert!(installed.status.success(), "{}", stderr(&installed));
    assert!(d.join(".claude/settings.local.json").is_file());
    // The suite's binary is a cargo build output: install says so, and doctor names it.
    let built = bin("snap-undo")
        .parent()
        .and_then(Path::parent)
        .is_some_and(|t| t.ends_with("target"));
    assert_eq!(stderr(&installed).contains("cargo build output"), built);
    let doctor = json(d, &["doctor"]);
    assert_eq!(
        doctor["hooks"][0]["binary_is_build_output"], built,
        "{doctor}"
    );
    ok(d, &["hook", "uninstall", "--agent", "claude"]);
    assert!(
        !d.join(".claude").exists(),
        "install's directories are gone"
    );
    let status = json(d, &["status"]);
    assert_eq!(status["clean"], true, "{status}");
    // A settings file holding the user's own keys stays, with only those.
    write(d, ".claude/settings.local.json", b"{\"theirs\": 1}\n");
    ok(d, &["hook", "install", "--agent", "claude"]);
    ok(d, &["hook", "uninstall", "--agent", "claude"]);
    let back: Value = serde_json::from_str(&read(d, ".claude/settings.local.json")).unwrap();
    assert_eq!(back, json!({"theirs": 1}));
    assert!(!d.join(".claude/commands").exists());
}

/// A hostile payload's huge fields (a 10 MB `session_id`, a 20 MB `tool_name`, a 1 MB id and
/// event name) are recorded cut to 256 bytes with a marker, the event still saved, and the
/// catalog does not grow by the payload's size (docs/AGENTS.md).
#[test]
fn oversized_hook_fields_are_recorded_truncated_and_the_catalog_stays_small() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    write(d, "a.txt", b"1\n");
    hook(
        d,
        "claude",
        json!({"session_id": "s", "cwd": d, "hook_event_name": "SessionStart"}),
    );
    let catalog = d.join(".snap/catalog.redb");
    let before = std::fs::metadata(&catalog).unwrap().len();
    let session = format!("é{}", "s".repeat(10 << 20));
    for n in 0..3 {
        write(d, "a.txt", format!("edit {n}\n").as_bytes());
        let payload = json!({"session_id": session, "cwd": d,
            "hook_event_name": "PostToolUse", "tool_name": "t".repeat(20 << 20),
            "tool_use_id": "u".repeat(1 << 20)});
        hook(d, "claude", payload);
    }
    write(d, "a.txt", b"last\n");
    let odd_event =
        json!({"session_id": session, "cwd": d, "hook_event_name": "€".repeat(1 << 19)});
    hook(d, "claude", odd_event);
    let head = head(d);
    let kept = head["session"].as_str().unwrap();
    assert!(
        kept.len() <= 256 && kept.ends_with("…[truncated]"),
        "{kept}"
    );
    assert!(session.starts_with(kept.trim_end_matches("…[truncated]")));
    let event = head["meta"]["event"].as_str().unwrap();
    assert!(event.len() <= 256 && event.starts_with('€') && event.ends_with("…[truncated]"));
    assert_eq!(
        ok(d, &["cat", "@", "a.txt"]),
        "last\n",
        "the event was saved"
    );
    let log = json(d, &["log", "--session", kept]);
    let steps = log["snapshots"].as_array().unwrap();
    assert_eq!(steps.len(), 4, "one session, every event saved: {log}");
    for step in steps {
        let meta = &step["meta"];
        for key in ["tool", "tool_use_id"]
            .iter()
            .filter(|k| !meta[**k].is_null())
        {
            let value = meta[*key].as_str().unwrap();
            assert!(
                value.len() <= 256 && value.ends_with("…[truncated]"),
                "{key}"
            );
        }
    }
    let after = std::fs::metadata(&catalog).unwrap().len();
    assert!(
        after < before + (1 << 20),
        "the catalog grew from {before} to {after} bytes"
    );
}

/// Three Claude Code subagents working at once in one directory, their hook payloads
/// interleaved (`agent_id` and `agent_type` on a subagent's tool calls, none on the root
/// agent's): every snapshot names the agent whose call it saved, `log --agent` lists each
/// one's calls and no other's, `show` and `blame` name the subagent, and a Codex subagent's
/// payload is read the same way.
#[test]
fn each_subagent_s_calls_are_saved_under_its_name() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    ok(d, &["init"]);
    let cwd = d.to_str().unwrap();
    let call = |agent: Option<(&str, &str)>, id: &str, file: &str| {
        let mut p = json!({"session_id": "sess-9", "cwd": cwd, "hook_event_name": "PostToolUse",
                           "tool_name": "Write", "tool_use_id": id,
                           "tool_input": {"file_path": d.join(file), "content": "x"},
                           "tool_response": {}});
        if let Some((agent_id, agent_type)) = agent {
            p["agent_id"] = json!(agent_id);
            p["agent_type"] = json!(agent_type);
        }
        p
    };
    write(d, "start.txt", b"before the prompt\n");
    hook(
        d,
        "claude",
        json!({"session_id": "sess-9", "cwd": cwd,
                             "hook_event_name": "UserPromptSubmit", "prompt": "go"}),
    );
    let agents = [
        ("a-1", "Explore"),
        ("b-2", "Plan"),
        ("c-3", "general-purpose"),
    ];
    let mut made: Vec<(String, String)> = Vec::new();
    for round in 0..3 {
        for (k, (agent, kind)) in agents.iter().enumerate() {
            let file = format!("{agent}/r{round}.txt");
            write(d, &file, format!("{agent} {round}\n").as_bytes());
            let id = format!("tu-{round}-{k}");
            hook(d, "claude", call(Some((agent, kind)), &id, &file));
            made.push((agent.to_string(), id));
        }
    }
    write(d, "root.txt", b"the root agent's\n");
    hook(d, "claude", call(None, "tu-root", "root.txt"));
    let show = head(d);
    assert_eq!(
        (show["agent"].as_str(), show.get("agent_type")),
        (Some("main"), None)
    );
    for (agent, kind) in agents {
        let log = json(d, &["log", "--agent", agent]);
        let ids: Vec<&str> = (log["snapshots"].as_array().unwrap().iter())
            .map(|s| s["meta"]["tool_use_id"].as_str().unwrap())
            .collect();
        let mut want: Vec<&str> = (made.iter())
            .filter(|(a, _)| a == agent)
            .map(|(_, id)| id.as_str())
            .collect();
        want.reverse();
        assert_eq!(
            ids, want,
            "log --agent {agent} lists its calls alone, newest first"
        );
        for s in log["snapshots"].as_array().unwrap() {
            assert_eq!(
                (s["agent"].as_str(), s["agent_type"].as_str()),
                (Some(agent), Some(kind))
            );
        }
    }
    let main = json(d, &["log", "--agent", "main"]);
    let messages: Vec<&str> = (main["snapshots"].as_array().unwrap().iter())
        .map(|s| s["message"].as_str().unwrap())
        .collect();
    assert_eq!(
        messages,
        ["after Write", "before prompt"],
        "the root agent's saves"
    );
    let none = snap(d, &["log", "--agent", "nobody"]);
    assert!(
        none.status.success(),
        "a filter that selects nothing is no error"
    );
    let blame = json(d, &["blame", "b-2/r1.txt"]);
    assert_eq!(blame["lines"][0]["agent_id"], "b-2");
    let human = ok(d, &["blame", "b-2/r1.txt"]);
    assert!(human.contains("Write/b-2"), "{human}");
    let shown = ok(d, &["show", "#3"]);
    assert!(shown.contains("agent   b-2 (Plan)"), "{shown}");
    // Each changed path is given to the agent whose call named it, and to no one by guess:
    // a file the call did not name (another agent's or a shell's write) is `shared`.
    write(d, "a-1/r9.txt", b"named by a-1's call\n");
    write(d, "stray.txt", b"written by someone else meanwhile\n");
    hook(
        d,
        "claude",
        call(Some(("a-1", "Explore")), "tu-9", "a-1/r9.txt"),
    );
    let mixed = json(d, &["show", "@"]);
    let by: Vec<(&str, &str)> = (mixed["attribution"].as_array().unwrap().iter())
        .map(|a| (a["path"].as_str().unwrap(), a["by"].as_str().unwrap()))
        .collect();
    assert_eq!(by, [("a-1/r9.txt", "a-1"), ("stray.txt", "shared")]);
    let human = ok(d, &["show", "@"]);
    assert!(human.contains("by      shared stray.txt"), "{human}");
    write(d, "by-hand.txt", b"a person's edit\n");
    ok(d, &["save", "-m", "by hand"]);
    let person = json(d, &["show", "@"]);
    assert!(person.get("attribution").is_none() && person.get("agent").is_none());
    // Codex carries the same optional fields on a subagent's calls.
    write(d, "codex.txt", b"from a codex worker\n");
    hook(
        d,
        "codex",
        json!({"session_id": "cx", "cwd": cwd, "hook_event_name": "PostToolUse",
                            "tool_name": "apply_patch", "tool_use_id": "cx-1",
                            "agent_id": "w-7", "agent_type": "worker"}),
    );
    let codex = head(d);
    assert_eq!(
        (codex["agent"].as_str(), codex["agent_type"].as_str()),
        (Some("w-7"), Some("worker"))
    );
}
