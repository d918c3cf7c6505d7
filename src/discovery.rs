//! Session discovery binding: a sync bounded header read, and the listing pass
//! (`pi_session_core::discovery::listing`) run as an async task, its outcomes converted to JS.

use napi::bindgen_prelude::{AsyncTask, Function, ToNapiValue, TypeName, Unknown, ValueType};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Result, Status, Task, sys};
use napi_derive::napi;
use pi_session_core::discovery::listing::{self, FileStat, IndexUse, Outbox, Outcome};
use pi_session_core::discovery::text::Text;
use pi_session_core::discovery::{self, First, Header, Listed, Record};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

/// Bytes of the bounded header scan (core `MAX_HEADER_SCAN_BYTES`), for the message of the
/// JS `SessionHeaderScanLimitError`: the limit is written once, in the core.
#[napi]
pub const MAX_HEADER_SCAN_BYTES: u32 = discovery::MAX_HEADER_SCAN_BYTES as u32;

/// What [`discovery_read_header`] found.
#[napi(string_enum = "lowercase")]
pub enum HeaderKind {
    /// A header line: `header` holds its JSON text.
    Found,
    /// No header (the first entry is not one, or the file is empty).
    None,
    /// The scan limit was exceeded before the first line ended.
    Limit,
}

/// `readSessionHeader` outcome: `header` is set for `found` (JSON.parse it).
#[napi(object)]
pub struct HeaderRead {
    pub kind: HeaderKind,
    pub header: Option<String>,
}

/// `readSessionHeader` for one file: what it found, or Node's `fs` error for the failed
/// open or read (thrown as the reference's `openSync` / `readSync` throws it).
#[napi(catch_unwind)]
pub fn discovery_read_header(env: Env, path: String) -> Result<HeaderRead> {
    let (kind, header) = match discovery::read_header(Path::new(&path)) {
        Ok(Header::Found(line)) => (HeaderKind::Found, Some(line)),
        Ok(Header::None) => (HeaderKind::None, None),
        Ok(Header::Limit) => (HeaderKind::Limit, None),
        Err(e) => return Err(crate::error::fs_error(&env, &e)),
    };
    Ok(HeaderRead { kind, header })
}

/// Records in input order (`None`: not a session / unreadable) and whether it was aborted.
/// In JS: `{ records, aborted, sent }`, `records` the JSON text of an array of records as
/// [`push_out`] writes them (`true` when the caller's `known` key still matches the file's
/// stamp). The texts are not in it: JS asks [`discovery_text`] with the text key when a
/// caller reads one.
pub struct DiscoveryResult {
    records: Vec<Outcome>,
    aborted: bool,
    /// How many records went to the `onRecord` callback instead (their slots are `false`).
    sent: u32,
}

/// `onRecord(batch)`: finished files as the JSON text of `[index, record, index, record, ...]`.
type RecordFn = ThreadsafeFunction<(), Unknown<'static>, Batch, Status, false>;

/// A drained batch as one JSON text for JS: `[index, record, index, record, ...]`, records
/// as in [`push_out`].
pub struct Batch(Vec<(u32, Outcome)>);

impl ToNapiValue for Batch {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let mut json = String::with_capacity(val.0.len() * 320 + 2);
        json.push('[');
        for (k, (i, o)) in val.0.iter().enumerate() {
            if k > 0 {
                json.push(',');
            }
            json.push_str(&i.to_string());
            json.push(',');
            push_out(&mut json, o);
        }
        json.push(']');
        unsafe { js_str(env, &json) }
    }
}

/// The slots of a listing record (an array in the listing's JSON, see [`push_out`]): their
/// order is defined here alone; `push_out` writes them in it and JS reads them by it.
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordSlot {
    /// The header object.
    Header = 0,
    /// The session name (a JSON string literal), or 0.
    Name = 1,
    /// The message count.
    Count = 2,
    /// The last activity time (ms).
    Activity = 3,
    /// Timestamps whose parse was left to JS (a JSON array), or 0.
    Deferred = 4,
    /// The length of `firstMessage` (0: none).
    FirstLength = 5,
    /// The length of `allMessagesText` (0: none).
    AllLength = 6,
    /// 1 if the caller may keep the record (its stamp key is in the text key), else 0.
    Keep = 7,
    /// The key `discoveryText` reads the texts with (a string).
    TextKey = 8,
}

