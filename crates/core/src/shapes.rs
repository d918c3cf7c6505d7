//! Entries handed to JS as *shapes*: the layout of an entry's object (its keys, in order, and
//! what kind of value each holds) once per session, then per entry only its values.
//!
//! Why: handing a giant session's branch to JS as JSON shells (`entry::shell_of`) made V8's
//! `JSON.parse` the cost of `getBranch()`: ~2.5 µs an entry, most of it making the same short
//! strings (`"message"`, `"assistant"`, `"anthropic-messages"`, the model...) again for every
//! entry and matching keys. With a shape, JS builds the entry with a function compiled once
//! for that layout (an object literal in the text's key order), takes repeated short strings
//! from a per-session table (one JS string shared by every entry that holds it), and parses
//! only the values that differ (ids, timestamps, numbers) as one flat JSON array per piece.
//!
//! The input is the text JS would otherwise parse: an entry's shell (`[prefix, tail...]`, see
//! `entry::shell_of`) or its whole object text, ASCII with `\uXXXX` escapes
//! (`materialize::push_escaped`). Everything this form cannot carry exactly as `JSON.parse`
//! would (a `__proto__` key, a key written with escapes, a key repeated in one object, deep or
//! wide objects) is refused, and the entry goes to JS as its text, as before.
//!
//! A layout is JSON: an object is an array of members `[key, kind]`, in text order, where
//! `key` is the key's JSON string and `kind` is one of [`VALUE`], [`INTERNED`], [`LAZY`],
//! [`TRUE`], [`FALSE`], [`NULL`], [`STRING`], [`NUMBER`], [`INT`], or a nested object's layout.
//!
//! Values that differ per entry mostly need no JSON parse in JS: a string without escapes
//! of up to [`POOL_MAX`] characters goes into the piece's string *pool* (one latin1 string;
//! JS takes a slice of it: ids, short names), a number
//! goes into the piece's integers (an `Int32Array`) or its numbers (a `Float64Array`; Rust's
//! `f64` parse rounds correctly, as V8's does, so the value is the one `JSON.parse` gives). Only arrays and escaped strings
//! stay JSON text. Parsing 50 MB of values text was ~0.4 s of a 700 MB branch's hand-out.

use foldhash::{HashMap, HashMapExt};

/// The next value of the piece's value array (a number, an array, a string not interned).
pub const VALUE: u8 = 0;
/// A string from the session's table: the next ref indexes it.
pub const INTERNED: u8 = 1;
/// A heavy value left out of a shell: a lazy property.
pub const LAZY: u8 = 2;
pub const TRUE: u8 = 3;
pub const FALSE: u8 = 4;
pub const NULL: u8 = 5;
/// A plain string (no escapes) from the piece's string pool: the next pool slice.
pub const STRING: u8 = 6;
/// A number from the piece's numbers: the next one.
pub const NUMBER: u8 = 7;
/// An integer from the piece's integers (an `Int32Array`): the next one. V8 keeps a small
/// integer read from it as a Smi, as `JSON.parse` does, where one read from the numbers
/// (`Float64Array`) became a heap number: 100,000 more objects on a 100 MB branch.
pub const INT: u8 = 8;

/// Shapes one session may register (then entries with new layouts go as text).
const MAX_SHAPES: usize = 4096;
/// Strings one session may intern.
const MAX_INTERNED: usize = 1 << 16;
/// Longest string token (quotes included) interned: repeated values are short names.
const MAX_INTERNED_LEN: usize = 64;
/// Keys whose values are (nearly) unique per entry: interning them would only fill the table.
fn is_unique_key(key: &[u8]) -> bool {
    matches!(
        key,
        b"\"id\""
            | b"\"parentId\""
            | b"\"timestamp\""
            | b"\"responseId\""
            | b"\"toolCallId\""
            | b"\"targetId\""
            | b"\"fromId\""
            | b"\"firstKeptEntryId\""
            | b"\"parentSession\""
    )
}
/// Longest string taken from the pool. V8 copies a slice shorter than 13 characters, but
/// makes a longer one a view that keeps the whole pool alive as long as the entry lives:
/// longer strings (timestamps, response ids) go as JSON values, which `JSON.parse` copies.
const POOL_MAX: usize = 12;
/// Deepest object nesting carried; members of one object carried.
const MAX_DEPTH: usize = 16;
const MAX_MEMBERS: usize = 64;

