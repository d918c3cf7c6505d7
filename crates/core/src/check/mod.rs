//! Store maintenance helpers used by the `pi-session` CLI (lib/cli/), run in parallel
//! over files: full-text search (`search`) and the line pass of `check` (`scan`).

pub mod scan;
pub mod search;

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The bytes of a regular file, up to the size it had when opened (never blocks on a FIFO,
/// never reads a device: those are refused, see [`crate::safefs::open_regular`]).
pub(crate) fn read_regular(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let o = crate::safefs::open_regular(path, true)?;
    let mut bytes = Vec::with_capacity(usize::try_from(o.size).unwrap_or(0).saturating_add(1));
    o.file.take(o.size).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Read each file and apply `f` to its bytes on `threads` workers (work-stealing by index);
/// results keep the order of `paths`, `None` for a file that could not be read.
pub(crate) fn par_map_files<T: Send>(
    paths: &[String],
    threads: usize,
    f: impl Fn(&[u8]) -> T + Sync,
) -> Vec<Option<T>> {
    let results: Vec<Mutex<Option<T>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let workers = threads.clamp(1, paths.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(p) = paths.get(i) else { break };
                    let r = read_regular(Path::new(p)).ok().map(|b| f(&b));
                    if let Ok(mut slot) = results[i].lock() {
                        *slot = r;
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .map(|m| m.into_inner().unwrap_or(None))
        .collect()
}
