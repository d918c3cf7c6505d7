//! Crash-safety building blocks for the session store: the fsync policy, atomic whole-file
//! writes (temp file + fsync + rename/link + directory fsync) and the optional advisory lock.
//!
//! Every whole-file write first tries the atomic route; when that route is unavailable
//! (the directory is not writable, the target is a directory, the filesystem has no hard
//! links) it falls back to the reference's direct write, so errors and successes visible
//! through the API stay the reference's.

pub mod flusher;
use crate::error::{FsError, fs_error};
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `PI_SESSION_NATIVE_FSYNC` (read in the `config` module): when appended lines are forced to
/// stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FsyncMode {
    /// fsync after every append (and every whole-file write).
    Always,
    /// fsync appends within [`BATCH_INTERVAL`], on a background thread (see [`flusher`]);
    /// whole-file writes are always synced.
    #[default]
    Batch,
    /// Never fsync (whole-file writes are still atomic against process crashes).
    Never,
}

/// The batch mode's maximum age of unsynced appends (while appends keep coming).
pub const BATCH_INTERVAL: Duration = Duration::from_millis(100);

impl FsyncMode {
    /// Parse the environment variable's value; unknown values mean the default (batch).
    pub fn parse(value: Option<&str>) -> FsyncMode {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            Some("always") => FsyncMode::Always,
            Some("never") | Some("off") | Some("0") => FsyncMode::Never,
            _ => FsyncMode::Batch,
        }
    }

    /// Whether whole-file writes fsync the data and the directory.
    pub fn sync_whole_files(self) -> bool {
        self != FsyncMode::Never
    }
}

/// How a whole-file write treats an existing file at the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Fail with EEXIST (`openSync(path, "wx")`).
    Fail,
    /// Replace it (`openSync(path, "w")`).
    Replace,
}

#[cfg(test)]
thread_local! {
    /// Test hook: the next data write writes this many bytes, then fails with ENOSPC.
    // `const` already: clippy 1.97's false positive on windows-gnu (see discovery's
    // `for_each_line`).
    #[allow(clippy::missing_const_for_thread_local)]
    pub static FAULT_AFTER: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

/// `write_all`, with the test-only fault hook.
pub fn write_data(f: &File, buf: &[u8]) -> std::io::Result<()> {
    let mut f = f;
    #[cfg(test)]
    if let Some(n) = FAULT_AFTER.with(|c| c.take()) {
        f.write_all(buf.get(..n).unwrap_or(buf))?;
        return Err(std::io::ErrorKind::StorageFull.into());
    }
    f.write_all(buf)
}

/// Write `text` and a newline as one line, without copying the text into a new buffer
/// (one `writev`; a partial write is continued like `write_all`), with the test-only fault
/// hook of [`write_data`]. Answers the number of `write` calls it took: with one, the line
/// is contiguous in an `O_APPEND` file even if another process appends too.
pub fn write_line(f: &File, text: &[u8]) -> std::io::Result<usize> {
    let mut f = f;
    #[cfg(test)]
    if FAULT_AFTER.with(|c| c.get()).is_some() {
        let mut buf = Vec::with_capacity(text.len() + 1);
        buf.extend_from_slice(text);
        buf.push(b'\n');
        return write_data(f, &buf).map(|()| 1);
    }
    let total = text.len() + 1;
    let mut done = 0;
    let mut calls = 0;
    while done < total {
        calls += 1;
        let step = match text.get(done..) {
            Some(rest) if !rest.is_empty() => {
                f.write_vectored(&[std::io::IoSlice::new(rest), std::io::IoSlice::new(b"\n")])
            }
            _ => f.write(b"\n"),
        };
        match step {
            Ok(0) => return Err(std::io::ErrorKind::WriteZero.into()),
            Ok(n) => done += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(calls)
}

/// fsync a directory so a rename/link in it survives power loss. Best effort: some
/// filesystems refuse to fsync directories, which changes nothing about atomicity.
pub fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Make directories just created durable: `last` and every missing ancestor up to `first`
/// (the first one created, an ancestor of `last` or `last` itself) were made by a recursive
/// `mkdir`; the parent of each is fsynced, nearest first, up to the first ancestor that
/// existed before. Without it a power loss can take a new session folder, and every file
/// in it, although the files and the folder itself were fsynced: a directory's entry lives
/// in its parent.
pub fn sync_created_dirs(first: &Path, last: &Path) {
    let depth = |p: &Path| p.components().count();
    let mut dir = last;
    while depth(dir) >= depth(first) {
        let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) else {
            break;
        };
        sync_dir(parent);
        dir = parent;
    }
}

fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// A new temp file beside `target`, for a whole-file write: `tempfile` creates it with
/// `O_CREAT | O_EXCL` (never follows or reuses what is there) and removes it when dropped
/// unpersisted. `.{name}.{pid}.{random}.tmp`: never ends in `.jsonl`, so session discovery
/// ignores leftovers of a crash, and [`sweep_stale_temps`] reads the pid to tell them from a
/// live writer's. Mode 0666 before the umask, as `openSync(path, "w")` creates a file.
fn temp_file(target: &Path) -> std::io::Result<tempfile::NamedTempFile> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "session".to_string());
    let prefix = format!(".{name}.{}.", std::process::id());
    let mut b = tempfile::Builder::new();
    b.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(std::fs::Permissions::from_mode(0o666));
    }
    b.tempfile_in(parent_dir(target))
}

