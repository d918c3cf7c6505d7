//! Sidecar cache of discovery records, one file per sessions directory
//! (`<dir>/.pi-session-index`). Purely an optimization: an entry is used only when the
//! file's size, mtime (ns) and inode are unchanged, entries for files modified within a
//! second of the listing are not stored (coarse-clock races), and any unreadable or
//! malformed index is ignored. Writes go to a temp file renamed into place.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub const INDEX_FILE: &str = ".pi-session-index";
const MAGIC: &str = "pi-session-index 1";

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
    pub record: Option<String>,
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
    let Ok(text) = fs::read_to_string(dir.join(INDEX_FILE)) else {
        return HashMap::new();
    };
    parse(&text).unwrap_or_default()
}

fn parse(text: &str) -> Option<HashMap<String, Cached>> {
    let mut lines = text.split('\n');
    if lines.next()? != MAGIC {
        return None;
    }
    let mut map = HashMap::new();
    let mut complete = false;
    for line in lines {
        if line.is_empty() {
            complete = true;
            continue;
        }
        if complete {
            return None;
        }
        let mut parts = line.splitn(5, '\t');
        let size = parts.next()?.parse().ok()?;
        let mtime_ns = parts.next()?.parse().ok()?;
        let ino = parts.next()?.parse().ok()?;
        let name: String = serde_json::from_str(parts.next()?).ok()?;
        let rec = parts.next()?;
        let record = match rec {
            "-" => None,
            r if r.starts_with('{') && r.ends_with('}') => Some(r.to_owned()),
            _ => return None,
        };
        map.insert(
            name,
            Cached {
                stamp: Stamp {
                    size,
                    mtime_ns,
                    ino,
                },
                record,
            },
        );
    }
    // The writer always ends with "\n": a torn file is rejected.
    complete.then_some(map)
}

/// Write the index atomically; errors are ignored (the cache is optional).
pub fn store<'a>(dir: &Path, entries: impl Iterator<Item = (&'a str, &'a Cached)>) {
    let mut out = String::from(MAGIC);
    out.push('\n');
    for (name, c) in entries {
        let Ok(name_json) = serde_json::to_string(name) else {
            continue;
        };
        out.push_str(&format!(
            "{}\t{}\t{}\t{}\t",
            c.stamp.size, c.stamp.mtime_ns, c.stamp.ino, name_json
        ));
        match &c.record {
            Some(r) => out.push_str(r),
            None => out.push('-'),
        }
        out.push('\n');
    }
    let tmp = dir.join(format!(
        "{INDEX_FILE}.{}.{}.tmp",
        std::process::id(),
        now_ns()
    ));
    let ok = fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(out.as_bytes()))
        .and_then(|_| fs::rename(&tmp, dir.join(INDEX_FILE)));
    if ok.is_err() {
        let _ = fs::remove_file(&tmp);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let dir = std::env::temp_dir().join(format!("pi-idx-{}", std::process::id()));
        let _ = fs::create_dir_all(&dir);
        let c = Cached {
            stamp: Stamp {
                size: 3,
                mtime_ns: 5,
                ino: 7,
            },
            record: Some("{\"h\":{\"id\":\t1}}".into()),
        };
        let n = Cached {
            record: None,
            ..c.clone()
        };
        store(&dir, [("a\tb.jsonl", &c), ("n.jsonl", &n)].into_iter());
        let m = load(&dir);
        assert_eq!(m.len(), 2);
        assert_eq!(m["a\tb.jsonl"].record, c.record);
        assert!(m["n.jsonl"].record.is_none());
        let _ = fs::write(dir.join(INDEX_FILE), "garbage");
        assert!(load(&dir).is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
