//! `.snap/config.toml`: the default excludes, `exclude_paths`, the file size limit and retention;
//! and the one edit snap makes to it itself (`exclude_paths`, for `snap hook install`).

use std::path::Path;

use serde::Deserialize;

use crate::error::TreeError;

/// Files larger than this are skipped and reported, unless the config says otherwise (4 GiB:
/// files are streamed, so size costs time and store space, not memory).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 4 << 30;

/// Files at least this large are named by the save that first takes them (`large_added`).
pub const DEFAULT_LARGE_FILE_SIZE: u64 = 64 << 20;

/// An ignore file larger than this is refused (1 MiB: the largest real ones are a few KiB).
pub const DEFAULT_MAX_IGNORE_FILE_BYTES: u64 = 1 << 20;

/// Settings read from `.snap/config.toml`. Every field is optional in the file.
#[derive(Clone, Debug, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Files over this many bytes are not snapshotted (reported by save and status).
    pub max_file_size: u64,
    /// Files of at least this many bytes are named, with their size, by the save that first
    /// takes them, shown by `status` and counted by `log --stats`.
    pub large_file_size: u64,
    /// A `.gitignore` or `.snapignore` over this many bytes is not compiled (a hostile one
    /// costs gigabytes per call: docs/PERFORMANCE.md): it is refused, named, and everything in its directory
    /// is left out (kept, never touched) until it shrinks.
    pub max_ignore_file_bytes: u64,
    /// Directory names never descended into, at any depth. `*` globs are allowed.
    pub exclude_dirs: Vec<String>,
    /// File name endings (with the dot) never snapshotted.
    pub exclude_extensions: Vec<String>,
    /// Workspace-relative paths (`/`-separated) left out with everything under them: never
    /// snapshotted, never touched by a move. `snap hook install` lists an agent's own
    /// config directory here, so that an undo can never remove the hook.
    pub exclude_paths: Vec<String>,
    /// Which snapshots `prune` keeps, and whether `save` applies it by itself.
    pub retention: RetentionConfig,
    /// The resident watcher (`snap watch`).
    pub watch: WatchConfig,
    /// File names (`*` globs) that look secret: `snap expunge --secrets` lists them, and
    /// `log --stats` and `doctor` say when history holds one.
    pub secret_paths: Vec<String>,
    /// Remotes by name (`[remote.NAME] url = "s3://bucket/prefix"`); URLs only, never
    /// credentials. `snap remote add` writes them.
    pub remote: std::collections::BTreeMap<String, RemoteConfig>,
}

/// One `[remote.NAME]` table.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteConfig {
    /// `s3://bucket/prefix` or `file:///path`.
    pub url: String,
    /// The remote `push`, `pull` and `verify --remote` use when none is named (the first
    /// one added).
    #[serde(default)]
    pub default: bool,
}

/// The `[watch]` table.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    /// Start a watcher in the background at the first save that finds none.
    pub auto: bool,
    /// A watcher asked nothing for this long exits (`30m`, `2h`; `0` never).
    pub idle_timeout: String,
}

impl Default for WatchConfig {
    fn default() -> WatchConfig {
        WatchConfig {
            auto: false,
            idle_timeout: "30m".into(),
        }
    }
}

impl WatchConfig {
    /// The idle timeout in nanoseconds; `None` for never.
    pub fn idle_timeout_ns(&self) -> Result<Option<i64>, String> {
        parse_duration(&self.idle_timeout)
    }
}

/// The `[retention]` table.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct RetentionConfig {
    /// Keep the newest N snapshots.
    pub keep_last: u64,
    /// Keep everything younger than this (`30m`, `12h`, `7d`, `2w`; `0` for no age rule).
    pub keep_within: String,
    /// Let `save` prune and gc by itself once the store holds 10% (at least 10) more
    /// snapshots than `keep_last`, or takes more than `max_store_bytes`.
    pub auto: bool,
    /// The most bytes the store may take (packs and catalog); 0 for no limit. Past it, a
    /// save drops the oldest snapshots, whatever `keep_last` and `keep_within` say, until it
    /// fits (HEAD and the redo stack always stay).
    pub max_store_bytes: u64,
}

impl Default for RetentionConfig {
    fn default() -> RetentionConfig {
        RetentionConfig {
            keep_last: 1000,
            keep_within: "7d".into(),
            auto: true,
            max_store_bytes: 0,
        }
    }
}

impl RetentionConfig {
    /// The policy, with `keep_within` parsed.
    pub fn policy(&self) -> Result<snap_store::Retention, String> {
        Ok(snap_store::Retention {
            keep_last: self.keep_last,
            keep_within_ns: parse_duration(&self.keep_within)?,
        })
    }

