//! Every environment variable the core reads, read here and nowhere else.
//!
//! A session's settings are read once, when the session is made ([`Settings::from_env`]),
//! and it keeps them for its life; a listing reads [`profile`] when it starts. Not once per
//! process: tests and benchmarks set these variables between sessions of one process
//! (`process.env.PI_SESSION_NATIVE_BACKED_MIN = "0"` before an `open`).
//! The variables are listed in docs/architecture.md ("Environment variables").

use crate::durability::FsyncMode;

/// The configuration of one session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settings {
    /// `PI_SESSION_NATIVE_FSYNC=batch|always|never` (default batch).
    pub fsync: FsyncMode,
    /// `PI_SESSION_NATIVE_LOCK=1|true|yes`: take `<file>.lock` before the first write.
    pub lock: Locking,
    /// `PI_SESSION_NATIVE_BACKED_MIN=<bytes>`: files at least this large keep entry text in
    /// the file, not in memory (default 64 MiB).
    pub backed_min: u64,
    /// `PI_SESSION_NATIVE_TEXT_BATCH=<bytes>`: entry text laid out per batch for JS (default
    /// 1 MiB, at least 1). Up to three live at once (the one handed over, the next, the read
    /// scratch), and freed blocks of this size stay in the allocator: on the 100 MB session,
    /// 16 MB batches peaked 45 MB above 1 MB ones at the same speed (BENCHMARKS.md).
    pub text_batch: usize,
    /// `PI_SESSION_NATIVE_TEXT_PIECE=<bytes>`: entry text per string handed to JS (default
    /// 64 KiB). Under V8's largest regular object (128 KB), a piece is allocated in the young
    /// generation and, parsed and dropped before the next scavenge, costs no old-space memory.
    pub text_piece: usize,
    /// `PI_SESSION_NATIVE_PROFILE` (any value): timing lines on stderr.
    pub profile: bool,
}

/// Whether a session takes the advisory `<file>.lock` (`PI_SESSION_NATIVE_LOCK`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Locking {
    #[default]
    Off,
    /// Before the first write; a second writer fails fast.
    Lock,
}

impl Default for Settings {
    /// The defaults, without the environment (tests, fuzzing).
    fn default() -> Self {
        Settings {
            fsync: FsyncMode::Batch,
            lock: Locking::Off,
            backed_min: 64 << 20,
            text_batch: 1 << 20,
            text_piece: 64 << 10,
            profile: false,
        }
    }
}

impl Settings {
    /// The settings the environment gives now (unset or unparsable: the default).
    pub fn from_env() -> Settings {
        let d = Settings::default();
        Settings {
            fsync: FsyncMode::parse(var("PI_SESSION_NATIVE_FSYNC").as_deref()),
            lock: match var("PI_SESSION_NATIVE_LOCK").as_deref() {
                Some("1" | "true" | "yes") => Locking::Lock,
                _ => Locking::Off,
            },
            backed_min: number("PI_SESSION_NATIVE_BACKED_MIN").unwrap_or(d.backed_min),
            text_batch: number("PI_SESSION_NATIVE_TEXT_BATCH")
                .unwrap_or(d.text_batch)
                .max(1),
            text_piece: number("PI_SESSION_NATIVE_TEXT_PIECE").unwrap_or(d.text_piece),
            profile: profile(),
        }
    }
}

/// `PI_SESSION_NATIVE_PROFILE` is set (any value): timing lines on stderr.
pub fn profile() -> bool {
    std::env::var_os("PI_SESSION_NATIVE_PROFILE").is_some()
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

fn number<T: std::str::FromStr>(name: &str) -> Option<T> {
    var(name).and_then(|v| v.parse().ok())
}
