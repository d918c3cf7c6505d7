//! Session discovery: the per-file work behind `SessionManager.list` / `listAll` /
//! `findById` / `findMostRecentSession`, with the reference's exact rules.
//!
//! - [`read_header`]: `readSessionHeader` (bounded 1 MiB scan, first parsed entry).
//! - [`extract_file`]: `buildSessionInfo`'s per-line work, streamed with a bounded buffer
//!   (only the current line is held), producing a compact JSON record that the JS
//!   layer turns into a `SessionInfo` (raw JSON values are embedded verbatim, so
//!   `JSON.parse` on the JS side reproduces the reference's values exactly).
//! - [`index`]: an optional sidecar cache of those records per directory.
//! - [`resume`]: continuing a cached record over the lines appended since.

pub mod index;
pub mod listing;
pub mod resume;
pub mod text;

use crate::error::{FsError, fs_error};
use crate::json::scan::{self, Kind, Scanned};
use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Bytes of a session header scan (the reference's `MAX_SESSION_HEADER_SCAN_BYTES`; the
/// binding exports it to JS for `SessionHeaderScanLimitError`'s message).
pub const MAX_HEADER_SCAN_BYTES: usize = 1024 * 1024;

/// Outcome of [`read_header`].
#[derive(Debug, PartialEq, Eq)]
pub enum Header {
    /// The decoded text of the header line (`JSON.parse` it to get the header).
    Found(String),
    /// The first parsed entry is not a header, or there is none.
    None,
    /// No verdict within the scan limit (`SessionHeaderScanLimitError`).
    Limit,
}

/// JSON whitespace (what `JSON.parse` skips around a value).
fn json_trim(s: &str) -> &str {
    s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'))
}

/// `parseSessionEntryLine`: `None` when the line is blank, malformed, or a falsy value.
fn parse_entry(line: &str) -> Option<Scanned<'_>> {
    parse_entry_with(line, None)
}

/// [`parse_entry`], also recording the fields of the top-level `nested` object.
fn parse_entry_with<'a>(line: &'a str, nested: Option<&str>) -> Option<Scanned<'a>> {
    let s = scan::scan_with(line, nested)?;
    if s.kind != Kind::Object && !scan::is_truthy(json_trim(line)) {
        return None;
    }
    Some(s)
}

fn str_field_is(s: &Scanned<'_>, key: &str, want: &str) -> bool {
    raw_str_is(s.get(key), want)
}

/// `parseSessionHeaderCandidate`: `None` keep scanning, `Some(false)` not a header,
/// `Some(true)` header.
fn header_candidate(line: &str) -> Option<bool> {
    let s = parse_entry(line)?;
    let is_header = s.kind == Kind::Object
        && str_field_is(&s, "type", "session")
        && s.get("id").map(scan::kind_of) == Some(Kind::String);
    Some(is_header)
}

