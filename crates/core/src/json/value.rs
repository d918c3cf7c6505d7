//! A JSON value model that reproduces V8's `JSON.stringify(JSON.parse(text))`
//! byte for byte, plus in-place edits with JS object semantics.
//!
//! - Strings keep JS (UTF-16) semantics: lone surrogates from `\udxxx`
//!   escapes survive a round trip (stored internally as WTF-8).
//! - Objects order keys like JS: array-index keys (`"0"`..`"4294967294"`,
//!   canonical decimal) first in ascending numeric order, then the other keys
//!   in insertion order. Re-setting a key keeps its position.
//! - Parsing, serialization, cloning, comparison and dropping use explicit
//!   stacks, so arbitrarily deep nesting never overflows the native stack.
//!
//! Because [`Value`] implements `Drop` (iterative teardown), its variants
//! cannot be moved out of by pattern matching; use [`Value::take`],
//! [`Value::into_object`], [`Value::into_array`] or [`Value::into_string`].

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::hash::{Hash, Hasher};

// ---------------------------------------------------------------------------
// JsString
// ---------------------------------------------------------------------------

#[derive(Clone)]
enum Repr {
    /// Well-formed text (no lone surrogates).
    Str(String),
    /// WTF-8 bytes containing at least one lone surrogate (encoded as the
    /// 3-byte generalized UTF-8 sequence `ED A0..BF 80..BF`). Never contains
    /// a high surrogate sequence directly followed by a low one.
    Wtf8(Vec<u8>),
}

/// A JS string with UTF-16 code unit semantics; preserves lone surrogates
/// (e.g. `"\ud83d"` from a cut emoji).
#[derive(Clone)]
pub struct JsString(Repr);

impl JsString {
    /// A well-formed string.
    #[allow(clippy::should_implement_trait)]
    pub fn from_str(s: &str) -> JsString {
        JsString(Repr::Str(s.to_owned()))
    }

    /// A well-formed string, taking ownership.
    pub fn from_string(s: String) -> JsString {
        JsString(Repr::Str(s))
    }

    /// From UTF-16 code units; unpaired surrogates are preserved.
    pub fn from_utf16(units: &[u16]) -> JsString {
        let mut buf = Wtf8Buf::with_capacity(units.len());
        let mut i = 0;
        while i < units.len() {
            let u = units[i];
            if (0xD800..0xDC00).contains(&u)
                && let Some(&lo) = units.get(i + 1)
                && (0xDC00..0xE000).contains(&lo)
            {
                let c = 0x10000 + (((u as u32) - 0xD800) << 10) + ((lo as u32) - 0xDC00);
                buf.push_code_point(c);
                i += 2;
                continue;
            }
            buf.push_code_point(u as u32);
            i += 1;
        }
        buf.finish()
    }

    /// The string with every lone surrogate replaced by U+FFFD.
    pub fn to_string_lossy(&self) -> String {
        match &self.0 {
            Repr::Str(s) => s.clone(),
            Repr::Wtf8(b) => {
                let mut out = String::with_capacity(b.len());
                for seg in Wtf8Segments::new(b) {
                    match seg {
                        Segment::Text(t) => out.push_str(t),
                        Segment::Surrogate(_) => out.push('\u{FFFD}'),
                    }
                }
                out
            }
        }
    }

    /// `Some(&str)` when the string has no lone surrogates.
    pub fn as_str_if_valid(&self) -> Option<&str> {
        match &self.0 {
            Repr::Str(s) => Some(s),
            Repr::Wtf8(_) => None,
        }
    }

    /// Whether the string contains no lone surrogates.
    pub fn is_well_formed(&self) -> bool {
        matches!(self.0, Repr::Str(_))
    }

    /// The string as UTF-16 code units (what JS sees).
    pub fn to_utf16(&self) -> Vec<u16> {
        let mut out = Vec::with_capacity(self.wtf8_bytes().len());
        match &self.0 {
            Repr::Str(s) => out.extend(s.encode_utf16()),
            Repr::Wtf8(b) => {
                for seg in Wtf8Segments::new(b) {
                    match seg {
                        Segment::Text(t) => out.extend(t.encode_utf16()),
                        Segment::Surrogate(u) => out.push(u),
                    }
                }
            }
        }
        out
    }

    /// Length in UTF-16 code units (JS `.length`).
    pub fn len_utf16(&self) -> usize {
        match &self.0 {
            Repr::Str(s) => s.chars().map(char::len_utf16).sum(),
            Repr::Wtf8(b) => Wtf8Segments::new(b)
                .map(|seg| match seg {
                    Segment::Text(t) => t.chars().map(char::len_utf16).sum(),
                    Segment::Surrogate(_) => 1,
                })
                .sum(),
        }
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.wtf8_bytes().is_empty()
    }

    /// The internal WTF-8 bytes (plain UTF-8 when well-formed).
    pub fn wtf8_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Str(s) => s.as_bytes(),
            Repr::Wtf8(b) => b,
        }
    }

    /// Append this string, JSON-quoted exactly like `JSON.stringify`.
    pub fn write_json(&self, out: &mut String) {
        out.push('"');
        match &self.0 {
            Repr::Str(s) => write_escaped_str(out, s),
            Repr::Wtf8(b) => {
                for seg in Wtf8Segments::new(b) {
                    match seg {
                        Segment::Text(t) => write_escaped_str(out, t),
                        Segment::Surrogate(u) => push_u_escape(out, u),
                    }
                }
            }
        }
        out.push('"');
    }
}

impl PartialEq for JsString {
    fn eq(&self, other: &Self) -> bool {
        // Canonical representation: equal code units <=> equal WTF-8 bytes.
        self.wtf8_bytes() == other.wtf8_bytes()
    }
}
impl Eq for JsString {}

impl Hash for JsString {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.wtf8_bytes().hash(state)
    }
}

impl Borrow<[u8]> for JsString {
    fn borrow(&self) -> &[u8] {
        self.wtf8_bytes()
    }
}

