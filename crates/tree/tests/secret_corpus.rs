//! The secret rules against a corpus of true and false cases, through a real store: each
//! case a file of one snapshot, `Workspace::secrets` judging them all. Precision and recall
//! must each stay at 95% or above (docs/SAFETY.md). The secrets are assembled at run time
//! from pieces, so this file holds none whole and a secret scan of the repository does not
//! flag it.

#![allow(clippy::unwrap_used)]

use std::collections::BTreeSet;

use snap_tree::secrets::SecretScan;
use snap_tree::{SaveOptions, Workspace};

/// Deterministic pseudo-random text of `len` characters from `alphabet` (an LCG): as
/// random-looking as a real key, the same on every run.
fn random(seed: u64, len: usize, alphabet: &str) -> String {
    let chars: Vec<char> = alphabet.chars().collect();
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            chars[((state >> 33) as usize) % chars.len()]
        })
        .collect()
}

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const UPPER32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn pem(label: &str, headers: &str, seed: u64) -> String {
    let body: Vec<String> = (0..6).map(|i| random(seed + i, 64, B64)).collect();
    format!(
        "-----BEGIN {label}-----\n{headers}{}\n-----END {label}-----\n",
        body.join("\n")
    )
}

/// Files that hold a secret (path, content).
fn secrets() -> Vec<(String, String)> {
    let gh = |p: &str, s| format!("token = {}_{}\n", p, random(s, 36, ALNUM));
    let pk = ["PRIVATE", " KEY"].concat();
    vec![
        (
            "aws/id.txt".into(),
            format!(
                "aws_access_key_id = {}{}\n",
                "AK",
                ["IA", &random(1, 16, UPPER32)].concat()
            ),
        ),
        (
            "aws/session.sh".into(),
            format!(
                "export AWS_ACCESS_KEY_ID={}{}\n",
                "AS",
                ["IA", &random(2, 16, UPPER32)].concat()
            ),
        ),
        (
            "aws/secret.ini".into(),
            format!(
                "[default]\naws_secret_access_key = {}\n",
                random(3, 40, B64)
            ),
        ),
        (
            "aws/creds.json".into(),
            format!("{{\"SecretAccessKey\": \"{}\"}}\n", random(4, 40, B64)),
        ),
        ("gh/ghp.txt".into(), gh("ghp", 5)),
        ("gh/gho.txt".into(), gh("gho", 6)),
        ("gh/ghu.txt".into(), gh("ghu", 7)),
        ("gh/ghs.txt".into(), gh("ghs", 8)),
        ("gh/ghr.txt".into(), gh("ghr", 9)),
        (
            "gh/pat.txt".into(),
            format!("GH={}_{}\n", "github_pat", random(10, 82, ALNUM)),
        ),
        (
            "gitlab.yml".into(),
            format!("token: {}-{}\n", "glpat", random(11, 20, ALNUM)),
        ),
        (
            "slack/bot.py".into(),
            format!(
                "BOT = \"{}-{}-{}-{}\"\n",
                "xoxb",
                "1234567890",
                "1234567890123",
                random(12, 24, ALNUM)
            ),
        ),
        (
            "slack/user.py".into(),
            format!(
                "USER = \"{}-{}-{}\"\n",
                "xoxp",
                "9876543210",
                random(13, 32, ALNUM)
            ),
        ),
        (
            "slack/hook.txt".into(),
            format!(
                "https://hooks.{}.com/services/T0/B0/{}\n",
                "slack",
                random(14, 44, ALNUM)
            ),
        ),
        (
            "stripe/live.rb".into(),
            format!(
                "Stripe.api_key = '{}_{}_{}'\n",
                "sk",
                "live",
                random(15, 24, ALNUM)
            ),
        ),
        (
            "stripe/rk.rb".into(),
            format!("KEY = '{}_{}_{}'\n", "rk", "live", random(16, 24, ALNUM)),
        ),
        (
            "openai/proj.env.txt".into(),
            format!(
                "OPENAI_API_KEY={}-{}-{}\n",
                "sk",
                "proj",
                random(17, 120, ALNUM)
            ),
        ),
        (
            "openai/legacy.txt".into(),
            format!(
                "key: {}-{}{}{}\n",
                "sk",
                random(18, 20, ALNUM),
                "T3Blbk",
                ["FJ", &random(19, 20, ALNUM)].concat()
            ),
        ),
        (
            "anthropic.txt".into(),
            format!(
                "ANTHROPIC_API_KEY={}-{}-{}-{}AA\n",
                "sk",
                "ant",
                "api03",
                random(20, 93, ALNUM)
            ),
        ),
        ("keys/deploy".into(), pem(&format!("RSA {pk}"), "", 21)),
        ("keys/openssh".into(), pem(&format!("OPENSSH {pk}"), "", 31)),
        (
            "keys/encrypted".into(),
            pem(
                &format!("RSA {pk}"),
                "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,0A1B2C3D\n\n",
                41,
            ),
        ),
        ("keys/server.key".into(), pem(&pk, "", 51)),
        (
            "db/config.yml".into(),
            format!(
                "url: {}://app:{}@db.internal:5432/app\n",
                "postgres",
                random(61, 16, ALNUM)
            ),
        ),
        (
            "db/mysql.txt".into(),
            format!("{}://root:{}@localhost/db\n", "mysql", "hunter2xyz"),
        ),
        (".env".into(), "DEBUG=1\n".into()),
        ("deploy/prod.env".into(), "LEVEL=info\n".into()),
        (".env.production".into(), "LEVEL=warn\n".into()),
        ("home/id_rsa".into(), "not even a key\n".into()),
        (
            "home/.netrc".into(),
            "machine example.com login me\n".into(),
        ),
        ("gcp/credentials.json".into(), "{}\n".into()),
    ]
}

