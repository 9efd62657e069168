//! What the commands print: the documented JSON against the real output, diffs and their
//! pages, help, completions, quiet and escaped output.

use serde_json::Value;
use snap_e2e::*;

/// Every key path of a JSON value (`a.b`, `list[].c`), arrays judged by their first element.
fn shape(v: &Value, prefix: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let p = format!("{prefix}.{k}");
                out.insert(p.clone());
                shape(x, &p, out);
            }
        }
        Value::Array(items) => {
            if let Some(first) = items.first() {
                shape(first, &format!("{prefix}[]"), out);
            }
        }
        _ => {}
    }
}

/// The `## \`snap ...\`` sections of docs/JSON.md with their example documents, in order.
fn documented_examples() -> Vec<(String, Value)> {
    let doc = std::fs::read_to_string(docs_dir().join("JSON.md")).unwrap();
    let mut out = Vec::new();
    let mut title = None;
    let mut block: Option<String> = None;
    for line in doc.lines() {
        if let Some(t) = line
            .strip_prefix("## `snap ")
            .and_then(|t| t.strip_suffix('`'))
        {
            title = Some(t.to_string());
        } else if line == "```json" {
            block = Some(String::new());
        } else if line == "```" {
            if let (Some(t), Some(b)) = (title.take(), block.take()) {
                out.push((t, serde_json::from_str(&b).unwrap()));
            }
        } else if let Some(b) = block.as_mut() {
            b.push_str(line);
            b.push('\n');
        }
    }
    out
}

#[test]
fn docs_json_md_matches_what_the_binary_prints() {
    let dir = tempfile::tempdir().unwrap();
    // In a subdirectory, so that `export` writes `../exported` inside this test's own dir.
    let d = &dir.path().join("w");
    std::fs::create_dir(d).unwrap();
    write(d, "a.txt", b"one\n");
    write(d, "src/main.rs", b"fn main() {}\n");
    let examples = documented_examples();
    assert!(
        examples.len() >= 18,
        "docs/JSON.md documents {} commands",
        examples.len()
    );
    for (title, documented) in examples {
        if title == "status" {
            write(d, "a.txt", b"one\ntwo\n");
            ok(
                d,
                &["save", "-m", "second", "--step", "2", "--meta", "turn=2"],
            );
            write(d, "a.txt", b"one\ntwo\nthree\n");
        }
        let mut args = vec!["--json".to_string()];
        args.extend(
            title
                .split_whitespace()
                .map(|a| a.trim_matches('\'').to_string()),
        );
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = snap(d, &args);
        let actual: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("snap {title}: {e}"));
        let (mut want, mut got) = (Default::default(), Default::default());
        shape(&documented, "", &mut want);
        shape(&actual, "", &mut got);
        assert_eq!(
            want, got,
            "docs/JSON.md's example for `snap {title}` differs from the output"
        );
    }
}

#[test]
fn diff_pages_cuts_and_summarizes_binaries() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "t.txt", b"a\nb\nc\n");
    write(d, "bin", &[0u8, 1, 2, 3]);
    write(d, "long.txt", b"");
    ok(d, &["save"]);
    write(d, "t.txt", b"a\nB\nc\nd\n");
    write(d, "bin", &[0u8, 9]);
    let body: String = (0..50).map(|i| format!("line {i}\n")).collect();
    write(d, "long.txt", body.as_bytes());
    write(d, "new.txt", b"new\n");
    let human = ok(d, &["diff"]);
    assert!(
        human.contains("--- a/t.txt\n+++ b/t.txt\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n"),
        "{human}"
    );
    assert!(human.contains("Binary file bin differs (4 bytes -> 2 bytes)"));
    assert!(human.contains("--- /dev/null\n+++ b/new.txt"));
    assert!(
        !human.contains("\x1b["),
        "no colour when stdout is not a terminal"
    );
    let v = json(d, &["diff", "--max-lines", "5"]);
    assert_eq!(v["total_files"], 4);
    assert_eq!(v["to"], "working tree");
    let long = v["files"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["path"] == "long.txt")
        .unwrap()
        .clone();
    assert_eq!(long["added"], 50);
    assert_eq!(long["lines"].as_array().unwrap().len(), 5);
    assert_eq!(long["lines_cut"], 46);
    assert!(ok(d, &["diff", "--max-lines", "5"]).contains("46 more diff lines cut"));
    let page2 = json(d, &["diff", "--files-per-page", "3", "--page", "2"]);
    assert_eq!(
        (
            page2["pages"].as_u64(),
            page2["files"].as_array().unwrap().len()
        ),
        (Some(2), 1)
    );
    assert!(ok(d, &["diff", "--files-per-page", "3"]).contains("page 1 of 2"));
    assert_eq!(
        ok(d, &["diff", "--name-status", "--", "t.txt", "new.txt"]),
        "A\tnew.txt\nM\tt.txt\n"
    );
    assert!(ok(d, &["diff", "--stat"]).contains("t.txt | +2 -1"));
    ok(d, &["save"]);
    assert_eq!(json(d, &["diff", "#1", "#2"])["total_files"], 4);
    assert!(ok(d, &["diff"]).contains("no differences"));
    let log = json(d, &["log", "-n", "1"]);
    assert_eq!(log["snapshots"][0]["stats"]["lines_added"], 53);
}

