//! Persistence rules of the reference's `SessionManager`, over a [`Tree`]:
//! no file until the session holds a user or assistant message, then the whole buffer written
//! with exclusive create; afterwards one line per append; whole-file rewrites for migrated and
//! branched sessions. A failed write leaves memory as it was before the call.
//!
//! Durability (docs/durability.md): whole-file writes are atomic (temp file, fsync, link or
//! rename, directory fsync; see [`crate::durability`]); an append is one `write` of the whole
//! line on a kept `O_APPEND` handle, cut back with `set_len` if it fails; a file that vanished,
//! was replaced or truncated under an open session is rewritten whole from memory. A torn last
//! line found on load (a crash of a writer without these guarantees) is handled like the
//! reference: skipped as malformed, and a newline is appended so later lines start clean.

pub use crate::error::{FsError, OsFields, fs_error};

use crate::config::{Locking, Settings};
use crate::durability::flusher::SyncTarget;
use crate::durability::{self, Existing, FsyncMode, LockGuard};
use crate::entry::{Entry, FileSource, Key, Text};
use crate::tree::Tree;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Errors of store operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    Fs(FsError),
    /// A line handed in for appending is not a JSON value the store can index.
    InvalidLine,
    /// The session file was truncated in place behind our back, and these entries' texts
    /// lived only in it. The caller hands their JSON back ([`Store::restore_texts`]; the
    /// JS layer holds the objects of every entry it appended) and retries.
    NeedsTexts(Vec<u32>),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Fs(e) => e.fmt(f),
            StoreError::InvalidLine => f.write_str("entry is not valid JSON"),
            StoreError::NeedsTexts(v) => write!(
                f,
                "session file was truncated; {} entries must be restored from memory",
                v.len()
            ),
        }
    }
}

impl From<FsError> for StoreError {
    fn from(e: FsError) -> Self {
        StoreError::Fs(e)
    }
}

/// An open `O_APPEND` handle on the session file, kept between appends. It is opened for
/// reading too: an appended entry keeps only its place in the file and is read back through
/// it (see [`Store::append_last`]).
#[derive(Debug)]
struct AppendHandle {
    path: PathBuf,
    src: Arc<FileSource>,
    /// (device, inode) when opened.
    id: (u64, u64),
    /// The file is at least this long (our last write ended there; others may add more,
    /// but a shorter file was truncated behind our back).
    min_len: u64,
    /// Batch mode: the background flusher's handle on this file.
    sync: Option<Arc<SyncTarget>>,
}

/// The file the entries were last loaded from, as it was then. Until the first append opens a
/// handle (which then does the checking), that append compares the path with it: a file
/// truncated or replaced between the load and the first append is recovered like one
/// truncated or replaced later (see [`Store::append_last`]).
#[derive(Debug)]
struct LoadedFile {
    path: PathBuf,
    /// (device, inode) after the load.
    id: (u64, u64),
    /// Length after the load (and its newline repair, if any).
    len: u64,
}

/// A session: the tree plus where and whether it is persisted.
#[derive(Debug, Default)]
pub struct Store {
    pub tree: Tree,
    pub persist: Persistence,
    pub file: Option<PathBuf>,
    pub flushed: bool,
    /// Counter that makes object-valued ids unique keys.
    unique: usize,
    /// `PI_SESSION_NATIVE_FSYNC` ([`Settings`]).
    pub fsync: FsyncMode,
    /// `PI_SESSION_NATIVE_LOCK=1`: take `<file>.lock` on the first write ([`Settings`]).
    pub lock: Locking,
    handle: Option<AppendHandle>,
    loaded: Option<LoadedFile>,
    held_lock: Option<LockGuard>,
    /// [`Store::restore_texts`] ran: the next recovery of a truncated file proceeds with
    /// what it has (an entry the caller could not give back fails the rewrite's read).
    texts_restored: bool,
}

/// Whether a store writes its session file (the reference's `persist`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Persistence {
    /// In memory only (`SessionManager.inMemory`).
    #[default]
    Memory,
    /// Written to its file by the reference's rules.
    File,
}

/// Whether an append checks that its entry's id is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdCheck {
    /// Nothing is appended when an entry with that id exists (`Ok(false)`).
    Check,
    /// Appended as it comes (an id the caller already drew through the reference's loop).
    Unchecked,
}

impl Store {
    /// A store with the default settings (not the environment's).
    pub fn new(persist: Persistence) -> Store {
        Store::with_settings(persist, &Settings::default())
    }

    /// A store with `settings` (fsync mode and locking).
    pub fn with_settings(persist: Persistence, settings: &Settings) -> Store {
        Store {
            persist,
            fsync: settings.fsync,
            lock: settings.lock,
            ..Store::default()
        }
    }

    /// Whether this store writes its file.
    fn persisted(&self) -> bool {
        self.persist == Persistence::File
    }

    /// Parse a line with this store's unique counter.
    pub fn parse_line(&mut self, line: String) -> Option<Entry> {
        self.unique += 1;
        Entry::parse(line, self.unique)
    }

    /// [`Store::parse_line`] for `JSON.stringify` output (see [`Entry::parse_stringified`]).
    fn parse_stringified_line(&mut self, line: String) -> Result<Entry, StoreError> {
        self.unique += 1;
        Entry::parse_stringified(line, self.unique).ok_or(StoreError::InvalidLine)
    }

    /// Replace all entries (new session, loaded file, branched session).
    pub fn replace(&mut self, entries: Vec<Entry>) {
        self.tree = Tree::from_entries(entries);
        // New entries (a load notes its file again right after: `note_loaded`).
        self.loaded = None;
    }

    /// The entries were just loaded from `path`, read through a descriptor on `file`
    /// ((device, inode), length then; see [`LoadedFile`]); `repaired`: a newline was appended
    /// since. Without `file` nothing is noted (the first append then checks nothing).
    pub fn note_loaded(&mut self, path: &Path, file: Option<((u64, u64), u64)>, repaired: bool) {
        self.loaded = file.map(|(id, len)| LoadedFile {
            path: path.to_path_buf(),
            id,
            len: len + u64::from(repaired),
        });
    }

