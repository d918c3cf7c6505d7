//! pi-session-native: the N-API binding (napi-rs) over the `pi-session-core` crate
//! (crates/core). It converts arguments and results, maps errors to what the JS layer
//! expects and schedules work (async tasks, thread-safe callbacks); the session logic is in
//! the core.

use napi_derive::napi;

/// Version of the native core, for diagnostics.
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
pub mod session;

/// fsync the appends that the batch policy has not synced yet: with `path`, only those of
/// that file (`forkFrom` copies it), else every file's. At most one `fdatasync` per file
/// with pending appends; nothing when there are none.
#[napi]
pub fn sync_pending_appends(path: Option<String>) {
    use pi_session_core::durability::{file_id, flusher};
    match path {
        Some(p) => {
            if let Ok(m) = std::fs::metadata(&p) {
                flusher::sync_pending_of(file_id(&m));
            }
        }
        None => flusher::sync_all_pending(),
    }
}

/// Make directories just made by a recursive `mkdirSync` durable (`first`: what it
/// answered, the first one created; `last`: the directory asked for; both absolute): the
/// parent of each is fsynced, up to the first ancestor that existed. Not in `never` mode
/// (`PI_SESSION_NATIVE_FSYNC`, read now).
#[napi]
pub fn sync_created_dirs(first: String, last: String) {
    let settings = pi_session_core::config::Settings::from_env();
    if settings.fsync.sync_whole_files() {
        pi_session_core::durability::sync_created_dirs(
            std::path::Path::new(&first),
            std::path::Path::new(&last),
        );
    }
}

/// Start reading the session file at `path` on a thread, for the `SessionManager.open` of it
/// that pi makes once started (crates/core/src/preload.rs): false if it is not a regular
/// file. The open uses what was read only if the file has not changed since.
#[napi]
pub fn preload_session(path: String) -> bool {
    let settings = pi_session_core::config::Settings::from_env();
    pi_session_core::preload::start(std::path::Path::new(&path), settings.backed_min)
}

/// A UUIDv7 session id (time-ordered, like the reference's `uuidv7()`).
#[napi]
pub fn uuidv7() -> String {
    uuid::Uuid::now_v7().to_string()
}
pub mod abort;
pub mod check;
pub mod codes;
pub mod discovery;
pub mod error;
pub mod search;
pub mod utf8_arg;
