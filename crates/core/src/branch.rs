//! `createBranchedSession` on entry text: the lines of the new session file, made by splicing
//! field values into the existing lines instead of parsing them into JS objects, spreading
//! and stringifying them (what the reference does, and what made our lazy session slower
//! than it: every entry on the path had to be materialized first).
//!
//! The splice is exact only for lines already in `JSON.stringify` form (see
//! [`crate::json::canonical`]), whose every field keeps its bytes through
//! `JSON.stringify({ ...entry, parentId })`. Anything else on the path (a hand-edited line,
//! a non-string id, an entry that is not an object) makes [`branch_lines`] answer
//! [`Branched::Fallback`], and the JS layer takes the reference's object route.

use crate::entry::{Entry, EntryType, Key};
use crate::json::canonical::{Member, canonical_members};
use crate::tree::Tree;
use std::collections::{HashMap, HashSet};

/// What [`branch_lines`] made of a request.
#[derive(Debug)]
pub enum Branched {
    /// The path is empty (`Entry <id> not found`).
    NotFound,
    /// Not every line qualifies for splicing: use the object route.
    Fallback,
    /// The new file's entry lines (path without labels, re-chained, then recreated labels).
    Lines(Vec<NewLine>),
}

/// A line of the branched session.
#[derive(Debug)]
pub struct NewLine {
    pub text: String,
    /// For a spliced path entry: its index in the old tree and what changed (see
    /// [`Entry::respliced`]); `None` for a recreated label (scanned like any new line).
    pub splice: Option<Splice>,
}

/// How a path entry's line was changed.
#[derive(Debug)]
pub struct Splice {
    pub from: usize,
    pub parent_raw: String,
    pub first_kept_raw: Option<String>,
}

/// One canonical object line with its top-level members located.
struct Fields<'a> {
    text: &'a str,
    members: Vec<Member>,
}

impl<'a> Fields<'a> {
    fn span(&self, key: &str) -> Option<(usize, usize)> {
        self.members
            .iter()
            .find(|m| self.text.get(m.key.0..m.key.1) == Some(key))
            .map(|m| m.value)
    }

    fn raw(&self, key: &str) -> Option<&'a str> {
        self.span(key).and_then(|(s, e)| self.text.get(s..e))
    }
}

/// A canonical object line with its members, or `None`.
fn canonical_fields(text: &str) -> Option<Fields<'_>> {
    Some(Fields {
        text,
        members: canonical_members(text)?,
    })
}

/// `text` with the value at `span` replaced by `value`.
fn replace(text: &str, span: (usize, usize), value: &str) -> String {
    // Exact size: the string becomes a boxed str without a shrinking copy.
    let mut out = String::with_capacity(text.len() - (span.1 - span.0) + value.len());
    out.push_str(&text[..span.0]);
    out.push_str(value);
    out.push_str(&text[span.1..]);
    out
}

/// `text` (a non-empty canonical object) with `"key":value` added as its last member.
fn push_member(text: &str, key: &str, value: &str) -> String {
    let body = &text[..text.len() - 1];
    let sep = if body == "{" { "" } else { "," };
    format!("{body}{sep}\"{key}\":{value}}}")
}