#[test]
fn completions_since_and_help() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Run as `snap`: both names. Run as `snap-undo` (all the wheel installs): that name only,
    // so snapd's `snap` keeps its own completions.
    assert!(ok(d, &["completions", "bash"]).contains("_snap()"));
    assert!(ok(d, &["completions", "zsh"]).starts_with("#compdef snap-undo snap\n"));
    assert!(ok(d, &["completions", "fish"]).contains("complete -c snap "));
    let undo_only = |shell: &str| {
        let out = std::process::Command::new(bin("snap-undo"))
            .args(["completions", shell])
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let bash = undo_only("bash");
    assert!(
        bash.contains("-F _snap__undo") && bash.contains(" snap-undo\n"),
        "{bash}"
    );
    assert!(!bash.contains("default snap\n"), "binds snapd's name");
    assert!(undo_only("zsh").starts_with("#compdef snap-undo\n"));
    let fish = undo_only("fish");
    assert!(fish.contains("complete -c snap-undo") && !fish.contains("complete -c snap "));
    write(d, "f", b"1");
    ok(d, &["save"]);
    assert_eq!(
        json(d, &["log", "--since", "1h"])["snapshots"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let out = snap(d, &["log", "--since", "soon"]);
    assert_eq!(out.status.code(), Some(2), "a bad value is a usage error");
    let help = ok(d, &["--help"]);
    for cmd in [
        "init",
        "save",
        "undo",
        "rewind",
        "redo",
        "restore",
        "log",
        "show",
        "ls",
        "cat",
        "diff",
        "status",
        "recover",
        "prune",
        "gc",
        "verify",
        "repair",
        "delete",
        "completions",
    ] {
        assert!(
            help.contains(&format!("\n  {cmd} ")),
            "`snap --help` does not list {cmd}"
        );
    }
}

#[test]
fn polish_from_a_new_user_trial() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "src/a", b"1");
    write(d, "weird\nname\x1b[31m", b"x");
    assert!(ok(d, &["init"]).contains("initialized"));
    assert!(ok(d, &["init"]).contains("already exists"));
    assert_eq!(json(d, &["init"])["created"], false);
    ok(d, &["save"]);
    // A bad value is a usage error, as a bad number is.
    assert_eq!(
        snap(d, &["log", "--since", "yesterday"]).status.code(),
        Some(2)
    );
    assert_eq!(snap(d, &["log", "-n", "x"]).status.code(), Some(2));
    assert!(ok(d, &["log", "--since", "2h"]).contains("#1 "));
    // A directory is named as one, the root as `.`.
    let out = snap(d, &["cat", "@", "src"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a directory"), "{}", stderr(&out));
    let out = snap(d, &["cat", "@", "."]);
    assert!(
        stderr(&out).starts_with("error: . is a directory"),
        "{}",
        stderr(&out)
    );
    // Filters that select nothing say so, not that there is no history.
    for filter in [&["-n", "0"][..], &["--step", "9"], &["--since", "0s"]] {
        let out = ok(d, &[&["log"][..], filter].concat());
        assert_eq!(out.trim(), "no snapshot matches", "{filter:?}");
    }
    // Control characters in names never reach the terminal raw.
    write(d, "weird\nname\x1b[31m", b"y");
    let shown = ok(d, &["status"]);
    assert!(shown.contains("M weird\\nname\\x1b[31m"), "{shown}");
    assert!(!shown.contains('\x1b'));
    assert_eq!(
        json(d, &["status"])["changes"][0]["path"],
        "weird\nname\x1b[31m"
    );
}

#[test]
fn quiet_commands_print_nothing_on_success_but_kept_paths() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "f", b"1");
    for args in [&["-q", "init"][..], &["-q", "save"]] {
        assert_eq!(ok(d, args), "", "{args:?}");
    }
    write(d, "f", b"2");
    assert_eq!(ok(d, &["-q", "save"]), "");
    for args in [
        &["-q", "undo"][..],
        &["-q", "redo"],
        &["-q", "gc"],
        &["-q", "recover"],
    ] {
        let out = snap(d, args);
        assert!(out.status.success(), "{args:?}");
        assert!(
            out.stdout.is_empty() && out.stderr.is_empty(),
            "{args:?}: {out:?}"
        );
    }
    // A path the move keeps is still named.
    std::fs::write(d.join(".snap/config.toml"), "max_file_size = 10\n").unwrap();
    write(d, "f", b"far more than ten bytes");
    let out = snap(d, &["-q", "undo"]);
    assert!(stderr(&out).contains("kept f as it is"), "{out:?}");
}

