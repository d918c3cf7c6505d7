//! Session discovery binding: a sync bounded header read and an async batch extraction
//! that runs on a small std thread pool off the event loop and returns all records at once.

use crate::discovery::text::Text;
use crate::discovery::{self, First, Header, Record, index};
use napi::bindgen_prelude::{AsyncTask, ToNapiValue, TypeName, ValueType};
use napi::{Env, Result, Task, sys};
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
/// firstMessage (string, or its length as a prefix of allMessagesText), allMessagesText,
/// stamp key | undefined]`, or `true` when the caller's `known` stamp key still matches.
pub struct DiscoveryResult {
    records: Vec<Out>,
    aborted: bool,
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

unsafe fn js_f64(env: sys::napi_env, n: f64) -> Result<sys::napi_value> {
    let mut v = std::ptr::null_mut();
    check(unsafe { sys::napi_create_double(env, n, &mut v) })?;
    Ok(v)
}

unsafe fn js_record(
    env: sys::napi_env,
    r: &Record,
    key: &Option<String>,
    undef: sys::napi_value,
) -> Result<sys::napi_value> {
    let mut arr = std::ptr::null_mut();
    check(unsafe { sys::napi_create_array_with_length(env, 8, &mut arr) })?;
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
            match &r.first {
                First::Text(t) => js_text(env, t)?,
                First::Prefix(n) => js_f64(env, *n as f64)?,
            },
            js_text(env, &r.all)?,
            match key {
                Some(k) => js_str(env, k)?,
                None => undef,
            },
        ]
    };
    for (i, v) in vals.into_iter().enumerate() {
        check(unsafe { sys::napi_set_element(env, arr, i as u32, v) })?;
    }
    Ok(arr)
}

impl TypeName for DiscoveryResult {
    fn type_name() -> &'static str {
        "{ records: Array<[string, string | undefined, number, number, string | undefined, string | number, string, string | undefined] | true | null>; aborted: boolean }"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for DiscoveryResult {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> Result<sys::napi_value> {
        unsafe {
            let mut undef = std::ptr::null_mut();
            check(sys::napi_get_undefined(env, &mut undef))?;
            let mut null = std::ptr::null_mut();
            check(sys::napi_get_null(env, &mut null))?;
            let mut yes = std::ptr::null_mut();
            check(sys::napi_get_boolean(env, true, &mut yes))?;
            let mut arr = std::ptr::null_mut();
            check(sys::napi_create_array_with_length(
                env,
                val.records.len(),
                &mut arr,
            ))?;
            for (i, r) in val.records.iter().enumerate() {
                let v = match r {
                    Out::Rec(r, key) => js_record(env, r, key, undef)?,
                    Out::Same => yes,
                    Out::None => null,
                };
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
            Ok(obj)
        }
    }
}

pub struct ExtractTask {
    paths: Vec<String>,
    known: Vec<String>,
    use_index: bool,
    abort: Arc<AtomicBool>,
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
    /// A record, with its stamp key when the caller may reuse it later.
    Rec(Arc<Record>, Option<String>),
}

fn stamp_key(s: &index::Stamp) -> String {
    format!("{}:{}:{}", s.size, s.mtime_ns, s.ino)
}

fn run(
    paths: &[String],
    known: &[String],
    use_index: bool,
    abort: &AtomicBool,
) -> (Vec<Out>, bool) {
    let prof = std::env::var_os("PI_SESSION_NATIVE_PROFILE").is_some();
    let t0 = std::time::Instant::now();
    let start_ns = index::now_ns();
    let n = paths.len();
    let stamps: Vec<Option<index::Stamp>> = paths
        .iter()
        .map(|p| std::fs::metadata(p).ok().map(|m| index::Stamp::of(&m)))
        .collect();
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
                let m = index::load(&dirs[k]);
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
            "discovery(rust): {n} files, {} dirs: stat + index load {:?}, files {:?}, index store {:?}",
            dirs.len(),
            t_load,
            t_work - t_load,
            t0.elapsed() - t_work
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
    let out = |r: &Option<Arc<Record>>| match r {
        Some(r) => Out::Rec(
            r.clone(),
            (use_index && cacheable).then(|| stamp_key(&stamp)),
        ),
        None => Out::None,
    };
    if let Some(c) = old
        && c.stamp == stamp
    {
        return (out(&c.record), Some(c.clone()), true);
    }
    let check = || abort.load(Ordering::Relaxed);
    match discovery::extract(Path::new(path), &check) {
        Ok(record) => {
            let record = record.map(Arc::new);
            let keep = (use_index && cacheable).then(|| index::Cached {
                stamp,
                record: record.clone(),
            });
            (out(&record), keep, false)
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
        let (records, aborted) =
            std::panic::catch_unwind(move || run(&paths, &known, use_index, &abort)).map_err(
                |_| napi::Error::from_reason("pi-session-native: discovery worker panicked"),
            )?;
        Ok(DiscoveryResult { records, aborted })
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
) -> AsyncTask<ExtractTask> {
    AsyncTask::new(ExtractTask {
        paths,
        known,
        use_index,
        abort: abort.flag.clone(),
    })
}
