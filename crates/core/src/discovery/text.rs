//! JS value coercions on raw (validated) JSON text, for the discovery record.

use super::Invalid;
use crate::json::scan::{self, Kind};

/// `Date.parse` of an ISO stamp literal (no escapes), where Rust can give V8's answer
/// without a time zone: `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)` (what pi writes is
/// `…SS.mmmZ`) and the date-only `YYYY-MM-DD` (UTC in JS). Anything else returns `None`
/// and the JS layer evaluates it with `Date.parse` itself: forms without a zone (local
/// time), without seconds, with `+HHMM` offsets, six-digit years, hour 24 and day overflow
/// (V8 reads `2024-02-30` as March 1st). The value comes from chrono; the gate below only
/// keeps out what chrono reads differently from V8 (a leap second `:60`, which V8 rejects;
/// the space separator and lowercase `t`/`z` that its RFC 3339 parser also takes are left
/// to JS). The differential test against Node is `iso_ms_matches_v8` below.
pub fn iso_ms(raw: &str) -> Option<f64> {
    iso_ms_str(raw.strip_prefix('"')?.strip_suffix('"')?)
}

/// [`iso_ms`] of a decoded string (no JSON quotes): the same forms, the same answers.
pub fn iso_ms_str(inner: &str) -> Option<f64> {
    let b = inner.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(digits(0..4) && at(4, b'-') && digits(5..7) && at(7, b'-') && digits(8..10)) {
        return None;
    }
    if b.len() == 10 {
        let d = chrono::NaiveDate::parse_from_str(inner, "%Y-%m-%d").ok()?;
        return Some(
            d.and_time(chrono::NaiveTime::MIN)
                .and_utc()
                .timestamp_millis() as f64,
        );
    }
    let time = at(10, b'T') && digits(11..13) && at(13, b':') && digits(14..16);
    // Seconds 00-59: chrono reads `:60` as a leap second, V8 as an invalid date.
    if !(time && at(16, b':') && digits(17..19) && b[17] <= b'5') {
        return None;
    }
    let mut i = 19;
    if at(i, b'.') {
        let n = b[i + 1..].iter().take_while(|c| c.is_ascii_digit()).count();
        // chrono keeps nanoseconds (9 digits); V8 reads any number and keeps 3.
        if n == 0 || n > 9 {
            return None;
        }
        i += 1 + n;
    }
    let zone = &b[i..];
    let offset_ok = zone.len() == 6
        && matches!(zone[0], b'+' | b'-')
        && zone[1..3].iter().all(u8::is_ascii_digit)
        && zone[3] == b':'
        && zone[4..6].iter().all(u8::is_ascii_digit);
    if zone != b"Z" && !offset_ok {
        return None;
    }
    let t = chrono::DateTime::parse_from_rfc3339(inner).ok()?;
    // Whole milliseconds, the fraction truncated (as V8 does; `timestamp_millis` floors and
    // the fraction of a second is never negative).
    Some(t.timestamp_millis() as f64)
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
        assert_eq!(
            iso_ms("\"2021-01-01T10:00:00.5Z\""),
            Some(1_609_495_200_500.0)
        );
        assert_eq!(
            iso_ms("\"2024-01-01T00:00:00.5+01:00\""),
            Some(1_704_063_600_500.0)
        );
        assert_eq!(iso_ms("\"2024-01-01\""), Some(1_704_067_200_000.0));
        // Left to JS: local time, leap second, escapes.
        assert_eq!(iso_ms("\"2024-01-01T00:00:00\""), None);
        assert_eq!(iso_ms("\"2024-01-01T00:00:60Z\""), None);
        assert_eq!(iso_ms("\"2024-01-01T00:00:00\\u005a\""), None);
    }

    /// Stamps for the differential test: edge and invalid forms, plus every string
    /// `timestamp` of the real sessions in `shared/fixtures/` when they are there.
    fn stamp_cases() -> Vec<String> {
        let mut v: Vec<String> = [
            "2024-01-01T00:00:00.000Z",
            "2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00.1Z",
            "2024-01-01T00:00:00.12Z",
            "2024-01-01T00:00:00.1239Z",
            "2024-01-01T00:00:00.123456789Z",
            "2024-01-01T00:00:00.1234567891Z",
            "2024-01-01T00:00:00.Z",
            "1969-12-31T23:59:59.999Z",
            "1969-12-31T23:59:59.9999Z",
            "1960-06-15T12:30:45.678-05:30",
            "0000-01-01T00:00:00Z",
            "0000-01-01T00:00:00+01:00",
            "0000-02-29T00:00:00Z",
            "9999-12-31T23:59:59.999-01:00",
            "1970-01-01T00:00:00.000+00:01",
            "9999-12-31T23:59:59.999Z",
            "2020-02-29T23:59:59.999Z",
            "2021-02-29T00:00:00Z",
            "2021-02-30T00:00:00Z",
            "2021-04-31T00:00:00Z",
            "2021-13-01T00:00:00Z",
            "2021-00-01T00:00:00Z",
            "2021-01-00T00:00:00Z",
            "2021-01-32T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T24:00:01Z",
            "2024-01-01T23:60:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T23:59:60.5Z",
            "2024-01-01T00:00:00+00:00",
            "2024-01-01T00:00:00-00:00",
            "2024-01-01T00:00:00+01:00",
            "2024-01-01T00:00:00-12:30",
            "2024-01-01T00:00:00+23:59",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00+01:60",
            "2024-01-01T00:00:00+0100",
            "2024-01-01T00:00:00+01",
            "2024-01-01T00:00:00.5+01:00",
            "2024-01-01t00:00:00Z",
            "2024-01-01T00:00:00z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.000",
            "2024-01-01T00:00Z",
            "2024-01-01T00:00",
            "2024-01-01T00Z",
            "2024-01-01",
            "2024-02-30",
            "2024-13-01",
            "2024-01",
            "2024",
            "+002024-01-01T00:00:00Z",
            "-000001-01-01T00:00:00Z",
            "+275760-09-13T00:00:00.000Z",
            "+275760-09-13T00:00:00.001Z",
            " 2024-01-01T00:00:00Z",
            "2024-01-01T00:00:00Z ",
            "2024-1-01T00:00:00Z",
            "２０２４-01-01T00:00:00Z",
            "Mon, 01 Jan 2024 00:00:00 GMT",
            "",
            "Z",
            "not a date",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        v.extend(generated_stamps(4000));
        let Some(dir) = fixtures_dir() else {
            eprintln!(
                "shared/fixtures not found: differential test runs on the built-in stamps only"
            );
            return v;
        };
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        files.sort();
        for f in files {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            for line in text.lines() {
                let Ok(v2) = serde_json::from_str::<serde_json::Value>(line) else {
                    continue;
                };
                for t in [&v2["timestamp"], &v2["message"]["timestamp"]] {
                    if let Some(s) = t.as_str() {
                        v.push(s.to_owned());
                    }
                }
            }
        }
        v
    }

    /// `n` stamps of pi's shape with each field drawn in and just out of its range, random
    /// fraction lengths and zones (deterministic xorshift).
    fn generated_stamps(n: usize) -> Vec<String> {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut r = |m: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % m
        };
        (0..n)
            .map(|_| {
                let y = match r(4) {
                    0 => r(10_000),
                    _ => 1960 + r(80),
                };
                let (mo, d, h, mi, s) = (r(14), r(33), r(26), r(62), r(62));
                let frac = match r(5) {
                    0 => String::new(),
                    _ => {
                        let len = r(11) as usize;
                        let digits: String =
                            (0..len).map(|_| char::from(b'0' + r(10) as u8)).collect();
                        format!(".{digits}")
                    }
                };
                let zone = match r(8) {
                    0 => String::new(),
                    1 => format!("+{:02}{:02}", r(26), r(61)),
                    2 | 3 => format!("{}{:02}:{:02}", ["+", "-"][r(2) as usize], r(26), r(61)),
                    _ => "Z".to_owned(),
                };
                format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}{frac}{zone}")
            })
            .collect()
    }

    /// `../shared/fixtures/pi-real` seen from the checkout (or from any folder above it).
    fn fixtures_dir() -> Option<std::path::PathBuf> {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .map(|a| a.join("shared/fixtures/pi-real"))
            .find(|p| p.is_dir())
    }

    /// `Date.parse` of each stamp in Node (`null` for NaN) and whether the stamp is the
    /// canonical text of that time (`toISOString` gives it back: a real calendar date),
    /// under the time zone `tz`.
    fn v8_parse(stamps: &[String], tz: &str) -> Option<Vec<(Option<f64>, bool)>> {
        use std::io::Write as _;
        use std::process::{Command, Stdio};
        let mut child = Command::new("node")
            .args([
                "-e",
                "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>\
                 process.stdout.write(JSON.stringify(JSON.parse(s).map(x=>{const t=Date.parse(x);\
                 return [t,t===t&&new Date(t).toISOString()===x]}))))",
            ])
            .env("TZ", tz)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .ok()?;
        let input = serde_json::to_vec(stamps).ok()?;
        child.stdin.take()?.write_all(&input).ok()?;
        let out = child.wait_with_output().ok()?;
        serde_json::from_slice(&out.stdout).ok()
    }

    /// Differential: wherever `iso_ms` answers, it is V8's `Date.parse`, in every time zone;
    /// and it answers for every stamp pi writes (`toISOString`'s `…SS.mmmZ`).
    #[test]
    fn iso_ms_matches_v8() {
        let stamps = stamp_cases();
        let (mut answered, mut covered) = (0usize, 0usize);
        for tz in ["UTC", "America/New_York", "Asia/Kolkata", "Pacific/Chatham"] {
            let Some(v8) = v8_parse(&stamps, tz) else {
                eprintln!("node not found: iso_ms_matches_v8 skipped");
                return;
            };
            assert_eq!(v8.len(), stamps.len());
            (answered, covered) = (0, 0);
            for (s, (want, canonical)) in stamps.iter().zip(&v8) {
                let lit = serde_json::to_string(s).unwrap_or_default();
                if let Some(got) = iso_ms(&lit) {
                    answered += 1;
                    assert_eq!(Some(got), *want, "{s:?} under TZ={tz}");
                }
                // Four-digit years: pi's stamps (six-digit ones are left to JS).
                if *canonical && s.len() == 24 {
                    covered += 1;
                    assert!(iso_ms(&lit).is_some(), "{s:?}: pi's form left to JS");
                }
            }
        }
        eprintln!(
            "{answered} of {} stamps answered in Rust (all V8's), {covered} in pi's form (all answered)",
            stamps.len()
        );
        assert!(answered > 1000 && covered > 100);
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
