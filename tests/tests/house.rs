//! The house's rules, kept by a test (as rust-analyzer keeps its architecture): over every
//! library source file of the workspace (`crates/*/src`),
//!
//! - no import circle between files: an edge is a `use` (not a `pub use`, which is a
//!   facade's re-export) or an inline `crate::`/`super::` path naming an item of another
//!   file; a strongly connected set of more than one file is a circle;
//! - no `use super::{...}` hub handing a file more than [`HUB_NAMES`] names;
//! - no import circle between folders either (a file at a crate's root is a folder of its
//!   own; a folder and the folders inside it are not judged against each other);
//! - every CLI command takes one `...Args` type, defined beside its body;
//! - no file over [`MAX_LINES`] lines before its tests (`#[cfg(test)]`);
//! - no library error message (`#[error("...")]` in snap-store, snap-tree, snap-remote)
//!   naming a CLI command: hints belong to the binary.
//!
//! What the code holds today beyond these rules is listed in `tests/house-allowed.txt`, one
//! offence a line; the test fails on any offence not listed, naming it, and on a listed one
//! that is gone (so the list only shrinks). ARCHITECTURE.md says where code belongs.

#![allow(clippy::unwrap_used, missing_docs)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The most names one `use super::{...}` may hand a file.
const HUB_NAMES: usize = 4;
/// The most lines a source file may have before its tests.
const MAX_LINES: usize = 700;
/// The crates whose error messages must not name a CLI command.
const LIBRARIES: [&str; 3] = ["store", "tree", "remote"];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// One source file: its crate, its module path, its text.
struct Source {
    krate: String,
    module: Vec<String>,
    rel: String,
    text: String,
}

