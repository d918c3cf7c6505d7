//! `readSessionWindow`: the entries around one entry on its branch, bounded.
//!
//! The branch of an entry: its ancestors (parent links) and, after it, the path down to the
//! last entry of the file that descends from it (the active leaf when the entry is on the
//! active branch, else the latest leaf of its own abandoned branch).

use super::extract;
use crate::json::value::{JsString, Value};
use std::collections::HashMap;
use std::path::Path;

/// Most entries returned on each side.
pub const MAX_SIDE: usize = 200;

struct Line {
    id: Option<String>,
    parent: Option<String>,
    off: usize,
    len: usize,
}

fn js_str(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_js_string)
        .map(JsString::to_string_lossy)
}

/// The window as a JSON array of `{id, parentId, type, role, timestamp, text, truncated,
/// hit}`, oldest first; `None` when the file cannot be read or has no such entry. Texts are
/// cut to `max_entry_chars` each and `max_chars` in all (entries nearest the hit first).
pub fn window(
    path: &Path,
    entry_id: &str,
    before: usize,
    after: usize,
    max_chars: usize,
    max_entry_chars: usize,
) -> Option<String> {
    let bytes = crate::check::read_regular(path).ok()?;
    let mut lines: Vec<Line> = Vec::new();
    let mut pos = 0usize;
    for raw in bytes.split(|&b| b == b'\n') {
        let off = pos;
        pos += raw.len() + 1;
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let Some(e) = crate::json::value::parse(&String::from_utf8_lossy(raw)) else {
            continue;
        };
        if js_str(e.get("type")).as_deref() == Some("session") {
            continue;
        }
        lines.push(Line {
            id: js_str(e.get("id")),
            parent: js_str(e.get("parentId")),
            off,
            len: raw.len(),
        });
    }
    let by_id: HashMap<&str, usize> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| l.id.as_deref().map(|id| (id, i)))
        .collect();
    let hit = *by_id.get(entry_id)?;
    let parent_of = |i: usize| -> Option<usize> {
        lines[i]
            .parent
            .as_deref()
            .and_then(|p| by_id.get(p).copied())
    };
    // Ancestors, nearest first.
    let mut up = Vec::new();
    let mut seen = vec![false; lines.len()];
    seen[hit] = true;
    let mut cur = hit;
    while up.len() < before.min(MAX_SIDE) {
        let Some(p) = parent_of(cur) else { break };
        if seen[p] {
            break;
        }
        seen[p] = true;
        up.push(p);
        cur = p;
    }
    // Descends-from-hit, memoised in file order (0 unknown, 1 yes, 2 no); iterative walks.
    let mut desc = vec![0u8; lines.len()];
    desc[hit] = 1;
    let mut leaf = hit;
    for i in 0..lines.len() {
        let mut chain = Vec::new();
        let mut c = i;
        let verdict = loop {
            if desc[c] != 0 {
                break desc[c];
            }
            if chain.len() > lines.len() {
                break 2;
            }
            chain.push(c);
            match parent_of(c) {
                Some(p) => c = p,
                None => break 2,
            }
        };
        for k in chain {
            desc[k] = verdict;
        }
        if desc[i] == 1 {
            leaf = i;
        }
    }
    // Path from the leaf up to the hit, then reversed: the entries after the hit.
    let mut down = Vec::new();
    let mut c = leaf;
    let mut guard = 0;
    while c != hit && guard <= lines.len() {
        down.push(c);
        guard += 1;
        match parent_of(c) {
            Some(p) => c = p,
            None => break,
        }
    }
    down.reverse();
    down.truncate(after.min(MAX_SIDE));
    // Character budget: the hit, then alternately the nearest before and after.
    let mut order = vec![hit];
    for k in 0..up.len().max(down.len()) {
        if let Some(&b) = up.get(k) {
            order.push(b);
        }
        if let Some(&a) = down.get(k) {
            order.push(a);
        }
    }
    let mut budget = max_chars;
    let mut rendered: HashMap<usize, String> = HashMap::new();
    for i in order {
        let l = &lines[i];
        let raw = &bytes[l.off..l.off + l.len];
        let Some((e, texts)) = extract::line_texts(raw) else {
            continue;
        };
        // The entry's texts one after the other (an assistant message's words, then its
        // tool calls); the role is the first one's.
        let role = texts.first().map(|t| t.role.clone());
        let text = texts
            .iter()
            .filter(|t| !t.text.is_empty())
            .map(|t| t.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        let cap = max_entry_chars.min(budget);
        let n = text.chars().count();
        let shown: String = text.chars().take(cap).collect();
        budget = budget.saturating_sub(shown.chars().count());
        let mut out = String::from("{\"id\":");
        write_opt(&mut out, l.id.as_deref());
        out.push_str(",\"parentId\":");
        write_opt(&mut out, l.parent.as_deref());
        out.push_str(",\"type\":");
        write_opt(&mut out, js_str(e.get("type")).as_deref());
        out.push_str(",\"role\":");
        write_opt(&mut out, role.as_deref());
        out.push_str(",\"timestamp\":");
        write_opt(&mut out, js_str(e.get("timestamp")).as_deref());
        out.push_str(",\"text\":");
        crate::json::value::write_json_string(&mut out, &shown);
        out.push_str(&format!(
            ",\"truncated\":{},\"hit\":{}}}",
            shown.chars().count() < n,
            i == hit
        ));
        rendered.insert(i, out);
    }
    let mut all: Vec<usize> = up.into_iter().rev().collect();
    all.push(hit);
    all.extend(down);
    let parts: Vec<String> = all
        .into_iter()
        .filter_map(|i| rendered.remove(&i))
        .collect();
    Some(format!("[{}]", parts.join(",")))
}

fn write_opt(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => crate::json::value::write_json_string(out, s),
        None => out.push_str("null"),
    }
}
