//! JSON with V8 semantics: a validating scanner and a value model that round-trips like JSON.stringify.
pub mod canonical;
pub mod scan;
pub mod value;
