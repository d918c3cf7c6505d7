//! Entry model: a typed view (the index fields) over the raw JSON text of one file entry.
//!
//! The text is the source of truth and is kept verbatim, so unknown entry types and unknown
//! fields survive untouched. Only the fields the store needs for tree walks, labels, context
//! selection and persistence rules are extracted when the line is scanned.

use crate::json::scan::{self, Kind};
use std::borrow::Cow;
use std::sync::Arc;

/// The JSON text of one entry: its own allocation (appended entries), a slice of the decoded
/// file buffer shared by all entries loaded from that file (no per-line copies), or, for large
/// files, only its byte range in the file, read back on demand through a handle held open for
/// the session's lifetime (an unlinked or renamed file stays readable through it).
#[derive(Clone, Debug)]
pub enum Text {
    Owned(Box<str>),
    /// Offsets in 32 bits, so that a text is 24 bytes, not 32 (0.35 MB per byte on a giant
    /// session's index): a buffer past 4 GiB has its lines copied instead ([`Text::parse_shared`]).
    Shared {
        base: Arc<String>,
        start: u32,
        end: u32,
    },
    File {
        src: Arc<FileSource>,
        start: u64,
        len: u32,
    },
    /// None here: an entry appended to an in-memory session, whose object the JS layer holds
    /// and never serialized (the reference does not serialize there either). Reading it is
    /// an error; every caller that may meet one has an object route (see `Store::append_fields`).
    Js,
}

/// An entry's shell ([`shell_of`]): a slice of a *chunk* of shells written one after the
/// other by a load thread ([`ShellArena`]), or a chunk of its own.
///
/// Why chunks (issue 39): the shells are about a seventh of a giant session's bytes (104 MB
/// of a 700 MB one) and are read once, when the entries are first handed to JS, which keeps
/// the objects. So a hand-out drops the shells it delivered (`Session::shapes_piece`). One
/// allocation per shell, among the small allocations the load makes for everything else,
/// gave nothing back to the system when dropped (blocks freed among live ones); a chunk
/// holding only shells is freed whole, with its pages, once its last shell is dropped.
#[derive(Clone, Debug)]
pub struct Shell {
    /// A `String`, not a `str`: a sealed buffer becomes the chunk without a copy.
    chunk: Arc<String>,
    start: u32,
    len: u32,
}

impl Shell {
    /// A shell in a chunk of its own.
    fn own(s: &str) -> Shell {
        Shell {
            chunk: Arc::new(String::from(s)),
            start: 0,
            len: s.len() as u32,
        }
    }

    pub fn as_str(&self) -> &str {
        let (a, n) = (self.start as usize, self.len as usize);
        self.chunk.get(a..a + n).unwrap_or_default()
    }
}

#[cfg(test)]
impl Shell {
    /// Whether two shells are slices of one chunk (one allocation).
    pub(crate) fn shares_chunk_with(&self, other: &Shell) -> bool {
        Arc::ptr_eq(&self.chunk, &other.chunk)
    }
}

impl std::ops::Deref for Shell {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

/// The shells of one load thread, written into a buffer and cut into chunks of about
/// [`ShellArena::CHUNK`] bytes. A shell is assigned to its entry once its chunk is sealed
/// ([`ShellArena::assign`]): the caller keeps the entries, so `add` records the slot the
/// entry will take ([`ShellArena::slot`]).
#[derive(Debug, Default)]
pub struct ShellArena {
    buf: String,
    /// Sealed chunks not yet assigned, and the shells of the buffer and those chunks:
    /// (slot, chunk index in `sealed` or `usize::MAX` for the buffer, start, len).
    sealed: Vec<Arc<String>>,
    pending: Vec<(usize, usize, u32, u32)>,
    /// Where the next entry will go in the caller's vector.
    pub slot: usize,
}

impl ShellArena {
    /// Bytes of shells per chunk: chunks of a giant session's branch are freed while its
    /// hand-out goes on; a session of a few MB has one.
    pub const CHUNK: usize = 4 << 20;

    /// Record `s` as the shell of the entry at [`ShellArena::slot`] (the entry gets it from
    /// [`ShellArena::assign`]). `s` is shorter than 4 GiB ([`shell_of`] makes no longer
    /// one), and a chunk holding more than `CHUNK` bytes holds `s` alone, so offsets fit
    /// in 32 bits.
    pub fn add(&mut self, s: &str) {
        if !self.buf.is_empty() && self.buf.len() + s.len() > Self::CHUNK {
            self.seal();
        }
        if self.buf.capacity() == 0 {
            self.buf.reserve_exact(Self::CHUNK.max(s.len()));
        }
        self.pending
            .push((self.slot, usize::MAX, self.buf.len() as u32, s.len() as u32));
        self.buf.push_str(s);
    }

    /// Close the buffer as a chunk, as it is (no copy, no reallocation: a chunk is one
    /// allocation of `CHUNK` bytes, which the system gets back whole when it is freed).
    fn seal(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let k = self.sealed.len();
        // The next chunk is reserved when a shell is added to it (`add`).
        self.sealed.push(Arc::new(std::mem::take(&mut self.buf)));
        for p in self.pending.iter_mut().filter(|p| p.1 == usize::MAX) {
            p.1 = k;
        }
    }

