//! The batch fsync policy's background flusher: one thread per process syncs files that
//! received appends, at most [`BATCH_INTERVAL`] after the first unsynced one.
//!
//! Why a thread: an inline `fdatasync` every 100 ms cost the appending caller (pi's main
//! thread) several milliseconds each time, on average more than the append itself. The
//! write still happens in the caller (so `kill -9` never loses an acknowledged append);
//! only the flush to the device moves off its path.

use super::BATCH_INTERVAL;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// A file (its own descriptor, shared with nobody) that the flusher syncs when queued.
#[derive(Debug)]
pub struct SyncTarget {
    file: File,
    queued: AtomicBool,
    /// The last failed background sync, reported by the next append ([`Self::take_error`]).
    error: Mutex<Option<std::io::Error>>,
}

impl SyncTarget {
    /// A target for `file` (a duplicate descriptor of it), or `None` if it cannot be had.
    pub fn new(file: &File) -> Option<Arc<SyncTarget>> {
        Some(Arc::new(SyncTarget {
            file: file.try_clone().ok()?,
            queued: AtomicBool::new(false),
            error: Mutex::new(None),
        }))
    }

    /// Ask for a sync within [`BATCH_INTERVAL`] (a no-op if one is already pending). If the
    /// flusher cannot run, sync now.
    pub fn schedule(self: &Arc<Self>) {
        if self.queued.swap(true, Ordering::AcqRel) {
            return;
        }
        let ok = flusher().is_some_and(|f| {
            f.queue
                .lock()
                .map(|mut q| {
                    q.push(Arc::clone(self));
                    f.wake.notify_one();
                })
                .is_ok()
        });
        if !ok {
            self.sync_now();
        }
    }

    /// Sync now if a sync is pending (closing a handle, switching files).
    pub fn sync_if_pending(&self) {
        if self.queued.load(Ordering::Acquire) {
            self.sync_now();
        }
    }

    /// A background sync that failed since the last call (EIO, ENOSPC on some filesystems):
    /// appends already acknowledged may not be on the device.
    pub fn take_error(&self) -> Option<std::io::Error> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    fn sync_now(&self) {
        // Cleared first (a read-modify-write, so it orders with the appender's swap): an
        // append racing with this sync queues a new one.
        self.queued.swap(false, Ordering::AcqRel);
        if let Err(e) = self.file.sync_data()
            && let Ok(mut slot) = self.error.lock()
        {
            *slot = Some(e);
        }
    }
}

struct Flusher {
    queue: Mutex<Vec<Arc<SyncTarget>>>,
    wake: Condvar,
}

/// The process's flusher, started on first use; `None` if its thread could not start.
fn flusher() -> Option<&'static Flusher> {
    static FLUSHER: OnceLock<Option<&'static Flusher>> = OnceLock::new();
    *FLUSHER.get_or_init(|| {
        let f: &'static Flusher = Box::leak(Box::new(Flusher {
            queue: Mutex::new(Vec::new()),
            wake: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("psn-fsync".into())
            .spawn(move || run(f))
            .ok()
            .map(|_| f)
    })
}

/// Wait for work, let a batch interval of appends gather, sync every queued file; repeat.
fn run(f: &'static Flusher) {
    loop {
        let Ok(mut q) = f.queue.lock() else {
            return;
        };
        while q.is_empty() {
            q = match f.wake.wait(q) {
                Ok(q) => q,
                Err(_) => return,
            };
        }
        drop(q);
        std::thread::sleep(BATCH_INTERVAL);
        let batch = match f.queue.lock() {
            Ok(mut q) => std::mem::take(&mut *q),
            Err(_) => return,
        };
        for t in batch {
            t.sync_now();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn queued_targets_are_synced_within_the_interval() {
        let dir = std::env::temp_dir().join(format!("psn-flush-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let mut f = File::create(dir.join("f")).expect("create");
        let t = SyncTarget::new(&f).expect("target");
        f.write_all(b"x\n").expect("write");
        t.schedule();
        assert!(t.queued.load(Ordering::Acquire));
        t.schedule(); // already pending: no second queue entry
        let deadline = std::time::Instant::now() + BATCH_INTERVAL * 20;
        while t.queued.load(Ordering::Acquire) && std::time::Instant::now() < deadline {
            std::thread::sleep(BATCH_INTERVAL / 10);
        }
        assert!(!t.queued.load(Ordering::Acquire), "synced by the flusher");
        std::fs::remove_dir_all(&dir).ok();
    }
}
