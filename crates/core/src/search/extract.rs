//! What the index keeps of a session file: per line, the entry's id and parent (for the
//! branch walk) and, for entries with searchable text, one row per text ([`entry_texts`]),
//! with the tool names, timestamp and the line's place in the file (snippets and windows
//! are read from the file itself).
//!
//! The places a fact can live in, and which are indexed ([`entry_texts`], role in brackets):
//! - a user message's text (`user`), an assistant message's text blocks (`assistant`), a
//!   tool result's text blocks (`toolResult`), a `!` command and its output (`bash`), an
//!   extension's `custom_message` (`custom:<type>`), a compaction or branch summary
//!   (`compaction`, `branch_summary`): the texts of the literal scan
//!   (`crate::check::search::texts`);
//! - each tool call of an assistant message (`toolCall`, one text per call): the tool's
//!   name, then every string in its arguments in their order (paths, commands, patterns,
//!   the old and new text of an edit, a written file's content), one per line; argument
//!   names, numbers and booleans are left out (they are what every call has);
//! - a label set on an entry (`label`) and a session's name (`session_info`).
//!
//! The index reads a line with `read_line`: the scanner validates it and only the strings
//! kept are decoded; [`entry_texts`] (on a parsed value) says the same and is what a test
//! holds it to.
//!
//! Not indexed: thinking blocks (hidden in pi's view, often longer than the answer, and
//! not what a user saw), images, a tool result's `details` (the edit's diff repeats the
//! call's old and new text), `custom` entries (extension state, not shown), model and
//! thinking-level changes, `context_edit` replacements (the edited message stays indexed as
//! written).

use crate::json::scan;
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
    /// Index of the text in the entry's [`entry_texts`].
    pub part: usize,
    pub role: String,
    /// Tool names, space-separated (tool calls of an assistant message, a tool result's
    /// tool, a tool call's tool).
    pub tools: String,
    pub timestamp: Option<String>,
    pub ts_ms: Option<i64>,
    pub text: String,
    /// Tokens in `text` (set by the indexer when it replaces `text` by its index text).
    pub count: usize,
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

impl Parsed {
    /// Append the lines parsed after these (the header's id and cwd: the first one's).
    pub fn extend(&mut self, next: Parsed) {
        let base = self.entries.len();
        if self.session_id.is_none() && next.session_id.is_some() {
            self.session_id = next.session_id;
            self.cwd = next.cwd;
        }
        self.entries.extend(next.entries);
        self.rows.extend(next.rows.into_iter().map(|mut r| {
            r.entry += base;
            r
        }));
        self.end = next.end;
    }
}

fn str_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_js_string)
        .map(JsString::to_string_lossy)
}

/// Milliseconds since the epoch of an ISO timestamp (what pi writes: `…SS.mmmZ`), as
/// `Date.parse` reads it; `None` for other forms.
pub fn iso_ms(s: &str) -> Option<i64> {
    crate::discovery::text::iso_ms_str(s).map(|v| v as i64)
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
        let n = clean_name(&n);
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

/// One text of an entry (see the module's list).
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    pub role: String,
    /// Tool names, space-separated.
    pub tools: String,
    pub text: String,
}

/// The text of one tool call: its name, then the strings of its arguments in order, one
/// per line (an explicit stack: arguments nest as deep as the model wrote them).
fn call_text(name: &str, args: Option<&Value>) -> String {
    let mut out = String::from(name);
    let mut stack: Vec<&Value> = args.into_iter().collect();
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(&s.to_string_lossy());
                if out.len() > MAX_INDEXED_TEXT {
                    break;
                }
            }
            // Pushed in reverse, so taken in order.
            Value::Array(items) => stack.extend(items.iter().rev()),
            Value::Object(o) => {
                let vals: Vec<&Value> = o.iter().map(|(_, v)| v).collect();
                stack.extend(vals.into_iter().rev());
            }
            _ => {}
        }
    }
    out
}

