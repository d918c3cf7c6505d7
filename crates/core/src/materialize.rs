//! Entry texts for JS in bulk: many entries' JSON texts laid out in one ASCII buffer, with
//! the position of each text in it, so the binding makes one JS string per piece of a batch
//! ([`piece`]) and JS takes each entry with `text.slice(start, end)` + `JSON.parse` (the
//! reference's own pattern: one file string, split into lines, parsed line by line).
//!
//! Why this shape (measured on the 100 MB bench session, see BENCHMARKS.md):
//! - one JS string per entry through N-API costs a call and a copy each; one array text parsed
//!   with a single `JSON.parse` is ~25% slower in V8 than parsing line by line;
//! - the buffer is pure ASCII: characters outside ASCII (which valid JSON only has inside
//!   string literals) are written as `\uXXXX` escapes, which `JSON.parse` turns back into the
//!   same characters. ASCII becomes a one-byte V8 string without UTF-8 decoding, and V8
//!   parses one-byte text on its fast path;
//! - pieces are small (~64 KB) copies in the V8 heap, not external strings: V8 puts external
//!   strings in old space, where dead ones waited for a full GC (~65 MB of them at the peak
//!   of a 100 MB materialization), while a small copy dies young;
//! - entries that lie next to each other in the same source (the shared file buffer, or the
//!   file itself for file-backed sessions) are copied or read as one span, gaps (newlines)
//!   included: a full materialization of a file-backed session is a few large reads.

use crate::entry::Text;
use std::sync::Arc;

/// Position of a text that could not be read (file-backed text whose file went away).
pub const UNREADABLE: u32 = u32::MAX;

/// An entry's text in a batch: its whole JSON.
pub const WHOLE: u8 = 0;
/// Its shell ([`crate::entry::Entry::shell`]).
pub const SHELL: u8 = 1;
/// The values its shell left out, as a JSON array ([`crate::entry::values_text`]).
pub const VALUES: u8 = 2;

/// What a batch holds for each entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Whole texts, with the gaps of their source between them.
    Whole,
    /// Shells where entries have one (else whole texts), separated by commas.
    Shells,
    /// The left-out values where entries have a shell (else whole texts), separated by
    /// commas: what filling the shells needs.
    Values,
}

/// The largest gap (bytes between two entries in their source) copied along with a span.
const MAX_GAP: usize = 64 << 10;

/// One batch of entry texts.
#[derive(Debug, Default)]
pub struct Batch {
    /// Pure ASCII: entry texts (non-ASCII characters escaped) and the gaps between them.
    pub bytes: Vec<u8>,
    /// Per entry: start and end in `bytes` (bytes and UTF-16 units alike), or
    /// [`UNREADABLE`] for both.
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
    /// Per entry: what its text is ([`WHOLE`], [`SHELL`] or [`VALUES`]).
    pub shells: Vec<u8>,
    /// Texts separated by commas instead of the gaps of their source: any run of whole
    /// entries is then the body of a JSON array (one `JSON.parse` for a piece).
    pub commas: bool,
}

impl Batch {
    /// How many of the requested entries this batch holds (a prefix of them).
    pub fn count(&self) -> usize {
        self.starts.len()
    }

    fn push_unreadable(&mut self) {
        self.starts.push(UNREADABLE);
        self.ends.push(UNREADABLE);
        self.shells.push(0);
    }

    fn push_text(&mut self, s: &str) {
        if self.commas && !self.bytes.is_empty() {
            self.bytes.push(b',');
        }
        self.starts.push(self.bytes.len() as u32);
        push_escaped(&mut self.bytes, s);
        self.ends.push(self.bytes.len() as u32);
        self.shells.push(0);
    }

    fn push_shell(&mut self, s: &str) {
        self.push_text(s);
        if let Some(last) = self.shells.last_mut() {
            *last = SHELL;
        }
    }

    /// The entry `text`: whole, or with `spans`, as the array of the values they cover.
    fn push_entry(&mut self, text: &str, spans: Option<&[u32]>) {
        let values = spans.and_then(|sp| crate::entry::values_text(text, sp));
        let Some(values) = values else {
            self.push_text(text);
            return;
        };
        if self.commas && !self.bytes.is_empty() {
            self.bytes.push(b',');
        }
        self.starts.push(self.bytes.len() as u32);
        self.bytes.push(b'[');
        for (k, v) in values.iter().enumerate() {
            if k > 0 {
                self.bytes.push(b',');
            }
            push_escaped(&mut self.bytes, v);
        }
        self.bytes.push(b']');
        self.ends.push(self.bytes.len() as u32);
        self.shells.push(VALUES);
    }
}

