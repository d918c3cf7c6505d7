//! Binding of the CLI's store helpers (crates/core/src/check).

use napi_derive::napi;
use pi_session_core::check::search::{self, Needle};

/// Literal search over session files in parallel. Returns one entry per path, in order:
/// `null` for an unreadable file, else a JSON array of
/// `[entryId, role, line, text, [[start, end], ...]]` (at most `limit` per file).
#[napi(catch_unwind)]
pub fn check_search_files(
    paths: Vec<String>,
    needle: String,
    ignore_case: bool,
    limit: u32,
) -> Vec<Option<String>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let n = Needle::new(&needle, ignore_case);
    search::search_files(&paths, &n, limit as usize, threads)
        .into_iter()
        .map(|r| r.map(|h| search::hits_json(&h)))
        .collect()
}

/// The line pass of `pi-session check` over files in parallel: per path, in order, `null`
/// for an unreadable file, else the record JSON of `check::scan` (see its docs).
#[napi(catch_unwind)]
pub fn check_scan_files(paths: Vec<String>) -> Vec<Option<String>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    pi_session_core::check::scan::scan_files(&paths, threads)
}