    /// Give the entries at the recorded slots of `out` their shells (everything added so
    /// far is sealed first).
    pub fn assign(&mut self, out: &mut [Entry]) {
        self.seal();
        for (slot, k, start, len) in self.pending.drain(..) {
            if let (Some(e), Some(chunk)) = (out.get_mut(slot), self.sealed.get(k)) {
                e.shell = Some(Shell {
                    chunk: Arc::clone(chunk),
                    start,
                    len,
                });
            }
        }
        self.sealed.clear();
    }
}

/// The byte ranges of the values a shell left out ([`Entry::lazy_spans`]): start, end pairs.
/// One pair (a message's `content`: most entries) is held in place, more in a box: a box each
/// was ~30 bytes of heap for each of a giant session's 290,000 shells.
#[derive(Clone, Debug)]
pub struct Spans(SpanRepr);

#[derive(Clone, Debug)]
enum SpanRepr {
    One([u32; 2]),
    Many(Box<[u32]>),
}

impl Default for Spans {
    fn default() -> Spans {
        Spans(SpanRepr::Many(Box::default()))
    }
}

impl From<&[u32]> for Spans {
    fn from(s: &[u32]) -> Spans {
        match *s {
            [a, b] => Spans(SpanRepr::One([a, b])),
            _ => Spans(SpanRepr::Many(Box::from(s))),
        }
    }
}

impl std::ops::Deref for Spans {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        match &self.0 {
            SpanRepr::One(p) => p,
            SpanRepr::Many(b) => b,
        }
    }
}

/// A read handle on a session file whose entries are file-backed.
#[derive(Debug)]
pub struct FileSource {
    pub file: std::fs::File,
    /// Bytes of the file that still hold what was loaded or written through it: lowered when
    /// another program truncated or overwrote the file under the open session, so a text
    /// past it fails with `EIO` instead of returning someone else's bytes.
    pub valid_len: std::sync::atomic::AtomicU64,
}

impl FileSource {
    pub fn new(file: std::fs::File) -> FileSource {
        FileSource {
            file,
            valid_len: std::sync::atomic::AtomicU64::new(u64::MAX),
        }
    }

    /// Texts ending past `len` are no longer ours (see [`FileSource::valid_len`]).
    pub fn invalidate_from(&self, len: u64) {
        self.valid_len
            .fetch_min(len, std::sync::atomic::Ordering::Relaxed);
    }

    /// Read as much as available (up to `buf.len()`) at `offset`; returns the count.
    pub(crate) fn read_up_to(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        // Never past what is still ours (a short read: callers treat the rest as gone).
        let valid = self.valid_len.load(std::sync::atomic::Ordering::Relaxed);
        let room = usize::try_from(valid.saturating_sub(offset)).unwrap_or(usize::MAX);
        let cap = room.min(buf.len());
        let buf = &mut buf[..cap];
        let mut done = 0;
        while done < buf.len() {
            let n = self.read_some(&mut buf[done..], offset + done as u64)?;
            if n == 0 {
                break;
            }
            done += n;
        }
        Ok(done)
    }

    #[cfg(unix)]
    fn read_some(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        use std::os::unix::fs::FileExt;
        self.file.read_at(buf, offset)
    }

    #[cfg(not(unix))]
    fn read_some(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
        use std::os::windows::fs::FileExt;
        self.file.seek_read(buf, offset)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
        let end = offset.saturating_add(buf.len() as u64);
        if end > self.valid_len.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(std::io::Error::other(
                "the session file was truncated or overwritten by another program; this entry's text is gone",
            ));
        }
        read_exact_at(&self.file, buf, offset)
    }
}

/// Fill `buf` from `file` at `offset` without moving the file's cursor (positioned reads).
#[cfg(unix)]
pub(crate) fn read_exact_at(
    file: &std::fs::File,
    buf: &mut [u8],
    offset: u64,
) -> std::io::Result<()> {
    use std::os::unix::fs::FileExt;
    file.read_exact_at(buf, offset)
}

/// Fill `buf` from `file` at `offset` (on Windows `seek_read` also moves the cursor).
#[cfg(not(unix))]
pub(crate) fn read_exact_at(
    file: &std::fs::File,
    buf: &mut [u8],
    offset: u64,
) -> std::io::Result<()> {
    use std::os::windows::fs::FileExt;
    let mut done = 0;
    while done < buf.len() {
        let n = file.seek_read(&mut buf[done..], offset + done as u64)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        done += n;
    }
    Ok(())
}

/// Reads many file-backed texts in file order with few syscalls: one large read serves every
/// entry inside its window (materializing a whole large session reads it in 8 MiB pieces).
#[derive(Default)]
pub struct WindowReader {
    src: Option<Arc<FileSource>>,
    start: u64,
    buf: Vec<u8>,
}

impl WindowReader {
    const WINDOW: usize = 8 << 20;

