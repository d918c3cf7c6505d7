//! Tolerant JSONL reading, exactly like the reference's `loadEntriesFromFile`:
//! bytes decoded as UTF-8 the way Node's `StringDecoder` does (invalid sequences become
//! U+FFFD, maximal-subpart rule, which `String::from_utf8_lossy` implements too), lines split
//! on `\n`, blank and malformed lines skipped, a trailing `\r` is JSON whitespace.

use crate::entry::Entry;
use std::io::Read;
use std::path::Path;
use std::sync::Arc;

/// What a file read produced.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    /// The file did not end with `\n` (the reference then appends one).
    pub unterminated: bool,
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
    for_each_line(base.as_bytes(), from, to, |a, b| {
        // The line's offset is unique: it keys object-valued ids apart.
        if let Some(e) = Entry::parse_shared(base, a, b, a + 1) {
            entries.push(e);
        }
    });
    entries
}

/// `loadEntriesFromFile` semantics, minus the repair write (the store decides that):
/// missing file -> empty; a first entry that is not a valid header -> empty.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(LoadError::Open(e)),
    };
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if size >= backed_threshold() {
        return load_backed(f);
    }
    // Size the buffer from the file's length: no regrowth copies for large sessions.
    let len = f.metadata().map(|m| m.len() as usize).unwrap_or(0);
    let mut bytes = Vec::with_capacity(len + 1);
    f.read_to_end(&mut bytes).map_err(LoadError::Read)?;
    let loaded = parse_owned(bytes);
    if let Some(first) = loaded.entries.first()
        && !first.is_valid_header()
    {
        return Ok(Loaded::default());
    }
    Ok(loaded)
}

/// Files at least this large keep entry text in the file, not in memory
/// (`PI_SESSION_NATIVE_BACKED_MIN` bytes; default 64 MiB).
fn backed_threshold() -> u64 {
    std::env::var("PI_SESSION_NATIVE_BACKED_MIN")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64 << 20)
}

/// Stream a large file in chunks: entries keep only their byte range, memory stays bounded
/// by the index plus one chunk. The handle stays open for reading entries back.
///
/// (A reader thread overlapping reads with scans was tried: no gain on 2 cores, where the
/// scan already runs on both.)
pub(crate) fn load_backed(file: std::fs::File) -> Result<Loaded, LoadError> {
    load_backed_in(file, 4 << 20)
}

/// [`load_backed`] with reads of `chunk` bytes (tests use tiny ones to cut every line).
fn load_backed_in(file: std::fs::File, chunk: usize) -> Result<Loaded, LoadError> {
    use crate::entry::FileSource;
    let chunk = chunk.max(1);
    let src = Arc::new(FileSource {
        file: file.try_clone().map_err(LoadError::Open)?,
    });
    let mut reader = file;
    let mut entries: Vec<Entry> = Vec::new();
    // `buf[..filled]` holds unscanned bytes; the buffer is zeroed once, not per chunk, and
    // grows only for a line longer than it.
    let mut buf: Vec<u8> = vec![0; chunk];
    let mut filled = 0;
    // File offset of buf[0].
    let mut base: u64 = 0;
    let mut last_byte: Option<u8> = None;
    let mut first_checked = false;
    loop {
        if buf.len() - filled < chunk {
            buf.resize(filled + chunk, 0);
        }
        // At most one chunk per read: the buffer's pages are touched only as far as needed
        // (peak RSS of a large open is the index plus about one chunk).
        let n = reader
            .read(&mut buf[filled..filled + chunk])
            .map_err(LoadError::Read)?;
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
        scan_backed(&buf[..upto], base, &src, &mut entries);
        if !first_checked && !entries.is_empty() {
            first_checked = true;
            if !entries[0].is_valid_header() {
                return Ok(Loaded::default());
            }
        }
        buf.copy_within(upto..filled, 0);
        filled -= upto;
        base += upto as u64;
        if eof {
            break;
        }
    }
    Ok(Loaded {
        entries,
        unterminated: last_byte.is_some_and(|b| b != b'\n'),
    })
}

/// Scan complete lines of `bytes` (starting at file offset `base`) in parallel chunks.
fn scan_backed(bytes: &[u8], base: u64, src: &Arc<crate::entry::FileSource>, out: &mut Vec<Entry>) {
    let scan_part = |from: usize, to: usize| -> Vec<Entry> {
        let mut v = Vec::new();
        for_each_line(bytes, from, to, |a, b| {
            let line = &bytes[a..b];
            // Valid UTF-8 (the usual case) is checked by the fast validator, without the
            // lossy decoder's chunk iteration.
            let text = match std::str::from_utf8(line) {
                Ok(s) => std::borrow::Cow::Borrowed(s),
                Err(_) => String::from_utf8_lossy(line),
            };
            let off = base + a as u64;
            if let Some(e) = Entry::parse_backed(&text, src, off, (b - a) as u32, off as usize + 1)
            {
                v.push(e);
            }
        });
        v
    };
    let chunks = split_at_newlines(bytes, scan_threads(), 1 << 20);
    if chunks.len() <= 1 {
        out.extend(scan_part(0, bytes.len()));
        return;
    }
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|&(a, b)| {
                let f = &scan_part;
                scope.spawn(move || f(a, b))
            })
            .collect();
        for h in handles {
            // A panicking scan thread yields no entries rather than aborting the load.
            out.extend(h.join().unwrap_or_default());
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
            let want = load_file(&p).expect("load");
            let texts = |l: &Loaded| -> Vec<String> {
                l.entries
                    .iter()
                    .map(|e| e.text.read().expect("text").into_owned())
                    .collect()
            };
            for chunk in [1, 2, 3, 7, 16, 64, 1 << 20] {
                let f = std::fs::File::open(&p).expect("open");
                let got = load_backed_in(f, chunk).expect("backed");
                assert_eq!(texts(&got), texts(&want), "case {n}, chunk {chunk}");
                assert_eq!(
                    got.unterminated, want.unterminated,
                    "case {n}, chunk {chunk}"
                );
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
    /// `SCAN_FILE=<path> cargo test --release --lib scan_throughput -- --ignored --nocapture`
    /// (`npm run bench:core` runs it on the generated 100 MB session).
    #[test]
    #[ignore]
    fn scan_throughput() {
        let Ok(path) = std::env::var("SCAN_FILE") else {
            return;
        };
        let p = std::path::Path::new(&path);
        for _ in 0..5 {
            let t = std::time::Instant::now();
            let bytes = std::fs::read(p).unwrap_or_default();
            let read = t.elapsed();
            let mb = bytes.len() as f64 / 1e6;
            let t = std::time::Instant::now();
            let n = super::load_file(p).map(|l| l.entries.len()).unwrap_or(0);
            let load = t.elapsed();
            let t = std::time::Instant::now();
            let mut ok = 0;
            for line in bytes.split(|&b| b == b'\n') {
                if let Ok(s) = std::str::from_utf8(line)
                    && crate::json::scan::scan(s).is_some()
                {
                    ok += 1;
                }
            }
            let scan = t.elapsed();
            println!(
                "{mb:.0} MB: raw read {:.0} MB/s | load_file (read+scan+index, {n} entries) {:.0} MB/s | single-thread scan ({ok} lines) {:.0} MB/s",
                mb / read.as_secs_f64(),
                mb / load.as_secs_f64(),
                mb / scan.as_secs_f64()
            );
        }
    }
}
