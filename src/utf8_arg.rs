//! A string argument converted to UTF-8 in one pass.
//!
//! napi-rs converts a JS string to `String` with two `napi_get_value_string_utf8` calls: one
//! with no buffer to learn the UTF-8 length (V8 walks the whole string, flattening it), then
//! one that writes. On `append` (one ~2 KB line per call, 10,000s of calls) the length walk
//! was a fifth of the native time. A string of `n` UTF-16 units never needs more than `3n`
//! UTF-8 bytes (a surrogate pair is 2 units and 4 bytes; any other unit is at most 3 bytes),
//! and the UTF-16 length is O(1), so one write into a scratch buffer of `3n + 1` bytes does.
//! Lone surrogates become U+FFFD, as with napi-rs `String` (and Node's own UTF-8 encoding).

use napi::bindgen_prelude::{FromNapiValue, TypeName, ValidateNapiValue, ValueType};
use napi::{Error, Result, Status, sys};
use std::cell::RefCell;
use std::ptr;

/// Strings longer than this (in UTF-16 units) take napi-rs's exact two-pass conversion, so
/// the scratch buffer never grows past ~3 MiB.
const ONE_PASS_MAX_UNITS: usize = 1 << 20;

thread_local! {
    /// Reused output buffer (JS thread only; a `FromNapiValue` runs on the thread of its env).
    // `const` already: clippy 1.97's false positive on windows-gnu (see discovery's
    // `for_each_line`).
    #[allow(clippy::missing_const_for_thread_local)]
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// A JS string argument as an owned Rust `String`.
pub struct Utf8Arg(pub String);

impl TypeName for Utf8Arg {
    fn type_name() -> &'static str {
        "String"
    }
    fn value_type() -> ValueType {
        ValueType::String
    }
}

impl ValidateNapiValue for Utf8Arg {}

fn status(code: sys::napi_status, what: &str) -> Result<()> {
    if code == sys::Status::napi_ok {
        Ok(())
    } else if code == sys::Status::napi_string_expected {
        Err(Error::new(
            Status::StringExpected,
            format!("{what}: expected a string"),
        ))
    } else {
        Err(Error::new(
            Status::GenericFailure,
            format!("{what}: string conversion failed"),
        ))
    }
}

impl FromNapiValue for Utf8Arg {
    unsafe fn from_napi_value(env: sys::napi_env, value: sys::napi_value) -> Result<Self> {
        let mut units: usize = 0;
        // SAFETY: `env` and `value` are the live handles napi-rs passes for this call (the
        // `FromNapiValue` contract). With a null buffer N-API only stores the string's UTF-16
        // length into `units`, a valid `usize` we own.
        let code =
            unsafe { sys::napi_get_value_string_utf16(env, value, ptr::null_mut(), 0, &mut units) };
        status(code, "line")?;
        if units > ONE_PASS_MAX_UNITS {
            // SAFETY: same contract as above; napi-rs's own conversion.
            return unsafe { String::from_napi_value(env, value) }.map(Utf8Arg);
        }
        let cap = units * 3 + 1;
        SCRATCH.with(|cell| {
            let mut buf = cell.try_borrow_mut().map_err(|_| {
                Error::new(
                    Status::GenericFailure,
                    "line: conversion re-entered".to_string(),
                )
            })?;
            buf.clear();
            buf.reserve(cap);
            let mut written: usize = 0;
            // SAFETY: `buf` has at least `cap` bytes of capacity; N-API writes at most
            // `cap - 1` bytes of UTF-8 plus a terminating NUL inside that, and stores the
            // number of bytes written (without the NUL) in `written`. `env`/`value` as above.
            let code = unsafe {
                sys::napi_get_value_string_utf8(
                    env,
                    value,
                    buf.as_mut_ptr().cast(),
                    cap,
                    &mut written,
                )
            };
            status(code, "line")?;
            let written = written.min(cap - 1);
            // SAFETY: N-API initialized the first `written` bytes (≤ capacity) just above.
            unsafe { buf.set_len(written) };
            // V8 writes valid UTF-8 (lone surrogates replaced); checked anyway rather than
            // trusted, it costs ~0.1 µs per 2 KB.
            match std::str::from_utf8(&buf) {
                Ok(s) => Ok(Utf8Arg(s.to_owned())),
                Err(_) => Err(Error::new(
                    Status::GenericFailure,
                    "line: string conversion produced invalid UTF-8".to_string(),
                )),
            }
        })
    }
}