/// `readSessionHeader`: the bounded scan of the first line (the one home of this rule; the
/// JS layer only turns the outcome into a value or an error). An I/O error comes back as
/// Node's `fs` error for the call that failed in the reference (`openSync` with the path,
/// `readSync` without it), so the binding throws exactly what the reference throws.
pub fn read_header(path: &Path) -> Result<Header, FsError> {
    let read_error = |e: &io::Error| fs_error(e, "read", path).without_path();
    // Not a regular file (FIFO, device, socket): not a session. Never blocks, never reads
    // past the size at open.
    let mut f = match crate::safefs::open_regular(path, true) {
        Ok(o) => o.file.take(o.size),
        // A directory keeps the reference's EISDIR (from its read).
        Err(e) if crate::safefs::is_not_regular(&e) && path.is_dir() => {
            return Err(read_error(&io::Error::from(io::ErrorKind::IsADirectory)));
        }
        Err(e) if crate::safefs::is_not_regular(&e) => return Ok(Header::None),
        Err(e) => return Err(fs_error(&e, "open", path)),
    };
    // 4 KiB first, as the reference reads (a header is a few hundred bytes: a 64 KiB first
    // read copied 16 times what a lookup over thousands of files needs), then larger.
    let mut buf = vec![0u8; 4 * 1024];
    let mut line: Vec<u8> = Vec::new();
    let mut scanned = 0usize;
    while scanned < MAX_HEADER_SCAN_BYTES {
        if scanned > 0 && buf.len() < 64 * 1024 {
            buf.resize(64 * 1024, 0);
        }
        let want = buf.len().min(MAX_HEADER_SCAN_BYTES - scanned);
        let n = match f.read(&mut buf[..want]) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(&e)),
        };
        if n == 0 {
            return Ok(final_header(&line));
        }
        scanned += n;
        let mut chunk = &buf[..n];
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
            line.extend_from_slice(&chunk[..nl]);
            let text = String::from_utf8_lossy(&line);
            match header_candidate(&text) {
                Some(true) => return Ok(Header::Found(text.into_owned())),
                Some(false) => return Ok(Header::None),
                None => {}
            }
            line.clear();
            chunk = &chunk[nl + 1..];
        }
        line.extend_from_slice(chunk);
    }
    // Probe for EOF: a final line ending exactly at the limit is still judged.
    let mut probe = [0u8; 1];
    loop {
        match f.read(&mut probe) {
            Ok(0) => return Ok(final_header(&line)),
            Ok(_) => return Ok(Header::Limit),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(&e)),
        }
    }
}

/// Whether a header line ([`Header::Found`]) has the string id `id` (`header.id === id`).
pub fn header_has_id(line: &str, id: &str) -> bool {
    scan::scan(line).is_some_and(|s| raw_str_is(s.get("id"), id))
}

/// `findById`'s scan: the first of `paths` whose header ([`read_header`]; unreadable or
/// beyond the scan limit: none, as `readSessionHeaderForDiscovery`) has the id `id`, with
/// its header line. Headers are read on two threads in blocks, in order, stopping at the
/// first block that holds a match (files after it are not read, or not waited for).
pub fn find_header(paths: &[String], id: &str) -> Option<(usize, String)> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    const BLOCK: usize = 32;
    let best: Mutex<Option<(usize, String)>> = Mutex::new(None);
    let first = AtomicUsize::new(usize::MAX);
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let start = next.fetch_add(1, Ordering::Relaxed) * BLOCK;
            if start >= paths.len() || start > first.load(Ordering::Relaxed) {
                return;
            }
            for (k, p) in paths[start..(start + BLOCK).min(paths.len())]
                .iter()
                .enumerate()
            {
                let i = start + k;
                if i > first.load(Ordering::Relaxed) {
                    return;
                }
                if let Ok(Header::Found(line)) = read_header(Path::new(p))
                    && header_has_id(&line, id)
                {
                    first.fetch_min(i, Ordering::Relaxed);
                    if let Ok(mut b) = best.lock()
                        && b.as_ref().is_none_or(|(j, _)| i < *j)
                    {
                        *b = Some((i, line));
                    }
                    break;
                }
            }
        }
    };
    std::thread::scope(|s| {
        if paths.len() > BLOCK {
            s.spawn(work);
        }
        work();
    });
    best.into_inner().ok().flatten()
}

fn final_header(line: &[u8]) -> Header {
    let text = String::from_utf8_lossy(line);
    match header_candidate(&text) {
        Some(true) => Header::Found(text.into_owned()),
        _ => Header::None,
    }
}

/// Why a file yields no `SessionInfo` (the reference returns `null`).
#[derive(Debug)]
pub struct Invalid;

