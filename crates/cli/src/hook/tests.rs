//! Each agent's payloads, as its documentation gives them (docs/AGENTS.md), read
//! into the one event shape.

#![allow(clippy::unwrap_used)]

use serde_json::json;
use std::path::PathBuf;

use super::*;
use crate::hook::payload::{EventKind, HookEvent, PayloadFormat};

/// The payload format of `agent`, if snap knows it.
fn format_of(agent: &str) -> Option<&'static PayloadFormat> {
    known::agent(agent).ok().map(|a| &a.payload)
}

fn event(agent: &str, payload: Value) -> HookEvent {
    format_of(agent).unwrap().event(&payload)
}

#[test]
fn claude_and_codex_tool_calls_name_the_tool_session_and_ids() {
    let claude = event(
        "claude",
        json!({"session_id": "s1", "cwd": "/w", "hook_event_name": "PostToolUseFailure",
               "tool_name": "Bash", "tool_use_id": "t9", "prompt_id": "p2",
               "tool_input": {"command": "rm -rf build"}}),
    );
    assert_eq!(claude.kind, EventKind::ToolDone);
    assert_eq!(claude.session.as_deref(), Some("s1"));
    assert_eq!(claude.tool.as_deref(), Some("Bash"));
    assert_eq!(
        claude.ids,
        [("tool_use_id", "t9".into()), ("prompt_id", "p2".into())]
    );
    let codex = event(
        "codex",
        json!({"session_id": "c", "turn_id": "u3", "cwd": "/w", "hook_event_name": "PostToolUse",
               "tool_name": "apply_patch", "tool_use_id": "x"}),
    );
    assert_eq!(codex.roots, [PathBuf::from("/w")]);
    assert_eq!(
        codex.ids,
        [("tool_use_id", "x".into()), ("turn_id", "u3".into())]
    );
    assert_eq!(message(&codex), "after apply_patch");
}

#[test]
fn prompts_and_session_starts_are_told_apart_for_every_agent() {
    let cases = [
        (
            "claude",
            "hook_event_name",
            "UserPromptSubmit",
            EventKind::Prompt,
        ),
        (
            "codex",
            "hook_event_name",
            "SessionStart",
            EventKind::SessionStart,
        ),
        (
            "gemini",
            "hook_event_name",
            "BeforeAgent",
            EventKind::Prompt,
        ),
        (
            "gemini",
            "hook_event_name",
            "AfterTool",
            EventKind::ToolDone,
        ),
        (
            "cursor",
            "hook_event_name",
            "beforeSubmitPrompt",
            EventKind::Prompt,
        ),
        ("cline", "hookName", "TaskResume", EventKind::SessionStart),
        ("cline", "hookName", "TaskComplete", EventKind::Other),
        (
            "claude",
            "hook_event_name",
            "SomethingNew",
            EventKind::Other,
        ),
    ];
    for (agent, key, name, kind) in cases {
        assert_eq!(
            event(agent, json!({ key: name })).kind,
            kind,
            "{agent} {name}"
        );
    }
}

#[test]
fn cursor_and_cline_give_several_roots_and_their_own_session_keys() {
    let cursor = event(
        "cursor",
        json!({"hook_event_name": "afterShellExecution", "conversation_id": "conv",
               "generation_id": "g1", "workspace_roots": ["/a", "/b"], "command": "make"}),
    );
    assert_eq!(cursor.roots, [PathBuf::from("/a"), PathBuf::from("/b")]);
    assert_eq!(
        (cursor.session.as_deref(), cursor.tool.as_deref()),
        (Some("conv"), Some("shell"))
    );
    let cline = event(
        "cline",
        json!({"hookName": "PostToolUse", "taskId": "t", "workspaceRoots": ["/r"],
               "postToolUse": {"toolName": "write_to_file", "parameters": {}}}),
    );
    assert_eq!(cline.roots, [PathBuf::from("/r")]);
    assert_eq!(cline.tool.as_deref(), Some("write_to_file"));
    assert_eq!(cline.session.as_deref(), Some("t"));
}

#[test]
fn missing_or_odd_fields_leave_the_event_empty_not_an_error() {
    let odd = event(
        "claude",
        json!({"session_id": 7, "cwd": 5, "tool_name": null}),
    );
    assert_eq!(odd.kind, EventKind::Other);
    assert_eq!(odd.session.as_deref(), Some("7"));
    assert!(odd.roots.is_empty() || std::env::var_os("CLAUDE_PROJECT_DIR").is_some());
    assert_eq!(odd.tool, None);
    assert_eq!(message(&odd), "hook");
    assert!(format_of("vim").is_none());
}

#[test]
fn each_agent_gets_the_reply_it_reads() {
    let reply = |agent: &str, event: &str| (format_of(agent).unwrap().reply)(event);
    assert_eq!(reply("claude", "PostToolUse"), "");
    assert_eq!(reply("gemini", "AfterTool"), "{}");
    assert_eq!(reply("cursor", "afterFileEdit"), "{}");
    assert_eq!(
        reply("cursor", "beforeSubmitPrompt"),
        r#"{"continue":true}"#
    );
    assert_eq!(reply("cline", "PostToolUse"), r#"{"cancel":false}"#);
}
