//! Store maintenance helpers used by the `pi-session` CLI (lib/cli/), run in parallel
//! over files: full-text search (`search`) and the line pass of `check` (`scan`).

pub mod scan;
pub mod search;
