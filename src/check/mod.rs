//! Store maintenance helpers used by the `pi-session` CLI (lib/cli/): full-text search
//! over session files, scanned in parallel.

pub mod search;
