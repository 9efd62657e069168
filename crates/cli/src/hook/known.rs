//! Every agent snap knows, by the name `--agent` takes: one [`Agent`] definition each, in
//! its own file (its payloads, where its hooks live, their layout, what an install adds).

use anyhow::{Result, bail};

use super::agents::Agent;

/// Every agent, in the order they are listed.
pub(crate) const ALL: [&Agent; 6] = [
    &super::claude::AGENT,
    &super::codex::AGENT,
    &super::gemini::AGENT,
    &super::cursor::AGENT,
    &super::cline::AGENT,
    &super::opencode::AGENT,
];

/// The agent `--agent NAME` names.
pub(crate) fn agent(name: &str) -> Result<&'static Agent> {
    match ALL.into_iter().find(|a| a.name == name) {
        Some(agent) => Ok(agent),
        None => bail!("unknown agent {name:?} (expected one of {})", names()),
    }
}

/// The agents `--agent` knows, for messages.
pub(crate) fn names() -> String {
    ALL.map(|a| a.name).join(", ")
}