/// A run of a batch's entries handed to JS as one string: `bytes[start..end]` of the batch,
/// with each entry's start and end relative to `start` ([`UNREADABLE`] kept).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Piece {
    pub start: usize,
    pub end: usize,
    pub starts: Vec<u32>,
    pub ends: Vec<u32>,
    pub shells: Vec<u8>,
}

impl Piece {
    /// How many entries this piece holds.
    pub fn count(&self) -> usize {
        self.starts.len()
    }
}

/// The piece of `b` from entry `from`: entries while their text spans at most `budget`
/// bytes (always at least one entry when any remain). Small pieces let JS take a batch as
/// strings V8 allocates young and frees at the next scavenge once parsed.
pub fn piece(b: &Batch, from: usize, budget: usize) -> Piece {
    let pairs = b.starts.iter().zip(&b.ends).skip(from);
    let mut origin: Option<u32> = None;
    let mut end = 0u32;
    let mut count = 0;
    for (&s, &e) in pairs {
        if s != UNREADABLE {
            let o = *origin.get_or_insert(s);
            if count > 0 && (e - o) as usize > budget {
                break;
            }
            end = e;
        }
        count += 1;
    }
    let o = origin.unwrap_or(0);
    let rebase = |v: u32| if v == UNREADABLE { v } else { v - o };
    let range = b.starts.iter().zip(&b.ends).skip(from).take(count);
    let (starts, ends) = range.map(|(&s, &e)| (rebase(s), rebase(e))).unzip();
    let shells = b.shells.iter().skip(from).take(count).copied().collect();
    Piece {
        start: o as usize,
        end: end.max(o) as usize,
        starts,
        ends,
        shells,
    }
}

/// Lay out the texts `text_of(indices[..])`, in order, stopping after the entry that brings
/// the buffer to `budget` bytes (always at least one entry when any is asked for). Indices
/// without a text are [`UNREADABLE`]. `form` says what is laid out for an entry with a
/// shell (`shell_of`) and its left-out values' spans (`spans_of`); see [`Form`] (what each
/// entry got is in [`Batch::shells`]). `scratch` receives file reads; passing the same one
/// from batch to batch saves faulting in fresh memory for each.
pub fn batch<'a>(
    text_of: impl Fn(u32) -> Option<&'a Text>,
    shell_of: impl Fn(u32) -> Option<&'a str>,
    spans_of: impl Fn(u32) -> Option<&'a [u32]>,
    form: Form,
    indices: &[u32],
    budget: usize,
    scratch: &mut Vec<u8>,
) -> Batch {
    let mut b = Batch {
        commas: form != Form::Whole,
        ..Batch::default()
    };
    let shell_of = |i: u32| shell_of(i).filter(|_| form == Form::Shells);
    let spans_of = |i: u32| spans_of(i).filter(|s| form == Form::Values && !s.is_empty());
    let mut k = 0;
    while k < indices.len() && (k == 0 || b.bytes.len() < budget) {
        if let Some(shell) = shell_of(indices[k]) {
            b.push_shell(shell);
            k += 1;
            continue;
        }
        let Some(t) = text_of(indices[k]) else {
            b.push_unreadable();
            k += 1;
            continue;
        };
        let room = budget - budget.min(b.bytes.len());
        k = match t {
            Text::Owned(s) => {
                b.push_entry(s, spans_of(indices[k]));
                k + 1
            }
            // The JS layer holds this entry's object (it never asks for its text).
            Text::Js => {
                b.push_unreadable();
                k + 1
            }
            Text::Shared { base, start, .. } => {
                let start = *start as usize;
                let (j, end) = run(&text_of, &shell_of, indices, k, room);
                let src = base.get(start..end).unwrap_or_default();
                let cuts = cuts_of(&text_of, &indices[k..j], start);
                let spans: Vec<_> = indices[k..j].iter().map(|&i| spans_of(i)).collect();
                lay_out(&mut b, src, &cuts, &spans);
                j
            }
            Text::File { src, start, .. } => {
                let (j, end) = run(&text_of, &shell_of, indices, k, room);
                let span = end - (*start as usize).min(end);
                scratch.resize(span, 0);
                let text = match src.read_up_to(scratch, *start) {
                    Ok(n) if n == span => std::str::from_utf8(scratch).ok(),
                    _ => None,
                };
                if let Some(text) = text {
                    let cuts = cuts_of(&text_of, &indices[k..j], *start as usize);
                    let spans: Vec<_> = indices[k..j].iter().map(|&i| spans_of(i)).collect();
                    lay_out(&mut b, text, &cuts, &spans);
                } else {
                    // Invalid UTF-8 somewhere in the span, or a short read: entry by entry,
                    // decoded as at load (invalid sequences as U+FFFD).
                    for &i in &indices[k..j] {
                        match text_of(i).map(|t| t.read()) {
                            Some(Ok(t)) => b.push_entry(&t, spans_of(i)),
                            _ => b.push_unreadable(),
                        }
                    }
                }
                j
            }
        };
    }
    b
}

