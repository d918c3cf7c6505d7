//! pi-session-native: a Rust core for pi's session store, with a napi-rs binding.
//!
//! Layers (dependencies point down only):
//! - `node`: the N-API binding (thin; argument checks, conversions, async tasks)
//! - core modules: pure Rust, no napi types.

pub mod branch;
pub mod check;
pub mod context;
pub mod discovery;
pub mod durability;
pub mod entry;
pub mod json;
pub mod jsonl;
pub mod materialize;
pub mod migrate;
pub mod node;
pub mod safefs;
pub mod search;
pub mod store;
pub mod tree;