#[test]
fn diff_shows_modes_and_links_and_pages_keep_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "run.sh", b"echo\n");
    chmod(d, "run.sh", 0o644);
    std::os::unix::fs::symlink("run.sh", d.join("link")).unwrap();
    for i in 0..30 {
        write(d, &format!("many/f{i:02}"), b"1\n");
    }
    ok(d, &["save"]);
    chmod(d, "run.sh", 0o755);
    std::fs::remove_file(d.join("link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", d.join("link")).unwrap();
    for i in 0..30 {
        write(d, &format!("many/f{i:02}"), b"2\n");
    }
    let full = ok(d, &["diff", "--", "run.sh", "link"]);
    assert!(full.contains("run.sh mode 644 -> 755"), "{full}");
    assert!(
        full.contains("link: symlink to run.sh -> symlink to elsewhere"),
        "{full}"
    );
    let v = json(d, &["diff", "--", "run.sh"]);
    assert_eq!(v["files"][0]["old_mode"], "644");
    assert_eq!(v["files"][0]["new_mode"], "755");
    // --stat shows every file; a full diff pages at 25, and the hint keeps the flags.
    let stat = ok(d, &["diff", "--stat"]);
    assert_eq!(
        stat.lines().filter(|l| l.contains(" | ")).count(),
        32,
        "{stat}"
    );
    assert!(stat.contains("run.sh | +0 -0 (mode 644 -> 755)"), "{stat}");
    let paged = ok(d, &["diff", "--max-lines", "3"]);
    assert!(
        paged.contains("next: snap diff --max-lines 3 --page 2"),
        "{paged}"
    );
}

/// Messages that tell the truth: a pruned `#N` says it was pruned; a page past the last is an
/// error and the last page offers no next; `--max-lines 0` shows every line; the first save
/// says it made the store (and names a `.git` above); a snapd verb names snapd only where it is.
#[test]
fn messages_tell_the_truth() {
    let dir = tempfile::tempdir().unwrap();
    let d = &dir.path().join("project/sub");
    std::fs::create_dir_all(dir.path().join("project/.git")).unwrap();
    write(d, "f0", b"0\n");
    let first = snap_cmd(d, &["--json", "save"]).output().unwrap();
    assert!(first.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&first.stdout).unwrap();
    assert_eq!(doc["initialized"], true, "{doc}");
    let err = stderr(&first);
    assert!(err.contains("created the store"), "{err}");
    assert!(err.contains("holds a .git"), "{err}");
    assert_eq!(json(d, &["save"])["initialized"], false);
    for i in 1..4 {
        write(d, &format!("f{i}"), b"x\n");
        ok(d, &["save"]);
    }
    ok(d, &["prune", "--keep-last", "2"]);
    let pruned = snap(d, &["show", "#1"]);
    assert_eq!(pruned.status.code(), Some(1));
    assert!(
        stderr(&pruned).contains("pruned or deleted"),
        "{}",
        stderr(&pruned)
    );
    let unknown = snap(d, &["show", "#99"]);
    assert!(stderr(&unknown).contains("unknown snapshot reference"));
    let long: String = (0..700).map(|i| format!("{i}\n")).collect();
    for i in 0..4 {
        write(d, &format!("f{i}"), long.as_bytes());
    }
    let past = snap(d, &["diff", "--files-per-page", "1", "--page", "9"]);
    assert_eq!(past.status.code(), Some(1));
    assert!(stderr(&past).contains("page 9 of 4"), "{}", stderr(&past));
    let last = ok(d, &["diff", "--files-per-page", "1", "--page", "4"]);
    assert!(!last.contains("next:"), "{last}");
    let every = ok(d, &["diff", "--files-per-page", "1", "--max-lines", "0"]);
    assert!(every.contains("+699"), "every line shown");
    if !std::path::Path::new("/usr/bin/snap").exists() {
        let verb = snap(d, &["install", "foo"]);
        assert_eq!(verb.status.code(), Some(2));
        assert!(
            !stderr(&verb).contains("/usr/bin/snap"),
            "{}",
            stderr(&verb)
        );
    }
}