/// Every [`RecordSlot`], at the index of its value: the order `push_out` writes.
const RECORD_SLOTS: [RecordSlot; 9] = [
    RecordSlot::Header,
    RecordSlot::Name,
    RecordSlot::Count,
    RecordSlot::Activity,
    RecordSlot::Deferred,
    RecordSlot::FirstLength,
    RecordSlot::AllLength,
    RecordSlot::Keep,
    RecordSlot::TextKey,
];

/// One file's outcome as JSON: `null` (not a session, or a record JS cannot hold: a text
/// past V8's string length limit, which the reference's buildSessionInfo answers `null`
/// for), `true` (unchanged since the caller's copy), `false` (already sent), or an array of
/// the [`RecordSlot`]s. Raw JSON values of the file are embedded verbatim: `JSON.parse`
/// gives the reference's values exactly (lone surrogates included). One JSON text for a
/// whole listing costs a fraction of building its records value by value through N-API.
fn push_out(json: &mut String, o: &Outcome) {
    match o {
        Outcome::None => json.push_str("null"),
        Outcome::Same => json.push_str("true"),
        Outcome::Sent => json.push_str("false"),
        Outcome::Record { record: r, .. } if unconvertible(r) || r.all_units > MAX_JS_STRING => {
            json.push_str("null")
        }
        Outcome::Record {
            record: r,
            keep,
            listed,
        } => {
            json.push('[');
            for (i, slot) in RECORD_SLOTS.iter().enumerate() {
                if i > 0 {
                    json.push(',');
                }
                match slot {
                    RecordSlot::Header => json.push_str(&r.header),
                    RecordSlot::Name => json.push_str(r.name.as_deref().unwrap_or("0")),
                    RecordSlot::Count => json.push_str(&r.count.to_string()),
                    RecordSlot::Activity => discovery::text::push_number(r.activity, json),
                    RecordSlot::Deferred => json.push_str(r.deferred.as_deref().unwrap_or("0")),
                    RecordSlot::FirstLength => json.push_str(&r.first_units.to_string()),
                    RecordSlot::AllLength => json.push_str(&r.all_units.to_string()),
                    RecordSlot::Keep => json.push(if *keep { '1' } else { '0' }),
                    RecordSlot::TextKey => {
                        json.push('"');
                        json.push_str(&listed.key());
                        json.push('"');
                    }
                }
            }
            json.push(']');
        }
    }
}

#[cfg(test)]
mod record_slot_tests {
    use super::*;

    #[test]
    fn slots_are_indexed_by_value() {
        for (i, slot) in RECORD_SLOTS.iter().enumerate() {
            assert_eq!(*slot as usize, i);
        }
    }
}

fn check(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(napi::Error::from_reason(format!(
            "pi-session-native: discovery result conversion failed ({status})"
        )))
    }
}

// Safety of the raw N-API calls below (`js_str`, `js_text`, `js_f64` and the
// `to_napi_value` impls): `env` is the live environment napi-rs passes to `to_napi_value`
// on the JS thread (the only callers); every pointer handed to N-API is either a borrowed
// Rust slice that outlives the call (`s.as_ptr()` with `s.len()`, which fits `isize` since
// Rust allocations never exceed `isize::MAX`) or a local out-parameter (`&mut v`); N-API
// copies the bytes before returning and writes only the out-parameter. Every status is
// checked, so a failed call never yields a null `napi_value` to JS.

/// A JS string of `s`: one-byte when ASCII, else decoded from UTF-8.
///
/// # Safety
/// `env` must be a live N-API environment on its JS thread (see above).
unsafe fn js_str(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    if s.is_ascii() {
        // A one-byte string: a plain copy (a listing's JSON is ASCII unless a header or a
        // name holds raw non-ASCII text).
        check(unsafe {
            sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut v)
        })?;
        return Ok(v);
    }
    check(unsafe {
        sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v)
    })?;
    Ok(v)
}

/// A JS string of a listing text (UTF-8 or UTF-16 with lone surrogates).
///
/// # Safety
/// As [`js_str`].
unsafe fn js_text(env: sys::napi_env, t: &Text) -> Result<sys::napi_value> {
    match t {
        Text::Utf8(s) if s.is_ascii() => {
            // One-byte strings: a plain copy (no UTF-8 decoding in V8).
            let mut v = std::ptr::null_mut();
            check(unsafe {
                sys::napi_create_string_latin1(env, s.as_ptr().cast(), s.len() as isize, &mut v)
            })?;
            Ok(v)
        }
        Text::Utf8(s) => unsafe { js_str(env, s) },
        Text::Utf16(u) => {
            let mut v = std::ptr::null_mut();
            check(unsafe {
                sys::napi_create_string_utf16(env, u.as_ptr(), u.len() as isize, &mut v)
            })?;
            Ok(v)
        }
    }
}

