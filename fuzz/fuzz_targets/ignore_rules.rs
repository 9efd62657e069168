//! The ignore-file parser, for time and memory: any bytes as a `.gitignore` (and the same as
//! a `.snapignore` one level down) must give a walk that ends, within libFuzzer's timeout
//! and RSS limit, and never fails: a line the parser refuses is no rule, never an error.
//! Whatever the rules, the store directory and the walk's own files stay out of it, and
//! every path it lists exists below the root.

#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use snap_tree::Config;

/// One workspace for every input: a few files in a few directories, deep enough that
/// anchored, nested and `**` rules all have something to match.
fn root() -> &'static Path {
    static ROOT: OnceLock<(tempfile::TempDir, PathBuf)> = OnceLock::new();
    &ROOT
        .get_or_init(|| {
            let dir = tempfile::tempdir().expect("temp dir");
            let root = dir.path().to_path_buf();
            for rel in ["a.txt", "b.log", "src/main.rs", "src/lib/x.rs", "target/out.o", "d/e/f/g"] {
                let path = root.join(rel);
                std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
                std::fs::write(path, rel).expect("file");
            }
            std::fs::create_dir_all(root.join(".snap")).expect("store dir");
            std::fs::write(root.join(".snap/x"), b"store").expect("store file");
            (dir, root)
        })
        .1
}

fuzz_target!(|data: &[u8]| {
    let root = root();
    std::fs::write(root.join(".gitignore"), data).expect("write .gitignore");
    std::fs::write(root.join("src/.snapignore"), data).expect("write .snapignore");
    let walk = match snap_tree::testing::scan::walk(root, &Config::default()) {
        Ok(walk) => walk,
        Err(e) => panic!("a walk failed on an ignore file: {e}"),
    };
    for (path, _, _) in &walk.entries {
        assert!(!path.starts_with(b".snap/") && path.as_slice() != b".snap", "store listed");
        let abs = root.join(std::str::from_utf8(path).expect("utf-8 fixture path"));
        assert!(abs.symlink_metadata().is_ok(), "listed a path that is not there");
    }
});
