//! Full-text search over session files: a SQLite FTS5 index beside the listing index
//! (`<sessions dir>/.pi-session-search.sqlite`), brought up to date before every query.
//!
//! - **A cache, never trusted**: the file is checked before use (regular file, not a link,
//!   owned by this user, mode `0600`, our `application_id` and schema version); anything
//!   else is removed and rebuilt. SQLite errors that say "corrupt" or "not a database"
//!   rebuild it too. Where no index can be written (read-only directory) an in-memory one
//!   serves the query. A hit is returned only after its line was read back from the session
//!   file (so never for a file this process cannot read, never for a line that changed).
//! - **Incremental**: per file the index keeps its stamp (size, mtime, ctime, inode), the
//!   offset indexed up to and a fingerprint of that prefix (`discovery::resume`). A file
//!   that grew is parsed from that offset; a rewritten one is reindexed whole; a vanished
//!   one is dropped. Files are parsed on worker threads, written in one transaction.
//! - **Branch-aware**: each text row carries `active`: its entry is on the path from the
//!   file's last entry (pi's leaf on load) to the root. An append that extends the leaf
//!   keeps every flag; one that branches (its parent is not the old leaf) reindexes the file.
//! - **Safe queries**: user text never reaches FTS5 syntax (see [`text`]).

pub mod extract;
pub mod fold_table;
pub mod text;

use crate::discovery::index::{Stamp, cacheable, now_ns};
use rusqlite::{Connection, OpenFlags, OptionalExtension, params};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Matching texts ranked together at most (see `Index::query`): the newest this many first.
pub const RANK_WINDOW: usize = 20_000;
/// Work a query's phrase check may spend on candidate texts it turns down before the query
/// stops with the hits it has: the index knows which texts hold a phrase's tokens, not
/// whether they are in a row, and a phrase of common words that are rarely in a row (`"the
/// of"`) would otherwise read back most of the store's texts. A candidate turned down by the
/// fast condition (`text::Query::may_match_text`: read back and scanned, ~7 us on the
/// generated store) costs 1; one turned down by the full check (tokenized: non-ASCII
/// text, or its words in sequence but not as whole tokens) costs [`FULL_CHECK_COST`]. Past
/// this much, such a query answers with fewer hits than it might have (the best-ranked ones
/// of those checked, newest first): up to 160,000 candidates, ~1 s, where 20,000 full
/// checks took ~1.4 s before the fast condition (issue 43).
pub const MAX_TURNED_DOWN: usize = 160_000;
/// What a candidate turned down by the full phrase check costs of [`MAX_TURNED_DOWN`] (its
/// time against one turned down by the fast condition).
pub const FULL_CHECK_COST: usize = 8;
/// Name of the index file in a sessions directory.
pub const INDEX_FILE: &str = ".pi-session-search.sqlite";
/// `PRAGMA application_id` of an index ("piss" would be rude: "PSRH").
const APP_ID: i32 = 0x5053_5248;
/// `PRAGMA user_version`: the schema; another value rebuilds the index.
/// 2: terminal escape sequences separate tokens (1 glued `\x1b[31mword` into `31mword`);
/// FTS5's `ascii` tokenizer over the pre-folded tokens (1: `unicode61`, same tokens, slower).
/// 3: tool calls, labels and session names indexed (`rows.part` names the text of the
/// entry); camelCase parts in the `parts` column.
/// 4: `detail=none` over each text's distinct tokens and parts (one column, no positions:
/// phrases are checked on the texts read back), `rows.ntok` (the text's length, for
/// ranking) (intermediate commits of issue 43's branch, without `names`).
/// 5: schema 4 with `rows.role` and `rows.tools` as ids of a `names` table (issue 43).
/// 6: the `fts_new` table: texts written by refreshes after the first build (appended
/// turns), merged among themselves, never into the first build's segments.
const SCHEMA: i32 = 6;
/// A refresh of at least this many files writes into `fts` (a first build, or as good as
/// one); smaller ones (appended turns, a few new sessions) into `fts_new`: FTS5 writes each
/// transaction as a segment and merges segments four at a time per level, and a level-0
/// segment as large as a first build's would be rewritten by the merges of the small ones
/// piling up beside it (60-470 ms appends, issue 43).
const NEW_TABLE_MAX: usize = 256;
/// Files per write transaction of an interactive refresh. FTS5 writes what a transaction
/// added as one new segment when it commits (and merges segments as they pile up): larger
/// transactions make fewer, larger segments; an abort loses at most this many files.
const BATCH: usize = 1024;
/// Files a parsing thread may be ahead of the writer (bounds the memory of parsed files).
const AHEAD: usize = 8;
/// Bytes of session files the parsing threads may be ahead of the writer (a few large
/// sessions, not `AHEAD` per thread of them); the file the writer waits for is always parsed.
const AHEAD_BYTES: u64 = 256 << 20;
/// Files per write transaction of a background refresh, at least: past them a transaction
/// is committed once it has been open [`BACKGROUND_TX_TIME`] (or holds [`BATCH`] files).
/// An abort commits the files written before it (`Writer::keep`).
const BACKGROUND_BATCH: usize = 64;
/// How long a background refresh's write transaction stays open once it holds
/// [`BACKGROUND_BATCH`] files. FTS5 writes each transaction as a segment and merges them
/// four at a time per level: a transaction per 64 files made a 10,000-session warm-up write
/// 156 segments and merge its postings over about twice as many levels (`warmSearchIndex`
/// 29.0 against 25.4 CPU-s side by side; issue 43, BENCHMARKS.md). Another process's
/// write waits for the open transaction: about this long on an idle machine.
const BACKGROUND_TX_TIME: std::time::Duration = std::time::Duration::from_secs(1);

/// How much of the machine a refresh may take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Load {
    /// A user waits for the result (a search): parse on up to 4 worker threads.
    Interactive,
    /// Nobody waits (keeping the index warm while the host is idle): one worker thread at a
    /// lower OS priority where that can be set per thread (Linux), small write batches.
    Background,
}

/// A file a worker of an index refresh is parsing, and how far it is (the "reading <file>" of a
/// progress line when one file takes long). Registered while it is parsed ([`Reading::start`]).
#[derive(Debug)]
pub struct ReadingFile {
    pub path: String,
    /// Bytes of it read and parsed so far (updated every [`extract::WATCH_EVERY`] bytes).
    pub done: std::sync::atomic::AtomicU64,
    pub size: u64,
    pub since: std::time::Instant,
}

/// The files being parsed by index refreshes in this process.
static READING: std::sync::Mutex<Vec<Arc<ReadingFile>>> = std::sync::Mutex::new(Vec::new());

/// A file registered in [`READING`] while it is parsed; unregistered on drop.
struct Reading(Arc<ReadingFile>);

impl Reading {
    fn start(path: &Path, size: u64) -> Reading {
        let r = Arc::new(ReadingFile {
            path: path.to_string_lossy().into_owned(),
            done: std::sync::atomic::AtomicU64::new(0),
            size,
            since: std::time::Instant::now(),
        });
        if let Ok(mut v) = READING.lock() {
            v.push(Arc::clone(&r));
        }
        Reading(r)
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        if let Ok(mut v) = READING.lock() {
            v.retain(|x| !Arc::ptr_eq(x, &self.0));
        }
    }
}

/// The files index refreshes in this process are parsing: path, bytes parsed so far, size, and
/// how long each has taken until now; the longest first.
pub fn reading_files() -> Vec<(String, u64, u64, std::time::Duration)> {
    let Ok(v) = READING.lock() else {
        return Vec::new();
    };
    let mut out: Vec<_> = v
        .iter()
        .map(|r| {
            (
                r.path.clone(),
                r.done.load(Ordering::Relaxed),
                r.size,
                r.since.elapsed(),
            )
        })
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.3));
    out
}

/// The file index refreshes in this process have been parsing the longest, if any.
pub fn reading_now() -> Option<(String, u64, u64, std::time::Duration)> {
    reading_files().into_iter().next()
}

/// One progress report of a refresh: files parsed so far of those it has to index, and the
/// bytes of those files read and parsed so far (a file resumed where the index left off
/// counts its indexed prefix as done once it is through).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Report {
    pub done: usize,
    pub total: usize,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

/// Receives the [`Report`]s of a refresh.
pub type ProgressFn<'a> = &'a (dyn Fn(Report) + Sync);

/// Least time between two progress reports of one refresh (the first and last are always
/// made).
pub const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Bytes of a session file read and parsed at a time: a report can follow each (a file of
/// any size is reported on as it is read), and a file's raw lines in memory are this much
/// (or its longest line).
const READ_CHUNK: u64 = 4 << 20;

/// The progress of one refresh that has files to index: first `done = 0`, then at most
/// every [`PROGRESS_EVERY`] as worker threads finish files or read chunks of them (`done`
/// and `bytes_done` only grow: a report is made under the lock and only when one of them is
/// above the last report's), then everything done once everything is written.
struct Progress<'a> {
    f: ProgressFn<'a>,
    total: usize,
    bytes_total: u64,
    every: std::time::Duration,
    done: std::sync::atomic::AtomicUsize,
    bytes: std::sync::atomic::AtomicU64,
    /// When the last report was made, and its `done` and `bytes_done`.
    last: std::sync::Mutex<(std::time::Instant, usize, u64)>,
}

impl<'a> Progress<'a> {
    fn start(
        f: ProgressFn<'a>,
        total: usize,
        bytes_total: u64,
        every: std::time::Duration,
    ) -> Progress<'a> {
        f(Report {
            done: 0,
            total,
            bytes_done: 0,
            bytes_total,
        });
        Progress {
            f,
            total,
            bytes_total,
            every,
            done: std::sync::atomic::AtomicUsize::new(0),
            bytes: std::sync::atomic::AtomicU64::new(0),
            last: std::sync::Mutex::new((std::time::Instant::now(), 0, 0)),
        }
    }

    /// `n` more bytes read and parsed (any thread).
    fn read(&self, n: u64) {
        self.bytes.fetch_add(n, Ordering::Relaxed);
        self.maybe_report();
    }

    /// One more file parsed (any thread), `rest` of its bytes not reported by `read`.
    fn step(&self, rest: u64) {
        self.bytes.fetch_add(rest, Ordering::Relaxed);
        self.done.fetch_add(1, Ordering::Relaxed);
        self.maybe_report();
    }

    fn maybe_report(&self) {
        let Ok(mut last) = self.last.try_lock() else {
            // Another thread is reporting right now: this count goes with a later report.
            return;
        };
        let d = self.done.load(Ordering::Relaxed).min(self.total);
        let b = self.bytes.load(Ordering::Relaxed).min(self.bytes_total);
        let grew = d > last.1 || b > last.2;
        if last.0.elapsed() >= self.every && grew && d < self.total {
            (self.f)(Report {
                done: d,
                total: self.total,
                bytes_done: b,
                bytes_total: self.bytes_total,
            });
            *last = (std::time::Instant::now(), d, b);
        }
    }

    fn finish(&self) {
        (self.f)(Report {
            done: self.total,
            total: self.total,
            bytes_done: self.bytes_total,
            bytes_total: self.bytes_total,
        });
    }
}

/// An error of the engine (message for JS).
#[derive(Debug)]
pub struct Error(pub String);

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        Error(format!("search index: {e}"))
    }
}
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error(format!("search index: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

fn aborted() -> Error {
    Error("aborted".into())
}

/// Whether a SQLite error means the file is not a usable index.
fn is_damage(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseCorrupt | rusqlite::ErrorCode::NotADatabase)
    )
}

#[derive(Clone, Debug)]
struct FileRow {
    id: i64,
    stamp: Stamp,
    indexed_to: u64,
    fp: Option<u64>,
    exact: bool,
    session_id: Option<String>,
    cwd: Option<String>,
    leaf: Option<String>,
}

