//! Workspace-relative paths as the store keeps them (stat cache keys, tree paths):
//! `/`-separated bytes, with `""` for the root.

/// `prefix/name`, or `name` at the root.
pub fn join(prefix: &[u8], name: &[u8]) -> Vec<u8> {
    if prefix.is_empty() {
        return name.to_vec();
    }
    let mut p = Vec::with_capacity(prefix.len() + 1 + name.len());
    p.extend_from_slice(prefix);
    p.push(b'/');
    p.extend_from_slice(name);
    p
}

/// Splits a path into its parent (empty at the root) and its last component.
pub fn split(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&c| c == b'/') {
        Some(i) => (&path[..i], &path[i + 1..]),
        None => (&[], path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_and_join_are_inverse() {
        for path in [&b"a"[..], b"a/b", b"a/b/c.txt", b"x.y/z"] {
            let (dir, name) = split(path);
            assert_eq!(join(dir, name), path);
        }
        assert_eq!(split(b"top"), (&b""[..], &b"top"[..]));
    }
}
