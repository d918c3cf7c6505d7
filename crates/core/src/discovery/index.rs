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
//! - the file starts with a versioned header line (`pi-session-index 6`; any other version is
//!   ignored whole, so the listing rebuilds the index); each record is framed as
//!   `len u32, crc32 u32, payload` (CRC-32 of `len` and payload, `crc32fast`): a damaged
//!   record is dropped (its session file is read again and the record rebuilt), never served;
//! - a payload is one [`Wire`] record in `postcard`'s serde format;
//! - it is written `0600` to a temp file created with `O_CREAT | O_EXCL | O_NOFOLLOW` and
//!   renamed into place.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use super::Record;

pub const INDEX_FILE: &str = ".pi-session-index";
/// Version 6: records in `postcard` (5 was a hand-written layout of the same fields).
const MAGIC: &str = "pi-session-index 6";

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

// Format: MAGIC "\n", then records `len u32, crc u32, payload` (little-endian; crc = CRC-32
// of the len bytes then the payload), each payload one `Wire` in postcard (varint integers,
// length-prefixed UTF-8 strings, f64 as its 8 bytes). No texts: they are read from the
// session file when a caller asks for them (the index of a 300 MB session of one
// message was 300 MB, and loading an index read every text). postcard's own framing and
// checksum (COBS, the `crc` feature) are not used: the frame above lets a damaged record be
// skipped and the ones after it served.

/// One index entry as stored: the file's name and stamp, how the entry may be used, and the
/// record without its texts. Strings are borrowed from the index bytes when loading.
#[derive(Serialize, Deserialize)]
struct Wire<'a> {
    file: &'a str,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    usage: Usage,
    #[serde(borrow)]
    record: Option<WireRecord<'a>>,
}

/// [`Cached::resume`] and [`Cached::exact`] (an entry that is neither is not stored).
#[derive(Serialize, Deserialize)]
enum Usage {
    Exact,
    ExactResumable(u64),
    ResumeOnly(u64),
}

/// A [`Record`] without its texts.
#[derive(Serialize, Deserialize)]
struct WireRecord<'a> {
    header: &'a str,
    #[serde(borrow)]
    name: Option<&'a str>,
    count: u64,
    activity: f64,
    #[serde(borrow)]
    deferred: Option<&'a str>,
    first_units: u64,
    all_units: u64,
}

