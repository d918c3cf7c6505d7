//! Tolerant JSONL reading, exactly like the reference's `loadEntriesFromFile`:
//! bytes decoded as UTF-8 the way Node's `StringDecoder` does (invalid sequences become
//! U+FFFD, maximal-subpart rule, which `String::from_utf8_lossy` implements too), lines split
//! on `\n`, blank and malformed lines skipped, a trailing `\r` is JSON whitespace.

use crate::entry::Entry;
use std::io::Read;
use std::path::Path;

/// What a file read produced.
#[derive(Debug, Default)]
pub struct Loaded {
    pub entries: Vec<Entry>,
    /// The file did not end with `\n` (the reference then appends one).
    pub unterminated: bool,
}

/// Decode one line of bytes like Node would.
pub fn decode_line(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Parse a whole buffer of JSONL bytes.
pub fn parse_bytes(bytes: &[u8]) -> Loaded {
    let mut out = Loaded::default();
    let mut start = 0;
    let mut unique = 0usize;
    let mut push = |line: &[u8], out: &mut Loaded| {
        if line
            .iter()
            .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        {
            return;
        }
        unique += 1;
        if let Some(e) = Entry::parse(decode_line(line), unique) {
            out.entries.push(e);
        }
    };
    for nl in memchr::memchr_iter(b'\n', bytes) {
        push(&bytes[start..nl], &mut out);
        start = nl + 1;
    }
    if start < bytes.len() {
        push(&bytes[start..], &mut out);
        out.unterminated = true;
    }
    out
}

/// `loadEntriesFromFile` semantics, minus the repair write (the store decides that):
/// missing file -> empty; a first entry that is not a valid header -> empty.
pub fn load_file(path: &Path) -> Result<Loaded, LoadError> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(LoadError::Open(e)),
    };
    // Size the buffer from the file's length: no regrowth copies for large sessions.
    let len = f.metadata().map(|m| m.len() as usize).unwrap_or(0);
    let mut bytes = Vec::with_capacity(len + 1);
    f.read_to_end(&mut bytes).map_err(LoadError::Read)?;
    let loaded = parse_bytes(&bytes);
    if let Some(first) = loaded.entries.first()
        && !first.is_valid_header()
    {
        return Ok(Loaded::default());
    }
    Ok(loaded)
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

    #[test]
    fn invalid_utf8_becomes_replacement_char() {
        let l = parse_bytes(b"{\"type\":\"session\",\"id\":\"s\xff\xfe\"}\n");
        assert_eq!(l.entries.len(), 1);
        assert!(l.entries[0].text.contains('\u{FFFD}'));
        assert!(!l.unterminated);
    }
}

#[cfg(test)]
mod perf {
    /// `SCAN_FILE=<path> cargo test --release --lib scan_throughput -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn scan_throughput() {
        let Ok(path) = std::env::var("SCAN_FILE") else {
            return;
        };
        let bytes = std::fs::read(&path).unwrap_or_default();
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let n = super::parse_bytes(&bytes).entries.len();
            let el = t.elapsed();
            let t2 = std::time::Instant::now();
            let mut ok = 0;
            for line in bytes.split(|&b| b == b'\n') {
                if let Ok(s) = std::str::from_utf8(line)
                    && crate::json::scan::scan(s).is_some()
                {
                    ok += 1;
                }
            }
            let el2 = t2.elapsed();
            let mb = bytes.len() as f64 / 1e6;
            println!(
                "parse_bytes: {n} entries, {:.0} MB/s; scan only: {ok} lines {:.0} MB/s",
                mb / el.as_secs_f64(),
                mb / el2.as_secs_f64()
            );
        }
    }
}