/// Files that hold none, though each looks like one to a careless rule.
fn innocents() -> Vec<(String, String)> {
    let pk = ["PRIVATE", " KEY"].concat();
    let begin = ["-----", "BEGIN"].concat();
    vec![
        (
            "docs/risk.md".into(),
            "# risk-assessment-and-mitigation-plan-for-the-q3-launch-window\n".into(),
        ),
        (
            "web/app.css".into(),
            ".sk-button-primary-large-rounded-with-shadow { color: red; }\n".into(),
        ),
        (
            "src/pem.rs".into(),
            format!("if line.starts_with(\"{begin}\") && line.contains(\"{pk}\") {{ key() }}\n"),
        ),
        (
            "home/id_ed25519.pub".into(),
            format!("ssh-ed25519 {} me@host\n", random(70, 68, B64)),
        ),
        (
            "talk/slides.key".into(),
            format!("PK\u{3}\u{4}keynote archive {}\n", random(71, 200, ALNUM)),
        ),
        ("certs/server.pem".into(), pem("CERTIFICATE", "", 72)),
        (".env.example".into(), "API_KEY=your-key-here\n".into()),
        (
            "README.md".into(),
            "DATABASE_URL=postgres://user:password@localhost/db\n".into(),
        ),
        (
            "compose.yml".into(),
            "url: postgres://app:${DB_PASSWORD}@db/app\n".into(),
        ),
        (
            "notes/masked.txt".into(),
            "mysql://root:********@localhost/db\n".into(),
        ),
        (
            "git.log".into(),
            format!("commit {}\n", random(73, 40, "0123456789abcdef")),
        ),
        (
            "package-lock.json".into(),
            format!("\"integrity\": \"sha512-{}==\"\n", random(74, 86, B64)),
        ),
        (
            "docs/aws.md".into(),
            "Access key ids begin with AKIA (long-term) or ASIA (temporary).\n".into(),
        ),
        (
            "docs/words.txt".into(),
            "task-list desk-lamp whisk-broom risk-free\n".into(),
        ),
        (
            "src/prefix.ts".into(),
            "const GITHUB_PREFIX = \"ghp_\"; const SLACK = \"xoxb-\";\n".into(),
        ),
        (
            "docs/url.md".into(),
            "See https://example.com:8080/path and http://user@host/x\n".into(),
        ),
        (
            "aws/template.ini".into(),
            "aws_secret_access_key = YOUR_SECRET_KEY_HERE\n".into(),
        ),
        (
            "src/uuid.rs".into(),
            "const ID: &str = \"3f2a9c1e-7b4d-4e8a-9f0c-1d2e3f4a5b6c\";\n".into(),
        ),
        (
            "src/low.txt".into(),
            format!("akia{}\n", random(75, 16, "abcdefghijklmnopqrstuvwxyz")),
        ),
        (
            "docs/stripe.md".into(),
            "Secret keys look like sk_live_... and restricted ones rk_live_...\n".into(),
        ),
        (
            "web/logo.css".into(),
            format!(
                "background: url(data:image/png;base64,{});\n",
                random(76, 400, B64)
            ),
        ),
    ]
}

#[test]
fn the_rules_keep_precision_and_recall_at_95_percent() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let ws = Workspace::init(root, None, false).unwrap();
    let (secret, innocent) = (secrets(), innocents());
    for (path, content) in secret.iter().chain(&innocent) {
        let abs = root.join(path);
        std::fs::create_dir_all(abs.parent().unwrap()).unwrap();
        std::fs::write(abs, content).unwrap();
    }
    ws.save(&SaveOptions::default()).unwrap();
    let hits = ws.secrets(SecretScan::PathsAndContents).unwrap();
    let flagged: BTreeSet<String> = (hits.iter())
        .map(|h| String::from_utf8(h.path.clone()).unwrap())
        .collect();
    let should: BTreeSet<String> = secret.iter().map(|(p, _)| p.clone()).collect();
    let missed: Vec<_> = should.difference(&flagged).collect();
    let wrong: Vec<_> = flagged.difference(&should).collect();
    let found = should.len() - missed.len();
    let recall = found as f64 / should.len() as f64;
    let precision = found as f64 / flagged.len().max(1) as f64;
    eprintln!(
        "secret corpus: {} true, {} false cases; recall {recall:.3}, precision {precision:.3}",
        should.len(),
        innocent.len()
    );
    assert!(recall >= 0.95, "missed {missed:?}");
    assert!(precision >= 0.95, "flagged wrongly {wrong:?}");
    // Every hit names why: the rule for a content, the pattern for a name.
    assert!(
        hits.iter()
            .all(|h| h.why.contains("rule ") || h.why.contains("matches"))
    );
}
