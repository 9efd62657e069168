//! Secret-looking things in history, for `snap expunge --secrets`, `log --stats` and
//! `doctor`: paths whose file name matches `secret_paths` in the config (`.env*`, `*.pem`,
//! `id_rsa*`, `*.key`, ...), and, when asked, file contents holding a token of a well-known
//! shape (AWS access key ids, GitHub and OpenAI tokens, PEM private keys). Each distinct tree
//! is read once at each place it appears, each distinct content once.

use std::collections::{BTreeMap, HashSet};

use snap_store::{EntryKind, ObjectId};

use crate::{TreeError, Workspace};

/// Contents larger than this are not scanned for tokens (a secret file is small).
pub const MAX_SCANNED_BYTES: u64 = 1 << 20;

/// What a secret search reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SecretScan {
    /// File names only: trees, no file contents (`log --stats`, `doctor`).
    Paths,
    /// File names, and each distinct content up to [`MAX_SCANNED_BYTES`].
    PathsAndContents,
}

/// One secret-looking path of history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SecretHit {
    /// Workspace-relative path.
    pub path: Vec<u8>,
    /// Why it looks secret: the name pattern, or the kind of token found.
    pub why: String,
}

/// True when file name `name` matches `pattern`, where `*` stands for any run of bytes.
pub fn name_matches(pattern: &str, name: &[u8]) -> bool {
    let mut parts = pattern.as_bytes().split(|&b| b == b'*');
    let first = parts.next().unwrap_or_default();
    let Some(mut tail) = name.strip_prefix(first) else {
        return false;
    };
    let rest: Vec<&[u8]> = parts.collect();
    let Some((last, middle)) = rest.split_last() else {
        return tail.is_empty();
    };
    for part in middle.iter().filter(|p| !p.is_empty()) {
        match find(tail, part) {
            Some(at) => tail = &tail[at + part.len()..],
            None => return false,
        }
    }
    tail.ends_with(last)
}

/// The kind of well-known token `content` holds, if any.
pub fn token_in(content: &[u8]) -> Option<&'static str> {
    const SHAPES: &[(&str, &[u8], usize)] = &[
        ("an AWS access key id", b"AKIA", 16),
        ("a GitHub token", b"ghp_", 36),
        ("a GitHub token", b"gho_", 36),
        ("a GitHub token", b"ghs_", 36),
        ("a GitHub token", b"github_pat_", 22),
        ("an OpenAI key", b"sk-proj-", 20),
        ("an OpenAI key", b"sk-", 32),
    ];
    if content.windows(11).any(|w| w == b"PRIVATE KEY")
        && content.windows(10).any(|w| w == b"-----BEGIN")
    {
        return Some("a PEM private key");
    }
    for (what, prefix, run) in SHAPES {
        let mut at = 0;
        while let Some(found) = find(&content[at..], prefix) {
            let start = at + found + prefix.len();
            let body = content[start..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b == b'-')
                .count();
            if body >= *run {
                return Some(what);
            }
            at = start;
        }
    }
    None
}

/// `dir/name`, or `name` at the root.
fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    match dir.is_empty() {
        true => name.to_vec(),
        false => [dir, b"/", name].concat(),
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

impl Workspace {
    /// Every secret-looking path any snapshot holds, in path order.
    pub fn secrets(&self, scan: SecretScan) -> Result<Vec<SecretHit>, TreeError> {
        let patterns = &self.config().secret_paths;
        let mut hits: BTreeMap<Vec<u8>, String> = BTreeMap::new();
        let mut seen_trees: HashSet<(ObjectId, Vec<u8>)> = HashSet::new();
        let mut seen_contents: HashSet<ObjectId> = HashSet::new();
        let mut stack: Vec<(ObjectId, Vec<u8>)> = (self.store().snapshots()?.into_iter())
            .map(|(_, r)| (r.root, Vec::new()))
            .collect();
        while let Some((tree, dir)) = stack.pop() {
            if !seen_trees.insert((tree, dir.clone())) {
                continue;
            }
            for entry in self.store().read_tree(&tree)?.entries {
                let path = join(&dir, &entry.name);
                match entry.kind {
                    EntryKind::Dir => stack.push((entry.id, path)),
                    EntryKind::Symlink => {}
                    EntryKind::File | EntryKind::Executable => {
                        if let Some(p) = patterns.iter().find(|p| name_matches(p, &entry.name)) {
                            hits.entry(path)
                                .or_insert_with(|| format!("its name matches {p}"));
                            continue;
                        }
                        let scanned = scan == SecretScan::PathsAndContents
                            && entry.size <= MAX_SCANNED_BYTES
                            && seen_contents.insert(entry.id);
                        if !scanned || hits.contains_key(&path) {
                            continue;
                        }
                        if let Some(what) = token_in(&self.store().read_file(&entry.id)?) {
                            hits.insert(path, format!("it holds {what}"));
                        }
                    }
                }
            }
        }
        Ok(hits
            .into_iter()
            .map(|(path, why)| SecretHit { path, why })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::{name_matches, token_in};

    #[test]
    fn names_match_globs() {
        assert!(name_matches(".env", b".env"));
        assert!(name_matches(".env*", b".env.local"));
        assert!(!name_matches(".env", b".envrc"));
        assert!(name_matches("*.pem", b"server.pem"));
        assert!(!name_matches("*.pem", b"server.pem.txt"));
        assert!(name_matches("id_rsa*", b"id_rsa.pub"));
        assert!(name_matches("a*b*c", b"axxbyyc"));
        assert!(!name_matches("a*b*c", b"axxcyyb"));
    }

    #[test]
    fn tokens_of_known_shapes_are_found() {
        assert_eq!(
            token_in(b"key = AKIAIOSFODNN7EXAMPLE\n"),
            Some("an AWS access key id")
        );
        assert_eq!(token_in(b"AKIA-short"), None);
        let gh = format!("token: ghp_{}", "a".repeat(36));
        assert_eq!(token_in(gh.as_bytes()), Some("a GitHub token"));
        assert_eq!(
            token_in(b"OPENAI=sk-proj-abcdefghijklmnopqrstuvwxyz"),
            Some("an OpenAI key")
        );
        assert_eq!(
            token_in(b"-----BEGIN RSA PRIVATE KEY-----\n"),
            Some("a PEM private key")
        );
        assert_eq!(token_in(b"the task-list is long"), None);
    }
}
