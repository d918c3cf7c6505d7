//! Session discovery binding: a sync bounded header read and an async batch extraction
//! that runs on a small std thread pool off the event loop and returns all records at once.

use crate::discovery::text::Text;
use crate::discovery::{self, First, Header, Listed, Record, index};
use napi::bindgen_prelude::{AsyncTask, Function, ToNapiValue, TypeName, Unknown, ValueType};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Result, Status, Task, sys};
use napi_derive::napi;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// `readSessionHeader` outcome: `"F" + line` header found (JSON.parse the rest), `"N"` no
/// header, `"L"` scan limit exceeded, `"E"` I/O error (the JS layer re-raises it).
#[napi(catch_unwind)]
pub fn discovery_read_header(path: String) -> String {
    match discovery::read_header(Path::new(&path)) {
        Ok(Header::Found(line)) => {
            let mut s = String::with_capacity(line.len() + 1);
            s.push('F');
            s.push_str(&line);
            s
        }
        Ok(Header::None) => "N".into(),
        Ok(Header::Limit) => "L".into(),
        Err(_) => "E".into(),
    }
}

/// A cancellation flag shared with running extraction tasks.
#[napi]
pub struct DiscoveryAbort {
    flag: Arc<AtomicBool>,
}

#[napi]
impl DiscoveryAbort {
    #[napi(constructor)]
    pub fn new() -> Self {
        DiscoveryAbort {
            flag: Arc::new(AtomicBool::new(false)),
        }
    }

    #[napi(catch_unwind)]
    pub fn abort(&self) {
        self.flag.store(true, Ordering::SeqCst);
    }
}

impl Default for DiscoveryAbort {
    fn default() -> Self {
        Self::new()
    }
}

/// Records in input order (`None`: not a session / unreadable) and whether it was aborted.
/// In JS: `{ records, aborted }`, each record `null` or
/// `[header JSON, name literal | undefined, count, activity, deferred JSON | undefined,
/// firstMessage length, allMessagesText length, stamp key | undefined, text key]`, or `true`
/// when the caller's `known` stamp key still matches. The texts are not in it: JS asks
/// [`discovery_text`] with the text key when a caller reads one.
pub struct DiscoveryResult {
    records: Vec<Out>,
    aborted: bool,
    /// How many records went to the `onRecord` callback instead (their slots are `false`).
    sent: u32,
}

/// `onRecord(batch)`: finished files as a flat `[index, record, index, record, ...]` array.
type RecordFn = ThreadsafeFunction<(), Unknown<'static>, Batch, Status, false>;

/// Finished files on their way to JS while the workers run.
///
/// Workers push each finished file here and queue one call of the thread-safe function if
/// none is pending; the call, when the JS thread runs it, takes everything gathered so far.
/// So at most one call waits in the queue, and the event loop gets a turn between batches
/// (one queued call per file kept Node's dispatcher busy for the whole pass, starving
/// timers, when JS converted records more slowly than 2 workers produced them).
#[derive(Default)]
struct Outbox {
    state: Mutex<OutboxState>,
}

#[derive(Default)]
struct OutboxState {
    items: Vec<(u32, Out)>,
    /// A call is queued and has not drained yet.
    pending: bool,
    /// The pass is over: what is left goes back in the task's result.
    closed: bool,
    /// Indices handed to JS.
    drained: Vec<u32>,
}

impl Outbox {
    /// Add a finished file; `true` when the caller must queue a call.
    fn push(&self, i: usize, o: &Out) -> bool {
        let Ok(mut st) = self.state.lock() else {
            return false;
        };
        if st.closed {
            return false;
        }
        st.items
            .push((u32::try_from(i).unwrap_or(u32::MAX), o.clone()));
        !std::mem::replace(&mut st.pending, true)
    }

