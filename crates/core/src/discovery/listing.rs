//! The listing pass behind `list` / `listAll`: one stat per file (or the caller's), the
//! sidecar index loaded and stored per directory, files read on up to 4 worker threads
//! (largest first), a grown file resumed from its cached record, and each finished file
//! streamed to the caller through an [`Outbox`] as it completes. The binding only turns
//! [`Outcome`]s into JS values and runs [`list`] off the event loop.

use super::{Listed, Record, index};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Finished files on their way to the caller (JS) while the workers run.
///
/// Workers push each finished file here and wake the consumer (the binding queues one call
/// of a thread-safe function) if no wake-up is pending; the consumer, when the JS thread
/// runs it, takes everything gathered so far ([`Outbox::drain`]).
/// So at most one call waits in the queue, and the event loop gets a turn between batches
/// (one queued call per file kept Node's dispatcher busy for the whole pass, starving
/// timers, when JS converted records more slowly than 2 workers produced them).
#[derive(Default)]
pub struct Outbox {
    state: Mutex<OutboxState>,
}

#[derive(Default)]
struct OutboxState {
    items: Vec<(u32, Outcome)>,
    /// A call is queued and has not drained yet.
    pending: bool,
    /// The pass is over: what is left goes back in the task's result.
    closed: bool,
    /// Indices handed to JS.
    drained: Vec<u32>,
}

