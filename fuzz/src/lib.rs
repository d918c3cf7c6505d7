//! Fuzz crate root: the properties run against the `pi-session-core` crate (crates/core, no
//! napi symbols, so fuzz binaries link without a node process).

/// The fuzz properties, shared by the libFuzzer targets and the std-only soak binary.
pub mod harness;