    /// On the JS thread: everything gathered since the last drain.
    fn drain(&self) -> Vec<(u32, Out)> {
        let Ok(mut st) = self.state.lock() else {
            return Vec::new();
        };
        st.pending = false;
        if st.closed {
            return Vec::new();
        }
        let items = std::mem::take(&mut st.items);
        st.drained.extend(items.iter().map(|(i, _)| *i));
        items
    }

    /// End of the pass: the indices JS already has (the rest stay in the task's result).
    fn close(&self) -> Vec<u32> {
        match self.state.lock() {
            Ok(mut st) => {
                st.closed = true;
                st.items.clear();
                std::mem::take(&mut st.drained)
            }
            Err(_) => Vec::new(),
        }
    }
}

/// A drained batch as one JS array. A record that fails to convert becomes `undefined`
/// (JS lists that file again) rather than failing the call, which N-API would raise as an
/// uncaught exception.
pub struct Batch(Vec<(u32, Out)>);

impl ToNapiValue for Batch {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        unsafe {
            let (undef, arr) = undefined_and_array(env, val.0.len() * 2)?;
            for (k, (i, o)) in val.0.iter().enumerate() {
                let idx = js_f64(env, f64::from(*i))?;
                let rec = js_out(env, o, undef).unwrap_or(undef);
                check(sys::napi_set_element(env, arr, (2 * k) as u32, idx))?;
                check(sys::napi_set_element(env, arr, (2 * k + 1) as u32, rec))?;
            }
            Ok(arr)
        }
    }
}

/// A record array, `true` (unchanged) or `null` (not a session); `false` (sent) never
/// travels through here.
unsafe fn js_out(env: sys::napi_env, o: &Out, undef: sys::napi_value) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    unsafe {
        match o {
            Out::Rec(r, key, listed) => return js_record(env, r, key, listed, undef),
            Out::Same => check(sys::napi_get_boolean(env, true, &mut v))?,
            Out::Sent => check(sys::napi_get_boolean(env, false, &mut v))?,
            Out::None => check(sys::napi_get_null(env, &mut v))?,
        }
    }
    Ok(v)
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

unsafe fn js_str(env: sys::napi_env, s: &str) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    check(unsafe {
        sys::napi_create_string_utf8(env, s.as_ptr().cast(), s.len() as isize, &mut v)
    })?;
    Ok(v)
}

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

/// `undefined` and a new array of `len` slots: what every record list starts from.
unsafe fn undefined_and_array(
    env: sys::napi_env,
    len: usize,
) -> Result<(sys::napi_value, sys::napi_value)> {
    let mut undef = std::ptr::null_mut();
    check(unsafe { sys::napi_get_undefined(env, &mut undef) })?;
    let mut arr = std::ptr::null_mut();
    check(unsafe { sys::napi_create_array_with_length(env, len, &mut arr) })?;
    Ok((undef, arr))
}

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

unsafe fn js_record(
    env: sys::napi_env,
    r: &Record,
    key: &Option<String>,
    listed: &Listed,
    undef: sys::napi_value,
) -> Result<sys::napi_value> {
    if unconvertible(r) || r.all_units > MAX_JS_STRING {
        return Err(napi::Error::new(
            Status::GenericFailure,
            "record does not convert to JS".to_string(),
        ));
    }
    let mut arr = std::ptr::null_mut();
    check(unsafe { sys::napi_create_array_with_length(env, 9, &mut arr) })?;
    let vals = unsafe {
        [
            js_str(env, &r.header)?,
            match &r.name {
                Some(n) => js_str(env, n)?,
                None => undef,
            },
            js_f64(env, r.count as f64)?,
            js_f64(env, r.activity)?,
            match &r.deferred {
                Some(d) => js_str(env, d)?,
                None => undef,
            },
            js_f64(env, r.first_units as f64)?,
            js_f64(env, r.all_units as f64)?,
            match key {
                Some(k) => js_str(env, k)?,
                None => undef,
            },
            js_str(env, &listed.key())?,
        ]
    };
    for (i, v) in vals.into_iter().enumerate() {
        check(unsafe { sys::napi_set_element(env, arr, i as u32, v) })?;
    }
    Ok(arr)
}

