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

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
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
                i += 1;
                while i < b.len() {
                    match memchr::memchr2(b'"', b'\\', &b[i..]) {
                        Some(p) if b[i + p] == b'\\' => i += p + 2,
                        Some(p) => {
                            i += p;
                            break;
                        }
                        None => i = b.len(),
                    }
                }
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

fn push_elem<'a>(raw: &'a str, start: usize, end: usize, out: &mut Vec<&'a str>) {
    if let Some(s) = raw.get(start..end) {
        let t = s.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r'));
        if !t.is_empty() {
            out.push(t);
        }
    }
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
