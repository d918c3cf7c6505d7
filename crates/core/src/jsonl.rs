//! Tolerant JSONL reading, exactly like the reference's `loadEntriesFromFile`:
//! bytes decoded as UTF-8 the way Node's `StringDecoder` does (invalid sequences become
//! U+FFFD, maximal-subpart rule, which `String::from_utf8_lossy` implements too), lines split
//! on `\n`, blank and malformed lines skipped, a trailing `\r` is JSON whitespace.

use crate::entry::{Entry, ShellArena};
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// What a file read produced.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    /// The file did not end with `\n` (the reference then appends one).
    pub unterminated: bool,
    /// (device, inode) and length of the file read, from the descriptor it was read through
    /// (`load_file` only): what the first append compares the path with.
    pub file: Option<((u64, u64), u64)>,
}

// Invalid-UTF-8 handling relies on `\n` (ASCII) never being part of a replaced sequence.

/// Parse a whole buffer of JSONL bytes.
///
/// The buffer is decoded once (a valid UTF-8 file is adopted without a copy; otherwise it is
/// decoded lossily as a whole, which equals decoding line by line because `\n` always ends an
/// invalid sequence), then lines are scanned in parallel chunks split at newlines. Entries
/// share the decoded buffer.
pub fn parse_bytes(bytes: &[u8]) -> Loaded {
    parse_owned(bytes.to_vec())
}

/// [`parse_bytes`] taking ownership of the buffer (no copy for valid UTF-8).
pub fn parse_owned(bytes: Vec<u8>) -> Loaded {
    let unterminated = bytes.last().is_some_and(|&b| b != b'\n');
    let text = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    let base = Arc::new(text);
    let chunks = split_at_newlines(base.as_bytes(), scan_threads(), 4 << 20);
    let entries = if chunks.len() <= 1 {
        scan_range(&base, 0, base.len())
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = chunks
                .iter()
                .map(|&(a, b)| {
                    let base = &base;
                    scope.spawn(move || scan_range(base, a, b))
                })
                .collect();
            let mut all = Vec::new();
            for h in handles {
                // A panicking scan thread yields no entries rather than aborting the load.
                all.extend(h.join().unwrap_or_default());
            }
            all
        })
    };
    Loaded {
        entries,
        unterminated,
        file: None,
    }
}

/// Parallelism for scanning: the machine's cores, capped (scanning is memory-bound).
fn scan_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(4)
}

/// Split `[0, len)` into up to `n` ranges that end just after a newline (one range when the
/// text is shorter than `2 * min_chunk`).
fn split_at_newlines(bytes: &[u8], n: usize, min_chunk: usize) -> Vec<(usize, usize)> {
    let len = bytes.len();
    if n <= 1 || len < 2 * min_chunk {
        return vec![(0, len)];
    }
    let mut out = Vec::new();
    let mut start = 0;
    for k in 1..n {
        let target = (len * k / n).max(start);
        let cut = match memchr::memchr(b'\n', &bytes[target..]) {
            Some(p) => target + p + 1,
            None => len,
        };
        if cut > start {
            out.push((start, cut));
            start = cut;
        }
    }
    if start < len {
        out.push((start, len));
    }
    out
}

/// Call `f(start, end)` for each non-blank line of `bytes[from..to]` (`from` is a line start;
/// the last line may lack its newline). Blank lines are skipped, as by the reference.
fn for_each_line(bytes: &[u8], from: usize, to: usize, mut f: impl FnMut(usize, usize)) {
    let mut call = |a: usize, b: usize| {
        if !bytes[a..b]
            .iter()
            .all(|c| matches!(c, b' ' | b'\t' | b'\r' | b'\n'))
        {
            f(a, b);
        }
    };
    let mut start = from;
    for nl in memchr::memchr_iter(b'\n', &bytes[from..to]) {
        call(start, from + nl);
        start = from + nl + 1;
    }
    if start < to {
        call(start, to);
    }
}