/// The new session's lines for the path to `from` (or the leaf), as the reference's
/// `createBranchedSession` writes them after the header. `new_id(false)` draws a label id
/// candidate (the reference's `randomUUID().slice(0, 8)`), `new_id(true)` the whole-UUID last
/// resort; `None` (the drawing failed) gives up with [`Branched::Fallback`].
pub fn branch_lines(
    tree: &Tree,
    from: Option<&str>,
    mut new_id: impl FnMut(bool) -> Option<String>,
) -> Branched {
    let path = tree.branch(from);
    if path.is_empty() {
        return Branched::NotFound;
    }
    // Texts of the path (borrowed; file-backed ones read in file order through one window).
    let mut reader = crate::entry::WindowReader::default();
    let mut texts: Vec<(usize, &Entry, std::borrow::Cow<'_, str>)> = Vec::with_capacity(path.len());
    for &i in &path {
        let Some(e) = tree.entries.get(i as usize) else {
            return Branched::Fallback;
        };
        match reader.read(&e.text) {
            Ok(t) => texts.push((i as usize, e, t)),
            Err(_) => return Branched::Fallback,
        }
    }

    let mut lines: Vec<NewLine> = Vec::with_capacity(texts.len());
    // Raw id of the last kept entry (`pathParentId`), `null` before the first.
    let mut parent_raw = String::from("null");
    let mut kept_ids: HashSet<Key> = HashSet::new();
    let mut replacement: HashMap<Key, String> = HashMap::new();
    let mut pending_labels: Vec<Key> = Vec::new();
    for (index, e, text) in &texts {
        let Some(f) = canonical_fields(text) else {
            return Branched::Fallback;
        };
        // Keys of non-string ids start with NUL (crates/core/src/entry.rs), and so would the key of a
        // string id that itself starts with NUL: such ids could compare equal here where JS
        // tells them apart, so they take the object route.
        if e.id.starts_with('\0') {
            return Branched::Fallback;
        }
        if e.etype == EntryType::Label {
            pending_labels.push(e.id.clone());
            continue;
        }
        // Kept entries need a string id: it becomes the next entry's parentId.
        let Some(id_raw) = f.raw("id").filter(|r| r.starts_with('"')) else {
            return Branched::Fallback;
        };
        for l in pending_labels.drain(..) {
            replacement.insert(l, id_raw.to_string());
        }
        let parent_span = f.span("parentId");
        let mut line = match parent_span {
            Some(span) => replace(text, span, &parent_raw),
            None => push_member(text, "parentId", &parent_raw),
        };
        let mut first_kept_raw = None;
        // The reference's spread gives a compaction without `firstKeptEntryId` that key, set
        // to `undefined` (the file is the same, the object is not): only the object route
        // makes it.
        if e.etype == EntryType::Compaction && f.span("firstKeptEntryId").is_none() {
            return Branched::Fallback;
        }
        if e.etype == EntryType::Compaction {
            // `firstKeptEntryId === id ? id : replacement.get(firstKeptEntryId) ?? itself`.
            let target = e.first_kept().filter(|k| **k != e.id);
            if let Some(new) = target.and_then(|k| replacement.get(k)) {
                let Some((s0, e0)) = f.span("firstKeptEntryId") else {
                    return Branched::Fallback;
                };
                // Where that value sits in the new line: shifted by the parentId splice when
                // it came after it (an added parentId goes last, after everything).
                let shift = |x: usize| match parent_span {
                    Some((ps, pe)) if x >= pe => x + parent_raw.len() - (pe - ps),
                    _ => x,
                };
                line = replace(&line, (shift(s0), shift(e0)), new);
                first_kept_raw = Some(new.clone());
            }
        }
        kept_ids.insert(e.id.clone());
        lines.push(NewLine {
            text: line,
            splice: Some(Splice {
                from: *index,
                parent_raw: std::mem::replace(&mut parent_raw, id_raw.to_string()),
                first_kept_raw,
            }),
        });
    }

    // Labels of kept entries, in `labelsById` order, re-created after the path.
    // `pathWithoutLabels.at(-1)?.id || null`: every kept id is a string; "" is falsy.
    let mut parent = if parent_raw == "\"\"" {
        "null".to_string()
    } else {
        parent_raw
    };
    let mut taken: HashSet<String> = kept_ids.iter().map(|k| k.to_string()).collect();
    for &li in tree.labels.iter() {
        let Some(le) = tree.entries.get(li) else {
            return Branched::Fallback;
        };
        let Some(target) = le.target() else {
            continue;
        };
        if !kept_ids.contains(target) {
            continue;
        }
        let Ok(text) = le.text.read() else {
            return Branched::Fallback;
        };
        let Some(f) = canonical_fields(&text) else {
            return Branched::Fallback;
        };
        let (Some(target_raw), Some(label_raw)) = (f.raw("targetId"), f.raw("label")) else {
            return Branched::Fallback;
        };
        let mut id = None;
        for _ in 0..100 {
            let Some(c) = new_id(false) else {
                return Branched::Fallback;
            };
            if !taken.contains(&c) {
                id = Some(c);
                break;
            }
        }
        // The reference's last resort: a whole UUID, unchecked.
        let Some(id) = id.or_else(|| new_id(true)) else {
            return Branched::Fallback;
        };
        taken.insert(id.clone());
        let mut quoted = String::with_capacity(id.len() + 2);
        crate::json::value::write_json_string(&mut quoted, &id);
        let mut line = format!("{{\"type\":\"label\",\"id\":{quoted},\"parentId\":{parent}");
        if let Some(ts) = f.raw("timestamp") {
            line.push_str(",\"timestamp\":");
            line.push_str(ts);
        }
        line.push_str(",\"targetId\":");
        line.push_str(target_raw);
        line.push_str(",\"label\":");
        line.push_str(label_raw);
        line.push('}');
        lines.push(NewLine {
            text: line,
            splice: None,
        });
        parent = quoted;
    }
    Branched::Lines(lines)
}

/// A label id candidate like the reference's `randomUUID().slice(0, 8)`.
pub fn short_id() -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(8);
    s
}