/// A JS number.
///
/// # Safety
/// As [`js_str`].
unsafe fn js_f64(env: sys::napi_env, n: f64) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    check(unsafe { sys::napi_create_double(env, n, &mut v) })?;
    Ok(v)
}

/// Test hook: `PI_SESSION_NATIVE_TEST_UNCONVERTIBLE=<session id>` makes that session's
/// record fail to convert to JS, as a text past V8's string length limit (~512 MiB) does,
/// so that tests reach the paths that handle it. Read once per process.
fn unconvertible(r: &Record) -> bool {
    static NEEDLE: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    NEEDLE
        .get_or_init(|| {
            std::env::var("PI_SESSION_NATIVE_TEST_UNCONVERTIBLE")
                .ok()
                .filter(|id| !id.is_empty())
                .map(|id| format!("\"id\":\"{id}\""))
        })
        .as_deref()
        .is_some_and(|needle| r.header.contains(needle))
}

/// V8's longest string (`v8::String::kMaxLength` on 64-bit): the reference's
/// `allMessages.join(" ")` throws past it and its buildSessionInfo answers `null`.
const MAX_JS_STRING: u64 = (1 << 29) - 24;

impl TypeName for DiscoveryResult {
    fn type_name() -> &'static str {
        "{ records: string; aborted: boolean; sent: number }"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for DiscoveryResult {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        let mut json = String::with_capacity(val.records.len() * 320 + 2);
        json.push('[');
        for (i, r) in val.records.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            push_out(&mut json, r);
        }
        json.push(']');
        drop(val.records);
        unsafe {
            let records = js_str(env, &json)?;
            drop(json);
            let mut obj = std::ptr::null_mut();
            check(sys::napi_create_object(env, &mut obj))?;
            check(sys::napi_set_named_property(
                env,
                obj,
                c"records".as_ptr(),
                records,
            ))?;
            let mut b = std::ptr::null_mut();
            check(sys::napi_get_boolean(env, val.aborted, &mut b))?;
            check(sys::napi_set_named_property(
                env,
                obj,
                c"aborted".as_ptr(),
                b,
            ))?;
            let sent = js_f64(env, f64::from(val.sent))?;
            check(sys::napi_set_named_property(
                env,
                obj,
                c"sent".as_ptr(),
                sent,
            ))?;
            Ok(obj)
        }
    }
}

pub struct ExtractTask {
    paths: Vec<String>,
    known: Vec<String>,
    pre: Option<(Arc<Vec<FileStat>>, Vec<u32>)>,
    index: IndexUse,
    abort: Arc<AtomicBool>,
    stream: Option<(RecordFn, Arc<Outbox>)>,
}

/// Stats of the files of a listing, taken once: their `mtimeMs` for the caller's sort, and
/// their stamps for [`discovery_extract`] (which would otherwise stat every file again).
#[napi]
pub struct DiscoveryStats {
    stats: Arc<Vec<FileStat>>,
}

#[napi]
impl DiscoveryStats {
    #[napi(constructor)]
    pub fn new(paths: Vec<String>) -> Self {
        DiscoveryStats {
            stats: Arc::new(listing::stat_all(&paths)),
        }
    }

    /// `fs.statSync(p).mtimeMs` per path (NaN when stat failed).
    #[napi(catch_unwind)]
    pub fn mtimes(&self) -> Vec<f64> {
        self.stats.iter().map(|s| s.mtime_ms).collect()
    }
}