/// Scan the lines of `base[from..to]` (`from` is a line start).
fn scan_range(base: &Arc<String>, from: usize, to: usize) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut arena = ShellArena::default();
    for_each_line(base.as_bytes(), from, to, |a, b| {
        arena.slot = entries.len();
        // The line's offset is unique: it keys object-valued ids apart.
        if let Some(e) = Entry::parse_shared(base, a, b, a + 1, Some(&mut arena)) {
            entries.push(e);
        }
    });
    arena.assign(&mut entries);
    entries
}

/// `loadEntriesFromFile` semantics, minus the repair write (the store decides that):
/// missing file -> empty; a first entry that is not a valid header -> empty. Files at least
/// `backed_min` bytes large keep entry text in the file, not in memory
/// (`PI_SESSION_NATIVE_BACKED_MIN`, [`crate::config::Settings::backed_min`]).
pub fn load_file(path: &Path, backed_min: u64) -> Result<Loaded, LoadError> {
    match open_load(path, backed_min)? {
        Pending::Done(loaded) => Ok(loaded),
        Pending::Backed { job, file } => {
            let mut loaded = job.run(scan_threads())?;
            if !loaded.entries.is_empty() {
                loaded.file = file;
            }
            Ok(loaded)
        }
    }
}

/// A load opened by [`open_load`]: done (a missing, small or empty file), or a large file's
/// ranges for threads to load ([`BackedLoad::work`], then [`BackedLoad::finish`] and `file`).
pub(crate) enum Pending {
    Done(Loaded),
    Backed {
        job: BackedLoad,
        file: Option<((u64, u64), u64)>,
    },
}

/// Open `path` for [`load_file`]: a file under `backed_min` bytes is read and parsed here; a
/// larger one is left as ranges to load.
pub(crate) fn open_load(path: &Path, backed_min: u64) -> Result<Pending, LoadError> {
    // Opened without blocking (a FIFO) and refused unless a regular file (a device such as
    // `/dev/zero` would never end). A directory keeps the reference's `EISDIR` from its read:
    // Node opens a directory on every platform (on Windows too) and fails on the read.
    let f = match crate::safefs::open_regular(path, true) {
        Ok(o) => o.file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Pending::Done(Loaded::default()));
        }
        Err(e) if crate::safefs::is_not_regular(&e) && path.is_dir() => {
            return Err(LoadError::Read(std::io::ErrorKind::IsADirectory.into()));
        }
        Err(e) => return Err(LoadError::Open(e)),
    };
    let meta = f.metadata().ok();
    let file = meta
        .as_ref()
        .map(|m| (crate::durability::file_id(m), m.len()));
    let size = meta.as_ref().map_or(0, |m| m.len());
    if size >= backed_min {
        let job = BackedLoad::new(f, 4 << 20, scan_threads())?;
        return Ok(Pending::Backed { job, file });
    }
    // Size the buffer from the file's length: no regrowth copies for large sessions.
    // Never past the size it had when opened.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0).saturating_add(1));
    let limit = if meta.as_ref().is_some_and(|m| m.is_file()) {
        size
    } else {
        u64::MAX
    };
    f.take(limit)
        .read_to_end(&mut bytes)
        .map_err(LoadError::Read)?;
    let mut loaded = parse_owned(bytes);
    if let Some(first) = loaded.entries.first()
        && !first.is_valid_header()
    {
        return Ok(Pending::Done(Loaded::default()));
    }
    loaded.file = file;
    Ok(Pending::Done(loaded))
}

/// A large file's load as [`load_file`] makes it (tests): entries keep only their byte range,
/// memory stays bounded by the index plus one chunk per thread, the handle stays open for
/// reading entries back. The file is cut at newlines into ranges ([`BackedLoad`]), and each
/// thread reads (positioned reads on a shared handle) and scans the ranges it takes: reading
/// from the page cache costs about as much as scanning, so both halves of the work run on
/// every core. (Reading on one thread and scanning each chunk on all of them left the other
/// core idle during every read.)
#[cfg(test)]
pub(crate) fn load_backed(file: std::fs::File) -> Result<Loaded, LoadError> {
    load_backed_in(file, 4 << 20, scan_threads())
}

