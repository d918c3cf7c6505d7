//! N-API binding layer. Everything here is thin: it converts arguments and calls into the core.

use napi_derive::napi;

/// Version of the native core, for diagnostics.
#[napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