/// The searchable texts of one parsed entry, in a fixed order (a row keeps its index).
pub fn entry_texts(e: &Value) -> Vec<Text> {
    let tools = tool_names(e);
    let mut out: Vec<Text> = crate::check::search::texts(e)
        .into_iter()
        .map(|(role, units)| Text {
            role,
            tools: tools.clone(),
            text: String::from_utf16_lossy(&units),
        })
        .collect();
    let ty = str_of(e.get("type"));
    match ty.as_deref() {
        Some("message") => {
            let Some(m) = e.get("message") else {
                return out;
            };
            let assistant = m
                .get("role")
                .and_then(Value::as_js_string)
                .is_some_and(|r| *r == "assistant");
            if let (true, Some(Value::Array(blocks))) = (assistant, m.get("content")) {
                for b in blocks {
                    let is_call = b
                        .get("type")
                        .and_then(Value::as_js_string)
                        .is_some_and(|t| *t == "toolCall");
                    if !is_call {
                        continue;
                    }
                    let name = str_of(b.get("name")).unwrap_or_default();
                    out.push(Text {
                        role: "toolCall".into(),
                        tools: clean_name(&name),
                        text: call_text(&name, b.get("arguments")),
                    });
                }
            }
        }
        Some("label") => {
            if let Some(l) = str_of(e.get("label")) {
                out.push(Text {
                    role: "label".into(),
                    tools: String::new(),
                    text: l,
                });
            }
        }
        Some("session_info") => {
            if let Some(n) = str_of(e.get("name")) {
                out.push(Text {
                    role: "session_info".into(),
                    tools: String::new(),
                    text: n,
                });
            }
        }
        _ => {}
    }
    out
}

/// A tool name as the `tools` column keeps it: matched whole, so no spaces, and bounded.
fn clean_name(n: &str) -> String {
    n.chars().filter(|c| !c.is_whitespace()).take(128).collect()
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

/// Bytes parsed between two calls of [`parse_watched`]'s `keep_going`.
pub const WATCH_EVERY: usize = 256 << 10;

/// Parse the lines of `bytes` (the file from offset `base`). Only complete lines are taken
/// (ending in `\n`), plus a last unterminated line when `take_tail` (a file that stopped
/// changing) and it parses. The header (`type: "session"`) gives the session id and cwd.
pub fn parse(bytes: &[u8], base: u64, take_tail: bool) -> Parsed {
    parse_watched(bytes, base, take_tail, &|_| true).unwrap_or_default()
}

/// [`parse`], calling `keep_going(bytes parsed so far)` every [`WATCH_EVERY`] bytes: a large
/// file reports how far it is, and stops (None) as soon as `keep_going` says so.
pub fn parse_watched(
    bytes: &[u8],
    base: u64,
    take_tail: bool,
    keep_going: &dyn Fn(usize) -> bool,
) -> Option<Parsed> {
    let mut p = Parsed {
        end: base,
        ..Parsed::default()
    };
    let mut pos = 0usize;
    let mut next_watch = WATCH_EVERY;
    while pos < bytes.len() {
        if pos >= next_watch {
            if !keep_going(pos) {
                return None;
            }
            next_watch = pos + WATCH_EVERY;
        }
        let (line, next, complete) = match memchr::memchr(b'\n', &bytes[pos..]) {
            Some(i) => (&bytes[pos..pos + i], pos + i + 1, true),
            None => (&bytes[pos..], bytes.len(), false),
        };
        // Valid UTF-8 (nearly every line) is checked by the fast validator, not the lossy one.
        let text = match std::str::from_utf8(line) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => String::from_utf8_lossy(line),
        };
        let parsed = if line.iter().all(u8::is_ascii_whitespace) {
            None
        } else {
            read_line(&text)
        };
        if !(complete || take_tail && parsed.is_some()) {
            break;
        }
        let off = base + pos as u64;
        pos = next;
        p.end = base + pos as u64;
        let Some(e) = parsed else { continue };
        let e = match e {
            LineRead::NotObject => continue,
            LineRead::Header { id, cwd } => {
                if p.session_id.is_none() {
                    p.session_id = id;
                    p.cwd = cwd;
                }
                continue;
            }
            LineRead::Entry(e) => e,
        };
        let idx = p.entries.len();
        p.entries.push(Entry {
            id: e.id,
            parent: e.parent,
            off,
            len: line.len() as u64,
        });
        if e.texts.is_empty() {
            continue;
        }
        for (part, t) in e.texts.into_iter().enumerate() {
            if t.text.is_empty() {
                continue;
            }
            let mut text = t.text;
            cut_utf8(&mut text, MAX_INDEXED_TEXT);
            p.rows.push(Row {
                entry: idx,
                part,
                role: t.role,
                tools: t.tools,
                timestamp: e.timestamp.clone(),
                ts_ms: e.ts_ms,
                text,
                count: 0,
            });
        }
    }
    Some(p)
}