/// [`load_backed`] with reads of `chunk` bytes (tests use tiny ones to cut every line) on
/// `threads` threads.
#[cfg(test)]
fn load_backed_in(file: std::fs::File, chunk: usize, threads: usize) -> Result<Loaded, LoadError> {
    BackedLoad::new(file, chunk, threads)?.run(threads)
}

/// A large file's load cut into ranges (several per thread, at line starts) that threads take
/// in turn: the threads that load it may join at different times. An open loads with every
/// scan thread from the start; a preload (crates/core/src/preload.rs) starts on one thread
/// while pi starts, and the open joins it with its own thread for the ranges left.
pub(crate) struct BackedLoad {
    src: Arc<crate::entry::FileSource>,
    ranges: Vec<(u64, Option<u64>)>,
    chunk: usize,
    next: std::sync::atomic::AtomicUsize,
    done: Vec<std::sync::OnceLock<Result<Range, LoadError>>>,
    /// Set when the first entry is not a header: the load is empty, the others stop early.
    not_session: std::sync::atomic::AtomicBool,
}

impl BackedLoad {
    /// Ranges for `threads` threads to share: ~8 a thread (each at least two chunks), so a
    /// thread that joins late still finds work.
    pub(crate) fn new(
        file: std::fs::File,
        chunk: usize,
        threads: usize,
    ) -> Result<BackedLoad, LoadError> {
        use crate::entry::FileSource;
        let chunk = chunk.max(1);
        let size = file.metadata().map(|m| m.len()).unwrap_or(0);
        let src = Arc::new(FileSource::new(file));
        let pieces = threads.max(1) * 8;
        let cuts = range_cuts(&src, size, pieces, 2 * chunk as u64).map_err(LoadError::Read)?;
        let ranges: Vec<(u64, Option<u64>)> = (0..cuts.len())
            .map(|k| (cuts[k], cuts.get(k + 1).copied()))
            .collect();
        let done = ranges.iter().map(|_| std::sync::OnceLock::new()).collect();
        Ok(BackedLoad {
            src,
            ranges,
            chunk,
            next: std::sync::atomic::AtomicUsize::new(0),
            done,
            not_session: std::sync::atomic::AtomicBool::new(false),
        })
    }

    /// Load every range on this thread and `threads - 1` more, then [`BackedLoad::finish`].
    fn run(self, threads: usize) -> Result<Loaded, LoadError> {
        let helpers = threads
            .saturating_sub(1)
            .min(self.ranges.len().saturating_sub(1));
        std::thread::scope(|scope| {
            for _ in 0..helpers {
                // A helper that cannot start leaves its share to the others.
                let _ = std::thread::Builder::new().spawn_scoped(scope, || self.work());
            }
            self.work();
        });
        self.finish()
    }

    /// Load ranges until none is left to take.
    pub(crate) fn work(&self) {
        use std::sync::atomic::Ordering;
        let mut buf = Vec::new();
        loop {
            let k = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(&(from, to)) = self.ranges.get(k) else {
                return;
            };
            let r = load_range(&self.src, from, to, self.chunk, &self.not_session, &mut buf);
            let _ = self.done[k].set(r);
        }
    }

    /// The entries, once every thread that worked on it has stopped.
    pub(crate) fn finish(self) -> Result<Loaded, LoadError> {
        let mut ranges = Vec::with_capacity(self.done.len());
        for slot in self.done {
            // A range no thread loaded (one panicked): the load fails, as a read would.
            ranges.push(slot.into_inner().unwrap_or_else(|| {
                Err(LoadError::Read(std::io::Error::other(
                    "scan thread stopped",
                )))
            })?);
        }
        // One allocation for all (growing by each range's entries copied them again and again).
        let total = ranges.iter().map(|r| r.entries.len()).sum();
        let mut entries: Vec<Entry> = Vec::with_capacity(total);
        let mut last_byte = None;
        for r in ranges {
            entries.extend(r.entries);
            last_byte = r.last_byte.or(last_byte);
        }
        if self.not_session.load(std::sync::atomic::Ordering::Relaxed)
            || entries.first().is_some_and(|e| !e.is_valid_header())
        {
            return Ok(Loaded::default());
        }
        Ok(Loaded {
            entries,
            unterminated: last_byte.is_some_and(|b| b != b'\n'),
            file: None,
        })
    }
}

