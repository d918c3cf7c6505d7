//! Errors thrown to JS as the objects JS would throw: a filesystem error is a JS `Error`
//! whose own properties already are Node's (`errno`, `code`, `syscall`, `path`, in Node's
//! order), so the JS layer throws it on without reading its message.

use napi::bindgen_prelude::{Function, JsObjectValue, Object, Unknown};
use napi::{Env, Error, JsValue, Result};
use pi_session_core::store::{FsError, StoreError};

/// `code` of the error an append throws when the session file was truncated in place and
/// some entries' texts lived only in it: the JS layer answers with `restoreTexts` for the
/// indices `neededTexts()` lists, then retries the append once. Internal: it never reaches
/// the caller of the JS layer.
pub const NEEDS_TEXTS: &str = "PI_SESSION_NATIVE_NEEDS_TEXTS";

/// The JS error of a store failure.
pub fn store_error(env: &Env, e: StoreError) -> Error {
    match e {
        StoreError::Fs(e) => fs_error(env, &e),
        StoreError::NeedsTexts(_) => coded_error(env, &e.to_string(), NEEDS_TEXTS),
        StoreError::InvalidLine => Error::from_reason(e.to_string()),
    }
}

/// The JS error of a filesystem failure: Node's `fs` error shape when it has OS fields,
/// otherwise a plain `Error` with the message (a held lock).
pub fn fs_error(env: &Env, e: &FsError) -> Error {
    let Some(os) = &e.os else {
        return Error::from_reason(e.message.clone());
    };
    let built = new_error(env, &e.message).and_then(|mut o| {
        // Node's order: `errno, code, syscall, path` (tested against `fs.openSync`).
        o.set("errno", os.errno)?;
        o.set("code", e.code.as_str())?;
        o.set("syscall", os.syscall.as_str())?;
        if let Some(path) = &os.path {
            o.set("path", path.as_str())?;
        }
        Ok(o)
    });
    thrown(built, &e.message)
}

/// A JS `Error` with `message` and one own property, `code`.
fn coded_error(env: &Env, message: &str, code: &str) -> Error {
    let built = new_error(env, message).and_then(|mut o| {
        o.set("code", code)?;
        Ok(o)
    });
    thrown(built, message)
}

/// `new Error(message)`, made by the global `Error` constructor so that it has no other own
/// properties (napi's `create_error` adds a `code`).
fn new_error<'env>(env: &'env Env, message: &str) -> Result<Object<'env>> {
    let ctor: Function<'env, String, Unknown<'env>> =
        env.get_global()?.get_named_property("Error")?;
    ctor.new_instance(message.to_string())?.coerce_to_object()
}

/// The napi error that throws `built` itself, or (if it could not be built) the message.
fn thrown(built: Result<Object<'_>>, message: &str) -> Error {
    match built {
        Ok(o) => Error::from_unknown_without_coercion(o.to_unknown()),
        Err(_) => Error::from_reason(message.to_string()),
    }
}