/// A session's shapes and interned strings, and what JS has not been sent yet.
#[derive(Debug)]
pub struct Tables {
    shapes: HashMap<Box<str>, u32>,
    interned: HashMap<Box<[u8]>, u32>,
    /// The layout and key buffers [`encode`] reuses.
    scratch: String,
    keys: Vec<(usize, usize)>,
    /// Layouts registered since the last [`Tables::take_new`], as a JSON array body.
    new_shapes: String,
    /// Strings interned since then, as a JSON array body.
    new_interned: String,
    /// How many items each of the two holds.
    n_new_shapes: usize,
    n_new_interned: usize,
}

/// What [`Tables::take_new`] hands JS: new layouts and strings, with the ids the first of each has.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct NewEntries {
    pub shapes: String,
    pub shape_base: u32,
    pub interned: String,
    pub interned_base: u32,
}

impl Default for Tables {
    fn default() -> Self {
        Tables {
            shapes: HashMap::new(),
            interned: HashMap::new(),
            scratch: String::new(),
            keys: Vec::new(),
            new_shapes: String::new(),
            new_interned: String::new(),
            n_new_shapes: 0,
            n_new_interned: 0,
        }
    }
}

impl Tables {
    /// The layouts and strings registered since the last call, and the id of the first of each.
    pub fn take_new(&mut self) -> NewEntries {
        let n = NewEntries {
            shape_base: (self.shapes.len() - self.n_new_shapes) as u32,
            interned_base: (self.interned.len() - self.n_new_interned) as u32,
            shapes: std::mem::take(&mut self.new_shapes),
            interned: std::mem::take(&mut self.new_interned),
        };
        self.n_new_shapes = 0;
        self.n_new_interned = 0;
        n
    }

    fn intern(&mut self, token: &[u8]) -> Option<u32> {
        if let Some(&id) = self.interned.get(token) {
            return Some(id);
        }
        if self.interned.len() >= MAX_INTERNED {
            return None;
        }
        let id = self.interned.len() as u32;
        // Tokens are ASCII (the text is).
        push_item(&mut self.new_interned, std::str::from_utf8(token).ok()?);
        self.interned.insert(token.into(), id);
        self.n_new_interned += 1;
        Some(id)
    }

    fn shape(&mut self, layout: &str) -> Option<u32> {
        if let Some(&id) = self.shapes.get(layout) {
            return Some(id);
        }
        if self.shapes.len() >= MAX_SHAPES {
            return None;
        }
        let id = self.shapes.len() as u32;
        push_item(&mut self.new_shapes, layout);
        self.n_new_shapes += 1;
        self.shapes.insert(layout.into(), id);
        Some(id)
    }
}

fn push_item(body: &mut String, item: &str) {
    if !body.is_empty() {
        body.push(',');
    }
    body.push_str(item);
}

/// The values and string refs of the entries encoded into one piece.
#[derive(Debug, Default)]
pub struct Out {
    /// A JSON array body: the values, comma separated.
    pub values: Vec<u8>,
    /// Indices into the session's interned strings, in the order the shapes take them.
    pub refs: Vec<u32>,
    /// The [`STRING`] values' bodies, one after another (ASCII: the text is).
    pub pool: Vec<u8>,
    /// Where each [`STRING`] value starts in `pool` (the next start, or `pool`'s length after
    /// [`Out::finish`], is its end).
    pub starts: Vec<u32>,
    /// The [`NUMBER`] values.
    pub nums: Vec<f64>,
    /// The [`INT`] values.
    pub ints: Vec<i32>,
}

impl Out {
    /// Append one raw JSON value (an element of the values array).
    pub fn push_value(&mut self, raw: &[u8]) {
        if !self.values.is_empty() {
            self.values.push(b',');
        }
        self.values.extend_from_slice(raw);
    }

    /// Close the string pool (`starts` gets its end), once the piece is encoded.
    pub fn finish(&mut self) {
        self.starts.push(self.pool.len() as u32);
    }

    fn lengths(&self) -> [usize; 6] {
        [
            self.values.len(),
            self.refs.len(),
            self.pool.len(),
            self.starts.len(),
            self.nums.len(),
            self.ints.len(),
        ]
    }

    fn truncate(&mut self, l: [usize; 6]) {
        self.values.truncate(l[0]);
        self.refs.truncate(l[1]);
        self.pool.truncate(l[2]);
        self.starts.truncate(l[3]);
        self.nums.truncate(l[4]);
        self.ints.truncate(l[5]);
    }
}

