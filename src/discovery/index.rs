//! Sidecar cache of discovery records, one file per sessions directory
//! (`<dir>/.pi-session-index`). Purely an optimization: an entry is used only when the
//! file's size, mtime (ns) and inode are unchanged, entries for files modified within a
//! second of the listing are not stored (coarse-clock races), and any unreadable or
//! malformed index is ignored. Writes go to a temp file renamed into place.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::text::Text;
use super::{First, Record};

pub const INDEX_FILE: &str = ".pi-session-index";
const MAGIC: &str = "pi-session-index 3";

/// Identity of a file's content as far as the cache is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i128,
    pub ino: u64,
}

impl Stamp {
    pub fn of(md: &fs::Metadata) -> Stamp {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Stamp {
                size: md.len(),
                mtime_ns: i128::from(md.mtime()) * 1_000_000_000 + i128::from(md.mtime_nsec()),
                ino: md.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = md
                .modified()
                .ok()
                .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                .map(|d| d.as_nanos() as i128)
                .unwrap_or(0);
            Stamp {
                size: md.len(),
                mtime_ns,
                ino: 0,
            }
        }
    }
}

/// A cached result: `None` = the file is not a session.
#[derive(Clone, Debug)]
pub struct Cached {
    pub stamp: Stamp,
    pub record: Option<Arc<Record>>,
    /// Fingerprint of the `stamp.size` bytes the record describes, when a later listing
    /// may resume from them (see [`super::resume`]).
    pub resume: Option<u64>,
    /// The record answers a listing that finds the same stamp. False for a file modified
    /// within a second of its listing (a coarse clock could hide a same-size rewrite), whose
    /// entry only serves as a base to resume from once the file has grown: the session pi
    /// is writing to is always such a file.
    pub exact: bool,
}

/// Nanoseconds since the epoch, for the "recently modified" rule.
pub fn now_ns() -> i128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0)
}

/// Whether a file stamped `stamp` may be cached by a listing that started at `start_ns`.
pub fn cacheable(stamp: &Stamp, start_ns: i128) -> bool {
    stamp.mtime_ns < start_ns - 1_000_000_000
}

/// Load `<dir>/.pi-session-index`; empty on any problem.
pub fn load(dir: &Path) -> HashMap<String, Cached> {
    let Ok(bytes) = fs::read(dir.join(INDEX_FILE)) else {
        return HashMap::new();
    };
    parse(&bytes).unwrap_or_default()
}

// Format: MAGIC "\n", then per entry: name (str), size u64, mtime i128, ino u64, use u8
// (0 exact, no fingerprint; 1 exact + u64 fingerprint; 2 resume-only + u64), kind u8 (0 not a session, 1 record), and for a record: header (str), name (opt str), count u64,
// activity f64, deferred (opt str), first (0 + text | 1 + u64 prefix units), all (text);
// then the entry count (u64) and END. Little-endian; str = u64 length + UTF-8;
// text = u8 (0 UTF-8, 1 UTF-16LE) + u64 byte length + bytes.
const END: &[u8] = b"\nEND\n";

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let s = self.b.get(self.i..self.i.checked_add(n)?)?;
        self.i += n;
        Some(s)
    }
    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }
    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn i128(&mut self) -> Option<i128> {
        Some(i128::from_le_bytes(self.take(16)?.try_into().ok()?))
    }
    fn str(&mut self) -> Option<&'a str> {
        let n = usize::try_from(self.u64()?).ok()?;
        std::str::from_utf8(self.take(n)?).ok()
    }
    fn opt_str(&mut self) -> Option<Option<String>> {
        Some(match self.u8()? {
            0 => None,
            1 => Some(self.str()?.to_owned()),
            _ => return None,
        })
    }
    fn text(&mut self) -> Option<Text> {
        let kind = self.u8()?;
        let n = usize::try_from(self.u64()?).ok()?;
        let raw = self.take(n)?;
        Some(match kind {
            0 => Text::Utf8(std::str::from_utf8(raw).ok()?.to_owned()),
            1 if n % 2 == 0 => Text::Utf16(
                raw.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect(),
            ),
            _ => return None,
        })
    }
}