impl Outbox {
    /// Add a finished file; `true` when the caller must queue a call.
    fn push(&self, i: usize, o: &Outcome) -> bool {
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
    pub fn drain(&self) -> Vec<(u32, Outcome)> {
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

/// One file's outcome.
#[derive(Clone)]
pub enum Outcome {
    /// Not a session / unreadable.
    None,
    /// Unchanged since the caller's previous listing (its stamp key matched).
    Same,
    /// A record.
    Record {
        record: Arc<Record>,
        /// The caller may keep it (and answer the same stamp with it later).
        keep: bool,
        /// What was listed (for reading its texts later; its key is the stamp's too).
        listed: Listed,
    },
    /// Already handed to the caller through the [`Outbox`].
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

fn split(path: &str) -> (PathBuf, String) {
    let p = Path::new(path);
    let dir = p.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = p
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    (dir, name)
}

/// One `stat` of a listed path.
#[derive(Clone, Copy)]
pub struct FileStat {
    /// `fs.statSync(p).mtimeMs` (NaN: stat failed).
    pub mtime_ms: f64,
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
        let euid = crate::safefs::euid();
        // Root reads what its mode refuses (capabilities): asked, as for other owners.
        if euid != 0 && md.uid() == euid {
            return md.mode() & 0o400 != 0;
        }
    }
    #[cfg(not(unix))]
    let _ = md;
    crate::safefs::readable(p)
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
        let euid = crate::safefs::euid();
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
pub fn stat_all(paths: &[String]) -> Vec<FileStat> {
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

/// Whether the listing uses the sidecar index (`PI_SESSION_NATIVE_NO_INDEX` turns it off in
/// the JS layer).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum IndexUse {
    /// Load `.pi-session-index` per directory, answer unchanged files from it, store it
    /// back when something changed.
    Use,
    /// Read every file.
    Skip,
}

/// What to list.
pub struct Request<'a> {
    pub paths: &'a [String],
    /// Per path, the text key ([`Listed::key`]) of the record the caller holds, or empty:
    /// a file whose stamp still matches answers [`Outcome::Same`].
    pub known: &'a [String],
    /// Stats the caller took of these files (a [`stat_all`] of some list) and, per path, its
    /// place in that list: the files are not stat'ed again.
    pub stats: Option<(&'a [FileStat], &'a [u32])>,
    pub index: IndexUse,
    /// Set from another thread to stop early ([`Listing::aborted`]).
    pub abort: &'a AtomicBool,
}

/// The result of [`list`].
pub struct Listing {
    /// Per path, in order ([`Outcome::Sent`] for those handed out through the outbox).
    pub outcomes: Vec<Outcome>,
    pub aborted: bool,
    /// How many went through the outbox.
    pub sent: u32,
}

/// List `req.paths`. With `stream`, each finished file is pushed into the outbox and
/// `wake` is called when the consumer has no wake-up pending; what the consumer drained
/// before the end is [`Outcome::Sent`] in the result, the rest is in it.
pub fn list(req: &Request<'_>, stream: Option<(&Outbox, &(dyn Fn() + Sync))>) -> Listing {
    let send = |i: usize, o: &Outcome| {
        if let Some((outbox, wake)) = stream
            && outbox.push(i, o)
        {
            wake();
        }
    };
    let send: Option<Send<'_>> = if stream.is_some() { Some(&send) } else { None };
    let (mut outcomes, aborted) = run(req, send);
    let mut sent = 0u32;
    if let Some((outbox, _)) = stream {
        for i in outbox.close() {
            if let Some(slot) = outcomes.get_mut(i as usize) {
                *slot = Outcome::Sent;
                sent += 1;
            }
        }
    }
    Listing {
        outcomes,
        aborted,
        sent,
    }
}

/// Hands one finished file to the outbox as it completes.
type Send<'a> = &'a (dyn Fn(usize, &Outcome) + Sync);

fn run(req: &Request<'_>, send: Option<Send<'_>>) -> (Vec<Outcome>, bool) {
    let Request {
        paths,
        known,
        stats: pre,
        index: index_use,
        abort,
    } = *req;
    let use_index = index_use == IndexUse::Use;
    let prof = crate::config::profile();
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

    let results: Mutex<Vec<FileDone>> = Mutex::new((0..n).map(|_| FileDone::skipped()).collect());
    // Largest files first, so one big session does not finish alone at the end.
    let mut order: Vec<usize> = (0..n).filter(|&i| !same[i]).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(stamps[i].map_or(0, |s| s.size)));
    if let Ok(mut r) = results.lock() {
        for (i, slot) in r.iter_mut().enumerate() {
            if same[i] {
                slot.outcome = Outcome::Same;
            }
        }
    }
    let next = AtomicUsize::new(0);
    let aborted = AtomicBool::new(false);
    // Files the caller already holds complete at once (in index order, before the rest).
    if let Some(f) = send {
        for i in (0..n).filter(|&i| same[i]) {
            f(i, &Outcome::Same);
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
                index_use,
                start_ns,
                abort,
            );
            if abort.load(Ordering::Relaxed) {
                aborted.store(true, Ordering::Relaxed);
                return;
            }
            if let Some(f) = send {
                f(i, &res.outcome);
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
            for (i, done) in results.iter().enumerate() {
                if dir_of[i] != k {
                    continue;
                }
                if let Some(c) = &done.cached {
                    entries.push((parts[i].1.as_str(), c));
                    if done.from_cache {
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
        results.into_iter().map(|done| done.outcome).collect(),
        was_aborted,
    )
}

/// What [`one`] did with a file.
struct FileDone {
    outcome: Outcome,
    /// The index entry to keep for it.
    cached: Option<index::Cached>,
    /// `cached` is the entry the index already held (nothing to store for this file).
    from_cache: bool,
}

impl FileDone {
    /// Not a session, unreadable, or not looked at.
    fn skipped() -> FileDone {
        FileDone {
            outcome: Outcome::None,
            cached: None,
            from_cache: false,
        }
    }
}

/// One file.
fn one(
    path: &str,
    stamp: Option<index::Stamp>,
    old: Option<&index::Cached>,
    index_use: IndexUse,
    start_ns: i128,
    abort: &AtomicBool,
) -> FileDone {
    let use_index = index_use == IndexUse::Use;
    let Some(stamp) = stamp else {
        return FileDone::skipped();
    };
    let cacheable = index::cacheable(&stamp, start_ns);
    let out = |r: &Option<Arc<Record>>, fp: Option<u64>| match r {
        Some(r) => Outcome::Record {
            record: r.clone(),
            keep: use_index && cacheable,
            listed: Listed { stamp, fp },
        },
        None => Outcome::None,
    };
    if let Some(c) = old
        && c.exact
        && c.stamp == stamp
    {
        return FileDone {
            outcome: out(&c.record, c.resume),
            cached: Some(c.clone()),
            from_cache: true,
        };
    }
    let check = || abort.load(Ordering::Relaxed);
    // Without blocking (a FIFO), and only a regular file (a device never ends): anything
    // else is skipped, as an unreadable file is.
    let Ok(opened) = crate::safefs::open_regular(Path::new(path), true) else {
        return FileDone::skipped();
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
    let fingerprint = super::resume::fingerprint(&file, stamp.size);
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
        (super::resume::fingerprint(&file, c.stamp.size) == c.resume).then_some((rec, c))
    });
    let result = match resumable {
        Some((rec, c)) => {
            RESUMED.fetch_add(1, Ordering::Relaxed);
            let r = super::resume::extract_after(file, rec, c.stamp.size, limit, &check);
            // A file still being written keeps its base while it has grown little: the
            // index (which holds every record of the directory) is not rewritten at each
            // listing for a few appended lines, which the next listing reads again.
            if !cacheable && stamp.size - c.stamp.size <= REBASE_BYTES {
                return match r {
                    Ok(r) => FileDone {
                        outcome: out(&Some(Arc::new(r)), fingerprint),
                        cached: Some(c.clone()),
                        from_cache: true,
                    },
                    Err(_) => FileDone::skipped(),
                };
            }
            r.map(Some)
        }
        None => super::extract_file(file, limit, &check),
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
            FileDone {
                outcome: out(&record, fingerprint),
                cached,
                from_cache: false,
            }
        }
        Err(_) => FileDone::skipped(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("psn-listing-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    /// Two sessions and a file that is not one.
    fn store(name: &str) -> (PathBuf, Vec<String>) {
        let d = dir(name);
        let header = |id: &str| {
            format!(
                r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}}"#
            )
        };
        let msg = r#"{"type":"message","id":"a","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hello"}}"#;
        let files = [
            ("a.jsonl", format!("{}\n{msg}\n", header("one"))),
            ("b.jsonl", format!("{}\n{msg}\n{msg}\n", header("two"))),
            ("c.jsonl", "not a session\n".to_string()),
        ];
        let mut paths = Vec::new();
        for (n, text) in files {
            let p = d.join(n);
            std::fs::write(&p, text).expect("write");
            paths.push(p.to_string_lossy().into_owned());
        }
        (d, paths)
    }

    fn request<'a>(paths: &'a [String], known: &'a [String], abort: &'a AtomicBool) -> Request<'a> {
        Request {
            paths,
            known,
            stats: None,
            index: IndexUse::Skip,
            abort,
        }
    }

    #[test]
    fn records_in_order_then_same_for_what_the_caller_holds() {
        let (d, paths) = store("order");
        let abort = AtomicBool::new(false);
        let first = list(&request(&paths, &[], &abort), None);
        assert!(!first.aborted);
        assert_eq!(first.sent, 0);
        let counts: Vec<Option<u64>> = first
            .outcomes
            .iter()
            .map(|o| match o {
                Outcome::Record { record, .. } => Some(record.count),
                _ => None,
            })
            .collect();
        assert_eq!(counts, vec![Some(1), Some(2), None]);
        // The caller's keys of the first listing: unchanged files answer `Same`.
        let known: Vec<String> = first
            .outcomes
            .iter()
            .map(|o| match o {
                Outcome::Record { listed, .. } => listed.key(),
                _ => String::new(),
            })
            .collect();
        let second = list(&request(&paths, &known, &abort), None);
        assert!(matches!(second.outcomes[0], Outcome::Same));
        assert!(matches!(second.outcomes[1], Outcome::Same));
        assert!(matches!(second.outcomes[2], Outcome::None));
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn streamed_files_are_marked_sent_and_an_abort_stops_the_pass() {
        let (d, paths) = store("stream");
        let abort = AtomicBool::new(false);
        let outbox = Outbox::default();
        let drained = Mutex::new(Vec::new());
        // The consumer drains at once (in the binding: a call queued on the JS thread).
        let wake = || {
            if let Ok(mut v) = drained.lock() {
                v.extend(outbox.drain().into_iter().map(|(i, _)| i));
            }
        };
        let out = list(&request(&paths, &[], &abort), Some((&outbox, &wake)));
        let mut got = drained.into_inner().expect("drained");
        got.sort_unstable();
        assert_eq!(got, vec![0, 1, 2]);
        assert_eq!(out.sent, 3);
        assert!(out.outcomes.iter().all(|o| matches!(o, Outcome::Sent)));

        abort.store(true, Ordering::Relaxed);
        let stopped = list(&request(&paths, &[], &abort), None);
        assert!(stopped.aborted);
        let _ = std::fs::remove_dir_all(&d);
    }
}
