//! pi-session-core: pi's session store in plain Rust (no napi types). The N-API binding is the
//! root crate (`pi-session-native`, `src/`); `fuzz/` and the tests use this crate directly.
//!
//! Where things live (docs/architecture.md has the full tables):
//! - `session`: a session's entries, persistence and text prefetch (the binding's
//!   `NativeSession` wraps it); `store`: the reference's persistence rules; `durability`: fsync
//!   policy, atomic writes, lock; `error`: Node-style I/O errors; `config`: every environment
//!   variable, read in one place.
//! - `context`: compaction and context selection; `tree`, `branch`, `migrate`, `entry`,
//!   `jsonl`, `json`, `materialize`: the entry model and its walks.
//! - `discovery`: listing (`listing`: the pass over many files; `index`: the sidecar cache);
//!   `search`: full-text search; `check`: CLI scans; `safefs`: hostile-file opens.
//!
//! Dependencies point down only: `session` → `store` → `durability` → `error`.

pub mod branch;
pub mod check;
pub mod config;
pub mod context;
pub mod discovery;
pub mod durability;
pub mod entry;
pub mod error;
pub mod json;
pub mod jsonl;
pub mod materialize;
pub mod migrate;
pub mod preload;
pub mod safefs;
pub mod search;
pub mod session;
pub mod shape_stream;
pub mod shapes;
pub mod store;
pub mod tree;