/// An open index over one sessions directory (its `*.jsonl` files and those of its
/// immediate subdirectories: pi's per-project directories when it is pi's sessions root).
pub struct Index {
    conn: Connection,
    dir: PathBuf,
    /// `(dev, ino)` of the index file as verified; `None` in memory.
    file_id: Option<(u64, u64)>,
    data_version: i64,
    files: HashMap<String, FileRow>,
    /// What changed since the last refresh (`None`: the next refresh scans everything).
    watch: Option<watch::Watch>,
    /// `*.jsonl` links seen by the last full scan: a watch of the directory does not see
    /// writes to their targets, so every refresh looks at them.
    links: Vec<String>,
    /// Files the last refresh indexed (the `total` of its progress; 0: nothing changed).
    indexed: usize,
    /// Files the last refresh parsed (fewer than `indexed` when it was aborted).
    parsed: usize,
    /// Least time between two progress reports ([`PROGRESS_EVERY`]; tests set less).
    progress_every: std::time::Duration,
    /// [`MAX_TURNED_DOWN`] (tests set less).
    max_turned_down: usize,
    /// Ids of the `names` table (roles and tool lists of rows) this connection has seen.
    names: HashMap<String, i64, foldhash::fast::RandomState>,
    /// The `files` rows of the open write transaction, written just before it commits (and
    /// whether each is new): a statement on `files` (two b-trees) opens a statement
    /// savepoint, at which FTS5 writes what it holds as a segment of its own; written
    /// last, a transaction makes one segment, not one per file.
    pending: Vec<(String, FileRow, bool)>,
    /// The id the next new file of the open write transaction gets.
    next_id: i64,
    /// The FTS5 table the current refresh writes into (`fts` or `fts_new`, see
    /// [`NEW_TABLE_MAX`]).
    fts_table: &'static str,
}

const SCHEMA_SQL: &str = "
CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
  mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, ino INTEGER NOT NULL,
  indexed_to INTEGER NOT NULL, fp INTEGER, exact INTEGER NOT NULL,
  session_id TEXT, cwd TEXT, leaf TEXT);
CREATE INDEX files_session ON files(session_id);
CREATE TABLE names(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE TABLE rows(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, entry_id TEXT, role INTEGER NOT NULL,
  tools INTEGER NOT NULL, ts_ms INTEGER, off INTEGER NOT NULL, len INTEGER NOT NULL, active INTEGER NOT NULL,
  part INTEGER NOT NULL, ntok INTEGER NOT NULL);
CREATE INDEX rows_file ON rows(file);
CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none,
  tokenize='ascii');
INSERT INTO fts(fts, rank) VALUES('hashsize', 67108864);
CREATE VIRTUAL TABLE fts_new USING fts5(body, content='', contentless_delete=1, detail=none,
  tokenize='ascii');
";

#[cfg(unix)]
fn dev_ino(md: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (md.dev(), md.ino())
}
#[cfg(not(unix))]
fn dev_ino(_md: &fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(unix)]
fn mode_ok(md: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    md.permissions().mode() & 0o077 == 0
}
#[cfg(not(unix))]
fn mode_ok(_md: &fs::Metadata) -> bool {
    true
}

/// The verified identity of the index file at `path`: a regular file (no link followed,
/// no FIFO opened blocking), owned by this user, not readable by others. `None`: missing
/// or not acceptable.
fn verified(path: &Path) -> Option<(u64, u64)> {
    let o = crate::safefs::open_regular(path, false).ok()?;
    (o.uid == crate::safefs::euid() && mode_ok(&o.meta)).then(|| dev_ino(&o.meta))
}