fn parse(bytes: &[u8]) -> Option<HashMap<String, Cached>> {
    let body = bytes.strip_prefix(MAGIC.as_bytes())?.strip_prefix(b"\n")?;
    let body = body.strip_suffix(END)?;
    let (body, count) = body.split_at(body.len().checked_sub(8)?);
    let count = u64::from_le_bytes(count.try_into().ok()?);
    let mut r = Reader { b: body, i: 0 };
    let mut map = HashMap::new();
    while r.i < body.len() {
        let name = r.str()?.to_owned();
        let stamp = Stamp {
            size: r.u64()?,
            mtime_ns: r.i128()?,
            ino: r.u64()?,
        };
        let (resume, exact) = match r.u8()? {
            0 => (None, true),
            1 => (Some(r.u64()?), true),
            2 => (Some(r.u64()?), false),
            _ => return None,
        };
        let record = match r.u8()? {
            0 => None,
            1 => {
                let header = r.str()?.to_owned();
                let name = r.opt_str()?;
                let count = r.u64()?;
                let activity = f64::from_bits(r.u64()?);
                let deferred = r.opt_str()?;
                let first = match r.u8()? {
                    0 => First::Text(r.text()?),
                    1 => First::Prefix(r.u64()?),
                    _ => return None,
                };
                let all = r.text()?;
                Some(Arc::new(Record {
                    header,
                    name,
                    count,
                    activity,
                    deferred,
                    first,
                    all,
                }))
            }
            _ => return None,
        };
        map.insert(
            name,
            Cached {
                stamp,
                record,
                resume,
                exact,
            },
        );
    }
    // A torn or foreign file is rejected as a whole.
    (map.len() as u64 == count).then_some(map)
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
fn put_str(out: &mut Vec<u8>, s: &str) {
    put_u64(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}
fn put_opt_str(out: &mut Vec<u8>, s: &Option<String>) {
    match s {
        None => out.push(0),
        Some(s) => {
            out.push(1);
            put_str(out, s);
        }
    }
}
fn put_text(out: &mut Vec<u8>, t: &Text) {
    match t {
        Text::Utf8(s) => {
            out.push(0);
            put_str(out, s);
        }
        Text::Utf16(u) => {
            out.push(1);
            put_u64(out, (u.len() * 2) as u64);
            for c in u {
                out.extend_from_slice(&c.to_le_bytes());
            }
        }
    }
}

/// Write the index atomically; errors are ignored (the cache is optional).
pub fn store<'a>(dir: &Path, entries: impl Iterator<Item = (&'a str, &'a Cached)>) {
    let tmp = dir.join(format!(
        "{INDEX_FILE}.{}.{}.tmp",
        std::process::id(),
        now_ns()
    ));
    let ok = fs::File::create(&tmp)
        .and_then(|f| write_entries(f, entries))
        .and_then(|_| fs::rename(&tmp, dir.join(INDEX_FILE)));
    if ok.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// Stream the index to `file`, one entry at a time (an index holds every listed text of its
/// directory: it is never built whole in memory).
fn write_entries<'a>(
    file: fs::File,
    entries: impl Iterator<Item = (&'a str, &'a Cached)>,
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, file);
    w.write_all(MAGIC.as_bytes())?;
    w.write_all(b"\n")?;
    let mut n = 0u64;
    let mut out: Vec<u8> = Vec::new();
    for (name, c) in entries {
        out.clear();
        put_str(&mut out, name);
        put_u64(&mut out, c.stamp.size);
        out.extend_from_slice(&c.stamp.mtime_ns.to_le_bytes());
        put_u64(&mut out, c.stamp.ino);
        match (c.resume, c.exact) {
            (None, true) => out.push(0),
            (Some(f), exact) => {
                out.push(if exact { 1 } else { 2 });
                put_u64(&mut out, f);
            }
            // Neither a hit nor a base: nothing to keep.
            (None, false) => continue,
        }
        match &c.record {
            None => out.push(0),
            Some(r) => {
                out.push(1);
                put_str(&mut out, &r.header);
                put_opt_str(&mut out, &r.name);
                put_u64(&mut out, r.count);
                put_u64(&mut out, r.activity.to_bits());
                put_opt_str(&mut out, &r.deferred);
                match &r.first {
                    First::Text(t) => {
                        out.push(0);
                        put_text(&mut out, t);
                    }
                    First::Prefix(p) => {
                        out.push(1);
                        put_u64(&mut out, *p);
                    }
                }
                put_text(&mut out, &r.all);
            }
        }
        w.write_all(&out)?;
        n += 1;
    }
    w.write_all(&n.to_le_bytes())?;
    w.write_all(END)?;
    w.into_inner().map_err(|e| e.into_error())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("pi-idx-{}", std::process::id()));
        let _ = fs::create_dir_all(&dir);
        let rec = Record {
            header: "{\"id\":\t1}".into(),
            name: Some("\" n\"".into()),
            count: 3,
            activity: 1.5,
            deferred: Some("[\"x\"]".into()),
            first: First::Text(Text::Utf16(vec![0xD800, 0x41])),
            all: Text::Utf8("héllo".into()),
        };
        let c = Cached {
            stamp: Stamp {
                size: 3,
                mtime_ns: 5,
                ino: 7,
            },
            record: Some(Arc::new(rec.clone())),
            resume: Some(0xfeed_beef),
            exact: true,
        };
        let n = Cached {
            record: None,
            resume: None,
            ..c.clone()
        };
        let base = Cached {
            resume: Some(42),
            exact: false,
            ..c.clone()
        };
        let useless = Cached {
            resume: None,
            exact: false,
            ..c.clone()
        };
        let all = [
            ("a\tb.jsonl", &c),
            ("n.jsonl", &n),
            ("base.jsonl", &base),
            ("useless.jsonl", &useless),
        ];
        store(&dir, all.into_iter());
        let m = load(&dir);
        assert_eq!(m.len(), 3);
        assert!(m["a\tb.jsonl"].exact && !m["base.jsonl"].exact);
        assert_eq!(m["base.jsonl"].resume, Some(42));
        assert_eq!(m["a\tb.jsonl"].record.as_deref(), Some(&rec));
        assert_eq!(m["a\tb.jsonl"].resume, Some(0xfeed_beef));
        assert_eq!(m["n.jsonl"].resume, None);
        assert!(m["n.jsonl"].record.is_none());
        let full = fs::read(dir.join(INDEX_FILE)).unwrap_or_default();
        let _ = fs::write(dir.join(INDEX_FILE), &full[..full.len() - 3]);
        assert!(load(&dir).is_empty());
        let _ = fs::write(dir.join(INDEX_FILE), "garbage");
        assert!(load(&dir).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