/// Encode one entry's text (`shell`: a shell array, else a whole object) into `out`: its
/// shape id, or `None` (with `out` as it was) when this form cannot carry it.
pub fn encode(text: &[u8], shell: bool, t: &mut Tables, out: &mut Out) -> Option<u32> {
    let lengths = out.lengths();
    let mut layout = std::mem::take(&mut t.scratch);
    layout.clear();
    let mut keys = std::mem::take(&mut t.keys);
    keys.clear();
    let mut e = Encoder {
        s: text,
        t,
        out,
        layout,
        keys,
    };
    let ok = (|| {
        let i = skip_ws(e.s, 0);
        let end = if shell {
            e.shell(i, 0)?
        } else {
            e.layout.push('[');
            let end = e.object(i, 0, 0)?;
            e.layout.push(']');
            end
        };
        (skip_ws(e.s, end) == e.s.len()).then_some(())
    })();
    let Encoder {
        t, layout, keys, ..
    } = e;
    let id = ok.and_then(|()| t.shape(&layout));
    t.scratch = layout;
    t.keys = keys;
    if id.is_none() {
        out.truncate(lengths);
    }
    id
}

struct Encoder<'s, 't, 'o> {
    s: &'s [u8],
    t: &'t mut Tables,
    out: &'o mut Out,
    /// The layout being written: members where they come, nested objects inline.
    layout: String,
    /// The keys of the objects being written, innermost last (to refuse a repeated key): their
    /// places in the text, in a buffer the tables keep between entries.
    keys: Vec<(usize, usize)>,
}

impl<'s> Encoder<'s, '_, '_> {
    /// Start the member `key` of the object whose keys start at `keys[base]` (its kind is
    /// written next, then `]`).
    fn member(&mut self, base: usize, key: &'s [u8]) -> Option<()> {
        let own = self.keys.get(base..)?;
        let text = self.s;
        let same = |&(at, len): &(usize, usize)| text.get(at..at + len) == Some(key);
        if own.len() >= MAX_MEMBERS || own.iter().any(same) {
            return None;
        }
        if !own.is_empty() {
            self.layout.push(',');
        }
        // The key is a slice of the text: kept as its place in it.
        let at = (key.as_ptr() as usize).checked_sub(text.as_ptr() as usize)?;
        self.keys.push((at, key.len()));
        self.layout.push('[');
        // Keys are ASCII (the text is): a key token is its own layout text.
        self.layout.push_str(std::str::from_utf8(key).ok()?);
        self.layout.push(',');
        Some(())
    }

    /// A shell `[prefix, tail...]` at `i`, as one object's layout; the end of the array.
    fn shell(&mut self, i: usize, depth: usize) -> Option<usize> {
        let mut i = expect(self.s, i, b'[')?;
        let base = self.keys.len();
        self.layout.push('[');
        i = self.object(skip_ws(self.s, i), base, depth)?;
        loop {
            i = skip_ws(self.s, i);
            match self.s.get(i)? {
                b']' => break,
                b',' => i = skip_ws(self.s, i + 1),
                _ => return None,
            }
            match self.s.get(i)? {
                b'"' => {
                    let end = string_end(self.s, i)?;
                    self.member(base, key_token(self.s, i, end)?)?;
                    self.layout.push(char::from(b'0' + LAZY));
                    self.layout.push(']');
                    i = end;
                }
                b'{' => i = self.object(i, base, depth)?,
                b'[' => {
                    // ["message", <shell of the message>]
                    let k = skip_ws(self.s, i + 1);
                    let kend = string_end(self.s, k)?;
                    self.member(base, key_token(self.s, k, kend)?)?;
                    let j = expect(self.s, skip_ws(self.s, kend), b',')?;
                    let j = self.shell(skip_ws(self.s, j), depth + 1)?;
                    self.layout.push(']');
                    i = expect(self.s, skip_ws(self.s, j), b']')?;
                }
                _ => return None,
            }
        }
        self.keys.truncate(base);
        self.layout.push(']');
        Some(i + 1)
    }

    /// The members of the object at `i`, written as members of the object whose keys start
    /// at `keys[base]`; the end of the object.
    fn object(&mut self, i: usize, base: usize, depth: usize) -> Option<usize> {
        if depth > MAX_DEPTH {
            return None;
        }
        let mut i = skip_ws(self.s, expect(self.s, i, b'{')?);
        if self.s.get(i) == Some(&b'}') {
            return Some(i + 1);
        }
        loop {
            let kend = string_end(self.s, i)?;
            let key = key_token(self.s, i, kend)?;
            let v = skip_ws(self.s, expect(self.s, skip_ws(self.s, kend), b':')?);
            self.member(base, key)?;
            let end = self.value(key, v, depth)?;
            self.layout.push(']');
            i = skip_ws(self.s, end);
            match self.s.get(i)? {
                b',' => i = skip_ws(self.s, i + 1),
                b'}' => return Some(i + 1),
                _ => return None,
            }
        }
    }

