//! Binding of the search engine (crates/core/src/search): `searchSessions`, `warmSearchIndex` and
//! `readSessionWindow` run as async tasks on libuv's pool, never on the JS thread. Thin: options
//! in, JSON text out; indexing progress goes to JS through thread-safe functions.

use napi::bindgen_prelude::{AsyncTask, FnArgs, Function, Unknown};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Result, Status, Task};
use napi_derive::napi;
use pi_session_core::json::value::write_json_string;
use pi_session_core::search::{self, Hit, Index};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex};

/// Options of `searchSessionsNative` (checked and defaulted by lib/search.js).
#[napi(object)]
pub struct NativeSearchOptions {
    pub cwd: Option<String>,
    pub roles: Option<Vec<String>>,
    pub tools: Option<Vec<String>>,
    pub since_ms: Option<f64>,
    pub until_ms: Option<f64>,
    pub all_branches: bool,
    pub limit: u32,
    pub offset: u32,
    pub per_session: u32,
    pub exclude: Option<Vec<String>>,
    pub snippet_chars: u32,
}

/// Open indexes of this process, by directory (a connection is reused while its file is
/// still the verified one).
static OPEN: Mutex<Option<HashMap<PathBuf, Index>>> = Mutex::new(None);

fn take_index(dir: &Path) -> search::Result<Index> {
    let cached = OPEN
        .lock()
        .ok()
        .and_then(|mut m| m.as_mut().and_then(|m| m.remove(dir)));
    match cached {
        Some(ix) if ix.still_valid() => Ok(ix),
        _ => Index::open(dir),
    }
}

/// Most indexes kept open per process (each holds a SQLite connection and, on Linux, an
/// inotify instance: a per-user resource, 128 by default, shared with every other program).
const MAX_OPEN: usize = 4;

fn put_index(ix: Index) {
    if ix.in_memory() {
        return;
    }
    if let Ok(mut m) = OPEN.lock() {
        let m = m.get_or_insert_with(HashMap::new);
        while m.len() >= MAX_OPEN && !m.contains_key(ix.dir()) {
            // Any other one goes (its next query reopens it and scans its directory).
            let Some(k) = m.keys().next().cloned() else {
                break;
            };
            m.remove(&k);
        }
        m.insert(ix.dir().to_path_buf(), ix);
    }
}

/// Directories whose index a task is refreshing or querying right now. One task per
/// directory at a time: a second one (a search while the index is being warmed) waits and
/// then finds the work done, instead of parsing the same files again beside it.
static BUSY: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
static BUSY_DONE: Condvar = Condvar::new();

/// The right to use the index of one directory; released on drop.
struct DirTurn(PathBuf);

impl DirTurn {
    /// Wait for the directory's turn (checking `abort` every 50 ms).
    fn take(dir: &Path, abort: &AtomicBool) -> search::Result<DirTurn> {
        let mut busy = BUSY
            .lock()
            .map_err(|_| search::Error("search index: lock poisoned".into()))?;
        loop {
            let set = busy.get_or_insert_with(HashSet::new);
            if set.insert(dir.to_path_buf()) {
                return Ok(DirTurn(dir.to_path_buf()));
            }
            if abort.load(Ordering::Relaxed) {
                return Err(search::Error("aborted".into()));
            }
            busy = BUSY_DONE
                .wait_timeout(busy, std::time::Duration::from_millis(50))
                .map_err(|_| search::Error("search index: lock poisoned".into()))?
                .0;
        }
    }
}

impl Drop for DirTurn {
    fn drop(&mut self) {
        if let Ok(mut busy) = BUSY.lock()
            && let Some(set) = busy.as_mut()
        {
            set.remove(&self.0);
        }
        BUSY_DONE.notify_all();
    }
}

/// `onProgress(done, total, bytesDone, bytesTotal)` of an indexing run, called from worker
/// threads (bytes as doubles: a store passes 4 GiB).
type ProgressArgs = FnArgs<(u32, u32, f64, f64)>;
type ProgressTsfn = ThreadsafeFunction<ProgressArgs, Unknown<'static>, ProgressArgs, Status, false>;