/// The reference's direct write: open (exclusive or truncating), write, close.
/// An exclusively created file that could not be written completely is removed again, so a
/// failed first flush never leaves a partial session behind.
fn write_direct(path: &Path, bytes: &[u8], existing: Existing) -> Result<(), FsError> {
    let mut opts = OpenOptions::new();
    opts.write(true);
    match existing {
        Existing::Fail => opts.create_new(true),
        Existing::Replace => opts.create(true).truncate(true),
    };
    let f = opts.open(path).map_err(|e| fs_error(&e, "open", path))?;
    if let Err(e) = write_data(&f, bytes) {
        if existing == Existing::Fail {
            drop(f);
            let _ = std::fs::remove_file(path);
        }
        return Err(fs_error(&e, "write", path));
    }
    Ok(())
}

/// Write `bytes` as the whole content of `path`, atomically where possible: a crash leaves
/// either the old state (no file, or the old content) or the complete new content.
pub fn write_file_atomic(
    path: &Path,
    bytes: &[u8],
    existing: Existing,
    sync: bool,
) -> Result<(), FsError> {
    // Rewrites go through a symlink to its target, like `openSync(path, "w")`.
    let mut target = path.to_path_buf();
    let meta = std::fs::symlink_metadata(path);
    match &meta {
        Ok(m) if m.file_type().is_symlink() => {
            if existing == Existing::Fail {
                return write_direct(path, bytes, existing);
            }
            match std::fs::canonicalize(path) {
                Ok(t) => target = t,
                Err(_) => return write_direct(path, bytes, existing),
            }
        }
        Ok(m) if !m.is_file() => return write_direct(path, bytes, existing),
        Ok(_) if existing == Existing::Fail => {
            return Err(fs_error(
                &std::io::ErrorKind::AlreadyExists.into(),
                "open",
                path,
            ));
        }
        _ => {}
    }
    let old_meta = std::fs::metadata(&target).ok().filter(|m| m.is_file());
    // From here on, a failure drops `tmp`, which removes the temp file.
    let tmp = match temp_file(&target) {
        Ok(t) => t,
        // Directory not writable, missing, ...: the reference's write gives the answer.
        Err(_) => return write_direct(path, bytes, existing),
    };
    if let Some(m) = &old_meta {
        // Keep the replaced file's mode, as an in-place rewrite would.
        let _ = tmp.as_file().set_permissions(m.permissions());
    }
    if let Err(e) = write_data(tmp.as_file(), bytes) {
        return Err(fs_error(&e, "write", path));
    }
    if sync && let Err(e) = tmp.as_file().sync_all() {
        return Err(fs_error(&e, "fsync", path));
    }
    match existing {
        // `persist_noclobber`: `renameat2(RENAME_NOREPLACE)`, or `link` + `unlink` where the
        // kernel or filesystem has no such rename: never replaces a file that appeared.
        Existing::Fail => match tmp.persist_noclobber(&target) {
            Ok(_) => {}
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                return Err(fs_error(&e.error, "open", path));
            }
            // Neither works here (some FUSE/network filesystems): direct exclusive write.
            Err(_) => return write_direct(path, bytes, existing),
        },
        Existing::Replace => {
            if tmp.persist(&target).is_err() {
                return write_direct(path, bytes, existing);
            }
        }
    }
    if sync {
        sync_dir(&parent_dir(&target));
    }
    sweep_stale_temps(&parent_dir(&target));
    Ok(())
}

