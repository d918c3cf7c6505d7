//! Fuzz-only crate root: the pure-Rust core of pi-session-native compiled in by `#[path]`
//! under the same module names as in the main crate (`crate::json::scan`, `crate::entry`,
//! ...), so the `use crate::...` paths inside them resolve. The `node` module (N-API
//! symbols that only exist inside a node process) is left out, which keeps fuzz binaries
//! linkable.
#![allow(dead_code, unused_imports, clippy::all)]

#[path = "../../src/json/mod.rs"]
pub mod json;

#[path = "../../src/entry.rs"]
pub mod entry;

#[path = "../../src/jsonl.rs"]
pub mod jsonl;

#[path = "../../src/tree.rs"]
pub mod tree;

#[path = "../../src/context.rs"]
pub mod context;

#[path = "../../src/store.rs"]
pub mod store;

#[path = "../../src/durability/mod.rs"]
pub mod durability;

/// The fuzz properties, shared by the libFuzzer targets and the std-only soak binary.
pub mod harness;
