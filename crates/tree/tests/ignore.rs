//! What is tracked: ignore semantics checked against git itself, plus snap's own layers
//! (`.snapignore` re-includes, default excludes, VCS directories, size limit, special files).

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use snap_tree::testing::scan::walk;
use snap_tree::{Config, EntryKind};

fn write(root: &Path, path: &str, content: &str) {
    let p = root.join(path);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, content).unwrap();
}

/// Tracked files and symlinks (not directories), as sorted strings.
fn tracked(root: &Path, config: &Config) -> BTreeSet<String> {
    let w = walk(root, config).unwrap();
    w.entries
        .into_iter()
        .filter(|(_, k, _)| *k != EntryKind::Dir)
        .map(|(p, _, _)| String::from_utf8(p).unwrap())
        .collect()
}

fn no_defaults() -> Config {
    Config {
        exclude_dirs: Vec::new(),
        exclude_extensions: Vec::new(),
        ..Config::default()
    }
}

const TRICKY_GITIGNORE: &str = r"# comment line
*.log
!keep.log
build/
/anchored.txt
**/deep/*.tmp
a/**/b.txt
excluded_dir/
!excluded_dir/keep.txt
\#hash.txt
trailing\ 
spaced.txt   
doc/*.txt
[xy].c
*.dat
out/**
!out/inner/
";

fn tricky_tree(root: &Path) {
    write(root, ".gitignore", TRICKY_GITIGNORE);
    for f in [
        "app.log",
        "keep.log",
        "sub/app.log",
        "sub/keep.log",
        "build/x.o",
        "sub/build/y.o",
        "lib/build",
        "anchored.txt",
        "sub/anchored.txt",
        "deep/a.tmp",
        "x/deep/b.tmp",
        "x/deep/c.txt",
        "x/deep/more/d.tmp",
        "a/b.txt",
        "a/x/y/b.txt",
        "a/c.txt",
        "excluded_dir/keep.txt",
        "excluded_dir/other.txt",
        "#hash.txt",
        "sub/#hash.txt",
        "trailing ",
        "trailing",
        "spaced.txt",
        "doc/a.txt",
        "doc/x/b.txt",
        "x.c",
        "z.c",
        "data.dat",
        "nested/data.dat",
        "nested/important.dat",
        "nested/deeper/important.dat",
        "out/a",
        "out/inner/b",
        "plain.rs",
        ".hidden",
        ".config/settings",
    ] {
        write(root, f, f);
    }
    write(root, "nested/.gitignore", "!important.dat\n/local.txt\n");
    // A deeper .gitignore overrides a shallower one; middle-slash patterns are anchored to
    // their own directory; a directory pattern matches at any depth below.
    write(
        root,
        "over/.gitignore",
        "!*.log\nlocal/\nsrc/gen\n*.tmp\n!keep.tmp\n",
    );
    for f in [
        "over/x.log",
        "over/local/f",
        "over/y/local/g",
        "over/src/gen",
        "over/z/src/gen",
        "over/a.tmp",
        "over/keep.tmp",
        "over/y/b.tmp",
    ] {
        write(root, f, f);
    }
    // An excluded directory's own .gitignore is never read.
    write(root, "build/.gitignore", "!*.o\n");
    write(root, "build/keep.o", "o");
    write(root, "nested/local.txt", "l");
    write(root, "nested/deeper/local.txt", "l");
    std::os::unix::fs::symlink("plain.rs", root.join("link.rs")).unwrap();
    std::os::unix::fs::symlink("nowhere", root.join("dangling.log")).unwrap();
}

fn git_untracked(root: &Path) -> Option<BTreeSet<String>> {
    let git = |args: &[&str]| {
        Command::new("git")
            .current_dir(root)
            .env("HOME", root)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .args(args)
            .output()
            .ok()
    };
    git(&["init", "-q"])?.status.success().then_some(())?;
    let out = git(&[
        "-c",
        "core.excludesFile=/dev/null",
        "ls-files",
        "-z",
        "--others",
        "--exclude-standard",
    ])?;
    out.status.success().then_some(())?;
    Some(
        out.stdout
            .split(|&b| b == 0)
            .filter(|s| !s.is_empty())
            .map(|s| String::from_utf8(s.to_vec()).unwrap())
            .collect(),
    )
}

#[test]
fn gitignore_semantics_match_git() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    tricky_tree(root);
    let Some(expected) = git_untracked(root) else {
        eprintln!("git is not installed; skipping the comparison with git");
        return;
    };
    let ours = tracked(root, &no_defaults());
    assert_eq!(
        ours, expected,
        "snap's tracked set differs from git's untracked, non-ignored set"
    );
}

#[test]
fn gitignore_applies_without_a_git_repo() {
    let dir = tempfile::tempdir().unwrap();
    tricky_tree(dir.path());
    let ours = tracked(dir.path(), &no_defaults());
    assert!(!ours.contains("app.log") && ours.contains("keep.log") && !ours.contains("build/x.o"));
    assert!(
        ours.contains("lib/build"),
        "a directory-only pattern must not match a file"
    );
    assert!(!ours.contains("anchored.txt") && ours.contains("sub/anchored.txt"));
    assert!(
        !ours.contains("excluded_dir/keep.txt"),
        "git cannot re-include below an excluded directory"
    );
    assert!(ours.contains("nested/important.dat") && !ours.contains("data.dat"));
    assert!(!ours.contains("nested/local.txt") && ours.contains("nested/deeper/local.txt"));
}

#[test]
fn snapignore_can_reinclude_and_exclude() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, ".gitignore", "*.log\n");
    write(root, ".snapignore", "!wanted.log\nsecret.txt\n");
    for f in [
        "wanted.log",
        "other.log",
        "secret.txt",
        "sub/secret.txt",
        "plain",
    ] {
        write(root, f, "x");
    }
    let ours = tracked(root, &no_defaults());
    let expect: BTreeSet<String> = [".gitignore", ".snapignore", "wanted.log", "plain"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(ours, expect);
}

#[test]
fn default_excludes_vcs_dirs_store_and_size_limit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for f in [
        "node_modules/m.js",
        "sub/node_modules/n.js",
        "a/__pycache__/c.pyc",
        "x.pyc",
        "lib.so",
        "pkg.egg-info/PKG",
        ".git/config",
        "sub/.git",
        ".hg/x",
        ".svn/x",
        ".jj/x",
        ".snap/catalog.redb",
        "sub/.snap/kept",
        "src/main.rs",
    ] {
        write(root, f, "x");
    }
    write(root, "big.bin", &"x".repeat(100));
    let config = Config {
        max_file_size: 50,
        ..Config::default()
    };
    let w = walk(root, &config).unwrap();
    assert_eq!(w.too_large, vec![(b"big.bin".to_vec(), 100)]);
    let ours: BTreeSet<String> = w
        .entries
        .into_iter()
        .filter(|(_, k, _)| *k != EntryKind::Dir)
        .map(|(p, _, _)| String::from_utf8(p).unwrap())
        .collect();
    let expect: BTreeSet<String> = ["src/main.rs", "sub/.snap/kept"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(ours, expect);
}

#[test]
fn special_files_are_skipped_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "f", "x");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        root.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let w = walk(root, &Config::default()).unwrap();
    assert_eq!(w.special, 1);
    assert_eq!(w.entries.len(), 1);
}

#[test]
fn non_utf8_names_are_tracked() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9");
    std::fs::write(dir.path().join(name), "x").unwrap();
    let w = walk(dir.path(), &Config::default()).unwrap();
    let entries: Vec<_> = w.entries.into_iter().map(|(p, k, _)| (p, k)).collect();
    assert_eq!(entries, vec![(b"caf\xe9".to_vec(), EntryKind::File)]);
}

#[test]
fn a_symlinked_ignore_file_is_not_read_as_git_does() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "rules.txt", "*.log\n");
    write(root, "a.log", "a");
    write(root, "b.txt", "b");
    write(root, "sub/c.log", "c");
    write(root, "sub/d.tmp", "d");
    write(root, "real/.gitignore", "\u{feff}*.tmp\n# comment\n");
    write(root, "real/e.tmp", "e");
    std::os::unix::fs::symlink("rules.txt", root.join(".gitignore")).unwrap();
    std::os::unix::fs::symlink("../rules.txt", root.join("sub/.gitignore")).unwrap();
    let ours = tracked(root, &no_defaults());
    assert!(
        ours.contains("a.log") && ours.contains("sub/c.log"),
        "{ours:?}"
    );
    assert!(!ours.contains("real/e.tmp"), "{ours:?}");
    let Some(expected) = git_untracked(root) else {
        eprintln!("git is not installed; skipping the comparison with git");
        return;
    };
    assert_eq!(ours, expected);
}