impl PartialEq<str> for JsString {
    fn eq(&self, other: &str) -> bool {
        self.wtf8_bytes() == other.as_bytes()
    }
}
impl PartialEq<&str> for JsString {
    fn eq(&self, other: &&str) -> bool {
        self.wtf8_bytes() == other.as_bytes()
    }
}

impl From<&str> for JsString {
    fn from(s: &str) -> Self {
        JsString::from_str(s)
    }
}
impl From<String> for JsString {
    fn from(s: String) -> Self {
        JsString::from_string(s)
    }
}

impl fmt::Debug for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_json(&mut s);
        f.write_str(&s)
    }
}

impl fmt::Display for JsString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Str(s) => f.write_str(s),
            Repr::Wtf8(_) => f.write_str(&self.to_string_lossy()),
        }
    }
}

/// Builder for WTF-8 strings (used by the parser and `from_utf16`).
struct Wtf8Buf {
    bytes: Vec<u8>,
    lone: bool,
}

impl Wtf8Buf {
    fn with_capacity(n: usize) -> Self {
        Wtf8Buf {
            bytes: Vec::with_capacity(n),
            lone: false,
        }
    }

    fn push_str(&mut self, s: &str) {
        self.bytes.extend_from_slice(s.as_bytes());
    }

    /// Push a code point or a lone surrogate (0xD800..0xDFFF).
    fn push_code_point(&mut self, c: u32) {
        if (0xD800..0xE000).contains(&c) {
            self.lone = true;
            self.bytes.push(0xE0 | (c >> 12) as u8);
            self.bytes.push(0x80 | ((c >> 6) & 0x3F) as u8);
            self.bytes.push(0x80 | (c & 0x3F) as u8);
        } else if let Some(ch) = char::from_u32(c) {
            let mut tmp = [0u8; 4];
            self.bytes
                .extend_from_slice(ch.encode_utf8(&mut tmp).as_bytes());
        } else {
            // Not reachable for inputs <= 0x10FFFF; keep it total anyway.
            self.bytes.extend_from_slice("\u{FFFD}".as_bytes());
        }
    }

    fn finish(self) -> JsString {
        if self.lone {
            JsString(Repr::Wtf8(self.bytes))
        } else {
            match String::from_utf8(self.bytes) {
                Ok(s) => JsString(Repr::Str(s)),
                Err(e) => JsString(Repr::Str(
                    String::from_utf8_lossy(e.as_bytes()).into_owned(),
                )),
            }
        }
    }
}

enum Segment<'a> {
    Text(&'a str),
    Surrogate(u16),
}

/// Splits WTF-8 into well-formed text runs and lone surrogates.
struct Wtf8Segments<'a> {
    rest: &'a [u8],
}

impl<'a> Wtf8Segments<'a> {
    fn new(bytes: &'a [u8]) -> Self {
        Wtf8Segments { rest: bytes }
    }
}

impl<'a> Iterator for Wtf8Segments<'a> {
    type Item = Segment<'a>;
    fn next(&mut self) -> Option<Segment<'a>> {
        let bytes = self.rest;
        if bytes.is_empty() {
            return None;
        }
        if let Some(u) = surrogate_at(bytes, 0) {
            self.rest = bytes.get(3..).unwrap_or(&[]);
            return Some(Segment::Surrogate(u));
        }
        // Find the next surrogate sequence.
        let mut end = bytes.len();
        let mut from = 0;
        while let Some(p) = memchr::memchr(0xED, bytes.get(from..).unwrap_or(&[])) {
            let pos = from + p;
            if surrogate_at(bytes, pos).is_some() {
                end = pos;
                break;
            }
            from = pos + 1;
        }
        let (text, rest) = bytes.split_at(end);
        self.rest = rest;
        match std::str::from_utf8(text) {
            Ok(t) => Some(Segment::Text(t)),
            // Invariant says this cannot happen; degrade gracefully.
            Err(_) => Some(Segment::Text("\u{FFFD}")),
        }
    }
}

fn surrogate_at(bytes: &[u8], pos: usize) -> Option<u16> {
    match bytes.get(pos..pos + 3) {
        Some(&[0xED, b1, b2]) if (0xA0..=0xBF).contains(&b1) => {
            Some(0xD000 | (((b1 & 0x3F) as u16) << 6) | ((b2 & 0x3F) as u16))
        }
        _ => None,
    }
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn push_u_escape(out: &mut String, u: u16) {
    out.push_str("\\u");
    for shift in [12u16, 8, 4, 0] {
        out.push(HEX[((u >> shift) & 0xF) as usize] as char);
    }
}

/// Bytes that need escaping in a well-formed string.
static NEEDS_ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// `s` as `JSON.stringify` writes a string, quotes included.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    write_escaped_str(out, s);
    out.push('"');
}

fn write_escaped_str(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !NEEDS_ESCAPE[b as usize] {
            continue;
        }
        if start < i {
            out.push_str(s.get(start..i).unwrap_or(""));
        }
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x08 => out.push_str("\\b"),
            0x0C => out.push_str("\\f"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            _ => push_u_escape(out, b as u16),
        }
        start = i + 1;
    }
    if start < bytes.len() {
        out.push_str(s.get(start..).unwrap_or(""));
    }
}

// ---------------------------------------------------------------------------
// Object
// ---------------------------------------------------------------------------

/// Number of named keys above which a hash index is maintained.
const INDEX_THRESHOLD: usize = 16;

/// A JS object's own enumerable data properties, in JS key order.
#[derive(Default)]
pub struct Object {
    /// Array-index keys, ordered numerically; the key string is kept.
    indexed: BTreeMap<u32, (JsString, Value)>,
    /// Other keys in insertion order.
    named: Vec<(JsString, Value)>,
    /// Key -> position in `named`; only when `named` is large.
    lookup: Option<HashMap<JsString, usize>>,
}

/// If `key` is a canonical array index (0..=2^32-2), return it.
fn array_index(key: &[u8]) -> Option<u32> {
    if key.is_empty() || key.len() > 10 {
        return None;
    }
    if key.len() > 1 && key[0] == b'0' {
        return None;
    }
    let mut n: u64 = 0;
    for &b in key {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n * 10 + (b - b'0') as u64;
    }
    if n <= 4_294_967_294 {
        Some(n as u32)
    } else {
        None
    }
}

