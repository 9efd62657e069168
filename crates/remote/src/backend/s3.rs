//! The `s3://bucket/prefix` remote: any S3-compatible server. Requests are signed by
//! rusty-s3 (AWS SigV4, as presigned URLs whose signed headers include the conditional ones)
//! and sent by ureq, blocking, over rustls. Credentials come from the standard `AWS_*`
//! variables or `~/.aws/credentials` (profile `AWS_PROFILE`, else `default`); the region from
//! `AWS_REGION`, `AWS_DEFAULT_REGION` or `~/.aws/config`, else `us-east-1`; a non-AWS server
//! from `AWS_ENDPOINT_URL_S3` or `AWS_ENDPOINT_URL` (plain HTTP allowed, path-style URLs).
//! Credentials are never written anywhere by snap.

use std::ops::Range;
use std::time::Duration;

use rusty_s3::actions::ListObjectsV2;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};

use super::{Listed, Put, Remote};
use crate::RemoteError;

/// How long a signed request stays valid: it is sent at once.
const SIGNED_FOR: Duration = Duration::from_secs(15 * 60);
/// The largest answer read: [`super::MAX_GET`], and listings are far smaller.
const MAX_BODY: u64 = super::MAX_GET;

/// A bucket and a prefix on an S3-compatible server.
#[derive(Debug)]
pub struct S3Remote {
    url: String,
    bucket: Bucket,
    credentials: Credentials,
    prefix: String,
    agent: ureq::Agent,
}

impl S3Remote {
    /// Opens `s3://bucket/prefix` (`url`, parsed by [`crate::url::parse`] into `name` and
    /// `prefix`) with credentials and endpoint from the environment.
    pub fn open(url: &str, name: &str, prefix: &str) -> Result<S3Remote, RemoteError> {
        let bad = |why: &str| RemoteError::BadUrl {
            url: url.to_string(),
            why: why.to_string(),
        };
        let region = env_or_file("AWS_REGION", "AWS_DEFAULT_REGION", "config", "region")
            .unwrap_or_else(|| "us-east-1".to_string());
        let (endpoint, style) = match endpoint_from_env() {
            Some(e) => (e, UrlStyle::Path),
            None => (
                format!("https://s3.{region}.amazonaws.com"),
                UrlStyle::VirtualHost,
            ),
        };
        let endpoint = endpoint
            .parse()
            .map_err(|_| bad("AWS_ENDPOINT_URL is not a URL"))?;
        let bucket = Bucket::new(endpoint, style, name.to_string(), region)
            .map_err(|e| bad(&format!("{e}")))?;
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(30 * 60)))
            .build()
            .into();
        Ok(S3Remote {
            url: url.trim_end_matches('/').to_string(),
            bucket,
            credentials: credentials()?,
            prefix: prefix.trim_matches('/').to_string(),
            agent,
        })
    }

    fn full(&self, key: &str) -> String {
        match self.prefix.is_empty() {
            true => key.to_string(),
            false => format!("{}/{key}", self.prefix),
        }
    }

    fn relative<'k>(&self, key: &'k str) -> &'k str {
        match self.prefix.is_empty() {
            true => key,
            false => key
                .strip_prefix(&self.prefix)
                .map_or(key, |k| k.trim_start_matches('/')),
        }
    }

    fn list_page(
        &self,
        prefix: &str,
        token: Option<&str>,
    ) -> Result<(Vec<Listed>, Option<String>), RemoteError> {
        let mut action = self.bucket.list_objects_v2(Some(&self.credentials));
        action.with_prefix(self.full(prefix));
        if let Some(token) = token {
            action.with_continuation_token(token);
        }
        let what = format!("LIST {prefix}");
        let url = action.sign(SIGNED_FOR);
        let (status, body) = self.send(self.agent.get(url.as_str()).call(), &what)?;
        if status != 200 {
            return Err(http_error(what, status, &body));
        }
        let page = ListObjectsV2::parse_response(&body).map_err(|e| RemoteError::Corrupt {
            key: prefix.to_string(),
            why: format!("the listing does not parse: {e}"),
        })?;
        let listed = (page.contents.iter())
            .map(|c| Listed {
                key: self.relative(&c.key).to_string(),
                size: c.size,
            })
            .collect();
        Ok((listed, page.next_continuation_token))
    }

    /// Status and body of an answer (a transport error is [`RemoteError::Network`]).
    fn send(
        &self,
        sent: Result<ureq::http::Response<ureq::Body>, ureq::Error>,
        what: &str,
    ) -> Result<(u16, Vec<u8>), RemoteError> {
        let network = |e: ureq::Error| RemoteError::Network {
            what: what.to_string(),
            why: e.to_string(),
        };
        let mut answer = sent.map_err(network)?;
        let status = answer.status().as_u16();
        let body = (answer
            .body_mut()
            .with_config()
            .limit(MAX_BODY)
            .read_to_vec())
        .map_err(network)?;
        Ok((status, body))
    }
}