    /// Append one serialized entry and persist it (`_appendEntry` + `_persist`).
    pub fn append(&mut self, line: String) -> Result<(), StoreError> {
        let entry = self.parse_line(line).ok_or(StoreError::InvalidLine)?;
        self.append_entry(entry)
    }

    /// [`Store::append`] for the `JSON.stringify` output of an entry object (what the JS
    /// `append*` methods send): the line is valid JSON by construction, so its strings are
    /// not validated again (10–20% of the scan of a 2 KB message line, BENCHMARKS.md).
    pub fn append_stringified(&mut self, line: String) -> Result<(), StoreError> {
        let entry = self.parse_stringified_line(line)?;
        self.append_entry(entry)
    }

    /// [`Store::append_stringified`] for an entry whose id is a fresh candidate: when an
    /// entry with that id exists, nothing is appended and the answer is `Ok(false)` (the
    /// caller draws another id, as the reference's `generateId` loop does before it builds
    /// the entry).
    pub fn append_stringified_if_new_id(&mut self, line: String) -> Result<bool, StoreError> {
        let entry = self.parse_stringified_line(line)?;
        self.append_unless_taken(entry, true)
    }

    /// Append an entry whose index fields were given, not scanned ([`Entry::from_fields`]).
    /// In-memory stores take it without text (`Text::Js`); a persisted store needs its text
    /// (it writes the line) and refuses one without. With `check`, `Ok(false)` (nothing
    /// appended) when the id is taken, as in [`Store::append_stringified_if_new_id`]; without,
    /// appended as it comes (the reference's last-resort full UUID is not checked either).
    pub fn append_fields(&mut self, entry: Entry, check: IdCheck) -> Result<bool, StoreError> {
        if self.persisted() && matches!(entry.text, Text::Js) {
            return Err(StoreError::InvalidLine);
        }
        self.append_unless_taken(entry, check == IdCheck::Check)
    }

    /// Append entries whose index fields were given ([`Entry::from_fields`]) to an in-memory
    /// store, unchecked (the JS layer checked their ids): nothing to persist, so nothing to
    /// undo. A persisted store refuses (it writes each append as it comes).
    /// `n` is how many `entries` yields (room is made for them first).
    pub fn extend_in_memory(
        &mut self,
        n: usize,
        entries: impl Iterator<Item = Entry>,
    ) -> Result<(), StoreError> {
        if self.persisted() {
            return Err(StoreError::InvalidLine);
        }
        self.tree.reserve(n);
        for e in entries {
            self.tree.push(e);
        }
        Ok(())
    }

    /// Append `entry`; with `check`, only if no entry has its id (`Ok(false)` otherwise).
    fn append_unless_taken(&mut self, entry: Entry, check: bool) -> Result<bool, StoreError> {
        if check && self.tree.index_of(&entry.id).is_some() {
            return Ok(false);
        }
        self.append_entry(entry)?;
        Ok(true)
    }

    fn append_entry(&mut self, entry: Entry) -> Result<(), StoreError> {
        let undo = self.tree.undo_info(&entry);
        let previous_leaf: Option<Key> = self.tree.leaf.clone();
        self.tree.push(entry);
        if let Err(e) = self.persist_last() {
            self.tree.pop(previous_leaf, undo);
            return Err(e);
        }
        Ok(())
    }

    /// fsync appends that the batch policy has not synced yet.
    pub fn sync_pending(&mut self) {
        if let Some(t) = self.handle.as_ref().and_then(|h| h.sync.as_ref()) {
            t.sync_if_pending();
        }
    }

    /// Take (or keep) the advisory lock for `path` when locking is enabled.
    fn ensure_lock(&mut self, path: &Path) -> Result<(), FsError> {
        if self.lock == Locking::Off {
            return Ok(());
        }
        if self.held_lock.as_ref().is_some_and(|l| l.session == path) {
            return Ok(());
        }
        self.held_lock = None;
        self.held_lock = Some(LockGuard::acquire(path)?);
        Ok(())
    }

    /// Drop the append handle if it belongs to another path (its pending appends synced).
    fn close_stale_handle(&mut self, path: &Path) {
        if self.handle.as_ref().is_some_and(|h| h.path != path) {
            self.close_handle();
        }
    }

    /// Drop the append handle, its pending appends synced first: a file switch or a rewrite
    /// never leaves the old file's last appends to the flusher while the new file is made
    /// durable (after a power loss the new file could exist without them).
    fn close_handle(&mut self) {
        self.sync_pending();
        self.handle = None;
    }

    /// The session now writes to `path` (or nowhere): a handle on another file is closed,
    /// its pending appends synced (`setSessionFile`, `newSession`, `createBranchedSession`).
    pub fn switch_file(&mut self, path: Option<PathBuf>, flushed: bool) {
        match &path {
            Some(p) => self.close_stale_handle(p),
            None => self.close_handle(),
        }
        self.file = path;
        self.flushed = flushed;
    }

    fn persist_last(&mut self) -> Result<(), StoreError> {
        if !self.persisted() {
            return Ok(());
        }
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if !self.flushed {
            if self.tree.conversation == 0 {
                return Ok(());
            }
            self.ensure_lock(&path)?;
            self.close_stale_handle(&path);
            write_all_exclusive_with(&path, &self.tree.entries, self.fsync.sync_whole_files())?;
            self.flushed = true;
            return Ok(());
        }
        self.ensure_lock(&path)?;
        self.close_stale_handle(&path);
        self.append_last(&path)
    }