fn configure(conn: &Connection) -> Result<()> {
    conn.busy_timeout(std::time::Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", -16_000)?;
    Ok(())
}

/// Whether `conn` holds our schema (`Some(false)`: an empty database to initialise).
fn schema_state(conn: &Connection) -> rusqlite::Result<Option<bool>> {
    let app: i32 = conn.pragma_query_value(None, "application_id", |r| r.get(0))?;
    let ver: i32 = conn.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let tables: i64 = conn.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
    Ok(if app == APP_ID && ver == SCHEMA && tables > 0 {
        Some(true)
    } else if app == 0 && ver == 0 && tables == 0 {
        Some(false)
    } else {
        None
    })
}

fn init_schema(conn: &Connection) -> Result<()> {
    conn.execute_batch(&format!(
        "BEGIN IMMEDIATE; {SCHEMA_SQL} PRAGMA application_id = {APP_ID}; PRAGMA user_version = {SCHEMA}; COMMIT;"
    ))?;
    Ok(())
}

fn open_flags() -> OpenFlags {
    OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
}

/// Open the file at `path` (checked by [`verified`]) and check or set up its schema.
fn open_verified(path: &Path, id: (u64, u64)) -> Result<Connection> {
    // SQLite's NOFOLLOW refuses a symbolic link anywhere in the name, so a sessions folder
    // reached through one (`~/.pi` linked to another disk) would get an in-memory index,
    // rebuilt by every query. SQLite opens the same file by its folder's real path; the file
    // itself is still never a link (`verified` looked at it without following it, and looks
    // again below).
    let real = path
        .parent()
        .and_then(|d| fs::canonicalize(d).ok())
        .map_or_else(|| path.to_path_buf(), |d| d.join(INDEX_FILE));
    let conn = Connection::open_with_flags(&real, open_flags())?;
    configure(&conn)?;
    // The file SQLite opened is the one checked (no swap in between).
    if verified(path) != Some(id) {
        return Err(Error("search index: replaced while opening".into()));
    }
    match schema_state(&conn) {
        Ok(Some(true)) => {}
        Ok(Some(false)) => init_schema(&conn)?,
        Ok(None) => return Err(Error("search index: foreign file".into())),
        Err(e) => return Err(e.into()),
    }
    Ok(conn)
}

/// Remove what is at `path` (a link is removed, not followed).
fn remove(path: &Path) {
    let _ = fs::remove_file(path);
}

impl Index {
    /// Open (or create, or rebuild) the index of `dir`; in memory when none can be written.
    pub fn open(dir: &Path) -> Result<Index> {
        let path = dir.join(INDEX_FILE);
        // A journal left by someone else, or not a regular file: never replayed.
        let journal = dir.join(format!("{INDEX_FILE}-journal"));
        if fs::symlink_metadata(&journal).is_ok() && verified(&journal).is_none() {
            remove(&journal);
        }
        for attempt in 0..3 {
            if let Some(id) = verified(&path) {
                match open_verified(&path, id) {
                    Ok(conn) => return Index::with(conn, dir, Some(id)),
                    Err(_) => remove(&path),
                }
            } else if fs::symlink_metadata(&path).is_ok() {
                remove(&path);
            }
            match crate::safefs::create_exclusive(&path, 0o600) {
                Ok(f) => drop(f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 2 => {
                    continue;
                }
                Err(_) => break,
            }
        }
        // No index can be kept here: one in memory for this query.
        let conn = Connection::open_in_memory()?;
        init_schema(&conn)?;
        Index::with(conn, dir, None)
    }

    fn with(conn: Connection, dir: &Path, file_id: Option<(u64, u64)>) -> Result<Index> {
        let mut ix = Index {
            conn,
            dir: dir.to_path_buf(),
            file_id,
            data_version: -1,
            files: HashMap::new(),
            watch: None,
            links: Vec::new(),
            indexed: 0,
            parsed: 0,
            progress_every: PROGRESS_EVERY,
            max_turned_down: MAX_TURNED_DOWN,
            names: HashMap::default(),
            pending: Vec::new(),
            next_id: 1,
            fts_table: "fts",
        };
        ix.load_files()?;
        Ok(ix)
    }

    /// Whether this open index is still the verified file at its path.
    pub fn still_valid(&self) -> bool {
        match self.file_id {
            Some(id) => verified(&self.dir.join(INDEX_FILE)) == Some(id),
            None => false,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many files the last refresh indexed (0: it found nothing to do).
    pub fn indexed_by_last_refresh(&self) -> usize {
        self.indexed
    }

    /// How many files the last refresh parsed: `indexed` when it completed, fewer when it
    /// was aborted (the files of the batch being parsed then are not written).
    pub fn parsed_by_last_refresh(&self) -> usize {
        self.parsed
    }

    /// Whether the index lives in memory only.
    pub fn in_memory(&self) -> bool {
        self.file_id.is_none()
    }

    fn data_version(&self) -> Result<i64> {
        Ok(self
            .conn
            .pragma_query_value(None, "data_version", |r| r.get(0))?)
    }

    fn load_files(&mut self) -> Result<()> {
        let mut st = self.conn.prepare(
            "SELECT id, path, size, mtime, ctime, ino, indexed_to, fp, exact, session_id, cwd, leaf FROM files",
        )?;
        let rows = st.query_map([], |r| {
            Ok((
                r.get::<_, String>(1)?,
                FileRow {
                    id: r.get(0)?,
                    stamp: Stamp {
                        size: r.get::<_, i64>(2)? as u64,
                        mtime_ns: i128::from(r.get::<_, i64>(3)?),
                        ctime_ns: i128::from(r.get::<_, i64>(4)?),
                        ino: r.get::<_, i64>(5)? as u64,
                    },
                    indexed_to: r.get::<_, i64>(6)? as u64,
                    fp: r.get::<_, Option<i64>>(7)?.map(|v| v as u64),
                    exact: r.get::<_, i64>(8)? != 0,
                    session_id: r.get(9)?,
                    cwd: r.get(10)?,
                    leaf: r.get(11)?,
                },
            ))
        })?;
        let mut files = HashMap::new();
        for row in rows {
            let (p, f) = row?;
            files.insert(p, f);
        }
        drop(st);
        self.files = files;
        // Another writer may have added names, or a rollback dropped ours: read them anew.
        self.names.clear();
        self.data_version = self.data_version()?;
        Ok(())
    }

    /// The id of `name` in the `names` table, added there when new (in the open transaction).
    fn name_id(&mut self, name: &str) -> rusqlite::Result<i64> {
        if let Some(&id) = self.names.get(name) {
            return Ok(id);
        }
        self.conn
            .prepare_cached("INSERT OR IGNORE INTO names(name) VALUES (?1)")?
            .execute(params![name])?;
        let id: i64 = self
            .conn
            .prepare_cached("SELECT id FROM names WHERE name = ?1")?
            .query_row(params![name], |r| r.get(0))?;
        self.names.insert(name.to_string(), id);
        Ok(id)
    }

    /// The session files of the directory: `*.jsonl` in it and in its subdirectories
    /// (links to directories not followed), regular files only, with their stamps.
    fn scan_dir(&mut self, abort: &AtomicBool) -> Vec<(String, Stamp)> {
        let mut out = Vec::new();
        let mut links = Vec::new();
        let mut dirs = vec![self.dir.clone()];
        if let Ok(rd) = fs::read_dir(&self.dir) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    dirs.push(e.path());
                }
            }
        }
        for d in dirs {
            if abort.load(Ordering::Relaxed) {
                break;
            }
            let Ok(rd) = fs::read_dir(&d) else { continue };
            for e in rd.flatten() {
                let name = e.file_name();
                let Some(n) = name.to_str() else { continue };
                if !n.ends_with(".jsonl") {
                    continue;
                }
                let p = e.path();
                let Ok(md) = fs::metadata(&p) else { continue };
                if !md.is_file() {
                    continue;
                }
                if let Some(s) = p.to_str() {
                    if e.file_type().is_ok_and(|t| t.is_symlink()) {
                        links.push(s.to_string());
                    }
                    out.push((s.to_string(), Stamp::of(&md)));
                }
            }
        }
        self.links = links;
        out
    }

    /// The files named by `paths` (and the links of the last full scan, and the files whose
    /// rows are not final yet) as they are now: `(path, stamp)` of the session files among
    /// them; the rest (gone, or no longer a regular file) left out.
    fn stat_some(&self, paths: Vec<String>) -> (Vec<(String, Stamp)>, Vec<String>) {
        let mut want: std::collections::HashSet<String> = paths.into_iter().collect();
        want.extend(self.links.iter().cloned());
        for (p, f) in &self.files {
            if !f.exact {
                want.insert(p.clone());
            }
        }
        let mut found = Vec::new();
        let mut missing = Vec::new();
        for p in want {
            match fs::metadata(&p) {
                Ok(md) if md.is_file() => found.push((p, Stamp::of(&md))),
                _ => missing.push(p),
            }
        }
        (found, missing)
    }

    /// Bring the index up to date with the files on disk. Retries once over a damaged file
    /// (its progress then starts again from 0). `progress`, when there are files to index
    /// (never when nothing changed): see [`Progress`].
    pub fn refresh(&mut self, abort: &AtomicBool, progress: Option<ProgressFn>) -> Result<()> {
        self.refresh_with(abort, progress, Load::Interactive)
    }

    /// [`Index::refresh`] taking `load` of the machine. A background refresh runs on a
    /// thread of its own whose OS priority is lowered (Linux: the nice value is per thread,
    /// and the worker it starts inherits it), so that the host's own work comes first.
    pub fn refresh_with(
        &mut self,
        abort: &AtomicBool,
        progress: Option<ProgressFn>,
        load: Load,
    ) -> Result<()> {
        match load {
            Load::Interactive => self.refresh_at(abort, progress, load),
            Load::Background => std::thread::scope(|s| {
                s.spawn(|| {
                    lower_this_threads_priority();
                    self.refresh_at(abort, progress, load)
                })
                .join()
                .unwrap_or_else(|_| Err(Error("search index: refresh panicked".into())))
            }),
        }
    }

    fn refresh_at(
        &mut self,
        abort: &AtomicBool,
        progress: Option<ProgressFn>,
        load: Load,
    ) -> Result<()> {
        self.indexed = 0;
        self.parsed = 0;
        match self.refresh_once(abort, progress, load) {
            Err(RefreshError::Sql(e)) if is_damage(&e) => {
                self.rebuild()?;
                self.refresh_once(abort, progress, load)
                    .map_err(RefreshError::into_error)
            }
            r => r.map_err(RefreshError::into_error),
        }
    }

    /// Replace a damaged index file by a new one.
    fn rebuild(&mut self) -> Result<()> {
        let path = self.dir.join(INDEX_FILE);
        if self.file_id.is_some() {
            remove(&path);
        }
        *self = Index::open(&self.dir.clone())?;
        Ok(())
    }

    fn refresh_once(
        &mut self,
        abort: &AtomicBool,
        progress: Option<ProgressFn>,
        load: Load,
    ) -> std::result::Result<(), RefreshError> {
        if self.data_version()? != self.data_version {
            self.load_files()?;
        }
        let start = now_ns();
        // The watch is put back only when this refresh completes: changes it reported and
        // this refresh did not index are then found by the full scan of the next one.
        let changed = match self.watch.take() {
            Some(mut w) => match w.changes() {
                watch::Changes::Paths(p) => Some((w, p)),
                watch::Changes::Full => None,
            },
            None => None,
        };
        let (found, missing, next_watch) = match changed {
            Some((w, paths)) => {
                let (found, missing) = self.stat_some(paths);
                (found, Some(missing), Some(w))
            }
            None => {
                // Watch first, then scan: a change during the scan is reported next time.
                let w = watch::Watch::new(&self.dir);
                (self.scan_dir(abort), None, w)
            }
        };
        if abort.load(Ordering::Relaxed) {
            return Err(RefreshError::Other(aborted()));
        }
        let mut seen: HashMap<&str, ()> = HashMap::with_capacity(found.len());
        let mut work: Vec<(String, Stamp, Option<FileRow>)> = Vec::new();
        for (p, st) in &found {
            seen.insert(p.as_str(), ());
            match self.files.get(p) {
                Some(f) if f.exact && f.stamp == *st => {}
                // Same stamp, changed within the last second: checked again once it settles.
                Some(f) if f.stamp == *st && !cacheable(st, start) => {}
                old => work.push((p.clone(), *st, old.cloned())),
            }
        }
        // Oldest first, so that rowids (and the ranking window of `query`) follow recency.
        work.sort_by_key(|(_, st, _)| st.mtime_ns);
        let gone: Vec<(String, i64)> = match &missing {
            // Full scan: every file not found is gone.
            None => self
                .files
                .iter()
                .filter(|(p, _)| !seen.contains_key(p.as_str()))
                .map(|(p, f)| (p.clone(), f.id))
                .collect(),
            Some(m) => m
                .iter()
                .filter_map(|p| self.files.get(p).map(|f| (p.clone(), f.id)))
                .collect(),
        };
        drop(seen);
        if work.is_empty() && gone.is_empty() {
            self.watch = next_watch;
            return Ok(());
        }
        self.indexed = work.len();
        let report = match progress {
            Some(f) if !work.is_empty() => Some(Progress::start(
                f,
                work.len(),
                work.iter().map(|(_, st, _)| st.size).sum(),
                self.progress_every,
            )),
            _ => None,
        };
        let (batch, workers) = match load {
            Load::Interactive => (Batch::files(BATCH), parse_threads()),
            Load::Background => (
                Batch {
                    min: BACKGROUND_BATCH,
                    max: BATCH,
                    time: BACKGROUND_TX_TIME,
                },
                0,
            ),
        };
        // A first build (or as large as one) into `fts`, the rest beside it (NEW_TABLE_MAX).
        self.fts_table = if self.files.is_empty() || work.len() >= NEW_TABLE_MAX {
            "fts"
        } else {
            "fts_new"
        };
        self.index_files(&work, start, report.as_ref(), batch, workers, abort)?;
        if !gone.is_empty() {
            let tx = self.conn.unchecked_transaction()?;
            for (p, id) in &gone {
                delete_file_rows(&tx, *id)?;
                tx.execute("DELETE FROM files WHERE id = ?1", params![id])?;
                self.files.remove(p);
            }
            tx.commit()?;
        }
        self.data_version = self.data_version()?;
        self.watch = next_watch;
        if let Some(r) = &report {
            r.finish();
        }
        Ok(())
    }

    /// Parse and write the files of `work` in its order (rowids follow it), in write
    /// transactions as `batch` says ([`Writer`]). With `workers`, that many threads parse
    /// ahead of the writer (this thread), at most [`AHEAD`] files per worker beyond the file
    /// being written; with none, this thread parses each file itself before writing it (the
    /// background refresh: one thread). An abort stops the parsing at the next file; the
    /// file being parsed is not written (a file not parsed would read as an unreadable
    /// one). An interactive refresh rolls the open transaction back (the files of the
    /// batch being written are not written); a background one commits the files it wrote.
    fn index_files(
        &mut self,
        work: &[(String, Stamp, Option<FileRow>)],
        start_ns: i128,
        progress: Option<&Progress>,
        batch: Batch,
        workers: usize,
        abort: &AtomicBool,
    ) -> std::result::Result<(), RefreshError> {
        let parsed = std::sync::atomic::AtomicUsize::new(0);
        // `None`: aborted while parsing (the file is not written, nor counted as parsed).
        let parse = |i: usize| -> Option<Option<Update>> {
            let (path, stamp, old) = &work[i];
            let mut read = 0u64;
            let mut on_read = |n: u64| {
                read += n;
                if let Some(p) = progress {
                    p.read(n);
                }
            };
            let up = parse_one(Path::new(path), old.as_ref(), start_ns, &mut on_read, abort)?;
            // Aborted while this file was read (a report it made may have set the flag).
            if abort.load(Ordering::Relaxed) {
                return None;
            }
            parsed.fetch_add(1, Ordering::Relaxed);
            if let Some(p) = progress {
                p.step(stamp.size.saturating_sub(read));
            }
            Some(up)
        };
        let mut writer = Writer::new(batch);
        let r = if workers == 0 {
            (|| {
                for (i, item) in work.iter().enumerate() {
                    if abort.load(Ordering::Relaxed) {
                        return Err(RefreshError::Other(aborted()));
                    }
                    // Aborted while parsing, or since: this file is not written.
                    let up = parse(i).filter(|_| !abort.load(Ordering::Relaxed));
                    let Some(up) = up else {
                        return Err(RefreshError::Other(aborted()));
                    };
                    writer.write(self, item, up)?;
                }
                Ok(())
            })()
        } else {
            let next = std::sync::atomic::AtomicUsize::new(0);
            // Files written so far, and whether the writer stopped (error or abort).
            // Files written so far, whether the writer stopped (error or abort), and the
            // bytes of the files parsing or parsed and not written yet.
            let written = std::sync::Mutex::new((0usize, false, 0u64));
            let moved = std::sync::Condvar::new();
            let ahead = AHEAD * workers;
            std::thread::scope(|s| {
                let (tx, rx) =
                    std::sync::mpsc::sync_channel::<(usize, Option<Option<Update>>)>(ahead);
                for _ in 0..workers {
                    let tx = tx.clone();
                    let (next, written, moved, parse) = (&next, &written, &moved, &parse);
                    s.spawn(move || {
                        loop {
                            if abort.load(Ordering::Relaxed) {
                                break;
                            }
                            let i = next.fetch_add(1, Ordering::Relaxed);
                            if i >= work.len() {
                                break;
                            }
                            // Not too far ahead of the writer (bounds memory): at most
                            // `ahead` files and AHEAD_BYTES, unless it is the next to write.
                            let size = work[i].1.size;
                            let Ok(mut w) = written.lock() else { break };
                            while !w.1
                                && i > w.0
                                && (i >= w.0 + ahead || w.2 + size > AHEAD_BYTES)
                                && !abort.load(Ordering::Relaxed)
                            {
                                let Ok((g, _)) =
                                    moved.wait_timeout(w, std::time::Duration::from_millis(50))
                                else {
                                    return;
                                };
                                w = g;
                            }
                            let stop = w.1;
                            w.2 += size;
                            drop(w);
                            if stop || abort.load(Ordering::Relaxed) {
                                break;
                            }
                            if tx.send((i, parse(i))).is_err() {
                                break;
                            }
                        }
                    });
                }
                drop(tx);
                let mut waiting: std::collections::BTreeMap<usize, Option<Option<Update>>> =
                    std::collections::BTreeMap::new();
                let mut done = 0usize;
                let r = (|| {
                    for (i, up) in rx.iter() {
                        waiting.insert(i, up);
                        while let Some(up) = waiting.remove(&done) {
                            let Some(up) = up.filter(|_| !abort.load(Ordering::Relaxed)) else {
                                return Err(RefreshError::Other(aborted()));
                            };
                            writer.write(self, &work[done], up)?;
                            done += 1;
                            if let Ok(mut w) = written.lock() {
                                w.0 = done;
                                w.2 = w.2.saturating_sub(work[done - 1].1.size);
                            }
                            moved.notify_all();
                        }
                    }
                    // The workers stopped early: aborted.
                    if done < work.len() {
                        return Err(RefreshError::Other(aborted()));
                    }
                    Ok(())
                })();
                if let Ok(mut w) = written.lock() {
                    w.1 = true;
                }
                moved.notify_all();
                // Unblock the workers' sends; they see the stop flag next.
                drop(rx);
                r
            })
        };
        self.parsed = parsed.load(Ordering::Relaxed);
        match r {
            Ok(()) => writer.finish(self),
            // A background refresh keeps the files it wrote before the abort (each written
            // whole): its transactions stay open about a second (BACKGROUND_TX_TIME), and pi
            // pauses its warm-up at every key pressed.
            Err(RefreshError::Other(e)) if workers == 0 && abort.load(Ordering::Relaxed) => {
                writer.keep(self);
                Err(RefreshError::Other(e))
            }
            Err(e) => {
                writer.cancel(self);
                Err(e)
            }
        }
    }

    fn begin(&mut self) -> std::result::Result<(), RefreshError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        // Another process may have written since our view was loaded.
        if self.data_version()? != self.data_version {
            self.load_files()?;
        }
        self.pending.clear();
        self.next_id =
            self.conn
                .query_row("SELECT coalesce(max(id), 0) + 1 FROM files", [], |r| {
                    r.get(0)
                })?;
        Ok(())
    }

    /// Write the `files` rows of the open transaction (see [`Index::pending`]).
    fn write_pending(&mut self) -> rusqlite::Result<()> {
        for (path, row, new) in std::mem::take(&mut self.pending) {
            let sql = if new {
                "INSERT INTO files(id, size, mtime, ctime, ino, indexed_to, fp, exact, session_id, cwd, leaf, path) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"
            } else {
                "UPDATE files SET size=?2, mtime=?3, ctime=?4, ino=?5, indexed_to=?6, fp=?7, exact=?8, session_id=?9, cwd=?10, leaf=?11 WHERE id=?1 AND path=?12"
            };
            self.conn.prepare_cached(sql)?.execute(params![
                row.id,
                row.stamp.size as i64,
                row.stamp.mtime_ns as i64,
                row.stamp.ctime_ns as i64,
                row.stamp.ino as i64,
                row.indexed_to as i64,
                row.fp.map(|v| v as i64),
                row.exact as i64,
                row.session_id,
                row.cwd,
                row.leaf,
                path
            ])?;
        }
        Ok(())
    }

    /// Write one parsed file (in the open transaction).
    fn write_file(
        &mut self,
        item: &(String, Stamp, Option<FileRow>),
        up: Option<Update>,
    ) -> std::result::Result<(), RefreshError> {
        let (path, stamp, old) = item;
        {
            let current = self.files.get(path).cloned();
            if current.as_ref().map(|c| (c.stamp, c.exact))
                != old.as_ref().map(|o| (o.stamp, o.exact))
            {
                // Someone else updated this file's rows meanwhile: theirs stand unless stale.
                if current
                    .as_ref()
                    .is_some_and(|c| c.exact && c.stamp == *stamp)
                {
                    return Ok(());
                }
            }
            let Some(up) = up else {
                // Unreadable now: forget it.
                if let Some(c) = current {
                    delete_file_rows(&self.conn, c.id)?;
                    self.conn
                        .execute("DELETE FROM files WHERE id = ?1", params![c.id])?;
                    self.files.remove(path);
                }
                return Ok(());
            };
            let (file_id, full) = match (&current, up.append) {
                (Some(c), true) => {
                    // The appended lines continue the rows as we saw them, or nothing.
                    if old.as_ref().map(|o| (o.id, o.indexed_to)) != Some((c.id, c.indexed_to)) {
                        return Ok(());
                    }
                    (c.id, false)
                }
                (Some(c), false) => {
                    delete_file_rows(&self.conn, c.id)?;
                    (c.id, true)
                }
                (None, true) => return Ok(()),
                (None, false) => {
                    let id = self.next_id;
                    self.next_id += 1;
                    (id, true)
                }
            };
            let new = current.is_none();
            let p = &up.parsed;
            // Worked out by the parsing thread for a whole file (`full` is `!up.append`).
            let active = if full { up.active.as_ref() } else { None };
            let mut ids = Vec::with_capacity(p.rows.len());
            for r in &p.rows {
                ids.push((self.name_id(&r.role)?, self.name_id(&r.tools)?));
            }
            {
                let mut ins_row = self.conn.prepare_cached(
                    "INSERT INTO rows(file, entry_id, role, tools, ts_ms, off, len, active, part, ntok) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
                )?;
                let mut ins_fts = self.conn.prepare_cached(if self.fts_table == "fts" {
                    "INSERT INTO fts(rowid, body) VALUES (?1, ?2)"
                } else {
                    "INSERT INTO fts_new(rowid, body) VALUES (?1, ?2)"
                })?;
                for (r, (role, tools)) in p.rows.iter().zip(ids) {
                    let Some(e) = p.entries.get(r.entry) else {
                        continue;
                    };
                    let on = match active {
                        Some(set) => set.get(r.entry).copied().unwrap_or(false),
                        None => true,
                    };
                    ins_row.execute(params![
                        file_id,
                        e.id,
                        role,
                        tools,
                        r.ts_ms,
                        e.off as i64,
                        e.len as i64,
                        on as i64,
                        r.part as i64,
                        r.count as i64
                    ])?;
                    let rowid = self.conn.last_insert_rowid();
                    // `r.text` is already the index text (see `folded`).
                    ins_fts.execute(params![rowid, r.text])?;
                }
            }
            let prev = if full { None } else { current.as_ref() };
            let leaf = p
                .entries
                .last()
                .map(|e| e.id.clone())
                .unwrap_or_else(|| prev.and_then(|c| c.leaf.clone()));
            let session_id = p
                .session_id
                .clone()
                .or_else(|| prev.and_then(|c| c.session_id.clone()));
            let cwd = p.cwd.clone().or_else(|| prev.and_then(|c| c.cwd.clone()));
            let row = FileRow {
                id: file_id,
                stamp: *stamp,
                indexed_to: p.end,
                fp: up.fp,
                exact: up.exact,
                session_id,
                cwd,
                leaf,
            };
            self.pending.push((path.clone(), row.clone(), new));
            self.files.insert(path.clone(), row);
        }
        Ok(())
    }
}