impl Remote for S3Remote {
    fn put_if_absent(&self, key: &str, body: &[u8]) -> Result<Put, RemoteError> {
        let full = self.full(key);
        let mut action = self.bucket.put_object(Some(&self.credentials), &full);
        action.headers_mut().insert("if-none-match", "*");
        let url = action.sign(SIGNED_FOR);
        let what = format!("PUT {key}");
        let request = self.agent.put(url.as_str()).header("if-none-match", "*");
        match self.send(request.send(body), &what)? {
            (200, _) => Ok(Put::Created),
            (412, _) => Ok(Put::Exists),
            // 409 (AWS's ConditionalRequestConflict): a racing put of the key is still in
            // flight and may yet fail, so this is no answer: an error, which is retried.
            (status, body) => Err(http_error(what, status, &body)),
        }
    }

    fn get(&self, key: &str, range: Option<Range<u64>>) -> Result<Option<Vec<u8>>, RemoteError> {
        let full = self.full(key);
        let mut action = self.bucket.get_object(Some(&self.credentials), &full);
        let range = range.map(|r| format!("bytes={}-{}", r.start, r.end.saturating_sub(1)));
        if let Some(range) = &range {
            action.headers_mut().insert("range", range.clone());
        }
        let url = action.sign(SIGNED_FOR);
        let what = format!("GET {key}");
        let mut request = self.agent.get(url.as_str());
        if let Some(range) = &range {
            request = request.header("range", range);
        }
        match self.send(request.call(), &what)? {
            (200 | 206, body) => Ok(Some(body)),
            (404, _) => Ok(None),
            (status, body) => Err(http_error(what, status, &body)),
        }
    }

    fn list(&self, prefix: &str) -> Result<Vec<Listed>, RemoteError> {
        let mut out = Vec::new();
        let mut token = None;
        loop {
            let (page, next) = self.list_page(prefix, token.as_deref())?;
            out.extend(page);
            match next {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        out.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(out)
    }

    fn delete(&self, key: &str) -> Result<(), RemoteError> {
        let full = self.full(key);
        let action = self.bucket.delete_object(Some(&self.credentials), &full);
        let url = action.sign(SIGNED_FOR);
        let what = format!("DELETE {key}");
        match self.send(self.agent.delete(url.as_str()).call(), &what)? {
            (200 | 204 | 404, _) => Ok(()),
            (status, body) => Err(http_error(what, status, &body)),
        }
    }

    fn describe(&self) -> String {
        self.url.clone()
    }
}

fn http_error(what: String, status: u16, body: &[u8]) -> RemoteError {
    let text = String::from_utf8_lossy(body);
    RemoteError::Http {
        what,
        status,
        body: text.chars().take(300).collect(),
    }
}

fn endpoint_from_env() -> Option<String> {
    ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()))
}

/// The access key, secret and session token, from the environment or the credentials file.
fn credentials() -> Result<Credentials, RemoteError> {
    let key = env_or_file("AWS_ACCESS_KEY_ID", "", "credentials", "aws_access_key_id");
    let secret = env_or_file(
        "AWS_SECRET_ACCESS_KEY",
        "",
        "credentials",
        "aws_secret_access_key",
    );
    let token = env_or_file("AWS_SESSION_TOKEN", "", "credentials", "aws_session_token");
    match (key, secret) {
        (Some(key), Some(secret)) => Ok(match token {
            Some(token) => Credentials::new_with_token(key, secret, token),
            None => Credentials::new(key, secret),
        }),
        _ => Err(RemoteError::Credentials(
            "set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile in ~/.aws/credentials"
                .into(),
        )),
    }
}

/// A variable (or a second one), else `field` of the profile in `~/.aws/<file>`.
fn env_or_file(var: &str, var2: &str, file: &str, field: &str) -> Option<String> {
    let from_env = [var, var2]
        .iter()
        .filter(|v| !v.is_empty())
        .find_map(|v| std::env::var(v).ok().filter(|s| !s.is_empty()));
    from_env.or_else(|| profile_field(file, field))
}

/// `field` in the section of the chosen profile of an AWS ini file.
fn profile_field(file: &str, field: &str) -> Option<String> {
    let home = std::env::var_os("HOME")?;
    let path = match (file, std::env::var_os("AWS_SHARED_CREDENTIALS_FILE")) {
        ("credentials", Some(p)) => std::path::PathBuf::from(p),
        _ => std::path::Path::new(&home).join(".aws").join(file),
    };
    let text = std::fs::read_to_string(path).ok()?;
    let profile = std::env::var("AWS_PROFILE").unwrap_or_else(|_| "default".into());
    let wanted = [format!("[{profile}]"), format!("[profile {profile}]")];
    let mut inside = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = wanted.iter().any(|w| w == line);
        } else if let Some((_, v)) =
            (line.split_once('=')).filter(|(k, _)| inside && k.trim() == field)
        {
            return Some(v.trim().to_string());
        }
    }
    None
}
