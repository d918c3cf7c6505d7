//! Literal full-text search over the message text of session files, in parallel over files.
//!
//! Semantics are those of lib/cli/search.mjs (its JS fallback): every line of a file is
//! parsed like `JSON.parse`; the searched texts of an entry are
//! - `message` with role user / assistant / toolResult: the content string, or the string
//!   `text` of its `{type: "text"}` blocks joined with "\n";
//! - `message` with role bashExecution: `command + "\n" + output` (string fields only);
//! - `custom_message`: its content, like a message's; `compaction` / `branch_summary`:
//!   the `summary` string.
//!
//! Each text is split on "\n" and every line is searched for non-overlapping occurrences
//! of the needle, left to right (what `RegExp#exec` with the `g` flag finds for an escaped
//! literal). Offsets are in UTF-16 code units, as JS strings count. With `ignore_case`,
//! characters compare after simple case folding (the `iu` flags' canonicalization).

use crate::json::value::{self, JsString, Value};
use memchr::memchr;
use std::fmt::Write as _;

/// One matching line.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// The entry's `id` as raw JSON (`null` when absent).
    pub entry_id_json: String,
    pub role: String,
    /// 1-based line number within the text.
    pub line: usize,
    /// The line, as UTF-16 code units.
    pub text: Vec<u16>,
    /// `[start, end)` in UTF-16 code units.
    pub matches: Vec<(usize, usize)>,
}

/// A compiled needle.
pub struct Needle {
    ignore_case: bool,
    /// Folded symbols of the needle (code points; lone surrogates as themselves).
    folded: Vec<u32>,
    /// The bytes the raw-line prefilter looks for: the needle, ASCII-lowercased when
    /// `ignore_case` (see `may_contain`).
    probe: Vec<u8>,
    /// The raw-line prefilter is sound for this needle (see `may_contain`).
    prefilter: bool,
    /// With `ignore_case`: the needle has a `k` or `s`, which U+212A KELVIN SIGN and
    /// U+017F LONG S fold to; lines holding those characters are not prefiltered.
    folds_from_non_ascii: bool,
}

impl Needle {
    pub fn new(needle: &str, ignore_case: bool) -> Needle {
        let folded = symbols(&needle.encode_utf16().collect::<Vec<_>>())
            .map(|(c, _)| if ignore_case { fold(c) } else { c })
            .collect();
        let plain = !needle.is_empty()
            && !needle
                .chars()
                .any(|c| c == '"' || c == '\\' || (c as u32) < 0x20);
        // Case-insensitively, only an ASCII needle has a byte-level probe: its matches are
        // ASCII letters in any case (or the two non-ASCII characters folding to k / s).
        let prefilter = plain && (!ignore_case || needle.is_ascii());
        let probe = if ignore_case {
            needle.to_ascii_lowercase().into_bytes()
        } else {
            needle.as_bytes().to_vec()
        };
        let folds_from_non_ascii = ignore_case && probe.iter().any(|&b| b == b'k' || b == b's');
        Needle {
            ignore_case,
            folded,
            probe,
            prefilter,
            folds_from_non_ascii,
        }
    }

    /// False only when no text of this raw JSON line can contain the needle: the needle
    /// has no character JSON must escape, and the line uses no `\u` or `\/` escape, so any
    /// occurrence in a decoded string is also verbatim in the raw line (case-insensitively:
    /// verbatim up to ASCII case, the needle being ASCII).
    fn may_contain(&self, raw: &[u8]) -> bool {
        if !self.prefilter {
            return true;
        }
        let mut i = 0;
        while let Some(off) = memchr(b'\\', &raw[i..]) {
            let at = i + off;
            match raw.get(at + 1) {
                Some(b'u') | Some(b'/') => return true,
                _ => i = at + 2,
            }
            if i >= raw.len() {
                break;
            }
        }
        if !self.ignore_case {
            return memchr::memmem::find(raw, &self.probe).is_some();
        }
        if self.folds_from_non_ascii
            && (memchr::memmem::find(raw, "\u{212A}".as_bytes()).is_some()
                || memchr::memmem::find(raw, "\u{17F}".as_bytes()).is_some())
        {
            return true;
        }
        memchr::memmem::find(&raw.to_ascii_lowercase(), &self.probe).is_some()
    }

    /// Non-overlapping occurrences in one line (UTF-16 units).
    fn find_all(&self, line: &[u16]) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        if self.folded.is_empty() {
            return out;
        }
        let syms: Vec<(u32, usize)> = symbols(line)
            .map(|(c, w)| (if self.ignore_case { fold(c) } else { c }, w))
            .collect();
        let n = self.folded.len();
        if syms.len() < n {
            return out;
        }
        // UTF-16 offset of each symbol.
        let mut offs = Vec::with_capacity(syms.len() + 1);
        let mut o = 0;
        for &(_, w) in &syms {
            offs.push(o);
            o += w;
        }
        offs.push(o);
        let mut i = 0;
        while i + n <= syms.len() {
            if syms[i..i + n]
                .iter()
                .map(|s| s.0)
                .eq(self.folded.iter().copied())
            {
                out.push((offs[i], offs[i + n]));
                i += n;
            } else {
                i += 1;
            }
        }
        out
    }
}

