//! A session file read and indexed ahead, while pi is still starting: `pi-native --session
//! <file>` knows the file from its command line ~130 ms before pi opens it (pi loads its
//! modules in between), and a 700 MB session takes ~300 ms to load on two cores.
//!
//! [`start`] opens the file on a thread of its own and loads it there, the load an open makes
//! ([`jsonl::open_load`]) but on that one thread: pi's own start-up keeps the other core. A
//! large file is loaded range by range ([`jsonl::BackedLoad`]), and [`take`], called by the
//! open of that same file, loads the ranges left on the opening thread beside it. It hands the
//! result to the open only if the file is still the one that was read: same path (links
//! resolved), same device, inode, length and modification time as when the read started and as
//! the load saw through its descriptor. Anything else (another file, a file changed in
//! between, a read that failed, other settings) and the open reads the file itself, as without
//! a preload: a preload can cost time, never change an answer.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use crate::durability::file_id;
use crate::jsonl::{self, BackedLoad, Loaded, Pending};

/// What the file was when its read started: device and inode, length, modification time.
type Stamp = ((u64, u64), u64, Option<SystemTime>);

struct Preload {
    /// The file's path with links resolved.
    path: PathBuf,
    stamp: Stamp,
    backed_min: u64,
    /// A large file's ranges, once opened: the open's thread helps load them.
    ranges: Arc<Mutex<Option<Arc<BackedLoad>>>>,
    read: JoinHandle<Option<Read>>,
}

/// What the preload thread ends with: a file loaded whole, or a large file whose ranges (in
/// `Preload::ranges`) are all taken, with the file's identity as its descriptor saw it.
enum Read {
    Whole(Loaded),
    Ranges(Option<((u64, u64), u64)>),
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// At most one: pi opens one session at start.
static PRELOAD: Mutex<Option<Preload>> = Mutex::new(None);

fn stamp_of(path: &Path) -> Option<(PathBuf, Stamp)> {
    let real = std::fs::canonicalize(path).ok()?;
    let m = std::fs::metadata(&real).ok()?;
    m.is_file()
        .then(|| (real, (file_id(&m), m.len(), m.modified().ok())))
}

/// Start reading the session file at `path` on a thread (`backed_min`: the open's
/// `Settings::backed_min`). False, and nothing started, if it is not a regular file or no
/// thread could be started; a preload already started is replaced.
pub fn start(path: &Path, backed_min: u64) -> bool {
    let Some((real, stamp)) = stamp_of(path) else {
        return false;
    };
    let file = real.clone();
    let ranges = Arc::new(Mutex::new(None));
    let shared = Arc::clone(&ranges);
    let read = std::thread::Builder::new()
        .name("psn-preload".into())
        .spawn(move || match jsonl::open_load(&file, backed_min).ok()? {
            Pending::Done(loaded) => Some(Read::Whole(loaded)),
            Pending::Backed { job, file } => {
                let job = Arc::new(job);
                *lock(&shared) = Some(Arc::clone(&job));
                job.work();
                Some(Read::Ranges(file))
            }
        });
    let Ok(read) = read else {
        return false;
    };
    let p = Preload {
        path: real,
        stamp,
        backed_min,
        ranges,
        read,
    };
    *lock(&PRELOAD) = Some(p);
    true
}

/// The entries of `path` read ahead by [`start`], waiting for the read to end, if they are
/// those of the file as it is now. A preload of another file is dropped.
pub fn take(path: &Path, backed_min: u64) -> Option<Loaded> {
    // No preload (every open but pi's first): nothing to look at on disk.
    if lock(&PRELOAD).is_none() {
        return None;
    }
    let (real, stamp) = stamp_of(path)?;
    let p = {
        let mut slot = lock(&PRELOAD);
        // Another file opened first: the preload will not be used (pi opens one session at
        // start); it goes, and its entries are freed when its thread ends.
        if slot.as_ref().is_some_and(|p| p.path != real) {
            *slot = None;
        }
        slot.take()?
    };
    // Help with the ranges left (once the thread has opened the file: a moment).
    loop {
        let job = lock(&p.ranges).clone();
        if let Some(job) = job {
            job.work();
            break;
        }
        if p.read.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_micros(50));
    }
    let loaded = match p.read.join().ok()?? {
        Read::Whole(loaded) => loaded,
        Read::Ranges(file) => {
            let job = lock(&p.ranges).take()?;
            let mut loaded = Arc::try_unwrap(job).ok()?.finish().ok()?;
            if !loaded.entries.is_empty() {
                loaded.file = file;
            }
            loaded
        }
    };
    let same_file = loaded.file == Some((stamp.0, stamp.1));
    (p.stamp == stamp && same_file && p.backed_min == backed_min).then_some(loaded)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let d = std::env::temp_dir().join(format!("psn-preload-{}-{k}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("dir");
        d
    }

    const LINES: &str = "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"t\",\"cwd\":\"/w\"}\n{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n";

    // One test: the preload slot is process-wide.
    #[test]
    fn a_preload_serves_the_open_of_the_same_unchanged_file_only() {
        let d = dir();
        let f = d.join("s.jsonl");
        std::fs::write(&f, LINES).expect("write");
        // Taken by the open of the same file (through another spelling of its path), once.
        assert!(start(&f, u64::MAX));
        let other = d.join(".").join("s.jsonl");
        let got = take(&other, u64::MAX).expect("preloaded");
        assert_eq!(got.entries.len(), 2);
        assert!(take(&f, u64::MAX).is_none(), "taken once");
        // A file past `backed_min`: loaded range by range, the taking thread helping.
        assert!(start(&f, 0));
        let got = take(&f, 0).expect("preloaded in ranges");
        assert_eq!(got.entries.len(), 2);
        assert!(got.file.is_some());
        // Not for another file (whose open drops it), nor with other settings.
        assert!(start(&f, u64::MAX));
        let g = d.join("t.jsonl");
        std::fs::write(&g, LINES).expect("write");
        assert!(take(&g, u64::MAX).is_none());
        assert!(take(&f, u64::MAX).is_none(), "dropped by the other open");
        assert!(start(&f, u64::MAX));
        assert!(take(&f, 0).is_none());
        // Not when the file changed after the read started.
        assert!(start(&f, u64::MAX));
        std::thread::sleep(std::time::Duration::from_millis(20));
        let mut more = LINES.to_string();
        more.push_str("{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"x\"}}\n");
        std::fs::write(&f, more).expect("write");
        assert!(take(&f, u64::MAX).is_none());
        // Nothing for what is not a regular file.
        assert!(!start(&d, u64::MAX));
        assert!(!start(&d.join("missing.jsonl"), u64::MAX));
        let _ = std::fs::remove_dir_all(&d);
    }
}