/// Range starts: 0, then for each further thread the first line start at or after an equal
/// share of `size` (fewer ranges for a file under `threads * min_range` bytes).
fn range_cuts(
    src: &crate::entry::FileSource,
    size: u64,
    threads: usize,
    min_range: u64,
) -> std::io::Result<Vec<u64>> {
    let n = (threads as u64).min(size / min_range.max(1)).max(1);
    let mut cuts = vec![0u64];
    let mut window = vec![0u8; 64 << 10];
    for k in 1..n {
        let mut at = (size * k / n).max(*cuts.last().unwrap_or(&0));
        // The next newline after the share point ends the previous range.
        let cut = loop {
            let got = src.read_up_to(&mut window, at)?;
            if got == 0 {
                break None;
            }
            if let Some(p) = memchr::memchr(b'\n', &window[..got]) {
                break Some(at + p as u64 + 1);
            }
            at += got as u64;
        };
        match cut {
            Some(c) if c < size && c > *cuts.last().unwrap_or(&0) => cuts.push(c),
            _ => break,
        }
    }
    Ok(cuts)
}

/// One range's entries and the last byte it read.
pub(crate) struct Range {
    entries: Vec<Entry>,
    last_byte: Option<u8>,
}

/// Read and scan `[from, to)` of the file (to the end of file when `to` is `None`) in chunks.
fn load_range(
    src: &Arc<crate::entry::FileSource>,
    from: u64,
    to: Option<u64>,
    chunk: usize,
    not_session: &std::sync::atomic::AtomicBool,
    buf: &mut Vec<u8>,
) -> Result<Range, LoadError> {
    use std::sync::atomic::Ordering;
    let mut entries: Vec<Entry> = Vec::new();
    let mut arena = ShellArena::default();
    // `buf[..filled]` holds unscanned bytes; the buffer (the thread's, for all the ranges it
    // loads) is zeroed once, not per chunk, and grows only for a line longer than it.
    if buf.len() < chunk {
        buf.resize(chunk, 0);
    }
    let mut filled = 0;
    // File offset of buf[0]; the next read is at `base + filled`.
    let mut base: u64 = from;
    let mut last_byte: Option<u8> = None;
    let mut first_checked = from != 0;
    loop {
        if not_session.load(Ordering::Relaxed) {
            return Ok(Range {
                entries: Vec::new(),
                last_byte,
            });
        }
        if buf.len() - filled < chunk {
            buf.resize(filled + chunk, 0);
        }
        let at = base + filled as u64;
        let want = match to {
            Some(end) => (end.saturating_sub(at)).min(chunk as u64) as usize,
            None => chunk,
        };
        // At most one chunk per read: the buffer's pages are touched only as far as needed
        // (peak RSS of a large open is the index plus about one chunk per thread).
        let n = if want == 0 {
            0
        } else {
            src.read_up_to(&mut buf[filled..filled + want], at)
                .map_err(LoadError::Read)?
        };
        filled += n;
        let eof = n == 0;
        if n > 0 {
            last_byte = Some(buf[filled - 1]);
        }
        // Complete lines only, unless at the end.
        // (Only the bytes just read can hold it: the carried prefix has no newline, so a
        // line spanning many reads is not searched again and again.)
        let upto = if eof {
            filled
        } else {
            match memchr::memrchr(b'\n', &buf[filled - n..filled]) {
                Some(p) => filled - n + p + 1,
                None => continue,
            }
        };
        scan_lines(&buf[..upto], base, src, &mut entries, &mut arena);
        if !first_checked && !entries.is_empty() {
            first_checked = true;
            if !entries[0].is_valid_header() {
                not_session.store(true, Ordering::Relaxed);
                return Ok(Range {
                    entries: Vec::new(),
                    last_byte,
                });
            }
        }
        buf.copy_within(upto..filled, 0);
        filled -= upto;
        base += upto as u64;
        if eof {
            break;
        }
    }
    arena.assign(&mut entries);
    Ok(Range { entries, last_byte })
}