/// Remove temp files of whole-file writes whose process died mid-write (a crash between
/// creating the temp and linking/renaming it). Only where `/proc` tells live pids apart.
pub fn sweep_stale_temps(dir: &Path) {
    if !Path::new("/proc/self").exists() {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in rd.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if !name.starts_with('.') || !name.ends_with(".tmp") {
            continue;
        }
        let mut parts = name.rsplitn(4, '.');
        let (_tmp, _n, pid) = (parts.next(), parts.next(), parts.next());
        if let Some(pid) = pid
            && !pid.is_empty()
            && pid.bytes().all(|b| b.is_ascii_digit())
            && !pid_alive(pid)
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}

/// Error of lock acquisition: `Session file <path> is locked by pid <pid>`.
pub fn locked_error(path: &Path, pid: &str) -> FsError {
    FsError {
        code: "ELOCKED".to_string(),
        message: format!("Session file {} is locked by pid {pid}", path.display()),
        os: None,
    }
}

/// A held `<file>.lock`: an exclusive `flock` on a file holding our pid. The kernel drops
/// the `flock` when the process dies, so a lock file left by a dead process (its pid no
/// longer in `/proc`) is simply taken over.
#[derive(Debug)]
pub struct LockGuard {
    /// The session file this lock protects.
    pub session: PathBuf,
    lock_path: PathBuf,
    /// `None`: the lock is held by another manager of this same process (not ours to drop).
    file: Option<File>,
}

fn lock_path_of(session: &Path) -> PathBuf {
    let mut s = session.as_os_str().to_os_string();
    s.push(".lock");
    PathBuf::from(s)
}

/// (device, inode) of a file; `(0, 0)` where the platform has no such notion.
pub fn file_id(m: &std::fs::Metadata) -> (u64, u64) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        (m.dev(), m.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        (0, 0)
    }
}

/// Whether a pid names a live process (Linux: `/proc/<pid>` exists).
fn pid_alive(pid: &str) -> bool {
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && Path::new("/proc").join(pid).exists()
}

/// Error of a lock path that holds something we must not touch.
fn foreign_lock_error(session: &Path, lock_path: &Path, what: &str) -> FsError {
    FsError {
        code: "ELOCKED".to_string(),
        message: format!(
            "Session file {} cannot be locked: {} {what}; not touching it (remove it to continue)",
            session.display(),
            lock_path.display()
        ),
        os: None,
    }
}

/// At most this many bytes of a lock file are read (a pid).
const LOCK_READ_MAX: u64 = 64;

