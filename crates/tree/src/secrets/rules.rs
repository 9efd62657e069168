//! The content rules of `snap expunge --secrets`: each a named pattern of one kind of
//! credential, after gitleaks' rules (the field's reference), with ASCII word boundaries,
//! the issuer's prefix and the length and alphabet of what follows it. Entropy is asked for
//! only where a shape alone is too common (an AWS secret key is any 40 base64 characters);
//! a PEM private key counts only as a whole block, its BEGIN and END lines with a base64
//! body between, never as two words in a source file; a URL counts only when its password
//! is not a placeholder. docs/SAFETY.md lists the rules.

use std::sync::OnceLock;

use regex::bytes::Regex;

/// One rule: its id (as gitleaks names it where gitleaks has it), what it finds, and the
/// pattern whose first capture group is the secret.
#[derive(Debug)]
pub struct Rule {
    /// Stable id, shown in the dry run.
    pub id: &'static str,
    /// What a match is, in words.
    pub what: &'static str,
    pattern: &'static str,
    check: Check,
}

/// What a match must also pass.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Check {
    /// The pattern is enough.
    Shape,
    /// The pattern, unless the secret ends in `EXAMPLE`: the placeholder keys of AWS's own
    /// documentation (gitleaks allows them too).
    NotExample,
    /// The captured secret's Shannon entropy, in bits per byte, is at least this, and it
    /// holds no `EXAMPLE` (documentation's placeholders).
    Entropy(f64),
    /// A PEM block: the END line naming the BEGIN line's label follows, with a body.
    PemBlock,
    /// A URL's password that is not a placeholder (`$VAR`, `<pass>`, `***`, `password`).
    RealPassword,
}

/// The rules, in the order they are tried.
pub const RULES: &[Rule] = &[
    Rule {
        id: "aws-access-token",
        what: "an AWS access key id",
        pattern: r"(?-u)\b((?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z2-7]{16})\b",
        check: Check::NotExample,
    },
    Rule {
        id: "aws-secret-access-key",
        what: "an AWS secret access key",
        pattern: r#"(?i-u)\b(?:aws_?)?secret_?(?:access_?)?key["']?\s*[:=]+\s*["']?([a-z0-9/+]{40})(?:[^a-z0-9/+=]|$)"#,
        check: Check::Entropy(4.0),
    },
    Rule {
        id: "github-token",
        what: "a GitHub token",
        pattern: r"(?-u)\b((?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36})\b",
        check: Check::Shape,
    },
    Rule {
        id: "github-fine-grained-pat",
        what: "a GitHub fine-grained token",
        pattern: r"(?-u)\b(github_pat_[0-9A-Za-z_]{82})\b",
        check: Check::Shape,
    },
    Rule {
        id: "gitlab-pat",
        what: "a GitLab token",
        pattern: r"(?-u)\b((?:glpat|glptt|gldt|glrt)-[0-9A-Za-z_-]{20})(?:[^0-9A-Za-z_-]|$)",
        check: Check::Shape,
    },
    Rule {
        id: "slack-token",
        what: "a Slack token",
        pattern: r"(?-u)\b(xox[abposre]-[0-9]{8,13}-[0-9A-Za-z-]{8,})",
        check: Check::Shape,
    },
    Rule {
        id: "slack-webhook-url",
        what: "a Slack webhook URL",
        pattern: r"(?-u)(hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{40,})",
        check: Check::Shape,
    },
    Rule {
        id: "stripe-access-token",
        what: "a Stripe key",
        pattern: r"(?-u)\b((?:sk|rk)_(?:live|test|prod)_[0-9A-Za-z]{10,99})\b",
        check: Check::Shape,
    },
    Rule {
        id: "anthropic-api-key",
        what: "an Anthropic key",
        pattern: r"(?-u)\b(sk-ant-(?:api|admin|sid)[0-9]{2}-[A-Za-z0-9_-]{80,})",
        check: Check::Shape,
    },
    Rule {
        id: "openai-api-key",
        what: "an OpenAI key",
        pattern: r"(?-u)\b(sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}))",
        check: Check::Entropy(3.5),
    },
    Rule {
        id: "private-key",
        what: "a PEM private key",
        pattern: r"(?-u)-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----",
        check: Check::PemBlock,
    },
    Rule {
        id: "url-password",
        what: "a URL with a password",
        pattern: r#"(?-u)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/?#@'"<>]{1,64}:([^\s:/?#@'"<>]{3,128})@[A-Za-z0-9.-]+"#,
        check: Check::RealPassword,
    },
];

