//! Is a JSON text already in the form `JSON.stringify(JSON.parse(text))` gives?
//!
//! Lines that pi wrote are (it writes them with `JSON.stringify`). Knowing it lets Rust
//! rewrite such a line by splicing a field's value instead of going through JS objects
//! (`createBranchedSession`). The check is conservative: `false` only costs the slow path.
//!
//! Canonical means: no whitespace; strings escape exactly what `JSON.stringify` escapes
//! (`\"`, `\\`, `\b\f\n\r\t`, other control characters as lowercase `\u00xx`); numbers as JS
//! prints them; no duplicate keys in an object; and no integer-like keys (V8 orders those
//! first, so their text order may differ from the object's). Lone-surrogate escapes and
//! objects of more than [`MAX_KEYS`] keys are treated as not canonical.

use super::scan::find_special;

/// Objects with more keys are not checked for duplicates (reported not canonical).
const MAX_KEYS: usize = 64;

/// Whether `s` is a JSON text in `JSON.stringify`'s own form (see the module docs).
pub fn is_canonical(s: &str) -> bool {
    walk(s, &mut Vec::new())
}

/// One member of a top-level object: byte ranges of the key (inside the quotes) and of the
/// raw value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    pub key: (usize, usize),
    pub value: (usize, usize),
}

/// The members of `s` if it is a canonical object (one pass: check and locate).
pub fn canonical_members(s: &str) -> Option<Vec<Member>> {
    if !s.starts_with('{') {
        return None;
    }
    let mut members = Vec::new();
    walk(s, &mut members).then_some(members)
}

/// The canonical check; members of a top-level object are recorded in `members`.
fn walk(s: &str, members: &mut Vec<Member>) -> bool {
    let b = s.as_bytes();
    let mut i = 0usize;
    // Open containers: `Some(k)` for an object whose keys are `keys[k..]`, `None` for an
    // array. One flat key list for all open objects: no allocation per object.
    let mut stack: Vec<Option<usize>> = Vec::new();
    let mut keys: Vec<&[u8]> = Vec::new();
    loop {
        // A value starts at `i`.
        match b.get(i) {
            Some(b'{') => {
                i += 1;
                if b.get(i) == Some(&b'}') {
                    i += 1;
                } else {
                    let from = keys.len();
                    let top = stack.is_empty();
                    if !key(b, &mut i, &mut keys, from) {
                        return false;
                    }
                    if top {
                        record(members, &keys, b, i);
                    }
                    stack.push(Some(from));
                    continue;
                }
            }
            Some(b'[') => {
                i += 1;
                if b.get(i) == Some(&b']') {
                    i += 1;
                } else {
                    stack.push(None);
                    continue;
                }
            }
            Some(b'"') => {
                if !string(b, &mut i) {
                    return false;
                }
            }
            Some(b't') => {
                if !literal(b, &mut i, b"true") {
                    return false;
                }
            }
            Some(b'f') => {
                if !literal(b, &mut i, b"false") {
                    return false;
                }
            }
            Some(b'n') => {
                if !literal(b, &mut i, b"null") {
                    return false;
                }
            }
            Some(b'-' | b'0'..=b'9') => {
                if !number(s, &mut i) {
                    return false;
                }
            }
            _ => return false,
        }
        // After a value: close containers, or move to the next element / key.
        loop {
            let depth = stack.len();
            let Some(&top) = stack.last() else {
                return i == b.len();
            };
            if depth == 1
                && let Some(m) = members.last_mut()
                && m.value.1 == usize::MAX
            {
                // The value of a top-level member ends here.
                m.value.1 = i;
            }
            match (b.get(i), top) {
                (Some(b','), Some(from)) => {
                    i += 1;
                    if !key(b, &mut i, &mut keys, from) {
                        return false;
                    }
                    if depth == 1 {
                        record(members, &keys, b, i);
                    }
                    break;
                }
                (Some(b','), None) => {
                    i += 1;
                    break;
                }
                (Some(b'}'), Some(from)) => {
                    i += 1;
                    keys.truncate(from);
                    stack.pop();
                }
                (Some(b']'), None) => {
                    i += 1;
                    stack.pop();
                }
                _ => return false,
            }
        }
    }
}

/// Record the key just read (the last of `keys`); its value starts at `value_start`.
fn record(members: &mut Vec<Member>, keys: &[&[u8]], b: &[u8], value_start: usize) {
    if let Some(k) = keys.last() {
        let start = k.as_ptr() as usize - b.as_ptr() as usize;
        members.push(Member {
            key: (start, start + k.len()),
            value: (value_start, usize::MAX),
        });
    }
}

/// A key and its colon, recorded in `keys` (whose object's keys are `keys[from..]`); false
/// if not canonical or a duplicate.
fn key<'a>(b: &'a [u8], i: &mut usize, keys: &mut Vec<&'a [u8]>, from: usize) -> bool {
    let start = *i;
    if b.get(start) != Some(&b'"') || !string(b, i) {
        return false;
    }
    let k = &b[start + 1..*i - 1];
    // Integer-like keys ("0", "12"): V8 enumerates them first, whatever the text order.
    if !k.is_empty() && k.len() <= 10 && k.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let own = &keys[from..];
    if own.len() >= MAX_KEYS || own.contains(&k) {
        return false;
    }
    keys.push(k);
    if b.get(*i) != Some(&b':') {
        return false;
    }
    *i += 1;
    true
}