/// The write transactions of one refresh: one opened at the first file written, committed
/// once it holds `batch.max` files, or `batch.min` files and has been open `batch.time`, and
/// at the end; rolled back on an error or an abort (a background refresh's abort commits,
/// see [`Index::index_files`]).
struct Writer {
    batch: Batch,
    in_tx: usize,
    open: bool,
    /// When the open transaction began.
    since: std::time::Instant,
}

/// When a [`Writer`] commits.
#[derive(Clone, Copy)]
struct Batch {
    min: usize,
    max: usize,
    time: std::time::Duration,
}

impl Batch {
    /// Every `n` files.
    fn files(n: usize) -> Batch {
        Batch {
            min: n,
            max: n,
            time: std::time::Duration::ZERO,
        }
    }
}

impl Writer {
    fn new(batch: Batch) -> Writer {
        Writer {
            batch: Batch {
                min: batch.min.max(1),
                max: batch.max.max(1),
                time: batch.time,
            },
            in_tx: 0,
            open: false,
            since: std::time::Instant::now(),
        }
    }

    /// Whether the open transaction is to be committed now.
    fn full(&self) -> bool {
        self.in_tx >= self.batch.max
            || (self.in_tx >= self.batch.min && self.since.elapsed() >= self.batch.time)
    }

    fn write(
        &mut self,
        ix: &mut Index,
        item: &(String, Stamp, Option<FileRow>),
        up: Option<Update>,
    ) -> std::result::Result<(), RefreshError> {
        if !self.open {
            ix.begin()?;
            self.open = true;
            self.since = std::time::Instant::now();
        }
        ix.write_file(item, up)?;
        self.in_tx += 1;
        if self.full() {
            ix.write_pending()?;
            ix.conn.execute_batch("COMMIT")?;
            self.open = false;
            self.in_tx = 0;
        }
        Ok(())
    }

    fn finish(self, ix: &mut Index) -> std::result::Result<(), RefreshError> {
        if self.open {
            ix.write_pending()?;
            ix.conn.execute_batch("COMMIT")?;
        }
        Ok(())
    }

    /// Commit what the open transaction holds (at an abort); roll it back if that fails.
    fn keep(self, ix: &mut Index) {
        if self.open {
            let committed = ix.write_pending().is_ok() && ix.conn.execute_batch("COMMIT").is_ok();
            if !committed {
                self.cancel(ix);
            }
        }
    }

    fn cancel(self, ix: &mut Index) {
        ix.pending.clear();
        if self.open {
            let _ = ix.conn.execute_batch("ROLLBACK");
            // The in-memory view may be ahead of the file now.
            let _ = ix.load_files();
        }
    }
}

enum RefreshError {
    Sql(rusqlite::Error),
    Other(Error),
}
impl From<rusqlite::Error> for RefreshError {
    fn from(e: rusqlite::Error) -> Self {
        RefreshError::Sql(e)
    }
}
impl From<Error> for RefreshError {
    fn from(e: Error) -> Self {
        RefreshError::Other(e)
    }
}
impl RefreshError {
    fn into_error(self) -> Error {
        match self {
            RefreshError::Sql(e) => e.into(),
            RefreshError::Other(e) => e,
        }
    }
}

fn delete_file_rows(conn: &Connection, file: i64) -> rusqlite::Result<()> {
    // A file's rows may be in both tables (first built, then appended to).
    for t in ["fts", "fts_new"] {
        conn.execute(
            &format!("DELETE FROM {t} WHERE rowid IN (SELECT id FROM rows WHERE file = ?1)"),
            params![file],
        )?;
    }
    conn.execute("DELETE FROM rows WHERE file = ?1", params![file])?;
    Ok(())
}

/// Per entry: on the path from the last entry to the root (parent links by id; a cycle or
/// a missing parent ends the walk). `None` when no entry has an id.
fn active_set(entries: &[extract::Entry]) -> Option<Vec<bool>> {
    let mut by_id: HashMap<&str, usize, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(entries.len(), Default::default());
    for (i, e) in entries.iter().enumerate() {
        if let Some(id) = &e.id {
            by_id.insert(id.as_str(), i);
        }
    }
    let mut on = vec![false; entries.len()];
    let mut cur = entries.len().checked_sub(1)?;
    loop {
        if on[cur] {
            break;
        }
        on[cur] = true;
        let Some(next) = entries[cur]
            .parent
            .as_deref()
            .and_then(|p| by_id.get(p).copied())
        else {
            break;
        };
        cur = next;
    }
    Some(on)
}

/// What a worker produced for one file.
struct Update {
    parsed: extract::Parsed,
    /// Lines appended after `indexed_to`, extending the leaf (else: the whole file).
    append: bool,
    /// For the whole file (`!append`): [`active_set`] of its entries, worked out on the
    /// parsing thread (the writer bounds the build).
    active: Option<Vec<bool>>,
    fp: Option<u64>,
    exact: bool,
}

/// Parsing threads of an interactive refresh: one per core. The writer (the calling thread)
/// does about half of a first build's CPU work (FTS5's inserts) and shares a core with
/// them; one worker fewer (the writer alone on its core) was measured too, on 2 shared
/// cores, and was no faster: quicker at load ~2, slower at load 2-5 (BENCHMARKS.md, issue
/// 43's third pass).
fn parse_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(1, 64)
}

/// Lower the OS priority (raise the nice value by 10, to 19 at most) of the calling thread
/// only. Linux keeps a nice value per thread and `setpriority(PRIO_PROCESS, 0)` sets the
/// caller's; elsewhere it would set the whole process's, so nothing is done there. A failure
/// leaves the priority as it was (the refresh still runs, only less politely).
fn lower_this_threads_priority() {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::process::{getpriority_process, setpriority_process};
        if let Ok(nice) = getpriority_process(None) {
            let _ = setpriority_process(None, (nice + 10).min(19));
        }
    }
}

/// The rows' texts replaced by their index text (folded tokens), on the worker thread: the
/// writer, which runs alone, only inserts.
fn folded(mut p: extract::Parsed) -> extract::Parsed {
    for r in &mut p.rows {
        let t = text::index_text(&r.text);
        r.text = t.tokens;
        r.count = t.count;
    }
    p
}

/// Parse a file for the index: `Some(None)` when it cannot be read (or changed while read),
/// `None` when `abort` was set while it was read.
fn parse_one(
    path: &Path,
    old: Option<&FileRow>,
    start_ns: i128,
    on_read: &mut dyn FnMut(u64),
    abort: &AtomicBool,
) -> Option<Option<Update>> {
    let Ok(o) = crate::safefs::open_regular(path, true) else {
        return Some(None);
    };
    let now = Stamp::of(&o.meta);
    let size = o.size;
    // Registered for `reading_now` while it is parsed: how far, counted as chunks are parsed.
    let reading = Reading::start(path, size);
    let on_read = &mut |n: u64| {
        reading.0.done.fetch_add(n, Ordering::Relaxed);
        on_read(n);
    };
    let stable = cacheable(&now, start_ns);
    // Resume from where the index left off when that prefix is unchanged.
    if let Some(old) = old
        && old.stamp.ino == now.ino
        && size >= old.indexed_to
        && old.indexed_to > 0
        && old.fp.is_some()
        && crate::discovery::resume::fingerprint(&o.file, old.indexed_to) == old.fp
    {
        reading.0.done.store(old.indexed_to, Ordering::Relaxed);
        let parsed = match read_parsed(
            &o.file,
            old.indexed_to,
            size - old.indexed_to,
            stable,
            on_read,
            abort,
        ) {
            Read::Parsed(p) => p,
            Read::Failed => return Some(None),
            Read::Aborted => return None,
        };
        // Appends must extend the old leaf, one after the other.
        let mut leaf = old.leaf.clone();
        let mut linear = true;
        for e in &parsed.entries {
            if e.parent != leaf {
                linear = false;
                break;
            }
            leaf = e.id.clone();
        }
        if linear {
            let fp = crate::discovery::resume::fingerprint(&o.file, parsed.end);
            return Some(Some(Update {
                parsed,
                append: true,
                active: None,
                fp,
                exact: stable,
            }));
        }
    }
    let parsed = match read_parsed(&o.file, 0, size, stable, on_read, abort) {
        Read::Parsed(p) => p,
        Read::Failed => return Some(None),
        Read::Aborted => return None,
    };
    let fp = crate::discovery::resume::fingerprint(&o.file, parsed.end);
    let active = active_set(&parsed.entries);
    Some(Some(Update {
        parsed,
        append: false,
        active,
        fp,
        exact: stable,
    }))
}