/// What [`read_line`] found on a line that `JSON.parse` accepts.
#[derive(Debug, PartialEq)]
enum LineRead {
    /// Not an object: no entry.
    NotObject,
    /// A session header (`type: "session"`).
    Header {
        id: Option<String>,
        cwd: Option<String>,
    },
    Entry(LineEntry),
}

/// An entry line as the index keeps it.
#[derive(Debug, PartialEq)]
struct LineEntry {
    id: Option<String>,
    parent: Option<String>,
    timestamp: Option<String>,
    ts_ms: Option<i64>,
    /// [`entry_texts`] of the line.
    texts: Vec<Text>,
}

/// A raw JSON string value, decoded (lone surrogates as U+FFFD, as
/// `JsString::to_string_lossy`); `None` for any other kind of value.
fn raw_str(raw: Option<&str>) -> Option<String> {
    let raw = raw?;
    if scan::kind_of(raw) != scan::Kind::String {
        return None;
    }
    scan::decode_str(raw)
}

/// Whether a raw JSON value is the string `want`.
fn raw_is(raw: Option<&str>, want: &str) -> bool {
    let Some(raw) = raw else { return false };
    if raw.len() < 2 || !raw.starts_with('"') || !raw.ends_with('"') {
        return false;
    }
    let Some(body) = raw.get(1..raw.len() - 1) else {
        return false;
    };
    if !body.contains('\\') {
        return body == want;
    }
    scan::decode_str(raw).is_some_and(|s| s == want)
}