/// The first rule `content` matches, if any.
pub fn rule_matching(content: &[u8]) -> Option<&'static Rule> {
    let compiled = compiled();
    (RULES.iter().zip(compiled)).find_map(|(rule, re)| rule.matches(re, content).then_some(rule))
}

fn compiled() -> &'static [Regex] {
    static COMPILED: OnceLock<Vec<Regex>> = OnceLock::new();
    COMPILED.get_or_init(|| {
        RULES
            .iter()
            // The patterns are constants, checked by the tests: one that did not compile
            // would fail every test run, never a user's.
            .map(|r| Regex::new(r.pattern).unwrap_or_else(|e| panic!("rule {}: {e}", r.id)))
            .collect()
    })
}

impl Rule {
    fn matches(&self, re: &Regex, content: &[u8]) -> bool {
        re.captures_iter(content).any(|caps| {
            let whole = caps.get(0).map_or(0..0, |m| m.range());
            let secret = caps.get(1).map_or(&[][..], |m| m.as_bytes());
            match self.check {
                Check::Shape => true,
                Check::NotExample => !secret.ends_with(b"EXAMPLE"),
                Check::Entropy(bits) => {
                    entropy(secret) >= bits && !secret.windows(7).any(|w| w == b"EXAMPLE")
                }
                Check::PemBlock => pem_block_follows(secret, &content[whole.end..]),
                Check::RealPassword => !placeholder(secret),
            }
        })
    }
}

/// Shannon entropy of `bytes`, in bits per byte.
fn entropy(bytes: &[u8]) -> f64 {
    let mut counts = [0u32; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    (counts.iter().filter(|&&c| c > 0))
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

/// After a BEGIN line labelled `label`: optional `Key: value` headers, at least one line of
/// 40 or more base64 characters, then `-----END <label>-----`.
fn pem_block_follows(label: &[u8], rest: &[u8]) -> bool {
    let end = [b"-----END ", label, b"-----"].concat();
    let Some(at) = rest.windows(end.len()).position(|w| w == end.as_slice()) else {
        return false;
    };
    let body = &rest[..at];
    let base64 = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=');
    let lines = body.split(|&b| b == b'\n').map(|l| l.trim_ascii());
    let mut long = 0;
    for line in lines.filter(|l| !l.is_empty()) {
        if line.contains(&b':') {
            continue; // Proc-Type:, DEK-Info: headers of an encrypted key
        }
        if !line.iter().all(base64) {
            return false;
        }
        long += usize::from(line.len() >= 40);
    }
    long > 0
}

/// A password that stands for one: a variable, a template, a mask, or a word for it.
fn placeholder(password: &[u8]) -> bool {
    const WORDS: &[&[u8]] = &[
        b"password",
        b"passwd",
        b"pass",
        b"pwd",
        b"secret",
        b"changeme",
        b"example",
        b"xxx",
        b"user",
        b"username",
    ];
    let first = password.first().copied().unwrap_or(b'$');
    let lower = password.to_ascii_lowercase();
    matches!(first, b'$' | b'{' | b'<' | b'%' | b'[' | b'(')
        || password.iter().all(|&b| b == first)
        || WORDS.contains(&lower.as_slice())
}

#[cfg(test)]
mod tests {
    use super::{RULES, compiled, entropy, rule_matching};

    #[test]
    fn every_rule_compiles_and_has_a_unique_id() {
        assert_eq!(compiled().len(), RULES.len());
        let mut ids: Vec<_> = RULES.iter().map(|r| r.id).collect();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }

    #[test]
    fn entropy_is_in_bits_per_byte() {
        assert_eq!(entropy(b"aaaa"), 0.0);
        assert!((entropy(b"abab") - 1.0).abs() < 1e-9);
    }

    #[test]
    fn a_pem_header_without_its_block_is_not_a_key() {
        let header = ["-----BEGIN RSA ", "PRIVATE KEY-----"].concat();
        let code = format!("if line == \"{header}\" {{ parse() }}\n");
        assert!(rule_matching(code.as_bytes()).is_none());
        let body = "MIIEpAIBAAKCAQEA7".repeat(4);
        let key = format!("{header}\n{body}\n-----END RSA PRIVATE KEY-----\n");
        assert_eq!(
            rule_matching(key.as_bytes()).map(|r| r.id),
            Some("private-key")
        );
    }
}