/// A string literal at `*i` (its opening quote), with `JSON.stringify`'s escapes only.
fn string(b: &[u8], i: &mut usize) -> bool {
    *i += 1;
    loop {
        let Some(p) = find_special(b, *i) else {
            return false;
        };
        match b[p] {
            b'"' => {
                *i = p + 1;
                return true;
            }
            b'\\' => match b.get(p + 1) {
                Some(b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't') => *i = p + 2,
                Some(b'u') => {
                    // Only control characters without a short form, in lowercase hex.
                    let Some(hex) = b.get(p + 2..p + 6) else {
                        return false;
                    };
                    let ok = hex[0] == b'0'
                        && hex[1] == b'0'
                        && matches!(hex[2], b'0' | b'1')
                        && matches!(hex[3], b'0'..=b'9' | b'a'..=b'f')
                        && !matches!(&hex[2..4], b"08" | b"09" | b"0a" | b"0c" | b"0d");
                    if !ok {
                        return false;
                    }
                    *i = p + 6;
                }
                _ => return false,
            },
            // A raw control character: not even valid JSON.
            _ => return false,
        }
    }
}

fn literal(b: &[u8], i: &mut usize, word: &[u8]) -> bool {
    if b.get(*i..*i + word.len()) == Some(word) {
        *i += word.len();
        true
    } else {
        false
    }
}

/// A number literal, canonical if it is what JS prints for its value.
fn number(s: &str, i: &mut usize) -> bool {
    let b = s.as_bytes();
    let start = *i;
    let mut j = start;
    if b.get(j) == Some(&b'-') {
        j += 1;
    }
    let int_start = j;
    while matches!(b.get(j), Some(b'0'..=b'9')) {
        j += 1;
    }
    let digits = j - int_start;
    let mut plain = true;
    if b.get(j) == Some(&b'.') {
        plain = false;
        j += 1;
        while matches!(b.get(j), Some(b'0'..=b'9')) {
            j += 1;
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        plain = false;
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        while matches!(b.get(j), Some(b'0'..=b'9')) {
            j += 1;
        }
    }
    *i = j;
    let text = &s[start..j];
    if digits == 0 {
        return false;
    }
    // Small integers: canonical unless a leading zero or "-0".
    if plain && digits <= 15 {
        let leading_zero = digits > 1 && b[int_start] == b'0';
        return !leading_zero && text != "-0";
    }
    match text.parse::<f64>() {
        Ok(v) if v.is_finite() => ryu_js::Buffer::new().format_finite(v) == text,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_canonical;

    #[test]
    fn stringify_output_is_canonical() {
        for t in [
            r#"{"type":"message","id":"a1","parentId":null,"n":[1,-2,0.5,1e+21,1.5e-7,12345678901234567000],"t":true,"f":false,"o":{},"a":[]}"#,
            r#"{"s":"tab\there \"q\" \\ \u0001 \u001f é 😀 \u{2028}"}"#,
            r#"{"__proto__":1,"x":{"y":{"z":[{"k":"v"}]}}}"#,
            r#""just a string""#,
            "3",
            "[]",
        ] {
            let t = t.replace("\\u{2028}", "\u{2028}");
            assert!(is_canonical(&t), "{t}");
        }
    }

    #[test]
    fn other_forms_are_not() {
        for t in [
            r#"{"a": 1}"#,
            r#" {"a":1}"#,
            "{\"a\":1}\r",
            r#"{"a":1,"a":2}"#,
            r#"{"b":1,"1":2}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"a":"\u001F"}"#,
            r#"{"a":"\u000a"}"#,
            r#"{"a":"\ud83d\ude00"}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1E5}"#,
            r#"{"a":-0}"#,
            r#"{"a":01}"#,
            r#"{"a":1e400}"#,
            r#"{"a":100000000000000000000000}"#,
            r#"{"a":123456789012345678}"#,
            r#"{"a":1"#,
            r#"{"a":tru}"#,
            "",
        ] {
            assert!(!is_canonical(t), "{t}");
        }
    }

    #[test]
    fn members_of_a_canonical_object() {
        let t = r#"{"a":1,"bb":{"x":[1,{"y":2}]},"c":"s\"","d":[],"e":null}"#;
        let m = super::canonical_members(t).expect("canonical");
        let got: Vec<(&str, &str)> = m
            .iter()
            .map(|m| (&t[m.key.0..m.key.1], &t[m.value.0..m.value.1]))
            .collect();
        assert_eq!(
            got,
            vec![
                ("a", "1"),
                ("bb", r#"{"x":[1,{"y":2}]}"#),
                ("c", r#""s\"""#),
                ("d", "[]"),
                ("e", "null")
            ]
        );
        assert_eq!(super::canonical_members("{}"), Some(vec![]));
        assert_eq!(super::canonical_members("[1]"), None);
        assert_eq!(super::canonical_members(r#"{"a": 1}"#), None);
    }

    #[test]
    fn agrees_with_value_model_canonicalization() {
        // Every text judged canonical must be a fixed point of the exact JS model.
        for t in [
            r#"{"a":[1,2,{"b":"c\n"}],"d":0.1,"e":-3.25e-10}"#,
            r#"{"k":"\u0000\u007f"}"#,
            r#"{"k":"x\u007f"}"#,
        ] {
            if is_canonical(t) {
                assert_eq!(super::super::value::canonicalize(t).as_deref(), Some(t));
            }
        }
    }
}