/// Per-file state of `buildSessionInfo`.
#[derive(Default)]
struct Builder {
    header: Option<HeaderRaw>,
    /// Raw JSON string literal of the latest `session_info` name (None: undefined).
    name: Option<String>,
    /// A `session_info` line was seen (its name, even a cleared one, is the latest).
    name_seen: bool,
    count: u64,
    /// Keep the texts themselves (`first`, `all`); otherwise only their lengths.
    keep_text: bool,
    /// JSON string body (escaped) of the first user text (with `keep_text`), unless it
    /// opens `all` (`first_prefix`).
    first: String,
    first_prefix: bool,
    /// JSON string body (escaped) of all texts joined by " " (with `keep_text`).
    all: String,
    any_text: bool,
    /// UTF-16 lengths of the first user text and of all texts joined.
    first_units: u64,
    all_units: u64,
    /// Max of 0 and all activity times resolved here.
    activity: f64,
    /// Raw `entry.timestamp` values whose `new Date(x).getTime()` is left to JS.
    deferred: Vec<String>,
}

#[derive(Default)]
struct HeaderRaw {
    id: Option<String>,
    cwd: Option<String>,
    parent: Option<String>,
    timestamp: Option<String>,
}

/// The `message` object's fields of a [`Scanned`] line, with the `get` of a scan.
struct Nested<'s, 'a>(&'s Scanned<'a>);

impl<'a> Nested<'_, 'a> {
    fn get(&self, key: &str) -> Option<&'a str> {
        self.0.get_nested(key)
    }
}

fn nested_str_is(m: &Nested<'_, '_>, key: &str, want: &str) -> bool {
    raw_str_is(m.get(key), want)
}

fn raw_str_is(raw: Option<&str>, want: &str) -> bool {
    match raw {
        Some(raw) if scan::kind_of(raw) == Kind::String => {
            if raw.contains('\\') {
                scan::decode_str(raw).as_deref() == Some(want)
            } else {
                raw.len() == want.len() + 2 && &raw[1..raw.len() - 1] == want
            }
        }
        _ => false,
    }
}

enum Step {
    Continue,
    /// First entry is not a header: the file is not a session.
    NotSession,
}