/// Code points of UTF-16 units with their width; lone surrogates stand for themselves.
fn symbols(units: &[u16]) -> impl Iterator<Item = (u32, usize)> + '_ {
    char::decode_utf16(units.iter().copied()).map(|r| match r {
        Ok(c) => (c as u32, c.len_utf16()),
        Err(e) => (u32::from(e.unpaired_surrogate()), 1),
    })
}

/// Simple case folding: the single-character lowercase mapping, plus the characters whose
/// simple case fold differs from it.
fn fold(c: u32) -> u32 {
    let special = match c {
        0x03C2 => Some(0x03C3), // ς → σ
        0x017F => Some(0x73),   // ſ → s
        0x0345 | 0x1FBE => Some(0x03B9),
        0x03D0 => Some(0x03B2),
        0x03D1 => Some(0x03B8),
        0x03D5 => Some(0x03C6),
        0x03D6 => Some(0x03C0),
        0x03F0 => Some(0x03BA),
        0x03F1 => Some(0x03C1),
        0x03F5 => Some(0x03B5),
        0x1E9B => Some(0x1E61),
        _ => None,
    };
    if let Some(s) = special {
        return s;
    }
    let Some(ch) = char::from_u32(c) else {
        return c;
    };
    let mut low = ch.to_lowercase();
    match (low.next(), low.next()) {
        (Some(l), None) => l as u32,
        _ => c,
    }
}

fn content_text(content: Option<&Value>) -> Option<Vec<u16>> {
    match content? {
        Value::String(s) => Some(s.to_utf16()),
        Value::Array(blocks) => {
            let mut out = Vec::new();
            let mut first = true;
            for b in blocks {
                let is_text = b
                    .get("type")
                    .and_then(Value::as_js_string)
                    .is_some_and(|t| *t == "text");
                if let (true, Some(Value::String(t))) = (is_text, b.get("text")) {
                    if !first {
                        out.push(u16::from(b'\n'));
                    }
                    first = false;
                    out.extend(t.to_utf16());
                }
            }
            Some(out)
        }
        _ => None,
    }
}

fn str_units(v: Option<&Value>) -> Vec<u16> {
    match v {
        Some(Value::String(s)) => s.to_utf16(),
        _ => Vec::new(),
    }
}

/// The (role, text) pairs searched in one parsed entry (also what the search index
/// indexes, crates/core/src/search/extract.rs, whose `read_line` takes the same from the
/// line's text without a value: a test there holds the two equal).
pub(crate) fn texts(e: &Value) -> Vec<(String, Vec<u16>)> {
    let Some(obj) = e.as_object() else {
        return Vec::new();
    };
    let ty = obj.get("type").and_then(Value::as_js_string);
    let Some(ty) = ty else { return Vec::new() };
    let mut out = Vec::new();
    if *ty == "message" {
        let Some(m) = obj.get("message").filter(|m| m.as_object().is_some()) else {
            return out;
        };
        let role = m.get("role").and_then(Value::as_js_string);
        match role {
            Some(r) if *r == "user" || *r == "assistant" || *r == "toolResult" => {
                out.push((
                    r.to_string_lossy(),
                    content_text(m.get("content")).unwrap_or_default(),
                ));
            }
            Some(r) if *r == "bashExecution" => {
                let mut t = str_units(m.get("command"));
                t.push(u16::from(b'\n'));
                t.extend(str_units(m.get("output")));
                out.push(("bash".into(), t));
            }
            _ => {}
        }
    } else if *ty == "custom_message" {
        let ct = match obj.get("customType") {
            Some(Value::String(s)) => s.to_string_lossy(),
            _ => "?".into(),
        };
        out.push((
            format!("custom:{ct}"),
            content_text(obj.get("content")).unwrap_or_default(),
        ));
    } else if *ty == "compaction" || *ty == "branch_summary" {
        out.push((ty.to_string_lossy(), str_units(obj.get("summary"))));
    }
    out
}

