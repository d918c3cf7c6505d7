//! The batch fsync policy's background flusher: one thread per process syncs files that
//! received appends, at most [`BATCH_INTERVAL`] after the first unsynced one.
//!
//! Why a thread: an inline `fdatasync` every 100 ms cost the appending caller (pi's main
//! thread) several milliseconds each time, on average more than the append itself. The
//! write still happens in the caller (so `kill -9` never loses an acknowledged append);
//! only the flush to the device moves off its path.
//!
//! The thread dies with the process, so the process's exit syncs what is still queued
//! ([`sync_all_pending`], registered with the C library's `atexit` when the flusher starts):
//! `pi -p` appends its last turn a few milliseconds before it exits.

use super::BATCH_INTERVAL;
use std::fs::File;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};

/// A file (its own descriptor, shared with nobody) that the flusher syncs when queued.
#[derive(Debug)]
pub struct SyncTarget {
    file: File,
    /// (device, inode) of the file ([`super::file_id`]): [`sync_pending_of`] finds it by that.
    id: (u64, u64),
    queued: AtomicBool,
    /// Held during a sync of this file: a caller that finds nothing pending still waits for
    /// a sync in flight (the flusher's), so "synced" means on the device when it returns.
    in_flight: Mutex<()>,
    /// The last failed background sync, reported by the next append ([`Self::take_error`]).
    error: Mutex<Option<std::io::Error>>,
}

impl SyncTarget {
    /// A target for `file` (a duplicate descriptor of it), or `None` if it cannot be had.
    pub fn new(file: &File) -> Option<Arc<SyncTarget>> {
        let id = file.metadata().map_or((0, 0), |m| super::file_id(&m));
        Some(Arc::new(SyncTarget {
            file: file.try_clone().ok()?,
            id,
            queued: AtomicBool::new(false),
            in_flight: Mutex::new(()),
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
            self.sync_if_pending();
        }
    }

    /// Sync now if a sync is pending (closing a handle, switching files). The flusher then
    /// skips it (its flag is clear), so a file is never synced twice for the same appends.
    pub fn sync_if_pending(&self) {
        let _sync = self
            .in_flight
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Cleared first (a read-modify-write, so it orders with the appender's swap): an
        // append racing with this sync queues a new one.
        if self.queued.swap(false, Ordering::AcqRel) {
            self.sync_data();
        }
    }

    /// Whether appends wait for a sync.
    pub fn pending(&self) -> bool {
        self.queued.load(Ordering::Acquire)
    }

    /// A background sync that failed since the last call (EIO, ENOSPC on some filesystems):
    /// appends already acknowledged may not be on the device.
    pub fn take_error(&self) -> Option<std::io::Error> {
        self.error.lock().ok().and_then(|mut e| e.take())
    }

    fn sync_data(&self) {
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
    /// Held while a batch taken from the queue is being synced: [`sync_all_pending`] waits
    /// for the thread's batch to be on the device, not only for the queue to be empty.
    syncing: Mutex<()>,
}

impl Flusher {
    /// Sync every queued file now (each once: the queue holds a target at most once), after
    /// any batch the thread is syncing.
    fn sync_queued(&self) {
        let _busy = self
            .syncing
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let batch = std::mem::take(
            &mut *self
                .queue
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        for t in batch {
            // A target synced meanwhile by a file switch has its flag clear: not again.
            t.sync_if_pending();
        }
    }
}

static FLUSHER: OnceLock<Option<&'static Flusher>> = OnceLock::new();

/// The process's flusher, started on first use; `None` if its thread could not start.
fn flusher() -> Option<&'static Flusher> {
    *FLUSHER.get_or_init(|| {
        let f: &'static Flusher = Box::leak(Box::new(Flusher {
            queue: Mutex::new(Vec::new()),
            wake: Condvar::new(),
            syncing: Mutex::new(()),
        }));
        let started = std::thread::Builder::new()
            .name("psn-fsync".into())
            .spawn(move || run(f))
            .ok()
            .map(|_| f);
        if started.is_some() {
            sync_at_exit();
        }
        started
    })
}

/// Have the process's normal exit (`exit()`: Node's `process.exit`, the end of the event
/// loop, an uncaught exception) sync the appends still queued. napi's environment cleanup
/// hooks do not run on `process.exit()` of Node's main thread, which is how `pi -p`, `/quit`,
/// Ctrl+C twice and pi's SIGTERM handler end; `exit()` runs the C library's `atexit`
/// handlers in all of them.
fn sync_at_exit() {
    extern "C" fn at_exit() {
        sync_all_pending();
    }
    // SAFETY: `atexit` only stores the pointer of a function with the C ABI and no
    // arguments, which `at_exit` is; it lives as long as this library is loaded, and
    // glibc's `atexit` (registered with this object's `__dso_handle`) runs it before an
    // unload, musl never unloads. `at_exit` does not unwind: `sync_all_pending` takes
    // poison-tolerant locks and only calls `fdatasync`.
    let failed = unsafe { libc::atexit(at_exit) } != 0;
    if failed {
        // No handler (the C library's table is full): appends then get the flusher's
        // interval only, as before; nothing else changes.
        eprintln!("pi-session-native: cannot register the exit-time fsync of batched appends");
    }
}

/// Sync every file with appends the batch policy has not synced yet: at most one
/// `fdatasync` per such file; files without pending appends cost nothing. Runs at process
/// exit (see [`sync_at_exit`]); callable any time.
pub fn sync_all_pending() {
    if let Some(Some(f)) = FLUSHER.get() {
        f.sync_queued();
    }
}

/// Sync the pending appends of the file with (device, inode) `id`, whoever appended them
/// (another session of this process): `forkFrom` copies a file that may have some.
pub fn sync_pending_of(id: (u64, u64)) {
    let Some(Some(f)) = FLUSHER.get() else {
        return;
    };
    // After a batch the thread took from the queue (it may hold this file).
    let _busy = f
        .syncing
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let hits: Vec<Arc<SyncTarget>> = f
        .queue
        .lock()
        .map(|q| q.iter().filter(|t| t.id == id).cloned().collect())
        .unwrap_or_default();
    for t in hits {
        t.sync_if_pending();
    }
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
        f.sync_queued();
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

    /// What the exit hook and `forkFrom` call: pending targets are synced at once, without
    /// waiting for the interval.
    #[test]
    fn pending_targets_are_synced_on_demand() {
        let dir = std::env::temp_dir().join(format!("psn-flush-now-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let mut a = File::create(dir.join("a")).expect("create");
        let mut b = File::create(dir.join("b")).expect("create");
        let (ta, tb) = (
            SyncTarget::new(&a).expect("target"),
            SyncTarget::new(&b).expect("target"),
        );
        a.write_all(b"x\n").expect("write");
        b.write_all(b"y\n").expect("write");
        ta.schedule();
        tb.schedule();
        let id = super::super::file_id(&std::fs::metadata(dir.join("a")).expect("stat"));
        sync_pending_of(id);
        assert!(!ta.pending(), "the file asked for is synced");
        sync_all_pending();
        assert!(!tb.pending(), "every other one at exit");
        // Nothing pending: nothing to do (and no second sync of the same appends).
        sync_all_pending();
        assert!(!ta.pending() && !tb.pending());
        std::fs::remove_dir_all(&dir).ok();
    }
}
