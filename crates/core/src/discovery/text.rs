//! JS value coercions on raw (validated) JSON text, for the discovery record.

use super::Invalid;
use crate::json::scan::{self, Kind};

/// `Date.parse` for the canonical `YYYY-MM-DDTHH:MM:SS[.mmm]Z` literal (no escapes),
/// with in-range fields. Anything else returns `None` (the JS layer evaluates it).
pub fn iso_ms(raw: &str) -> Option<f64> {
    let b = raw.as_bytes();
    let inner = b.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    if inner.len() != 20 && inner.len() != 24 {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let mut v = 0i64;
        for &c in inner.get(r)? {
            if !c.is_ascii_digit() {
                return None;
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Some(v)
    };
    let at = |i: usize, c: u8| inner.get(i) == Some(&c);
    if !(at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':')) {
        return None;
    }
    let ms = if inner.len() == 24 {
        if !(at(19, b'.') && at(23, b'Z')) {
            return None;
        }
        num(20..23)?
    } else {
        if !at(19, b'Z') {
            return None;
        }
        0
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || d < 1 || d > days_in_month(y, mo) || h > 23 || mi > 59 || s > 59 {
        return None;
    }
    let days = days_from_civil(y, mo, d);
    Some((days * 86_400_000 + h * 3_600_000 + mi * 60_000 + s * 1000 + ms) as f64)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
pub(crate) fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Top-level elements of a validated JSON array literal.
pub fn array_elements(raw: &str) -> Vec<&str> {
    let b = raw.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut i = 0usize;
    while i < b.len() {
        match b[i] {
            b'"' => {
                // Leave `i` on the closing quote (the loop steps past it).
                i = skip_string(b, i).saturating_sub(1);
            }
            b'[' | b'{' => {
                depth += 1;
                if depth == 1 {
                    start = i + 1;
                }
            }
            b']' | b'}' => {
                if depth == 1 {
                    push_elem(raw, start, i, &mut out);
                }
                depth = depth.saturating_sub(1);
            }
            b',' if depth == 1 => {
                push_elem(raw, start, i, &mut out);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// End (exclusive) of the string literal whose opening quote is at `i`, in validated text.
fn skip_string(b: &[u8], i: usize) -> usize {
    crate::json::scan::string_end_trusted(b, i + 1)
}

/// End (exclusive) of the value starting at `i` in validated JSON text.
fn skip_value(b: &[u8], i: usize) -> usize {
    match b.get(i) {
        Some(b'"') => skip_string(b, i),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut j = i;
            while j < b.len() {
                match b[j] {
                    b'"' => {
                        j = skip_string(b, j);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return j + 1;
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
            b.len()
        }
        _ => {
            let mut j = i;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            j
        }
    }
}

/// Top-level `(raw key literal, raw value)` pairs of a validated JSON object literal,
/// located without re-validating (the enclosing line was scanned by `json::scan`).
pub struct Fields<'a> {
    pairs: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    pub fn of(raw: &'a str) -> Fields<'a> {
        let b = raw.as_bytes();
        let mut pairs = Vec::new();
        let ws = |b: &[u8], mut i: usize| {
            while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
            }
            i
        };
        let mut i = ws(b, 1);
        while i < b.len() && b[i] == b'"' {
            let kend = skip_string(b, i);
            let v = ws(b, ws(b, kend) + 1);
            let vend = skip_value(b, v).min(b.len());
            if let (Some(k), Some(val)) = (raw.get(i..kend), raw.get(v..vend)) {
                pairs.push((k, val));
            }
            i = ws(b, vend);
            if b.get(i) != Some(&b',') {
                break;
            }
            i = ws(b, i + 1);
        }
        Fields { pairs }
    }

    /// Raw value of `key` (last occurrence wins, as in `JSON.parse`).
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.pairs
            .iter()
            .rev()
            .find(|(k, _)| key_is(k, key))
            .map(|(_, v)| *v)
    }

    /// Whether `key` holds the string `want`.
    pub fn str_is(&self, key: &str, want: &str) -> bool {
        match self.get(key) {
            Some(raw) if scan::kind_of(raw) == Kind::String => key_is(raw, want),
            _ => false,
        }
    }
}

/// Whether the raw string literal `lit` decodes to `want`.
fn key_is(lit: &str, want: &str) -> bool {
    if lit.contains('\\') {
        scan::decode_str(lit).as_deref() == Some(want)
    } else {
        lit.len() == want.len() + 2 && lit.get(1..lit.len() - 1) == Some(want)
    }
}

fn push_elem<'a>(raw: &'a str, start: usize, end: usize, out: &mut Vec<&'a str>) {
    if let Some(s) = raw.get(start..end) {
        let t = s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        if !t.is_empty() {
            out.push(t);
        }
    }
}

/// A decoded JS string: UTF-8 when it is valid Unicode (no lone surrogates), else UTF-16.
#[derive(Clone, Debug, PartialEq)]
pub enum Text {
    Utf8(String),
    Utf16(Vec<u16>),
}

impl Text {
    /// [`Text::decode`], taking the body (no copy when there is nothing to decode).
    pub fn decode_owned(body: String) -> Text {
        if body.contains('\\') {
            Text::decode(&body)
        } else {
            Text::Utf8(body)
        }
    }

    /// Decode an escaped JSON string body (validated by the scanner).
    pub fn decode(body: &str) -> Text {
        if !body.contains('\\') {
            return Text::Utf8(body.to_owned());
        }
        match decode_utf8(body) {
            Some(s) => Text::Utf8(s),
            None => Text::Utf16(decode_utf16(body)),
        }
    }

    /// The first `n` UTF-16 units (`slice(0, n)`; `n` ends on a character here: it is the
    /// length of a text that opens this one).
    pub fn prefix(&self, n: u64) -> Text {
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        match self {
            Text::Utf8(s) => {
                let mut units = 0usize;
                let mut end = s.len();
                for (i, c) in s.char_indices() {
                    if units >= n {
                        end = i;
                        break;
                    }
                    units += c.len_utf16();
                }
                Text::Utf8(s[..end].to_owned())
            }
            Text::Utf16(u) => Text::Utf16(u[..n.min(u.len())].to_vec()),
        }
    }

    /// Length in UTF-16 code units (`String.prototype.length`).
    pub fn units(&self) -> u64 {
        match self {
            Text::Utf8(s) => {
                let b = s.as_bytes();
                // Every non-continuation byte starts a char; 4-byte chars are 2 units.
                let chars = b.iter().filter(|&&c| (c & 0xC0) != 0x80).count();
                let astral = b.iter().filter(|&&c| c >= 0xF0).count();
                (chars + astral) as u64
            }
            Text::Utf16(u) => u.len() as u64,
        }
    }
}

/// UTF-16 length of the text an escaped JSON string body (validated) decodes to, without
/// decoding it: an escape is one unit (`\uXXXX` included: a surrogate pair is two escapes),
/// a character is one unit, or two above U+FFFF.
pub fn escaped_units(body: &str) -> u64 {
    let b = body.as_bytes();
    let mut n = 0u64;
    let mut i = 0usize;
    while let Some(p) = memchr::memchr(b'\\', &b[i..]) {
        n += plain_units(&b[i..i + p]);
        let esc = if b.get(i + p + 1) == Some(&b'u') {
            6
        } else {
            2
        };
        n += 1;
        i = (i + p + esc).min(b.len());
    }
    n + plain_units(&b[i..])
}

/// UTF-16 length of UTF-8 bytes with no escapes.
fn plain_units(b: &[u8]) -> u64 {
    let chars = b.iter().filter(|&&c| (c & 0xC0) != 0x80).count();
    let astral = b.iter().filter(|&&c| c >= 0xF0).count();
    (chars + astral) as u64
}

fn hex4(b: &[u8]) -> u32 {
    let mut v = 0u32;
    for &c in b.iter().take(4) {
        v = v * 16 + (c as char).to_digit(16).unwrap_or(0);
    }
    v
}

/// Decode escapes to UTF-8; `None` when a lone surrogate needs UTF-16.
fn decode_utf8(body: &str) -> Option<String> {
    let b = body.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0usize;
    while let Some(p) = memchr::memchr(b'\\', &b[i..]) {
        out.push_str(body.get(i..i + p)?);
        i += p + 1;
        let c = *b.get(i)?;
        i += 1;
        match c {
            b'n' => out.push('\n'),
            b't' => out.push('\t'),
            b'r' => out.push('\r'),
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'u' => {
                let u = hex4(b.get(i..i + 4)?);
                i += 4;
                if (0xD800..0xDC00).contains(&u) {
                    if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                        let lo = hex4(b.get(i + 2..i + 6)?);
                        if (0xDC00..0xE000).contains(&lo) {
                            i += 6;
                            out.push(char::from_u32(
                                0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00),
                            )?);
                            continue;
                        }
                    }
                    return None;
                }
                out.push(char::from_u32(u)?);
            }
            other => out.push(other as char),
        }
    }
    out.push_str(body.get(i..)?);
    Some(out)
}

/// Decode escapes to UTF-16 code units (lone surrogates kept, as `JSON.parse` does).
fn decode_utf16(body: &str) -> Vec<u16> {
    let b = body.as_bytes();
    let mut out: Vec<u16> = Vec::with_capacity(b.len());
    let mut i = 0usize;
    while i < b.len() {
        let p = memchr::memchr(b'\\', &b[i..]).map_or(b.len(), |p| i + p);
        if let Some(seg) = body.get(i..p) {
            out.extend(seg.encode_utf16());
        }
        i = p + 1;
        let Some(&c) = b.get(i) else { break };
        i += 1;
        match c {
            b'n' => out.push(0x0A),
            b't' => out.push(0x09),
            b'r' => out.push(0x0D),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0C),
            b'u' => {
                out.push(hex4(b.get(i..i + 4).unwrap_or(&[])) as u16);
                i += 4;
            }
            other => out.push(u16::from(other)),
        }
    }
    out
}

/// A JS number as `Number.prototype.toString` writes it.
fn js_number(raw: &str, out: &mut String) -> Result<(), Invalid> {
    let n = raw.parse::<f64>().map_err(|_| Invalid)?;
    let mut buf = ryu_js::Buffer::new();
    out.push_str(buf.format(n));
    Ok(())
}

/// A number as JSON that `JSON.parse` reads back as the same double (±Infinity as 1e999).
pub fn push_number(n: f64, out: &mut String) {
    if n.is_finite() {
        let mut buf = ryu_js::Buffer::new();
        out.push_str(buf.format(n));
    } else if n > 0.0 {
        out.push_str("1e999");
    } else {
        out.push_str("-1e999");
    }
}

/// Append, as an escaped JSON string body, what `Array.prototype.join` writes for one
/// element: `null` -> "", strings as is, numbers/booleans via ToString, arrays joined
/// with ",", plain objects "[object Object]" (an own `toString` key, never callable
/// from JSON, makes ToPrimitive throw: `Err`).
pub fn push_join_string(raw: &str, out: &mut String) -> Result<(), Invalid> {
    match scan::kind_of(raw) {
        Kind::Null => {}
        Kind::String => out.push_str(raw.get(1..raw.len().saturating_sub(1)).ok_or(Invalid)?),
        Kind::Number => js_number(raw, out)?,
        Kind::True => out.push_str("true"),
        Kind::False => out.push_str("false"),
        Kind::Object => {
            let s = scan::scan(raw).ok_or(Invalid)?;
            if s.fields.iter().any(|f| f.key == "toString") {
                return Err(Invalid);
            }
            out.push_str("[object Object]");
        }
        Kind::Array => {
            for (i, e) in array_elements(raw).into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                push_join_string(e, out)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso() {
        assert_eq!(
            iso_ms("\"2024-01-02T00:00:00.000Z\""),
            Some(1_704_153_600_000.0)
        );
        assert_eq!(
            iso_ms("\"2020-02-29T23:59:59.999Z\""),
            Some(1_583_020_799_999.0)
        );
        assert_eq!(
            iso_ms("\"0000-01-01T00:00:00Z\""),
            Some(-62_167_219_200_000.0)
        );
        assert_eq!(iso_ms("\"2021-02-30T00:00:00Z\""), None);
        assert_eq!(iso_ms("\"2021-01-01T10:00:00.5Z\""), None);
    }

    #[test]
    fn escaped_units_match_decoded_units() {
        for body in [
            "",
            "plain",
            "h\\u00e9llo",
            "\\ud83d\\ude00 pair",
            "lone \\ud83d end",
            "tab\\there \\\\ and \\\"",
            "caf\u{e9} \u{1F600}",
        ] {
            assert_eq!(escaped_units(body), Text::decode(body).units(), "{body:?}");
        }
    }

    #[test]
    fn decode_texts() {
        assert_eq!(Text::decode("a\\nb"), Text::Utf8("a\nb".into()));
        assert_eq!(
            Text::decode("\\ud83d\\ude00\\u00e9\\\"\\/"),
            Text::Utf8("\u{1F600}é\"/".into())
        );
        assert_eq!(
            Text::decode("x\\ud83d é"),
            Text::Utf16(vec![0x78, 0xD83D, 0x20, 0xE9])
        );
        assert_eq!(Text::Utf8("a\u{1F600}é".into()).units(), 4);
    }

    #[test]
    fn elements_and_join() {
        assert_eq!(
            array_elements("[ 1 , \"a,]\\\"\" ,[2,3],{\"x\":[]}]"),
            vec!["1", "\"a,]\\\"\"", "[2,3]", "{\"x\":[]}"]
        );
        assert!(array_elements("[]").is_empty());
        let mut s = String::new();
        assert!(push_join_string("[1,null,[true,\"x\"],{}]", &mut s).is_ok());
        assert_eq!(s, "1,,true,x,[object Object]");
        assert!(push_join_string("{\"toString\":1}", &mut String::new()).is_err());
        let mut s = String::new();
        assert!(push_join_string("1e21", &mut s).is_ok());
        assert_eq!(s, "1e+21");
    }
}
