//! The per-line pass of `pi-session check`, in Rust and in parallel over files.
//!
//! lib/cli/check.mjs splits a check into a line scan (decode, split on "\n", blank test
//! with `String#trim`'s whitespace, `JSON.parse`) and an analysis of the parsed entries
//! (header, ids, parents, cycles, targets, compactions). This module does the scan and
//! returns, per file, the records the analysis reads, as JSON:
//!
//! `{"lines": N, "nl": bool, "recs": [rec, ...]}` with one `rec` per non-blank line:
//! - `{"l": line, "bad": "<the line>"}` when the line does not parse;
//! - `{"l": line, "v": light}` otherwise, where `light` keeps only what the analysis
//!   uses: for an object, its `type`, `id`, `parentId`, `targetId`, `label`,
//!   `firstKeptEntryId`, `version` and `cwd` values verbatim, and `retainedTail` reduced
//!   to its shape (an array of `{"role": ""}` for messages and `0` for anything else; a
//!   non-array as a value of the same `typeof`); a non-object as a value of the same
//!   kind (`null`, `[]`, `0`, `""`, `false`).
//!
//! Blank lines are counted in `lines` but have no record; the analysis sees a line
//! number gap and reports them.

use crate::json::scan::{self, Kind, Scanned};
use crate::json::value::{self, JsString, Value};

/// `String.prototype.trim()`'s white space: WhiteSpace and LineTerminator of ECMA-262.
fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{B}' | '\u{C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

const KEPT: [&str; 8] = [
    "type",
    "id",
    "parentId",
    "targetId",
    "label",
    "firstKeptEntryId",
    "version",
    "cwd",
];

fn kind_shape(k: Kind) -> &'static str {
    match k {
        Kind::Null => "null",
        Kind::True | Kind::False => "false",
        Kind::Number => "0",
        Kind::String => "\"\"",
        Kind::Array => "[]",
        Kind::Object => "{}",
    }
}

/// The light record of a line `JSON.parse` accepts (validated and split by the scanner,
/// without building the entry).
fn write_light(sc: &Scanned<'_>, out: &mut String) {
    if sc.kind != Kind::Object {
        out.push_str(kind_shape(sc.kind));
        return;
    }
    out.push('{');
    let mut first = true;
    let mut key = |k: &str, out: &mut String| {
        if !first {
            out.push(',');
        }
        first = false;
        JsString::from_str(k).write_json(out);
        out.push(':');
    };
    for k in KEPT {
        if let Some(raw) = sc.get(k) {
            key(k, out);
            out.push_str(raw);
        }
    }
    if let Some(raw) = sc.get("retainedTail") {
        key("retainedTail", out);
        let parsed = value::parse(raw);
        match (
            scan::kind_of(raw),
            parsed.as_ref().and_then(Value::as_array),
        ) {
            (Kind::Array, Some(items)) => {
                out.push('[');
                for (i, m) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let is_msg = m
                        .as_object()
                        .is_some_and(|o| matches!(o.get("role"), Some(Value::String(_))));
                    out.push_str(if is_msg { "{\"role\":\"\"}" } else { "0" });
                }
                out.push(']');
            }
            (k, _) => out.push_str(kind_shape(k)),
        }
    }
    out.push('}');
}

/// Scan one file's bytes into the record JSON described in the module docs.
pub fn scan_bytes(bytes: &[u8]) -> String {
    let ends_nl = bytes.last() == Some(&b'\n');
    let body = if ends_nl {
        &bytes[..bytes.len() - 1]
    } else {
        bytes
    };
    let mut out = String::from("{\"recs\":[");
    let mut lines = 0usize; // like "text".split("\n") after dropping a final ""
    let mut first = true;
    // "".split("\n") is [""]: an empty file is one (blank) line, as in JS.
    for (i, raw) in body.split(|&b| b == b'\n').enumerate() {
        lines += 1;
        let text = String::from_utf8_lossy(raw);
        if text.chars().all(is_js_space) {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        out.push_str(&format!("{{\"l\":{}", i + 1));
        match scan::scan(&text) {
            Some(sc) => {
                out.push_str(",\"v\":");
                write_light(&sc, &mut out);
            }
            None => {
                out.push_str(",\"bad\":");
                JsString::from_str(&text).write_json(&mut out);
            }
        }
        out.push('}');
    }
    out.push_str(&format!("],\"lines\":{lines},\"nl\":{ends_nl}}}"));
    out
}

/// Scan files in parallel; `None` for a file that could not be read.
pub fn scan_files(paths: &[String], threads: usize) -> Vec<Option<String>> {
    super::par_map_files(paths, threads, scan_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records() {
        let s = scan_bytes(b"{\"type\":\"session\",\"id\":\"s\",\"version\":3,\"x\":[1]}\n\n{bad\n42\n{\"type\":\"compaction\",\"retainedTail\":[{\"role\":\"user\"},7,{\"role\":1}],\"summary\":\"s\"}\n{\"retainedTail\":\"x\"}");
        assert_eq!(
            s,
            r#"{"recs":[{"l":1,"v":{"type":"session","id":"s","version":3}},{"l":3,"bad":"{bad"},{"l":4,"v":0},{"l":5,"v":{"type":"compaction","retainedTail":[{"role":""},0,0]}},{"l":6,"v":{"retainedTail":""}}],"lines":6,"nl":false}"#
        );
    }

    #[test]
    fn blank_is_js_trim() {
        // U+FEFF is trimmed by JS (blank line); U+0085 is not (a malformed line).
        let s = scan_bytes("\u{FEFF} \n\u{85}\n".as_bytes());
        assert_eq!(
            s,
            "{\"recs\":[{\"l\":2,\"bad\":\"\u{85}\"}],\"lines\":2,\"nl\":true}"
        );
        assert_eq!(scan_bytes(b""), r#"{"recs":[],"lines":1,"nl":false}"#);
    }
}
