//! Binding of the search engine (crates/core/src/search): `searchSessions` and `readSessionWindow` run
//! as async tasks on libuv's pool, never on the JS thread. Thin: options in, JSON text out.

use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Result, Task};
use napi_derive::napi;
use pi_session_core::json::value::write_json_string;
use pi_session_core::search::{self, Hit, Index};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

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

fn ms(v: Option<f64>) -> Option<i64> {
    v.filter(|f| f.is_finite())
        .map(|f| f.clamp(-9.0e15, 9.0e15) as i64)
}

pub struct SearchTask {
    dir: PathBuf,
    query: String,
    opts: search::Options,
    abort: Arc<AtomicBool>,
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

impl Task for SearchTask {
    type Output = String;
    type JsValue = String;

    fn compute(&mut self) -> Result<Self::Output> {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut ix = take_index(&self.dir)?;
            let mut r = ix.search(&self.query, &self.opts, &self.abort);
            if r.is_err() && !ix.in_memory() && !ix.still_valid() {
                // Another process replaced the index file while this search ran (SQLite then
                // answers "attempt to write a readonly database"): once more, on a fresh open.
                drop(ix);
                ix = Index::open(&self.dir)?;
                r = ix.search(&self.query, &self.opts, &self.abort);
            }
            put_index(ix);
            r
        }))
        .map_err(|_| napi::Error::from_reason("pi-session-native: search panicked"))?;
        match r {
            Ok(hits) => Ok(hits_json(&hits)),
            Err(e) => Err(napi::Error::from_reason(e.0)),
        }
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Search the sessions under `dir`: resolves to a JSON array of hits (see index.d.ts).
#[napi(catch_unwind)]
pub fn search_sessions_native(
    dir: String,
    query: String,
    options: NativeSearchOptions,
    abort: &super::abort::AbortFlag,
) -> AsyncTask<SearchTask> {
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
    AsyncTask::new(SearchTask {
        dir: PathBuf::from(dir),
        query,
        opts,
        abort: abort.shared(),
    })
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