impl Object {
    /// An empty object.
    pub fn new() -> Object {
        Object::default()
    }

    /// Number of properties.
    pub fn len(&self) -> usize {
        self.indexed.len() + self.named.len()
    }

    /// Whether there are no properties.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn named_pos(&self, key: &[u8]) -> Option<usize> {
        match &self.lookup {
            Some(map) => map.get(key).copied(),
            None => self.named.iter().position(|(k, _)| k.wtf8_bytes() == key),
        }
    }

    fn get_bytes(&self, key: &[u8]) -> Option<&Value> {
        match array_index(key) {
            Some(i) => self.indexed.get(&i).map(|(_, v)| v),
            None => self
                .named_pos(key)
                .and_then(|p| self.named.get(p))
                .map(|(_, v)| v),
        }
    }

    fn get_bytes_mut(&mut self, key: &[u8]) -> Option<&mut Value> {
        match array_index(key) {
            Some(i) => self.indexed.get_mut(&i).map(|(_, v)| v),
            None => match self.named_pos(key) {
                Some(p) => self.named.get_mut(p).map(|(_, v)| v),
                None => None,
            },
        }
    }

    /// The value of `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.get_bytes(key.as_bytes())
    }

    /// Mutable access to the value of `key`.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Value> {
        self.get_bytes_mut(key.as_bytes())
    }

    /// Whether `key` is present.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Set `key` like JS `obj[key] = v` on a plain data object: an existing
    /// key keeps its position, a new key goes where JS would put it.
    pub fn set(&mut self, key: &str, v: Value) {
        self.set_js(JsString::from_str(key), v);
    }

    /// Like [`Object::set`] for a key that may contain lone surrogates.
    /// Returns the previous value, if any.
    pub fn set_js(&mut self, key: JsString, v: Value) -> Option<Value> {
        if let Some(i) = array_index(key.wtf8_bytes()) {
            return match self.indexed.get_mut(&i) {
                Some(slot) => Some(std::mem::replace(&mut slot.1, v)),
                None => {
                    self.indexed.insert(i, (key, v));
                    None
                }
            };
        }
        if let Some(p) = self.named_pos(key.wtf8_bytes())
            && let Some(slot) = self.named.get_mut(p)
        {
            return Some(std::mem::replace(&mut slot.1, v));
        }
        let pos = self.named.len();
        if let Some(map) = &mut self.lookup {
            map.insert(key.clone(), pos);
        }
        self.named.push((key, v));
        if self.lookup.is_none() && self.named.len() > INDEX_THRESHOLD {
            self.rebuild_lookup();
        }
        None
    }

    fn rebuild_lookup(&mut self) {
        let map = self
            .named
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        self.lookup = Some(map);
    }

    /// Remove `key` like JS `delete obj[key]`; returns the removed value.
    pub fn remove(&mut self, key: &str) -> Option<Value> {
        self.remove_bytes(key.as_bytes())
    }

    fn remove_bytes(&mut self, key: &[u8]) -> Option<Value> {
        if let Some(i) = array_index(key) {
            return self.indexed.remove(&i).map(|(_, v)| v);
        }
        let p = self.named_pos(key)?;
        if p >= self.named.len() {
            return None;
        }
        let (_, v) = self.named.remove(p);
        if self.lookup.is_some() {
            if self.named.len() > INDEX_THRESHOLD {
                self.rebuild_lookup();
            } else {
                self.lookup = None;
            }
        }
        Some(v)
    }

    /// Properties in JS order (`Object.keys` order).
    pub fn iter(&self) -> impl Iterator<Item = (&JsString, &Value)> + '_ {
        self.indexed
            .values()
            .map(|(k, v)| (k, v))
            .chain(self.named.iter().map(|(k, v)| (k, v)))
    }

    /// Properties in JS order with mutable values.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&JsString, &mut Value)> + '_ {
        self.indexed
            .values_mut()
            .map(|(k, v)| (&*k, v))
            .chain(self.named.iter_mut().map(|(k, v)| (&*k, v)))
    }

    /// Keys in JS order.
    pub fn keys(&self) -> impl Iterator<Item = &JsString> + '_ {
        self.iter().map(|(k, _)| k)
    }

    /// Values in JS key order.
    pub fn values(&self) -> impl Iterator<Item = &Value> + '_ {
        self.iter().map(|(_, v)| v)
    }

    /// Move all values out (keys dropped), leaving the object empty.
    fn drain_values_into(&mut self, out: &mut Vec<Value>) {
        let indexed = std::mem::take(&mut self.indexed);
        out.extend(indexed.into_values().map(|(_, v)| v));
        out.extend(self.named.drain(..).map(|(_, v)| v));
        self.lookup = None;
    }

    fn has_nested_container(&self) -> bool {
        self.values().any(Value::is_nonempty_container)
    }

    /// Append this object as JSON (like `JSON.stringify`).
    pub fn write_json(&self, out: &mut String) {
        write_container(ContainerRef::Object(self), out);
    }

    /// This object as JSON (like `JSON.stringify`).
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }
}

impl Clone for Object {
    fn clone(&self) -> Self {
        clone_container(ContainerRef::Object(self))
            .into_object()
            .unwrap_or_default()
    }
}

impl PartialEq for Object {
    fn eq(&self, other: &Self) -> bool {
        values_eq(ContainerRef::Object(self), ContainerRef::Object(other))
    }
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl FromIterator<(JsString, Value)> for Object {
    fn from_iter<I: IntoIterator<Item = (JsString, Value)>>(iter: I) -> Self {
        let mut o = Object::new();
        for (k, v) in iter {
            o.set_js(k, v);
        }
        o
    }
}

impl<'a> FromIterator<(&'a str, Value)> for Object {
    fn from_iter<I: IntoIterator<Item = (&'a str, Value)>>(iter: I) -> Self {
        let mut o = Object::new();
        for (k, v) in iter {
            o.set(k, v);
        }
        o
    }
}