/// Each entry's byte range relative to `origin` (the start of its run's span).
fn cuts_of<'a>(
    text_of: &impl Fn(u32) -> Option<&'a Text>,
    indices: &[u32],
    origin: usize,
) -> Vec<(usize, usize)> {
    indices
        .iter()
        .map(|&i| {
            let (s, e) = text_of(i).map_or((origin, origin), span_of);
            (s.saturating_sub(origin), e.saturating_sub(origin))
        })
        .collect()
}

/// Copy a span (escaped) and record where each entry landed. `cuts` are increasing,
/// non-overlapping and on character boundaries of `src`; `spans`, for each cut, the spans of
/// the values to lay out instead of the whole text (see [`Batch::push_entry`]).
fn lay_out(b: &mut Batch, src: &str, cuts: &[(usize, usize)], spans: &[Option<&[u32]>]) {
    let mut done = 0;
    for (k, &(s, e)) in cuts.iter().enumerate() {
        if !b.commas {
            push_escaped(&mut b.bytes, src.get(done..s).unwrap_or_default());
        }
        b.push_entry(
            src.get(s..e).unwrap_or_default(),
            spans.get(k).copied().flatten(),
        );
        done = e;
    }
}

/// Append `s` with every non-ASCII character written as `\uXXXX` (a surrogate pair for
/// characters beyond the BMP), the form `JSON.parse` reads back as the same character.
pub fn push_escaped(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let end = ascii_run_end(bytes, i);
        out.extend_from_slice(&bytes[i..end]);
        i = end;
        let Some(c) = s.get(i..).and_then(|rest| rest.chars().next()) else {
            break;
        };
        let mut units = [0u16; 2];
        for u in c.encode_utf16(&mut units) {
            out.extend_from_slice(b"\\u");
            for shift in [12, 8, 4, 0] {
                out.push(b"0123456789abcdef"[usize::from((*u >> shift) & 0xF)]);
            }
        }
        i += c.len_utf8();
    }
}

/// End of the ASCII run starting at `from` (16 bytes at a time while they are all ASCII).
fn ascii_run_end(b: &[u8], from: usize) -> usize {
    let mut i = from;
    while let Some(chunk) = b.get(i..i + 16) {
        if !chunk.is_ascii() {
            break;
        }
        i += 16;
    }
    while i < b.len() && b[i] < 0x80 {
        i += 1;
    }
    i
}

/// Extend a run from `indices[k]`: following entries from the same source, at increasing
/// positions with small gaps, while the span stays within `room` bytes (the first entry is
/// always taken). Returns the end of the run in `indices` and the end of the span in the
/// source.
fn run<'a>(
    text_of: &impl Fn(u32) -> Option<&'a Text>,
    shell_of: &impl Fn(u32) -> Option<&'a str>,
    indices: &[u32],
    k: usize,
    room: usize,
) -> (usize, usize) {
    let Some(first) = text_of(indices[k]) else {
        return (k + 1, 0);
    };
    let (first_start, mut end) = span_of(first);
    let mut j = k + 1;
    while j < indices.len() {
        let Some(next) = text_of(indices[j]) else {
            break;
        };
        if shell_of(indices[j]).is_some() {
            break;
        }
        if !same_source(first, next) {
            break;
        }
        let (s, e) = span_of(next);
        if s < end || s - end > MAX_GAP || e - first_start > room {
            break;
        }
        end = e;
        j += 1;
    }
    (j, end)
}

/// Byte span of a shared or file-backed text in its source.
fn span_of(t: &Text) -> (usize, usize) {
    match t {
        Text::Shared { start, end, .. } => (*start as usize, *end as usize),
        Text::File { start, len, .. } => (*start as usize, *start as usize + *len as usize),
        Text::Owned(_) | Text::Js => (0, 0),
    }
}

