//! Secret-looking things in history, for `snap expunge --secrets`, `log --stats` and
//! `doctor`: paths whose file name matches `secret_paths` in the config (`.env`, `*.env`,
//! `*.pem`, `id_rsa*`, `*.key`, ...; never a `.pub` key or an `.example` template), and, when
//! asked, file contents one of [`rules::RULES`] matches. When contents are read, a name that
//! only suggests a key file (`*.key`, `*.pem`: Keynote decks and certificates share them)
//! counts only if the file holds a PEM private key. Each distinct tree is read once at each
//! place it appears, each distinct content once.

pub mod rules;

use std::collections::{BTreeMap, HashMap, HashSet};

use snap_store::{EntryKind, ObjectId, Store};

use crate::config::Config;
use crate::error::TreeError;

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

/// The rule `content` matches, as the dry run names it: what it found and the rule's id.
pub fn token_in(content: &[u8]) -> Option<String> {
    rules::rule_matching(content).map(|r| format!("{} (rule {})", r.what, r.id))
}

/// Patterns whose name alone does not make a secret when contents are read: the file must
/// also hold a private key.
const CONFIRMED_BY_CONTENT: &[&str] = &["*.key", "*.pem"];

/// Name endings that mark a file as public or as a template: never secret by name.
const NEVER_BY_NAME: &[&str] = &[".pub", ".example", ".sample", ".template", ".dist"];

/// The `secret_paths` pattern file name `name` matches, unless the name says it is public.
fn name_pattern<'p>(patterns: &'p [String], name: &[u8]) -> Option<&'p str> {
    if NEVER_BY_NAME
        .iter()
        .any(|end| name.ends_with(end.as_bytes()))
    {
        return None;
    }
    patterns
        .iter()
        .find(|p| name_matches(p, name))
        .map(String::as_str)
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

/// Every secret-looking path any snapshot of `store` holds, in path order.
pub(crate) fn secrets_in(
    store: &Store,
    config: &Config,
    scan: SecretScan,
) -> Result<Vec<SecretHit>, TreeError> {
    let patterns = &config.secret_paths;
    let mut hits: BTreeMap<Vec<u8>, String> = BTreeMap::new();
    let mut seen_trees: HashSet<(ObjectId, Vec<u8>)> = HashSet::new();
    let mut judged: HashMap<ObjectId, Option<&'static rules::Rule>> = HashMap::new();
    let mut stack: Vec<(ObjectId, Vec<u8>)> = (store.snapshots()?.into_iter())
        .map(|(_, r)| (r.root, Vec::new()))
        .collect();
    while let Some((tree, dir)) = stack.pop() {
        if !seen_trees.insert((tree, dir.clone())) {
            continue;
        }
        for entry in store.read_tree(&tree)?.entries {
            let path = join(&dir, &entry.name);
            match entry.kind {
                EntryKind::Dir => stack.push((entry.id, path)),
                EntryKind::Symlink => {}
                EntryKind::File | EntryKind::Executable => {
                    let by_name = name_pattern(patterns, &entry.name);
                    let confirm = by_name.filter(|p| CONFIRMED_BY_CONTENT.contains(p));
                    match (by_name, scan) {
                        (Some(p), SecretScan::Paths) => {
                            hits.entry(path)
                                .or_insert_with(|| format!("its name matches {p}"));
                            continue;
                        }
                        (Some(p), SecretScan::PathsAndContents) if confirm.is_none() => {
                            hits.entry(path)
                                .or_insert_with(|| format!("its name matches {p}"));
                            continue;
                        }
                        _ => {}
                    }
                    let scanned =
                        scan == SecretScan::PathsAndContents && entry.size <= MAX_SCANNED_BYTES;
                    if !scanned || hits.contains_key(&path) {
                        continue;
                    }
                    // One read per distinct content; its verdict holds at every path.
                    let rule = match judged.get(&entry.id) {
                        Some(rule) => *rule,
                        None => {
                            let content = store.read_file(&entry.id)?;
                            let rule = rules::rule_matching(&content);
                            judged.insert(entry.id, rule);
                            rule
                        }
                    };
                    let found = match (confirm, rule) {
                        (Some(p), Some(r)) if r.id == "private-key" => {
                            Some(format!("its name matches {p} and it holds {}", r.what))
                        }
                        (None, Some(r)) => Some(format!("it holds {} (rule {})", r.what, r.id)),
                        _ => None,
                    };
                    if let Some(why) = found {
                        hits.insert(path, why);
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

#[cfg(test)]
mod tests {
    use super::{name_matches, name_pattern, token_in};

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
    fn public_keys_and_templates_are_never_secret_by_name() {
        let patterns: Vec<String> = ["id_ed25519*", ".env.*", "*.env"].map(String::from).into();
        assert_eq!(name_pattern(&patterns, b"id_ed25519"), Some("id_ed25519*"));
        assert_eq!(name_pattern(&patterns, b"id_ed25519.pub"), None);
        assert_eq!(name_pattern(&patterns, b".env.example"), None);
        assert_eq!(name_pattern(&patterns, b"prod.env"), Some("*.env"));
    }

    #[test]
    fn tokens_of_known_shapes_are_found_and_named() {
        let aws = ["AKIA", "Q3VZ7NB5K2LXWM4R"].concat();
        let found = token_in(format!("key = {aws}\n").as_bytes());
        assert_eq!(
            found.as_deref(),
            Some("an AWS access key id (rule aws-access-token)")
        );
        // AWS's documentation key is a placeholder.
        let example = ["AKIA", "IOSFODNN7EXAMPLE"].concat();
        assert_eq!(token_in(example.as_bytes()), None);
        assert_eq!(token_in(b"AKIA-short"), None);
        let gh = format!("token: {}_{}", "ghp", "a1B2".repeat(9));
        assert!(token_in(gh.as_bytes()).is_some_and(|w| w.contains("github-token")));
        assert_eq!(token_in(b"the task-list is long"), None);
        assert_eq!(
            token_in(b"risk-assessment-and-mitigation-plan-for-q3"),
            None
        );
    }
}
