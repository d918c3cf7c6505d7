//! pi-session-core: pi's session store in plain Rust (no napi types). The N-API binding is the
//! root crate (`pi-session-native`, `src/`); `fuzz/` and the tests use this crate directly.
//!
//! Layers (meant to point down only; `store` and `durability` still import each other, and
//! the binding still holds listing orchestration: docs/architecture.md, known debts).

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
pub mod safefs;
pub mod search;
pub mod store;
pub mod tree;