    /// The value of `key` at `i`: its kind written to the layout; its end.
    fn value(&mut self, key: &[u8], i: usize, depth: usize) -> Option<usize> {
        let s = self.s;
        let constant = |word: &[u8]| {
            s.get(i..i + word.len())
                .filter(|w| *w == word)
                .map(|_| i + word.len())
        };
        let (end, kind) = match *s.get(i)? {
            b'{' => {
                let base = self.keys.len();
                self.layout.push('[');
                let end = self.object(i, base, depth + 1)?;
                self.keys.truncate(base);
                self.layout.push(']');
                return Some(end);
            }
            b'"' => {
                let end = string_end(s, i)?;
                let token = s.get(i..end)?;
                let unique = is_unique_key(key);
                let id = (!unique && token.len() <= MAX_INTERNED_LEN)
                    .then(|| self.t.intern(token))
                    .flatten();
                match id {
                    Some(id) => {
                        self.out.refs.push(id);
                        (end, INTERNED)
                    }
                    None => match token.get(1..token.len() - 1) {
                        // A pool string must fit a u32 offset (a piece is far smaller).
                        Some(body)
                            if body.len() <= POOL_MAX
                                && !body.contains(&b'\\')
                                && self.out.pool.len() < u32::MAX as usize / 2 =>
                        {
                            self.out.starts.push(self.out.pool.len() as u32);
                            self.out.pool.extend_from_slice(body);
                            (end, STRING)
                        }
                        _ => {
                            self.out.push_value(token);
                            (end, VALUE)
                        }
                    },
                }
            }
            b't' => (constant(b"true")?, TRUE),
            b'f' => (constant(b"false")?, FALSE),
            b'n' => (constant(b"null")?, NULL),
            b'-' | b'0'..=b'9' => {
                let end = value_end(s, i)?;
                let token = s.get(i..end)?;
                // The token is a JSON number (the text was parsed as JSON at load), which
                // Rust's float syntax accepts; rounding is correct in both.
                match parse_number(token) {
                    // -0 is not an integer here: it stays a double.
                    Ok(n)
                        if n.fract() == 0.0
                            && n.abs() <= 1e9
                            && !(n == 0.0 && n.is_sign_negative()) =>
                    {
                        self.out.ints.push(n as i32);
                        (end, INT)
                    }
                    Ok(n) => {
                        self.out.nums.push(n);
                        (end, NUMBER)
                    }
                    Err(_) => {
                        self.out.push_value(token);
                        (end, VALUE)
                    }
                }
            }
            _ => {
                let end = value_end(s, i)?;
                self.out.push_value(s.get(i..end)?);
                (end, VALUE)
            }
        };
        self.layout.push(char::from(b'0' + kind));
        Some(end)
    }
}

/// The double a JSON number token denotes (the one `JSON.parse` gives: both round
/// correctly). Most tokens in a session (counts, costs, times) take the exact fast path:
/// at most 15 significant digits and a power of ten up to 22, where one IEEE multiply or
/// divide of two exact values rounds correctly (Clinger). Others go to Rust's parser.
fn parse_number(token: &[u8]) -> Result<f64, ()> {
    const POW10: [f64; 23] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ];
    let slow = || {
        std::str::from_utf8(token)
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .ok_or(())
    };
    let (neg, digits) = match token.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, token),
    };
    let mut mantissa: u64 = 0;
    let mut significant = 0;
    let mut scale: i32 = 0;
    let mut seen_dot = false;
    for &c in digits {
        match c {
            b'0'..=b'9' => {
                if significant > 0 || c != b'0' {
                    significant += 1;
                }
                if significant > 15 {
                    return slow();
                }
                mantissa = mantissa * 10 + u64::from(c - b'0');
                if seen_dot {
                    scale -= 1;
                }
            }
            b'.' if !seen_dot => seen_dot = true,
            // An exponent, or anything unexpected: the full parser.
            _ => return slow(),
        }
    }
    if digits.is_empty() || scale < -22 {
        return slow();
    }
    // mantissa < 10^15 < 2^53: exact as a double, and so is 10^-scale.
    let magnitude = mantissa as f64 / POW10[(-scale) as usize];
    Ok(if neg { -magnitude } else { magnitude })
}

