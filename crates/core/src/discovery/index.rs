//! Sidecar cache of discovery records, one file per sessions directory
//! (`<dir>/.pi-session-index`). Purely an optimization: an entry is used only when the
//! file's size, mtime (ns), ctime (ns) and inode are unchanged, entries for files modified
//! (mtime or ctime) within a second of the listing only serve as bases to resume from once
//! the file has grown (coarse-clock races: a same-size rewrite in the same tick keeps the
//! stamp), and anything doubtful is ignored:
//!
//! - the index is opened with `O_NOFOLLOW | O_NONBLOCK` and used only when it is a regular
//!   file owned by this user and no larger than a bound derived from the session files it
//!   covers ([`size_bound`]); it is read up to the size it had when opened;
//! - the file starts with a versioned header line (`pi-session-index 5`); each record is
//!   framed as `len u32, crc32 u32, payload` (CRC-32 of `len` and payload, `crc32fast`): a
//!   damaged record is dropped (its session file is read again and the record rebuilt),
//!   never served;
//! - it is written `0600` to a temp file created with `O_CREAT | O_EXCL | O_NOFOLLOW` and
//!   renamed into place.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::Record;

pub const INDEX_FILE: &str = ".pi-session-index";
const MAGIC: &str = "pi-session-index 5";

/// Identity of a file's content as far as the cache is concerned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    pub size: u64,
    pub mtime_ns: i128,
    /// Status change time: moves on every write and on `utime` (which puts mtime back).
    pub ctime_ns: i128,
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
                ctime_ns: i128::from(md.ctime()) * 1_000_000_000 + i128::from(md.ctime_nsec()),
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
                ctime_ns: 0,
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
/// Both the content (mtime) and the status (ctime: `utime` putting mtime back moves it)
/// must be older than a second.
pub fn cacheable(stamp: &Stamp, start_ns: i128) -> bool {
    stamp.mtime_ns.max(stamp.ctime_ns) < start_ns - 1_000_000_000
}

/// Largest index accepted for session files of `sizes` bytes: a record holds no texts, only
/// raw values of its file (header fields, the name, deferred timestamps: each at most the
/// file's size), plus the stamps and names.
pub fn size_bound(sizes: impl Iterator<Item = u64>) -> u64 {
    let (mut total, mut n) = (0u64, 0u64);
    for s in sizes {
        total = total.saturating_add(s);
        n += 1;
    }
    total
        .saturating_mul(4)
        .saturating_add(n.saturating_mul(4096))
        .saturating_add(64 * 1024)
}

/// Load `<dir>/.pi-session-index`; empty on any problem (see the module docs), at most
/// `bound` bytes.
pub fn load(dir: &Path, bound: u64) -> HashMap<String, Cached> {
    read_index(&dir.join(INDEX_FILE), bound)
        .map(|b| parse(&b))
        .unwrap_or_default()
}

fn read_index(path: &Path, bound: u64) -> Option<Vec<u8>> {
    use std::io::Read;
    let o = crate::safefs::open_regular(path, false).ok()?;
    if o.uid != crate::safefs::euid() || o.size > bound {
        return None;
    }
    let mut bytes = Vec::with_capacity(usize::try_from(o.size).ok()?);
    o.file.take(o.size).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

// Format: MAGIC "\n", then records `len u32, crc u32, payload` (crc = CRC-32 of the len
// bytes then the payload). Payload: name (str), size u64, mtime i128, ctime i128, ino u64,
// use u8 (0 exact, no fingerprint; 1 exact + u64 fingerprint; 2 resume-only + u64), kind u8
// (0 not a session, 1 record), and for a record: header (str), name (opt str), count u64,
// activity f64, deferred (opt str), first_units u64, all_units u64. No texts: they are read
// from the session file when a caller asks for them (issue 23: the index of a 300 MB
// session of one message was 300 MB, and loading an index read every text).
// Little-endian; str = u64 length + UTF-8.

fn frame_crc(len: [u8; 4], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(payload);
    h.finalize()
}

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
}

/// The records of an index; a record whose checksum or shape is wrong is left out.
fn parse(bytes: &[u8]) -> HashMap<String, Cached> {
    // About 300 bytes a record.
    let mut map = HashMap::with_capacity(bytes.len() / 256);
    let Some(mut body) = bytes
        .strip_prefix(MAGIC.as_bytes())
        .and_then(|b| b.strip_prefix(b"\n"))
    else {
        return map;
    };
    while body.len() >= 8 {
        let (len, rest) = body.split_at(4);
        let (crc, rest) = rest.split_at(4);
        let len: [u8; 4] = [len[0], len[1], len[2], len[3]];
        let crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let Ok(n) = usize::try_from(u32::from_le_bytes(len)) else {
            break;
        };
        // A length that runs past the end: the framing is lost, nothing after is trusted.
        let Some(payload) = rest.get(..n) else { break };
        body = &rest[n..];
        if frame_crc(len, payload) != crc {
            continue;
        }
        if let Some((name, cached)) = parse_record(payload) {
            map.insert(name, cached);
        }
    }
    map
}