impl Builder {
    fn line(&mut self, line: &str) -> Result<Step, Invalid> {
        // One pass: top-level fields and the direct fields of `message`.
        let Some(s) = parse_entry_with(line, Some("message")) else {
            return Ok(Step::Continue);
        };
        let is_obj = s.kind == Kind::Object;
        if self.header.is_none() {
            if !is_obj || !str_field_is(&s, "type", "session") {
                return Ok(Step::NotSession);
            }
            let own = |k: &str| s.get(k).map(str::to_owned);
            self.header = Some(HeaderRaw {
                id: own("id"),
                cwd: own("cwd"),
                parent: own("parentSession"),
                timestamp: own("timestamp"),
            });
            return Ok(Step::Continue);
        }
        if !is_obj {
            return Ok(Step::Continue);
        }
        if str_field_is(&s, "type", "session_info") {
            self.name_seen = true;
            // `entry.name?.trim() || undefined`: the trim is done in JS on the raw literal.
            self.name = match s.get("name") {
                None => None,
                Some(raw) => match scan::kind_of(raw) {
                    Kind::Null => None,
                    Kind::String if raw.len() > 2 => Some(raw.to_owned()),
                    Kind::String => None,
                    _ => return Err(Invalid), // `.trim` is not a function
                },
            };
            return Ok(Step::Continue);
        }
        if !str_field_is(&s, "type", "message") {
            return Ok(Step::Continue);
        }
        self.count += 1;
        let message = s.get("message").ok_or(Invalid)?;
        match scan::kind_of(message) {
            Kind::Null => return Err(Invalid), // `message.role` of null
            // `s.nested` holds the fields of the last `message` key's object (last wins).
            Kind::Object => {}
            _ => return Ok(Step::Continue), // primitives and arrays have no `role`
        }
        let m = Nested(&s);
        let Some(role_raw) = m.get("role") else {
            return Ok(Step::Continue);
        };
        if scan::kind_of(role_raw) != Kind::String || m.get("content").is_none() {
            return Ok(Step::Continue);
        }
        let user = nested_str_is(&m, "role", "user");
        if !user && !nested_str_is(&m, "role", "assistant") {
            return Ok(Step::Continue);
        }
        // Activity time.
        match m.get("timestamp") {
            Some(raw) if scan::kind_of(raw) == Kind::Number => {
                let t = raw.parse::<f64>().map_err(|_| Invalid)?;
                if t > self.activity {
                    self.activity = t;
                }
            }
            _ => match s.get("timestamp") {
                None => {}
                Some(raw) => match text::iso_ms(raw) {
                    Some(t) => {
                        if t > self.activity {
                            self.activity = t;
                        }
                    }
                    None => {
                        if !self.deferred.iter().any(|d| d == raw) {
                            self.deferred.push(raw.to_owned());
                        }
                    }
                },
            },
        }
        // Text content: its escaped body when the texts are kept, else only its length
        // (no copy: a 300 MB message is not held twice).
        let content = m.get("content").ok_or(Invalid)?;
        let mut body = String::new();
        let mut units = 0u64;
        let mut text_part = |raw: &str, body: &mut String| -> Result<(), Invalid> {
            if self.keep_text {
                text::push_join_string(raw, body)
            } else if scan::kind_of(raw) == Kind::String {
                units += text::escaped_units(&raw[1..raw.len() - 1]);
                Ok(())
            } else {
                let mut tmp = String::new();
                text::push_join_string(raw, &mut tmp)?;
                units += text::escaped_units(&tmp);
                Ok(())
            }
        };
        match scan::kind_of(content) {
            Kind::String => text_part(content, &mut body)?,
            Kind::Array => {
                let mut n = 0usize;
                for block in text::array_elements(content) {
                    match scan::kind_of(block) {
                        Kind::Null => return Err(Invalid), // `null.type`
                        Kind::Object => {
                            // The line is validated: locate the block's keys without re-validating.
                            let b = text::Fields::of(block);
                            if !b.str_is("type", "text") {
                                continue;
                            }
                            if n > 0 {
                                text_part("\" \"", &mut body)?;
                            }
                            n += 1;
                            if let Some(t) = b.get("text") {
                                text_part(t, &mut body)?;
                            }
                        }
                        _ => {}
                    }
                }
            }
            _ => return Err(Invalid), // `.filter` is not a function
        }
        if self.keep_text {
            units = text::escaped_units(&body);
        }
        if units == 0 {
            return Ok(Step::Continue);
        }
        let is_first = user && self.first_units == 0;
        if is_first {
            self.first_units = units;
        }
        if self.keep_text {
            // The first user text opening the joined text (the usual case) is a prefix of
            // it, not a copy; texts move rather than copy (one message can be 300 MB).
            if is_first {
                if self.any_text {
                    self.first = body.clone();
                } else {
                    self.first_prefix = true;
                }
            }
            if self.any_text {
                self.all.push(' ');
                self.all.push_str(&body);
            } else {
                self.all = body;
            }
        }
        if self.any_text {
            self.all_units += 1;
        }
        self.all_units += units;
        self.any_text = true;
        Ok(Step::Continue)
    }

    fn finish(self) -> Option<Record> {
        let h = self.header?;
        let mut header = String::with_capacity(256);
        header.push('{');
        let mut sep = "";
        for (k, v) in [
            ("id", &h.id),
            ("cwd", &h.cwd),
            ("parentSession", &h.parent),
            ("timestamp", &h.timestamp),
        ] {
            if let Some(v) = v {
                header.push_str(sep);
                header.push('"');
                header.push_str(k);
                header.push_str("\":");
                header.push_str(v);
                sep = ",";
            }
        }
        header.push('}');
        let deferred =
            (!self.deferred.is_empty()).then(|| format!("[{}]", self.deferred.join(",")));
        let texts = self.keep_text.then(|| {
            let first = if self.first_prefix {
                First::Prefix(self.first_units)
            } else {
                First::Text(text::Text::decode(&self.first))
            };
            Texts {
                first,
                all: text::Text::decode_owned(self.all),
            }
        });
        Some(Record {
            header,
            name: self.name,
            count: self.count,
            activity: self.activity,
            deferred,
            first_units: self.first_units,
            all_units: self.all_units,
            texts,
        })
    }
}