fn sources() -> Vec<Source> {
    let mut out = Vec::new();
    let crates = root().join("crates");
    for entry in std::fs::read_dir(&crates).unwrap() {
        let dir = entry.unwrap().path();
        let krate = dir.file_name().unwrap().to_string_lossy().into_owned();
        let src = dir.join("src");
        let mut files = Vec::new();
        walk(&src, &mut files);
        for file in files {
            let inner = file.strip_prefix(&src).unwrap();
            if inner.starts_with("bin") {
                continue;
            }
            out.push(Source {
                krate: krate.clone(),
                module: module_of(inner),
                rel: file.strip_prefix(root()).unwrap().display().to_string(),
                text: std::fs::read_to_string(&file).unwrap(),
            });
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `a/b.rs` and `a/b/mod.rs` are module `a::b`; `lib.rs` is the crate root.
fn module_of(inner: &Path) -> Vec<String> {
    let mut parts: Vec<String> = (inner.iter())
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The text before the file's tests, comments and string literals blanked.
fn code_of(text: &str) -> String {
    let before = text.split("#[cfg(test)]").next().unwrap_or(text);
    before
        .lines()
        .map(|l| match l.trim_start().starts_with("//") {
            true => "",
            false => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every path a file names through `use` (not `pub use`) or inline, each as segments from
/// the crate root (`super::` and `self::` resolved against `module`).
fn named_paths(code: &str, module: &[String]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for statement in use_statements(code) {
        for path in expand_use(&statement) {
            out.extend(resolve(&path, module));
        }
    }
    for path in inline_paths(code) {
        out.extend(resolve(&path, module));
    }
    out
}

/// The bodies of `use ...;` statements that are not `pub`.
fn use_statements(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("use ") {
        let before = &rest[..at];
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let prefix = before[line_start..].trim();
        let starts = at == 0 || !rest.as_bytes()[at - 1].is_ascii_alphanumeric();
        let after = &rest[at + 4..];
        let Some(end) = after.find(';') else { break };
        if starts && prefix.is_empty() {
            out.push(normalized(&after[..end]));
        }
        rest = &after[end.min(after.len())..];
    }
    out
}

/// A use tree on one line, without spaces but around `as`.
fn normalized(tree: &str) -> String {
    let one = tree.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = one;
    for (from, to) in [
        (", ", ","),
        ("{ ", "{"),
        (" }", "}"),
        (":: ", "::"),
        (" ::", "::"),
    ] {
        out = out.replace(from, to);
    }
    out
}

/// `a::{b, c::{d, e}}` as `a::b`, `a::c::d`, `a::c::e` (an `as` rename dropped).
fn expand_use(tree: &str) -> Vec<String> {
    let tree = normalized(tree);
    let Some(open) = tree.find('{') else {
        return vec![tree.split(" as ").next().unwrap_or(&tree).to_string()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, ch) in inner.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&inner[start..]);
    (parts.into_iter().filter(|p| !p.is_empty()))
        .flat_map(expand_use)
        .map(|p| match p.as_str() {
            "self" => prefix.trim_end_matches("::").to_string(),
            _ => format!("{prefix}{p}"),
        })
        .collect()
}

/// Inline `crate::a::b` and `super::a` paths outside `use` statements.
fn inline_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let is_use = |l: &str| {
        let l = l.trim_start();
        let l = l
            .strip_prefix("pub(crate) ")
            .or(l.strip_prefix("pub "))
            .unwrap_or(l);
        l.starts_with("use ")
    };
    for line in code.lines().filter(|l| !is_use(l)) {
        for start in ["crate::", "super::"] {
            let mut rest = line;
            while let Some(at) = rest.find(start) {
                let before_ok = at == 0 || {
                    let b = rest.as_bytes()[at - 1];
                    !(b.is_ascii_alphanumeric() || b == b'_' || b == b':')
                };
                let tail = &rest[at..];
                let end = tail
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
                    .unwrap_or(tail.len());
                if before_ok {
                    out.push(tail[..end].trim_end_matches(':').to_string());
                }
                rest = &tail[end.max(1)..];
            }
        }
    }
    out
}

/// A path from the crate root, or `None` for another crate's.
fn resolve(path: &str, module: &[String]) -> Option<Vec<String>> {
    let mut segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let mut at: Vec<String> = match segments.first() {
        Some(&"crate") => Vec::new(),
        Some(&"super") | Some(&"self") => module.to_vec(),
        _ => return None,
    };
    // A `mod.rs` is its folder's module, so `super` from it leaves the folder, and from a
    // leaf file it leaves the file's module: one rule for both.
    if segments.first() == Some(&"crate") {
        segments.remove(0);
    }
    while let Some(&first) = segments.first() {
        match first {
            "super" => drop(at.pop()),
            "self" => {}
            _ => break,
        }
        segments.remove(0);
    }
    at.extend(segments.iter().map(|s| s.to_string()));
    Some(at)
}

/// The file (index) holding the longest module prefix of `path`.
fn owner(path: &[String], files: &BTreeMap<Vec<String>, usize>) -> Option<usize> {
    (0..=path.len())
        .rev()
        .find_map(|n| files.get(&path[..n]).copied())
}

/// Strongly connected sets of more than one node (Tarjan, iterative enough for a few
/// hundred files).
fn circles(edges: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    struct State<'a> {
        edges: &'a [BTreeSet<usize>],
        index: Vec<Option<usize>>,
        low: Vec<usize>,
        stack: Vec<usize>,
        on: Vec<bool>,
        next: usize,
        out: Vec<Vec<usize>>,
    }
    fn visit(s: &mut State, v: usize) {
        s.index[v] = Some(s.next);
        s.low[v] = s.next;
        s.next += 1;
        s.stack.push(v);
        s.on[v] = true;
        for &w in s.edges[v].clone().iter() {
            match s.index[w] {
                None => {
                    visit(s, w);
                    s.low[v] = s.low[v].min(s.low[w]);
                }
                Some(i) if s.on[w] => s.low[v] = s.low[v].min(i),
                Some(_) => {}
            }
        }
        if Some(s.low[v]) == s.index[v] {
            let mut set = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on[w] = false;
                set.push(w);
                if w == v {
                    break;
                }
            }
            if set.len() > 1 {
                set.sort();
                s.out.push(set);
            }
        }
    }
    let n = edges.len();
    let mut s = State {
        edges,
        index: vec![None; n],
        low: vec![0; n],
        stack: Vec::new(),
        on: vec![false; n],
        next: 0,
        out: Vec::new(),
    };
    for v in 0..n {
        if s.index[v].is_none() {
            visit(&mut s, v);
        }
    }
    s.out
}

/// Every import arrow of each crate, as (from, to) indexes into `sources`.
fn arrows(sources: &[Source]) -> Vec<(usize, usize)> {
    let mut by_crate: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, s) in sources.iter().enumerate() {
        by_crate.entry(&s.krate).or_default().push(i);
    }
    let mut out = BTreeSet::new();
    for files in by_crate.values() {
        let index: BTreeMap<Vec<String>, usize> = (files.iter())
            .map(|&i| (sources[i].module.clone(), i))
            .collect();
        for &i in files {
            let s = &sources[i];
            for path in named_paths(&code_of(&s.text), &s.module) {
                if let Some(to) = owner(&path, &index).filter(|&to| to != i) {
                    out.insert((i, to));
                }
            }
        }
    }
    out.into_iter().collect()
}

/// The lines of every `impl TYPE {` block (not trait impls) of the sources.
fn impl_lines(sources: &[Source], ty: &str) -> (usize, usize, BTreeSet<String>) {
    let (mut lines, mut methods, mut files) = (0, 0, BTreeSet::new());
    let head = format!("impl {ty} {{");
    let head_lt = format!("impl {ty}<'_> {{");
    for s in sources {
        let code = code_of(&s.text);
        let mut depth = None::<i64>;
        for line in code.lines() {
            if depth.is_none() && (line == head || line == head_lt) {
                depth = Some(0);
                files.insert(s.rel.clone());
            }
            if let Some(d) = depth.as_mut() {
                lines += 1;
                let t = line.trim_start();
                if line.starts_with("    ")
                    && !line.starts_with("     ")
                    && (t.starts_with("fn ")
                        || t.starts_with("pub fn ")
                        || t.starts_with("pub(crate) fn ")
                        || t.starts_with("pub(super) fn "))
                {
                    methods += 1;
                }
                *d += line.matches('{').count() as i64 - line.matches('}').count() as i64;
                if *d == 0 {
                    depth = None;
                }
            }
        }
    }
    (lines, methods, files)
}

/// The figures the house is judged by (`cargo test -p snap-e2e --test house -- --nocapture`):
/// and the one of them that is a rule: `Workspace` (with `ReadOnlyWorkspace`) stays a facade.
#[test]
fn the_house_in_figures() {
    let sources = sources();
    let arrows = arrows(&sources);
    let mut per_crate: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for &(from, to) in &arrows {
        let (a, b) = (&sources[from].module, &sources[to].module);
        let entry = per_crate.entry(&sources[from].krate).or_default();
        entry.0 += 1;
        if b.len() < a.len() && a.starts_with(b) {
            entry.1 += 1;
        }
    }
    for (krate, (all, up)) in &per_crate {
        println!("{krate}: {all} import arrows, {up} running back up to a parent module");
    }
    let tree: Vec<&Source> = sources.iter().filter(|s| s.krate == "tree").collect();
    let total: usize = tree.iter().map(|s| code_of(&s.text).lines().count()).sum();
    let mut folders: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &tree {
        let top = s.module.first().map_or("lib.rs", String::as_str);
        *folders.entry(top).or_default() += code_of(&s.text).lines().count();
    }
    let (largest, lines) = folders.iter().max_by_key(|(_, n)| **n).unwrap();
    println!(
        "snap-tree: largest folder {largest}/ holds {lines} of {total} lines ({:.0}%)",
        100.0 * *lines as f64 / total as f64
    );
    let (mut lines, mut methods, mut files) = (0, 0, BTreeSet::new());
    for ty in ["Workspace", "ReadOnlyWorkspace"] {
        let (l, m, f) = impl_lines(&sources, ty);
        println!("impl {ty}: {l} lines, {m} methods, in {} files", f.len());
        (lines, methods, files) = (lines + l, methods + m, files.union(&f).cloned().collect());
    }
    println!("the facade: {lines} lines, {methods} methods");
    let folders: BTreeSet<&str> = files
        .iter()
        .map(|f| f.rsplit_once('/').unwrap().0)
        .collect();
    assert!(
        lines < 1200 && folders.len() == 1,
        "the Workspace facade (impl Workspace and ReadOnlyWorkspace) stays under 1,200 lines in \
         one folder ({lines} lines in {folders:?})"
    );
}

/// The folder a file is in, as a module path within its crate: a file at the crate root is
/// a folder of its own (`lib.rs` is the root's), so that `error.rs` and `parts.rs` are not
/// one node.
fn folder_of(source: &Source) -> String {
    let nested = source.rel.ends_with("/mod.rs") || source.module.len() < 2;
    let keep = match nested {
        true => source.module.len(),
        false => source.module.len() - 1,
    };
    format!("{}::{}", source.krate, source.module[..keep].join("::"))
}

/// One line for each CLI command that does not take one `...Args` type of its own, defined
/// beside its body (not in `args.rs`, which holds the top-level parser alone).
fn args_offences(sources: &[Source]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let Some(args) = sources.iter().find(|s| s.rel == "crates/cli/src/args.rs") else {
        return found;
    };
    let code = code_of(&args.text);
    let Some(body) = code.split("pub enum Command {").nth(1) else {
        return found;
    };
    let body = body.split("\n}").next().unwrap_or("");
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("    ") else {
            continue;
        };
        let name: String = rest
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect();
        if name.is_empty() || !name.starts_with(|c: char| c.is_ascii_uppercase()) {
            continue;
        }
        let ty = rest[name.len()..]
            .strip_prefix('(')
            .and_then(|r| r.split(')').next());
        let owned = ty.filter(|t| t.ends_with("Args")).is_some_and(|t| {
            let defined = format!("struct {t} {{");
            let beside = |s: &&Source| s.rel.starts_with("crates/cli/src/") && s.rel != args.rel;
            sources
                .iter()
                .filter(beside)
                .any(|s| s.text.contains(&defined))
        });
        if !owned {
            found.insert(format!(
                "args: Command::{name} has no Args type beside its body"
            ));
        }
    }
    found
}

/// True when one folder is the other or holds it: a folder and the folders inside it are
/// one another's business (a child names its parent's types, a parent declares its
/// children), which the file rule already judges.
fn nested(a: &str, b: &str) -> bool {
    let under = |inner: &str, outer: &str| {
        inner == outer || inner.starts_with(&format!("{outer}::")) || outer.ends_with("::")
    };
    under(a, b) || under(b, a)
}

/// One line for each import circle: between files, and between folders.
fn circle_offences(sources: &[Source]) -> BTreeSet<String> {
    let arrows = arrows(sources);
    let mut found = BTreeSet::new();
    let mut edges = vec![BTreeSet::new(); sources.len()];
    for &(from, to) in &arrows {
        edges[from].insert(to);
    }
    for set in circles(&edges) {
        let names: Vec<&str> = set.iter().map(|&k| sources[k].rel.as_str()).collect();
        found.insert(format!("circle: {}", names.join(" <-> ")));
    }
    let folders: Vec<String> = sources.iter().map(folder_of).collect();
    let names: Vec<&String> = folders
        .iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let at = |f: &String| names.binary_search(&f).unwrap();
    let mut edges = vec![BTreeSet::new(); names.len()];
    for &(from, to) in &arrows {
        let (a, b) = (at(&folders[from]), at(&folders[to]));
        if !nested(names[a], names[b]) {
            edges[a].insert(b);
        }
    }
    for set in circles(&edges) {
        let set: Vec<&str> = set.iter().map(|&k| names[k].as_str()).collect();
        found.insert(format!("folder circle: {}", set.join(" <-> ")));
    }
    found
}

/// Every offence of the rules, one line each.
fn offences() -> BTreeSet<String> {
    let sources = sources();
    let mut found = BTreeSet::new();
    for s in &sources {
        let before = s.text.split("#[cfg(test)]").next().unwrap_or(&s.text);
        let lines = before.lines().count();
        if lines > MAX_LINES {
            found.insert(format!("long: {} ({lines} lines before its tests)", s.rel));
        }
        let code = code_of(&s.text);
        for statement in use_statements(&code) {
            if let Some(names) = statement.strip_prefix("super::{") {
                let n = expand_use(&format!("x::{{{names}")).len();
                if n > HUB_NAMES {
                    found.insert(format!("hub: {} takes {n} names from super", s.rel));
                }
            }
        }
        if LIBRARIES.contains(&s.krate.as_str()) {
            for message in s.text.split("#[error(\"").skip(1) {
                let message = message.split("\")]").next().unwrap_or("");
                if names_a_command(message) {
                    found.insert(format!("hint: {} says {message:?}", s.rel));
                }
            }
        }
    }
    found.extend(circle_offences(&sources));
    found.extend(args_offences(&sources));
    found
}

/// Whether an error message tells the user to run a snap command (`snap init`, `snap
/// pull`, ...).
fn names_a_command(message: &str) -> bool {
    let words: Vec<&str> = message
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .filter(|w| !w.is_empty())
        .collect();
    const VERBS: [&str; 24] = [
        "init", "save", "undo", "redo", "restore", "revert", "log", "show", "diff", "status", "gc",
        "prune", "verify", "repair", "recover", "push", "pull", "clone", "remote", "expunge",
        "export", "watch", "doctor", "hook",
    ];
    words
        .windows(2)
        .any(|w| w[0] == "snap" && VERBS.contains(&w[1]))
}

fn allowed() -> BTreeSet<String> {
    let path = root().join("tests/house-allowed.txt");
    let text = std::fs::read_to_string(path).unwrap_or_default();
    (text.lines())
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_house_keeps_its_rules() {
    let found = offences();
    let allowed = allowed();
    let new: Vec<&String> = found.difference(&allowed).collect();
    let gone: Vec<&String> = allowed.difference(&found).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "offences not in tests/house-allowed.txt (fix them):\n  {}\n\
         listed offences that are gone (take them off the list):\n  {}",
        new.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  "),
        gone.iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
}

#[test]
fn the_rules_see_what_they_name() {
    assert_eq!(
        expand_use("crate::a::{b, c::{d, e as f}, self}"),
        [
            "crate::a::b",
            "crate::a::c::d",
            "crate::a::c::e",
            "crate::a"
        ]
    );
    let module: Vec<String> = vec!["w".into(), "x".into()];
    assert_eq!(
        resolve("super::y::Z", &module),
        Some(vec!["w".to_string(), "y".into(), "Z".into()])
    );
    assert_eq!(resolve("std::fs", &module), None);
    let edges = vec![
        BTreeSet::from([1]),
        BTreeSet::from([2]),
        BTreeSet::from([0]),
        BTreeSet::new(),
    ];
    assert_eq!(circles(&edges), vec![vec![0, 1, 2]]);
    assert!(names_a_command("no store (run `snap init` first)"));
    assert!(!names_a_command("is another snap running?"));
    assert_eq!(
        use_statements("pub use a::b;\nuse c::{d,\n e};"),
        vec!["c::{d,e}"]
    );
}