/// A key's token (`"..."`) if this form carries it: no escapes, not `__proto__`, not all
/// digits (V8 orders integer keys first; the shells never carry them either).
fn key_token(s: &[u8], start: usize, end: usize) -> Option<&[u8]> {
    let tok = s.get(start..end)?;
    let body = tok.get(1..tok.len().checked_sub(1)?)?;
    let digits = !body.is_empty() && body.iter().all(u8::is_ascii_digit);
    (!body.contains(&b'\\') && body != b"__proto__" && !digits).then_some(tok)
}

fn skip_ws(s: &[u8], mut i: usize) -> usize {
    while matches!(s.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

fn expect(s: &[u8], i: usize, c: u8) -> Option<usize> {
    (s.get(i) == Some(&c)).then_some(i + 1)
}

/// The end (one past the closing quote) of the string token at `i`.
fn string_end(s: &[u8], i: usize) -> Option<usize> {
    if s.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        match s.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => j += 2,
            _ => j += 1,
        }
    }
}

/// The end of the (valid) JSON value at `i`: an array or object skipped whole, else a
/// number (up to the next delimiter).
fn value_end(s: &[u8], i: usize) -> Option<usize> {
    if !matches!(s.get(i)?, b'[' | b'{') {
        let mut j = i;
        while !matches!(
            s.get(j),
            None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
        ) {
            j += 1;
        }
        return (j > i).then_some(j);
    }
    let mut depth = 0usize;
    let mut j = i;
    loop {
        match s.get(j)? {
            b'"' => j = string_end(s, j)?,
            b'[' | b'{' => {
                depth += 1;
                j += 1;
            }
            b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                j += 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => j += 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Encode one entry: its shape id, values text, refs, pool strings and numbers (the
    /// integers after the doubles).
    type Encoded = (u32, String, Vec<u32>, Vec<String>, Vec<f64>);

    fn enc(t: &mut Tables, text: &str, shell: bool) -> Option<Encoded> {
        let mut out = Out::default();
        let id = encode(text.as_bytes(), shell, t, &mut out)?;
        out.finish();
        let pool = String::from_utf8(out.pool).expect("ascii");
        let strings = out
            .starts
            .windows(2)
            .map(|w| pool[w[0] as usize..w[1] as usize].to_string())
            .collect();
        let values = String::from_utf8(out.values).expect("ascii");
        let mut nums = out.nums;
        nums.extend(out.ints.iter().map(|&i| f64::from(i)));
        Some((id, values, out.refs, strings, nums))
    }

    #[test]
    fn whole_objects_share_a_shape_and_interned_strings() {
        let mut t = Tables::default();
        let a = r#"{"type":"model_change","id":"a1","parentId":null,"n":-0.5e3,"ok":true,"x":[1,{"y":2}],"u":{"i":1,"c":{"t":2}}}"#;
        let (id, values, refs, strings, nums) = enc(&mut t, a, false).expect("encoded");
        assert_eq!(id, 0);
        assert_eq!(values, r#"[1,{"y":2}]"#);
        assert_eq!(refs, [0]);
        assert_eq!(strings, ["a1"]);
        assert_eq!(nums, [-500.0, 1.0, 2.0]);
        let b = a.replace("a1", "b2");
        let (id2, _, refs2, strings2, _) = enc(&mut t, &b, false).expect("encoded");
        assert_eq!((id2, refs2, strings2), (0, vec![0], vec!["b2".to_string()]));
        let n = t.take_new();
        assert_eq!(
            n.shapes,
            r#"[["type",1],["id",6],["parentId",5],["n",8],["ok",3],["x",0],["u",[["i",8],["c",[["t",8]]]]]]"#
        );
        assert_eq!(n.interned, r#""model_change""#);
        assert_eq!((n.shape_base, n.interned_base), (0, 0));
        assert_eq!(
            t.take_new(),
            NewEntries {
                shape_base: 1,
                interned_base: 1,
                ..NewEntries::default()
            }
        );
    }

    #[test]
    fn shells_carry_lazy_keys_and_nested_messages() {
        let mut t = Tables::default();
        let s = r#"[{"type":"message","id":"a"},["message",[{"role":"assistant"},"content",{"api":"x","usage":{"input":3}}]],"extra",{"z":null}]"#;
        let (_, values, refs, strings, nums) = enc(&mut t, s, true).expect("encoded");
        assert_eq!(values, "");
        assert_eq!(refs, [0, 1, 2]);
        assert_eq!((strings, nums), (vec!["a".to_string()], vec![3.0]));
        assert_eq!(
            t.take_new().shapes,
            r#"[["type",1],["id",6],["message",[["role",1],["content",2],["api",1],["usage",[["input",8]]]]],["extra",2],["z",5]]"#
        );
    }

    #[test]
    fn numbers_are_the_doubles_json_parse_gives_and_escaped_strings_stay_json() {
        let mut t = Tables::default();
        // Values JSON.parse reads as these doubles (checked against V8 in __test__/shapes.test.ts).
        let text = r#"{"id":"x\u00e9","a":0.1,"b":1e400,"c":-0,"d":9007199254740993,"e":1.7976931348623157e308,"f":5e-324,"g":0.005847,"h":1748768842904,"i":-12.5E-3,"j":-7,"k":1E2}"#;
        let (_, values, _, strings, nums) = enc(&mut t, text, false).expect("encoded");
        assert_eq!(values, r#""x\u00e9""#);
        assert!(strings.is_empty());
        // The doubles, then the integers (`-0` and those beyond 1e9 are doubles).
        let want = [
            0.1,
            f64::INFINITY,
            -0.0,
            9007199254740992.0,
            f64::MAX,
            5e-324,
            0.005847,
            1748768842904.0,
            -0.0125,
            -7.0,
            100.0,
        ];
        assert_eq!(nums.len(), want.len());
        for (got, want) in nums.iter().zip(want) {
            assert_eq!(got.to_bits(), want.to_bits(), "{got} != {want}");
        }
    }

    #[test]
    fn refuses_what_json_parse_would_read_otherwise() {
        let mut t = Tables::default();
        for text in [
            r#"{"__proto__":1}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"\u0061":1}"#,
            r#"{"12":1}"#,
            r#"{"a":{"__proto__":{}}}"#,
            r#"{"a":1"#,
            r#"{"a":1} x"#,
            r#"{"a":tru}"#,
            "",
        ] {
            let mut out = Out::default();
            out.push_value(b"7");
            assert_eq!(
                encode(text.as_bytes(), false, &mut t, &mut out),
                None,
                "{text}"
            );
            // Nothing of a refused entry is left behind.
            assert_eq!(out.values, b"7");
            assert!(out.refs.is_empty() && out.pool.is_empty() && out.starts.is_empty());
            assert!(out.nums.is_empty());
        }
        let deep = format!(
            "{}{}",
            "{\"a\":".repeat(40),
            "1".to_string() + &"}".repeat(40)
        );
        assert_eq!(enc(&mut t, &deep, false), None);
        // Whitespace between tokens, as a hand-edited file may have.
        assert!(enc(&mut t, "{ \"a\" : 1 , \"b\" : [ 1 , 2 ] }", false).is_some());
    }

    #[test]
    fn the_number_fast_path_gives_what_rusts_parser_gives() {
        let mut tokens: Vec<String> = [
            "0",
            "-0",
            "0.0",
            "-0.0",
            "1",
            "-1",
            "0.1",
            "0.005847",
            "1748768842904",
            "123456789012345",
            "1234567890123456",
            "9007199254740993",
            "0.30000000000000004",
            "1e5",
            "1E-7",
            "-12.5E-3",
            "100.000",
            "000",
            "0.000000000000000000001",
            "0.0000000000000000000001",
            "999999999999999",
            "99999999999999.9",
            "4.35",
            "2.675",
            "1.005",
            "5e-324",
            "1.7976931348623157e308",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        // Costs and counts as sessions hold them: up to 6 decimals, and some longer ones.
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let int = x % 10_000_000;
            let frac = (x >> 24) % 1_000_000_000_000;
            let decimals = ((x >> 60) % 13) as usize;
            let sign = if x & 1 == 1 { "-" } else { "" };
            let f = format!("{frac:012}");
            tokens.push(format!("{sign}{int}.{}", &f[..decimals.max(1)]));
            tokens.push(format!("{sign}{}", x % 100_000_000_000_000_000));
        }
        for t in &tokens {
            let want: f64 = t.parse().expect("valid");
            let got = parse_number(t.as_bytes()).expect("parsed");
            assert_eq!(got.to_bits(), want.to_bits(), "{t}: {got} != {want}");
        }
    }
}
