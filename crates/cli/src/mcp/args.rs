//! The tools' arguments. Every struct refuses a field it does not know (its schema says
//! `additionalProperties: false`), and arrives [`Checked`]: a call whose arguments do not fit
//! is answered with a tool error naming what is wrong, before anything runs.

use std::borrow::Cow;

use rmcp::schemars;
use serde::Deserialize;
use serde::de::{DeserializeOwned, Deserializer};
use serde_json::Value;

/// A tool's arguments as its schema describes them, or why they are not. Deserializing one
/// never fails, so the tool itself answers a bad call (rmcp would answer with a protocol
/// error the model may never see).
#[derive(Debug)]
pub(crate) struct Checked<T>(pub(crate) Result<T, String>);

impl<'de, T: DeserializeOwned> Deserialize<'de> for Checked<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Checked<T>, D::Error> {
        let value = Value::deserialize(d)?;
        Ok(Checked(T::deserialize(value).map_err(|e| e.to_string())))
    }
}

impl<T: schemars::JsonSchema> schemars::JsonSchema for Checked<T> {
    fn schema_name() -> Cow<'static, str> {
        T::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// The arguments of a tool that takes none.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct LogArgs {
    /// At most this many snapshots, newest first (default 20).
    pub(super) limit: Option<u64>,
    /// Also snapshots off HEAD's line (automatic saves, undone work).
    #[serde(default)]
    pub(super) all: bool,
    /// Only this agent session's snapshots (its full id, or a unique prefix of it).
    pub(super) session: Option<String>,
    /// Only the snapshots saved for this agent: a subagent's id, or `main`.
    pub(super) agent: Option<String>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DiffArgs {
    /// From this snapshot (default: HEAD).
    pub(super) from: Option<String>,
    /// To this snapshot (default: the working tree).
    pub(super) to: Option<String>,
    /// Only these workspace-relative paths.
    #[serde(default)]
    pub(super) paths: Vec<String>,
    /// Counts of added and removed lines only, no line diffs.
    #[serde(default)]
    pub(super) stat: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RefArgs {
    /// A snapshot: @ (HEAD), @~N, last, #SEQ, step:N or an id prefix.
    pub(super) reference: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct CatArgs {
    /// A snapshot: @ (HEAD), @~N, last, #SEQ, step:N or an id prefix.
    pub(super) reference: String,
    /// A workspace-relative file path.
    pub(super) path: String,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SaveArgs {
    /// What this snapshot is (shown by the log).
    pub(super) message: Option<String>,
    /// The agent's turn number.
    pub(super) step: Option<u64>,
    /// The agent's session.
    pub(super) session: Option<String>,
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct MoveArgs {
    /// How many snapshots (or turns, with `turn`) to move (default 1).
    pub(super) n: Option<u64>,
    /// Move by whole agent turns as `snap hook` recorded them.
    #[serde(default)]
    pub(super) turn: bool,
    /// Preview only (the default). Pass false to change the files.
    pub(super) dry_run: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RestoreArgs {
    /// The snapshot to restore: @~N, #SEQ, step:N or an id prefix.
    pub(super) reference: String,
    /// Only these workspace-relative paths (default: the whole tree).
    #[serde(default)]
    pub(super) paths: Vec<String>,
    /// Preview only (the default). Pass false to change the files.
    pub(super) dry_run: Option<bool>,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevertArgs {
    /// The snapshot whose change to take back: @~N, #SEQ, step:N or an id prefix (with turn,
    /// default @).
    pub(super) reference: Option<String>,
    /// Take back the whole agent turn holding the snapshot.
    #[serde(default)]
    pub(super) turn: bool,
    /// Only these workspace-relative paths (default: all the change touched).
    #[serde(default)]
    pub(super) paths: Vec<String>,
    /// Preview only (the default). Pass false to change the files.
    pub(super) dry_run: Option<bool>,
}