fn frame_crc(len: [u8; 4], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&len);
    h.update(payload);
    h.finalize()
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
    let (w, rest) = postcard::take_from_bytes::<Wire>(payload).ok()?;
    // The payload is exactly one record.
    if !rest.is_empty() {
        return None;
    }
    let (resume, exact) = match w.usage {
        Usage::Exact => (None, true),
        Usage::ExactResumable(f) => (Some(f), true),
        Usage::ResumeOnly(f) => (Some(f), false),
    };
    let record = w.record.map(|r| {
        Arc::new(Record {
            header: r.header.to_owned(),
            name: r.name.map(str::to_owned),
            count: r.count,
            activity: r.activity,
            deferred: r.deferred.map(str::to_owned),
            first_units: r.first_units,
            all_units: r.all_units,
            texts: None,
        })
    });
    let stamp = Stamp {
        size: w.size,
        mtime_ns: w.mtime_ns,
        ctime_ns: w.ctime_ns,
        ino: w.ino,
    };
    Some((
        w.file.to_owned(),
        Cached {
            stamp,
            record,
            resume,
            exact,
        },
    ))
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
        let usage = match (c.resume, c.exact) {
            (None, true) => Usage::Exact,
            (Some(f), true) => Usage::ExactResumable(f),
            (Some(f), false) => Usage::ResumeOnly(f),
            // Neither a hit nor a base: nothing to keep.
            (None, false) => continue,
        };
        let wire = Wire {
            file: name,
            size: c.stamp.size,
            mtime_ns: c.stamp.mtime_ns,
            ctime_ns: c.stamp.ctime_ns,
            ino: c.stamp.ino,
            usage,
            record: c.record.as_deref().map(|r| WireRecord {
                header: &r.header,
                name: r.name.as_deref(),
                count: r.count,
                activity: r.activity,
                deferred: r.deferred.as_deref(),
                first_units: r.first_units,
                all_units: r.all_units,
            }),
        };
        out.clear();
        out = postcard::to_extend(&wire, out).map_err(std::io::Error::other)?;
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
        // Another version (the hand-written layout of version 5, or a later one): ignored
        // whole, so the listing reads the files again and writes this version.
        assert!(full.starts_with(b"pi-session-index 6\n"));
        for other in [
            &b"pi-session-index 5\n"[..],
            b"pi-session-index 7\n",
            b"pi-session-index 60\n",
        ] {
            let mut v = other.to_vec();
            v.extend_from_slice(&full[MAGIC.len() + 1..]);
            let _ = fs::write(dir.join(INDEX_FILE), &v);
            assert!(
                load(&dir, 1 << 20).is_empty(),
                "{:?}",
                String::from_utf8_lossy(other)
            );
        }
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

    /// Store then load 10,000 records shaped like a real store's (header ~250 bytes, a name,
    /// deferred stamps on some): `cargo test --release --lib discovery::index::perf -- --ignored --nocapture`
    #[test]
    #[ignore]
    fn perf_store_load_10k() {
        use super::*;
        let dir = std::env::temp_dir().join(format!("pi-idx-perf-{}", std::process::id()));
        let _ = fs::create_dir_all(&dir);
        let cached: Vec<(String, Cached)> = (0..10_000u64)
            .map(|i| {
                let record = (i % 50 != 0).then(|| {
                    Arc::new(Record {
                        header: format!(
                            "{{\"type\":\"session\",\"version\":3,\"id\":\"{i:08x}-9420-4060-ac13-7745215f90ff\",\
                             \"timestamp\":\"2025-12-09T00:53:29.825Z\",\"cwd\":\"/Users/someone/workspaces/project-{}\"}}",
                            i % 7
                        ),
                        name: (i % 3 == 0).then(|| format!("\"session name {i}\"")),
                        count: 40 + i % 300,
                        activity: 1.765e12 + i as f64,
                        deferred: (i % 10 == 0).then(|| "[\"2025-12-09T00:53:29\"]".to_owned()),
                        first_units: 120 + i % 900,
                        all_units: 20_000 + i * 13,
                        texts: None,
                    })
                });
                let c = Cached {
                    stamp: Stamp {
                        size: 200_000 + i,
                        mtime_ns: 1_765_000_000_000_000_000 + i128::from(i),
                        ctime_ns: 1_765_000_000_000_000_000 + i128::from(i),
                        ino: 1_000_000 + i,
                    },
                    record,
                    resume: (i % 2 == 0).then_some(0x1234_5678_9abc_def0 ^ i),
                    exact: true,
                };
                (format!("2025-12-09T00-53-29-825Z_{i:08x}-9420-4060-ac13-7745215f90ff.jsonl"), c)
            })
            .collect();
        let (mut stores, mut loads) = (Vec::new(), Vec::new());
        let mut bytes = 0;
        for _ in 0..21 {
            let t = std::time::Instant::now();
            store(&dir, cached.iter().map(|(n, c)| (n.as_str(), c)));
            stores.push(t.elapsed());
            let t = std::time::Instant::now();
            let m = load(&dir, u64::MAX);
            loads.push(t.elapsed());
            assert_eq!(m.len(), cached.len());
            bytes = fs::metadata(dir.join(INDEX_FILE)).map_or(0, |m| m.len());
        }
        stores.sort();
        loads.sort();
        eprintln!(
            "10,000 records, {bytes} bytes, 21 rounds: store min {:?} median {:?}, load min {:?} median {:?}",
            stores[0], stores[10], loads[0], loads[10]
        );
        let _ = fs::remove_dir_all(&dir);
    }
}