    /// The text of `t` (through the window for file-backed text).
    pub fn read<'a>(&mut self, t: &'a Text) -> std::io::Result<Cow<'a, str>> {
        let Text::File { src, start, len } = t else {
            return t.read();
        };
        let (start, len) = (*start, *len as usize);
        let same = self.src.as_ref().is_some_and(|s| Arc::ptr_eq(s, src));
        let inside =
            same && start >= self.start && start + len as u64 <= self.start + self.buf.len() as u64;
        if !inside {
            let want = len.max(Self::WINDOW);
            self.buf.resize(want, 0);
            let got = src.read_up_to(&mut self.buf, start)?;
            self.buf.truncate(got);
            self.start = start;
            self.src = Some(Arc::clone(src));
            if got < len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
        let off = (start - self.start) as usize;
        let bytes = self.buf.get(off..off + len).unwrap_or_default();
        Ok(Cow::Owned(match std::str::from_utf8(bytes) {
            Ok(s) => s.to_string(),
            Err(_) => String::from_utf8_lossy(bytes).into_owned(),
        }))
    }
}

impl Text {
    /// The text. File-backed text is read and decoded (invalid UTF-8 as U+FFFD, as at load).
    pub fn read(&self) -> std::io::Result<Cow<'_, str>> {
        match self {
            Text::Owned(s) => Ok(Cow::Borrowed(s)),
            Text::Shared { base, start, end } => Ok(Cow::Borrowed(
                base.get(*start as usize..*end as usize).unwrap_or_default(),
            )),
            Text::Js => Err(std::io::Error::other(
                "entry text is held by the JS layer (in-memory session)",
            )),
            Text::File { src, start, len } => {
                let mut buf = vec![0u8; *len as usize];
                src.read_at(&mut buf, *start)?;
                Ok(Cow::Owned(match String::from_utf8(buf) {
                    Ok(s) => s,
                    Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
                }))
            }
        }
    }

    /// Byte length (of the stored bytes; used for buffer sizing).
    pub fn len(&self) -> usize {
        match self {
            Text::Owned(s) => s.len(),
            Text::Shared { start, end, .. } => end.saturating_sub(*start) as usize,
            Text::File { len, .. } => *len as usize,
            Text::Js => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the text lives only in the file.
    #[cfg(test)]
    pub fn is_file_backed(&self) -> bool {
        matches!(self, Text::File { .. })
    }
}

/// A key in the id space. JS compares ids with `===` / `Map` keys; string ids are the normal
/// case, anything else (missing, numbers, null...) gets a tagged key so that equality
/// behaves like the reference's `Map<any, entry>` for primitives.
pub type Key = compact_str::CompactString;

/// Key for an absent (`undefined`) field.
pub const UNDEFINED: &str = "\u{0}undefined";

/// Key for a JSON `null` value.
pub const NULL: &str = "\u{0}null";

/// Map a raw JSON value (or its absence) to a key with JS equality semantics.
pub fn key_of(raw: Option<&str>, unique: usize) -> Key {
    let Some(raw) = raw else {
        return Key::const_new(UNDEFINED);
    };
    match scan::kind_of(raw) {
        // Ids are short: a `Key` holds up to 24 bytes inline, without a heap block.
        Kind::String => match raw.get(1..raw.len().saturating_sub(1)) {
            Some(body) if !body.contains('\\') => Key::from(body),
            _ => scan::decode_str(raw).unwrap_or_default().into(),
        },
        Kind::Number => match raw.parse::<f64>() {
            Ok(n) => compact_str::format_compact!("\u{0}n{}", ryu_js::Buffer::new().format(n)),
            Err(_) => compact_str::format_compact!("\u{0}n{raw}"),
        },
        Kind::True => "\u{0}true".into(),
        Kind::False => "\u{0}false".into(),
        Kind::Null => Key::const_new(NULL),
        // Objects and arrays are compared by identity in JS: never equal to anything else.
        Kind::Object | Kind::Array => compact_str::format_compact!("\u{0}obj{unique}"),
    }
}

/// JS truthiness of a key (`if (entry.parentId)`).
pub fn key_truthy(k: &str) -> bool {
    !(k.is_empty()
        || k == UNDEFINED
        || k == NULL
        || k == "\u{0}false"
        || k == "\u{0}n0"
        || k == "\u{0}nNaN")
}

/// Entry types of the reference and the spec. `Other` keeps anything unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryType {
    Session,
    Message,
    ThinkingLevelChange,
    ModelChange,
    Usage,
    Compaction,
    BranchSummary,
    Custom,
    CustomMessage,
    ContextEdit,
    Label,
    SessionInfo,
    Other,
}

impl EntryType {
    fn from_name(s: &str) -> Self {
        match s {
            "session" => Self::Session,
            "message" => Self::Message,
            "thinking_level_change" => Self::ThinkingLevelChange,
            "model_change" => Self::ModelChange,
            "usage" => Self::Usage,
            "compaction" => Self::Compaction,
            "branch_summary" => Self::BranchSummary,
            "custom" => Self::Custom,
            "custom_message" => Self::CustomMessage,
            "context_edit" => Self::ContextEdit,
            "label" => Self::Label,
            "session_info" => Self::SessionInfo,
            _ => Self::Other,
        }
    }
}

/// Message roles that matter to the store's rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
    ToolResult,
    System,
    /// Any other role (bashExecution, custom, unknown...) or none.
    Other,
}

/// The parent link as the reference sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parent {
    /// `parentId: null`.
    Null,
    /// Any other value (string id or tagged key, including `undefined`).
    Key(Key),
}

