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