/// A task's `onProgress`, and the largest `total` reported to it.
struct Listener {
    f: ProgressTsfn,
    seen_total: AtomicU32,
}

fn listener(
    f: Option<Function<'_, ProgressArgs, Unknown<'static>>>,
) -> Result<Option<Arc<Listener>>> {
    match f {
        Some(f) => Ok(Some(Arc::new(Listener {
            f: f.build_threadsafe_function::<ProgressArgs>()
                .callee_handled::<false>()
                .build()?,
            seen_total: AtomicU32::new(0),
        }))),
        None => Ok(None),
    }
}

/// The listeners of the tasks using or waiting for each directory's index: the task that
/// indexes reports to all of them, so a search that waits for a warm-up (or another search)
/// shows the build it waits for.
static LISTENERS: Mutex<Option<HashMap<PathBuf, Vec<Arc<Listener>>>>> = Mutex::new(None);

/// A listener registered for a directory; unregistered on drop.
struct Listening(PathBuf, Option<Arc<Listener>>);

impl Listening {
    fn new(dir: &Path, l: Option<&Arc<Listener>>) -> Listening {
        if let Some(l) = l
            && let Ok(mut m) = LISTENERS.lock()
        {
            m.get_or_insert_with(HashMap::new)
                .entry(dir.to_path_buf())
                .or_default()
                .push(Arc::clone(l));
        }
        Listening(dir.to_path_buf(), l.cloned())
    }
}

impl Drop for Listening {
    fn drop(&mut self) {
        let Some(l) = &self.1 else { return };
        if let Ok(mut m) = LISTENERS.lock()
            && let Some(m) = m.as_mut()
            && let Some(v) = m.get_mut(&self.0)
        {
            v.retain(|x| !Arc::ptr_eq(x, l));
            if v.is_empty() {
                m.remove(&self.0);
            }
        }
    }
}

/// Report `r` to every listener of `dir`.
fn report_to(dir: &Path, r: search::Report) {
    let search::Report {
        done,
        total,
        bytes_done,
        bytes_total,
    } = r;
    let n = |v: usize| u32::try_from(v).unwrap_or(u32::MAX);
    let Ok(m) = LISTENERS.lock() else { return };
    let Some(list) = m.as_ref().and_then(|m| m.get(dir)) else {
        return;
    };
    for l in list {
        l.seen_total.fetch_max(n(total), Ordering::Relaxed);
        let _ = l.f.call(
            FnArgs::from((n(done), n(total), bytes_done as f64, bytes_total as f64)),
            ThreadsafeFunctionCallMode::NonBlocking,
        );
    }
}

/// Run `work` with the directory's index (opened, or reused from this process's cache),
/// reporting indexing progress to the listeners of the directory (`progress` among them,
/// from before this task waits for its turn). A search that fails because another process
/// replaced the index file meanwhile ("attempt to write a readonly database") is run once
/// more on a fresh open. Also returns the largest `total` reported to `progress` (0: none).
fn with_index<T>(
    dir: &Path,
    abort: &Arc<AtomicBool>,
    progress: Option<&Arc<Listener>>,
    work: impl Fn(&mut Index, Option<search::ProgressFn>) -> search::Result<T>,
) -> search::Result<(T, u32)> {
    let _listening = Listening::new(dir, progress);
    let _turn = DirTurn::take(dir, abort)?;
    let report = |r: search::Report| report_to(dir, r);
    let report: Option<search::ProgressFn> = Some(&report);
    let mut ix = take_index(dir)?;
    let mut r = work(&mut ix, report);
    if r.is_err() && !ix.in_memory() && !ix.still_valid() {
        drop(ix);
        ix = Index::open(dir)?;
        r = work(&mut ix, report);
    }
    put_index(ix);
    let seen = progress.map_or(0, |l| l.seen_total.load(Ordering::Relaxed));
    r.map(|v| (v, seen))
}

fn ms(v: Option<f64>) -> Option<i64> {
    v.filter(|f| f.is_finite())
        .map(|f| f.clamp(-9.0e15, 9.0e15) as i64)
}