/// One line read for the index straight from its JSON text, the same as [`entry_texts`]
/// and the header and entry fields on the parsed value, without building it: the line is
/// validated by the scanner (`JSON.parse`'s rules), and only the strings the index keeps
/// are decoded (a thinking block, an image or a tool result's `details` is skipped over).
/// `None` when `JSON.parse` would throw.
fn read_line(line: &str) -> Option<LineRead> {
    let sc = scan::scan_with(line, Some("message"))?;
    if sc.kind != scan::Kind::Object {
        return Some(LineRead::NotObject);
    }
    let ty = sc.get("type");
    if raw_is(ty, "session") {
        return Some(LineRead::Header {
            id: raw_str(sc.get("id")),
            cwd: raw_str(sc.get("cwd")),
        });
    }
    // The message's fields, when `message` (its last occurrence) is an object.
    let msg = sc.get("message");
    let msg_obj = msg.is_some_and(|m| scan::kind_of(m) == scan::Kind::Object);
    let mget = |k: &str| if msg_obj { sc.get_nested(k) } else { None };
    let timestamp = raw_str(sc.get("timestamp"));
    let ts_ms = timestamp.as_deref().and_then(iso_ms).or_else(|| {
        let raw = mget("timestamp")?;
        if scan::kind_of(raw) != scan::Kind::Number {
            return None;
        }
        raw.parse::<f64>()
            .ok()
            .filter(|n| n.is_finite())
            .map(|n| n as i64)
    });
    let mut texts = Vec::new();
    // The message's content blocks: joined text blocks, tool call names and texts.
    let role = mget("role");
    let content = mget("content");
    let mut tool_list: Vec<String> = Vec::new();
    if let Some(n) = raw_str(mget("toolName")) {
        tool_list.push(n);
    }
    let assistant = raw_is(role, "assistant");
    let mut calls: Vec<(String, Option<&str>)> = Vec::new();
    let mut joined: Option<String> = None;
    let message_text_role =
        raw_is(ty, "message") && (raw_is(role, "user") || assistant || raw_is(role, "toolResult"));
    if let Some(c) = content {
        match scan::kind_of(c) {
            scan::Kind::String if message_text_role => joined = raw_str(Some(c)),
            scan::Kind::Array => {
                let mut out = String::new();
                let mut first = true;
                for b in scan::array_items(c).unwrap_or_default() {
                    if scan::kind_of(b) != scan::Kind::Object {
                        continue;
                    }
                    let Some(bs) = scan::scan_trusted(b, None) else {
                        continue;
                    };
                    let bty = bs.get("type");
                    if raw_is(bty, "text") {
                        if message_text_role && let Some(t) = raw_str(bs.get("text")) {
                            if !first {
                                out.push('\n');
                            }
                            first = false;
                            out.push_str(&t);
                        }
                    } else if raw_is(bty, "toolCall") {
                        let name = raw_str(bs.get("name"));
                        if let Some(n) = &name {
                            tool_list.push(n.clone());
                        }
                        if assistant {
                            calls.push((name.unwrap_or_default(), bs.get("arguments")));
                        }
                    }
                }
                joined = Some(out);
            }
            _ => {}
        }
    }
    let mut tools = String::new();
    for n in tool_list {
        let n = clean_name(&n);
        if n.is_empty() || tools.split(' ').any(|x| x == n) {
            continue;
        }
        if !tools.is_empty() {
            tools.push(' ');
        }
        tools.push_str(&n);
    }
    // `crate::check::search::texts`, then the tool calls, a label, a session name.
    if raw_is(ty, "message") {
        if msg_obj {
            if message_text_role {
                texts.push(Text {
                    role: raw_str(role).unwrap_or_default(),
                    tools: tools.clone(),
                    text: joined.unwrap_or_default(),
                });
            } else if raw_is(role, "bashExecution") {
                let mut t = raw_str(mget("command")).unwrap_or_default();
                t.push('\n');
                t.push_str(&raw_str(mget("output")).unwrap_or_default());
                texts.push(Text {
                    role: "bash".into(),
                    tools: tools.clone(),
                    text: t,
                });
            }
        }
        for (name, args) in calls {
            let args = args.and_then(value::parse);
            texts.push(Text {
                role: "toolCall".into(),
                tools: clean_name(&name),
                text: call_text(&name, args.as_ref()),
            });
        }
    } else if raw_is(ty, "custom_message") {
        let ct = raw_str(sc.get("customType")).unwrap_or_else(|| "?".into());
        let c = sc.get("content");
        let text = match c.map(scan::kind_of) {
            Some(scan::Kind::String) => raw_str(c),
            Some(scan::Kind::Array) => {
                let mut out = String::new();
                let mut first = true;
                for b in c.and_then(scan::array_items).unwrap_or_default() {
                    if scan::kind_of(b) != scan::Kind::Object {
                        continue;
                    }
                    let Some(bs) = scan::scan_trusted(b, None) else {
                        continue;
                    };
                    if raw_is(bs.get("type"), "text")
                        && let Some(t) = raw_str(bs.get("text"))
                    {
                        if !first {
                            out.push('\n');
                        }
                        first = false;
                        out.push_str(&t);
                    }
                }
                Some(out)
            }
            _ => None,
        };
        texts.push(Text {
            role: format!("custom:{ct}"),
            tools: tools.clone(),
            text: text.unwrap_or_default(),
        });
    } else if raw_is(ty, "compaction") || raw_is(ty, "branch_summary") {
        texts.push(Text {
            role: raw_str(ty).unwrap_or_default(),
            tools: tools.clone(),
            text: raw_str(sc.get("summary")).unwrap_or_default(),
        });
    } else if raw_is(ty, "label") {
        if let Some(l) = raw_str(sc.get("label")) {
            texts.push(Text {
                role: "label".into(),
                tools: String::new(),
                text: l,
            });
        }
    } else if raw_is(ty, "session_info")
        && let Some(n) = raw_str(sc.get("name"))
    {
        texts.push(Text {
            role: "session_info".into(),
            tools: String::new(),
            text: n,
        });
    }
    Some(LineRead::Entry(LineEntry {
        id: raw_str(sc.get("id")),
        parent: raw_str(sc.get("parentId")),
        timestamp,
        ts_ms,
        texts,
    }))
}