/// [`short_id`], or a whole UUID when `full`: the `new_id` of [`branch_lines`] without JS.
pub fn rust_id(full: bool) -> Option<String> {
    Some(if full {
        uuid::Uuid::new_v4().to_string()
    } else {
        short_id()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonl;

    fn tree(lines: &[&str]) -> Tree {
        let text = lines.join("\n") + "\n";
        let mut t = Tree::from_entries(jsonl::parse_bytes(text.as_bytes()).entries);
        t.leaf = t.entries.last().map(|e| e.id.clone());
        t
    }

    fn ids() -> impl FnMut(bool) -> Option<String> {
        let mut n = 0;
        move |_full| {
            n += 1;
            Some(format!("id{n:06}"))
        }
    }

    /// The branched lines for `from`, each spliced entry checked against a fresh scan.
    fn spliced(t: &Tree, from: Option<&str>) -> Vec<String> {
        let Branched::Lines(lines) = branch_lines(t, from, ids()) else {
            panic!("expected lines");
        };
        check_resplice(t, &lines);
        lines.into_iter().map(|l| l.text).collect()
    }

    /// Respliced entries index exactly as a fresh scan of their new text does.
    fn check_resplice(t: &Tree, lines: &[NewLine]) {
        for l in lines {
            let fresh = Entry::parse(l.text.clone(), 0).expect("valid line");
            let Some(s) = &l.splice else { continue };
            let e = t.entries[s.from].respliced(
                l.text.clone(),
                &s.parent_raw,
                s.first_kept_raw.as_deref(),
            );
            assert_eq!(format!("{:?}", e), format!("{:?}", fresh), "{}", l.text);
        }
    }

    const H: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#;

    /// The label `l1` is dropped; the compaction that kept from it keeps from the entry that
    /// took its place (the compaction itself, the next kept entry after the label).
    #[test]
    fn rechains_the_path_and_recreates_labels() {
        let t = tree(&[
            H,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"1","message":{"role":"user","content":"é"}}"#,
            r#"{"type":"label","id":"l1","parentId":"a","timestamp":"2","targetId":"a","label":"first"}"#,
            r#"{"type":"compaction","id":"c","parentId":"l1","timestamp":"3","summary":"s","firstKeptEntryId":"l1","tokensBefore":5}"#,
            r#"{"type":"message","id":"b","parentId":"c","timestamp":"4","message":{"role":"assistant","content":[]}}"#,
        ]);
        assert_eq!(
            spliced(&t, None),
            vec![
                r#"{"type":"message","id":"a","parentId":null,"timestamp":"1","message":{"role":"user","content":"é"}}"#,
                r#"{"type":"compaction","id":"c","parentId":"a","timestamp":"3","summary":"s","firstKeptEntryId":"c","tokensBefore":5}"#,
                r#"{"type":"message","id":"b","parentId":"c","timestamp":"4","message":{"role":"assistant","content":[]}}"#,
                r#"{"type":"label","id":"id000001","parentId":"b","timestamp":"2","targetId":"a","label":"first"}"#,
            ]
        );
    }

    #[test]
    fn respliced_index_fields_match_a_fresh_scan() {
        let t = tree(&[
            H,
            r#"{"type":"message","id":"a","timestamp":"1","message":{"role":"user","content":"x"}}"#,
            r#"{"type":"label","id":"l1","parentId":"a","timestamp":"2","targetId":"a","label":"first"}"#,
            r#"{"type":"model_change","id":"m","parentId":"l1","timestamp":"5","provider":"p","modelId":"x"}"#,
            r#"{"type":"thinking_level_change","id":"t","parentId":"m","timestamp":"6","thinkingLevel":"high"}"#,
            r#"{"type":"message","id":"b","parentId":"t","timestamp":"4","message":{"role":"assistant","provider":"pp","model":"mm","content":[]}}"#,
            r#"{"type":"label","id":"l2","parentId":"b","timestamp":"7","targetId":"b","label":"x"}"#,
            r#"{"type":"compaction","id":"c","timestamp":"3","summary":"s","firstKeptEntryId":"l2","tokensBefore":5,"parentId":"l2"}"#,
            r#"{"type":"compaction","id":"d","firstKeptEntryId":"l1","parentId":"c","timestamp":"3","summary":"s"}"#,
        ]);
        let texts = spliced(&t, Some("d"));
        assert_eq!(
            texts[0],
            r#"{"type":"message","id":"a","timestamp":"1","message":{"role":"user","content":"x"},"parentId":null}"#
        );
        assert_eq!(
            texts[4],
            r#"{"type":"compaction","id":"c","timestamp":"3","summary":"s","firstKeptEntryId":"c","tokensBefore":5,"parentId":"b"}"#
        );
        assert_eq!(
            texts[5],
            r#"{"type":"compaction","id":"d","firstKeptEntryId":"m","parentId":"c","timestamp":"3","summary":"s"}"#
        );
    }

    #[test]
    fn missing_parent_key_is_appended_and_odd_lines_fall_back() {
        let t = tree(&[H, r#"{"type":"custom","id":"a","timestamp":"1"}"#]);
        assert_eq!(
            spliced(&t, None),
            vec![r#"{"type":"custom","id":"a","timestamp":"1","parentId":null}"#]
        );
        let t = tree(&[H, r#"{"type":"custom", "id":"a","parentId":null}"#]);
        assert!(matches!(branch_lines(&t, None, ids()), Branched::Fallback));
        // A string id that starts with NUL shares the key space of non-string ids.
        let t = tree(&[H, r#"{"type":"custom","id":"\u0000n5","parentId":null}"#]);
        assert!(matches!(branch_lines(&t, None, ids()), Branched::Fallback));
        let t = tree(&[H, r#"{"type":"custom","id":7,"parentId":null}"#]);
        assert!(matches!(branch_lines(&t, None, ids()), Branched::Fallback));
        // A compaction without firstKeptEntryId: the reference's object gets the key.
        let t = tree(&[
            H,
            r#"{"type":"compaction","id":"c","parentId":null,"summary":"s"}"#,
        ]);
        assert!(matches!(branch_lines(&t, None, ids()), Branched::Fallback));
        assert!(matches!(
            branch_lines(&t, Some("nope"), ids()),
            Branched::NotFound
        ));
    }
}