/// Search one file's bytes; at most `limit` hits.
pub fn search_bytes(bytes: &[u8], needle: &Needle, limit: usize) -> Vec<Hit> {
    let mut hits = Vec::new();
    for raw in bytes.split(|&b| b == b'\n') {
        if hits.len() >= limit {
            break;
        }
        if raw.iter().all(|b| b.is_ascii_whitespace()) || !needle.may_contain(raw) {
            continue;
        }
        let line = String::from_utf8_lossy(raw);
        let Some(e) = value::parse(&line) else {
            continue;
        };
        let id_json = e
            .get("id")
            .map(Value::to_json)
            .unwrap_or_else(|| "null".into());
        for (role, text) in texts(&e) {
            if text.is_empty() {
                continue;
            }
            for (i, l) in text.split(|&u| u == u16::from(b'\n')).enumerate() {
                let m = needle.find_all(l);
                if !m.is_empty() {
                    hits.push(Hit {
                        entry_id_json: id_json.clone(),
                        role: role.clone(),
                        line: i + 1,
                        text: l.to_vec(),
                        matches: m,
                    });
                    if hits.len() >= limit {
                        return hits;
                    }
                }
            }
        }
    }
    hits
}

/// Search files in parallel (`threads` workers). Results in input order; an unreadable
/// file gives `None`.
pub fn search_files(
    paths: &[String],
    needle: &Needle,
    limit: usize,
    threads: usize,
) -> Vec<Option<Vec<Hit>>> {
    super::par_map_files(paths, threads, |b| search_bytes(b, needle, limit))
}

/// The hits of one file as a JSON array of `[entryId, role, line, text, [[start, end], ...]]`.
pub fn hits_json(hits: &[Hit]) -> String {
    let mut out = String::from("[");
    for (i, h) in hits.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('[');
        out.push_str(&h.entry_id_json);
        out.push(',');
        JsString::from_str(&h.role).write_json(&mut out);
        let _ = write!(out, ",{},", h.line);
        JsString::from_utf16(&h.text).write_json(&mut out);
        out.push_str(",[");
        for (j, (a, b)) in h.matches.iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            let _ = write!(out, "[{a},{b}]");
        }
        out.push_str("]]");
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    type Found = Vec<(String, usize, Vec<(usize, usize)>)>;

    fn run(lines: &str, needle: &str, icase: bool) -> Found {
        search_bytes(lines.as_bytes(), &Needle::new(needle, icase), usize::MAX)
            .into_iter()
            .map(|h| (h.role, h.line, h.matches))
            .collect()
    }

    #[test]
    fn finds_text_blocks_and_lines() {
        let l = r#"{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"text","text":"one\nfoo foo"},{"type":"toolCall","name":"foo"},{"type":"text","text":"xfoo"}]}}"#;
        assert_eq!(
            run(l, "foo", false),
            vec![
                ("assistant".into(), 2, vec![(0, 3), (4, 7)]),
                ("assistant".into(), 3, vec![(1, 4)])
            ]
        );
    }

    #[test]
    fn utf16_offsets_and_case_folding() {
        let l = r#"{"type":"message","message":{"role":"user","content":"😀 Straße ΣΑΣ"}}"#;
        assert_eq!(
            run(l, "straße", true),
            vec![("user".into(), 1, vec![(3, 9)])]
        );
        assert_eq!(
            run(l, "σας", true),
            vec![("user".into(), 1, vec![(10, 13)])]
        );
        assert!(run(l, "straße", false).is_empty());
    }

    #[test]
    fn escapes_defeat_the_prefilter_correctly() {
        let l = r#"{"type":"compaction","summary":"a\u0062c \/x"}"#;
        assert_eq!(
            run(l, "abc", false),
            vec![("compaction".into(), 1, vec![(0, 3)])]
        );
        assert_eq!(
            run(l, "/x", false),
            vec![("compaction".into(), 1, vec![(4, 6)])]
        );
    }

    #[test]
    fn case_insensitive_prefilter_keeps_non_ascii_folds() {
        let l = "{\"type\":\"message\",\"message\":{\"role\":\"user\",\"content\":\"\u{212A}ey \u{17F}ea KEY\"}}";
        assert_eq!(
            run(l, "key", true),
            vec![("user".into(), 1, vec![(0, 3), (8, 11)])]
        );
        assert_eq!(run(l, "sea", true), vec![("user".into(), 1, vec![(4, 7)])]);
        assert!(run(l, "zzz", true).is_empty());
    }

    #[test]
    fn ignores_malformed_and_other_entries() {
        let l = "{bad\n{\"type\":\"label\",\"label\":\"foo\"}\n[1]\n{\"type\":\"message\",\"message\":null}\n";
        assert!(run(l, "foo", false).is_empty());
    }

    #[test]
    fn json_output() {
        let l = r#"{"type":"message","id":"e1","message":{"role":"user","content":"a\"b"}}"#;
        let hits = search_bytes(l.as_bytes(), &Needle::new("b", false), 10);
        assert_eq!(hits_json(&hits), r#"[["e1","user",1,"a\"b",[[2,3]]]]"#);
    }
}