/// An entry line's id, timestamp and full searchable texts ([`entry_texts`]), read from its
/// text without building its value (the phrase check of a query reads back many of them);
/// `None` for a line `JSON.parse` rejects, a session header or a line that is no object.
pub fn entry_line(line: &[u8]) -> Option<(Option<String>, Option<String>, Vec<Text>)> {
    let text = match std::str::from_utf8(line) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(_) => String::from_utf8_lossy(line),
    };
    match read_line(&text)? {
        LineRead::Entry(e) => Some((e.id, e.timestamp, e.texts)),
        LineRead::NotObject | LineRead::Header { .. } => None,
    }
}

/// The full searchable texts of one entry line ([`entry_texts`]), for snippets and windows.
pub fn line_texts(line: &[u8]) -> Option<(Value, Vec<Text>)> {
    let e = value::parse(&String::from_utf8_lossy(line))?;
    let t = entry_texts(&e);
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
        // Dates `Date.parse` rejects are no dates here either.
        assert_eq!(iso_ms("2024-01-01T00:00:60.000Z"), None);
        assert_eq!(iso_ms("2024-02-31T00:00:00.000Z"), None);
        assert_eq!(iso_ms("2024-04-31T00:00:00.000Z"), None);
    }

    fn texts_of(line: &str) -> Vec<(String, String, String)> {
        let e = value::parse(line).unwrap();
        entry_texts(&e)
            .into_iter()
            .map(|t| (t.role, t.tools, t.text))
            .collect()
    }

    #[test]
    fn tool_calls_labels_and_names() {
        let line = r#"{"type":"message","id":"a","message":{"role":"assistant","content":[
            {"type":"thinking","thinking":"secret plan"},
            {"type":"text","text":"Editing now."},
            {"type":"toolCall","id":"t1","name":"edit","arguments":{"path":"src/a.ts","edits":[{"oldText":"idSummaryTree","newText":"idTree"}]}},
            {"type":"toolCall","id":"t2","name":"bash","arguments":{"command":"npm test","timeout":60}},
            {"type":"toolCall","id":"t3","name":"grep","arguments":{"pattern":"foo.*bar","ignoreCase":true}}]}}"#;
        let r = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
        assert_eq!(
            texts_of(line),
            [
                r("assistant", "edit bash grep", "Editing now."),
                r("toolCall", "edit", "edit\nsrc/a.ts\nidSummaryTree\nidTree"),
                r("toolCall", "bash", "bash\nnpm test"),
                r("toolCall", "grep", "grep\nfoo.*bar"),
            ]
        );
        assert_eq!(
            texts_of(
                r#"{"type":"message","message":{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"file body"}],"details":{"diff":"x"}}}"#
            ),
            [r("toolResult", "read", "file body")]
        );
        assert_eq!(
            texts_of(r#"{"type":"label","id":"l","targetId":"a","label":"checkpoint-1"}"#),
            [r("label", "", "checkpoint-1")]
        );
        assert_eq!(
            texts_of(r#"{"type":"session_info","id":"n","name":"Refactor auth"}"#),
            [r("session_info", "", "Refactor auth")]
        );
        // Arguments as a string, nested deep, or absent.
        assert_eq!(
            texts_of(
                r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":"raw"},{"type":"toolCall","name":"y"}]}}"#
            )[1..],
            [r("toolCall", "x", "x\nraw"), r("toolCall", "y", "y")]
        );
        let deep = format!(
            r#"{{"type":"message","message":{{"role":"assistant","content":[{{"type":"toolCall","name":"d","arguments":{}"z"{}}}]}}}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        );
        if value::parse(&deep).is_some() {
            assert_eq!(texts_of(&deep)[1].2, "d\nz");
        }
    }

    /// What the index took of a line before [`read_line`]: the parsed value, then
    /// [`entry_texts`] and the fields on it.
    fn by_value(line: &str) -> Option<LineRead> {
        let e = value::parse(line)?;
        if e.as_object().is_none() {
            return Some(LineRead::NotObject);
        }
        if str_of(e.get("type")).as_deref() == Some("session") {
            return Some(LineRead::Header {
                id: str_of(e.get("id")),
                cwd: str_of(e.get("cwd")),
            });
        }
        let timestamp = str_of(e.get("timestamp"));
        let ts_ms = timestamp.as_deref().and_then(iso_ms).or_else(|| {
            match e.get("message").and_then(|m| m.get("timestamp")) {
                Some(Value::Number(n)) if n.is_finite() => Some(*n as i64),
                _ => None,
            }
        });
        Some(LineRead::Entry(LineEntry {
            id: str_of(e.get("id")),
            parent: str_of(e.get("parentId")),
            timestamp,
            ts_ms,
            texts: entry_texts(&e),
        }))
    }

    /// Lines of every kind the index reads, and hostile ones.
    fn sample_lines() -> Vec<String> {
        let mut v: Vec<String> = [
            r#"{"type":"session","id":"s1","cwd":"/p","version":3}"#,
            r#"{"type":"session","id":7}"#,
            r#"{"type":"message","id":"a","parentId":null,"timestamp":"2024-01-01T00:00:00.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"secret \"plan\" {["},{"type":"text","text":"Editing now."},{"type":"toolCall","id":"t1","name":"edit","arguments":{"path":"src/a.ts","edits":[{"oldText":"idSummaryTree","newText":"idTree"}]}},{"type":"toolCall","id":"t2","name":"bash","arguments":{"command":"npm test","timeout":60}},{"type":"text","text":"two"},{"type":"toolCall","name":"bash","arguments":{"2":"b","1":"a","x":["c",{"d":"e"}]}}]}}"#,
            r#"{"type":"message","message":{"role":"toolResult","toolName":"read","content":[{"type":"text","text":"file body"},{"type":"image","data":"AAAA"}],"details":{"diff":"x"},"timestamp":1700000000000}}"#,
            r#"{"type":"message","message":{"role":"user","content":"plain \u00e9t\u00e9 \ud83d\ude00 lone \ud800 end","timestamp":1.5e3}}"#,
            r#"{"type":"message","message":{"role":"user","content":"x","timestamp":1e400}}"#,
            r#"{"type":"message","message":{"role":"bashExecution","command":"ls -la","output":"a\nb","exitCode":0}}"#,
            r#"{"type":"message","message":{"role":"bashExecution","command":3}}"#,
            r#"{"type":"message","message":{"role":"custom","content":"not indexed"}}"#,
            r#"{"type":"message","message":"not an object"}"#,
            r#"{"type":"message","message":{"role":"user","content":"first"},"message":{"role":"assistant","content":[{"type":"text","text":"last wins"}]}}"#,
            r#"{"type":"message","message":{"role":"user","content":"first"},"message":"then a string"}"#,
            r#"{"type":"message","message":"a string","message":{"role":"user","content":"then an object"}}"#,
            r#"{"t\u0079pe":"message","m\u0065ssage":{"r\u006fle":"user","content":[{"type":"te\u0078t","text":"escaped keys"},"str",7,null,{"type":"text"},{"type":"text","text":5}]}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":{"type":"text","text":"object content"}}}"#,
            r#"{"type":"message","message":{"role":"assistant","content":[{"type":"toolCall","name":"x","arguments":"raw"},{"type":"toolCall","name":"y"},{"type":"toolCall","name":"  spaced name ","arguments":[1,true,"s"]},{"type":"toolCall","name":7}]}}"#,
            r#"{"type":"message","message":{"role":"user","toolName":"read","content":[{"type":"toolCall","name":"grep"}]}}"#,
            r#"{"type":"custom_message","customType":"note","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"display":true}"#,
            r#"{"type":"custom_message","content":"no type"}"#,
            r#"{"type":"custom_message","customType":{},"content":5}"#,
            r#"{"type":"compaction","summary":"the summary","firstKeptEntryId":"x","tokensBefore":5}"#,
            r#"{"type":"branch_summary","summary":7}"#,
            r#"{"type":"label","id":"l","targetId":"a","label":"checkpoint-1"}"#,
            r#"{"type":"label","label":null}"#,
            r#"{"type":"session_info","id":"n","name":"Refactor auth"}"#,
            r#"{"type":"model_change","id":"m","parentId":"a","provider":"x"}"#,
            r#"{"type":7,"id":"odd"}"#,
            r#"{"id":"no type","timestamp":"2024-01-01T00:00:00.000Z","message":{"timestamp":5}}"#,
            r#"  {"type":"label","label":"spaced"}  "#,
            r#"[1,2,3]"#,
            r#""a string""#,
            r#"42"#,
            r#"null"#,
            r#"{}"#,
            r#"{"type":"message","message":{"role":"user","content":"ctl	tab"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"bad \x escape"}}"#,
            r#"{"type":"message","message":{"role":"user","content":"x"},}"#,
            r#"{"type":"message""#,
            "\u{feff}{\"type\":\"label\",\"label\":\"bom\"}",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        v.push(format!(
            r#"{{"type":"message","message":{{"role":"assistant","content":[{{"type":"toolCall","name":"d","arguments":{}"z"{}}}]}}}}"#,
            "[".repeat(5000),
            "]".repeat(5000)
        ));
        v
    }

    #[test]
    fn a_line_read_from_its_text_is_what_its_parsed_value_gives() {
        let lines = sample_lines();
        let mut n_entries = 0;
        for line in &lines {
            let want = by_value(line);
            assert_eq!(read_line(line), want, "{line}");
            n_entries += matches!(want, Some(LineRead::Entry(_))) as usize;
            // Every prefix of every line (torn writes, hostile cuts), and every line with one
            // byte changed to a quote, a backslash, a brace or a bracket.
            let b = line.as_bytes();
            for cut in 0..b.len() {
                let t = String::from_utf8_lossy(&b[..cut]);
                assert_eq!(read_line(&t), by_value(&t), "{t}");
            }
            for i in (0..b.len()).step_by(3) {
                for &c in b"\"\\{]," {
                    let mut m = b.to_vec();
                    m[i] = c;
                    let t = String::from_utf8_lossy(&m);
                    assert_eq!(read_line(&t), by_value(&t), "{t}");
                }
            }
        }
        assert!(n_entries >= 25);
        // Thinking is skipped, texts joined, tools listed once, calls in order.
        let Some(LineRead::Entry(e)) = read_line(&lines[2]) else {
            panic!("not an entry");
        };
        assert_eq!(e.texts[0].text, "Editing now.\ntwo");
        assert_eq!(e.texts[0].tools, "edit bash");
        assert_eq!(e.texts[3].text, "bash\na\nb\nc\ne");
        assert_eq!(e.ts_ms, Some(1_704_067_200_000));
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
        assert_eq!(p.rows.len(), 2);
        assert_eq!(p.rows[0].tools, "bash");
        assert_eq!(p.rows[0].text, "hi");
        assert_eq!((p.rows[1].role.as_str(), p.rows[1].part), ("toolCall", 1));
        assert_eq!(p.rows[1].text, "bash");
        let tail = f.rfind('\n').map(|i| i + 1).unwrap_or(0) as u64;
        assert_eq!(p.end, tail);
    }
}