    /// Rewrite the whole file from memory after it vanished, was replaced or truncated.
    fn recover(&mut self, path: &Path, what: &str) -> Result<(), FsError> {
        let bytes = match entries_bytes(&self.tree.entries) {
            Ok(bytes) => bytes,
            Err(e) if what == "was truncated" || what == "was overwritten" => {
                // Some entries lived only in the part another program cut away, and nobody
                // gave their texts back (a large file-backed load that JS never
                // materialized): the file cannot be rebuilt. Do what the reference does,
                // append the new entry to what is left, rather than refuse every append.
                self.handle = None;
                self.loaded = None;
                let last = match self.tree.entries.last() {
                    Some(entry) => entry.text.read().map_err(|e| fs_error(&e, "read", path))?,
                    None => std::borrow::Cow::Borrowed(""),
                };
                // Never glued onto a partial line: a newline first when the file does not
                // end with one.
                let size = std::fs::metadata(path).map_or(0, |m| m.len());
                let ends_clean = size == 0 || File::open(path).is_ok_and(|f| newline_at(&f, size));
                if ends_clean {
                    append_line(path, &last)?;
                } else {
                    append_line(path, &format!("\n{last}"))?;
                }
                eprintln!(
                    "pi-session-native: session file {} {what} by another program; \
                     entries that lived only in the damaged part cannot be restored ({e}); \
                     appended the new entry on a line of its own after what is left",
                    path.display()
                );
                return Ok(());
            }
            Err(e) => return Err(fs_error(&e, "read", path)),
        };
        self.handle = None;
        self.loaded = None;
        durability::write_file_atomic(
            path,
            &bytes,
            Existing::Replace,
            self.fsync.sync_whole_files(),
        )?;
        eprintln!(
            "pi-session-native: session file {} {what}; rewrote it from memory",
            path.display()
        );
        // The next append opens a fresh handle on the new file.
        Ok(())
    }

    /// Make every file-backed text of the current file (handle or load) that ends past `cut`
    /// unreadable (EIO).
    fn invalidate_texts_from(&self, cut: u64) {
        let id = match (&self.handle, &self.loaded) {
            (Some(h), _) => h.id,
            (None, Some(l)) => l.id,
            (None, None) => return,
        };
        let own = self.handle.as_ref().map(|h| &h.src);
        for i in self.texts_in(id, own) {
            if let Some(Text::File { src, .. }) = self.tree.entries.get(i as usize).map(|e| &e.text)
            {
                src.invalidate_from(cut);
            }
        }
    }

    /// Entries whose text lives only in the file with (device, inode) `id` (appended through
    /// the handle `src`, or loaded file-backed from the same inode): after an in-place
    /// truncation their bytes are gone or may be someone else's.
    fn texts_in(&self, id: (u64, u64), own: Option<&Arc<FileSource>>) -> Vec<u32> {
        let mut same: Option<(*const FileSource, bool)> = None;
        let mut out = Vec::new();
        for (i, e) in self.tree.entries.iter().enumerate() {
            let Text::File { src, .. } = &e.text else {
                continue;
            };
            let ptr = Arc::as_ptr(src);
            let hit = match same {
                Some((p, hit)) if p == ptr => hit,
                _ => {
                    let hit = own.is_some_and(|h| Arc::ptr_eq(src, h))
                        || src
                            .file
                            .metadata()
                            .is_ok_and(|m| durability::file_id(&m) == id);
                    same = Some((ptr, hit));
                    hit
                }
            };
            if hit {
                out.push(i as u32);
            }
        }
        out
    }

    /// Give entries their JSON text back (after [`StoreError::NeedsTexts`]): `lines[k]` is the
    /// `JSON.stringify` of entry `indices[k]`'s object, `None` when the caller has none. The
    /// entry keeps its place in the tree (id, parent, label target); the rest of its index
    /// is taken from the new text. A text of another entry type is ignored.
    pub fn restore_texts(&mut self, indices: &[u32], lines: Vec<Option<String>>) {
        self.texts_restored = true;
        for (&i, line) in indices.iter().zip(lines) {
            let Some(mut fresh) = line.and_then(|l| self.parse_line(l)) else {
                continue;
            };
            let Some(old) = self.tree.entries.get_mut(i as usize) else {
                continue;
            };
            if fresh.etype != old.etype {
                continue;
            }
            fresh.id = old.id.clone();
            fresh.parent = old.parent.clone();
            if fresh.target().is_some() {
                fresh.other = old.other.clone();
            }
            *old = fresh;
        }
    }

