//! What the index keeps of a session file: per line, the entry's id and parent (for the
//! branch walk) and, for entries with searchable text, one row per text (the texts of
//! `pi-session search`: `crate::check::search::texts`), with the tool names, timestamp and
//! the line's place in the file (snippets and windows are read from the file itself).

use crate::json::value::{self, JsString, Value};

/// Most bytes of one text handed to the full-text index (the rest of a huge tool output
/// is not searchable; snippets still come from the whole text).
pub const MAX_INDEXED_TEXT: usize = 256 * 1024;

/// One entry line.
#[derive(Debug, Clone, Default)]
pub struct Entry {
    pub id: Option<String>,
    pub parent: Option<String>,
    /// Byte offset of the line in the file, and its length (without the newline).
    pub off: u64,
    pub len: u64,
}

/// One searchable text of an entry.
#[derive(Debug, Clone)]
pub struct Row {
    /// Index of its entry in [`Parsed::entries`].
    pub entry: usize,
    pub role: String,
    /// Tool names, space-separated (tool calls of an assistant message, a tool result's tool).
    pub tools: String,
    pub timestamp: Option<String>,
    pub ts_ms: Option<i64>,
    pub text: String,
}

/// The lines of a file from some offset on.
#[derive(Debug, Default)]
pub struct Parsed {
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub entries: Vec<Entry>,
    pub rows: Vec<Row>,
    /// Offset just after the last line taken (complete lines only, see [`parse`]).
    pub end: u64,
}

fn str_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_js_string)
        .map(JsString::to_string_lossy)
}

/// Milliseconds since the epoch of an ISO-8601 UTC timestamp (`YYYY-MM-DDTHH:MM:SS[.fff]Z`,
/// what pi writes); `None` for anything else.
pub fn iso_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || !s.ends_with('Z') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> { s.get(r)?.parse::<i64>().ok() };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let ms = if b.get(19) == Some(&b'.') {
        let frac = s.get(20..s.len() - 1)?;
        let digits: String = frac.chars().take(3).collect();
        let v: i64 = digits.parse().ok()?;
        v * 10i64.pow(3 - digits.len() as u32)
    } else {
        0
    };
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let days = crate::discovery::text::days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi) * 60_000 + se * 1000 + ms)
}

fn tool_names(e: &Value) -> String {
    let mut out: Vec<String> = Vec::new();
    if let Some(m) = e.get("message") {
        if let Some(n) = str_of(m.get("toolName")) {
            out.push(n);
        }
        if let Some(Value::Array(blocks)) = m.get("content") {
            for b in blocks {
                let is_call = b
                    .get("type")
                    .and_then(Value::as_js_string)
                    .is_some_and(|t| *t == "toolCall");
                if is_call && let Some(n) = str_of(b.get("name")) {
                    out.push(n);
                }
            }
        }
    }
    let mut s = String::new();
    for n in out {
        // Names are matched whole: spaces inside a name would split it.
        let n: String = n.chars().filter(|c| !c.is_whitespace()).take(128).collect();
        if n.is_empty() || s.split(' ').any(|x| x == n) {
            continue;
        }
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(&n);
    }
    s
}

fn cut_utf8(s: &mut String, max: usize) {
    if s.len() > max {
        let mut i = max;
        while !s.is_char_boundary(i) {
            i -= 1;
        }
        s.truncate(i);
    }
}

/// Parse the lines of `bytes` (the file from offset `base`). Only complete lines are taken
/// (ending in `\n`), plus a last unterminated line when `take_tail` (a file that stopped
/// changing) and it parses. The header (`type: "session"`) gives the session id and cwd.
pub fn parse(bytes: &[u8], base: u64, take_tail: bool) -> Parsed {
    let mut p = Parsed {
        end: base,
        ..Parsed::default()
    };
    let mut pos = 0usize;
    while pos < bytes.len() {
        let (line, next, complete) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => (&bytes[pos..pos + i], pos + i + 1, true),
            None => (&bytes[pos..], bytes.len(), false),
        };
        let parsed = if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            value::parse(&String::from_utf8_lossy(line))
        };
        if !(complete || take_tail && parsed.is_some()) {
            break;
        }
        let off = base + pos as u64;
        pos = next;
        p.end = base + pos as u64;
        let Some(e) = parsed else { continue };
        if e.as_object().is_none() {
            continue;
        }
        let ty = str_of(e.get("type"));
        if ty.as_deref() == Some("session") {
            if p.session_id.is_none() {
                p.session_id = str_of(e.get("id"));
                p.cwd = str_of(e.get("cwd"));
            }
            continue;
        }
        let idx = p.entries.len();
        p.entries.push(Entry {
            id: str_of(e.get("id")),
            parent: str_of(e.get("parentId")),
            off,
            len: line.len() as u64,
        });
        let texts = crate::check::search::texts(&e);
        if texts.is_empty() {
            continue;
        }
        let timestamp = str_of(e.get("timestamp"));
        let ts_ms = timestamp.as_deref().and_then(iso_ms).or_else(|| {
            match e.get("message").and_then(|m| m.get("timestamp")) {
                Some(Value::Number(n)) if n.is_finite() => Some(*n as i64),
                _ => None,
            }
        });
        let tools = tool_names(&e);
        for (role, units) in texts {
            if units.is_empty() {
                continue;
            }
            let mut text = String::from_utf16_lossy(&units);
            cut_utf8(&mut text, MAX_INDEXED_TEXT);
            p.rows.push(Row {
                entry: idx,
                role,
                tools: tools.clone(),
                timestamp: timestamp.clone(),
                ts_ms,
                text,
            });
        }
    }
    p
}

/// The full searchable texts of one entry line (role, text), for snippets and windows.
pub fn line_texts(line: &[u8]) -> Option<(Value, Vec<(String, String)>)> {
    let e = value::parse(&String::from_utf8_lossy(line))?;
    let t = crate::check::search::texts(&e)
        .into_iter()
        .map(|(r, u)| (r, String::from_utf16_lossy(&u)))
        .collect();
    Some((e, t))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso() {
        assert_eq!(iso_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(iso_ms("2024-03-01T12:00:00.5Z"), Some(1_709_294_400_500));
        assert_eq!(iso_ms("nope"), None);
    }

    #[test]
    fn lines() {
        let f = concat!(
            r#"{"type":"session","id":"s1","cwd":"/p","version":3}"#,
            "\n",
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2024-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"toolCall","name":"bash","arguments":{}}]}}"#,
            "\n",
            r#"{"type":"label","id":"b","parentId":"a"}"#,
            "\n",
            r#"{"type":"message","id":"c","parentId":"b","message":{"role":"user","content":"torn"#
        );
        let p = parse(f.as_bytes(), 0, true);
        assert_eq!(p.session_id.as_deref(), Some("s1"));
        assert_eq!(p.entries.len(), 2);
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].tools, "bash");
        assert_eq!(p.rows[0].text, "hi");
        let tail = f.rfind('\n').map(|i| i + 1).unwrap_or(0) as u64;
        assert_eq!(p.end, tail);
    }
}