impl Task for ExtractTask {
    type Output = DiscoveryResult;
    type JsValue = DiscoveryResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let paths = std::mem::take(&mut self.paths);
        let known = std::mem::take(&mut self.known);
        let stream = self.stream.take();
        let req = listing::Request {
            paths: &paths,
            known: &known,
            stats: self.pre.as_ref().map(|(s, o)| (s.as_slice(), o.as_slice())),
            index: self.index,
            abort: &self.abort,
        };
        // A failed call (the function is closing) leaves the file in the outbox, and so in
        // the task's result.
        let wake = || {
            if let Some((f, _)) = &stream {
                let _ = f.call((), ThreadsafeFunctionCallMode::NonBlocking);
            }
        };
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let outbox = stream
                .as_ref()
                .map(|(_, o)| (&**o, &wake as &(dyn Fn() + Sync)));
            listing::list(&req, outbox)
        }))
        .map_err(|_| napi::Error::from_reason("pi-session-native: discovery worker panicked"))?;
        // The function is released here; a call still queued drains nothing (the outbox is
        // closed).
        drop(stream);
        Ok(DiscoveryResult {
            records: out.outcomes,
            aborted: out.aborted,
            sent: out.sent,
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Extract discovery records for `paths` (in order) on worker threads.
///
/// `stats` and `order`: the stats the caller took of these files (`DiscoveryStats` of some
/// list), `paths[i]` being that list's `order[i]`; the files are not stat'ed again.
/// `onRecord` gets batches of finished records as the JSON text of `[index, record, ...]`.
#[napi(
    catch_unwind,
    ts_args_type = "paths: Array<string>, known: Array<string>, useIndex: boolean, abort: AbortFlag, onRecord?: ((batchJson: string) => unknown) | undefined | null, stats?: DiscoveryStats | undefined | null, order?: Array<number> | undefined | null",
    ts_return_type = "Promise<{ records: string; aborted: boolean; sent: number }>"
)]
pub fn discovery_extract(
    paths: Vec<String>,
    known: Vec<String>,
    use_index: bool,
    abort: &super::abort::AbortFlag,
    on_record: Option<Function<'_, Batch, Unknown<'static>>>,
    stats: Option<&DiscoveryStats>,
    order: Option<Vec<u32>>,
) -> Result<AsyncTask<ExtractTask>> {
    let stream = match on_record {
        Some(f) => {
            let outbox = Arc::new(Outbox::default());
            let drain = outbox.clone();
            let tsfn = f
                .build_threadsafe_function::<()>()
                .callee_handled::<false>()
                .build_callback(move |_ctx| Ok(Batch(drain.drain())))?;
            Some((tsfn, outbox))
        }
        None => None,
    };
    let pre = stats.map(|s| (s.stats.clone(), order.unwrap_or_default()));
    Ok(AsyncTask::new(ExtractTask {
        paths,
        known,
        pre,
        index: if use_index {
            IndexUse::Use
        } else {
            IndexUse::Skip
        },
        abort: abort.shared(),
        stream,
    }))
}

/// A text for JS: a string, or `null` when there is none.
pub struct TextOut(Option<Text>);

impl TypeName for TextOut {
    fn type_name() -> &'static str {
        "string | null"
    }
    fn value_type() -> ValueType {
        ValueType::String
    }
}

impl ToNapiValue for TextOut {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        match &val.0 {
            Some(t) => unsafe { js_text(env, t) },
            None => {
                let mut null = std::ptr::null_mut();
                check(unsafe { sys::napi_get_null(env, &mut null) })?;
                Ok(null)
            }
        }
    }
}

/// Which text of a listed session [`discovery_text`] reads (numeric: JS indexes its kept
/// texts by it).
#[napi]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListedText {
    FirstMessage = 0,
    AllMessagesText = 1,
}

/// A listed session's `firstMessage` text (`ListedText.FirstMessage`, before `|| "(no messages)"`) or
/// `allMessagesText` (`ListedText.AllMessagesText`), read when a caller first reads it: the bytes the listing
/// saw (`key`, from the record), or what the file holds now if it was rewritten since
/// ([`discovery::texts_as_listed`]); `null` when it is gone or no longer a session. A text
/// past V8's string length limit is an error (the listing left such a session out).
#[napi(catch_unwind)]
pub fn discovery_text(path: String, key: String, which: ListedText) -> Result<TextOut> {
    let listed = Listed::parse(&key);
    let Some(t) = discovery::texts_as_listed(Path::new(&path), listed.as_ref()) else {
        return Ok(TextOut(None));
    };
    let text = if which == ListedText::FirstMessage {
        match t.first {
            First::Text(f) => f,
            First::Prefix(n) => t.all.prefix(n),
        }
    } else {
        t.all
    };
    if text.units() > MAX_JS_STRING {
        return Err(napi::Error::from_reason(
            "pi-session-native: session text longer than a JS string can be",
        ));
    }
    Ok(TextOut(Some(text)))
}

/// A header found by [`discovery_find_header`].
#[napi(object)]
pub struct FoundHeader {
    /// Index in the paths given.
    pub index: u32,
    /// The header line (`JSON.parse` it).
    pub header: String,
}

/// The first of `paths` whose session header has the id `id` (`findById`'s scan, in
/// order; see [`discovery::find_header`]), or `null`.
#[napi(catch_unwind)]
pub fn discovery_find_header(paths: Vec<String>, id: String) -> Option<FoundHeader> {
    discovery::find_header(&paths, &id).map(|(i, header)| FoundHeader {
        index: u32::try_from(i).unwrap_or(u32::MAX),
        header,
    })
}