fn same_source(a: &Text, b: &Text) -> bool {
    match (a, b) {
        (Text::Shared { base: x, .. }, Text::Shared { base: y, .. }) => Arc::ptr_eq(x, y),
        (Text::File { src: x, .. }, Text::File { src: y, .. }) => Arc::ptr_eq(x, y),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entry::Entry;
    use crate::jsonl;

    fn of(entries: &[Entry], idx: &[u32], budget: usize) -> Batch {
        batch(
            |i| entries.get(i as usize).map(|e| &e.text),
            |_| None,
            |_| None,
            Form::Whole,
            idx,
            budget,
            &mut Vec::new(),
        )
    }

    /// Each entry's text as JS would see it: the slice, with `\uXXXX` escapes read back.
    fn texts(b: &Batch) -> Vec<Option<String>> {
        assert!(b.bytes.is_ascii());
        b.starts
            .iter()
            .zip(&b.ends)
            .map(|(&s, &e)| (s != UNREADABLE).then(|| unescape(&b.bytes[s as usize..e as usize])))
            .collect()
    }

    /// Undo [`push_escaped`] (escapes of ASCII characters were in the text itself).
    fn unescape(b: &[u8]) -> String {
        let s = std::str::from_utf8(b).expect("ascii");
        let mut units: Vec<u16> = Vec::new();
        let mut rest = s;
        while let Some(p) = rest.find("\\u") {
            units.extend(rest[..p].encode_utf16());
            let u = u16::from_str_radix(&rest[p + 2..p + 6], 16).expect("hex");
            if u < 0x80 {
                units.extend(rest[p..p + 6].encode_utf16());
            } else {
                units.push(u);
            }
            rest = &rest[p + 6..];
        }
        units.extend(rest.encode_utf16());
        String::from_utf16(&units).expect("utf16")
    }

    const FILE: &str = "{\"type\":\"session\",\"id\":\"s\"}\n{\"type\":\"x\",\"id\":\"a\",\"t\":\"é😀\"}\nnot json\n{\"type\":\"x\",\"id\":\"b\"}\r\n{\"type\":\"x\",\"id\":\"c\",\"t\":\"ascii\"}\n";

    fn expected(entries: &[Entry], idx: &[u32]) -> Vec<Option<String>> {
        idx.iter()
            .map(|&i| {
                entries
                    .get(i as usize)
                    .map(|e| e.text.read().expect("read").into_owned())
            })
            .collect()
    }

    #[test]
    fn shared_texts_in_any_order_and_gaps() {
        let l = jsonl::parse_bytes(FILE.as_bytes());
        for idx in [
            vec![0, 1, 2, 3],
            vec![3, 1, 0],
            vec![2],
            vec![1, 9, 2],
            vec![],
        ] {
            let b = of(&l.entries, &idx, usize::MAX);
            assert_eq!(texts(&b), expected(&l.entries, &idx), "{idx:?}");
            assert_eq!(b.count(), idx.len());
        }
    }

    /// With commas, every piece is the body of a JSON array of its readable entries, shells
    /// laid out in place of their entries' texts.
    #[test]
    fn comma_batches_are_array_bodies() {
        let big = "y".repeat(crate::entry::LAZY_MIN);
        let file = format!("{FILE}{{\"type\":\"message\",\"id\":\"m\",\"message\":\"{big}\"}}\n");
        let l = jsonl::parse_bytes(file.as_bytes());
        let last = l.entries.len() as u32 - 1;
        let idx = [0u32, 9, 1, 2, last, 3];
        let b = batch(
            |i| l.entries.get(i as usize).map(|e| &e.text),
            |i| l.entries.get(i as usize).and_then(|e| e.shell.as_deref()),
            |i| l.entries.get(i as usize).map(|e| &*e.lazy_spans),
            Form::Shells,
            &idx,
            usize::MAX,
            &mut Vec::new(),
        );
        assert_eq!(b.shells, [0, 0, 0, 0, 1, 0]);
        // The values form: the left-out message as a one-value array.
        let v = batch(
            |i| l.entries.get(i as usize).map(|e| &e.text),
            |i| l.entries.get(i as usize).and_then(|e| e.shell.as_deref()),
            |i| l.entries.get(i as usize).map(|e| &*e.lazy_spans),
            Form::Values,
            &[last, 0],
            usize::MAX,
            &mut Vec::new(),
        );
        assert_eq!(v.shells, [VALUES, WHOLE]);
        let first = unescape(&v.bytes[v.starts[0] as usize..v.ends[0] as usize]);
        assert_eq!(first, format!("[\"{big}\"]"));
        for budget in [0, 40, 1 << 20] {
            let mut from = 0;
            while from < b.count() {
                let p = piece(&b, from, budget);
                let body = unescape(&b.bytes[p.start..p.end]);
                let readable = p.starts.iter().filter(|&&s| s != UNREADABLE).count();
                let arr = format!("[{body}]");
                let v = crate::json::value::parse(&arr).expect("an array");
                assert_eq!(v.as_array().map(|a| a.len()), Some(readable), "{arr}");
                from += p.count();
            }
        }
    }

    #[test]
    fn non_ascii_is_escaped_as_json_reads_it() {
        let mut out = Vec::new();
        push_escaped(&mut out, "a\\u0041b é😀\u{2028}");
        assert_eq!(
            std::str::from_utf8(&out).expect("ascii"),
            r"a\u0041b \u00e9\ud83d\ude00\u2028"
        );
        // Long ASCII runs around a character (the 16-byte fast path).
        let long = format!("{}é{}", "x".repeat(40), "y".repeat(17));
        let mut out = Vec::new();
        push_escaped(&mut out, &long);
        assert_eq!(unescape(&out), long);
    }

    #[test]
    fn pieces_cover_a_batch_in_order() {
        let l = jsonl::parse_bytes(FILE.as_bytes());
        let idx = [0u32, 9, 1, 2, 3, 4, 8];
        let b = of(&l.entries, &idx, usize::MAX);
        let want = texts(&b);
        for budget in [0, 1, 30, 60, 1 << 20] {
            let mut got = Vec::new();
            let mut from = 0;
            while from < b.count() {
                let p = piece(&b, from, budget);
                assert!(p.count() >= 1, "{budget}");
                assert!(p.end <= b.bytes.len() && p.start <= p.end);
                let text = &b.bytes[p.start..p.end];
                for (&s, &e) in p.starts.iter().zip(&p.ends) {
                    got.push((s != UNREADABLE).then(|| unescape(&text[s as usize..e as usize])));
                }
                if budget == 0 {
                    assert!(p.starts.iter().filter(|&&s| s != UNREADABLE).count() <= 1);
                }
                from += p.count();
            }
            assert_eq!(got, want, "{budget}");
        }
        assert_eq!(piece(&b, b.count(), 10).count(), 0);
        // Only unreadable entries: an empty text.
        let b = of(&l.entries, &[9, 10], usize::MAX);
        let p = piece(&b, 0, 10);
        assert_eq!((p.start, p.end, p.count()), (0, 0, 2));
    }

    #[test]
    fn budget_stops_after_the_entry_that_fills_it() {
        let l = jsonl::parse_bytes(FILE.as_bytes());
        let b = of(&l.entries, &[0, 1, 2, 3], 1);
        assert_eq!(b.count(), 1);
        let mut k = 0;
        let idx = [0u32, 1, 2, 3];
        while k < idx.len() {
            let b = of(&l.entries, &idx[k..], 40);
            assert!(b.count() >= 1);
            assert_eq!(texts(&b), expected(&l.entries, &idx[k..k + b.count()]));
            k += b.count();
        }
    }

    #[test]
    fn file_backed_spans_and_invalid_utf8() {
        let dir = std::env::temp_dir().join(format!("psn-mat-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("s.jsonl");
        let mut bytes = FILE.as_bytes().to_vec();
        bytes.extend_from_slice(b"{\"type\":\"x\",\"id\":\"d\",\"t\":\"bad\xff\"}\n");
        std::fs::write(&p, &bytes).expect("write");
        let f = std::fs::File::open(&p).expect("open");
        let l = jsonl::load_backed(f).expect("load");
        assert!(l.entries.iter().all(|e| e.text.is_file_backed()));
        let all: Vec<u32> = (0..l.entries.len() as u32).collect();
        for idx in [all.clone(), vec![0, 1, 2], vec![4, 2], vec![3, 4]] {
            let b = of(&l.entries, &idx, usize::MAX);
            assert_eq!(texts(&b), expected(&l.entries, &idx), "{idx:?}");
        }
        std::fs::remove_dir_all(&dir).ok();
    }
}
