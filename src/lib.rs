//! pi-session-native: a Rust core for pi's session store, with a napi-rs binding.
//!
//! Layers (meant to point down only; `store` and `durability` still import each other, and
//! the binding still holds listing orchestration: docs/architecture.md, known debts):
//! - `node`: the N-API binding (argument checks, conversions, async tasks, and for now some
//!   orchestration: the listing, the prefetch thread, migration and fork splicing)
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
