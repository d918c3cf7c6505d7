//! Migration of old session files (v1 -> v2 -> v3) with the reference's rules, on entry texts.
//!
//! v1 -> v2 gives every entry an 8-hex id and a linear parent chain and turns a compaction's
//! `firstKeptEntryIndex` into `firstKeptEntryId`; v2 -> v3 renames the `hookMessage` role to
//! `custom`. The output lines are what the reference writes after mutating its parsed objects:
//! `JSON.stringify(entry)` (the value model reproduces key order and number/string formatting).

use crate::json::value::{self, JsString, Object, Value};

pub const CURRENT_VERSION: f64 = 3.0;

/// `Number(x)` for a string, as JS relational comparison coerces it.
fn js_string_to_number(s: &str) -> f64 {
    let t = s.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    if t.is_empty() {
        return 0.0;
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(digits) = t.strip_prefix(prefix) {
            return u64::from_str_radix(digits, radix).map_or(f64::NAN, |v| v as f64);
        }
    }
    // JS decimal literals: digits, one dot, exponent; Rust's parser also takes "inf"/"nan".
    if t.chars()
        .any(|c| c.is_ascii_alphabetic() && c != 'e' && c != 'E')
    {
        return f64::NAN;
    }
    t.parse::<f64>().unwrap_or(f64::NAN)
}

/// `header?.version ?? 1`, as a number.
fn header_version(header: Option<&Object>) -> f64 {
    let Some(h) = header else { return 1.0 };
    match h.get("version") {
        None | Some(Value::Null) => 1.0,
        Some(Value::Number(n)) => *n,
        Some(Value::Bool(b)) => f64::from(u8::from(*b)),
        Some(Value::String(s)) => js_string_to_number(&s.to_string_lossy()),
        Some(Value::Array(a)) if a.is_empty() => 0.0,
        Some(_) => f64::NAN,
    }
}

fn type_is(v: &Value, t: &str) -> bool {
    v.as_object()
        .and_then(|o| o.get("type"))
        .and_then(|t| t.as_str())
        == Some(t)
}

/// A fresh 8-hex id. Like the reference, ids are not checked against each other during
/// migration (its collision set stays empty), so this is a plain random id.
fn fresh_id() -> String {
    let mut s = uuid::Uuid::new_v4().simple().to_string();
    s.truncate(8);
    s
}

/// Whether a header text (the first `type: "session"` entry) needs migration.
pub fn header_needs_migration(header_text: Option<&str>) -> bool {
    let parsed = header_text.and_then(value::parse);
    header_version(parsed.as_ref().and_then(|v| v.as_object())) < CURRENT_VERSION
}

/// Migrate the given entry texts. `None` if the file is current (no rewrite needed).
pub fn migrate_texts(texts: &[String]) -> Option<Vec<String>> {
    let mut entries: Vec<Value> = texts
        .iter()
        .map(|t| value::parse(t).unwrap_or(Value::Null))
        .collect();
    let header = entries
        .iter()
        .find(|e| type_is(e, "session"))
        .and_then(|e| e.as_object());
    let version = header_version(header);
    if version >= CURRENT_VERSION {
        return None;
    }
    if version < 2.0 {
        to_v2(&mut entries);
    }
    if version < 3.0 {
        to_v3(&mut entries);
    }
    Some(
        texts
            .iter()
            .zip(&entries)
            .map(|(t, v)| match v {
                // Values JSON.stringify cannot change (non-objects) keep their text.
                Value::Object(_) => v.to_json(),
                _ => t.clone(),
            })
            .collect(),
    )
}

