//! Resuming a cached record over the lines appended to its file since.
//!
//! pi appends to the session it is working in, so between two listings the active
//! sessions have grown and nothing else has changed. Their cached record describes the
//! first `size` bytes; when those bytes are still there, only the lines after them are
//! read, and their per-file state is merged into the record: the same record a full pass
//! over the whole file gives (`buildSessionInfo` is a left fold over the lines, and each of
//! its fields is a max, a sum, a first, a latest or a join).
//!
//! "Still there" is checked with a fingerprint of the prefix taken when the record was
//! made (its size, first 4 KiB and last 4 KiB), on the same inode, and only for a prefix
//! that ended with a newline (a record never covers half a line). A file rewritten in
//! place with a new beginning or end is re-read whole.

use super::text::{self, Text};
use super::{Builder, First, Invalid, Record, Texts, for_each_line};
use crate::entry::read_exact_at;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

/// Bytes at each end of the prefix that the fingerprint covers.
const EDGE: u64 = 4096;

/// FNV-1a, 64-bit: stable across builds (the index outlives the process that wrote it).
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Fingerprint of the first `size` bytes of `file`, or `None` when they cannot be resumed
/// from (empty, unreadable, or not ending with a newline).
pub fn fingerprint(file: &File, size: u64) -> Option<u64> {
    if size == 0 {
        return None;
    }
    let head_len = size.min(EDGE);
    let tail_at = size.saturating_sub(EDGE);
    let mut head = vec![0u8; usize::try_from(head_len).ok()?];
    let mut tail = vec![0u8; usize::try_from(size - tail_at).ok()?];
    read_exact_at(file, &mut head, 0).ok()?;
    read_exact_at(file, &mut tail, tail_at).ok()?;
    if tail.last() != Some(&b'\n') {
        return None;
    }
    let h = fnv1a(0xcbf2_9ce4_8422_2325, &size.to_le_bytes());
    Some(fnv1a(fnv1a(h, &head), &tail))
}

/// The record of the whole file from `old`, the record of its first `from` bytes, and the
/// lines after them (up to `limit` bytes of file in all, when given).
pub fn extract_after(
    mut file: File,
    old: &Record,
    from: u64,
    limit: Option<u64>,
    abort: &dyn Fn() -> bool,
) -> Result<Record, Invalid> {
    file.seek(SeekFrom::Start(from)).map_err(|_| Invalid)?;
    let mut b = Builder {
        // The header was in the prefix: every line from here on is an entry.
        header: Some(super::HeaderRaw::default()),
        keep_text: old.texts.is_some(),
        ..Builder::default()
    };
    let mut each = |bytes: &[u8]| {
        let line = String::from_utf8_lossy(bytes);
        b.line(&line).map(|_| true)
    };
    match limit {
        Some(n) => for_each_line(file.take(n.saturating_sub(from)), &mut each, abort)?,
        None => for_each_line(file, &mut each, abort)?,
    }
    Ok(merge(old, b))
}

fn is_empty(t: &Text) -> bool {
    match t {
        Text::Utf8(s) => s.is_empty(),
        Text::Utf16(u) => u.is_empty(),
    }
}

fn utf16(t: &Text) -> Vec<u16> {
    match t {
        Text::Utf8(s) => s.encode_utf16().collect(),
        Text::Utf16(u) => u.clone(),
    }
}

/// `a + " " + b`, as JS joins the texts.
fn join(a: &Text, b: Text) -> Text {
    match (a, b) {
        (Text::Utf8(x), Text::Utf8(y)) => Text::Utf8(format!("{x} {y}")),
        (a, b) => {
            let mut u = utf16(a);
            u.push(u16::from(b' '));
            u.extend(utf16(&b));
            Text::Utf16(u)
        }
    }
}

