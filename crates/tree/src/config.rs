//! `.snap/config.toml`: the default excludes and the file size limit.

use std::path::Path;

use serde::Deserialize;

use crate::TreeError;

/// Files larger than this are skipped and reported, unless the config says otherwise.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 64 << 20;

/// Settings read from `.snap/config.toml`. Every field is optional in the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Files over this many bytes are not snapshotted (reported by save and status).
    pub max_file_size: u64,
    /// Directory names never descended into, at any depth. `*` globs are allowed.
    pub exclude_dirs: Vec<String>,
    /// File name endings (with the dot) never snapshotted.
    pub exclude_extensions: Vec<String>,
}

impl Default for Config {
    fn default() -> Config {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Config {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            exclude_dirs: strings(&[
                ".venv",
                "__pycache__",
                "build",
                "dist",
                "*.egg-info",
                "node_modules",
            ]),
            exclude_extensions: strings(&[
                ".pyc", ".pyo", ".pyd", ".so", ".dll", ".dylib", ".exe", ".db", ".sqlite",
                ".sqlite3", ".db-wal", ".db-shm",
            ]),
        }
    }
}

impl Config {
    /// Reads `config.toml` in the store directory; a missing file means the defaults.
    pub fn load(store_dir: &Path) -> Result<Config, TreeError> {
        let path = store_dir.join("config.toml");
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Config::default()),
            Err(e) => return Err(TreeError::io(path, e)),
        };
        toml::from_str(&text).map_err(|e| TreeError::Config {
            path,
            why: e.to_string().trim().to_string(),
        })
    }

    /// True if a directory with this name is excluded by default.
    pub fn excludes_dir(&self, name: &[u8]) -> bool {
        self.exclude_dirs
            .iter()
            .any(|pat| glob_match(pat.as_bytes(), name))
    }

    /// True if a file with this name is excluded by its ending.
    pub fn excludes_file(&self, name: &[u8]) -> bool {
        self.exclude_extensions
            .iter()
            .any(|ext| name.len() > ext.len() && name.ends_with(ext.as_bytes()))
    }
}

/// Matches `*` (any run of bytes) and literal bytes; enough for names like `*.egg-info`.
fn glob_match(pat: &[u8], name: &[u8]) -> bool {
    match pat.iter().position(|&c| c == b'*') {
        None => pat == name,
        Some(star) => {
            let (head, tail) = (&pat[..star], &pat[star + 1..]);
            name.starts_with(head)
                && (head.len()..=name.len()).any(|i| glob_match(tail, &name[i..]))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_excludes() {
        let c = Config::default();
        assert!(c.excludes_dir(b"node_modules"));
        assert!(c.excludes_dir(b"foo.egg-info"));
        assert!(!c.excludes_dir(b"src"));
        assert!(c.excludes_file(b"a.pyc"));
        assert!(
            !c.excludes_file(b".db"),
            "a bare extension is a name, not an ending"
        );
        assert!(!c.excludes_file(b"a.rs"));
    }

    #[test]
    fn config_file_overrides() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "max_file_size = 10\nexclude_dirs = []\n",
        )
        .unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!(c.max_file_size, 10);
        assert!(!c.excludes_dir(b"build"));
        std::fs::write(dir.path().join("config.toml"), "bogus = 1\n").unwrap();
        assert!(Config::load(dir.path()).is_err());
    }
}