/// One file entry: its JSON text plus the extracted index fields.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The JSON text of the entry (one line, without the newline).
    pub text: Text,
    /// True if the value is a JSON object (the reference tolerates other values in files).
    pub is_object: bool,
    pub etype: EntryType,
    pub id: Key,
    pub parent: Parent,
    pub role: Role,
    /// The one other id an entry type refers to: `targetId` of a label or context_edit,
    /// `firstKeptEntryId` of a compaction (undefined if absent); read through
    /// [`Entry::target`] / [`Entry::first_kept`]. One field, not two: no type has both, and
    /// every entry of a long session carries it: boxed, 8 bytes instead of 24 for the
    /// entries that have none (nearly all).
    pub other: Option<Box<Key>>,
    /// label: whether `label` is truthy.
    pub label_truthy: bool,
    /// compaction: carries a `retainedTail` array (the spec's self-contained checkpoint).
    pub retained_tail: bool,
    /// session header: `id` is a string (a valid header needs it).
    pub id_is_string: bool,
    /// The entry as a *shell* for JS (see [`shell_of`]): its JSON without its heavy values,
    /// with the names of the keys that hold them. `None` when the entry has no heavy value
    /// (JS parses its whole text), its text changed after indexing, or it was handed to JS
    /// already (`Session::delivered`). Shared, so that the text prefetch thread and the
    /// shape stream's worker hold it by reference count.
    pub shell: Option<Shell>,
    /// With a shell: the byte ranges (start, end pairs, flat) in the entry's text of the
    /// values the shell left out, in the order its lazy keys come (depth first, text order):
    /// filling the entry hands JS just these values ([`values_text`]).
    pub lazy_spans: Spans,
}

/// The values an entry's shell left out, as a JSON array text in the shell's order, from
/// the entry's `text` and its [`Entry::lazy_spans`]. `None` if a span does not fit the text.
pub fn values_text<'a>(text: &'a str, spans: &[u32]) -> Option<Vec<&'a str>> {
    spans
        .chunks_exact(2)
        .map(|p| text.get(p[0] as usize..p[1] as usize))
        .collect()
}

/// Top-level values whose JSON text is at least this long are *heavy*: `getBranch()` and
/// friends hand them to JS as lazy properties, parsed when first read.
pub const LAZY_MIN: usize = 128;

/// Keys whose values JS always gets at once, whatever their size: the index fields callers
/// filter on, and `usage` (of an entry or of its message): pi's TUI footer sums the usage of
/// every entry of the session at start (`getSessionStats`), which would otherwise fill every
/// entry of a giant session just to read a few numbers.
const EAGER_KEYS: [&str; 5] = ["type", "id", "parentId", "timestamp", "usage"];