fn parse_record(payload: &[u8]) -> Option<(String, Cached)> {
    let mut r = Reader { b: payload, i: 0 };
    let name = r.str()?.to_owned();
    let stamp = Stamp {
        size: r.u64()?,
        mtime_ns: r.i128()?,
        ctime_ns: r.i128()?,
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
            let first_units = r.u64()?;
            let all_units = r.u64()?;
            Some(Arc::new(Record {
                header,
                name,
                count,
                activity,
                deferred,
                first_units,
                all_units,
                texts: None,
            }))
        }
        _ => return None,
    };
    // The payload is exactly one record.
    if r.i != payload.len() {
        return None;
    }
    Some((
        name,
        Cached {
            stamp,
            record,
            resume,
            exact,
        },
    ))
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
/// Write the index atomically; errors are ignored (the cache is optional).
pub fn store<'a>(dir: &Path, entries: impl Iterator<Item = (&'a str, &'a Cached)>) {
    let tmp = dir.join(format!(
        "{INDEX_FILE}.{}.{}.tmp",
        std::process::id(),
        now_ns()
    ));
    // 0600 whatever the sessions' modes (the index holds their texts); never follows or
    // reuses what is at the temp path.
    let ok = crate::safefs::create_exclusive(&tmp, 0o600)
        .and_then(|f| write_entries(f, entries))
        .and_then(|_| fs::rename(&tmp, dir.join(INDEX_FILE)));
    if ok.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

/// Stream the index to `file`, one entry at a time.
fn write_entries<'a>(
    file: fs::File,
    entries: impl Iterator<Item = (&'a str, &'a Cached)>,
) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(256 * 1024, file);
    w.write_all(MAGIC.as_bytes())?;
    w.write_all(b"\n")?;
    let mut out: Vec<u8> = Vec::new();
    for (name, c) in entries {
        out.clear();
        put_str(&mut out, name);
        put_u64(&mut out, c.stamp.size);
        out.extend_from_slice(&c.stamp.mtime_ns.to_le_bytes());
        out.extend_from_slice(&c.stamp.ctime_ns.to_le_bytes());
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
                put_u64(&mut out, r.first_units);
                put_u64(&mut out, r.all_units);
            }
        }
        // A record too large to frame is left out (its file is read again next time).
        let Ok(len) = u32::try_from(out.len()) else {
            continue;
        };
        let len = len.to_le_bytes();
        w.write_all(&len)?;
        w.write_all(&frame_crc(len, &out).to_le_bytes())?;
        w.write_all(&out)?;
    }
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
            first_units: 2,
            all_units: 5,
            texts: None,
        };
        let c = Cached {
            stamp: Stamp {
                size: 3,
                mtime_ns: 5,
                ctime_ns: 6,
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
        let m = load(&dir, 1 << 20);
        assert_eq!(m.len(), 3);
        assert!(m["a\tb.jsonl"].exact && !m["base.jsonl"].exact);
        assert_eq!(m["base.jsonl"].resume, Some(42));
        assert_eq!(m["a\tb.jsonl"].record.as_deref(), Some(&rec));
        assert_eq!(m["a\tb.jsonl"].resume, Some(0xfeed_beef));
        assert_eq!(m["n.jsonl"].resume, None);
        assert!(m["n.jsonl"].record.is_none());
        let full = fs::read(dir.join(INDEX_FILE)).unwrap_or_default();
        // A torn last record is dropped; the others stay.
        let _ = fs::write(dir.join(INDEX_FILE), &full[..full.len() - 3]);
        let torn = load(&dir, 1 << 20);
        assert_eq!(torn.len(), 2);
        assert!(!torn.contains_key("base.jsonl"));
        let _ = fs::write(dir.join(INDEX_FILE), "garbage");
        assert!(load(&dir, 1 << 20).is_empty());
        // Larger than the bound: not read at all.
        let _ = fs::write(dir.join(INDEX_FILE), &full);
        assert!(load(&dir, full.len() as u64 - 1).is_empty());
        assert_eq!(load(&dir, full.len() as u64).len(), 3);
        // Every single-bit flip: each record is either exactly as written or left out.
        let same = |a: &Cached, b: &Cached| {
            a.stamp == b.stamp
                && a.resume == b.resume
                && a.exact == b.exact
                && a.record.as_deref() == b.record.as_deref()
        };
        for bit in 0..full.len() * 8 {
            let mut flipped = full.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            for (name, c) in parse(&flipped) {
                let orig = m.get(&name);
                assert!(
                    orig.is_some_and(|o| same(o, &c)),
                    "bit {bit}: {name:?} served changed"
                );
            }
        }
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(dir.join(INDEX_FILE)).map(|m| m.permissions().mode());
            assert_eq!(mode.map(|m| m & 0o777).ok(), Some(0o600));
            // A symbolic link at the index path is not followed.
            let _ = fs::remove_file(dir.join(INDEX_FILE));
            let real = dir.join("real-index");
            let _ = fs::write(&real, &full);
            let _ = std::os::unix::fs::symlink(&real, dir.join(INDEX_FILE));
            assert!(load(&dir, 1 << 20).is_empty());
        }
        let _ = fs::remove_dir_all(&dir);
    }
}

#[cfg(test)]
mod perf {
    /// `PI_INDEX_PERF=<dir> cargo test --release --lib discovery::index::perf -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn perf_load() {
        let Some(d) = std::env::var_os("PI_INDEX_PERF") else {
            return;
        };
        let d = std::path::PathBuf::from(d);
        for _ in 0..3 {
            let t = std::time::Instant::now();
            let b = super::read_index(&d.join(super::INDEX_FILE), u64::MAX).unwrap_or_default();
            let read = t.elapsed();
            let t = std::time::Instant::now();
            let m = super::parse(&b);
            eprintln!(
                "{} bytes read {read:?}, {} records parsed {:?}",
                b.len(),
                m.len(),
                t.elapsed()
            );
        }
    }
}