/// Fold the state of the appended lines (`b`) into the record of the prefix.
fn merge(old: &Record, b: Builder) -> Record {
    let texts = match (&old.texts, b.keep_text) {
        (Some(t), true) => Some(merge_texts(t, &b)),
        _ => None,
    };
    let name = if b.name_seen {
        b.name
    } else {
        old.name.clone()
    };
    // Deferred timestamps: the prefix's, then the new ones not among them (first-seen order).
    let mut deferred: Vec<String> = old
        .deferred
        .as_deref()
        .map(|d| {
            text::array_elements(d)
                .into_iter()
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    for d in b.deferred {
        if !deferred.contains(&d) {
            deferred.push(d);
        }
    }
    let all_units = match (old.all_units, b.all_units) {
        (0, n) | (n, 0) => n,
        (a, n) => a + 1 + n,
    };
    Record {
        header: old.header.clone(),
        name,
        count: old.count + b.count,
        activity: old.activity.max(b.activity),
        deferred: (!deferred.is_empty()).then(|| format!("[{}]", deferred.join(","))),
        first_units: if old.first_units > 0 {
            old.first_units
        } else {
            b.first_units
        },
        all_units,
        texts,
    }
}

/// The texts of the prefix followed by those of the appended lines.
fn merge_texts(old: &Texts, b: &Builder) -> Texts {
    let old_first_empty = match &old.first {
        First::Text(t) => is_empty(t),
        First::Prefix(n) => *n == 0,
    };
    let first = if !old_first_empty || b.first_units == 0 {
        old.first.clone()
    } else if b.first_prefix && is_empty(&old.all) {
        First::Prefix(b.first_units)
    } else if b.first_prefix {
        First::Text(Text::decode(&b.all).prefix(b.first_units))
    } else {
        First::Text(Text::decode(&b.first))
    };
    let all = if b.all.is_empty() {
        old.all.clone()
    } else if is_empty(&old.all) {
        Text::decode(&b.all)
    } else {
        join(&old.all, Text::decode(&b.all))
    };
    Texts { first, all }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::discovery::{extract_file, extract_from, extract_texts, extract_texts_from};
    use std::io::Write;

    /// The record without its texts, and `firstMessage` / `allMessagesText` as JS sees
    /// them (UTF-16); their lengths are the record's.
    fn resolved(r: &Record) -> (Record, Vec<u16>, Vec<u16>) {
        let t = r.texts.as_ref().expect("a pass that keeps the texts");
        let all = utf16(&t.all);
        let first = match &t.first {
            First::Prefix(n) => all[..*n as usize].to_vec(),
            First::Text(t) => utf16(t),
        };
        assert_eq!(first.len() as u64, r.first_units, "{r:?}");
        assert_eq!(all.len() as u64, r.all_units, "{r:?}");
        let mut r = r.clone();
        r.texts = None;
        (r, first, all)
    }

    fn lines() -> Vec<String> {
        let m = |role: &str, content: &str, ts: &str| {
            format!(
                r#"{{"type":"message","id":"x","parentId":null,"timestamp":{ts},"message":{{"role":"{role}","content":{content}}}}}"#
            )
        };
        vec![
            r#"{"type":"session","version":3,"id":"s1","timestamp":"2024-01-01T00:00:00.000Z","cwd":"/p"}"#.into(),
            m("assistant", r#""assistant first""#, r#""2024-01-02T00:00:00.000Z""#),
            r#"{"type":"session_info","name":" named "}"#.into(),
            m("toolResult", r#"[{"type":"text","text":"tool"}]"#, r#""2024-01-03T00:00:00.000Z""#),
            m("user", r#"[{"type":"text","text":"lone \ud83d and \u00e9"},{"type":"image"},{"type":"text","text":"two"}]"#, r#""2024/03/04 10:00""#),
            "{not json".into(),
            m("user", r#""q2""#, r#""2024/03/04 10:00""#),
            r#"{"type":"session_info","name":null}"#.into(),
            m("assistant", r#"[{"type":"text","text":"a2 \n"}]"#, "1700000000123"),
            m("user", r#""later""#, r#""not a date""#),
            r#"{"type":"session_info","name":"again"}"#.into(),
            m("user", r#""after the name""#, r#""2024-01-05T00:00:00.000Z""#),
            // Cleared at the end: a resumed record must not keep the prefix's name.
            r#"{"type":"session_info"}"#.into(),
        ]
    }

    fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.join(name);
        let mut f = File::create(&p).expect("create test file");
        f.write_all(text.as_bytes()).expect("write test file");
        p
    }

    /// For every cut at a line end: the prefix's record resumed over the rest equals the
    /// record of a full pass (also when the first user message only comes after the cut,
    /// names are set and cleared on either side, and texts hold lone surrogates).
    #[test]
    fn resumed_record_equals_a_full_pass_at_every_cut() {
        let dir = std::env::temp_dir().join(format!("psn-resume-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let all = lines();
        for skip_user in [false, true] {
            let ls: Vec<&String> = all
                .iter()
                .filter(|l| !(skip_user && l.contains(r#""role":"user""#) && l.contains("lone")))
                .collect();
            let text: String = ls.iter().map(|l| format!("{l}\n")).collect();
            let p = write(&dir, "s.jsonl", &text);
            let full = extract_texts_from(File::open(&p).expect("open"), &|| false)
                .expect("valid")
                .expect("a session");
            // A listing's pass keeps only the lengths: the same record otherwise.
            let meta = extract_from(File::open(&p).expect("open"), &|| false)
                .expect("valid")
                .expect("a session");
            assert_eq!(meta, resolved(&full).0);
            let mut cut = 0u64;
            for l in &ls {
                cut += l.len() as u64 + 1;
                let prefix = extract_texts(File::open(&p).expect("open"), Some(cut), &|| false)
                    .expect("valid")
                    .expect("a session");
                let fp = fingerprint(&File::open(&p).expect("open"), cut);
                assert!(fp.is_some(), "a prefix ending at a newline is resumable");
                let resumed =
                    extract_after(File::open(&p).expect("open"), &prefix, cut, None, &|| false)
                        .expect("valid");
                assert_eq!(resolved(&resumed), resolved(&full), "cut at {cut}");
                // Without texts (as a listing resumes): the same lengths.
                let meta_prefix = extract_file(File::open(&p).expect("open"), Some(cut), &|| false)
                    .expect("valid")
                    .expect("a session");
                let meta_resumed = extract_after(
                    File::open(&p).expect("open"),
                    &meta_prefix,
                    cut,
                    None,
                    &|| false,
                )
                .expect("valid");
                assert_eq!(meta_resumed, meta, "cut at {cut}, lengths only");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn an_invalid_appended_line_invalidates_the_file_as_a_full_pass_does() {
        let dir = std::env::temp_dir().join(format!("psn-resume-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let head = format!("{}\n", lines()[0]);
        let bad = r#"{"type":"message","message":null}"#;
        let p = write(&dir, "s.jsonl", &format!("{head}{bad}\n"));
        let prefix = extract_file(
            File::open(&p).expect("open"),
            Some(head.len() as u64),
            &|| false,
        )
        .expect("valid")
        .expect("a session");
        assert!(extract_from(File::open(&p).expect("open"), &|| false).is_err());
        assert!(
            extract_after(
                File::open(&p).expect("open"),
                &prefix,
                head.len() as u64,
                None,
                &|| false
            )
            .is_err()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn fingerprint_sees_changed_edges_and_refuses_half_lines() {
        let dir = std::env::temp_dir().join(format!("psn-resume-fp-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let body = "x".repeat(10_000);
        let p = write(&dir, "a.jsonl", &format!("{{\"a\":\"{body}\"}}\n"));
        let n = std::fs::metadata(&p).expect("stat").len();
        let fp = fingerprint(&File::open(&p).expect("open"), n);
        assert!(fp.is_some());
        assert_eq!(
            fingerprint(&File::open(&p).expect("open"), n - 1),
            None,
            "half a line"
        );
        assert_eq!(fingerprint(&File::open(&p).expect("open"), 0), None);
        // Same size, a changed first or last byte: another fingerprint.
        write(&dir, "a.jsonl", &format!("{{\"b\":\"{body}\"}}\n"));
        assert_ne!(fingerprint(&File::open(&p).expect("open"), n), fp);
        write(&dir, "a.jsonl", &format!("{{\"a\":\"{body}\"]\n"));
        assert_ne!(fingerprint(&File::open(&p).expect("open"), n), fp);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
