//! Which session files changed since the last query, without a `stat` of every file.
//!
//! An open [`super::Index`] (cached per process by the binding) keeps an inotify watch on
//! its sessions directory and the project directories in it (Linux). Between two queries
//! the watch names the `*.jsonl` files that were written, created, removed, renamed or had
//! their attributes changed; only those are looked at. The kernel queues an event before
//! the writer's `write` returns, so an append acknowledged to its writer is seen by the
//! next query. Everything the watch cannot vouch for falls back to the full scan (a `stat`
//! of every file): the first query, a new or removed project directory, a watch removed
//! or a directory moved, a queue overflow, any read error, and at least every
//! [`FULL_EVERY`] as a safety net (writes the kernel does not report to inotify: other
//! machines on a network file system, writes through `mmap`). Elsewhere than Linux every
//! query is a full scan.

use std::path::Path;
use std::time::Duration;

/// Longest time between two full scans.
pub const FULL_EVERY: Duration = Duration::from_secs(30);

/// What changed since the last call.
pub enum Changes {
    /// Anything may have changed: scan everything.
    Full,
    /// Only these files (paths as the full scan spells them) may have changed.
    Paths(Vec<String>),
}

#[cfg(target_os = "linux")]
mod imp {
    use super::{Changes, FULL_EVERY};
    use rustix::fd::OwnedFd;
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};
    use std::collections::HashMap;
    use std::fs;
    use std::mem::MaybeUninit;
    use std::path::{Path, PathBuf};
    use std::time::Instant;

    pub struct Watch {
        fd: OwnedFd,
        root: i32,
        dirs: HashMap<i32, PathBuf>,
        since: Instant,
    }

    fn mask() -> WatchFlags {
        WatchFlags::MODIFY
            | WatchFlags::ATTRIB
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::CREATE
            | WatchFlags::DELETE
            | WatchFlags::MOVED_FROM
            | WatchFlags::MOVED_TO
            | WatchFlags::DELETE_SELF
            | WatchFlags::MOVE_SELF
            | WatchFlags::DONT_FOLLOW
            | WatchFlags::ONLYDIR
    }

    impl Watch {
        /// Watch `root` and its subdirectories (links not followed, as the full scan).
        /// To be called just before a full scan, so that nothing falls between the two.
        pub fn new(root: &Path) -> Option<Watch> {
            let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC).ok()?;
            let root_wd = inotify::add_watch(&fd, root, mask()).ok()?;
            let mut dirs = HashMap::new();
            dirs.insert(root_wd, root.to_path_buf());
            for e in fs::read_dir(root).ok()?.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    let p = e.path();
                    let wd = inotify::add_watch(&fd, &p, mask()).ok()?;
                    dirs.insert(wd, p);
                }
            }
            Some(Watch {
                fd,
                root: root_wd,
                dirs,
                since: Instant::now(),
            })
        }

        /// The files that changed since the watch was made or last asked.
        pub fn changes(&mut self) -> Changes {
            if self.since.elapsed() >= FULL_EVERY {
                return Changes::Full;
            }
            let mut out = Vec::new();
            let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
            let mut reader = inotify::Reader::new(&self.fd, &mut buf);
            loop {
                let ev = match reader.next() {
                    Ok(ev) => ev,
                    Err(rustix::io::Errno::AGAIN) => break,
                    Err(_) => return Changes::Full,
                };
                let flags = ev.events();
                if flags.intersects(
                    ReadFlags::QUEUE_OVERFLOW
                        | ReadFlags::IGNORED
                        | ReadFlags::DELETE_SELF
                        | ReadFlags::MOVE_SELF
                        | ReadFlags::UNMOUNT,
                ) {
                    return Changes::Full;
                }
                let Some(dir) = self.dirs.get(&ev.wd()) else {
                    return Changes::Full;
                };
                let Some(name) = ev.file_name().and_then(|n| n.to_str().ok()) else {
                    continue;
                };
                if flags.contains(ReadFlags::ISDIR) {
                    // A project directory came or went (or a directory inside one, which
                    // the scan does not read): only a new or removed one matters.
                    if ev.wd() == self.root
                        && flags.intersects(
                            ReadFlags::CREATE
                                | ReadFlags::DELETE
                                | ReadFlags::MOVED_FROM
                                | ReadFlags::MOVED_TO,
                        )
                    {
                        return Changes::Full;
                    }
                    continue;
                }
                if !name.ends_with(".jsonl") {
                    continue;
                }
                if let Some(p) = dir.join(name).to_str() {
                    out.push(p.to_string());
                }
            }
            out.sort_unstable();
            out.dedup();
            Changes::Paths(out)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::Changes;
    use std::path::Path;

    pub struct Watch;

    impl Watch {
        pub fn new(_root: &Path) -> Option<Watch> {
            None
        }
        pub fn changes(&mut self) -> Changes {
            Changes::Full
        }
    }
}

/// A watch of a sessions directory (see the module's documentation).
pub struct Watch(imp::Watch);

impl Watch {
    /// Start watching `root` (before a full scan of it); `None` where it cannot be watched.
    pub fn new(root: &Path) -> Option<Watch> {
        imp::Watch::new(root).map(Watch)
    }

    /// The files that may have changed since the last call, or `Changes::Full`.
    pub fn changes(&mut self) -> Changes {
        self.0.changes()
    }
}