impl TypeName for DiscoveryResult {
    fn type_name() -> &'static str {
        "{ records: Array<[string, string | undefined, number, number, string | undefined, number, number, string | undefined, string] | boolean | null>; aborted: boolean; sent: number }"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for DiscoveryResult {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        unsafe {
            let (undef, arr) = undefined_and_array(env, val.records.len())?;
            // Each record is dropped once it is a JS value: the texts are not held twice
            // (Rust and V8) for the whole listing, which halves the peak for a large store.
            for (i, r) in val.records.into_iter().enumerate() {
                // A record that cannot be a JS value (a text past V8's string length limit)
                // is `null`, as the reference's buildSessionInfo answers for that file; the
                // rest of the listing stands.
                let v = match js_out(env, &r, undef) {
                    Ok(v) => v,
                    Err(_) => {
                        let mut null = std::ptr::null_mut();
                        check(sys::napi_get_null(env, &mut null))?;
                        null
                    }
                };
                drop(r);
                check(sys::napi_set_element(env, arr, i as u32, v))?;
            }
            let mut obj = std::ptr::null_mut();
            check(sys::napi_create_object(env, &mut obj))?;
            check(sys::napi_set_named_property(
                env,
                obj,
                c"records".as_ptr(),
                arr,
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
    use_index: bool,
    abort: Arc<AtomicBool>,
    stream: Option<(RecordFn, Arc<Outbox>)>,
}

fn split(path: &str) -> (PathBuf, String) {
    let p = Path::new(path);
    let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}

/// One file's outcome.
#[derive(Clone)]
enum Out {
    /// Not a session / unreadable.
    None,
    /// Unchanged since the caller's previous listing (its stamp key matched).
    Same,
    /// A record, with its stamp key when the caller may reuse it later, and what was
    /// listed (for reading its texts later).
    Rec(Arc<Record>, Option<String>, Listed),
    /// Already handed to the caller's `onRecord` callback.
    Sent,
}

/// How far a file still being written may grow past its cached resume base before the
/// base is moved up (which rewrites the directory's index).
const REBASE_BYTES: u64 = 4 << 20;

/// Files whose cached record was resumed instead of re-read (process total, for profiling).
static RESUMED: AtomicUsize = AtomicUsize::new(0);

fn stamp_key(s: &index::Stamp) -> String {
    format!("{}:{}:{}:{}", s.size, s.mtime_ns, s.ctime_ns, s.ino)
}

/// Hands one finished file to JS as it completes.
type Send<'a> = &'a (dyn Fn(usize, &Out) + Sync);

fn run(
    paths: &[String],
    known: &[String],
    use_index: bool,
    abort: &AtomicBool,
    send: Option<Send<'_>>,
) -> (Vec<Out>, bool) {
    let prof = std::env::var_os("PI_SESSION_NATIVE_PROFILE").is_some();
    let t0 = std::time::Instant::now();
    let start_ns = index::now_ns();
    let n = paths.len();
    let stamps: Vec<Option<index::Stamp>> = paths
        .iter()
        .map(|p| {
            std::fs::metadata(p)
                .ok()
                .filter(|m| m.is_file())
                // Nothing is answered (from the index or the caller's copy) for a file this
                // process cannot read: the reference skips those.
                .filter(|_| crate::safefs::readable(Path::new(p)))
                .map(|m| index::Stamp::of(&m))
        })
        .collect();
    let t_stat = t0.elapsed();
    let same: Vec<bool> = (0..n)
        .map(|i| match (&stamps[i], known.get(i)) {
            (Some(st), Some(k)) if !k.is_empty() => *k == stamp_key(st),
            _ => false,
        })
        .collect();
    let parts: Vec<(PathBuf, String)> = paths.iter().map(|p| split(p)).collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut dir_of: Vec<usize> = Vec::with_capacity(n);
    let mut dir_needed: Vec<bool> = Vec::new();
    {
        let mut seen: HashMap<&Path, usize> = HashMap::new();
        for (i, (d, _)) in parts.iter().enumerate() {
            let k = *seen.entry(d.as_path()).or_insert_with(|| {
                dirs.push(d.clone());
                dir_needed.push(false);
                dirs.len() - 1
            });
            dir_of.push(k);
            if !same[i] {
                dir_needed[k] = true;
            }
        }
    }
    // Only directories with files the caller does not already hold need their index.
    let old: Vec<HashMap<String, index::Cached>> = {
        let slots: Vec<Mutex<HashMap<String, index::Cached>>> =
            dirs.iter().map(|_| Mutex::new(HashMap::new())).collect();
        let next = AtomicUsize::new(0);
        let todo: Vec<usize> = (0..dirs.len())
            .filter(|&k| use_index && dir_needed[k])
            .collect();
        let load = || {
            loop {
                let j = next.fetch_add(1, Ordering::Relaxed);
                let Some(&k) = todo.get(j) else { return };
                // The index may only be as large as the files it covers make plausible.
                let bound = index::size_bound(
                    (0..n)
                        .filter(|&i| dir_of[i] == k)
                        .map(|i| stamps[i].map_or(0, |s| s.size)),
                );
                let m = index::load(&dirs[k], bound);
                if let Ok(mut slot) = slots[k].lock() {
                    *slot = m;
                }
            }
        };
        std::thread::scope(|s| {
            for _ in 1..todo.len().min(2) {
                s.spawn(load);
            }
            load();
        });
        slots
            .into_iter()
            .map(|m| m.into_inner().unwrap_or_default())
            .collect()
    };
    let t_load = t0.elapsed();

    let results: Mutex<Vec<(Out, Option<index::Cached>, bool)>> =
        Mutex::new((0..n).map(|_| (Out::None, None, false)).collect());
    // Largest files first, so one big session does not finish alone at the end.
    let mut order: Vec<usize> = (0..n).filter(|&i| !same[i]).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(stamps[i].map_or(0, |s| s.size)));
    if let Ok(mut r) = results.lock() {
        for (i, slot) in r.iter_mut().enumerate() {
            if same[i] {
                slot.0 = Out::Same;
            }
        }
    }
    let next = AtomicUsize::new(0);
    let aborted = AtomicBool::new(false);
    // Files the caller already holds complete at once (in index order, before the rest).
    if let Some(f) = send {
        for i in (0..n).filter(|&i| same[i]) {
            f(i, &Out::Same);
        }
    }
    let threads = std::thread::available_parallelism()
        .map(|v| v.get())
        .unwrap_or(2)
        .clamp(1, 4)
        .min(order.len().max(1));
    let worker = || {
        loop {
            if abort.load(Ordering::Relaxed) {
                aborted.store(true, Ordering::Relaxed);
                return;
            }
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(&i) = order.get(k) else {
                return;
            };
            let res = one(
                &paths[i],
                stamps[i],
                old.get(dir_of[i]).and_then(|m| m.get(&parts[i].1)),
                use_index,
                start_ns,
                abort,
            );
            if abort.load(Ordering::Relaxed) {
                aborted.store(true, Ordering::Relaxed);
                return;
            }
            if let Some(f) = send {
                f(i, &res.0);
            }
            if let Ok(mut r) = results.lock()
                && let Some(slot) = r.get_mut(i)
            {
                *slot = res;
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 1..threads {
            s.spawn(worker);
        }
        worker();
    });
    let results = results.into_inner().unwrap_or_default();
    let t_work = t0.elapsed();
    let was_aborted = aborted.load(Ordering::Relaxed);
    if use_index && !was_aborted {
        for (k, dir) in dirs.iter().enumerate() {
            if !dir_needed[k] {
                continue;
            }
            let mut changed = false;
            let mut kept = 0usize;
            let mut entries: Vec<(&str, &index::Cached)> = Vec::new();
            for (i, (_, cached, hit)) in results.iter().enumerate() {
                if dir_of[i] != k {
                    continue;
                }
                if let Some(c) = cached {
                    entries.push((parts[i].1.as_str(), c));
                    if *hit {
                        kept += 1;
                    } else {
                        changed = true;
                    }
                }
            }
            // Entries of files the caller held are not in `results`: keep them as they were.
            let held: Vec<(&str, &index::Cached)> = (0..n)
                .filter(|&i| dir_of[i] == k && same[i])
                .filter_map(|i| old[k].get(&parts[i].1).map(|c| (parts[i].1.as_str(), c)))
                .collect();
            kept += held.len();
            entries.extend(held);
            if changed || kept != old[k].len() {
                index::store(dir, entries.into_iter());
            }
        }
    }
    if prof {
        eprintln!(
            "discovery(rust): {n} files, {} dirs: stat {:?}, index load {:?}, files {:?}, index store {:?}, resumed so far {}",
            dirs.len(),
            t_stat,
            t_load - t_stat,
            t_work - t_load,
            t0.elapsed() - t_work,
            RESUMED.load(Ordering::Relaxed)
        );
    }
    (
        results.into_iter().map(|(r, _, _)| r).collect(),
        was_aborted,
    )
}

/// One file: (outcome, cache entry to keep, whether it came from the cache).
fn one(
    path: &str,
    stamp: Option<index::Stamp>,
    old: Option<&index::Cached>,
    use_index: bool,
    start_ns: i128,
    abort: &AtomicBool,
) -> (Out, Option<index::Cached>, bool) {
    let Some(stamp) = stamp else {
        return (Out::None, None, false);
    };
    let cacheable = index::cacheable(&stamp, start_ns);
    let out = |r: &Option<Arc<Record>>, fp: Option<u64>| match r {
        Some(r) => Out::Rec(
            r.clone(),
            (use_index && cacheable).then(|| stamp_key(&stamp)),
            Listed { stamp, fp },
        ),
        None => Out::None,
    };
    if let Some(c) = old
        && c.exact
        && c.stamp == stamp
    {
        return (out(&c.record, c.resume), Some(c.clone()), true);
    }
    let check = || abort.load(Ordering::Relaxed);
    // Without blocking (a FIFO), and only a regular file (a device never ends): anything
    // else is skipped, as an unreadable file is.
    let Ok(opened) = crate::safefs::open_regular(Path::new(path), true) else {
        return (Out::None, None, false);
    };
    let file = opened.file;
    // Never read past the size the file had when stamped (or opened, if smaller): a record
    // that will be cached describes exactly the bytes its stamp counts.
    let limit = Some(if use_index {
        stamp.size.min(opened.size)
    } else {
        opened.size
    });
    // Also without the index: a text read later checks the listed bytes with it.
    let fingerprint = discovery::resume::fingerprint(&file, stamp.size);
    // Exact entries for settled files; a resume base for the others (pi's active session).
    let keep = use_index && (cacheable || fingerprint.is_some());
    // The same file grown since its cached record, with that record's bytes unchanged
    // (fingerprint): read only what was appended. A file of the same size is read whole: a
    // same-size rewrite within the clock's granularity keeps every stamp, so a resume base
    // (a file modified within a second of its listing) of the same size proves nothing.
    let grown = old.filter(|c| {
        use_index && c.stamp.ino == stamp.ino && c.stamp.size < stamp.size && c.resume.is_some()
    });
    let resumable = grown.and_then(|c| {
        let rec = c.record.as_ref()?;
        (discovery::resume::fingerprint(&file, c.stamp.size) == c.resume).then_some((rec, c))
    });
    let result = match resumable {
        Some((rec, c)) => {
            RESUMED.fetch_add(1, Ordering::Relaxed);
            let r = discovery::resume::extract_after(file, rec, c.stamp.size, limit, &check);
            // A file still being written keeps its base while it has grown little: the
            // index (which holds every record of the directory) is not rewritten at each
            // listing for a few appended lines, which the next listing reads again.
            if !cacheable && stamp.size - c.stamp.size <= REBASE_BYTES {
                return match r {
                    Ok(r) => (out(&Some(Arc::new(r)), fingerprint), Some(c.clone()), true),
                    Err(_) => (Out::None, None, false),
                };
            }
            r.map(Some)
        }
        None => discovery::extract_file(file, limit, &check),
    };
    match result {
        Ok(record) => {
            let record = record.map(Arc::new);
            let cached = keep.then(|| index::Cached {
                stamp,
                record: record.clone(),
                resume: fingerprint,
                exact: cacheable,
            });
            (out(&record, fingerprint), cached, false)
        }
        Err(_) => (Out::None, None, false),
    }
}

impl Task for ExtractTask {
    type Output = DiscoveryResult;
    type JsValue = DiscoveryResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let paths = std::mem::take(&mut self.paths);
        let known = std::mem::take(&mut self.known);
        let abort = self.abort.clone();
        let use_index = self.use_index;
        let stream = self.stream.take();
        let send = |i: usize, o: &Out| {
            if let Some((f, outbox)) = &stream
                && outbox.push(i, o)
            {
                // A failed call (the function is closing) leaves the file in the outbox,
                // and so in the task's result.
                let _ = f.call((), ThreadsafeFunctionCallMode::NonBlocking);
            }
        };
        let (mut records, aborted) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let send: Option<Send<'_>> = if stream.is_some() { Some(&send) } else { None };
            run(&paths, &known, use_index, &abort, send)
        }))
        .map_err(|_| napi::Error::from_reason("pi-session-native: discovery worker panicked"))?;
        let mut sent = 0u32;
        if let Some((f, outbox)) = stream {
            for i in outbox.close() {
                if let Some(slot) = records.get_mut(i as usize) {
                    *slot = Out::Sent;
                    sent += 1;
                }
            }
            // Released here; a call still queued drains nothing (the outbox is closed).
            drop(f);
        }
        Ok(DiscoveryResult {
            records,
            aborted,
            sent,
        })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// `fs.statSync(p).mtimeMs` for each path (NaN when stat fails), computed as Node does
/// (`sec * 1e3 + nsec / 1e6`).
#[napi(catch_unwind)]
pub fn discovery_mtimes(paths: Vec<String>) -> Vec<f64> {
    paths
        .iter()
        .map(|p| match std::fs::metadata(p) {
            #[cfg(unix)]
            Ok(md) => {
                use std::os::unix::fs::MetadataExt;
                md.mtime() as f64 * 1e3 + md.mtime_nsec() as f64 / 1e6
            }
            #[cfg(not(unix))]
            Ok(md) => md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3),
            Err(_) => f64::NAN,
        })
        .collect()
}

/// Extract discovery records for `paths` (in order) on worker threads.
#[napi(catch_unwind)]
pub fn discovery_extract(
    paths: Vec<String>,
    known: Vec<String>,
    use_index: bool,
    abort: &DiscoveryAbort,
    on_record: Option<Function<'_, Batch, Unknown<'static>>>,
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
    Ok(AsyncTask::new(ExtractTask {
        paths,
        known,
        use_index,
        abort: abort.flag.clone(),
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

/// A listed session's `firstMessage` text (`which` 0, before `|| "(no messages)"`) or
/// `allMessagesText` (`which` 1), read when a caller first reads it: the bytes the listing
/// saw (`key`, from the record), or what the file holds now if it was rewritten since
/// ([`discovery::texts_as_listed`]); `null` when it is gone or no longer a session. A text
/// past V8's string length limit is an error (the listing left such a session out).
#[napi(catch_unwind)]
pub fn discovery_text(path: String, key: String, which: u32) -> Result<TextOut> {
    let listed = Listed::parse(&key);
    let Some(t) = discovery::texts_as_listed(Path::new(&path), listed.as_ref()) else {
        return Ok(TextOut(None));
    };
    let text = if which == 0 {
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