// ---------------------------------------------------------------------------
// Value
// ---------------------------------------------------------------------------

/// A parsed JSON value.
#[derive(Default)]
pub enum Value {
    #[default]
    Null,
    Bool(bool),
    Number(f64),
    String(JsString),
    Array(Vec<Value>),
    Object(Object),
}

impl Drop for Value {
    /// Iterative teardown so that deeply nested values cannot overflow the
    /// stack. Recursion depth stays bounded at two levels.
    fn drop(&mut self) {
        let mut stack: Vec<Value> = Vec::new();
        match self {
            Value::Array(a) => {
                if !a.iter().any(Value::is_nonempty_container) {
                    return;
                }
                stack.append(a);
            }
            Value::Object(o) => {
                if !o.has_nested_container() {
                    return;
                }
                o.drain_values_into(&mut stack);
            }
            _ => return,
        }
        while let Some(mut v) = stack.pop() {
            match &mut v {
                Value::Array(a) => stack.append(a),
                Value::Object(o) => o.drain_values_into(&mut stack),
                _ => {}
            }
            // `v` is now a leaf or an empty container: its drop is shallow.
        }
    }
}

impl Value {
    fn is_nonempty_container(&self) -> bool {
        match self {
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => false,
        }
    }

    /// A string value.
    pub fn string(s: &str) -> Value {
        Value::String(JsString::from_str(s))
    }

    /// Replace with `Null` and return the previous value.
    pub fn take(&mut self) -> Value {
        std::mem::take(self)
    }

    /// The object, or `Err(self)` when not an object.
    pub fn into_object(mut self) -> Result<Object, Value> {
        match &mut self {
            Value::Object(o) => Ok(std::mem::take(o)),
            _ => Err(self),
        }
    }

    /// The array, or `Err(self)` when not an array.
    #[cfg(test)]
    pub fn into_array(mut self) -> Result<Vec<Value>, Value> {
        match &mut self {
            Value::Array(a) => Ok(std::mem::take(a)),
            _ => Err(self),
        }
    }

    /// The string, or `Err(self)` when not a string.
    #[cfg(test)]
    pub fn into_string(mut self) -> Result<JsString, Value> {
        match &mut self {
            Value::String(s) => Ok(std::mem::replace(s, JsString::from_string(String::new()))),
            _ => Err(self),
        }
    }

    #[cfg(test)]
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    pub fn as_js_string(&self) -> Option<&JsString> {
        match self {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The string value if it is a well-formed string.
    pub fn as_str(&self) -> Option<&str> {
        self.as_js_string().and_then(JsString::as_str_if_valid)
    }

    pub fn as_array(&self) -> Option<&Vec<Value>> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        match self {
            Value::Object(o) => Some(o),
            _ => None,
        }
    }

    /// `self[key]` when `self` is an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object().and_then(|o| o.get(key))
    }

    /// Serialize exactly like `JSON.stringify(value)` (no indentation).
    pub fn to_json(&self) -> String {
        let mut s = String::new();
        self.write_json(&mut s);
        s
    }

    /// Append the `JSON.stringify(value)` text to `out`.
    pub fn write_json(&self, out: &mut String) {
        match self {
            Value::Null => out.push_str("null"),
            Value::Bool(true) => out.push_str("true"),
            Value::Bool(false) => out.push_str("false"),
            Value::Number(n) => write_number(*n, out),
            Value::String(s) => s.write_json(out),
            Value::Array(a) => write_container(ContainerRef::Array(a), out),
            Value::Object(o) => write_container(ContainerRef::Object(o), out),
        }
    }
}

impl Clone for Value {
    fn clone(&self) -> Self {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(*b),
            Value::Number(n) => Value::Number(*n),
            Value::String(s) => Value::String(s.clone()),
            Value::Array(a) => clone_container(ContainerRef::Array(a)),
            Value::Object(o) => clone_container(ContainerRef::Object(o)),
        }
    }
}

/// Structural equality: numbers compare with `==` (so `NaN != NaN`,
/// `0 == -0`); objects must have the same keys in the same order.
impl PartialEq for Value {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Array(a), Value::Array(b)) => {
                values_eq(ContainerRef::Array(a), ContainerRef::Array(b))
            }
            (Value::Object(a), Value::Object(b)) => {
                values_eq(ContainerRef::Object(a), ContainerRef::Object(b))
            }
            _ => scalar_eq(self, other),
        }
    }
}

impl fmt::Debug for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Self {
        Value::Bool(b)
    }
}
impl From<f64> for Value {
    fn from(n: f64) -> Self {
        Value::Number(n)
    }
}
impl From<&str> for Value {
    fn from(s: &str) -> Self {
        Value::string(s)
    }
}
impl From<String> for Value {
    fn from(s: String) -> Self {
        Value::String(JsString::from_string(s))
    }
}
impl From<JsString> for Value {
    fn from(s: JsString) -> Self {
        Value::String(s)
    }
}
impl From<Object> for Value {
    fn from(o: Object) -> Self {
        Value::Object(o)
    }
}
impl From<Vec<Value>> for Value {
    fn from(a: Vec<Value>) -> Self {
        Value::Array(a)
    }
}