/// Scan the complete lines of `bytes` (starting at file offset `base`) on this thread.
fn scan_lines(
    bytes: &[u8],
    base: u64,
    src: &Arc<crate::entry::FileSource>,
    out: &mut Vec<Entry>,
    arena: &mut ShellArena,
) {
    for_each_line(bytes, 0, bytes.len(), |a, b| {
        arena.slot = out.len();
        let line = &bytes[a..b];
        // Valid UTF-8 (the usual case) is checked by the fast validator, without the
        // lossy decoder's chunk iteration.
        let text = match std::str::from_utf8(line) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(line),
        };
        let off = base + a as u64;
        let (len, unique) = ((b - a) as u32, off as usize + 1);
        if let Some(e) = Entry::parse_backed(&text, src, off, len, unique, Some(arena)) {
            out.push(e);
        }
    });
}

/// Which step of a load failed (Node reports `open '<path>'` or a bare `read`).
#[derive(Debug)]
pub enum LoadError {
    Open(std::io::Error),
    Read(std::io::Error),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_blank_and_malformed_lines_and_tolerates_crlf() {
        let l = parse_bytes(
            b"{\"type\":\"session\",\"id\":\"s\"}\r\n\n  \n{bad\n{\"type\":\"x\",\"id\":\"a\"}",
        );
        assert_eq!(l.entries.len(), 2);
        assert!(l.unterminated);
        assert!(l.entries[0].is_valid_header());
    }