pub struct SearchTask {
    dir: PathBuf,
    query: String,
    opts: search::Options,
    abort: Arc<AtomicBool>,
    progress: Option<Arc<Listener>>,
}

fn write_opt(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => write_json_string(out, s),
        None => out.push_str("null"),
    }
}

fn hits_json(hits: &[Hit]) -> String {
    let mut out = String::from("[");
    for (i, h) in hits.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"sessionPath\":");
        write_json_string(&mut out, &h.session_path);
        out.push_str(",\"sessionId\":");
        write_opt(&mut out, h.session_id.as_deref());
        out.push_str(",\"cwd\":");
        write_opt(&mut out, h.cwd.as_deref());
        out.push_str(",\"entryId\":");
        write_opt(&mut out, h.entry_id.as_deref());
        out.push_str(",\"role\":");
        write_json_string(&mut out, &h.role);
        out.push_str(",\"timestamp\":");
        write_opt(&mut out, h.timestamp.as_deref());
        out.push_str(",\"snippet\":");
        write_json_string(&mut out, &h.snippet);
        let score = if h.score.is_finite() { h.score } else { 0.0 };
        out.push_str(&format!(
            ",\"score\":{score},\"onActiveBranch\":{},\"match\":\"{}\"}}",
            h.on_active_branch, h.matched
        ));
    }
    out.push(']');
    out
}

/// What `searchSessionsNative` resolves to.
#[napi(object)]
pub struct NativeSearchResult {
    /// The hits as a JSON array (see index.d.ts `SearchHit`).
    pub hits: String,
    /// Files the index refresh before the query indexed, or the `total` of the build of
    /// another task this one waited for (0: neither): the `total` of the progress reports,
    /// some of which may still be on their way to JS.
    pub indexed: u32,
}

impl Task for SearchTask {
    type Output = NativeSearchResult;
    type JsValue = NativeSearchResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_index(&self.dir, &self.abort, self.progress.as_ref(), |ix, p| {
                let hits = ix.search(&self.query, &self.opts, &self.abort, p)?;
                Ok((hits, ix.indexed_by_last_refresh()))
            })
            .map(|((hits, own), seen)| (hits, own.max(seen as usize)))
        }))
        .map_err(|_| napi::Error::from_reason("pi-session-native: search panicked"))?;
        // Released here: no report is made after the task's result.
        self.progress = None;
        match r {
            Ok((hits, indexed)) => Ok(NativeSearchResult {
                hits: hits_json(&hits),
                indexed: u32::try_from(indexed).unwrap_or(u32::MAX),
            }),
            Err(e) => Err(napi::Error::from_reason(e.0)),
        }
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Search the sessions under `dir`: resolves to a JSON array of hits (see index.d.ts).
/// `onProgress(done, total, bytesDone, bytesTotal)`: files indexed so far, and their bytes
/// read, when the index has files to bring up to date (`(0, total, 0, bytesTotal)` first,
/// then at most every 100 ms as files and chunks of them are parsed, then everything done).
#[napi(
    catch_unwind,
    ts_args_type = "dir: string, query: string, options: NativeSearchOptions, abort: AbortFlag, onProgress?: ((done: number, total: number, bytesDone: number, bytesTotal: number) => unknown) | undefined | null",
    ts_return_type = "Promise<NativeSearchResult>"
)]
pub fn search_sessions_native(
    dir: String,
    query: String,
    options: NativeSearchOptions,
    abort: &super::abort::AbortFlag,
    on_progress: Option<Function<'_, ProgressArgs, Unknown<'static>>>,
) -> Result<AsyncTask<SearchTask>> {
    let opts = search::Options {
        cwd: options.cwd,
        roles: options.roles.unwrap_or_default(),
        tools: options.tools.unwrap_or_default(),
        since_ms: ms(options.since_ms),
        until_ms: ms(options.until_ms),
        all_branches: options.all_branches,
        limit: options.limit as usize,
        offset: options.offset as usize,
        per_session: options.per_session as usize,
        exclude: options.exclude.unwrap_or_default(),
        snippet_chars: (options.snippet_chars as usize).clamp(16, 4096),
    };
    Ok(AsyncTask::new(SearchTask {
        dir: PathBuf::from(dir),
        query,
        opts,
        abort: abort.shared(),
        progress: listener(on_progress)?,
    }))
}