/// `firstMessage` of a record: its own text or the first `n` UTF-16 units of `all`.
#[derive(Clone, Debug, PartialEq)]
pub enum First {
    Text(text::Text),
    Prefix(u64),
}

/// What `buildSessionInfo` derives from one session file. Raw JSON values (the header
/// object, the name literal, deferred timestamps) are `JSON.parse`d by the JS layer.
///
/// A listing keeps only the lengths of the two texts (`firstMessage`, `allMessagesText`):
/// the JS layer produces a text when the caller first reads it, from a pass over the file
/// that keeps it ([`extract_texts`]). So neither a listing nor the index holds a store's
/// texts (101 million characters for 10,000 sessions, and a 300 MB session of
/// one message wrote a 300 MB index).
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// JSON object text with the header's id / cwd / parentSession / timestamp.
    pub header: String,
    /// Raw JSON string literal of the latest `session_info` name.
    pub name: Option<String>,
    pub count: u64,
    /// Max of 0 and all activity times resolved here.
    pub activity: f64,
    /// JSON array of raw timestamps whose `new Date(x).getTime()` is left to JS.
    pub deferred: Option<String>,
    /// UTF-16 length of the first user text (0: none, `"(no messages)"`).
    pub first_units: u64,
    /// UTF-16 length of all texts joined by " " (`allMessagesText.length`).
    pub all_units: u64,
    /// The texts, when the pass kept them.
    pub texts: Option<Texts>,
}

/// `firstMessage` (before `|| "(no messages)"`) and `allMessagesText`, decoded here
/// (exact UTF-16, lone surrogates included).
#[derive(Clone, Debug, PartialEq)]
pub struct Texts {
    pub first: First,
    pub all: text::Text,
}

/// Lines of a reader split like `readline` with `crlfDelay: Infinity` (`\r\n`, `\n`, `\r`);
/// empty pieces are harmless (blank lines are skipped). Holds at most one line.
// The initializer below is `const` already: clippy 1.97 still reports
// `missing_const_for_thread_local` for it on targets whose `thread_local!` expands to the OS-key
// form (x86_64-pc-windows-gnu under `npm run test:cross`), a false positive.
#[allow(clippy::missing_const_for_thread_local)]
fn for_each_line<R: Read>(
    r: R,
    f: impl FnMut(&[u8]) -> Result<bool, Invalid>,
    abort: &dyn Fn() -> bool,
) -> Result<(), Invalid> {
    thread_local! {
        // One read buffer per worker thread, reused across its files: a fresh 256 KiB
        // allocation per file is a fresh mmap whose 64 pages all fault on the first read
        // (~2 µs each here), more than scanning a small session costs.
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with(|cell| match cell.try_borrow_mut() {
        Ok(mut buf) => {
            if buf.len() != READ_BUF {
                *buf = vec![0u8; READ_BUF];
            }
            lines_with(r, &mut buf, f, abort)
        }
        Err(_) => lines_with(r, &mut vec![0u8; READ_BUF], f, abort),
    })
}

const READ_BUF: usize = 256 * 1024;

fn lines_with<R: Read>(
    mut r: R,
    buf: &mut [u8],
    mut f: impl FnMut(&[u8]) -> Result<bool, Invalid>,
    abort: &dyn Fn() -> bool,
) -> Result<(), Invalid> {
    let mut line: Vec<u8> = Vec::new();
    loop {
        if abort() {
            return Err(Invalid);
        }
        let n = match r.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(Invalid),
        };
        let mut chunk = &buf[..n];
        while let Some(p) = memchr::memchr2(b'\n', b'\r', chunk) {
            let keep_going = if line.is_empty() {
                f(&chunk[..p])?
            } else {
                line.extend_from_slice(&chunk[..p]);
                let r = f(&line)?;
                line.clear();
                if line.capacity() > 4 * 1024 * 1024 {
                    line = Vec::new();
                }
                r
            };
            if !keep_going {
                return Ok(());
            }
            chunk = &chunk[p + 1..];
        }
        line.extend_from_slice(chunk);
    }
    if !line.is_empty() {
        f(&line)?;
    }
    Ok(())
}