    /// A directory fails on the read, as Node's `readSync` on the descriptor `openSync` gave
    /// (on Windows too, where Node's open of a directory succeeds): `EISDIR`, no path.
    #[test]
    fn a_directory_fails_on_the_read_without_a_path() {
        use crate::error::{Code, errno_of, fs_error};
        let dir = std::env::temp_dir().join(format!("psn-dir-{}.jsonl", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let e = match load_file(&dir, u64::MAX) {
            Err(LoadError::Read(e)) => fs_error(&e, "read", &dir).without_path(),
            other => panic!("expected a read error, got {other:?}"),
        };
        assert_eq!(e.code, "EISDIR");
        assert_eq!(e.message, "EISDIR: illegal operation on a directory, read");
        let os = e.os.expect("os fields");
        assert_eq!(
            (os.errno, os.syscall.as_str(), os.path),
            (errno_of(Code::Eisdir), "read", None)
        );
        let h = crate::discovery::read_header(&dir).expect_err("a directory");
        assert_eq!(h.message, "EISDIR: illegal operation on a directory, read");
        let _ = std::fs::remove_dir(&dir);
    }

    /// Reads cut at every size from 1 byte up give the entries of a whole-buffer parse.
    #[test]
    fn backed_load_is_independent_of_chunk_boundaries() {
        let dir = std::env::temp_dir().join(format!("psn-chunks-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let long = "y".repeat(300);
        let cases: Vec<Vec<u8>> = vec![
            format!("{{\"type\":\"session\",\"id\":\"s\"}}\n{{\"id\":\"a\",\"t\":\"é\"}}\r\n\n{{bad\n{{\"id\":\"b\",\"l\":\"{long}\"}}\n{{\"id\":\"c\"}}").into_bytes(),
            b"{\"type\":\"session\",\"id\":\"s\"}\n{\"id\":\"x\xff\"}\n".to_vec(),
            b"{\"type\":\"x\"}\n{\"type\":\"session\",\"id\":\"s\"}\n".to_vec(),
            b"\n\n".to_vec(),
            Vec::new(),
        ];
        for (n, bytes) in cases.iter().enumerate() {
            let p = dir.join(format!("c{n}.jsonl"));
            std::fs::write(&p, bytes).expect("write");
            let want = load_file(&p, u64::MAX).expect("load");
            let texts = |l: &Loaded| -> Vec<String> {
                l.entries
                    .iter()
                    .map(|e| e.text.read().expect("text").into_owned())
                    .collect()
            };
            for chunk in [1, 2, 3, 7, 16, 64, 1 << 20] {
                for threads in [1, 2, 3, 4] {
                    let f = std::fs::File::open(&p).expect("open");
                    let got = load_backed_in(f, chunk, threads).expect("backed");
                    assert_eq!(
                        texts(&got),
                        texts(&want),
                        "case {n}, chunk {chunk}, threads {threads}"
                    );
                    assert_eq!(
                        got.unterminated, want.unterminated,
                        "case {n}, chunk {chunk}, threads {threads}"
                    );
                }
            }
        }
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn invalid_utf8_becomes_replacement_char() {
        let l = parse_bytes(b"{\"type\":\"session\",\"id\":\"s\xff\xfe\"}\n");
        assert_eq!(l.entries.len(), 1);
        assert!(l.entries[0].text.read().expect("text").contains('\u{FFFD}'));
        assert!(!l.unterminated);
    }
}

#[cfg(test)]
mod perf {
    /// The core benchmark: raw read vs load (read + decode + scan + index fields) vs scan only.
    /// `SCAN_FILE=<path> cargo test --release -p pi-session-core --lib scan_throughput -- --ignored --nocapture`
    /// (`npm run bench:core` runs it on the generated 100 MB session).
    #[test]
    #[ignore]
    fn scan_throughput() {
        let Ok(path) = std::env::var("SCAN_FILE") else {
            return;
        };
        let p = std::path::Path::new(&path);
        // Best of 5 for each figure (the machine is shared; the minimum is the stable one).
        let (mut read, mut load, mut scan) = (f64::MAX, f64::MAX, f64::MAX);
        let mut trusted = f64::MAX;
        let (mut mb, mut n, mut ok) = (0.0, 0, 0);
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let bytes = std::fs::read(p).unwrap_or_default();
            read = read.min(t.elapsed().as_secs_f64());
            mb = bytes.len() as f64 / 1e6;
            let t = std::time::Instant::now();
            n = super::load_file(p, crate::config::Settings::default().backed_min)
                .map(|l| l.entries.len())
                .unwrap_or(0);
            load = load.min(t.elapsed().as_secs_f64());
            // Lines split and UTF-8-checked beforehand: the timed loop is the JSON scan alone.
            let lines: Vec<&str> = memchr::memchr_iter(b'\n', &bytes)
                .scan(0, |start, end| {
                    let line = &bytes[*start..end];
                    *start = end + 1;
                    Some(line)
                })
                .filter_map(|l| std::str::from_utf8(l).ok())
                .collect();
            let t = std::time::Instant::now();
            ok = lines
                .iter()
                .filter(|l| crate::json::scan::scan(l).is_some())
                .count();
            scan = scan.min(t.elapsed().as_secs_f64());
            // The scan appended lines get (our own `JSON.stringify` output, not re-validated).
            let t = std::time::Instant::now();
            let ok_trusted = lines
                .iter()
                .filter(|l| crate::json::scan::scan_trusted(l, None).is_some())
                .count();
            trusted = trusted.min(t.elapsed().as_secs_f64());
            assert_eq!(ok_trusted, ok, "valid lines are valid for both scans");
        }
        println!(
            "{mb:.0} MB (best of 5): raw read {:.0} MB/s | load_file (read+scan+index, {n} entries) {:.0} MB/s | scan alone ({ok} lines, one thread) {:.0} MB/s | trusted scan (appends) {:.0} MB/s",
            mb / read,
            mb / load,
            mb / scan,
            mb / trusted
        );
    }
}