/// What [`read_parsed`] got.
enum Read {
    Parsed(extract::Parsed),
    /// A read failed.
    Failed,
    /// `abort` was set between two chunks.
    Aborted,
}

/// The lines of `len` bytes of `file` from `from`, parsed and folded ([`folded`]) a chunk
/// of [`READ_CHUNK`] bytes at a time as they are read (`on_read` hears of each): a file of
/// any size is reported on as it goes, and its raw lines take one chunk of memory (or its
/// longest line), not the whole file. The unterminated last line is taken when `stable`
/// (see [`extract::parse`]).
fn read_parsed(
    file: &fs::File,
    from: u64,
    len: u64,
    stable: bool,
    on_read: &mut dyn FnMut(u64),
    abort: &AtomicBool,
) -> Read {
    use std::io::{Read as _, Seek};
    let mut f = file;
    if f.seek(std::io::SeekFrom::Start(from)).is_err() {
        return Read::Failed;
    }
    let mut out = extract::Parsed {
        end: from,
        ..extract::Parsed::default()
    };
    let mut buf: Vec<u8> = Vec::new();
    // File offset of `buf[0]`, bytes of `len` not read yet.
    let (mut at, mut left) = (from, len);
    loop {
        if abort.load(Ordering::Relaxed) {
            return Read::Aborted;
        }
        if left > 0 {
            let Ok(n) = f.take(READ_CHUNK.min(left)).read_to_end(&mut buf) else {
                return Read::Failed;
            };
            let n = n as u64;
            // A file that shrank meanwhile ends here.
            left = if n == 0 { 0 } else { left - n };
        }
        let eof = left == 0;
        let cut = if eof {
            buf.len()
        } else {
            match memchr::memrchr(b'\n', &buf) {
                Some(i) => i + 1,
                // A line longer than a chunk: read on.
                None => continue,
            }
        };
        // Abort is also checked every `extract::WATCH_EVERY` bytes inside a chunk: a search
        // cancelled in the TUI stops within a quarter megabyte of parsing.
        let keep_going = |_: usize| !abort.load(Ordering::Relaxed);
        let Some(part) = extract::parse_watched(&buf[..cut], at, eof && stable, &keep_going) else {
            return Read::Aborted;
        };
        out.extend(folded(part));
        on_read(cut as u64);
        buf.drain(..cut);
        at += cut as u64;
        if eof {
            return Read::Parsed(out);
        }
    }
}

/// Search options (see `searchSessions` in index.d.ts).
#[derive(Debug, Clone, Default)]
pub struct Options {
    pub cwd: Option<String>,
    pub roles: Vec<String>,
    pub tools: Vec<String>,
    pub since_ms: Option<i64>,
    pub until_ms: Option<i64>,
    pub all_branches: bool,
    pub limit: usize,
    pub offset: usize,
    /// Most hits per session (0: no cap).
    pub per_session: usize,
    /// Session files left out.
    pub exclude: Vec<String>,
    /// Characters of a snippet.
    pub snippet_chars: usize,
}

/// One hit.
#[derive(Debug, Clone)]
pub struct Hit {
    pub session_path: String,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub entry_id: Option<String>,
    pub role: String,
    pub timestamp: Option<String>,
    pub snippet: String,
    pub score: f64,
    pub on_active_branch: bool,
    /// What matched: "text" or "sessionId".
    pub matched: &'static str,
}

struct Candidate {
    file: i64,
    entry_id: Option<String>,
    role: String,
    tools: String,
    off: u64,
    len: u64,
    active: bool,
    part: i64,
    score: f64,
    matched: &'static str,
}

/// The columns of a [`Candidate`] from `rows r` joined with [`NAMES`].
const CANDIDATE: &str = "r.file, r.entry_id, nr.name, nt.name, r.off, r.len, r.active, r.part";
/// The names of the role (`nr`) and tools (`nt`) of `rows r`.
const NAMES: &str = "JOIN names nr ON nr.id = r.role JOIN names nt ON nt.id = r.tools";

impl Candidate {
    /// A candidate from a row whose first eight columns are [`CANDIDATE`].
    fn from_row(
        r: &rusqlite::Row<'_>,
        score: f64,
        matched: &'static str,
    ) -> rusqlite::Result<Candidate> {
        Ok(Candidate {
            file: r.get(0)?,
            entry_id: r.get(1)?,
            role: r.get(2)?,
            tools: r.get(3)?,
            off: r.get::<_, i64>(4)? as u64,
            len: r.get::<_, i64>(5)? as u64,
            active: r.get::<_, i64>(6)? != 0,
            part: r.get(7)?,
            score,
            matched,
        })
    }
}

impl Index {
    /// Refresh (reporting to `progress`, see [`Index::refresh`]), then search. A damaged
    /// index is rebuilt once.
    pub fn search(
        &mut self,
        query: &str,
        opts: &Options,
        abort: &Arc<AtomicBool>,
        progress: Option<ProgressFn>,
    ) -> Result<Vec<Hit>> {
        self.refresh(abort, progress)?;
        match self.query(query, opts, abort) {
            Err(QueryError::Sql(e)) if is_damage(&e) => {
                self.rebuild()?;
                self.refresh(abort, progress)?;
                self.query(query, opts, abort)
                    .map_err(QueryError::into_error)
            }
            r => r.map_err(QueryError::into_error),
        }
    }

    fn query(
        &self,
        query: &str,
        opts: &Options,
        abort: &Arc<AtomicBool>,
    ) -> std::result::Result<Vec<Hit>, QueryError> {
        let q = text::parse_query(query);
        let check = q.needs_check();
        let a = Arc::clone(abort);
        self.conn
            .progress_handler(10_000, Some(move || a.load(Ordering::Relaxed)));
        let by_id: HashMap<i64, (&String, &FileRow)> =
            self.files.iter().map(|(p, f)| (f.id, (p, f))).collect();
        let mut out: Vec<Hit> = Vec::new();
        let mut skipped = 0usize;
        let mut per: HashMap<i64, usize> = HashMap::new();
        let mut readers: HashMap<i64, Option<fs::File>> = HashMap::new();
        // Candidates a phrase check turned down (see MAX_TURNED_DOWN).
        let turned_down = std::cell::Cell::new(0usize);
        let mut accept = |c: Candidate, out: &mut Vec<Hit>| -> bool {
            let Some((path, f)) = by_id.get(&c.file) else {
                return false;
            };
            if opts.exclude.iter().any(|x| x == *path) {
                return false;
            }
            if let Some(cwd) = &opts.cwd
                && f.cwd.as_deref() != Some(cwd.as_str())
            {
                return false;
            }
            if !opts.tools.is_empty()
                && !c
                    .tools
                    .split(' ')
                    .any(|t| opts.tools.iter().any(|w| w == t))
            {
                return false;
            }
            if opts.per_session > 0 && per.get(&c.file).copied().unwrap_or(0) >= opts.per_session {
                return false;
            }
            // Read the line back: the caller can read the file, and the entry is still there.
            let file = readers.entry(c.file).or_insert_with(|| {
                crate::safefs::open_regular(Path::new(path.as_str()), true)
                    .ok()
                    .map(|o| o.file)
            });
            let Some(file) = file.as_ref() else {
                return false;
            };
            let Ok(len) = usize::try_from(c.len) else {
                return false;
            };
            if len > 256 * 1024 * 1024 {
                return false;
            }
            let mut buf = vec![0u8; len];
            if crate::entry::read_exact_at(file, &mut buf, c.off).is_err() {
                return false;
            }
            let Some((id, timestamp, texts)) = extract::entry_line(&buf) else {
                return false;
            };
            if id != c.entry_id {
                return false;
            }
            let Some(t) = usize::try_from(c.part)
                .ok()
                .and_then(|i| texts.get(i))
                .filter(|t| t.role == c.role)
                .map(|t| t.text.as_str())
            else {
                return false;
            };
            // The index knows which tokens a text holds, not where: a term of several
            // tokens in a row is checked here, on the text.
            // The fast necessary condition first (most texts turned down never get tokenized).
            if c.matched == "text" && check {
                let cost = if !q.may_match_text(t) {
                    1
                } else if !q.matches_text(t) {
                    FULL_CHECK_COST
                } else {
                    0
                };
                if cost > 0 {
                    turned_down.set(turned_down.get() + cost);
                    return false;
                }
            }
            let toks = text::tokens(t);
            *per.entry(c.file).or_insert(0) += 1;
            if skipped < opts.offset {
                skipped += 1;
                return true;
            }
            let snippet = if c.matched == "sessionId" {
                text::snippet_of(t, &toks, &text::Query::default(), opts.snippet_chars)
            } else {
                text::snippet_of(t, &toks, &q, opts.snippet_chars)
            };
            out.push(Hit {
                session_path: path.to_string(),
                session_id: f.session_id.clone(),
                cwd: f.cwd.clone(),
                entry_id: c.entry_id,
                role: c.role,
                timestamp,
                snippet,
                score: c.score,
                on_active_branch: c.active,
                matched: c.matched,
            });
            true
        };
        let mut filters = String::new();
        let mut args: Vec<rusqlite::types::Value> = Vec::new();
        if !opts.all_branches {
            filters.push_str(" AND r.active = 1");
        }
        if let Some(s) = opts.since_ms {
            args.push(s.into());
            filters.push_str(&format!(" AND r.ts_ms >= ?{}", args.len() + 1));
        }
        if let Some(u) = opts.until_ms {
            args.push(u.into());
            filters.push_str(&format!(" AND r.ts_ms < ?{}", args.len() + 1));
        }
        if !opts.roles.is_empty() {
            let mut list = Vec::new();
            for r in opts.roles.iter().take(32) {
                args.push(r.clone().into());
                list.push(format!("?{}", args.len() + 1));
            }
            filters.push_str(&format!(
                " AND r.role IN (SELECT id FROM names WHERE name IN ({}))",
                list.join(",")
            ));
        }
        // A session id or id prefix: the session's first text, ahead of text hits.
        if let Some(idp) = &q.id_prefix {
            let mut st = self.conn.prepare(
                "SELECT f.id, (SELECT r.id FROM rows r WHERE r.file = f.id ORDER BY r.id LIMIT 1) FROM files f WHERE f.session_id LIKE ?1 || '%' ORDER BY f.session_id LIMIT 1000",
            )?;
            let found: Vec<(i64, Option<i64>)> = st
                .query_map(params![idp], |r| Ok((r.get(0)?, r.get(1)?)))?
                .collect::<rusqlite::Result<_>>()?;
            for (_, row) in found {
                if out.len() >= opts.limit {
                    return Ok(out);
                }
                let Some(row) = row else { continue };
                let c = self.conn.query_row(
                    &format!("SELECT {CANDIDATE} FROM rows r {NAMES} WHERE r.id = ?1"),
                    params![row],
                    |r| Candidate::from_row(r, 1e9, "sessionId"),
                )?;
                accept(c, &mut out);
            }
        }
        let Some(m) = q.fts() else {
            self.conn.progress_handler(0, None::<fn() -> bool>);
            return Ok(out);
        };
        // Ranking: BM25 with every term counted once per text (the index keeps no
        // frequencies, and every candidate holds every term): shorter texts first, newer
        // first among equally long ones. All matching texts are sorted before the best can
        // be chosen: a word found in most sessions would cost a pass over most of the
        // index. When more than RANK_WINDOW texts match, the newest RANK_WINDOW of them
        // (rowids follow indexing order, oldest files first) are ranked first, and the
        // older ones only when those did not give enough hits.
        // Whether there are that many, first: FTS5 walks an AND of common tokens in rowid
        // order much faster forwards (it skips ahead on the rarest) than backwards. Each of
        // the two tables (`fts`, the first build; `fts_new`, what was written since) has a
        // window of its own: at most 2 x RANK_WINDOW texts are ranked in the first pass,
        // however the store grew.
        let many = |table: &str, order: &str| -> rusqlite::Result<Option<i64>> {
            self.conn
                .query_row(
                    &format!(
                        "SELECT rowid FROM {table} WHERE {table} MATCH ?1 ORDER BY rowid {order} LIMIT 1 OFFSET ?2"
                    ),
                    params![m, (RANK_WINDOW - 1) as i64],
                    |r| r.get(0),
                )
                .optional()
        };
        let mut cuts: [(&str, Option<i64>); 2] = [("fts", None), ("fts_new", None)];
        for (table, cut) in &mut cuts {
            *cut = match many(table, "ASC")? {
                Some(_) => many(table, "DESC")?,
                None => None,
            };
        }
        let passes: &[Option<bool>] = if cuts.iter().any(|(_, c)| c.is_some()) {
            &[Some(true), Some(false)]
        } else {
            &[None]
        };
        for newer in passes {
            if out.len() >= opts.limit || turned_down.get() >= self.max_turned_down {
                break;
            }
            let mut all: Vec<rusqlite::types::Value> = vec![m.clone().into()];
            all.extend(args.iter().cloned());
            let mut arms: Vec<String> = Vec::new();
            for (table, cut) in &cuts {
                let window = match (newer, cut) {
                    (Some(n), Some(c)) => {
                        all.push((*c).into());
                        format!(" AND rowid {} ?{}", if *n { ">=" } else { "<" }, all.len())
                    }
                    // No window in this table: all of it was ranked in the first pass.
                    (Some(false), None) => continue,
                    _ => String::new(),
                };
                arms.push(format!(
                    "SELECT rowid FROM {table} WHERE {table} MATCH ?1{window}"
                ));
            }
            if arms.is_empty() {
                continue;
            }
            let sql = format!(
                "SELECT {CANDIDATE}, r.ntok FROM ({}) m \
                 JOIN rows r ON r.id = m.rowid {NAMES} WHERE 1{filters} ORDER BY r.ntok, r.id DESC",
                arms.join(" UNION ALL ")
            );
            let mut st = self.conn.prepare(&sql)?;
            let mut rows = st.query(rusqlite::params_from_iter(all))?;
            while out.len() < opts.limit && turned_down.get() < self.max_turned_down {
                let Some(r) = rows.next()? else { break };
                if abort.load(Ordering::Relaxed) {
                    return Err(QueryError::Other(aborted()));
                }
                let c = Candidate::from_row(r, score(r.get::<_, i64>(8)?), "text")?;
                accept(c, &mut out);
            }
        }
        self.conn.progress_handler(0, None::<fn() -> bool>);
        Ok(out)
    }