/// `buildSessionInfo`'s file pass over an open file: `Ok(None)` for "not a session", `Err`
/// for an error (also `null` in the reference), `Ok(Some(record))` otherwise. At most
/// `limit` bytes are read when given (the size a cache entry will be stamped with, so that
/// the record describes exactly those bytes).
pub fn extract_file(
    file: File,
    limit: Option<u64>,
    abort: &dyn Fn() -> bool,
) -> Result<Option<Record>, Invalid> {
    extract_limited(file, limit, false, abort)
}

/// [`extract_file`], also keeping the texts (`Record::texts`).
pub fn extract_texts(
    file: File,
    limit: Option<u64>,
    abort: &dyn Fn() -> bool,
) -> Result<Option<Record>, Invalid> {
    extract_limited(file, limit, true, abort)
}

fn extract_limited(
    mut file: File,
    limit: Option<u64>,
    keep_text: bool,
    abort: &dyn Fn() -> bool,
) -> Result<Option<Record>, Invalid> {
    // From the start (a fingerprint's positioned reads on Unix leave the cursor alone;
    // Windows' `seek_read` does not).
    io::Seek::rewind(&mut file).map_err(|_| Invalid)?;
    match limit {
        Some(n) => extract_with(file.take(n), keep_text, abort),
        None => extract_with(file, keep_text, abort),
    }
}

/// [`extract_file`] on any reader.
#[cfg(test)]
pub fn extract_from<R: Read>(r: R, abort: &dyn Fn() -> bool) -> Result<Option<Record>, Invalid> {
    extract_with(r, false, abort)
}

/// [`extract_texts`] on any reader.
#[cfg(test)]
pub fn extract_texts_from<R: Read>(
    r: R,
    abort: &dyn Fn() -> bool,
) -> Result<Option<Record>, Invalid> {
    extract_with(r, true, abort)
}

fn extract_with<R: Read>(
    r: R,
    keep_text: bool,
    abort: &dyn Fn() -> bool,
) -> Result<Option<Record>, Invalid> {
    let mut b = Builder {
        keep_text,
        ..Builder::default()
    };
    let mut not_session = false;
    for_each_line(
        r,
        |bytes| {
            let text = match std::str::from_utf8(bytes) {
                Ok(t) => std::borrow::Cow::Borrowed(t),
                Err(_) => String::from_utf8_lossy(bytes),
            };
            match b.line(&text)? {
                Step::Continue => Ok(true),
                Step::NotSession => {
                    not_session = true;
                    Ok(false)
                }
            }
        },
        abort,
    )?;
    if not_session {
        return Ok(None);
    }
    Ok(b.finish())
}

/// What a listing saw of a file, so that a text read later is the listed one: the file's
/// stamp and the fingerprint of its bytes ([`resume::fingerprint`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Listed {
    pub stamp: index::Stamp,
    pub fp: Option<u64>,
}

impl Listed {
    /// `size:mtime_ns:ctime_ns:ino:fp` (fp empty when there is none).
    pub fn key(&self) -> String {
        let s = &self.stamp;
        let fp = self.fp.map(|f| f.to_string()).unwrap_or_default();
        format!("{}:{}:{}:{}:{fp}", s.size, s.mtime_ns, s.ctime_ns, s.ino)
    }

