//! Session discovery binding: a sync bounded header read and an async batch extraction
//! that runs on a small std thread pool off the event loop and returns all records at once.

use crate::discovery::{self, Header, index};
use napi::bindgen_prelude::AsyncTask;
use napi::{Env, Result, Task};
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

/// Records in input order (`""`: not a session / unreadable) and whether it was aborted.
#[napi(object)]
pub struct DiscoveryResult {
    pub records: Vec<String>,
    pub aborted: bool,
}

pub struct ExtractTask {
    paths: Vec<String>,
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

fn run(paths: &[String], use_index: bool, abort: &AtomicBool) -> (Vec<String>, bool) {
    let start_ns = index::now_ns();
    let parts: Vec<(PathBuf, String)> = paths.iter().map(|p| split(p)).collect();
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut dir_of: Vec<usize> = Vec::with_capacity(paths.len());
    {
        let mut seen: HashMap<&Path, usize> = HashMap::new();
        for (d, _) in &parts {
            let k = *seen.entry(d.as_path()).or_insert_with(|| {
                dirs.push(d.clone());
                dirs.len() - 1
            });
            dir_of.push(k);
        }
    }
    let old: Vec<HashMap<String, index::Cached>> = dirs
        .iter()
        .map(|d| {
            if use_index {
                index::load(d)
            } else {
                HashMap::new()
            }
        })
        .collect();

    let n = paths.len();
    let results: Mutex<Vec<(String, Option<index::Cached>, bool)>> =
        Mutex::new((0..n).map(|_| (String::new(), None, false)).collect());
    let next = AtomicUsize::new(0);
    let aborted = AtomicBool::new(false);
    let threads = std::thread::available_parallelism()
        .map(|v| v.get())
        .unwrap_or(2)
        .clamp(1, 4)
        .min(n.max(1));
    let worker = || {
        loop {
            if abort.load(Ordering::Relaxed) {
                aborted.store(true, Ordering::Relaxed);
                return;
            }
            let i = next.fetch_add(1, Ordering::Relaxed);
            if i >= n {
                return;
            }
            let (record, cached, hit) = one(
                &paths[i],
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
                *slot = (record, cached, hit);
            }
        }
    };
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(worker);
        }
    });
    let results = results.into_inner().unwrap_or_default();
    let was_aborted = aborted.load(Ordering::Relaxed);
    if use_index && !was_aborted {
        for (k, dir) in dirs.iter().enumerate() {
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
            if changed || kept != old[k].len() {
                index::store(dir, entries.into_iter());
            }
        }
    }
    (
        results.into_iter().map(|(r, _, _)| r).collect(),
        was_aborted,
    )
}

/// One file: (record or "", cache entry to keep, whether it came from the cache).
fn one(
    path: &str,
    old: Option<&index::Cached>,
    use_index: bool,
    start_ns: i128,
    abort: &AtomicBool,
) -> (String, Option<index::Cached>, bool) {
    let Ok(md) = std::fs::metadata(path) else {
        return (String::new(), None, false);
    };
    let stamp = index::Stamp::of(&md);
    if let Some(c) = old
        && c.stamp == stamp
    {
        return (c.record.clone().unwrap_or_default(), Some(c.clone()), true);
    }
    let check = || abort.load(Ordering::Relaxed);
    match discovery::extract(Path::new(path), &check) {
        Ok(record) => {
            let keep = (use_index && index::cacheable(&stamp, start_ns)).then(|| index::Cached {
                stamp,
                record: record.clone(),
            });
            (record.unwrap_or_default(), keep, false)
        }
        Err(_) => (String::new(), None, false),
    }
}

impl Task for ExtractTask {
    type Output = DiscoveryResult;
    type JsValue = DiscoveryResult;

    fn compute(&mut self) -> Result<Self::Output> {
        let paths = std::mem::take(&mut self.paths);
        let abort = self.abort.clone();
        let use_index = self.use_index;
        let (records, aborted) = std::panic::catch_unwind(move || run(&paths, use_index, &abort))
            .map_err(|_| {
            napi::Error::from_reason("pi-session-native: discovery worker panicked")
        })?;
        Ok(DiscoveryResult { records, aborted })
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Extract discovery records for `paths` (in order) on worker threads.
#[napi(catch_unwind)]
pub fn discovery_extract(
    paths: Vec<String>,
    use_index: bool,
    abort: &DiscoveryAbort,
) -> AsyncTask<ExtractTask> {
    AsyncTask::new(ExtractTask {
        paths,
        use_index,
        abort: abort.flag.clone(),
    })
}