// ---------------------------------------------------------------------------
// Iterative traversal helpers (serialize, clone, compare)
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum ContainerRef<'a> {
    Array(&'a [Value]),
    Object(&'a Object),
}

type ObjIter<'a> = Box<dyn Iterator<Item = (&'a JsString, &'a Value)> + 'a>;

enum Cursor<'a> {
    Array(std::slice::Iter<'a, Value>),
    Object(ObjIter<'a>),
}

impl<'a> Cursor<'a> {
    fn new(c: ContainerRef<'a>) -> Self {
        match c {
            ContainerRef::Array(a) => Cursor::Array(a.iter()),
            ContainerRef::Object(o) => Cursor::Object(Box::new(o.iter())),
        }
    }

    fn next(&mut self) -> Option<(Option<&'a JsString>, &'a Value)> {
        match self {
            Cursor::Array(it) => it.next().map(|v| (None, v)),
            Cursor::Object(it) => it.next().map(|(k, v)| (Some(k), v)),
        }
    }
}

fn as_container(v: &Value) -> Option<ContainerRef<'_>> {
    match v {
        Value::Array(a) => Some(ContainerRef::Array(a)),
        Value::Object(o) => Some(ContainerRef::Object(o)),
        _ => None,
    }
}

fn write_number(n: f64, out: &mut String) {
    if !n.is_finite() {
        out.push_str("null");
    } else if n == 0.0 {
        out.push('0');
    } else if n.fract() == 0.0 && n.abs() < 1e15 {
        // Fast path for integers: JS prints them in plain decimal.
        use std::fmt::Write;
        let _ = write!(out, "{}", n as i64);
    } else {
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format_finite(n));
    }
}

struct WriteFrame<'a> {
    cursor: Cursor<'a>,
    first: bool,
    close: char,
}

fn write_container(root: ContainerRef<'_>, out: &mut String) {
    let mut stack: Vec<WriteFrame<'_>> = Vec::new();
    let open = |c: ContainerRef<'_>, out: &mut String| match c {
        ContainerRef::Array(_) => {
            out.push('[');
            ']'
        }
        ContainerRef::Object(_) => {
            out.push('{');
            '}'
        }
    };
    let close = open(root, out);
    stack.push(WriteFrame {
        cursor: Cursor::new(root),
        first: true,
        close,
    });
    while let Some(top) = stack.last_mut() {
        match top.cursor.next() {
            None => {
                out.push(top.close);
                stack.pop();
            }
            Some((key, v)) => {
                if !top.first {
                    out.push(',');
                }
                top.first = false;
                if let Some(k) = key {
                    k.write_json(out);
                    out.push(':');
                }
                match as_container(v) {
                    Some(c) => {
                        let close = open(c, out);
                        stack.push(WriteFrame {
                            cursor: Cursor::new(c),
                            first: true,
                            close,
                        });
                    }
                    None => v.write_json(out),
                }
            }
        }
    }
}

enum Built {
    Array(Vec<Value>),
    Object(Object),
}

impl Built {
    fn empty_like(c: ContainerRef<'_>) -> Built {
        match c {
            ContainerRef::Array(a) => Built::Array(Vec::with_capacity(a.len())),
            ContainerRef::Object(_) => Built::Object(Object::new()),
        }
    }

    fn push(&mut self, key: Option<&JsString>, v: Value) {
        match self {
            Built::Array(a) => a.push(v),
            Built::Object(o) => {
                if let Some(k) = key {
                    o.set_js(k.clone(), v);
                }
            }
        }
    }

    fn into_value(self) -> Value {
        match self {
            Built::Array(a) => Value::Array(a),
            Built::Object(o) => Value::Object(o),
        }
    }
}

struct CloneFrame<'a> {
    cursor: Cursor<'a>,
    built: Built,
    /// Key under which this container goes into its parent.
    key: Option<&'a JsString>,
}

fn clone_container(root: ContainerRef<'_>) -> Value {
    let mut stack = vec![CloneFrame {
        cursor: Cursor::new(root),
        built: Built::empty_like(root),
        key: None,
    }];
    loop {
        let Some(top) = stack.last_mut() else {
            return Value::Null;
        };
        match top.cursor.next() {
            Some((key, v)) => match as_container(v) {
                Some(c) => stack.push(CloneFrame {
                    cursor: Cursor::new(c),
                    built: Built::empty_like(c),
                    key,
                }),
                None => top.built.push(key, v.clone()),
            },
            None => {
                let Some(done) = stack.pop() else {
                    return Value::Null;
                };
                let value = done.built.into_value();
                match stack.last_mut() {
                    Some(parent) => parent.built.push(done.key, value),
                    None => return value,
                }
            }
        }
    }
}

fn scalar_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

fn values_eq(a: ContainerRef<'_>, b: ContainerRef<'_>) -> bool {
    let mut stack: Vec<(Cursor<'_>, Cursor<'_>)> = Vec::new();
    let shallow_ok = |a: ContainerRef<'_>, b: ContainerRef<'_>| match (a, b) {
        (ContainerRef::Array(x), ContainerRef::Array(y)) => x.len() == y.len(),
        (ContainerRef::Object(x), ContainerRef::Object(y)) => x.len() == y.len(),
        _ => false,
    };
    if !shallow_ok(a, b) {
        return false;
    }
    stack.push((Cursor::new(a), Cursor::new(b)));
    while let Some((ca, cb)) = stack.last_mut() {
        match (ca.next(), cb.next()) {
            (None, None) => {
                stack.pop();
            }
            (Some((ka, va)), Some((kb, vb))) => {
                if ka != kb {
                    return false;
                }
                match (as_container(va), as_container(vb)) {
                    (Some(x), Some(y)) => {
                        if !shallow_ok(x, y) {
                            return false;
                        }
                        stack.push((Cursor::new(x), Cursor::new(y)));
                    }
                    (None, None) => {
                        if !scalar_eq(va, vb) {
                            return false;
                        }
                    }
                    _ => return false,
                }
            }
            _ => return false,
        }
    }
    true
}

// ---------------------------------------------------------------------------
// Parser
// ---------------------------------------------------------------------------

enum Frame {
    Array(Vec<Value>),
    Object(Object, JsString),
}

struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Parser<'a> {
    #[inline]
    fn skip_ws(&mut self) {
        while let Some(&b) = self.bytes.get(self.pos) {
            if b == b' ' || b == b'\n' || b == b'\r' || b == b'\t' {
                self.pos += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn expect_literal(&mut self, lit: &[u8]) -> Option<()> {
        if self.bytes.get(self.pos..self.pos + lit.len()) == Some(lit) {
            self.pos += lit.len();
            Some(())
        } else {
            None
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.bytes.get(self.pos..self.pos + 4)?;
        let mut n = 0u32;
        for &d in digits {
            let v = match d {
                b'0'..=b'9' => d - b'0',
                b'a'..=b'f' => d - b'a' + 10,
                b'A'..=b'F' => d - b'A' + 10,
                _ => return None,
            };
            n = (n << 4) | v as u32;
        }
        self.pos += 4;
        Some(n)
    }

    /// Parse a string; `self.pos` is at the opening quote.
    fn string(&mut self) -> Option<JsString> {
        self.pos += 1;
        let start = self.pos;
        // Fast path: no escapes.
        let rest = self.bytes.get(start..)?;
        let end = memchr::memchr2(b'"', b'\\', rest)?;
        let run = rest.get(..end)?;
        if run.iter().any(|&b| b < 0x20) {
            return None;
        }
        if rest.get(end) == Some(&b'"') {
            self.pos = start + end + 1;
            let s = self.text.get(start..start + end)?;
            return Some(JsString::from_str(s));
        }
        // Slow path with escapes.
        let mut buf = Wtf8Buf::with_capacity(end + 16);
        buf.push_str(self.text.get(start..start + end)?);
        self.pos = start + end;
        loop {
            // At a quote or a backslash.
            match self.peek()? {
                b'"' => {
                    self.pos += 1;
                    return Some(buf.finish());
                }
                _ => {
                    self.pos += 1;
                    let esc = self.peek()?;
                    self.pos += 1;
                    match esc {
                        b'"' => buf.bytes.push(b'"'),
                        b'\\' => buf.bytes.push(b'\\'),
                        b'/' => buf.bytes.push(b'/'),
                        b'b' => buf.bytes.push(0x08),
                        b'f' => buf.bytes.push(0x0C),
                        b'n' => buf.bytes.push(b'\n'),
                        b'r' => buf.bytes.push(b'\r'),
                        b't' => buf.bytes.push(b'\t'),
                        b'u' => {
                            let u = self.hex4()?;
                            if (0xD800..0xDC00).contains(&u)
                                && self.bytes.get(self.pos..self.pos + 2) == Some(b"\\u")
                            {
                                let save = self.pos;
                                self.pos += 2;
                                match self.hex4() {
                                    Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                        buf.push_code_point(
                                            0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00),
                                        );
                                    }
                                    _ => {
                                        // Not a pair: emit the lone high and
                                        // re-read the next escape normally.
                                        self.pos = save;
                                        buf.push_code_point(u);
                                    }
                                }
                            } else {
                                buf.push_code_point(u);
                            }
                        }
                        _ => return None,
                    }
                }
            }
            let from = self.pos;
            let rest = self.bytes.get(from..)?;
            let end = memchr::memchr2(b'"', b'\\', rest)?;
            let run = rest.get(..end)?;
            if run.iter().any(|&b| b < 0x20) {
                return None;
            }
            buf.push_str(self.text.get(from..from + end)?);
            self.pos = from + end;
        }
    }

    fn number(&mut self) -> Option<f64> {
        let start = self.pos;
        let b = self.bytes;
        let mut p = self.pos;
        let neg = b.get(p) == Some(&b'-');
        if neg {
            p += 1;
        }
        let int_start = p;
        match b.get(p) {
            Some(b'0') => p += 1,
            Some(b'1'..=b'9') => {
                p += 1;
                while matches!(b.get(p), Some(b'0'..=b'9')) {
                    p += 1;
                }
            }
            _ => return None,
        }
        let int_end = p;
        let mut simple = true;
        if b.get(p) == Some(&b'.') {
            simple = false;
            p += 1;
            let s = p;
            while matches!(b.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
            if p == s {
                return None;
            }
        }
        if matches!(b.get(p), Some(b'e' | b'E')) {
            simple = false;
            p += 1;
            if matches!(b.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            let s = p;
            while matches!(b.get(p), Some(b'0'..=b'9')) {
                p += 1;
            }
            if p == s {
                return None;
            }
        }
        self.pos = p;
        if simple && int_end - int_start <= 15 {
            let mut n: u64 = 0;
            for &d in b.get(int_start..int_end)? {
                n = n * 10 + (d - b'0') as u64;
            }
            let f = n as f64;
            return Some(if neg { -f } else { f });
        }
        self.text.get(start..p)?.parse::<f64>().ok()
    }

    /// Parse a scalar at the current position (not `[` / `{`).
    fn scalar(&mut self) -> Option<Value> {
        match self.peek()? {
            b'"' => self.string().map(Value::String),
            b'-' | b'0'..=b'9' => self.number().map(Value::Number),
            b't' => self.expect_literal(b"true").map(|_| Value::Bool(true)),
            b'f' => self.expect_literal(b"false").map(|_| Value::Bool(false)),
            b'n' => self.expect_literal(b"null").map(|_| Value::Null),
            _ => None,
        }
    }

    /// After `{` and whitespace, at a key's opening quote: parse `"key" :`.
    fn key_colon(&mut self) -> Option<JsString> {
        if self.peek()? != b'"' {
            return None;
        }
        let k = self.string()?;
        self.skip_ws();
        if self.peek()? != b':' {
            return None;
        }
        self.pos += 1;
        Some(k)
    }

    fn parse(mut self) -> Option<Value> {
        let mut stack: Vec<Frame> = Vec::new();
        'value: loop {
            self.skip_ws();
            let mut v = match self.peek()? {
                b'[' => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek()? == b']' {
                        self.pos += 1;
                        Value::Array(Vec::new())
                    } else {
                        stack.push(Frame::Array(Vec::new()));
                        continue 'value;
                    }
                }
                b'{' => {
                    self.pos += 1;
                    self.skip_ws();
                    if self.peek()? == b'}' {
                        self.pos += 1;
                        Value::Object(Object::new())
                    } else {
                        let k = self.key_colon()?;
                        stack.push(Frame::Object(Object::new(), k));
                        continue 'value;
                    }
                }
                _ => self.scalar()?,
            };
            // Complete value `v`: attach it to its parent and close
            // containers as far as possible.
            loop {
                match stack.last_mut() {
                    None => {
                        self.skip_ws();
                        return if self.pos == self.bytes.len() {
                            Some(v)
                        } else {
                            None
                        };
                    }
                    Some(Frame::Array(items)) => {
                        items.push(v);
                        self.skip_ws();
                        match self.peek()? {
                            b',' => {
                                self.pos += 1;
                                continue 'value;
                            }
                            b']' => {
                                self.pos += 1;
                                match stack.pop() {
                                    Some(Frame::Array(items)) => v = Value::Array(items),
                                    _ => return None,
                                }
                            }
                            _ => return None,
                        }
                    }
                    Some(Frame::Object(obj, key)) => {
                        let k = std::mem::replace(key, JsString::from_string(String::new()));
                        obj.set_js(k, v);
                        self.skip_ws();
                        match self.peek()? {
                            b',' => {
                                self.pos += 1;
                                self.skip_ws();
                                *key = self.key_colon()?;
                                continue 'value;
                            }
                            b'}' => {
                                self.pos += 1;
                                match stack.pop() {
                                    Some(Frame::Object(obj, _)) => v = Value::Object(obj),
                                    _ => return None,
                                }
                            }
                            _ => return None,
                        }
                    }
                }
            }
        }
    }
}

/// Parse like `JSON.parse`; `None` for anything `JSON.parse` rejects.
pub fn parse(text: &str) -> Option<Value> {
    Parser {
        text,
        bytes: text.as_bytes(),
        pos: 0,
    }
    .parse()
}

/// `JSON.stringify(JSON.parse(text))`; `None` if `JSON.parse` would throw.
///
/// Note: V8's `JSON.stringify` throws a RangeError for extremely deep
/// nesting (stack exhaustion, around 10^4..10^5 levels); this function has
/// no such limit and always produces the text.
pub fn canonicalize(text: &str) -> Option<String> {
    // A text already in `JSON.stringify`'s form (every line pi wrote) is its own answer: the
    // conservative check costs a scan, where the tree costs a parse, allocations and a write.
    if super::canonical::is_canonical(text) {
        return Some(text.to_owned());
    }
    let v = parse(text)?;
    let mut out = String::with_capacity(text.len());
    v.write_json(&mut out);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> Option<String> {
        canonicalize(s)
    }

    #[test]
    fn scalars() {
        assert_eq!(canon("null").as_deref(), Some("null"));
        assert_eq!(canon(" true ").as_deref(), Some("true"));
        assert_eq!(canon("\t\r\nfalse").as_deref(), Some("false"));
        assert_eq!(canon("\"a\"").as_deref(), Some("\"a\""));
        assert_eq!(canon("-0").as_deref(), Some("0"));
        assert_eq!(canon("1e400").as_deref(), Some("null"));
        assert_eq!(canon("-1e400").as_deref(), Some("null"));
        assert_eq!(canon("1e21").as_deref(), Some("1e+21"));
        assert_eq!(canon("1e-7").as_deref(), Some("1e-7"));
        assert_eq!(canon("1e-6").as_deref(), Some("0.000001"));
        assert_eq!(canon("0.1").as_deref(), Some("0.1"));
        assert_eq!(canon("5e-324").as_deref(), Some("5e-324"));
        assert_eq!(
            canon("123456789012345678901").as_deref(),
            Some("123456789012345680000")
        );
        assert_eq!(canon("999999999999999").as_deref(), Some("999999999999999"));
        assert_eq!(canon("-12").as_deref(), Some("-12"));
        assert_eq!(canon("1E2").as_deref(), Some("100"));
        assert_eq!(canon("1.50").as_deref(), Some("1.5"));
        assert_eq!(canon("1e99999999999999999999").as_deref(), Some("null"));
        assert_eq!(canon("0e-99999999999999999").as_deref(), Some("0"));
        assert!(matches!(parse("-0"), Some(Value::Number(n)) if n == 0.0 && n.is_sign_negative()));
    }

    #[test]
    fn rejects() {
        for bad in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "+1",
            ".5",
            "1.",
            "1e",
            "1e+",
            "-",
            "NaN",
            "Infinity",
            "'a'",
            "\"\t\"",
            "\"\\u12\"",
            "\"\\x\"",
            "\u{feff}1",
            "1 2",
            "[1] x",
            "tru",
            "nul",
            "{\"a\" 1}",
            "{a:1}",
            "[",
            "{",
            "\"abc",
            "[1,,2]",
            "//c\n1",
            "/*c*/1",
            "\u{a0}1",
            "\u{2028}1",
            "\"\u{1}\"",
            "{,}",
            "[,]",
            "{\"a\":}",
            "-01",
            "00",
            "\"\\",
            "\"\\u",
            "1\u{0}",
        ] {
            assert_eq!(canon(bad), None, "should reject {bad:?}");
        }
    }

    #[test]
    fn strings_and_surrogates() {
        assert_eq!(canon(r#""\ud83d\ude00""#).as_deref(), Some("\"\u{1F600}\""));
        assert_eq!(canon(r#""\ud83d""#).as_deref(), Some(r#""\ud83d""#));
        assert_eq!(
            canon(r#""\uDE00\uD83D""#).as_deref(),
            Some(r#""\ude00\ud83d""#)
        );
        assert_eq!(
            canon(r#""\ud83dx\ude00""#).as_deref(),
            Some(r#""\ud83dx\ude00""#)
        );
        assert_eq!(canon(r#""\ud83d\n""#).as_deref(), Some(r#""\ud83d\n""#));
        assert_eq!(
            canon(r#""\ud83d\ud83d\ude00""#).as_deref(),
            Some("\"\\ud83d\u{1F600}\"")
        );
        assert_eq!(
            canon(r#""\u0000\u001F\b\f\n\r\t\/\"\\\u007f\u2028\u00e9""#).as_deref(),
            Some("\"\\u0000\\u001f\\b\\f\\n\\r\\t/\\\"\\\\\u{7f}\u{2028}\u{e9}\"")
        );
        let v = parse(r#""a\ud83db""#).unwrap();
        let s = v.as_js_string().unwrap();
        assert!(!s.is_well_formed());
        assert_eq!(s.as_str_if_valid(), None);
        assert_eq!(s.to_string_lossy(), "a\u{FFFD}b");
        assert_eq!(s.to_utf16(), vec![0x61, 0xD83D, 0x62]);
        assert_eq!(s.len_utf16(), 3);
        let back = JsString::from_utf16(&s.to_utf16());
        assert_eq!(&back, s);
        let ok = JsString::from_utf16(&[0xD83D, 0xDE00]);
        assert_eq!(ok.as_str_if_valid(), Some("\u{1F600}"));
        assert_eq!(ok.len_utf16(), 2);
        assert_eq!(JsString::from_str("x").to_string_lossy(), "x");
    }

    #[test]
    fn object_key_order() {
        let t = r#"{"10":1,"2":2,"01":3,"-1":4,"4294967295":5,"4294967294":6,"x":7,"1":8}"#;
        assert_eq!(
            canon(t).as_deref(),
            Some(r#"{"1":8,"2":2,"10":1,"4294967294":6,"01":3,"-1":4,"4294967295":5,"x":7}"#)
        );
        assert_eq!(
            canon(r#"{"b":1,"a":2,"b":3}"#).as_deref(),
            Some(r#"{"b":3,"a":2}"#)
        );
        assert_eq!(
            canon(r#"{"__proto__":{"x":1},"a":1}"#).as_deref(),
            Some(r#"{"__proto__":{"x":1},"a":1}"#)
        );
        assert_eq!(
            canon(r#"{"\ud800":1,"\ud800":2}"#).as_deref(),
            Some(r#"{"\ud800":2}"#)
        );
    }

    #[test]
    fn object_edits() {
        let mut o = Object::new();
        o.set("b", Value::from(1.0));
        o.set("a", Value::from(2.0));
        o.set("3", Value::from(3.0));
        o.set("0", Value::Null);
        o.set("b", Value::from("x"));
        assert_eq!(o.to_json(), r#"{"0":null,"3":3,"b":"x","a":2}"#);
        assert_eq!(o.get("b").and_then(Value::as_str), Some("x"));
        assert_eq!(o.get("3").and_then(Value::as_f64), Some(3.0));
        assert!(o.get("03").is_none());
        if let Some(v) = o.get_mut("a") {
            *v = Value::Bool(true);
        }
        assert!(o.remove("b").is_some());
        assert!(o.remove("b").is_none());
        assert!(o.remove("0").is_some());
        o.set("b", Value::Null);
        assert_eq!(o.to_json(), r#"{"3":3,"a":true,"b":null}"#);
        let keys: Vec<String> = o.keys().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["3", "a", "b"]);
        for (_, v) in o.iter_mut() {
            *v = Value::Null;
        }
        assert_eq!(o.to_json(), r#"{"3":null,"a":null,"b":null}"#);
        assert_eq!(o.len(), 3);
    }

    #[test]
    fn large_object_uses_index() {
        let mut o = Object::new();
        for i in 0..200 {
            o.set(&format!("k{i}"), Value::from(i as f64));
        }
        for i in (0..200).step_by(3) {
            assert!(o.remove(&format!("k{i}")).is_some());
        }
        o.set("k1", Value::Null);
        o.set("k0", Value::Bool(true));
        assert_eq!(o.get("k1"), Some(&Value::Null));
        assert_eq!(o.get("k2").and_then(Value::as_f64), Some(2.0));
        assert!(o.get("k3").is_none());
        let keys: Vec<String> = o.keys().map(|k| k.to_string()).collect();
        assert_eq!(keys.first().map(String::as_str), Some("k1"));
        assert_eq!(keys.last().map(String::as_str), Some("k0"));
        // Duplicate-heavy parse stays linear-ish and correct.
        let mut t = String::from("{");
        for i in 0..5000 {
            t.push_str(&format!("\"k{}\":{},", i % 100, i));
        }
        t.push_str("\"end\":0}");
        let v = parse(&t).unwrap();
        assert_eq!(v.get("k0").and_then(Value::as_f64), Some(4900.0));
        assert_eq!(v.as_object().map(Object::len), Some(101));
    }

    #[test]
    fn deep_nesting_no_overflow() {
        let n = 100_000;
        let t = format!("{}{}", "[".repeat(n), "]".repeat(n));
        let v = parse(&t).unwrap();
        let c = v.clone();
        assert!(c == v);
        assert_eq!(v.to_json(), t);
        drop(c);
        drop(v);
        let t = format!("{}1{}", "{\"a\":[".repeat(n), "]}".repeat(n));
        assert_eq!(canon(&t).as_deref(), Some(t.as_str()));
        let unclosed = "[".repeat(n);
        assert_eq!(canon(&unclosed), None);
        let s = format!("{:?}", parse("[[1]]").unwrap());
        assert_eq!(s, "[[1]]");
    }

    #[test]
    fn clone_eq_and_into() {
        let v = parse(r#"{"a":[1,{"b":"\ud800"}],"2":null}"#).unwrap();
        let c = v.clone();
        assert_eq!(c, v);
        assert_eq!(c.to_json(), v.to_json());
        let o = c.into_object().unwrap();
        assert_eq!(o.clone(), o);
        assert!(Value::Null.into_object().is_err());
        let a = parse("[1,2]").unwrap().into_array().unwrap();
        assert_eq!(a.len(), 2);
        let s = parse("\"q\"").unwrap().into_string().unwrap();
        assert_eq!(s, "q");
        assert_ne!(parse("[1]").unwrap(), parse("[2]").unwrap());
        assert_ne!(parse(r#"{"a":1,"b":1}"#), parse(r#"{"b":1,"a":1}"#));
        let mut w = Value::from(1.0);
        assert_eq!(w.take(), Value::Number(1.0));
        assert!(w.is_null());
    }

    #[test]
    fn numbers_to_json() {
        for (n, s) in [
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123.456, "123.456"),
            (-1.5e-10, "-1.5e-10"),
            (9007199254740993.0, "9007199254740992"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(Value::Number(n).to_json(), s);
        }
    }
}