/// The lock files this process holds, as acquired. A second manager of the same process shares
/// the lock when its path is here, without relying on reading our pid back through a second
/// handle: on Windows the holder's whole-file `LockFileEx` is mandatory, so that read fails there
/// (Wine does not enforce it, so `npm run test:cross` cannot show it; the test below makes the
/// read give another pid instead).
fn held() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    static HELD: std::sync::OnceLock<std::sync::Mutex<Vec<PathBuf>>> = std::sync::OnceLock::new();
    HELD.get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Whether two lock paths name the same lock: equal, or on Windows equal but for case (NTFS
/// names are case-insensitive, as pi 1.5.0's path comparisons there).
fn same_lock_path(a: &Path, b: &Path) -> bool {
    if cfg!(windows) {
        a.as_os_str().to_string_lossy().to_lowercase()
            == b.as_os_str().to_string_lossy().to_lowercase()
    } else {
        a == b
    }
}

fn held_here(lock_path: &Path) -> bool {
    held().iter().any(|h| same_lock_path(h, lock_path))
}

impl LockGuard {
    /// Take `<session>.lock`. The file is created with `O_CREAT | O_EXCL | O_NOFOLLOW`, mode
    /// `0600`, and only a file created so is ever written. An existing lock file is opened
    /// without following a link (a symbolic link there is refused, never followed); when
    /// its `flock` is free (its holder died), it is taken over by unlinking that name and
    /// creating a new file, never by truncating the old one (which could be a hard link to
    /// anything).
    pub fn acquire(session: &Path) -> Result<LockGuard, FsError> {
        let lock_path = lock_path_of(session);
        let own = std::process::id().to_string();
        for _ in 0..5 {
            match crate::safefs::create_exclusive(&lock_path, 0o600) {
                Ok(mut f) => {
                    match f.try_lock() {
                        Ok(()) => {}
                        // Someone opened our fresh file and locked it first: it is theirs.
                        Err(std::fs::TryLockError::WouldBlock) => continue,
                        Err(std::fs::TryLockError::Error(e)) => {
                            let _ = std::fs::remove_file(&lock_path);
                            return Err(fs_error(&e, "flock", &lock_path));
                        }
                    }
                    if let Err(e) = f.write_all(own.as_bytes()) {
                        let _ = std::fs::remove_file(&lock_path);
                        return Err(fs_error(&e, "write", &lock_path));
                    }
                    // A releasing holder may have unlinked the name meanwhile: check it is ours.
                    if !same_inode(&lock_path, &f) {
                        continue;
                    }
                    held().push(lock_path.clone());
                    return Ok(LockGuard {
                        session: session.to_path_buf(),
                        lock_path,
                        file: Some(f),
                    });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(fs_error(&e, "open", &lock_path)),
            }
            // Something is at the lock path.
            let meta = match std::fs::symlink_metadata(&lock_path) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(fs_error(&e, "lstat", &lock_path)),
            };
            if meta.file_type().is_symlink() {
                return Err(foreign_lock_error(
                    session,
                    &lock_path,
                    "is a symbolic link",
                ));
            }
            let f = match crate::safefs::open_existing_rw_nofollow(&lock_path) {
                Ok(f) => f,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e)
                    if crate::safefs::is_not_regular(&e)
                        || crate::error::os_code(&e) == Some(crate::error::Code::Eloop) =>
                {
                    return Err(foreign_lock_error(
                        session,
                        &lock_path,
                        "is not a regular file",
                    ));
                }
                Err(e) => return Err(fs_error(&e, "open", &lock_path)),
            };
            match f.try_lock() {
                Ok(()) => {}
                Err(std::fs::TryLockError::WouldBlock) => {
                    let mut pid = String::new();
                    let _ = (&f).take(LOCK_READ_MAX).read_to_string(&mut pid);
                    let pid = pid.trim().to_string();
                    if pid == own || held_here(&lock_path) {
                        return Ok(LockGuard {
                            session: session.to_path_buf(),
                            lock_path,
                            file: None,
                        });
                    }
                    // The flock is held: by a live process (the kernel drops it on exit).
                    // `pid_alive` only decides what to show.
                    let shown = if pid_alive(&pid) { pid.as_str() } else { "?" };
                    return Err(locked_error(session, shown));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(fs_error(&e, "flock", &lock_path));
                }
            }
            // Free: its holder died (or a holder is between unlink and close). Take it over
            // if it looks like a lock file of ours: owned by us, small, one link.
            let looks_ours = f.metadata().is_ok_and(|m| {
                #[cfg(unix)]
                {
                    use std::os::unix::fs::MetadataExt;
                    m.uid() == crate::safefs::euid() && m.nlink() == 1 && m.len() <= LOCK_READ_MAX
                }
                #[cfg(not(unix))]
                {
                    m.len() <= LOCK_READ_MAX
                }
            });
            if !looks_ours {
                return Err(foreign_lock_error(
                    session,
                    &lock_path,
                    "is not a lock file of this user (another owner, hard links, or content)",
                ));
            }
            if same_inode(&lock_path, &f) {
                // Unlinking removes the name only (whatever it is now), never a target.
                let _ = std::fs::remove_file(&lock_path);
            }
            drop(f);
        }
        Err(locked_error(session, "?"))
    }
}

