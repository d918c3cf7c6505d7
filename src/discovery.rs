//! Session discovery binding: a sync bounded header read and an async batch extraction
//! that runs on a small std thread pool off the event loop and returns all records at once.

use napi::bindgen_prelude::{AsyncTask, Function, ToNapiValue, TypeName, Unknown, ValueType};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Result, Status, Task, sys};
use napi_derive::napi;
use pi_session_core::discovery::text::Text;
use pi_session_core::discovery::{self, First, Header, Listed, Record, index};
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

/// Records in input order (`None`: not a session / unreadable) and whether it was aborted.
/// In JS: `{ records, aborted, sent }`, `records` the JSON text of an array of records as
/// [`push_out`] writes them (`true` when the caller's `known` key still matches the file's
/// stamp). The texts are not in it: JS asks [`discovery_text`] with the text key when a
/// caller reads one.
pub struct DiscoveryResult {
    records: Vec<Out>,
    aborted: bool,
    /// How many records went to the `onRecord` callback instead (their slots are `false`).
    sent: u32,
}

/// `onRecord(batch)`: finished files as the JSON text of `[index, record, index, record, ...]`.
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

/// A drained batch as one JSON text for JS: `[index, record, index, record, ...]`, records
/// as in [`push_out`].
pub struct Batch(Vec<(u32, Out)>);

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

/// One file's outcome as JSON: `null` (not a session, or a record JS cannot hold: a text
/// past V8's string length limit, which the reference's buildSessionInfo answers `null`
/// for), `true` (unchanged since the caller's copy), `false` (already sent), or
/// `[header object, name literal | 0, count, activity, deferred timestamps | 0,
/// firstMessage length, allMessagesText length, 1 if the caller may keep it | 0, text key]`.
/// Raw JSON values of the file are embedded verbatim: `JSON.parse` gives the reference's
/// values exactly (lone surrogates included). One JSON text for a whole listing costs a
/// fraction of building its records value by value through N-API.
fn push_out(json: &mut String, o: &Out) {
    match o {
        Out::None => json.push_str("null"),
        Out::Same => json.push_str("true"),
        Out::Sent => json.push_str("false"),
        Out::Rec(r, _, _) if unconvertible(r) || r.all_units > MAX_JS_STRING => {
            json.push_str("null")
        }
        Out::Rec(r, keep, listed) => {
            json.push('[');
            json.push_str(&r.header);
            json.push(',');
            json.push_str(r.name.as_deref().unwrap_or("0"));
            json.push(',');
            json.push_str(&r.count.to_string());
            json.push(',');
            discovery::text::push_number(r.activity, json);
            json.push(',');
            json.push_str(r.deferred.as_deref().unwrap_or("0"));
            json.push(',');
            json.push_str(&r.first_units.to_string());
            json.push(',');
            json.push_str(&r.all_units.to_string());
            json.push_str(if *keep { ",1,\"" } else { ",0,\"" });
            json.push_str(&listed.key());
            json.push_str("\"]");
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
    /// A record, whether the caller may keep it (and answer the same stamp with it later),
    /// and what was listed (for reading its texts later; its key is the stamp's too).
    Rec(Arc<Record>, bool, Listed),
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

/// One `stat` of a listed path.
#[derive(Clone, Copy)]
pub struct FileStat {
    /// `fs.statSync(p).mtimeMs` (NaN: stat failed).
    mtime_ms: f64,
    /// The stamp of a regular file this process can read; nothing is answered (from the
    /// index or the caller's copy) for others: the reference skips those.
    stamp: Option<index::Stamp>,
}

fn stat_one(p: &str) -> FileStat {
    let Ok(md) = std::fs::metadata(p) else {
        return FileStat {
            mtime_ms: f64::NAN,
            stamp: None,
        };
    };
    FileStat {
        mtime_ms: mtime_ms(&md),
        stamp: (md.is_file() && readable(Path::new(p), &md)).then(|| index::Stamp::of(&md)),
    }
}

/// Whether this process may read the file: decided by the mode for the owner (its class
/// always applies, ACLs included), asked of the kernel (`access`) otherwise.
fn readable(p: &Path, md: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let euid = pi_session_core::safefs::euid();
        // Root reads what its mode refuses (capabilities): asked, as for other owners.
        if euid != 0 && md.uid() == euid {
            return md.mode() & 0o400 != 0;
        }
    }
    #[cfg(not(unix))]
    let _ = md;
    pi_session_core::safefs::readable(p)
}

/// `fs.statSync(p).mtimeMs`, as Node computes it (`sec * 1e3 + nsec / 1e6`).
fn mtime_ms(md: &std::fs::Metadata) -> f64 {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        md.mtime() as f64 * 1e3 + md.mtime_nsec() as f64 / 1e6
    }
    #[cfg(not(unix))]
    {
        md.modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(f64::NAN, |d| d.as_secs_f64() * 1e3)
    }
}

/// Stats of consecutive paths, each directory opened once: a file is stat'ed by name
/// relative to its directory (`fstatat`), not by walking its whole path again (half the
/// cost of a stat here). What is asked is the same: the final name is followed as `stat`
/// follows it. A directory that cannot be opened falls back to whole paths.
#[cfg(unix)]
fn stat_run(paths: &[String]) -> Vec<FileStat> {
    use rustix::fs::{AtFlags, OFlags};
    let mut out = Vec::with_capacity(paths.len());
    let mut dir: Option<(&str, Option<std::os::fd::OwnedFd>)> = None;
    for p in paths {
        let Some((d, name)) = p.rsplit_once('/').filter(|(_, n)| !n.is_empty()) else {
            out.push(stat_one(p));
            continue;
        };
        if dir.as_ref().is_none_or(|(cur, _)| *cur != d) {
            let at = if d.is_empty() { "/" } else { d };
            // O_PATH needs no read permission, where the platform has it.
            #[cfg(any(target_os = "linux", target_os = "android"))]
            let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
            #[cfg(not(any(target_os = "linux", target_os = "android")))]
            let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
            let fd = rustix::fs::open(at, flags, rustix::fs::Mode::empty()).ok();
            dir = Some((d, fd));
        }
        let Some((_, Some(fd))) = &dir else {
            out.push(stat_one(p));
            continue;
        };
        let Ok(st) = rustix::fs::statat(fd, name, AtFlags::empty()) else {
            out.push(FileStat {
                mtime_ms: f64::NAN,
                stamp: None,
            });
            continue;
        };
        let regular =
            rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::RegularFile;
        let f = RawStat::of(&st);
        let euid = pi_session_core::safefs::euid();
        let readable = regular
            && if euid != 0 && f.uid == euid {
                f.mode & 0o400 != 0
            } else {
                rustix::fs::accessat(fd, name, rustix::fs::Access::READ_OK, AtFlags::empty())
                    .is_ok()
            };
        out.push(FileStat {
            mtime_ms: f.mtime as f64 * 1e3 + f.mtime_nsec as f64 / 1e6,
            stamp: readable.then(|| index::Stamp {
                size: f.size,
                mtime_ns: i128::from(f.mtime) * 1_000_000_000 + i128::from(f.mtime_nsec),
                ctime_ns: i128::from(f.ctime) * 1_000_000_000 + i128::from(f.ctime_nsec),
                ino: f.ino,
            }),
        });
    }
    out
}

/// The fields of a `stat` used here, in one width whatever the platform's (`st_mode` is 16
/// bits on macOS, the nanoseconds signed or not).
#[cfg(unix)]
struct RawStat {
    mode: u32,
    uid: u32,
    size: u64,
    mtime: i64,
    mtime_nsec: i64,
    ctime: i64,
    ctime_nsec: i64,
    ino: u64,
}

#[cfg(unix)]
impl RawStat {
    // The casts are conversions on some platforms and no-ops on others.
    #[allow(clippy::unnecessary_cast)]
    fn of(st: &rustix::fs::Stat) -> RawStat {
        RawStat {
            mode: st.st_mode as u32,
            uid: st.st_uid as u32,
            size: st.st_size as u64,
            mtime: st.st_mtime as i64,
            mtime_nsec: st.st_mtime_nsec as i64,
            ctime: st.st_ctime as i64,
            ctime_nsec: st.st_ctime_nsec as i64,
            ino: st.st_ino as u64,
        }
    }
}

#[cfg(not(unix))]
fn stat_run(paths: &[String]) -> Vec<FileStat> {
    paths.iter().map(|p| stat_one(p)).collect()
}

/// [`stat_run`] for every path, on two threads for a large listing (a stat is a few
/// microseconds; 10,000 of them are most of a warm listing).
fn stat_all(paths: &[String]) -> Vec<FileStat> {
    if paths.len() < 512 {
        return stat_run(paths);
    }
    let (a, b) = paths.split_at(paths.len() / 2);
    std::thread::scope(|s| {
        let h = s.spawn(|| stat_run(b));
        let mut out = stat_run(a);
        match h.join() {
            Ok(rest) => out.extend(rest),
            Err(_) => out.extend(stat_run(b)),
        }
        out
    })
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
            stats: Arc::new(stat_all(&paths)),
        }
    }

    /// `fs.statSync(p).mtimeMs` per path (NaN when stat failed).
    #[napi(catch_unwind)]
    pub fn mtimes(&self) -> Vec<f64> {
        self.stats.iter().map(|s| s.mtime_ms).collect()
    }
}