pub struct WarmTask {
    dir: PathBuf,
    abort: Arc<AtomicBool>,
    progress: Option<Arc<Listener>>,
}

impl Task for WarmTask {
    /// Files indexed (see [`NativeSearchResult::indexed`]).
    type Output = u32;
    type JsValue = u32;

    fn compute(&mut self) -> Result<Self::Output> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            with_index(&self.dir, &self.abort, self.progress.as_ref(), |ix, p| {
                // No index can be kept in this directory (read-only): nothing to warm.
                if ix.in_memory() {
                    return Ok(0);
                }
                // Nobody waits for a warm-up: it takes one low-priority worker and stops
                // at the next file when aborted, so that the host's turn comes first.
                ix.refresh_with(&self.abort, p, search::Load::Background)?;
                Ok(ix.indexed_by_last_refresh())
            })
            .map(|(own, seen)| own.max(seen as usize))
        }))
        .map_err(|_| napi::Error::from_reason("pi-session-native: search index panicked"))?;
        self.progress = None;
        r.map(|n| u32::try_from(n).unwrap_or(u32::MAX))
            .map_err(|e| napi::Error::from_reason(e.0))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Bring the search index of `dir` up to date without a query (progress as
/// [`search_sessions_native`]); resolves to the number of files indexed.
#[napi(
    catch_unwind,
    ts_args_type = "dir: string, abort: AbortFlag, onProgress?: ((done: number, total: number, bytesDone: number, bytesTotal: number) => unknown) | undefined | null",
    ts_return_type = "Promise<number>"
)]
pub fn warm_search_index_native(
    dir: String,
    abort: &super::abort::AbortFlag,
    on_progress: Option<Function<'_, ProgressArgs, Unknown<'static>>>,
) -> Result<AsyncTask<WarmTask>> {
    Ok(AsyncTask::new(WarmTask {
        dir: PathBuf::from(dir),
        abort: abort.shared(),
        progress: listener(on_progress)?,
    }))
}

pub struct WindowTask {
    path: PathBuf,
    entry_id: String,
    before: usize,
    after: usize,
    max_chars: usize,
    max_entry_chars: usize,
}

impl Task for WindowTask {
    type Output = Option<String>;
    type JsValue = Option<String>;

    fn compute(&mut self) -> Result<Self::Output> {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            search::window::window(
                &self.path,
                &self.entry_id,
                self.before,
                self.after,
                self.max_chars,
                self.max_entry_chars,
            )
        }))
        .map_err(|_| napi::Error::from_reason("pi-session-native: window panicked"))
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// The entries around `entry_id` on its branch: resolves to a JSON array, or null when the
/// file cannot be read or has no such entry.
#[napi(catch_unwind)]
pub fn read_session_window_native(
    path: String,
    entry_id: String,
    before: u32,
    after: u32,
    max_chars: u32,
    max_entry_chars: u32,
) -> AsyncTask<WindowTask> {
    AsyncTask::new(WindowTask {
        path: PathBuf::from(path),
        entry_id,
        before: before as usize,
        after: after as usize,
        max_chars: max_chars as usize,
        max_entry_chars: max_entry_chars as usize,
    })
}

/// The file an index build of this process is reading (see `searchIndexReading` in index.d.ts).
#[napi(object)]
pub struct NativeIndexReading {
    pub path: String,
    pub bytes_done: f64,
    pub bytes: f64,
    pub ms: f64,
}

/// The file index builds in this process have been parsing the longest, or null: for a
/// progress line that moves while one large file takes long.
#[napi(catch_unwind)]
pub fn search_index_reading_native() -> Option<NativeIndexReading> {
    search::reading_now().map(|(path, done, size, took)| NativeIndexReading {
        path,
        bytes_done: done as f64,
        bytes: size as f64,
        ms: took.as_secs_f64() * 1000.0,
    })
}