/// The shell of an object entry, a JSON array `[prefix, tail...]` that JS turns into the
/// entry object without parsing its heavy values:
/// - `prefix`: the entry's object cut before its first heavy key (`{}` if that is the first);
/// - then, in the text's order, each heavy key as a string (JS adds it as a lazy property),
///   each run of light keys after the first heavy one as an object holding them (JS adds them
///   as they are), and for `message`, when its own object has heavy values, `["message",
///   <shell of the message object>]`: the message's light fields (`role`, `provider`,
///   `model`, `stopReason`...) come at once and only its heavy ones (`content`...) are lazy.
///   pi reads `entry.message.role` of every branch entry at start-up.
///
/// JS only ever *adds* properties to the parsed prefix, in order, which keeps the object in
/// V8's fast mode with shared hidden classes (redefining an existing property turned each
/// object into a dictionary: 3x the cost). `None` when nothing is heavy, or when a key needs
/// care this form does not give: `__proto__`, a key of digits only (an array index to V8), or
/// a key after the first heavy one written with escapes.
fn shell_of(
    text: &str,
    fields: &[scan::Field<'_>],
    message: &[scan::Field<'_>],
    arena: Option<&mut ShellArena>,
) -> Option<(Option<Shell>, Spans)> {
    // Written into buffers kept per thread, then copied once into allocations of the exact
    // size: a fresh buffer per entry cost a load a grow, a shrink and a copy into the `Arc`
    // for each of a giant session's entries (~5% of loading one).
    thread_local! {
        static SCRATCH: std::cell::RefCell<(String, Vec<u32>)> =
            std::cell::RefCell::new((String::with_capacity(4096), Vec::new()));
    }
    SCRATCH.with(|cell| {
        let mut scratch = cell.borrow_mut();
        let (out, spans) = &mut *scratch;
        out.clear();
        spans.clear();
        let mut w = ShellWriter { out, spans, text };
        // A shell's length is kept in 32 bits: a longer one (a line of 4 GiB) is read whole.
        let made = w
            .write(text, fields, Some(message))
            .ok()
            .filter(|()| u32::try_from(out.len()).is_ok());
        let shell = made.map(|()| {
            let shell = match arena {
                Some(a) => {
                    a.add(out);
                    None
                }
                None => Some(Shell::own(out)),
            };
            (shell, Spans::from(&spans[..]))
        });
        // A huge shell (thousands of light keys) leaves no huge buffer behind.
        if out.capacity() > 1 << 20 {
            *out = String::with_capacity(4096);
        }
        shell
    })
}

/// Writes a shell ([`shell_of`]) and the spans of the values it leaves out.
struct ShellWriter<'o, 't> {
    out: &'o mut String,
    spans: &'o mut Vec<u32>,
    /// The entry's whole text: spans are offsets in it.
    text: &'t str,
}

/// Add a light key and its raw value to the run of light keys being written.
fn push_light(out: &mut String, in_run: &mut bool, key: &str, raw: &str) {
    out.push_str(if *in_run { ",\"" } else { ",{\"" });
    *in_run = true;
    out.push_str(key);
    out.push_str("\":");
    out.push_str(raw);
}

/// Why an object has no shell.
enum NoShell {
    /// No value of it is heavy: JS can take it whole at no cost.
    Light,
    /// A key this form cannot carry (see [`shell_of`]).
    Unsupported,
}

fn is_heavy(f: &scan::Field<'_>) -> bool {
    f.raw.len() >= LAZY_MIN
        && matches!(
            scan::kind_of(f.raw),
            Kind::Object | Kind::Array | Kind::String
        )
        && !EAGER_KEYS.contains(&&*f.key)
}

impl ShellWriter<'_, '_> {
    /// Write the shell of the object `obj` (raw JSON text, inside the entry's text) whose
    /// top-level keys are `fields`; `message`: the fields of its `message` object, to shell
    /// that one too. An error (with the shell and spans left partly written) when the object
    /// has no heavy value or cannot be shelled.
    fn write(
        &mut self,
        obj: &str,
        fields: &[scan::Field<'_>],
        message: Option<&[scan::Field<'_>]>,
    ) -> Result<(), NoShell> {
        let Some(first) = fields.iter().position(is_heavy) else {
            return Err(NoShell::Light);
        };
        // Duplicate keys need nothing here: JS adds the tail in order, so a repeated key
        // keeps its first place and gets its last value (through the accessor's setter, or
        // by redefining it), as `JSON.parse` does. But the scanner's `message` fields are
        // those of the last `message` key: with two, the message is not shelled.
        let mut messages = 0;
        for f in fields {
            // Digit keys are array indices to V8, ordered before every other key: not ours.
            let digits = !f.key.is_empty() && f.key.bytes().all(|c| c.is_ascii_digit());
            if digits || f.key == "__proto__" {
                return Err(NoShell::Unsupported);
            }
            messages += usize::from(f.key == "message");
        }
        let message = message.filter(|_| messages == 1);
        let base = obj.as_ptr() as usize;
        let offset = |raw: &str| {
            (raw.as_ptr() as usize)
                .checked_sub(base)
                .ok_or(NoShell::Unsupported)
        };
        let origin = self.text.as_ptr() as usize;
        let span = |raw: &str| -> Result<[u32; 2], NoShell> {
            let start = (raw.as_ptr() as usize)
                .checked_sub(origin)
                .and_then(|s| u32::try_from(s).ok())
                .ok_or(NoShell::Unsupported)?;
            let end = u32::try_from(raw.len())
                .ok()
                .and_then(|n| start.checked_add(n))
                .ok_or(NoShell::Unsupported)?;
            Ok([start, end])
        };
        self.out.push('[');
        // The prefix: the text up to the end of the last light value before the first heavy
        // key, closed. With no light key before it, an empty object.
        match first.checked_sub(1).and_then(|k| fields.get(k)) {
            Some(f) => {
                let end = offset(f.raw)? + f.raw.len();
                self.out
                    .push_str(obj.get(..end).ok_or(NoShell::Unsupported)?);
                self.out.push('}');
            }
            None => self.out.push_str("{}"),
        }
        let mut in_run = false;
        let mut lazy = 0;
        for f in fields.iter().skip(first) {
            // Keys here are written back: only ones without escapes (the decoded key is then
            // the raw key's body).
            let std::borrow::Cow::Borrowed(key) = &f.key else {
                return Err(NoShell::Unsupported);
            };
            if !is_heavy(f) {
                push_light(self.out, &mut in_run, key, f.raw);
                continue;
            }
            let mark = (self.out.len(), self.spans.len());
            let was_in_run = in_run;
            if in_run {
                self.out.push('}');
                in_run = false;
            }
            if let Some(m) = message.filter(|_| *key == "message")
                && scan::kind_of(f.raw) == Kind::Object
            {
                // Written in place; taken back if the message cannot be shelled.
                let nested = (self.out.len(), self.spans.len());
                self.out.push_str(",[\"message\",");
                match self.write(f.raw, m, None) {
                    Ok(()) => {
                        self.out.push(']');
                        lazy += 1;
                        continue;
                    }
                    // A message with no heavy value of its own is light as a whole: pi
                    // reads the role of every branch message.
                    Err(NoShell::Light) => {
                        self.out.truncate(mark.0);
                        self.spans.truncate(mark.1);
                        in_run = was_in_run;
                        push_light(self.out, &mut in_run, key, f.raw);
                        continue;
                    }
                    Err(NoShell::Unsupported) => {
                        self.out.truncate(nested.0);
                        self.spans.truncate(nested.1);
                    }
                }
            }
            lazy += 1;
            self.spans.extend(span(f.raw)?);
            self.out.push_str(",\"");
            self.out.push_str(key);
            self.out.push('"');
        }
        if in_run {
            self.out.push('}');
        }
        self.out.push(']');
        // Every heavy value turned out light (a message without heavy values of its own).
        if lazy == 0 {
            return Err(NoShell::Light);
        }
        Ok(())
    }
}

impl Entry {
    /// Parse one line. `None` if `JSON.parse` would reject it or the value is falsy
    /// (`null`, `false`, `0`, `""` are skipped by the reference's `if (entry)`).
    /// `unique` disambiguates object-valued ids.
    pub fn parse(text: String, unique: usize) -> Option<Entry> {
        let mut e = Entry::index(&text, unique, false, None)?;
        e.text = Text::Owned(text.into_boxed_str());
        Some(e)
    }

    /// [`Entry::parse`] for the output of `JSON.stringify` (always valid JSON): string values
    /// are not validated again (see [`scan::scan_trusted`]).
    pub fn parse_stringified(text: String, unique: usize) -> Option<Entry> {
        let mut e = Entry::index(&text, unique, true, None)?;
        e.text = Text::Owned(text.into_boxed_str());
        Some(e)
    }

    /// Parse the line `base[start..end]` of a decoded file, sharing the buffer.
    pub fn parse_shared(
        base: &Arc<String>,
        start: usize,
        end: usize,
        unique: usize,
        arena: Option<&mut ShellArena>,
    ) -> Option<Entry> {
        let line = base.get(start..end)?;
        let mut e = Entry::index(line, unique, false, arena)?;
        e.text = match (u32::try_from(start), u32::try_from(end)) {
            (Ok(start), Ok(end)) => Text::Shared {
                base: Arc::clone(base),
                start,
                end,
            },
            // A buffer past 4 GiB (an in-memory load of such a file: only with the backed
            // threshold raised): its line is copied.
            _ => Text::Owned(line.into()),
        };
        Some(e)
    }

    /// This entry with a new text that differs from the old one only in the raw values of
    /// `parentId` (now `parent_raw`, maybe added at the end) and of `firstKeptEntryId` (now
    /// `first_kept_raw` when given): the other index fields are taken over. Saves re-scanning
    /// lines spliced by `createBranchedSession`.
    pub fn respliced(&self, text: String, parent_raw: &str, first_kept_raw: Option<&str>) -> Entry {
        let mut e = self.clone();
        e.text = Text::Owned(text.into_boxed_str());
        // The shell holds the old parentId: JS parses this entry whole instead.
        e.shell = None;
        e.lazy_spans = Spans::default();
        e.parent = if parent_raw == "null" {
            Parent::Null
        } else {
            Parent::Key(key_of(Some(parent_raw), 0))
        };
        if let Some(raw) = first_kept_raw
            && e.etype == EntryType::Compaction
        {
            e.other = Some(Box::new(key_of(Some(raw), 0)));
        }
        e
    }

    /// Parse a line read from `src` at `start` (file-backed text).
    pub fn parse_backed(
        line: &str,
        src: &Arc<FileSource>,
        start: u64,
        len: u32,
        unique: usize,
        arena: Option<&mut ShellArena>,
    ) -> Option<Entry> {
        let mut e = Entry::index(line, unique, false, arena)?;
        e.text = Text::File {
            src: Arc::clone(src),
            start,
            len,
        };
        Some(e)
    }

    /// An entry appended to an in-memory session from its fields alone (`Text::Js`): a JSON
    /// object with string `id`, `parentId` a string or null, and (for a message) the role.
    /// These are all the index holds for the types it is used for (message, custom,
    /// custom_message, session_info, thinking_level_change, model_change, usage): labels,
    /// context edits and compactions carry more and always come as text.
    pub fn from_fields(etype: EntryType, id: &str, parent: Option<&str>, role: Role) -> Entry {
        Entry {
            text: Text::Js,
            is_object: true,
            etype,
            id: Key::from(id),
            parent: parent.map_or(Parent::Null, |p| Parent::Key(Key::from(p))),
            role,
            other: None,
            label_truthy: false,
            retained_tail: false,
            id_is_string: true,
            shell: None,
            lazy_spans: Spans::default(),
        }
    }

    /// Scan a line and extract the index fields (the text is attached by the caller).
    /// With `arena`, a shell goes there (the caller assigns it: [`ShellArena::assign`]).
    fn index(
        text: &str,
        unique: usize,
        stringified: bool,
        arena: Option<&mut ShellArena>,
    ) -> Option<Entry> {
        let scanned = if stringified {
            scan::scan_trusted(text, Some("message"))?
        } else {
            scan::scan_with(text, Some("message"))?
        };
        let mut e = Entry {
            text: Text::Owned(Box::from("")),
            is_object: scanned.kind == Kind::Object,
            etype: EntryType::Other,
            id: Key::const_new(UNDEFINED),
            parent: Parent::Key(Key::const_new(UNDEFINED)),
            role: Role::Other,
            other: None,
            label_truthy: false,
            retained_tail: false,
            id_is_string: false,
            shell: None,
            lazy_spans: Spans::default(),
        };
        if !e.is_object {
            let trimmed = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r' | '\n'));
            if !scan::is_truthy(trimmed) {
                return None;
            }
            return Some(e);
        }
        let get = |k: &str| scanned.get(k);
        if let Some(t) = get("type").filter(|r| scan::kind_of(r) == Kind::String) {
            e.etype = EntryType::from_name(&scan::decode_str(t).unwrap_or_default());
        }
        let id_raw = get("id");
        e.id_is_string = id_raw.is_some_and(|r| scan::kind_of(r) == Kind::String);
        e.id = key_of(id_raw, unique);
        e.parent = match get("parentId") {
            Some(r) if scan::kind_of(r) == Kind::Null => Parent::Null,
            r => Parent::Key(key_of(r, unique)),
        };
        match e.etype {
            EntryType::Message
                if get("message").is_some_and(|r| scan::kind_of(r) == Kind::Object) =>
            {
                let role = scanned.get_nested("role").and_then(scan::decode_str);
                e.role = match role.as_deref() {
                    Some("user") => Role::User,
                    Some("assistant") => Role::Assistant,
                    Some("toolResult") => Role::ToolResult,
                    Some("system") => Role::System,
                    _ => Role::Other,
                };
            }
            EntryType::Label => {
                e.other = Some(Box::new(key_of(get("targetId"), unique)));
                e.label_truthy = get("label").is_some_and(scan::is_truthy);
            }
            EntryType::ContextEdit => {
                e.other = Some(Box::new(key_of(get("targetId"), unique)));
            }
            EntryType::Compaction => {
                e.other = Some(Box::new(key_of(get("firstKeptEntryId"), unique)));
                e.retained_tail =
                    get("retainedTail").is_some_and(|r| scan::kind_of(r) == Kind::Array);
            }
            _ => {}
        }
        if let Some((shell, spans)) = shell_of(text, &scanned.fields, &scanned.nested, arena) {
            e.shell = shell;
            e.lazy_spans = spans;
        }
        Some(e)
    }

    /// label / context_edit: the `targetId` key.
    pub fn target(&self) -> Option<&Key> {
        match self.etype {
            EntryType::Label | EntryType::ContextEdit => self.other.as_deref(),
            _ => None,
        }
    }

    /// compaction: the `firstKeptEntryId` key (undefined if absent).
    pub fn first_kept(&self) -> Option<&Key> {
        match self.etype {
            EntryType::Compaction => self.other.as_deref(),
            _ => None,
        }
    }

    /// Is this a user or assistant message (what makes a session worth a file).
    pub fn is_conversation(&self) -> bool {
        self.etype == EntryType::Message && matches!(self.role, Role::User | Role::Assistant)
    }

    /// A valid session header: `type: "session"` and a string `id`.
    pub fn is_valid_header(&self) -> bool {
        self.etype == EntryType::Session && self.id_is_string
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Indexing a line through the trusted (stringified) path never panics, even when the
    /// trust is misplaced: garbage with bad escapes and multi-byte characters right after
    /// backslashes, in the values the index decodes (ids, parents, targets, roles, types).
    #[test]
    fn stringified_parse_of_garbage_does_not_panic() {
        for line in [
            r#"{"type":"label","id":"a","parentId":null,"targetId":"\é","label":"\u12é"}"#,
            r#"{"type":"message","id":"\u","parentId":"\","message":{"role":"\é"}}"#,
            r#"{"type":"model_change","id":"m","provider":"\u+1é","modelId":"x\"#,
            r#"{"type":"compaction","id":"c","firstKeptEntryId":"\ud83d\u"}"#,
            "{\"type\":\"message\",\"id\":\"é",
        ] {
            // Ids, parents, targets, roles and types are decoded while indexing.
            let e = Entry::parse_stringified(line.to_string(), 1);
            let tree = crate::tree::Tree::from_entries(e.into_iter().collect());
            let _ = tree.session_path();
        }
        let good = r#"{"type":"message","id":"a1","parentId":null,"message":{"role":"user"}}"#;
        let e = Entry::parse_stringified(good.to_string(), 1).expect("valid line");
        assert_eq!(e.id.as_str(), "a1");
        assert_eq!(e.role, Role::User);
    }

    #[test]
    fn extracts_index_fields() {
        let e = Entry::parse(
            r#"{"type":"message","id":"a1","parentId":null,"timestamp":"2024-01-01T00:00:00.000Z","message":{"role":"assistant","provider":"p","model":"m","content":[]}}"#.into(),
            0,
        )
        .expect("valid");
        assert_eq!(e.etype, EntryType::Message);
        assert_eq!(e.id, "a1");
        assert_eq!(e.parent, Parent::Null);
        assert_eq!(e.role, Role::Assistant);
        assert!(e.is_conversation());
    }

    #[test]
    fn label_fields_and_keys() {
        let e = Entry::parse(
            r#"{"type":"label","id":"l","parentId":"a","targetId":"a","label":""}"#.into(),
            0,
        )
        .expect("valid");
        assert_eq!(e.target().map(|k| k.as_str()), Some("a"));
        assert!(!e.label_truthy);
        let e = Entry::parse(r#"{"type":"x","id":5,"parentId":0}"#.into(), 0).expect("valid");
        assert_eq!(e.id, "\u{0}n5");
        assert!(!key_truthy(match &e.parent {
            Parent::Key(k) => k,
            Parent::Null => "",
        }));
    }

    /// The shell `JSON.parse` reads as the light prefix, then heavy keys and light runs in
    /// the text's order.
    #[test]
    fn shells_keep_key_order_and_leave_out_heavy_values() {
        let big = "x".repeat(LAZY_MIN);
        let line = format!(
            r#"{{"type":"compaction","id":"c","parentId":"p","timestamp":"t","summary":"{big}","firstKeptEntryId":"a","tokensBefore":5,"details":{{"k":"{big}"}},"fromHook":false}}"#
        );
        let e = Entry::parse(line, 0).expect("valid");
        assert_eq!(
            e.shell.as_deref(),
            Some(
                r#"[{"type":"compaction","id":"c","parentId":"p","timestamp":"t"},"summary",{"firstKeptEntryId":"a","tokensBefore":5},"details",{"fromHook":false}]"#
            )
        );
        // Heavy first: an empty prefix.
        let e = Entry::parse(format!(r#" {{"message":"{big}", "id":"m"}} "#), 0).expect("valid");
        assert_eq!(e.shell.as_deref(), Some(r#"[{},"message",{"id":"m"}]"#));
        // A message object with heavy values: its light fields at once, `content` lazy.
        let line = format!(
            r#"{{"type":"message","id":"a","message":{{"role":"user","content":"{big}","timestamp":5}}}}"#
        );
        let e = Entry::parse(line, 0).expect("valid");
        assert_eq!(
            e.shell.as_deref(),
            Some(
                r#"[{"type":"message","id":"a"},["message",[{"role":"user"},"content",{"timestamp":5}]]]"#
            )
        );
        let vals = values_text(e.text.read().expect("text").as_ref(), &e.lazy_spans)
            .expect("spans")
            .iter()
            .map(|v| v.to_string())
            .collect::<Vec<_>>();
        assert_eq!(vals, [format!(r#""{big}""#)]);
        // A message whose own values are all light is light as a whole.
        let line = format!(
            r#"{{"type":"message","id":"a","message":{{"role":"user","content":"hi","usage":{{"n":"{}"}}}}}}"#,
            "z".repeat(100)
        );
        assert!(Entry::parse(line, 0).expect("valid").shell.is_none());
        // Nothing heavy, a short value, a heavy number or id: no shell.
        for line in [
            r#"{"type":"message","id":"a","message":{"role":"user"}}"#.to_string(),
            format!(r#"{{"type":"x","id":"{big}","n":{}}}"#, "1".repeat(200)),
        ] {
            assert!(Entry::parse(line, 0).expect("valid").shell.is_none());
        }
        // __proto__, an escaped key after the heavy one: no shell.
        for line in [
            format!(r#"{{"__proto__":1,"a":"{big}"}}"#),
            format!(r#"{{"a":"{big}","\u0062":1}}"#),
        ] {
            assert!(Entry::parse(line, 0).expect("valid").shell.is_none());
        }
    }

    #[test]
    fn falsy_values_are_skipped_truthy_kept() {
        assert!(Entry::parse("null".into(), 0).is_none());
        assert!(Entry::parse("0".into(), 0).is_none());
        assert!(Entry::parse("\"\"".into(), 0).is_none());
        assert!(Entry::parse("5".into(), 0).is_some());
        assert!(Entry::parse("{bad".into(), 0).is_none());
    }

    /// Shells added to an arena come back whole, each assigned to its slot, in chunks of at
    /// most `CHUNK` bytes (a shell never split), and a shell larger than a chunk is one chunk.
    #[test]
    fn an_arena_cuts_shells_into_chunks_and_assigns_each_to_its_slot() {
        let big = |c: char, n: usize| c.to_string().repeat(n);
        let texts = [
            big('a', ShellArena::CHUNK / 3),
            big('b', ShellArena::CHUNK / 3),
            big('c', ShellArena::CHUNK / 2), // does not fit after a and b: a new chunk
            "d".to_string(),
            big('e', ShellArena::CHUNK + 10), // larger than a chunk
            "f".to_string(),
        ];
        let mut entries: Vec<Entry> = (0..texts.len() + 1)
            .map(|i| Entry::from_fields(EntryType::Message, &format!("e{i}"), None, Role::User))
            .collect();
        let mut arena = ShellArena::default();
        // Slot 0 is left without a shell; text k goes to slot k + 1.
        for (k, t) in texts.iter().enumerate() {
            arena.slot = k + 1;
            arena.add(t);
        }
        arena.assign(&mut entries);
        assert!(entries[0].shell.is_none());
        let shell = |i: usize| entries[i].shell.as_ref().expect("a shell");
        for (k, t) in texts.iter().enumerate() {
            assert_eq!(shell(k + 1).as_str(), t.as_str());
        }
        assert!(shell(1).shares_chunk_with(shell(2)));
        assert!(!shell(2).shares_chunk_with(shell(3)));
        assert!(shell(3).shares_chunk_with(shell(4)));
        assert!(!shell(4).shares_chunk_with(shell(5)));
        assert!(!shell(5).shares_chunk_with(shell(6)));
        // Assigned once: a second assign changes nothing.
        arena.assign(&mut entries);
        assert_eq!(entries[6].shell.as_deref(), Some("f"));
    }

    /// What each entry of a giant session costs in the index (354,000 entries for 700 MB):
    /// a field added here is 0.35 MB per byte.
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn an_entry_stays_at_most_120_bytes() {
        assert!(
            std::mem::size_of::<Entry>() <= 120,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    /// Spans read back as they were given, one pair held in place or more in a box.
    #[test]
    fn spans_read_back_as_given() {
        for v in [vec![], vec![3, 9], vec![1, 2, 5, 7], vec![4]] {
            assert_eq!(&*Spans::from(&v[..]), &v[..]);
        }
        assert!(Spans::default().is_empty());
        assert_eq!(std::mem::size_of::<Spans>(), 16);
    }
}