    /// Append the last entry as one line on the kept `O_APPEND` handle.
    fn append_last(&mut self, path: &Path) -> Result<(), StoreError> {
        let restored = std::mem::take(&mut self.texts_restored);
        // Is the handle still the file at `path`, with everything we wrote?
        let current = std::fs::metadata(path);
        let mut problem: Option<&str> = None;
        match (&current, &self.handle) {
            (Ok(m), Some(h)) if m.is_file() => {
                if durability::file_id(m) != h.id {
                    problem = Some("was replaced");
                } else if m.len() < h.min_len {
                    problem = Some("was truncated");
                } else if m.len() == h.min_len && !newline_at(&h.src.file, h.min_len) {
                    // Same length, but our last line no longer ends where we wrote it:
                    // overwritten in place. Never append after a partial line. A file that
                    // grew is another writer appending (its lines are whole, O_APPEND): never
                    // rewrite it from our memory, which would erase that writer's lines.
                    problem = Some("was overwritten");
                }
            }
            // The first append since a load: the same questions, about the file as loaded.
            (Ok(m), None) if m.is_file() => {
                if let Some(l) = self.loaded.as_ref().filter(|l| l.path == path) {
                    if durability::file_id(m) != l.id {
                        problem = Some("was replaced");
                    } else if m.len() < l.len {
                        problem = Some("was truncated");
                    } else if m.len() == l.len
                        && File::open(path).is_ok_and(|f| !newline_at(&f, l.len))
                    {
                        // Only at the same length, as above: a load can catch another
                        // writer's line half-written, and a file that grew since is appended
                        // to, never rewritten over that writer's lines.
                        problem = Some("was overwritten");
                    }
                }
            }
            (Ok(m), _) if !m.is_file() => {
                // A directory (or other non-file) took its place: the reference's append
                // fails with that OS error; do the same.
                self.handle = None;
                let last = self.tree.entries.last().and_then(|e| e.text.read().ok());
                return Ok(append_line(path, last.as_deref().unwrap_or(""))?);
            }
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => {
                problem = Some("vanished");
            }
            _ => {}
        }
        if let Some(what) = problem {
            let damaged = what == "was truncated" || what == "was overwritten";
            if damaged {
                // Texts read back from the old inode past the damage would be someone
                // else's bytes: they fail with EIO from now on.
                let end = match (&self.handle, &self.loaded) {
                    (Some(h), _) => h.min_len,
                    (None, Some(l)) => l.len,
                    (None, None) => 0,
                };
                let now = current.as_ref().map_or(0, |m| m.len());
                let cut = if what == "was truncated" {
                    last_line_end(path, now)
                } else {
                    last_line_end(path, end.saturating_sub(1))
                };
                self.invalidate_texts_from(cut);
            }
            if damaged && !restored {
                // Texts that lived only in the truncated file come back from the caller
                // first; the retried append then rewrites the file.
                let lost = match (&self.handle, &self.loaded) {
                    (Some(h), _) => self.texts_in(h.id, Some(&h.src)),
                    (None, Some(l)) => self.texts_in(l.id, None),
                    (None, None) => Vec::new(),
                };
                if !lost.is_empty() {
                    return Err(StoreError::NeedsTexts(lost));
                }
            }
            return Ok(self.recover(path, what)?);
        }
        if self.handle.is_none() {
            let file = OpenOptions::new()
                .read(true)
                .append(true)
                .create(true)
                .open(path)
                .map_err(|e| fs_error(&e, "open", path))?;
            let m = file.metadata().map_err(|e| fs_error(&e, "open", path))?;
            self.handle = Some(AppendHandle {
                path: path.to_path_buf(),
                id: durability::file_id(&m),
                min_len: m.len(),
                src: Arc::new(FileSource::new(file)),
                sync: None,
            });
            // From here on the handle does the checking.
            self.loaded = None;
        }
        let mode = self.fsync;
        let (Some(h), Some(last)) = (self.handle.as_mut(), self.tree.entries.last_mut()) else {
            return Ok(());
        };
        // The length seen by the identity check above is the length to cut back to on a
        // failed write (one stat per append instead of two).
        let before = match current.as_ref().ok().map(|m| m.len()) {
            Some(len) if len >= h.min_len => len,
            _ => h
                .src
                .file
                .metadata()
                .map_err(|e| fs_error(&e, "write", path))?
                .len(),
        };
        let text = last.text.read().map_err(|e| fs_error(&e, "read", path))?;
        let text_len = text.len();
        let line_len = text_len as u64 + 1;
        let file = &h.src.file;
        let mut result = durability::write_line(file, text.as_bytes()).map_err(|e| (e, "write"));
        drop(text);
        if result.is_ok() {
            let synced = match mode {
                FsyncMode::Always => file.sync_data().map_err(|e| (e, "fsync")),
                FsyncMode::Batch => {
                    if h.sync.is_none() {
                        h.sync = SyncTarget::new(file);
                    }
                    match &h.sync {
                        // A failed background sync of earlier appends fails this one (cut
                        // back), as an inline sync failure did: the caller hears of it.
                        Some(t) => match t.take_error() {
                            Some(e) => Err((e, "fsync")),
                            None => {
                                t.schedule();
                                Ok(())
                            }
                        },
                        // No second descriptor: sync inline.
                        None => file.sync_data().map_err(|e| (e, "fsync")),
                    }
                }
                FsyncMode::Never => Ok(()),
            };
            result = result.and_then(|calls| synced.map(|()| calls));
        }
        match result {
            Ok(calls) => {
                let end = end_of_last_write(file);
                h.min_len = (before + line_len).max(end.unwrap_or(0));
                // The entry now lives in the file: keep only its place there (no copy of
                // an appended session's text in memory; it is read back on demand through
                // this handle, which keeps the inode readable even if the path is deleted
                // or replaced). Only when the line is known to be contiguous at a known
                // offset: one write call, and the position the kernel reports after it.
                let start = end.and_then(|end| end.checked_sub(line_len));
                if let (1, Some(start), Ok(len)) = (calls, start, u32::try_from(text_len)) {
                    last.text = Text::File {
                        src: Arc::clone(&h.src),
                        start,
                        len,
                    };
                }
                Ok(())
            }
            Err((e, syscall)) => {
                // No partial line: cut the file back to where it was.
                if file.metadata().is_ok_and(|m| m.len() > before) {
                    let _ = file.set_len(before);
                }
                Err(fs_error(&e, syscall, path).into())
            }
        }
    }

    /// `_rewriteFile`: write every entry to the session file (replacing it atomically).
    pub fn rewrite(&mut self) -> Result<(), FsError> {
        if !self.persisted() {
            return Ok(());
        }
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        self.ensure_lock(&path)?;
        self.close_handle();
        let bytes = entries_bytes(&self.tree.entries).map_err(|e| fs_error(&e, "read", &path))?;
        durability::write_file_atomic(
            &path,
            &bytes,
            Existing::Replace,
            self.fsync.sync_whole_files(),
        )?;
        // The file is now what memory holds.
        self.loaded = None;
        Ok(())
    }
}

fn entries_bytes(entries: &[Entry]) -> std::io::Result<Vec<u8>> {
    let total: usize = entries.iter().map(|e| e.text.len() + 1).sum();
    let mut buf = Vec::with_capacity(total);
    for e in entries {
        buf.extend_from_slice(e.text.read()?.as_bytes());
        buf.push(b'\n');
    }
    Ok(buf)
}

/// The file position after our last write on an `O_APPEND` handle: the end of the line we
/// just appended (the kernel moves to the end of the file before each append, whoever else
/// wrote there). Unix only: elsewhere appended entries keep their text in memory.
#[cfg(unix)]
fn end_of_last_write(file: &File) -> Option<u64> {
    use std::io::Seek;
    let mut f = file;
    f.stream_position().ok()
}

#[cfg(not(unix))]
fn end_of_last_write(_file: &File) -> Option<u64> {
    None
}