fn to_v2(entries: &mut [Value]) {
    let mut prev: Option<String> = None;
    for i in 0..entries.len() {
        if type_is(&entries[i], "session") {
            if let Some(o) = entries[i].as_object_mut() {
                o.set("version", Value::Number(2.0));
            }
            continue;
        }
        let id = fresh_id();
        // A compaction's firstKeptEntryIndex points into the same (partly migrated) list.
        let kept: Option<Option<Value>> = entries[i].as_object().and_then(|o| {
            if o.get("type").and_then(|t| t.as_str()) != Some("compaction") {
                return None;
            }
            let idx = o.get("firstKeptEntryIndex")?.as_f64()?;
            let target = if idx >= 0.0 && idx.fract() == 0.0 {
                entries.get(idx as usize)
            } else {
                None
            };
            Some(
                match target {
                    Some(t) if !type_is(t, "session") && !matches!(t, Value::Null) => {
                        // `target.id`: undefined for a later entry without an id yet.
                        Some(t.as_object().and_then(|o| o.get("id")).cloned())
                    }
                    _ => None,
                }
                .flatten(),
            )
        });
        let has_numeric_index = entries[i]
            .as_object()
            .and_then(|o| o.get("firstKeptEntryIndex"))
            .is_some_and(|v| v.as_f64().is_some());
        if let Some(o) = entries[i].as_object_mut() {
            o.set("id", Value::String(JsString::from_str(&id)));
            o.set(
                "parentId",
                prev.as_deref()
                    .map_or(Value::Null, |p| Value::String(JsString::from_str(p))),
            );
            if has_numeric_index && o.get("type").and_then(|t| t.as_str()) == Some("compaction") {
                match kept.flatten() {
                    Some(v) => o.set("firstKeptEntryId", v),
                    None => {
                        // Only assigned when the target exists and is not the header.
                    }
                }
                o.remove("firstKeptEntryIndex");
            }
        }
        prev = Some(id);
    }
}

fn to_v3(entries: &mut [Value]) {
    for e in entries.iter_mut() {
        if type_is(e, "session") {
            if let Some(o) = e.as_object_mut() {
                o.set("version", Value::Number(3.0));
            }
            continue;
        }
        if !type_is(e, "message") {
            continue;
        }
        if let Some(m) = e
            .as_object_mut()
            .and_then(|o| o.get_mut("message"))
            .and_then(|m| m.as_object_mut())
            && m.get("role").and_then(|r| r.as_str()) == Some("hookMessage")
        {
            m.set("role", Value::String(JsString::from_str("custom")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn current_files_are_left_alone() {
        assert!(migrate_texts(&lines(&[r#"{"type":"session","version":3,"id":"s"}"#])).is_none());
        assert!(migrate_texts(&lines(&[r#"{"type":"session","version":"4","id":"s"}"#])).is_none());
    }

    #[test]
    fn v1_gets_ids_chain_and_first_kept_id() {
        let out = migrate_texts(&lines(&[
            r#"{"type":"session","id":"s","cwd":"/w"}"#,
            r#"{"type":"message","message":{"role":"user","content":"a"}}"#,
            r#"{"type":"message","message":{"role":"hookMessage","content":"h"}}"#,
            r#"{"type":"compaction","summary":"x","firstKeptEntryIndex":1,"tokensBefore":1}"#,
            r#"{"type":"compaction","summary":"y","firstKeptEntryIndex":0}"#,
        ]))
        .expect("migrated");
        assert_eq!(
            out[0],
            r#"{"type":"session","id":"s","cwd":"/w","version":3}"#
        );
        let e1 = value::parse(&out[1]).expect("json");
        let id1 = e1
            .get("id")
            .and_then(|v| v.as_str())
            .expect("id")
            .to_string();
        assert_eq!(id1.len(), 8);
        assert!(out[1].ends_with(&format!(r#""id":"{id1}","parentId":null}}"#)));
        assert!(out[2].contains(r#""role":"custom""#));
        let e3 = value::parse(&out[3]).expect("json");
        assert_eq!(
            e3.get("firstKeptEntryId").and_then(|v| v.as_str()),
            Some(id1.as_str())
        );
        assert!(!out[3].contains("firstKeptEntryIndex"));
        // Index 0 is the header: no firstKeptEntryId, the index is still removed.
        assert!(!out[4].contains("firstKeptEntry"));
    }

    #[test]
    fn version_coercion_like_js() {
        assert!(js_string_to_number("abc").is_nan());
        assert_eq!(js_string_to_number(" 2 "), 2.0);
        assert_eq!(js_string_to_number("0x10"), 16.0);
        assert_eq!(js_string_to_number(""), 0.0);
        assert!(js_string_to_number("inf").is_nan());
    }
}