/// Hands one finished file to JS as it completes.
type Send<'a> = &'a (dyn Fn(usize, &Out) + Sync);

fn run(
    paths: &[String],
    known: &[String],
    pre: Option<(&[FileStat], &[u32])>,
    use_index: bool,
    abort: &AtomicBool,
    send: Option<Send<'_>>,
) -> (Vec<Out>, bool) {
    let prof = std::env::var_os("PI_SESSION_NATIVE_PROFILE").is_some();
    let t0 = std::time::Instant::now();
    let start_ns = index::now_ns();
    let n = paths.len();
    let stamps: Vec<Option<index::Stamp>> = match pre {
        // Taken by the caller a moment ago (listAll sorts by them first).
        Some((stats, order)) => (0..n)
            .map(|i| {
                let k = order.get(i).map_or(i, |&k| k as usize);
                stats.get(k).and_then(|s| s.stamp)
            })
            .collect(),
        None => stat_all(paths).into_iter().map(|s| s.stamp).collect(),
    };
    let t_stat = t0.elapsed();
    let same: Vec<bool> = (0..n)
        .map(|i| match (&stamps[i], known.get(i)) {
            // The caller's key is a text key (`Listed::key`): the stamp, then ':' + fp.
            (Some(st), Some(k)) if !k.is_empty() => {
                k.rsplit_once(':').is_some_and(|(k, _)| k == stamp_key(st))
            }
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
        Some(r) => Out::Rec(r.clone(), use_index && cacheable, Listed { stamp, fp }),
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
    let Ok(opened) = pi_session_core::safefs::open_regular(Path::new(path), true) else {
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
            let pre = self.pre.as_ref().map(|(s, o)| (s.as_slice(), o.as_slice()));
            run(&paths, &known, pre, use_index, &abort, send)
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
    stat_all(&paths).iter().map(|s| s.mtime_ms).collect()
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
        use_index,
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