    /// How many snapshots a store may hold before `save` prunes it.
    pub fn auto_threshold(&self) -> u64 {
        self.keep_last + (self.keep_last / 10).max(10)
    }
}

/// Parses `90s`, `30m`, `12h`, `7d`, `2w` into nanoseconds; `0` or empty means no limit.
pub fn parse_duration(s: &str) -> Result<Option<i64>, String> {
    let s = s.trim();
    if s.is_empty() || s == "0" {
        return Ok(None);
    }
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: i64 = digits
        .parse()
        .map_err(|_| format!("bad duration {s:?}: expected a number and a unit such as 7d"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        "w" => 7 * 86_400,
        _ => {
            return Err(format!(
                "bad duration {s:?}: the unit must be s, m, h, d or w"
            ));
        }
    };
    Ok(Some(n.saturating_mul(secs).saturating_mul(1_000_000_000)))
}

impl Default for Config {
    fn default() -> Config {
        let strings = |v: &[&str]| v.iter().map(|s| s.to_string()).collect();
        Config {
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            large_file_size: DEFAULT_LARGE_FILE_SIZE,
            max_ignore_file_bytes: DEFAULT_MAX_IGNORE_FILE_BYTES,
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
            exclude_paths: Vec::new(),
            remote: std::collections::BTreeMap::new(),
            retention: RetentionConfig::default(),
            watch: WatchConfig::default(),
            secret_paths: strings(&[
                ".env",
                ".env.*",
                "*.env",
                "*.pem",
                "*.key",
                "*.p12",
                "*.pfx",
                "id_rsa*",
                "id_ed25519*",
                "id_ecdsa*",
                ".netrc",
                ".pgpass",
                "credentials.json",
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
        let config: Config = toml::from_str(&text).map_err(|e| TreeError::Config {
            path: path.clone(),
            why: e.to_string().trim().to_string(),
        })?;
        config.retention.policy().map_err(|why| TreeError::Config {
            path: path.clone(),
            why,
        })?;
        (config.watch.idle_timeout_ns()).map_err(|why| TreeError::Config { path, why })?;
        Ok(config)
    }

    /// True if a directory with this name is excluded by default.
    pub fn excludes_dir(&self, name: &[u8]) -> bool {
        self.exclude_dirs
            .iter()
            .any(|pat| glob_match(pat.as_bytes(), name))
    }

    /// What the directory cache's listings depend on besides the tree itself: the default
    /// excludes and the store's path when it lives in the tree under another name. Records
    /// built under another fingerprint are dropped.
    pub fn walk_fingerprint(&self, store_dir: Option<&Path>) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        // 2: records say whether a directory holds entries the walk leaves out.
        h.update(b"snap dir cache 2\0");
        for list in [&self.exclude_dirs, &self.exclude_extensions] {
            h.update(&(list.len() as u64).to_le_bytes());
            for item in list {
                h.update(&(item.len() as u64).to_le_bytes());
                h.update(item.as_bytes());
            }
        }
        // Only when set, so that stores without it keep their directory caches.
        if !self.exclude_paths.is_empty() {
            h.update(b"paths\0");
            h.update(&(self.exclude_paths.len() as u64).to_le_bytes());
            for item in &self.exclude_paths {
                h.update(&(item.len() as u64).to_le_bytes());
                h.update(item.as_bytes());
            }
        }
        if self.max_ignore_file_bytes != DEFAULT_MAX_IGNORE_FILE_BYTES {
            h.update(b"ignore limit\0");
            h.update(&self.max_ignore_file_bytes.to_le_bytes());
        }
        let store = store_dir.map_or(&[][..], |d| d.as_os_str().as_encoded_bytes());
        h.update(&(store.len() as u64).to_le_bytes());
        h.update(store);
        *h.finalize().as_bytes()
    }

    /// What the tree a capture finds depends on besides the tree itself: the walk fingerprint
    /// and the file size limit. A watcher's token (FORMAT.md 6.6) is trusted only under the
    /// one it was recorded with.
    pub fn capture_fingerprint(&self, store_dir: Option<&Path>) -> [u8; 32] {
        let mut h = blake3::Hasher::new();
        h.update(b"snap capture 1\0");
        h.update(&self.walk_fingerprint(store_dir));
        h.update(&self.max_file_size.to_le_bytes());
        *h.finalize().as_bytes()
    }

    /// True if `rel` is one of the `exclude_paths` or lies under one.
    pub fn excludes_path(&self, rel: &[u8]) -> bool {
        self.exclude_paths.iter().any(|p| {
            let p = p.trim_start_matches("./").trim_end_matches('/').as_bytes();
            !p.is_empty() && rel.starts_with(p) && (rel.len() == p.len() || rel[p.len()] == b'/')
        })
    }

    /// True if a file with this name is excluded by its ending.
    pub fn excludes_file(&self, name: &[u8]) -> bool {
        self.exclude_extensions
            .iter()
            .any(|ext| name.len() > ext.len() && name.ends_with(ext.as_bytes()))
    }
}

/// Adds `path` to `exclude_paths` in the store's `config.toml` (creating the file), keeping
/// the file's comments and layout. Returns false when it was there already. The new config
/// is checked as [`Config::load`] checks it before it replaces the old, by rename.
pub fn add_exclude_path(store_dir: &Path, path: &str) -> Result<bool, TreeError> {
    edit_exclude_paths(store_dir, |paths| {
        if paths.iter().any(|p| p.as_str() == Some(path)) {
            return false;
        }
        paths.push(path);
        true
    })
}

/// Removes `path` from `exclude_paths` in the store's `config.toml`. Returns false when it
/// was not there.
pub fn remove_exclude_path(store_dir: &Path, path: &str) -> Result<bool, TreeError> {
    edit_exclude_paths(store_dir, |paths| {
        let before = paths.len();
        paths.retain(|p| p.as_str() != Some(path));
        paths.len() != before
    })
}

fn edit_exclude_paths(
    store_dir: &Path,
    edit: impl FnOnce(&mut toml_edit::Array) -> bool,
) -> Result<bool, TreeError> {
    // Durable before what relies on it: an expunge takes a path out of history only after
    // the path is excluded, or a power cut could leave it recorded again by the next save.
    edit_config(store_dir, |doc, bad| {
        let entry = doc
            .entry("exclude_paths")
            .or_insert_with(|| toml_edit::value(toml_edit::Array::new()));
        let paths = entry
            .as_array_mut()
            .ok_or_else(|| bad("exclude_paths is not an array of strings".into()))?;
        Ok(edit(paths))
    })
}

impl Config {
    /// The remote named `name`, or the default one (else the only one) when `None`.
    pub fn remote_url(&self, name: Option<&str>) -> Option<(&str, &str)> {
        let found = match name {
            Some(name) => self.remote.get_key_value(name),
            None => (self.remote.iter().find(|(_, r)| r.default))
                .or_else(|| self.remote.iter().next().filter(|_| self.remote.len() == 1)),
        };
        found.map(|(n, r)| (n.as_str(), r.url.as_str()))
    }
}

/// Adds `[remote.NAME] url = URL` to the store's `config.toml` (the first remote is made the
/// default); refused when the name is taken.
pub fn add_remote(store_dir: &Path, name: &str, url: &str) -> Result<(), TreeError> {
    edit_config(store_dir, |doc, bad| {
        let remotes = doc
            .entry("remote")
            .or_insert_with(|| toml_edit::Item::Table(implicit_table()))
            .as_table_mut()
            .ok_or_else(|| bad("remote is not a table".into()))?;
        if remotes.contains_key(name) {
            return Err(bad(format!("a remote named {name} exists already")));
        }
        let first = remotes.is_empty();
        let mut table = toml_edit::Table::new();
        table.insert("url", toml_edit::value(url));
        if first {
            table.insert("default", toml_edit::value(true));
        }
        remotes.insert(name, toml_edit::Item::Table(table));
        Ok(true)
    })
    .map(drop)
}

/// Removes `[remote.NAME]`; the alphabetically first remaining remote becomes the default
/// when the default went. Refused when there is no such remote.
pub fn remove_remote(store_dir: &Path, name: &str) -> Result<(), TreeError> {
    edit_config(store_dir, |doc, bad| {
        let remotes = doc.get_mut("remote").and_then(|r| r.as_table_mut());
        let Some(remotes) = remotes.filter(|r| r.contains_key(name)) else {
            return Err(bad(format!("there is no remote named {name}")));
        };
        let was_default = remotes
            .get(name)
            .and_then(|r| r.get("default"))
            .and_then(|d| d.as_bool())
            .unwrap_or(false);
        remotes.remove(name);
        let next = remotes
            .iter_mut()
            .next()
            .and_then(|(_, r)| r.as_table_mut());
        if let Some(next) = next.filter(|_| was_default) {
            next.insert("default", toml_edit::value(true));
        }
        Ok(true)
    })
    .map(drop)
}

fn implicit_table() -> toml_edit::Table {
    let mut table = toml_edit::Table::new();
    table.set_implicit(true);
    table
}

/// Edits the store's `config.toml` keeping its comments and layout; when `edit` says it
/// changed something, the result is checked as [`Config::load`] checks it, then written
/// durably by rename. Returns what `edit` said.
fn edit_config(
    store_dir: &Path,
    edit: impl FnOnce(
        &mut toml_edit::DocumentMut,
        &dyn Fn(String) -> TreeError,
    ) -> Result<bool, TreeError>,
) -> Result<bool, TreeError> {
    let path = store_dir.join("config.toml");
    let bad = |why: String| TreeError::Config {
        path: path.clone(),
        why,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(TreeError::io(&path, e)),
    };
    let mut doc: toml_edit::DocumentMut = text.parse().map_err(|e| bad(format!("{e}")))?;
    if !edit(&mut doc, &bad)? {
        return Ok(false);
    }
    let text = doc.to_string();
    toml::from_str::<Config>(&text).map_err(|e| bad(e.to_string().trim().to_string()))?;
    snap_store::fs::write_atomic(&path, text.as_bytes())?;
    Ok(true)
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
    fn exclude_paths_cover_a_path_and_what_lies_under_it() {
        let c = Config {
            exclude_paths: vec![".claude".into(), "./tools/hooks/".into()],
            ..Config::default()
        };
        assert!(c.excludes_path(b".claude"));
        assert!(c.excludes_path(b".claude/settings.local.json"));
        assert!(c.excludes_path(b"tools/hooks/post"));
        assert!(!c.excludes_path(b".claude-notes"));
        assert!(!c.excludes_path(b"tools"));
        assert_ne!(
            c.walk_fingerprint(None),
            Config::default().walk_fingerprint(None)
        );
    }

    #[test]
    fn exclude_paths_are_added_once_and_removed_keeping_the_file_s_comments() {
        let dir = tempfile::tempdir().unwrap();
        let text = "# mine\nmax_file_size = 10 # small\n\n[retention]\nkeep_last = 5\n";
        std::fs::write(dir.path().join("config.toml"), text).unwrap();
        assert!(add_exclude_path(dir.path(), ".claude").unwrap());
        assert!(!add_exclude_path(dir.path(), ".claude").unwrap());
        let c = Config::load(dir.path()).unwrap();
        assert_eq!(
            (c.exclude_paths, c.max_file_size),
            (vec![".claude".to_string()], 10)
        );
        let now = std::fs::read_to_string(dir.path().join("config.toml")).unwrap();
        assert!(now.contains("# mine") && now.contains("# small"), "{now}");
        assert!(remove_exclude_path(dir.path(), ".claude").unwrap());
        assert!(!remove_exclude_path(dir.path(), ".claude").unwrap());
        assert!(Config::load(dir.path()).unwrap().exclude_paths.is_empty());
        std::fs::write(dir.path().join("config.toml"), "exclude_paths = 3\n").unwrap();
        assert!(add_exclude_path(dir.path(), ".claude").is_err());
    }

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
    fn the_walk_fingerprint_follows_the_excludes_and_the_store() {
        let c = Config::default();
        let base = c.walk_fingerprint(None);
        assert_eq!(base, Config::default().walk_fingerprint(None));
        let mut fewer = Config::default();
        fewer.exclude_dirs.pop();
        assert_ne!(fewer.walk_fingerprint(None), base);
        let mut moved = Config::default();
        let ext = moved.exclude_extensions.pop().unwrap();
        moved.exclude_dirs.push(ext);
        assert_ne!(moved.walk_fingerprint(None), base);
        assert_ne!(c.walk_fingerprint(Some(Path::new("/w/store"))), base);
        let mut bigger = Config::default();
        bigger.max_file_size += 1;
        assert_eq!(
            bigger.walk_fingerprint(None),
            base,
            "sizes are checked at each stat"
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("7d"), Ok(Some(7 * 86_400 * 1_000_000_000)));
        assert_eq!(parse_duration("90s"), Ok(Some(90 * 1_000_000_000)));
        assert_eq!(parse_duration("0"), Ok(None));
        assert!(parse_duration("7").is_err());
        assert!(parse_duration("d").is_err());
        assert!(parse_duration("3y").is_err());
    }

    #[test]
    fn watch_table() {
        let c: Config = toml::from_str("[watch]\nauto = true\nidle_timeout = \"2h\"\n").unwrap();
        assert!(c.watch.auto);
        assert_eq!(
            c.watch.idle_timeout_ns(),
            Ok(Some(2 * 3600 * 1_000_000_000))
        );
        assert_eq!(
            Config::default().watch.idle_timeout_ns(),
            Ok(Some(30 * 60 * 1_000_000_000))
        );
        assert!(toml::from_str::<Config>("[watch]\nsoon = 1\n").is_err());
    }

    #[test]
    fn retention_table() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("config.toml"),
            "[retention]\nkeep_last = 5\nauto = false\n",
        )
        .unwrap();
        let c = Config::load(dir.path()).unwrap();
        assert_eq!(c.retention.keep_last, 5);
        assert_eq!(c.retention.keep_within, "7d");
        assert!(!c.retention.auto);
        std::fs::write(
            dir.path().join("config.toml"),
            "[retention]\nkeep_within = \"soon\"\n",
        )
        .unwrap();
        assert!(Config::load(dir.path()).is_err());
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