/// `--help` lists the commands by purpose, as git does (a unit test in
/// crates/cli/src/help.rs checks the groups against the real list of commands).
#[test]
fn help_groups_the_commands_by_purpose() {
    let dir = tempfile::tempdir().unwrap();
    let help = ok(dir.path(), &["--help"]);
    let groups = [
        "History:",
        "Moves:",
        "Inspection:",
        "Store upkeep:",
        "Remotes:",
        "Agents:",
    ];
    let at: Vec<usize> = (groups.iter())
        .map(|g| help.find(&format!("\n{g}\n")).unwrap_or(usize::MAX))
        .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]) && at[5] != usize::MAX,
        "{help}"
    );
    assert!(help.contains("\nMoves:\n  undo "), "{help}");
    assert!(help.contains("\nAgents:\n  hook "), "{help}");
}

/// The top-level keys of each document in a `text` block of JSON.md (examples there may
/// elide values with `...`, so they are scanned, not parsed), document by document.
pub(crate) fn documented_keys(block: &str) -> Vec<Vec<String>> {
    let (mut docs, mut depth, mut in_str, mut escaped) = (Vec::new(), 0, false, false);
    let (mut current, mut token): (Vec<String>, Option<String>) = (Vec::new(), None);
    let mut last_string = None;
    for c in block.chars() {
        if in_str {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => {
                    in_str = false;
                    last_string = token.take();
                }
                _ => token.get_or_insert_with(String::new).push(c),
            }
            continue;
        }
        match c {
            '"' => {
                in_str = true;
                token = Some(String::new());
            }
            ':' if depth == 1 => current.extend(last_string.take()),
            '{' | '[' => depth += 1,
            '}' | ']' => {
                depth -= 1;
                if depth == 0 {
                    let mut keys = std::mem::take(&mut current);
                    keys.sort();
                    docs.push(keys);
                }
            }
            c if !c.is_whitespace() => last_string = None,
            _ => {}
        }
    }
    docs
}

/// The `### \`snap ...\`` sections under JSON.md's Remotes, each with its documents' keys.
fn documented_remote_keys() -> Vec<(String, Vec<Vec<String>>)> {
    let doc = std::fs::read_to_string(docs_dir().join("JSON.md")).unwrap();
    let remotes = doc.split("\n## Remotes\n").nth(1).unwrap();
    let remotes = remotes.split("\n## ").next().unwrap();
    let mut out = Vec::new();
    for section in remotes.split("\n### ").skip(1) {
        let title = section.lines().next().unwrap().to_string();
        let block = section.split("```text\n").nth(1).unwrap();
        let block = block.split("```").next().unwrap();
        out.push((title, documented_keys(block)));
    }
    out
}

fn keys_of(doc: &Value) -> Vec<String> {
    let mut keys: Vec<String> = doc.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    keys
}

/// Every remote document JSON.md shows has the keys that the binary prints on a
/// `file://` remote (the section's commands run with that remote for the bucket's).
#[test]
fn docs_json_md_remote_keys_match_what_the_binary_prints() {
    let top = tempfile::tempdir().unwrap();
    let (a, remote) = (top.path().join("a"), top.path().join("remote"));
    std::fs::create_dir(&a).unwrap();
    let url = format!("file://{}", remote.display());
    write(&a, "a.txt", b"one\n");
    ok(&a, &["save"]);
    let documented = documented_remote_keys();
    assert_eq!(documented.len(), 8, "{documented:?}");
    for (title, docs) in documented {
        let printed: Vec<Value> = match title.as_str() {
            t if t.starts_with("`snap remote add") => vec![
                json(&a, &["remote", "add", "--create", "origin", &url]),
                json(&a, &["remote", "list"]),
            ],
            "`snap push`" => vec![json(&a, &["push"])],
            t if t.starts_with("`snap remote key") => vec![
                json(&a, &["remote", "key", "add"]),
                json(&a, &["remote", "key", "list"]),
                json(&a, &["remote", "key", "remove", "keys/initial"]),
            ],
            "`snap remote encrypt`" => {
                let (b, plain) = (top.path().join("b"), top.path().join("plain"));
                std::fs::create_dir(&b).unwrap();
                write(&b, "b.txt", b"two\n");
                ok(&b, &["save"]);
                let plain = format!("file://{}", plain.display());
                ok(
                    &b,
                    &["remote", "add", "--create", "--no-encryption", "p", &plain],
                );
                ok(&b, &["push"]);
                vec![json(&b, &["remote", "encrypt"])]
            }
            "`snap pull`" => vec![json(&a, &["pull"])],
            t if t.starts_with("`snap clone") => {
                vec![json(top.path(), &["clone", &url, "dir"])]
            }
            "`snap gc --remote --grace 0`" => vec![json(&a, &["gc", "--remote", "--grace", "0"])],
            "`snap verify --remote --read-data`" => {
                vec![json(&a, &["verify", "--remote", "--read-data"])]
            }
            other => panic!("JSON.md documents {other}, which this test does not run"),
        };
        let printed: Vec<Vec<String>> = printed.iter().map(keys_of).collect();
        assert_eq!(docs, printed, "JSON.md's keys for {title}");
    }
}
