//! Remote URLs, parsed rather than trusted: `file:///absolute/path` and
//! `s3://bucket/prefix`, each path segment checked, the bucket name checked as S3 names
//! buckets. `memory://` is not a URL a person may give: tests open
//! [`crate::backend::memory::MemoryRemote`] directly.

use std::path::PathBuf;

use crate::RemoteError;

/// Where a URL says a remote lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteUrl {
    /// `file:///path`: a directory, the path absolute and free of `.`, `..` and empty
    /// segments.
    File(PathBuf),
    /// `s3://bucket/prefix`: the prefix without leading or trailing `/`, empty for the
    /// bucket's root.
    S3 {
        /// The bucket, as S3 accepts bucket names.
        bucket: String,
        /// Segments joined by `/`, each non-empty and neither `.` nor `..`.
        prefix: String,
    },
}

/// Parses `url`; every refusal is a [`RemoteError::BadUrl`] saying why.
pub fn parse(url: &str) -> Result<RemoteUrl, RemoteError> {
    let bad = |why: &str| RemoteError::BadUrl {
        url: url.to_string(),
        why: why.to_string(),
    };
    if let Some(path) = url.strip_prefix("file://") {
        return parse_file(path).map_err(|why| bad(&why));
    }
    if let Some(rest) = url.strip_prefix("s3://") {
        return parse_s3(rest).map_err(|why| bad(&why));
    }
    Err(bad("expected s3://bucket/prefix or file:///path"))
}

fn parse_file(path: &str) -> Result<RemoteUrl, String> {
    let Some(inner) = path.strip_prefix('/') else {
        return Err("a file:// URL needs an absolute path (file:///dir)".into());
    };
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    if !inner.is_empty() {
        segments_sound(inner)?;
    }
    Ok(RemoteUrl::File(PathBuf::from(path)))
}

fn parse_s3(rest: &str) -> Result<RemoteUrl, String> {
    let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
    bucket_sound(bucket)?;
    let prefix = prefix.strip_suffix('/').unwrap_or(prefix);
    if !prefix.is_empty() {
        segments_sound(prefix)?;
        // Keys are listed back URL-encoded; a prefix of these characters reads back as sent.
        let plain = |c: char| c.is_ascii_alphanumeric() || "-_./".contains(c);
        if !prefix.chars().all(plain) {
            return Err("the prefix may hold letters, digits, -, _, . and / only".into());
        }
    }
    Ok(RemoteUrl::S3 {
        bucket: bucket.to_string(),
        prefix: prefix.to_string(),
    })
}

/// Every `/`-separated segment is a name: not empty, not `.`, not `..`.
fn segments_sound(path: &str) -> Result<(), String> {
    for segment in path.split('/') {
        match segment {
            "" => return Err("the path has an empty segment (//)".into()),
            "." | ".." => return Err(format!("the path may not hold a {segment:?} segment")),
            _ => {}
        }
    }
    Ok(())
}

/// S3's rules for a bucket name: 3 to 63 characters of lowercase letters, digits, `.` and
/// `-`, starting and ending with a letter or digit, no `..`, not shaped as an IP address.
fn bucket_sound(bucket: &str) -> Result<(), String> {
    if bucket.is_empty() {
        return Err("no bucket named".into());
    }
    let why = format!("{bucket:?} is not a bucket name S3 accepts");
    let charset = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-';
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let sound = (3..=63).contains(&bucket.len())
        && bucket.chars().all(charset)
        && edge(bucket.chars().next())
        && edge(bucket.chars().last())
        && !bucket.contains("..")
        && bucket.parse::<std::net::Ipv4Addr>().is_err();
    match sound {
        true => Ok(()),
        false => Err(why),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(url: &str) -> bool {
        matches!(parse(url), Err(RemoteError::BadUrl { .. }))
    }

    #[test]
    fn sound_urls_parse() {
        assert_eq!(
            parse("s3://snaptest/a/b/").unwrap(),
            RemoteUrl::S3 {
                bucket: "snaptest".into(),
                prefix: "a/b".into()
            }
        );
        assert_eq!(
            parse("s3://my.bucket-1").unwrap(),
            RemoteUrl::S3 {
                bucket: "my.bucket-1".into(),
                prefix: String::new()
            }
        );
        assert_eq!(
            parse("file:///srv/backup/").unwrap(),
            RemoteUrl::File(PathBuf::from("/srv/backup/"))
        );
    }

    #[test]
    fn escaping_and_malformed_urls_are_refused() {
        for url in [
            "s3://snaptest/../otherbkt/x",
            "s3://snaptest/a/./b",
            "s3://snaptest/a//b",
            "s3:///x",
            "s3://Upper/x",
            "s3://ab/x",
            "s3://-bucket/x",
            "s3://bucket-/x",
            "s3://a..b/x",
            "s3://192.168.1.1/x",
            "s3://under_score/x",
            "s3://snaptest/sp ace",
            "file://relative/path",
            "file:///a/../b",
            "file:///a//b",
            "file:///a/./b",
            "memory://x",
            "ftp://x/y",
            "",
        ] {
            assert!(refused(url), "{url} was accepted");
        }
    }
}