/// Write all entries to a new file; fails with EEXIST if it exists (`openSync(path, "wx")`).
/// Atomic: the file appears complete or not at all.
fn write_all_exclusive_with(path: &Path, entries: &[Entry], sync: bool) -> Result<(), FsError> {
    let bytes = entries_bytes(entries).map_err(|e| fs_error(&e, "read", path))?;
    durability::write_file_atomic(path, &bytes, Existing::Fail, sync)
}

/// Write lines (each followed by a newline) to a new file with exclusive create (atomic).
pub fn write_lines_exclusive(
    path: &Path,
    lines: &[String],
    fsync: FsyncMode,
) -> Result<(), FsError> {
    let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        buf.extend_from_slice(l.as_bytes());
        buf.push(b'\n');
    }
    durability::write_file_atomic(path, &buf, Existing::Fail, fsync.sync_whole_files())
}

/// Append text plus a newline with one write on an `O_APPEND` handle (`appendFileSync`).
/// Whether the byte before offset `end` of `file` is a newline (true for `end == 0`).
fn newline_at(file: &File, end: u64) -> bool {
    if end == 0 {
        return true;
    }
    let mut b = [0u8; 1];
    crate::entry::read_exact_at(file, &mut b, end - 1).is_ok() && b[0] == b'\n'
}

/// The offset just after the last newline at or before `end` in `path` (0 if none): where
/// the intact lines of a damaged file end, as far as its bytes tell.
fn last_line_end(path: &Path, end: u64) -> u64 {
    let Ok(f) = File::open(path) else { return 0 };
    let mut hi = end;
    let mut buf = vec![0u8; 64 * 1024];
    while hi > 0 {
        let lo = hi.saturating_sub(buf.len() as u64);
        let n = (hi - lo) as usize;
        if crate::entry::read_exact_at(&f, &mut buf[..n], lo).is_err() {
            return 0;
        }
        if let Some(i) = memchr::memrchr(b'\n', &buf[..n]) {
            return lo + i as u64 + 1;
        }
        hi = lo;
    }
    0
}

pub fn append_line(path: &Path, text: &str) -> Result<(), FsError> {
    let mut f = OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .map_err(|e| fs_error(&e, "open", path))?;
    let mut buf = Vec::with_capacity(text.len() + 1);
    buf.extend_from_slice(text.as_bytes());
    buf.push(b'\n');
    f.write_all(&buf).map_err(|e| fs_error(&e, "write", path))
}

