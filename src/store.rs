//! Persistence rules of the reference's `SessionManager`, over a [`Tree`]:
//! no file until the session holds a user or assistant message, then the whole buffer written
//! with exclusive create; afterwards one line per append; whole-file rewrites for migrated and
//! branched sessions. A failed write leaves memory as it was before the call.

use crate::entry::{Entry, Key};
use crate::tree::Tree;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

/// An I/O failure described the way Node's `fs` describes it
/// (`EACCES: permission denied, open '/x'`), so callers see the reference's messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FsError {
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for FsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}

/// Node-style description of an OS error.
pub fn fs_error(err: &std::io::Error, syscall: &str, path: &Path) -> FsError {
    let (code, desc) = match err.raw_os_error() {
        Some(1) => ("EPERM", "operation not permitted"),
        Some(2) => ("ENOENT", "no such file or directory"),
        Some(5) => ("EIO", "i/o error"),
        Some(9) => ("EBADF", "bad file descriptor"),
        Some(13) => ("EACCES", "permission denied"),
        Some(17) => ("EEXIST", "file already exists"),
        Some(20) => ("ENOTDIR", "not a directory"),
        Some(21) => ("EISDIR", "illegal operation on a directory"),
        Some(24) => ("EMFILE", "too many open files"),
        Some(27) => ("EFBIG", "file too large"),
        Some(28) => ("ENOSPC", "no space left on device"),
        Some(30) => ("EROFS", "read-only file system"),
        Some(122) => ("EDQUOT", "disk quota exceeded"),
        _ => ("EIO", "i/o error"),
    };
    let desc = if err.raw_os_error().is_none() {
        err.to_string()
    } else {
        desc.to_string()
    };
    FsError {
        code: code.to_string(),
        message: format!("{code}: {desc}, {syscall} '{}'", path.display()),
    }
}

/// Errors of store operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    Fs(FsError),
    /// A line handed in for appending is not a JSON value the store can index.
    InvalidLine,
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Fs(e) => e.fmt(f),
            StoreError::InvalidLine => f.write_str("entry is not valid JSON"),
        }
    }
}

impl From<FsError> for StoreError {
    fn from(e: FsError) -> Self {
        StoreError::Fs(e)
    }
}

/// A session: the tree plus where and whether it is persisted.
#[derive(Debug, Default)]
pub struct Store {
    pub tree: Tree,
    pub persist: bool,
    pub file: Option<PathBuf>,
    pub flushed: bool,
    /// Counter that makes object-valued ids unique keys.
    unique: usize,
}

impl Store {
    pub fn new(persist: bool) -> Store {
        Store {
            persist,
            ..Store::default()
        }
    }

    /// Parse a line with this store's unique counter.
    pub fn parse_line(&mut self, line: String) -> Option<Entry> {
        self.unique += 1;
        Entry::parse(line, self.unique)
    }

    /// Replace all entries (new session, loaded file, branched session).
    pub fn replace(&mut self, entries: Vec<Entry>) {
        self.tree = Tree::from_entries(entries);
    }

    /// Append one serialized entry and persist it (`_appendEntry` + `_persist`).
    pub fn append(&mut self, line: String) -> Result<(), StoreError> {
        let entry = self.parse_line(line).ok_or(StoreError::InvalidLine)?;
        let undo = self.tree.undo_info(&entry);
        let previous_leaf: Option<Key> = self.tree.leaf.clone();
        self.tree.push(entry);
        if let Err(e) = self.persist_last() {
            self.tree.pop(previous_leaf, undo);
            return Err(e.into());
        }
        Ok(())
    }

    fn persist_last(&mut self) -> Result<(), FsError> {
        if !self.persist {
            return Ok(());
        }
        let Some(path) = self.file.clone() else {
            return Ok(());
        };
        if !self.flushed {
            if self.tree.conversation == 0 {
                return Ok(());
            }
            write_all_exclusive(&path, &self.tree.entries)?;
            self.flushed = true;
            return Ok(());
        }
        let Some(last) = self.tree.entries.last() else {
            return Ok(());
        };
        append_line(&path, &last.text)
    }

    /// `_rewriteFile`: write every entry to the session file (truncating it).
    pub fn rewrite(&self) -> Result<(), FsError> {
        if !self.persist {
            return Ok(());
        }
        let Some(path) = &self.file else {
            return Ok(());
        };
        let mut f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| fs_error(&e, "open", path))?;
        write_entries(&mut f, &self.tree.entries).map_err(|e| fs_error(&e, "write", path))
    }
}

fn write_entries(f: &mut File, entries: &[Entry]) -> std::io::Result<()> {
    // One buffer, one write: fewer syscalls and no half-written buffer boundaries.
    let total: usize = entries.iter().map(|e| e.text.len() + 1).sum();
    let mut buf = Vec::with_capacity(total);
    for e in entries {
        buf.extend_from_slice(e.text.as_bytes());
        buf.push(b'\n');
    }
    f.write_all(&buf)
}

/// Write all entries to a new file; fails with EEXIST if it exists (`openSync(path, "wx")`).
pub fn write_all_exclusive(path: &Path, entries: &[Entry]) -> Result<(), FsError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| fs_error(&e, "open", path))?;
    write_entries(&mut f, entries).map_err(|e| fs_error(&e, "write", path))
}

/// Write lines (each followed by a newline) to a new file with exclusive create.
pub fn write_lines_exclusive(path: &Path, lines: &[String]) -> Result<(), FsError> {
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| fs_error(&e, "open", path))?;
    let mut buf = Vec::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        buf.extend_from_slice(l.as_bytes());
        buf.push(b'\n');
    }
    f.write_all(&buf).map_err(|e| fs_error(&e, "write", path))
}

/// Append text plus a newline with one write on an `O_APPEND` handle (`appendFileSync`).
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

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("psn-store-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("tmp dir");
        d.join("s.jsonl")
    }

    #[test]
    fn no_file_until_conversation_then_appends() {
        let path = tmp("flush");
        let mut s = Store::new(true);
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
    fn failed_write_restores_memory() {
        let path = tmp("fail").with_file_name("missing-dir").join("s.jsonl");
        let mut s = Store::new(true);
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
}

/// Append raw bytes (the reference's newline repair after a load).
pub fn append_raw(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    let mut f = OpenOptions::new()
        .append(true)
        .open(path)
        .map_err(|e| fs_error(&e, "open", path))?;
    f.write_all(bytes).map_err(|e| fs_error(&e, "write", path))
}
