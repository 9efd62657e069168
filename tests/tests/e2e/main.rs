//! End-to-end tests of the `snap` binary (one test binary, a module per concern): every
//! command, its exit codes, JSON and human output, crashes and power cuts at every failpoint,
//! concurrency, and the safety invariant. Real filesystem, temp directories.

#![allow(clippy::unwrap_used)]

mod commands;
mod concurrency;
mod crash;
mod damage;
mod exec;
mod expunge;
mod history;
mod hooks;
mod identity;
mod large;
mod mcp;
mod output;
mod outside;
mod random_kill;
mod reading;
mod remote;
mod s3_kill;
mod safety;
mod transfer_kill;
mod ui;
mod watch;