/// Append raw bytes (the reference's newline repair after a load).
pub fn append_raw(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    let mut f = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| fs_error(&e, "open", path))?;
    f.write_all(bytes).map_err(|e| fs_error(&e, "write", path))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A session path in a fresh temp dir, removed with the dir when dropped.
    struct Tmp(PathBuf);

    impl std::ops::Deref for Tmp {
        type Target = PathBuf;
        fn deref(&self) -> &PathBuf {
            &self.0
        }
    }

    impl AsRef<Path> for Tmp {
        fn as_ref(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Tmp {
        fn drop(&mut self) {
            if let Some(d) = self.0.parent() {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }

    fn tmp(name: &str) -> Tmp {
        let d = std::env::temp_dir().join(format!("psn-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("tmp dir");
        Tmp(d.join("s.jsonl"))
    }

    /// A file switch (and a rewrite) syncs the appends the batch flusher has not synced yet.
    #[test]
    fn switching_files_syncs_pending_appends_first() {
        let path = tmp("switch-sync");
        let mut s = Store::new(Persistence::File);
        s.fsync = FsyncMode::Batch;
        s.file = Some(path.to_path_buf());
        s.append(r#"{"type":"session","id":"s","version":3}"#.into())
            .expect("header");
        s.append(r#"{"type":"message","id":"u","parentId":null,"message":{"role":"user"}}"#.into())
            .expect("user");
        s.append(r#"{"type":"custom","id":"c","parentId":"u"}"#.into())
            .expect("custom");
        let target = s
            .handle
            .as_ref()
            .and_then(|h| h.sync.clone())
            .expect("batch target");
        if !target.pending() {
            eprintln!("the flusher ran first (a loaded machine): nothing pending to check");
            return;
        }
        s.switch_file(Some(path.with_file_name("other.jsonl")), false);
        assert!(!target.pending(), "synced by the switch");
        assert!(s.handle.is_none());
        // A rewrite of the same file syncs too.
        s.switch_file(Some(path.to_path_buf()), true);
        s.append(r#"{"type":"custom","id":"d","parentId":"c"}"#.into())
            .expect("custom");
        let target = s
            .handle
            .as_ref()
            .and_then(|h| h.sync.clone())
            .expect("batch target");
        assert!(target.pending());
        s.rewrite().expect("rewrite");
        assert!(!target.pending(), "synced by the rewrite");
    }

    #[test]
    fn no_file_until_conversation_then_appends() {
        let path = tmp("flush");
        let mut s = Store::new(Persistence::File);
        s.file = Some(path.clone());
        s.append(r#"{"type":"session","id":"s","version":3}"#.into())
            .expect("header");
        s.append(r#"{"type":"model_change","id":"m","parentId":null}"#.into())
            .expect("model");
        assert!(!path.exists());
        s.append(r#"{"type":"message","id":"u","parentId":"m","message":{"role":"user"}}"#.into())
            .expect("user");
        assert!(s.flushed);
        s.append(r#"{"type":"custom","id":"c","parentId":"u"}"#.into())
            .expect("custom");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 4);
    }

    #[test]
    fn append_if_new_id_refuses_a_taken_id_and_writes_nothing() {
        let path = tmp("fresh-id");
        let mut s = Store::new(Persistence::File);
        s.fsync = FsyncMode::Never;
        s.file = Some(path.clone());
        s.append(r#"{"type":"session","id":"s","version":3}"#.into())
            .expect("header");
        let user =
            r#"{"type":"message","id":"aaaaaaaa","parentId":null,"message":{"role":"user"}}"#;
        assert!(s.append_stringified_if_new_id(user.into()).expect("first"));
        let before = std::fs::read_to_string(&path).expect("read");
        let again =
            r#"{"type":"message","id":"aaaaaaaa","parentId":"aaaaaaaa","message":{"role":"user"}}"#;
        assert!(!s.append_stringified_if_new_id(again.into()).expect("taken"));
        assert_eq!(s.tree.entries.len(), 2);
        assert_eq!(s.tree.leaf.as_deref(), Some("aaaaaaaa"));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), before);
        let other =
            r#"{"type":"message","id":"bbbbbbbb","parentId":"aaaaaaaa","message":{"role":"user"}}"#;
        assert!(s.append_stringified_if_new_id(other.into()).expect("new"));
        assert_eq!(s.tree.entries.len(), 3);
        assert_eq!(
            std::fs::read_to_string(&path)
                .expect("read")
                .lines()
                .count(),
            3
        );
        assert!(matches!(
            s.append_stringified_if_new_id("{not json".into()),
            Err(StoreError::InvalidLine)
        ));
    }

    #[test]
    fn in_memory_batches_index_like_single_appends_and_persisted_stores_refuse_them() {
        use crate::entry::{EntryType, Role};
        let one = |s: &mut Store| {
            s.append(r#"{"type":"session","id":"s","version":3}"#.into())
                .expect("header");
        };
        let mut a = Store::new(Persistence::Memory);
        one(&mut a);
        let mut b = Store::new(Persistence::Memory);
        one(&mut b);
        let fields = [
            ("u", None, Role::User),
            ("v", Some("u"), Role::Assistant),
            ("w", Some("u"), Role::Other),
        ];
        for (id, parent, role) in fields {
            let e = Entry::from_fields(EntryType::Message, id, parent, role);
            assert!(a.append_fields(e, IdCheck::Check).expect("single"));
        }
        let batch = fields
            .iter()
            .map(|&(id, parent, role)| Entry::from_fields(EntryType::Message, id, parent, role));
        b.extend_in_memory(fields.len(), batch).expect("batch");
        assert_eq!(b.tree.entries.len(), a.tree.entries.len());
        assert_eq!(b.tree.leaf, a.tree.leaf);
        assert_eq!(b.tree.conversation, a.tree.conversation);
        for id in ["u", "v", "w"] {
            assert_eq!(b.tree.index_of(id), a.tree.index_of(id));
        }
        let mut p = Store::new(Persistence::File);
        let e = Entry::from_fields(EntryType::Message, "x", None, Role::User);
        assert!(matches!(
            p.extend_in_memory(1, std::iter::once(e)),
            Err(StoreError::InvalidLine)
        ));
        assert!(p.tree.entries.is_empty());
    }

    #[test]
    fn a_file_cut_between_load_and_first_append_is_rewritten_whole() {
        let path = tmp("cut-after-load");
        let lines = [
            r#"{"type":"session","id":"s","version":3}"#,
            r#"{"type":"message","id":"u","parentId":null,"message":{"role":"user"}}"#,
            r#"{"type":"custom","id":"c","parentId":"u"}"#,
        ];
        let full = format!("{}\n", lines.join("\n"));
        std::fs::write(&*path, &full).expect("write");
        let loaded = crate::jsonl::load_file(&path, u64::MAX).expect("load");
        let mut s = Store::new(Persistence::File);
        s.fsync = FsyncMode::Never;
        s.file = Some(path.clone());
        s.flushed = true;
        let file = loaded.file;
        s.replace(loaded.entries);
        s.note_loaded(&path, file, false);
        std::fs::OpenOptions::new()
            .write(true)
            .open(&*path)
            .and_then(|f| f.set_len(10))
            .expect("truncate");
        let last = r#"{"type":"custom","id":"d","parentId":"c"}"#;
        s.append(last.into()).expect("append");
        let text = std::fs::read_to_string(&*path).expect("read");
        assert_eq!(text, format!("{full}{last}\n"));
        // Later appends go through the handle as usual.
        s.append(r#"{"type":"custom","id":"e","parentId":"d"}"#.into())
            .expect("append");
        assert_eq!(
            std::fs::read_to_string(&*path)
                .expect("read")
                .lines()
                .count(),
            5
        );
    }

    #[test]
    fn failed_write_restores_memory() {
        let path = tmp("fail").with_file_name("missing-dir").join("s.jsonl");
        let mut s = Store::new(Persistence::File);
        s.file = Some(path);
        s.append(r#"{"type":"session","id":"s"}"#.into())
            .expect("header");
        let err = s
            .append(
                r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#.into(),
            )
            .expect_err("first flush into a missing dir fails");
        assert!(
            err.to_string()
                .starts_with("ENOENT: no such file or directory, open '")
        );
        assert_eq!(s.tree.entries.len(), 1);
        assert!(s.tree.leaf.is_none());
        assert!(s.tree.get("a").is_none());
    }

    fn conversation(dir: &str) -> (Store, Tmp) {
        let path = tmp(dir);
        let mut s = Store::new(Persistence::File);
        s.fsync = FsyncMode::Never;
        s.file = Some(path.clone());
        s.append(r#"{"type":"session","id":"s","version":3}"#.into())
            .expect("header");
        s.append(r#"{"type":"message","id":"u","parentId":null,"message":{"role":"user"}}"#.into())
            .expect("user");
        (s, path)
    }

    #[cfg(unix)]
    fn texts(s: &Store) -> Vec<String> {
        s.tree
            .entries
            .iter()
            .map(|e| e.text.read().expect("text").into_owned())
            .collect()
    }

    #[cfg(unix)]
    #[test]
    fn appended_entries_keep_only_their_place_in_the_file() {
        let (mut s, path) = conversation("backed");
        // The first flush writes the whole buffer: those texts stay in memory.
        assert!(s.tree.entries.iter().all(|e| !e.text.is_file_backed()));
        let lines: Vec<String> = (0..50)
            .map(|i| {
                format!(
                    r#"{{"type":"custom","id":"c{i}","parentId":"u","data":"é{}"}}"#,
                    "x".repeat(i * 40)
                )
            })
            .collect();
        for l in &lines {
            s.append_stringified(l.clone()).expect("append");
        }
        // Another writer appends between ours: offsets still come from the kernel.
        append_line(&path, r#"{"type":"custom","id":"theirs","parentId":"u"}"#)
            .expect("foreign append");
        s.append_stringified(r#"{"type":"custom","id":"last","parentId":"u"}"#.into())
            .expect("append after foreign");
        assert!(s.tree.entries[2..].iter().all(|e| e.text.is_file_backed()));
        let got = texts(&s);
        assert_eq!(&got[2..52], &lines[..]);
        assert_eq!(got[52], r#"{"type":"custom","id":"last","parentId":"u"}"#);
        // Deleted path: the texts stay readable through the kept handle, and the next
        // append rewrites the file from them.
        std::fs::remove_file(&path).expect("rm");
        s.append_stringified(r#"{"type":"custom","id":"after","parentId":"u"}"#.into())
            .expect("append after delete");
        let file = std::fs::read_to_string(&path).expect("read");
        let mut want = texts(&s).join("\n");
        want.push('\n');
        assert_eq!(file, want);
    }

    /// What another program's `truncate(2)` does: same inode, shorter.
    #[cfg(unix)]
    fn truncate_in_place(path: &Path, len: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(len))
            .expect("truncate");
    }

    #[cfg(unix)]
    #[test]
    fn in_place_truncation_asks_for_the_texts_then_rewrites() {
        let (mut s, path) = conversation("trunc");
        for i in 0..5 {
            s.append_stringified(format!(r#"{{"type":"custom","id":"c{i}","parentId":"u"}}"#))
                .expect("append");
        }
        let full = std::fs::read_to_string(&path).expect("read");
        let originals = texts(&s);
        truncate_in_place(&path, 10);
        let next = r#"{"type":"custom","id":"n","parentId":"c4"}"#;
        let Err(StoreError::NeedsTexts(lost)) = s.append_stringified(next.into()) else {
            panic!("expected NeedsTexts");
        };
        assert_eq!(lost, vec![2, 3, 4, 5, 6]);
        // Memory is as before the failed append.
        assert_eq!(s.tree.entries.len(), 7);
        assert_eq!(s.tree.leaf.as_deref(), Some("c4"));
        let given: Vec<Option<String>> = lost
            .iter()
            .map(|&i| Some(originals[i as usize].clone()))
            .collect();
        s.restore_texts(&lost, given);
        s.append_stringified(next.into()).expect("retried append");
        let mut want = full.clone();
        want.push_str(next);
        want.push('\n');
        assert_eq!(std::fs::read_to_string(&path).expect("read"), want);
        assert_eq!(s.tree.get("c3").map(|e| e.id.as_str()), Some("c3"));
    }

    #[cfg(unix)]
    #[test]
    fn texts_nobody_gives_back_leave_the_file_as_found_plus_the_new_line() {
        let (mut s, path) = conversation("trunc-none");
        s.append_stringified(r#"{"type":"custom","id":"c","parentId":"u"}"#.into())
            .expect("append");
        truncate_in_place(&path, 0);
        let next = r#"{"type":"custom","id":"n","parentId":"c"}"#;
        let Err(StoreError::NeedsTexts(lost)) = s.append_stringified(next.into()) else {
            panic!("expected NeedsTexts");
        };
        s.restore_texts(&lost, vec![None; lost.len()]);
        // The file cannot be rebuilt: the new entry goes after what is left, as the
        // reference's appendFileSync would put it.
        s.append_stringified(next.into())
            .expect("appended as found");
        assert_eq!(s.tree.entries.len(), 4);
        assert_eq!(
            std::fs::read_to_string(&*path).expect("read"),
            format!("{next}\n")
        );
        // Later appends go on after it.
        let after = r#"{"type":"custom","id":"m","parentId":"n"}"#;
        s.append_stringified(after.into()).expect("append");
        assert_eq!(
            std::fs::read_to_string(&*path).expect("read"),
            format!("{next}\n{after}\n")
        );
    }

    #[test]
    fn short_write_is_cut_back_and_memory_restored() {
        let (mut s, path) = conversation("short");
        let before = std::fs::read(&path).expect("read");
        durability::FAULT_AFTER.with(|c| c.set(Some(7)));
        let err = s
            .append(r#"{"type":"custom","id":"c","parentId":"u"}"#.into())
            .expect_err("injected ENOSPC");
        assert!(
            err.to_string()
                .starts_with("ENOSPC: no space left on device, write '")
        );
        assert_eq!(std::fs::read(&path).expect("read"), before);
        assert_eq!(s.tree.entries.len(), 2);
        assert!(s.tree.get("c").is_none());
        s.append(r#"{"type":"custom","id":"d","parentId":"u"}"#.into())
            .expect("later append");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.lines().count(), 3);
        assert!(text.ends_with("\n"));
    }

    #[test]
    fn failed_first_flush_leaves_no_file_and_no_temp() {
        let path = tmp("flushfail");
        let mut s = Store::new(Persistence::File);
        s.file = Some(path.clone());
        s.append(r#"{"type":"session","id":"s"}"#.into())
            .expect("header");
        durability::FAULT_AFTER.with(|c| c.set(Some(3)));
        s.append(r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#.into())
            .expect_err("injected ENOSPC");
        assert!(!s.flushed);
        let dir = path.parent().expect("dir");
        assert_eq!(std::fs::read_dir(dir).expect("ls").count(), 0);
    }

    #[test]
    fn exclusive_write_keeps_an_existing_file() {
        let path = tmp("excl");
        std::fs::write(&path, "theirs\n").expect("write");
        let err = write_lines_exclusive(&path, &["ours".to_string()], FsyncMode::Batch)
            .expect_err("EEXIST");
        assert_eq!(
            err.message,
            format!("EEXIST: file already exists, open '{}'", path.display())
        );
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "theirs\n");
        let dir = path.parent().expect("dir");
        assert_eq!(std::fs::read_dir(dir).expect("ls").count(), 1);
    }

    #[test]
    fn rewrite_is_atomic() {
        let (mut s, path) = conversation("rewrite");
        durability::FAULT_AFTER.with(|c| c.set(Some(5)));
        let before = std::fs::read(&path).expect("read");
        s.rewrite().expect_err("injected ENOSPC");
        assert_eq!(
            std::fs::read(&path).expect("read"),
            before,
            "old content intact"
        );
        s.rewrite().expect("rewrite");
        let dir = path.parent().expect("dir");
        assert_eq!(
            std::fs::read_dir(dir).expect("ls").count(),
            1,
            "no temp left"
        );
    }

    #[cfg(unix)]
    #[test]
    fn rewrite_keeps_mode() {
        use std::os::unix::fs::PermissionsExt;
        let (mut s, path) = conversation("rewrite-mode");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        s.rewrite().expect("rewrite");
        let m = std::fs::metadata(&path).expect("stat");
        assert_eq!(m.permissions().mode() & 0o777, 0o600);
    }

    #[test]
    fn rewrite_into_directory_path_fails_like_node() {
        let path = tmp("isdir");
        std::fs::create_dir(&path).expect("mkdir");
        let mut s = Store::new(Persistence::File);
        s.file = Some(path.clone());
        s.append(r#"{"type":"session","id":"s"}"#.into())
            .expect("header");
        let err = s.rewrite().expect_err("EISDIR");
        assert_eq!(
            err.message,
            format!(
                "EISDIR: illegal operation on a directory, open '{}'",
                path.display()
            )
        );
    }

    #[test]
    fn lock_same_process_is_shared_and_released_on_drop() {
        let path = tmp("lock");
        let g = LockGuard::acquire(&path).expect("lock");
        let lock = PathBuf::from(format!("{}.lock", path.display()));
        assert_eq!(
            std::fs::read_to_string(&lock).expect("read"),
            std::process::id().to_string()
        );
        let shared = LockGuard::acquire(&path).expect("same process");
        drop(shared);
        assert!(lock.exists());
        drop(g);
        assert!(!lock.exists());
    }

    /// Sharing within the process does not depend on reading our pid back from the lock file:
    /// on Windows the holder's mandatory lock makes that read fail. Here the file says another
    /// pid (an advisory `flock` lets us write it): the second manager still shares, and once the
    /// holder is gone the lock is taken normally.
    #[test]
    fn lock_same_process_is_shared_without_reading_the_pid() {
        let path = tmp("lock-registry");
        let g = LockGuard::acquire(&path).expect("lock");
        let lock = PathBuf::from(format!("{}.lock", path.display()));
        #[cfg(unix)]
        {
            std::fs::write(&lock, "1").expect("overwrite the pid");
            let shared = LockGuard::acquire(&path).expect("same process, pid not readable as ours");
            drop(shared);
            assert!(lock.exists(), "the holder's lock stays");
        }
        drop(g);
        assert!(!lock.exists());
        let again = LockGuard::acquire(&path).expect("taken again after release");
        assert_eq!(
            std::fs::read_to_string(&lock).expect("read"),
            std::process::id().to_string()
        );
        drop(again);
    }

    #[test]
    fn fsync_mode_parsing() {
        assert_eq!(FsyncMode::parse(Some("always")), FsyncMode::Always);
        assert_eq!(FsyncMode::parse(Some("NEVER")), FsyncMode::Never);
        assert_eq!(FsyncMode::parse(Some("batch")), FsyncMode::Batch);
        assert_eq!(FsyncMode::parse(None), FsyncMode::Batch);
        assert_eq!(FsyncMode::parse(Some("bogus")), FsyncMode::Batch);
    }
}

#[cfg(test)]
mod perf {
    /// 10,000 message lines of ~2 KB each.
    fn message_lines() -> Vec<String> {
        let text = "x".repeat(2000);
        (0..10_000)
            .map(|i| {
                format!(
                    r#"{{"type":"message","id":"a{i}","parentId":null,"timestamp":"2025-01-01T00:00:00.000Z","message":{{"role":"user","content":"{text}","timestamp":{i}}}}}"#
                )
            })
            .collect()
    }

    /// `cargo test --release --lib append_cost -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn append_cost() {
        let mut s = super::Store::new(super::Persistence::Memory);
        s.append(r#"{"type":"session","id":"s","version":3}"#.into())
            .expect("header");
        let lines = message_lines();
        let t = std::time::Instant::now();
        for l in lines {
            s.append(l).expect("append");
        }
        println!("in-memory append x10k (2 KB): {:?}", t.elapsed());
    }

    /// Cost of a persisted append and of its two syscalls alone:
    /// `cargo test --release --lib persisted_append_cost -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn persisted_append_cost() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("psn-cost-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("s.jsonl");
        let lines = message_lines();
        let mut s = super::Store::new(super::Persistence::File);
        s.fsync = super::FsyncMode::Never;
        s.file = Some(path.clone());
        s.append(r#"{"type":"session","id":"s","version":3}"#.into())
            .expect("header");
        s.append(lines[0].clone()).expect("first");
        // Moved in, not cloned in the loop: the timed part is the append alone.
        let owned: Vec<String> = lines[1..].to_vec();
        let t = std::time::Instant::now();
        for l in owned {
            s.append(l).expect("append");
        }
        println!("Store::append persisted x10k: {:?}", t.elapsed());
        let t = std::time::Instant::now();
        for _ in 0..10_000 {
            let _ = std::fs::metadata(&path);
        }
        println!("stat x10k: {:?}", t.elapsed());
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("w"))
            .or_else(|_| std::fs::File::create(dir.join("w")))
            .expect("open");
        let t = std::time::Instant::now();
        for l in &lines {
            let mut b = l.clone().into_bytes();
            b.push(b'\n');
            f.write_all(&b).expect("write");
        }
        println!("write x10k: {:?}", t.elapsed());
        std::fs::remove_dir_all(&dir).ok();
    }
}