/// Whether `path` (not followed) is the inode open as `f`.
fn same_inode(path: &Path, f: &File) -> bool {
    match (std::fs::symlink_metadata(path), f.metadata()) {
        (Ok(a), Ok(b)) => file_id(&a) == file_id(&b),
        _ => false,
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        if let Some(f) = self.file.take() {
            // Unlink while still holding the flock; waiters re-check the inode. Only the
            // name that still is our file.
            if same_inode(&self.lock_path, &f) {
                let _ = std::fs::remove_file(&self.lock_path);
            }
            drop(f);
            let mut held = held();
            if let Some(at) = held.iter().position(|h| h == &self.lock_path) {
                held.swap_remove(at);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("psn-dur-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::create_dir_all(&d);
        d
    }

    fn temps(dir: &Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".tmp"))
            .collect()
    }

    #[test]
    fn atomic_writes_create_replace_and_refuse() {
        let dir = scratch("atomic");
        let f = dir.join("s.jsonl");
        assert!(write_file_atomic(&f, b"one\n", Existing::Fail, true).is_ok());
        assert_eq!(std::fs::read(&f).ok().as_deref(), Some(&b"one\n"[..]));
        // A file that is there is never replaced by an exclusive write (EEXIST, as `wx`).
        let e = write_file_atomic(&f, b"two\n", Existing::Fail, true).err();
        assert_eq!(e.map(|e| e.code), Some("EEXIST".to_string()));
        assert_eq!(std::fs::read(&f).ok().as_deref(), Some(&b"one\n"[..]));
        assert!(write_file_atomic(&f, b"three\n", Existing::Replace, false).is_ok());
        assert_eq!(std::fs::read(&f).ok().as_deref(), Some(&b"three\n"[..]));
        assert!(temps(&dir).is_empty(), "{:?}", temps(&dir));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = |p: &Path| {
                std::fs::metadata(p)
                    .map(|m| m.permissions().mode() & 0o777)
                    .ok()
            };
            // A new file gets what `openSync(path, "w")` gives: 0666 less the umask.
            let plain = dir.join("plain");
            let _ = File::create(&plain);
            assert_eq!(mode(&f), mode(&plain));
            // A replaced file keeps its mode.
            let _ = std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640));
            assert!(write_file_atomic(&f, b"four\n", Existing::Replace, true).is_ok());
            assert_eq!(mode(&f), Some(0o640));
            // A failed write (ENOSPC after 2 bytes) leaves the old content and no temp.
            FAULT_AFTER.with(|c| c.set(Some(2)));
            let e = write_file_atomic(&f, b"five\n", Existing::Replace, true).err();
            assert_eq!(e.map(|e| e.code), Some("ENOSPC".to_string()));
            assert_eq!(std::fs::read(&f).ok().as_deref(), Some(&b"four\n"[..]));
            assert!(temps(&dir).is_empty(), "{:?}", temps(&dir));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The temp names `tempfile` makes carry our pid where the sweep reads it: a live
    /// writer's temp stays, a dead one's goes.
    #[test]
    fn sweep_reads_the_pid_of_temp_names() {
        if !Path::new("/proc/self").exists() {
            eprintln!("no /proc: the sweep is off here");
            return;
        }
        let dir = scratch("sweep");
        let live = temp_file(&dir.join("s.jsonl"));
        let Ok(live) = live.and_then(|t| t.keep().map_err(|e| e.error)) else {
            panic!("temp file not created");
        };
        let live_name = live.1.file_name().map(|n| n.to_string_lossy().into_owned());
        let live_name = live_name.unwrap_or_default();
        let own = format!(".{}.", std::process::id());
        assert!(live_name.starts_with(".s.jsonl.") && live_name.contains(&own));
        // The same name from a pid that is not running (above the kernel's pid_max).
        let dead_name = live_name.replace(&own, ".999999999.");
        let _ = std::fs::write(dir.join(&dead_name), b"x");
        sweep_stale_temps(&dir);
        assert_eq!(temps(&dir), vec![live_name]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