    /// Bytes of the index file (0 in memory).
    pub fn size(&self) -> u64 {
        if self.file_id.is_none() {
            return 0;
        }
        fs::metadata(self.dir.join(INDEX_FILE))
            .map(|m| m.len())
            .unwrap_or(0)
    }
}

/// The score of a text of `ntok` tokens holding every term: BM25's length part (k1 = 1.2,
/// b = 0.75, against an average text of 100 tokens) with each term counted once.
fn score(ntok: i64) -> f64 {
    let (k1, b, avg) = (1.2, 0.75, 100.0);
    (k1 + 1.0) / (1.0 + k1 * (1.0 - b + b * ntok.max(0) as f64 / avg))
}

enum QueryError {
    Sql(rusqlite::Error),
    Other(Error),
}
impl From<rusqlite::Error> for QueryError {
    fn from(e: rusqlite::Error) -> Self {
        if e.sqlite_error_code() == Some(rusqlite::ErrorCode::OperationInterrupted) {
            return QueryError::Other(aborted());
        }
        QueryError::Sql(e)
    }
}
impl QueryError {
    fn into_error(self) -> Error {
        match self {
            QueryError::Sql(e) => e.into(),
            QueryError::Other(e) => e,
        }
    }
}

pub mod watch;
pub mod window;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn line(id: &str, parent: Option<&str>, text: &str) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            "{{\"type\":\"message\",\"id\":\"{id}\",\"parentId\":{parent},\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"message\":{{\"role\":\"user\",\"content\":\"{text}\"}}}}\n"
        )
    }

    /// `n` chained entries `n0`, `n1`, ... whose text is "common filler".
    fn filler_chain(n: usize) -> String {
        let mut body = String::new();
        let mut parent: Option<String> = None;
        for i in 0..n {
            let id = format!("n{i}");
            body.push_str(&line(&id, parent.as_deref(), "common filler"));
            parent = Some(id);
        }
        body
    }

    /// Set the file's mtime an hour back: not "changed within the last second" (rows a
    /// refresh takes as provisional and looks at again), and older than what is written now.
    /// An empty directory of its own under the temp dir for one test.
    fn fresh_root(name: &str) -> PathBuf {
        let root = std::env::temp_dir().join(format!("psn-search-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        root
    }

    fn modified_an_hour_ago(f: &Path) {
        modified_ago(f, 3600);
    }

    fn modified_ago(f: &Path, secs: u64) {
        let t = std::time::SystemTime::now() - std::time::Duration::from_secs(secs);
        fs::File::options()
            .write(true)
            .open(f)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    fn hits(ix: &mut Index, q: &str) -> Vec<String> {
        let opts = Options {
            limit: 100,
            snippet_chars: 80,
            ..Options::default()
        };
        ix.search(q, &opts, &Arc::new(AtomicBool::new(false)), None)
            .unwrap()
            .into_iter()
            .map(|h| h.entry_id.unwrap_or_default())
            .collect()
    }

    /// A word in more than RANK_WINDOW texts: the newest window is ranked first, and older
    /// texts are still found when the window gives too few hits (here: a filter excludes it).
    #[test]
    fn common_words_rank_the_newest_window_first_and_still_find_older_texts() {
        let root = fresh_root("window");
        let old = root.join("old.jsonl");
        fs::write(
            &old,
            format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"old-1\",\"timestamp\":\"t\",\"cwd\":\"/old\"}}\n{}",
                line("o1", None, "common word in the old one")
            ),
        )
        .unwrap();
        modified_an_hour_ago(&old);
        let mut body = String::from(
            "{\"type\":\"session\",\"version\":3,\"id\":\"new-1\",\"timestamp\":\"t\",\"cwd\":\"/new\"}\n",
        );
        body.push_str(&filler_chain(RANK_WINDOW + 10));
        fs::write(root.join("new.jsonl"), body).unwrap();
        let mut ix = Index::open(&root).unwrap();
        let abort = Arc::new(AtomicBool::new(false));
        let mut opts = Options {
            limit: 5,
            snippet_chars: 80,
            ..Options::default()
        };
        let got = ix.search("common", &opts, &abort, None).unwrap();
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|h| h.cwd.as_deref() == Some("/new")));
        opts.cwd = Some("/old".into());
        let got = ix.search("common", &opts, &abort, None).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].entry_id.as_deref(), Some("o1"));
        // A text appended since (in `fts_new`) is ranked with the newest window, and the
        // older one of `fts` is still found after it.
        let mut a = fs::OpenOptions::new().append(true).open(&old).unwrap();
        a.write_all(line("o2", Some("o1"), "common appended").as_bytes())
            .unwrap();
        drop(a);
        let got = ix.search("common", &opts, &abort, None).unwrap();
        let ids: Vec<_> = got.iter().map(|h| h.entry_id.as_deref()).collect();
        assert_eq!(ids, [Some("o2"), Some("o1")]);
        opts.cwd = None;
        let got = ix.search("common appended", &opts, &abort, None).unwrap();
        assert_eq!(got.len(), 1);
        let _ = fs::remove_dir_all(&root);
    }

    /// A store that grew a little at a time after its first build keeps its texts in
    /// `fts_new`: that table has a ranking window of its own, and its older texts are
    /// found by the second pass.
    #[test]
    fn texts_written_after_the_first_build_have_a_ranking_window_too() {
        let root = fresh_root("window-new");
        let session = |name: &str, cwd: &str, lines: &str| {
            let p = root.join(name);
            fs::write(
                &p,
                format!(
                    "{{\"type\":\"session\",\"version\":3,\"id\":\"{name}\",\"timestamp\":\"t\",\"cwd\":\"{cwd}\"}}\n{lines}"
                ),
            )
            .unwrap();
            p
        };
        let seed = session("seed.jsonl", "/seed", &line("s1", None, "nothing here"));
        modified_ago(&seed, 7200);
        let mut ix = Index::open(&root).unwrap();
        assert!(hits(&mut ix, "common").is_empty());
        let old = session(
            "old.jsonl",
            "/old",
            &line("o1", None, "common word in the old one"),
        );
        modified_an_hour_ago(&old);
        assert_eq!(hits(&mut ix, "common"), ["o1"]);
        let mut body = String::new();
        body.push_str(&filler_chain(RANK_WINDOW + 10));
        session("new.jsonl", "/new", &body);
        let abort = Arc::new(AtomicBool::new(false));
        let mut opts = Options {
            limit: 5,
            snippet_chars: 80,
            ..Options::default()
        };
        let got = ix.search("common", &opts, &abort, None).unwrap();
        assert_eq!(got.len(), 5);
        assert!(got.iter().all(|h| h.cwd.as_deref() == Some("/new")));
        // Both sessions went to `fts_new`: every refresh after the first was small.
        let in_new: i64 = ix
            .conn
            .query_row(
                "SELECT count(*) FROM fts_new WHERE fts_new MATCH 'common'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(in_new as usize, RANK_WINDOW + 11);
        opts.cwd = Some("/old".into());
        let got = ix.search("common", &opts, &abort, None).unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].entry_id.as_deref(), Some("o1"));
        let _ = fs::remove_dir_all(&root);
    }

    /// Blocks and bytes of one FTS5 table's segments (`<table>_data`).
    fn fts_blocks(ix: &Index, table: &str) -> (i64, i64) {
        ix.conn
            .query_row(
                &format!("SELECT count(*), coalesce(sum(length(block)), 0) FROM {table}_data"),
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap()
    }

    /// Texts written after the first build go to `fts_new`: the first build's segment is
    /// never merged again by them (appends stayed fast), and every query finds texts of
    /// both tables, in the newest window and outside it, filtered, rewritten and removed.
    #[test]
    fn appends_after_the_first_build_leave_its_segments_alone() {
        let root = fresh_root("newtable");
        let header = |id: &str| {
            format!(
                "{{\"type\":\"session\",\"version\":3,\"id\":\"{id}\",\"timestamp\":\"t\",\"cwd\":\"/p\"}}\n"
            )
        };
        let mut files = Vec::new();
        for f in 0..20 {
            let p = root.join(format!("s{f}.jsonl"));
            let mut body = header(&format!("sess-{f}"));
            let mut parent: Option<String> = None;
            for i in 0..30 {
                let id = format!("f{f}e{i}");
                body.push_str(&line(
                    &id,
                    parent.as_deref(),
                    &format!("common word{i} file{f}x"),
                ));
                parent = Some(id);
            }
            fs::write(&p, body).unwrap();
            modified_an_hour_ago(&p);
            files.push((p, parent));
        }
        let mut ix = Index::open(&root).unwrap();
        assert_eq!(hits(&mut ix, "file7x word3"), ["f7e3"]);
        let built = fts_blocks(&ix, "fts");
        assert!(built.1 > 0);
        assert_eq!(
            fts_blocks(&ix, "fts_new").1,
            fts_blocks(
                &Index::open(&fresh_root("newtable-empty")).unwrap(),
                "fts_new"
            )
            .1
        );
        // 60 appended turns, each found by the next query, as FTS5 would merge them.
        for j in 0..60 {
            let (p, leaf) = &mut files[j % 20];
            let id = format!("app{j}");
            let mut a = fs::OpenOptions::new().append(true).open(&*p).unwrap();
            a.write_all(
                line(
                    &id,
                    leaf.as_deref(),
                    &format!("common fresh{j}q file{}x", j % 20),
                )
                .as_bytes(),
            )
            .unwrap();
            drop(a);
            *leaf = Some(id.clone());
            assert_eq!(hits(&mut ix, &format!("fresh{j}q")), [id]);
        }
        // The first build's segments are as it wrote them; the appends are beside them.
        assert_eq!(fts_blocks(&ix, "fts"), built);
        assert!(fts_blocks(&ix, "fts_new").1 > 0);
        // One query over both tables: a phrase, a word in both, a filter.
        let mut got = hits(&mut ix, "file3x");
        got.sort();
        assert_eq!(got.len(), 33);
        assert!(got.contains(&"app3".to_string()) && got.contains(&"f3e0".to_string()));
        assert_eq!(hits(&mut ix, "\"fresh5q file5x\""), ["app5"]);
        assert!(hits(&mut ix, "\"file5x fresh5q\"").is_empty());
        let opts = Options {
            limit: 1000,
            snippet_chars: 80,
            roles: vec!["assistant".into()],
            ..Options::default()
        };
        let abort = Arc::new(AtomicBool::new(false));
        assert!(
            ix.search("fresh5q", &opts, &abort, None)
                .unwrap()
                .is_empty()
        );
        // A rewrite of a file with rows in both tables: its old texts are gone from both.
        let (p, _) = &files[3];
        fs::write(
            p,
            format!(
                "{}{}",
                header("sess-3"),
                line("r1", None, "rewritten file3x")
            ),
        )
        .unwrap();
        assert_eq!(hits(&mut ix, "file3x"), ["r1"]);
        assert!(hits(&mut ix, "fresh3q").is_empty());
        assert!(hits(&mut ix, "\"word4 file3x\"").is_empty());
        // Removed: nothing of it in either table.
        fs::remove_file(&files[5].0).unwrap();
        assert!(hits(&mut ix, "fresh5q").is_empty());
        assert!(hits(&mut ix, "file5x").is_empty());
        assert_eq!(hits(&mut ix, "fresh6q"), ["app6"]);
        let _ = fs::remove_dir_all(&root);
        let _ = fs::remove_dir_all(fresh_root("newtable-empty"));
    }

    /// Between full scans, the watch (Linux) or the full scan (elsewhere) finds appends,
    /// new files, new project directories, removed files and rewritten files.
    #[test]
    fn every_change_is_seen_by_the_next_query() {
        let root = std::env::temp_dir().join(format!("psn-search-watch-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let proj = root.join("--p--");
        fs::create_dir_all(&proj).unwrap();
        let f = proj.join("a.jsonl");
        let header = "{\"type\":\"session\",\"version\":3,\"id\":\"aaaa-1\",\"timestamp\":\"2026-01-01T00:00:00.000Z\",\"cwd\":\"/p\"}\n";
        fs::write(&f, format!("{header}{}", line("e1", None, "first walrus"))).unwrap();
        let mut ix = Index::open(&root).unwrap();
        assert_eq!(hits(&mut ix, "walrus"), ["e1"]);
        // An append.
        let mut a = fs::OpenOptions::new().append(true).open(&f).unwrap();
        a.write_all(line("e2", Some("e1"), "second walrus").as_bytes())
            .unwrap();
        drop(a);
        let mut got = hits(&mut ix, "walrus");
        got.sort();
        assert_eq!(got, ["e1", "e2"]);
        // A new file in a new project directory.
        let q = root.join("--q--");
        fs::create_dir_all(&q).unwrap();
        fs::write(
            q.join("b.jsonl"),
            format!("{header}{}", line("e3", None, "zebra")),
        )
        .unwrap();
        assert_eq!(hits(&mut ix, "zebra"), ["e3"]);
        // A new file in a known directory, then another append to it.
        let g = proj.join("c.jsonl");
        fs::write(&g, format!("{header}{}", line("e4", None, "okapi"))).unwrap();
        assert_eq!(hits(&mut ix, "okapi"), ["e4"]);
        // A rewrite (same size, other text) and a removal.
        fs::write(&g, format!("{header}{}", line("e4", None, "lemur"))).unwrap();
        assert_eq!(hits(&mut ix, "lemur"), ["e4"]);
        assert!(hits(&mut ix, "okapi").is_empty());
        fs::remove_file(&f).unwrap();
        assert!(hits(&mut ix, "walrus").is_empty());
        // A file renamed in from elsewhere.
        let tmp = root.join("d.tmp");
        fs::write(&tmp, format!("{header}{}", line("e5", None, "tapir"))).unwrap();
        fs::rename(&tmp, proj.join("d.jsonl")).unwrap();
        assert_eq!(hits(&mut ix, "tapir"), ["e5"]);
        // These were answered by the watch, not by full scans.
        #[cfg(target_os = "linux")]
        assert!(ix.watch.is_some());
        let _ = fs::remove_dir_all(&root);
    }

    fn session_with_tools(dir: &Path, name: &str) -> PathBuf {
        let f = dir.join(name);
        let lines = [
            r#"{"type":"session","version":3,"id":"tool-1","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
            r#"{"type":"message","id":"u1","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z","message":{"role":"user","content":"rename the tree helper"}}"#,
            r#"{"type":"message","id":"a1","parentId":"u1","timestamp":"2026-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"text","text":"On it."},{"type":"toolCall","id":"c1","name":"edit","arguments":{"path":"src/core/session-manager.ts","edits":[{"oldText":"function idSummaryTree() {","newText":"function summaryOf() {"}]}},{"type":"toolCall","id":"c2","name":"bash","arguments":{"command":"npx vitest run quokka.test.ts"}}]}}"#,
            r#"{"type":"message","id":"r1","parentId":"a1","timestamp":"2026-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"edit","content":[{"type":"text","text":"Successfully replaced text in zebrafile.ts"}]}}"#,
            r#"{"type":"label","id":"l1","parentId":"r1","timestamp":"2026-01-01T00:00:04.000Z","targetId":"a1","label":"before-rename"}"#,
            r#"{"type":"session_info","id":"n1","parentId":"l1","timestamp":"2026-01-01T00:00:05.000Z","name":"Tree helper rename"}"#,
        ];
        fs::write(&f, lines.join("\n") + "\n").unwrap();
        f
    }

    fn found(ix: &mut Index, q: &str, opts: &Options) -> Vec<(String, String)> {
        ix.search(q, opts, &Arc::new(AtomicBool::new(false)), None)
            .unwrap()
            .into_iter()
            .map(|h| (h.entry_id.unwrap_or_default(), h.role))
            .collect()
    }

    /// Paths, commands and identifiers inside tool calls are found whole and by their
    /// parts, and the role and tool filters pick tool calls and their results.
    #[test]
    fn tool_calls_are_found_by_paths_commands_and_identifiers() {
        let root = fresh_root("tools");
        session_with_tools(&root, "s.jsonl");
        let mut ix = Index::open(&root).unwrap();
        let opts = Options {
            limit: 100,
            snippet_chars: 80,
            ..Options::default()
        };
        let call = vec![("a1".to_string(), "toolCall".to_string())];
        for q in [
            "src/core/session-manager.ts",
            "session-manager",
            "session-manager.ts",
            "idSummaryTree",
            "summaryTree",
            "idSumm*",
            "vitest quokka",
            "\"npx vitest run\"",
            "summaryOf",
        ] {
            assert_eq!(found(&mut ix, q, &opts), call, "{q}");
        }
        // A part of an identifier.
        assert_eq!(found(&mut ix, "summary", &opts), call);
        assert_eq!(
            found(&mut ix, "zebrafile", &opts),
            [("r1".into(), "toolResult".into())]
        );
        assert_eq!(
            found(&mut ix, "before-rename", &opts),
            [("l1".into(), "label".into())]
        );
        assert_eq!(
            found(&mut ix, "helper rename", &opts).len(),
            2,
            "the user's words and the session name"
        );
        // Filters.
        let roles = Options {
            roles: vec!["toolCall".into()],
            ..opts.clone()
        };
        assert_eq!(found(&mut ix, "tree", &roles), call);
        let edit = Options {
            tools: vec!["edit".into()],
            ..opts.clone()
        };
        assert_eq!(found(&mut ix, "zebrafile", &edit).len(), 1);
        assert_eq!(found(&mut ix, "summaryOf", &edit), call);
        let bash = Options {
            tools: vec!["bash".into()],
            roles: vec!["toolCall".into()],
            ..opts.clone()
        };
        assert_eq!(found(&mut ix, "quokka", &bash), call);
        assert!(found(&mut ix, "summaryOf", &bash).is_empty());
        // The snippet comes from the call that matched, marked.
        let hits = ix
            .search(
                "idSummaryTree",
                &opts,
                &Arc::new(AtomicBool::new(false)),
                None,
            )
            .unwrap();
        assert!(
            hits[0].snippet.contains("«idSummaryTree»"),
            "{}",
            hits[0].snippet
        );
        assert!(
            hits[0]
                .snippet
                .contains("manager.ts function «idSummaryTree»() { function summaryOf()"),
            "{}",
            hits[0].snippet
        );
        let _ = fs::remove_dir_all(&root);
    }

    /// A cold build reports `(0, n)`, growing counts, `(n, n)`; a warm refresh reports
    /// nothing; an append reports its one file.
    #[test]
    fn progress_reports_real_indexing_work_only() {
        let root = fresh_root("progress");
        let n = 300;
        for i in 0..n {
            session_with_tools(&root, &format!("s{i}.jsonl"));
        }
        let calls = std::sync::Mutex::new(Vec::new());
        let record = |r: Report| calls.lock().unwrap().push((r.done, r.total));
        let mut ix = Index::open(&root).unwrap();
        let abort = AtomicBool::new(false);
        ix.refresh(&abort, Some(&record)).unwrap();
        let got = std::mem::take(&mut *calls.lock().unwrap());
        assert_eq!(got.first(), Some(&(0, n)));
        assert_eq!(got.last(), Some(&(n, n)));
        assert!(
            got.windows(2).all(|w| w[0].0 <= w[1].0 && w[1].1 == n),
            "{got:?}"
        );
        // Files changed within the last second are looked at again once settled; wait.
        std::thread::sleep(std::time::Duration::from_millis(1100));
        ix.refresh(&abort, Some(&record)).unwrap();
        calls.lock().unwrap().clear();
        ix.refresh(&abort, Some(&record)).unwrap();
        assert!(calls.lock().unwrap().is_empty());
        let mut a = fs::OpenOptions::new()
            .append(true)
            .open(root.join("s7.jsonl"))
            .unwrap();
        a.write_all(line("x1", Some("n1"), "late walrus").as_bytes())
            .unwrap();
        drop(a);
        ix.refresh(&abort, Some(&record)).unwrap();
        assert_eq!(*calls.lock().unwrap(), [(0, 1), (1, 1)]);
        let _ = fs::remove_dir_all(&root);
    }

    /// A file of several read chunks is reported on as it is read (bytes grow while `done`
    /// is 0), whatever its size; `done` and `bytes_done` never go back.
    #[test]
    fn a_big_file_is_reported_on_as_it_is_read() {
        let root = fresh_root("big");
        let mut body = String::new();
        let mut parent: Option<String> = None;
        let mut j = 0;
        while (body.len() as u64) < 3 * READ_CHUNK + 1000 {
            let id = format!("m{j}");
            let text = format!("line {j} of the big one {}", "filler words ".repeat(200));
            body.push_str(&line(&id, parent.as_deref(), &text));
            parent = Some(id);
            j += 1;
        }
        fs::write(root.join("big.jsonl"), &body).unwrap();
        let calls = std::sync::Mutex::new(Vec::new());
        let record = |r: Report| calls.lock().unwrap().push(r);
        for load in [Load::Interactive, Load::Background] {
            let _ = fs::remove_file(root.join(INDEX_FILE));
            let mut ix2 = Index::open(&root).unwrap();
            ix2.progress_every = std::time::Duration::ZERO;
            calls.lock().unwrap().clear();
            ix2.refresh_with(&AtomicBool::new(false), Some(&record), load)
                .unwrap();
            let got = std::mem::take(&mut *calls.lock().unwrap());
            let size = body.len() as u64;
            let within: Vec<u64> = got
                .iter()
                .filter(|r| r.done == 0 && r.bytes_done > 0 && r.bytes_done < size)
                .map(|r| r.bytes_done)
                .collect();
            assert!(within.len() >= 3, "{load:?}: {got:?}");
            assert!(
                got.windows(2)
                    .all(|w| w[0].done <= w[1].done && w[0].bytes_done <= w[1].bytes_done),
                "{got:?}"
            );
            assert_eq!(
                got.last()
                    .map(|r| (r.done, r.total, r.bytes_done, r.bytes_total)),
                Some((1, 1, size, size))
            );
            assert_eq!(hits(&mut ix2, "big").len(), 100.min(j));
        }
        let _ = fs::remove_dir_all(&root);
    }

    /// A phrase whose tokens are in many texts but rarely in a row stops after
    /// `max_turned_down` of work on candidates turned down: a text holding it that ranks
    /// after them (the oldest session) is missed then, found when within the bound. A
    /// candidate the fast condition turns down costs 1, one the full check turns down (here:
    /// non-ASCII texts) FULL_CHECK_COST.
    #[test]
    fn a_phrase_check_is_bounded() {
        let bound = 2_000;
        let search = |root: &Path, q: &str| {
            let mut ix = Index::open(root).unwrap();
            ix.max_turned_down = bound;
            let abort = Arc::new(AtomicBool::new(false));
            let opts = Options {
                limit: 5,
                snippet_chars: 40,
                ..Options::default()
            };
            ix.search(q, &opts, &abort, None).unwrap().len()
        };
        let plant = |root: &Path| {
            // The oldest session, whose texts rank last: the phrase in a row, same length.
            let old = root.join("old.jsonl");
            fs::write(&old, line("o1", None, "x tundra walrus of the y")).unwrap();
            modified_ago(&old, 7200);
        };
        // ASCII candidates, turned down by the fast condition: 1 each.
        let root = fresh_root("bound");
        write_chains(&root, bound / 200 + 5, true, |i, j| {
            format!("walrus {i} of the {j} tundra")
        });
        plant(&root);
        assert_eq!(search(&root, "\"tundra walrus\""), 0);
        // Found when it is within the bound (here: the only candidate).
        assert_eq!(search(&root, "\"x tundra walrus\""), 1);
        assert_eq!(search(&root, "\"the 7 tundra\""), 5);
        let _ = fs::remove_dir_all(&root);
        // As many candidates (a quarter of the bound's count) find the old one when the fast
        // condition turns them down; when only the full check can (non-ASCII), they cost
        // FULL_CHECK_COST each and use the bound up.
        let n = bound / 4 / 200 + 1;
        assert!(n * 200 < bound && n * 200 * FULL_CHECK_COST > bound);
        for (word, found) in [("walrus", 1), ("wálrus", 0)] {
            let root = fresh_root("bound-full");
            write_chains(&root, n, true, |i, j| {
                format!("{word} {i} of the {j} tundra")
            });
            plant(&root);
            assert_eq!(search(&root, "\"tundra walrus\""), found, "{word}");
            let _ = fs::remove_dir_all(&root);
        }
    }

    /// Writes `n` sessions `s<i>.jsonl` of 200 chained messages each (`text(i, j)`), with a
    /// header line first when `header`.
    fn write_chains(root: &Path, n: usize, header: bool, text: impl Fn(usize, usize) -> String) {
        for i in 0..n {
            let mut body = String::new();
            if header {
                body.push_str(
                    r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
                );
                body.push('\n');
            }
            let mut parent: Option<String> = None;
            for j in 0..200 {
                let id = format!("m{j}");
                body.push_str(&line(&id, parent.as_deref(), &text(i, j)));
                parent = Some(id);
            }
            let f = root.join(format!("s{i}.jsonl"));
            fs::write(&f, body).unwrap();
            // Settled: the counts of the tests do not hang on the clock.
            modified_an_hour_ago(&f);
        }
    }

    /// Sets its abort flag at the first progress report after the start and keeps that
    /// report's `done`.
    #[derive(Default)]
    struct AbortAtFirstReport {
        abort: AtomicBool,
        at: std::sync::Mutex<Option<usize>>,
    }

    impl AbortAtFirstReport {
        fn report(&self, r: Report) {
            let (done, total) = (r.done, r.total);
            if done > 0 && done < total {
                let mut at = self.at.lock().unwrap();
                if at.is_none() {
                    *at = Some(done);
                    self.abort.store(true, Ordering::Relaxed);
                }
            }
        }

        fn done_at_abort(&self) -> usize {
            self.at
                .lock()
                .unwrap()
                .expect("no progress report before the build finished: sessions too small")
        }
    }

    /// A write transaction is committed at `max` files, or at `min` files once it has been
    /// open `time` (a background refresh's: 64 files and 1 s, or 1,024 files).
    #[test]
    fn a_background_transaction_is_committed_by_files_and_time() {
        let at = |batch: Batch, n: usize| {
            let mut w = Writer::new(batch);
            w.in_tx = n;
            w.full()
        };
        assert!(!at(Batch::files(3), 2));
        assert!(at(Batch::files(3), 3));
        let hour = std::time::Duration::from_secs(3600);
        let slow = Batch {
            min: 2,
            max: 4,
            time: hour,
        };
        assert!(!at(slow, 2) && !at(slow, 3));
        assert!(at(slow, 4));
        let fast = Batch {
            min: 2,
            max: 4,
            time: std::time::Duration::ZERO,
        };
        assert!(!at(fast, 1));
        assert!(at(fast, 2));
    }

    /// A cold background build aborted during its first progress report after the start
    /// stops at once: its one worker parses no file after the abort, the files it wrote
    /// before it are kept (the one being parsed is not written), and the next refresh
    /// indexes the rest.
    #[test]
    fn an_aborted_background_build_stops_at_the_next_file() {
        let root = fresh_root("abort");
        // Sessions big enough that one worker takes well over one progress interval.
        let n = 300;
        write_chains(&root, n, true, |i, j| {
            format!(
                "session {i} line {j} narwhal{j} walks the tree of helpers and renames summaryOf{i} in manager.ts"
            )
        });
        let stop = AbortAtFirstReport::default();
        let record = |r: Report| stop.report(r);
        let mut ix = Index::open(&root).unwrap();
        let r = ix.refresh_with(&stop.abort, Some(&record), Load::Background);
        let d = stop.done_at_abort();
        assert_eq!(r.err().map(|e| e.0).as_deref(), Some("aborted"));
        assert_eq!(ix.indexed_by_last_refresh(), n);
        // One worker, which checks the flag before each file: nothing parsed after `d`.
        assert_eq!(ix.parsed_by_last_refresh(), d);
        let written: usize = ix
            .conn
            .query_row("SELECT count(*) FROM files", [], |r| r.get(0))
            .unwrap();
        // Every file parsed before the abort, but the one whose report set it (parsed, not
        // written) when the report came at the end of a file.
        assert!(
            written <= d && written + 1 >= d,
            "{written} written, {d} parsed at the abort"
        );
        // The next refresh indexes the files the aborted one did not write.
        stop.abort.store(false, Ordering::Relaxed);
        let mut ix = Index::open(&root).unwrap();
        ix.refresh_with(&stop.abort, None, Load::Background)
            .unwrap();
        assert_eq!(ix.indexed_by_last_refresh(), n - written);
        assert_eq!(ix.parsed_by_last_refresh(), n - written);
        let opts = Options {
            limit: 1000,
            snippet_chars: 40,
            ..Options::default()
        };
        assert_eq!(found(&mut ix, "narwhal7", &opts).len(), n);
        let _ = fs::remove_dir_all(&root);
    }

    /// An interactive build aborted from a progress report parses at most one more file
    /// per other worker (each finishes the file it is on).
    #[test]
    fn an_aborted_interactive_build_stops_within_a_file_per_worker() {
        let root = fresh_root("abort-i");
        // More sessions than the background test: up to 4 workers must outlast 100 ms.
        let n = 500;
        write_chains(&root, n, false, |i, j| {
            format!("session {i} line {j} okapi{j} grazes by the session manager")
        });
        let stop = AbortAtFirstReport::default();
        let record = |r: Report| stop.report(r);
        let mut ix = Index::open(&root).unwrap();
        let r = ix.refresh_with(&stop.abort, Some(&record), Load::Interactive);
        let d = stop.done_at_abort();
        assert!(r.is_err());
        let parsed = ix.parsed_by_last_refresh();
        assert!(
            parsed >= d && parsed < d + parse_threads(),
            "{parsed} parsed, {d} at the abort, {} workers",
            parse_threads()
        );
        let _ = fs::remove_dir_all(&root);
    }

    /// A sessions folder reached through a symbolic link keeps its index on disk.
    #[cfg(unix)]
    #[test]
    fn a_sessions_folder_behind_a_symlink_keeps_its_index_on_disk() {
        let root = std::env::temp_dir().join(format!("psn-search-link-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let real = root.join("real");
        fs::create_dir_all(&real).unwrap();
        let link = root.join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let ix = Index::open(&link).unwrap();
        assert!(!ix.in_memory());
        assert!(ix.still_valid());
        drop(ix);
        assert!(real.join(INDEX_FILE).is_file());
        // The index file itself as a link is still refused (removed, not followed).
        let other = root.join("other.sqlite");
        fs::write(&other, b"not ours").unwrap();
        fs::remove_file(real.join(INDEX_FILE)).unwrap();
        std::os::unix::fs::symlink(&other, real.join(INDEX_FILE)).unwrap();
        let ix = Index::open(&link).unwrap();
        assert!(!ix.in_memory());
        assert_eq!(fs::read(&other).unwrap(), b"not ours");
        drop(ix);
        let _ = fs::remove_dir_all(&root);
    }

    /// A large file tells how far its parse is (reading_files), and an abort stops the parse
    /// inside it, within a quarter megabyte: nothing of it is written.
    #[test]
    fn a_large_file_reports_its_progress_and_stops_inside_on_abort() {
        let root = std::env::temp_dir().join(format!("psn-search-large-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(&root).unwrap();
        let file = root.join("big.jsonl");
        let mut body = String::from(
            r#"{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/p"}"#,
        );
        body.push('\n');
        let mut parent: Option<String> = None;
        // ~14 MB: parsing takes long enough to be seen (and stopped) part-way
        for j in 0..40_000 {
            let id = format!("m{j}");
            body.push_str(&line(
                &id,
                parent.as_deref(),
                &format!(
                    "line {j} of the large session about ledgers and {}",
                    "rounding ".repeat(20)
                ),
            ));
            parent = Some(id);
        }
        fs::write(&file, &body).unwrap();
        let size = body.len() as u64;
        let abort = Arc::new(AtomicBool::new(false));
        let worker = {
            let (root, abort) = (root.clone(), Arc::clone(&abort));
            std::thread::spawn(move || {
                let mut ix = Index::open(&root).unwrap();
                let r = ix.refresh_with(&abort, None, Load::Interactive);
                (r.err().map(|e| e.0), ix.parsed_by_last_refresh())
            })
        };
        let name = file.to_string_lossy().into_owned();
        let seen = loop {
            let ours = reading_files().into_iter().find(|r| r.0 == name);
            if let Some(r) = ours.filter(|r| r.1 >= extract::WATCH_EVERY as u64) {
                break r;
            }
            assert!(!worker.is_finished(), "the parse ended before it was seen");
            std::thread::sleep(std::time::Duration::from_millis(2));
        };
        assert_eq!(seen.2, size);
        assert!(seen.1 < size, "{} of {size}", seen.1);
        let t = std::time::Instant::now();
        abort.store(true, Ordering::Relaxed);
        let (err, parsed) = worker.join().unwrap();
        let took = t.elapsed();
        assert_eq!(err.as_deref(), Some("aborted"));
        assert_eq!(parsed, 0);
        assert!(reading_files().iter().all(|r| r.0 != name));
        eprintln!(
            "large file: seen at {} of {size} bytes; abort took {took:?}",
            seen.1
        );
        let _ = fs::remove_dir_all(&root);
    }

    /// An index of schema 2 (no tool calls in it) is replaced by a new one.
    #[test]
    fn an_older_schema_is_rebuilt() {
        let root = fresh_root("schema");
        session_with_tools(&root, "s.jsonl");
        let path = root.join(INDEX_FILE);
        {
            let f = crate::safefs::create_exclusive(&path, 0o600).unwrap();
            drop(f);
            let c = Connection::open(&path).unwrap();
            c.execute_batch(&format!(
                "CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL,
                   mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, ino INTEGER NOT NULL,
                   indexed_to INTEGER NOT NULL, fp INTEGER, exact INTEGER NOT NULL,
                   session_id TEXT, cwd TEXT, leaf TEXT);
                 CREATE TABLE rows(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, entry_id TEXT, role TEXT NOT NULL,
                   tools TEXT NOT NULL, ts_ms INTEGER, off INTEGER NOT NULL, len INTEGER NOT NULL, active INTEGER NOT NULL);
                 CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, tokenize='ascii');
                 PRAGMA application_id = {APP_ID}; PRAGMA user_version = 2;"
            ))
            .unwrap();
        }
        let mut ix = Index::open(&root).unwrap();
        assert!(!ix.in_memory());
        let opts = Options {
            limit: 10,
            snippet_chars: 80,
            ..Options::default()
        };
        assert_eq!(
            found(&mut ix, "idSummaryTree", &opts),
            [("a1".into(), "toolCall".into())]
        );
        let ver: i32 = ix
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(ver, SCHEMA);
        let _ = fs::remove_dir_all(&root);
    }
}