    pub fn parse(key: &str) -> Option<Listed> {
        let mut it = key.split(':');
        let stamp = index::Stamp {
            size: it.next()?.parse().ok()?,
            mtime_ns: it.next()?.parse().ok()?,
            ctime_ns: it.next()?.parse().ok()?,
            ino: it.next()?.parse().ok()?,
        };
        let fp = match it.next()? {
            "" => None,
            f => Some(f.parse().ok()?),
        };
        it.next().is_none().then_some(Listed { stamp, fp })
    }
}

/// The texts of the session at `path` as a listing that saw `listed` found them: the same
/// bytes are read again (the first `size` bytes of a file that has only grown since, its
/// prefix unchanged: pi appends to the session it works in). A file rewritten or replaced
/// since gives the texts it holds now; `None` when it is gone, unreadable, or no longer a
/// session (the caller shows no text then).
pub fn texts_as_listed(path: &Path, listed: Option<&Listed>) -> Option<Texts> {
    let o = crate::safefs::open_regular(path, true).ok()?;
    let now = index::Stamp::of(&o.meta);
    let limit = match listed {
        Some(l) if now == l.stamp => l.stamp.size,
        Some(l)
            if l.fp.is_some()
                && now.ino == l.stamp.ino
                && now.size > l.stamp.size
                && resume::fingerprint(&o.file, l.stamp.size) == l.fp =>
        {
            l.stamp.size
        }
        _ => o.size,
    };
    extract_texts(o.file, Some(limit), &|| false)
        .ok()
        .flatten()
        .and_then(|r| r.texts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ex(s: &str) -> Option<Record> {
        extract_texts_from(s.as_bytes(), &|| false).ok().flatten()
    }

    #[test]
    fn basic_record() {
        let r = ex(concat!(
            "{\"type\":\"session\",\"id\":\"a\",\"timestamp\":\"2024-01-01T00:00:00.000Z\",\"cwd\":\"/x\"}\r\n",
            "{\"type\":\"message\",\"timestamp\":\"2024-01-02T00:00:00.000Z\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"hi\"},{\"type\":\"text\",\"text\":2}]}}\n",
            "{\"type\":\"session_info\",\"name\":\" n \"}",
        ))
        .expect("record");
        let t = r.texts.as_ref().expect("texts");
        assert_eq!(t.first, First::Prefix(4), "{r:?}");
        assert_eq!(t.all, text::Text::Utf8("hi 2".into()), "{r:?}");
        assert_eq!((r.first_units, r.all_units), (4, 4), "{r:?}");
        assert_eq!(r.name.as_deref(), Some("\" n \""), "{r:?}");
        assert_eq!(r.activity, 1_704_153_600_000.0, "{r:?}");
    }

    #[test]
    fn invalid_shapes() {
        let h = "{\"type\":\"session\",\"id\":\"a\"}\n";
        assert!(ex(&format!("{h}{{\"type\":\"message\"}}")).is_none());
        assert!(
            ex(&format!(
                "{h}{{\"type\":\"message\",\"message\":{{\"role\":\"user\",\"content\":1}}}}"
            ))
            .is_none()
        );
        assert!(ex(&format!("{h}{{\"type\":\"session_info\",\"name\":1}}")).is_none());
        assert!(ex("{\"type\":\"x\"}\n").is_none());
        assert!(ex("").is_none());
        assert!(ex(&format!("null\n0\n{h}")).is_some());
    }

    #[test]
    fn texts_as_listed_reads_the_listed_bytes() {
        use std::io::Write;
        let dir = std::env::temp_dir().join(format!("pi-disc-texts-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("s.jsonl");
        let h = "{\"type\":\"session\",\"id\":\"a\",\"timestamp\":\"2024-01-01T00:00:00.000Z\"}\n";
        let m = |role: &str, t: &str| {
            format!(
                "{{\"type\":\"message\",\"message\":{{\"role\":\"{role}\",\"content\":\"{t}\"}}}}\n"
            )
        };
        std::fs::write(
            &p,
            format!("{h}{}{}", m("assistant", "a1"), m("user", "u1")),
        )
        .expect("write");
        let listed = |p: &Path| {
            let o = crate::safefs::open_regular(p, true).expect("open");
            let stamp = index::Stamp::of(&o.meta);
            Listed {
                stamp,
                fp: resume::fingerprint(&o.file, stamp.size),
            }
        };
        let all = |t: Option<Texts>| t.map(|t| t.all);
        let l = listed(&p);
        assert_eq!(Listed::parse(&l.key()), Some(l));
        assert_eq!(Listed::parse("1:2:3"), None);
        let want = Some(text::Text::Utf8("a1 u1".into()));
        assert_eq!(all(texts_as_listed(&p, Some(&l))), want);
        // Appended since: the listed bytes, not the new line.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .and_then(|mut f| f.write_all(m("user", "later").as_bytes()))
            .expect("append");
        assert_eq!(all(texts_as_listed(&p, Some(&l))), want);
        let t = texts_as_listed(&p, Some(&l)).expect("texts");
        assert_eq!(t.first, First::Text(text::Text::Utf8("u1".into())));
        // Rewritten with another beginning: what the file holds now.
        std::fs::write(&p, format!("{h}{}{}", m("user", "b1"), m("user", "b2"))).expect("write");
        assert_eq!(
            all(texts_as_listed(&p, Some(&l))),
            Some(text::Text::Utf8("b1 b2".into()))
        );
        // Gone, or no longer a session: no texts.
        std::fs::write(&p, "{\"type\":\"x\"}\n").expect("write");
        assert_eq!(texts_as_listed(&p, Some(&l)), None);
        let _ = std::fs::remove_file(&p);
        assert_eq!(texts_as_listed(&p, Some(&l)), None);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn header_scan() {
        let dir = std::env::temp_dir().join(format!("pi-disc-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let p = dir.join("h.jsonl");
        let _ = std::fs::write(&p, "\n{bad\n{\"type\":\"session\",\"id\":\"x\"}\n");
        assert!(matches!(read_header(&p), Ok(Header::Found(_))));
        let _ = std::fs::write(&p, format!("{}\n", "x".repeat(MAX_HEADER_SCAN_BYTES)));
        assert!(matches!(read_header(&p), Ok(Header::Limit)));
        // Errors are Node's: a failed open names the path, a directory fails the read without it.
        let missing = dir.join("missing.jsonl");
        let e = read_header(&missing).expect_err("ENOENT");
        let os = e.os.expect("os fields");
        assert_eq!((e.code.as_str(), os.syscall.as_str()), ("ENOENT", "open"));
        assert_eq!(os.path.as_deref(), Some(missing.to_string_lossy().as_ref()));
        #[cfg(unix)]
        {
            let e = read_header(&dir).expect_err("EISDIR");
            assert_eq!(e.message, "EISDIR: illegal operation on a directory, read");
            assert_eq!(e.os.and_then(|o| o.path), None);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod perf {
    /// `PI_DISC_PERF=<file> cargo test --release --lib discovery::perf -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn perf_extract() {
        let Some(p) = std::env::var_os("PI_DISC_PERF") else {
            return;
        };
        let p = std::path::PathBuf::from(p);
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let data = std::fs::read(&p).unwrap_or_default();
            let read = t.elapsed();
            let t = std::time::Instant::now();
            let n = memchr::memchr_iter(b'\n', &data).count();
            let nl = t.elapsed();
            let t = std::time::Instant::now();
            let r = std::fs::File::open(&p)
                .map_err(|_| super::Invalid)
                .and_then(|f| super::extract_file(f, None, &|| false));
            let ex = t.elapsed();
            let len = r.ok().flatten().map(|s| s.all_units).unwrap_or(0);
            eprintln!(
                "{} MB read {:?} newlines({n}) {:?} extract {:?} record {len}",
                data.len() >> 20,
                read,
                nl,
                ex
            );
        }
    }
}
