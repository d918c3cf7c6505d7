//! `Session`: a [`Store`] plus what reading a session's entry texts needs: the batch being
//! handed out piece by piece and the next one, laid out ahead on a worker thread (the
//! prefetch). The binding's `NativeSession` wraps one and only converts.
//!
//! Its fields are private so that every change of the entries goes through
//! [`Session::entries_changing`], the one place that drops batches laid out for the entries
//! as they were. Reads go through [`Session::tree`] and [`Session::store`].

use crate::config::Settings;
use crate::entry::{Entry, Key, Shell, ShellArena, Spans, Text};
use crate::error::{FsError, fs_error};
use crate::materialize::{self, Form, Piece};
use crate::shape_stream::{self, Encoded, ShapeStream};
use crate::shapes::Tables;
use crate::store::{self, IdCheck, Persistence, Store, StoreError};
use crate::tree::Tree;
use crate::{branch, context, jsonl, migrate};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A session's entries, their persistence and the text batches being read.
pub struct Session {
    store: Store,
    settings: Settings,
    /// The next text batch, being laid out on a worker thread.
    prefetch: Option<Prefetch>,
    /// The batch [`Session::lines_text`] is handing out piece by piece.
    laid: Option<Laid>,
    /// The shapes hand-out being encoded on a worker thread ([`Session::shapes_piece`]).
    stream: Option<ShapeStream>,
    /// The last context plan, extended while the leaf only moves on to appended entries.
    plan_memo: Option<context::PlanMemo>,
    /// Bytes of shells dropped since the allocator was last asked to give back free pages
    /// ([`Session::delivered`]).
    shells_dropped: usize,
}

/// Sessions of fewer entries keep their shells where the load put them ([`Session::part_shells`]).
const PART_MIN: usize = 4096;
/// Shell bytes dropped before free pages are given back to the system ([`release_free_pages`]).
pub(crate) const TRIM_AFTER: usize = 16 << 20;

/// What [`Session::load_file`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadSummary {
    /// Entries loaded (0: missing, empty, or not a session; nothing was replaced).
    pub count: usize,
    /// The file did not end with a newline, and one was appended (as the reference does).
    pub repaired: bool,
}

/// Why [`Session::load_file`] failed.
#[derive(Debug)]
pub enum LoadFileError {
    Load(jsonl::LoadError),
    /// The newline repair could not be written.
    Repair(FsError),
}

/// Failures of session operations other than appends.
#[derive(Debug)]
pub enum SessionError {
    /// An entry's text could not be read back.
    Unreadable(std::io::Error),
    /// A line the session made itself did not parse (a bug, never the caller's input).
    Internal(&'static str),
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionError::Unreadable(e) => write!(f, "cannot read session entry: {e}"),
            SessionError::Internal(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SessionError {}

/// What [`Session::branch_into`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BranchedInto {
    /// The entries are now the branched session's.
    Done,
    /// The path is empty (`Entry <id> not found`); nothing changed.
    NotFound,
    /// A line on the path does not qualify for splicing: the caller takes the object route;
    /// nothing changed.
    Fallback,
}

/// A laid-out batch, handed to JS in pieces of about `Settings::text_piece` bytes.
struct Laid {
    /// The entry indices the batch holds texts for.
    key: Vec<u32>,
    /// What is laid out for entries with a shell.
    form: Form,
    batch: materialize::Batch,
    /// Entries of `batch` handed over so far.
    pos: usize,
}

/// A batch laid out ahead on a worker thread, for a request that starts with `key`. The thread
/// hands back the scratch buffer it read into, for the next batch.
struct Prefetch {
    key: Vec<u32>,
    form: Form,
    handle: std::thread::JoinHandle<(materialize::Batch, Vec<u8>)>,
}

impl Prefetch {
    /// Start laying out the batch that a request for `rest` would get. The thread works on
    /// clones of the texts (shared buffers and file handles are reference-counted), so the
    /// session stays free to change meanwhile. `None` if no thread could be started.
    fn spawn(
        entries: &[Entry],
        rest: &[u32],
        form: Form,
        budget: usize,
        mut scratch: Vec<u8>,
    ) -> Option<Prefetch> {
        let mut texts: Vec<Option<Text>> = Vec::new();
        let mut spans: Vec<Spans> = Vec::new();
        let mut shells: Vec<Option<Shell>> = Vec::new();
        let mut size = 0;
        for &i in rest {
            if size >= budget {
                break;
            }
            if form == Form::Values {
                let s = entries.get(i as usize).map(|e| e.lazy_spans.clone());
                spans.push(s.unwrap_or_default());
            }
            if form == Form::Shells {
                // A shell is laid out instead of the text: counted by its own size.
                let shell = entries.get(i as usize).and_then(|e| e.shell.clone());
                if let Some(sh) = &shell {
                    size += sh.len();
                    shells.push(shell);
                    texts.push(None);
                    continue;
                }
                shells.push(None);
            }
            let t = entries.get(i as usize).map(|e| &e.text);
            // Shared and file-backed texts clone as reference counts; an owned text (appended,
            // spliced, migrated) would be copied here on the JS thread, which is the work the
            // thread is meant to take off it: lay such batches out in the next call instead.
            if matches!(t, Some(Text::Owned(_))) {
                return None;
            }
            let t = t.cloned();
            size += t.as_ref().map_or(0, |t| t.len());
            texts.push(t);
        }
        let local: Vec<u32> = (0..texts.len() as u32).collect();
        // The batch holds texts for a prefix of these indices only: a later request that
        // starts with them gets it (comparing or copying the whole rest for every batch
        // would cost time quadratic in the number of batches).
        let key = rest.get(..texts.len()).unwrap_or_default().to_vec();
        let handle = std::thread::Builder::new()
            .name("psn-text".into())
            .spawn(move || {
                let b = materialize::batch(
                    |i| texts.get(i as usize).and_then(|t| t.as_ref()),
                    |i| shells.get(i as usize).and_then(|s| s.as_deref()),
                    |i| spans.get(i as usize).map(|s| &**s),
                    form,
                    &local,
                    budget,
                    &mut scratch,
                );
                (b, scratch)
            })
            .ok()?;
        Some(Prefetch { key, form, handle })
    }
}

impl Session {
    /// A session configured by the environment as it is now ([`Settings::from_env`]).
    pub fn new(persist: Persistence) -> Session {
        Session::with_settings(persist, Settings::from_env())
    }

    pub fn with_settings(persist: Persistence, settings: Settings) -> Session {
        Session {
            store: Store::with_settings(persist, &settings),
            settings,
            prefetch: None,
            laid: None,
            stream: None,
            plan_memo: None,
            shells_dropped: 0,
        }
    }

    /// The entries and their index.
    pub fn tree(&self) -> &Tree {
        &self.store.tree
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store, for a change of its entries: batches laid out for the entries as they
    /// were are dropped first. Every such change goes through here.
    fn entries_changing(&mut self) -> &mut Store {
        self.prefetch = None;
        self.laid = None;
        self.stream = None;
        &mut self.store
    }

    /// Replace every entry.
    fn replace_entries(&mut self, entries: Vec<Entry>) {
        self.plan_memo = None;
        self.entries_changing().replace(entries);
    }

    /// Set the session file path (or none) and whether it already holds the entries.
    pub fn set_file(&mut self, path: Option<PathBuf>, flushed: bool) {
        self.store.switch_file(path, flushed);
    }

    pub fn set_flushed(&mut self, flushed: bool) {
        self.store.flushed = flushed;
    }

    pub fn set_leaf(&mut self, key: Option<Key>) {
        self.store.tree.leaf = key;
    }

    /// The entries as they are now, in a session of their own that nothing changes (JS
    /// entries handed out before a load, new session or branch read their left-out values
    /// from it). Texts and shells are shared, not copied (a shared buffer or a file handle,
    /// reference-counted shells).
    pub fn retire(&mut self) -> Session {
        let mut copy = self.store.tree.entries.clone();
        // A retired copy only fills entries already handed out: their shells are not read.
        for e in &mut copy {
            e.shell = None;
        }
        let mut retired = Session::with_settings(Persistence::Memory, self.settings);
        retired.store.replace(copy);
        retired
    }

    /// `loadEntriesFromFile` + adopt the entries. Repairs a missing final newline exactly
    /// when the reference does (valid header, text after the last newline). Entries are only
    /// replaced when the file is a session.
    pub fn load_file(&mut self, path: &Path) -> Result<LoadSummary, LoadFileError> {
        let t0 = std::time::Instant::now();
        // Read ahead while pi was starting (crate::preload), if that is this file as it is now.
        let loaded = match crate::preload::take(path, self.settings.backed_min) {
            Some(l) => l,
            None => {
                jsonl::load_file(path, self.settings.backed_min).map_err(LoadFileError::Load)?
            }
        };
        let count = loaded.entries.len();
        let mut repaired = false;
        if count > 0 {
            if loaded.unterminated {
                store::append_raw(path, b"\n").map_err(LoadFileError::Repair)?;
                repaired = true;
            }
            let t1 = std::time::Instant::now();
            self.replace_entries(loaded.entries);
            let t2 = std::time::Instant::now();
            self.part_shells();
            self.store.note_loaded(path, loaded.file, repaired);
            if self.settings.profile {
                eprintln!(
                    "[pi-session-native] load {count} entries: read+scan {:?}, index {:?}, shells parted {:?}",
                    t1 - t0,
                    t2 - t1,
                    t2.elapsed()
                );
            }
        }
        Ok(LoadSummary { count, repaired })
    }

    /// Migrate v1/v2 entries to v3 in place (the reference's rules); true if anything was
    /// migrated (the caller then rewrites the file).
    pub fn migrate(&mut self) -> Result<bool, SessionError> {
        // Cheap check first: only the header decides (current files are never re-parsed).
        let tree = &self.store.tree;
        let header = tree
            .header_index()
            .and_then(|i| tree.entries.get(i))
            .and_then(|e| e.text.read().ok());
        if !migrate::header_needs_migration(header.as_deref()) {
            return Ok(false);
        }
        let mut texts: Vec<String> = Vec::with_capacity(tree.entries.len());
        for e in &tree.entries {
            let t = e.text.read().map_err(SessionError::Unreadable)?;
            texts.push(t.into_owned());
        }
        let Some(lines) = migrate::migrate_texts(&texts) else {
            return Ok(false);
        };
        let mut entries: Vec<Entry> = Vec::with_capacity(lines.len());
        for line in lines {
            let e = self.store.parse_line(line).ok_or(SessionError::Internal(
                "internal: migrated entry is not valid JSON",
            ))?;
            entries.push(e);
        }
        self.replace_entries(entries);
        Ok(true)
    }

    /// Replace every entry with the given lines (newline-separated JSON texts).
    pub fn replace_lines(&mut self, text: &str) -> Result<(), SessionError> {
        let mut entries: Vec<Entry> = Vec::new();
        for line in text.split('\n') {
            if line.is_empty() {
                continue;
            }
            let e = self
                .store
                .parse_line(line.to_string())
                .ok_or(SessionError::Internal("internal: invalid entry JSON"))?;
            entries.push(e);
        }
        self.replace_entries(entries);
        Ok(())
    }

    /// [`Store::append_stringified`].
    pub fn append_stringified(&mut self, line: String) -> Result<(), StoreError> {
        self.entries_changing().append_stringified(line)
    }

    /// [`Store::append_stringified_if_new_id`].
    pub fn append_stringified_if_new_id(&mut self, line: String) -> Result<bool, StoreError> {
        self.entries_changing().append_stringified_if_new_id(line)
    }

    /// [`Store::append_fields`].
    pub fn append_fields(&mut self, entry: Entry, check: IdCheck) -> Result<bool, StoreError> {
        self.entries_changing().append_fields(entry, check)
    }

    /// [`Store::extend_in_memory`].
    pub fn extend_in_memory(
        &mut self,
        n: usize,
        entries: impl Iterator<Item = Entry>,
    ) -> Result<(), StoreError> {
        self.entries_changing().extend_in_memory(n, entries)
    }

    /// [`Store::restore_texts`].
    pub fn restore_texts(&mut self, indices: &[u32], lines: Vec<Option<String>>) {
        // A restored text may change what the plan reads (a role): planned afresh.
        self.plan_memo = None;
        self.entries_changing().restore_texts(indices, lines);
    }

    /// `_rewriteFile()`.
    pub fn rewrite(&mut self) -> Result<(), FsError> {
        self.store.rewrite()
    }

    /// `createBranchedSession` on text: replace the entries with `header` followed by the
    /// path to `from` (or the leaf) without labels, re-chained, and its labels re-created
    /// (see [`crate::branch`]); `new_id` draws label ids as in [`branch::branch_lines`].
    pub fn branch_into(
        &mut self,
        from: Option<&str>,
        header: String,
        new_id: impl FnMut(bool) -> Option<String>,
    ) -> BranchedInto {
        let lines = match branch::branch_lines(&self.store.tree, from, new_id) {
            branch::Branched::NotFound => return BranchedInto::NotFound,
            branch::Branched::Fallback => return BranchedInto::Fallback,
            branch::Branched::Lines(lines) => lines,
        };
        let mut entries: Vec<Entry> = Vec::with_capacity(lines.len() + 1);
        let Some(h) = self.store.parse_line(header) else {
            return BranchedInto::Fallback;
        };
        entries.push(h);
        for line in lines {
            // Spliced path entries keep their index fields (no re-scan); labels are scanned.
            let old = line
                .splice
                .as_ref()
                .and_then(|s| self.store.tree.entries.get(s.from).map(|e| (e, s)));
            let e = match old {
                Some((e, s)) => {
                    Some(e.respliced(line.text, &s.parent_raw, s.first_kept_raw.as_deref()))
                }
                None => self.store.parse_line(line.text),
            };
            match e {
                Some(e) => entries.push(e),
                None => return BranchedInto::Fallback,
            }
        }
        self.replace_entries(entries);
        BranchedInto::Done
    }

    /// forkFrom: write `header` and every non-header entry to a new file (exclusive create).
    /// Lines are written as `JSON.stringify(JSON.parse(line))`, as the reference does.
    pub fn fork_into(&self, path: &Path, header: String) -> Result<(), FsError> {
        let mut lines: Vec<String> = vec![header];
        for e in &self.store.tree.entries {
            if e.etype == crate::entry::EntryType::Session {
                continue;
            }
            let text = e.text.read().map_err(|err| fs_error(&err, "read", path))?;
            lines.push(crate::json::value::canonicalize(&text).unwrap_or_else(|| text.to_string()));
        }
        store::write_lines_exclusive(path, &lines, self.settings.fsync)
    }

    /// The next piece of the texts of `want` (a prefix of them, at least one entry): `take`
    /// gets the piece's text (ASCII) and where each entry's text is in it. Texts are laid out
    /// a batch (up to `Settings::text_batch` bytes) at a time and handed out in pieces of
    /// about `Settings::text_piece` bytes; while the caller parses a batch's pieces, the next
    /// batch is laid out on a worker thread. See `linesText` in the binding.
    pub fn lines_text<R>(
        &mut self,
        want: &[u32],
        form: Form,
        take: impl FnOnce(&[u8], Piece) -> R,
    ) -> R {
        // The batch being handed over, if this call continues it.
        let laid = self
            .laid
            .take()
            .filter(|l| l.form == form && want.starts_with(l.key.get(l.pos..).unwrap_or_default()));
        let mut l = match laid {
            Some(l) if l.pos < l.batch.count() => l,
            _ => self.lay_out(want, form),
        };
        let p = materialize::piece(&l.batch, l.pos, self.settings.text_piece);
        l.pos += p.count();
        let out = take(l.batch.bytes.get(p.start..p.end).unwrap_or_default(), p);
        if l.pos < l.batch.count() {
            self.laid = Some(l);
        }
        out
    }

    /// The context plan for the current leaf ([`context::plan_with`]).
    pub fn context_plan(&mut self) -> context::Plan {
        context::plan_with(&self.store.tree, &mut self.plan_memo)
    }

    /// The next piece of a hand-out of the entries at `want` as shapes
    /// ([`crate::shape_stream::encode_piece`]; `indices` says which entries it holds, a prefix
    /// of `want`). A large hand-out is encoded ahead on a worker thread ([`ShapeStream`]) while
    /// the caller builds the pieces before; a small one here, from [`Session::lines_text`].
    pub fn shapes_piece(&mut self, want: &[u32], tables: &Arc<Mutex<Tables>>) -> Encoded {
        let e = self.encode_shapes(want, tables);
        self.delivered(&e, e.indices.len() >= want.len());
        e
    }

    /// The shells of a piece JS is handed are dropped: JS keeps the objects it makes from
    /// them (lib/entry-cache.js), and an entry asked for again goes as its whole text. Once
    /// a hand-out is over (`last`) and enough was dropped, the allocator gives its free
    /// pages back. A giant session's branch is about a seventh of its bytes in shells.
    fn delivered(&mut self, e: &Encoded, last: bool) {
        for &i in &e.indices {
            if let Some(x) = self.store.tree.entries.get_mut(i as usize)
                && let Some(sh) = x.shell.take()
            {
                self.shells_dropped += sh.len();
            }
        }
        // During a streamed hand-out its worker gives pages back as it goes (off this thread).
        if last && self.shells_dropped >= TRIM_AFTER / 4 {
            self.shells_dropped = 0;
            let t = std::time::Instant::now();
            release_free_pages();
            if self.settings.profile {
                eprintln!(
                    "[pi-session-native] free pages given back {:?}",
                    t.elapsed()
                );
            }
        }
    }

    /// After a load: the shells of the entries off the current leaf's branch move to chunks
    /// of their own. Then the load's chunks hold only shells of the branch, which pi hands
    /// out at start, so each chunk is freed as that hand-out goes on (one entry of another
    /// branch in a chunk would keep the whole chunk). About a tenth of the shells of a
    /// generated 700 MB session are copied (~12 MB).
    fn part_shells(&mut self) {
        let tree = &mut self.store.tree;
        let n = tree.entries.len();
        if n < PART_MIN {
            return;
        }
        // (The walk resolves every entry's parent, which the context and `getBranch()` that
        // follow a load need anyway: ~25 ms of the ~30 this takes on a 700 MB session.)
        let mut on = vec![false; n];
        for i in tree.branch(None) {
            if let Some(b) = on.get_mut(i as usize) {
                *b = true;
            }
        }
        let mut arena = ShellArena::default();
        for (i, e) in tree.entries.iter_mut().enumerate() {
            if on.get(i).copied().unwrap_or(true) {
                continue;
            }
            if let Some(sh) = e.shell.take() {
                arena.slot = i;
                arena.add(&sh);
            }
        }
        arena.assign(&mut tree.entries);
    }

    fn encode_shapes(&mut self, want: &[u32], tables: &Arc<Mutex<Tables>>) -> Encoded {
        if let Some(s) = self.stream.as_mut() {
            if let Some(e) = s.next(want) {
                return e;
            }
            self.stream = None;
        }
        if want.len() >= shape_stream::STREAM_MIN {
            let entries = &self.store.tree.entries;
            // Pieces 8x those laid out here (512 KiB of shells; their values text ~110 KB,
            // still under V8's 128 KB for a young object): the worker stays ahead of JS, and
            // each piece costs JS an N-API call and a dozen objects. 4x -> 8x: first
            // `getBranch()` of 700 MB ~517 -> ~491 ms (median of 4 interleaved).
            let piece = self.settings.text_piece.saturating_mul(8);
            let stream = ShapeStream::spawn(entries, want, Arc::clone(tables), piece);
            if let Some(mut s) = stream
                && let Some(e) = s.next(want)
            {
                self.stream = Some(s);
                return e;
            }
        }
        self.lines_text(want, Form::Shells, |text, p| {
            let mut e = shape_stream::encode_piece(text, &p, tables);
            e.indices = want.get(..p.count()).unwrap_or_default().to_vec();
            e
        })
    }

    /// Lay out the batch of texts that starts `want`: the one the worker thread prepared
    /// if it is for these entries, else here (a small first batch, so JS starts parsing at
    /// once). When entries remain after it, the next batch is started on a worker thread.
    fn lay_out(&mut self, want: &[u32], form: Form) -> Laid {
        let entries = &self.store.tree.entries;
        let budget = self.settings.text_batch;
        let prefetched = match self.prefetch.take() {
            Some(p) if p.form == form && want.starts_with(&p.key) => p.handle.join().ok(),
            _ => None,
        };
        let mut scratch = Vec::new();
        let first = (budget / 16).max(1);
        let batch = match prefetched {
            Some((b, used)) => {
                scratch = used;
                b
            }
            None => {
                let text_of = |i: u32| entries.get(i as usize).map(|e| &e.text);
                let shell_of = |i: u32| entries.get(i as usize)?.shell.as_deref();
                let spans_of = |i: u32| entries.get(i as usize).map(|e| &*e.lazy_spans);
                materialize::batch(text_of, shell_of, spans_of, form, want, first, &mut scratch)
            }
        };
        let n = batch.count();
        let rest = want.get(n..).unwrap_or_default();
        if !rest.is_empty() {
            // Batches double up to the budget: laying text out runs faster than JS parses
            // it, so each batch is ready by the time JS has parsed the one before. The
            // scratch buffer goes along (it is dropped after the last batch). Never below the
            // first batch's size: a batch that laid out much less than its texts' length
            // (left-out values) would otherwise shrink every batch after it.
            let next = budget.min(batch.bytes.len().max(first).saturating_mul(2));
            self.prefetch = Prefetch::spawn(entries, rest, form, next, scratch);
        }
        Laid {
            key: want.get(..n).unwrap_or_default().to_vec(),
            form,
            batch,
            pos: 0,
        }
    }
}

/// Ask the allocator to give the system back the free pages it holds (glibc keeps freed
/// blocks of its heaps resident; a shell chunk freed there stays in RSS until this runs).
/// A few milliseconds, once per large hand-out. Other allocators return them on free.
pub(crate) fn release_free_pages() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes a byte count and has no other precondition; glibc takes
    // each arena's lock while it trims, so it is safe with other threads allocating.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shapes::NewEntries;

    const HEADER: &str = r#"{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/w"}"#;

    fn message(id: &str, parent: Option<&str>, text: &str) -> String {
        let parent = parent.map_or("null".to_string(), |p| format!("\"{p}\""));
        format!(
            r#"{{"type":"message","id":"{id}","parentId":{parent},"timestamp":"t","message":{{"role":"user","content":"{text}"}}}}"#
        )
    }

    /// A session of `n` chained messages loaded from a file (texts shared with the file's
    /// buffer, so that the prefetch thread takes them), cutting texts into tiny batches and
    /// pieces so that every read goes through several of both.
    fn session(n: usize) -> (Session, Vec<String>) {
        let settings = Settings {
            text_batch: 300,
            text_piece: 100,
            ..Settings::default()
        };
        let mut s = Session::with_settings(Persistence::Memory, settings);
        let mut lines = vec![HEADER.to_string()];
        for i in 0..n {
            let parent = (i > 0).then(|| format!("m{}", i - 1));
            lines.push(message(
                &format!("m{i}"),
                parent.as_deref(),
                &"x".repeat(i % 7 * 20),
            ));
        }
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let k = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("psn-session-{}-{k}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        let loaded = s.load_file(&path).expect("load");
        assert_eq!(loaded.count, lines.len());
        let _ = std::fs::remove_dir_all(&dir);
        (s, lines)
    }

    /// Every requested text through `lines_text`, as JS reads them (piece after piece).
    fn read_all(s: &mut Session, want: &[u32]) -> Vec<String> {
        let mut out = Vec::new();
        while out.len() < want.len() {
            let rest = &want[out.len()..];
            let got: Vec<String> = s.lines_text(rest, Form::Whole, |text, p| {
                p.starts
                    .iter()
                    .zip(&p.ends)
                    .map(|(&a, &b)| {
                        String::from_utf8_lossy(&text[a as usize..b as usize]).into_owned()
                    })
                    .collect()
            });
            assert!(!got.is_empty(), "a piece holds at least one entry");
            out.extend(got);
        }
        out
    }

    /// A session of `n` messages with usage numbers, heavy content in every third (so a
    /// shell; every sixth with a non-ASCII model, so a shell that is laid out escaped) and
    /// non-ASCII text in some light ones, from lines in memory (small batches and pieces).
    fn shaped_session(n: usize) -> Session {
        let settings = Settings {
            text_batch: 4096,
            text_piece: 700,
            ..Settings::default()
        };
        let mut s = Session::with_settings(Persistence::Memory, settings);
        let mut lines = vec![HEADER.to_string()];
        for i in 0..n {
            let parent = if i == 0 {
                "null".to_string()
            } else {
                format!("\"m{}\"", i - 1)
            };
            let content = if i % 3 == 0 {
                "y".repeat(200)
            } else {
                format!("é{i}")
            };
            lines.push(format!(
                r#"{{"type":"message","id":"m{i}","parentId":{parent},"timestamp":"2025-01-01T00:00:00.{:03}Z","message":{{"role":"assistant","content":"{content}","model":"m{}","usage":{{"input":{i},"cost":{{"total":0.{i}1}}}},"timestamp":17487688429{:02}}}}}"#,
                i % 1000,
                if i % 6 == 0 { format!("é{}", i % 5) } else { (i % 5).to_string() },
                i % 100
            ));
        }
        s.replace_lines(&lines.join("\n")).expect("lines");
        s
    }

    /// Every piece of a shapes hand-out of `want` (`shapes_piece` until all are handed out),
    /// with the layouts and strings registered when each was handed over.
    fn shaped_all(
        s: &mut Session,
        want: &[u32],
        tables: &Arc<Mutex<Tables>>,
    ) -> Vec<(Encoded, NewEntries)> {
        let mut out = Vec::new();
        let mut done = 0;
        while done < want.len() {
            let e = s.shapes_piece(&want[done..], tables);
            assert!(!e.indices.is_empty() && want[done..].starts_with(&e.indices));
            done += e.indices.len();
            let new = shape_stream::lock(tables).take_new();
            out.push((e, new));
        }
        out
    }

    /// Forms with shape ids, refs, number bits, pool, JSON values, [layouts, strings].
    type Flat = (
        Vec<(u8, u32)>,
        Vec<u32>,
        Vec<u64>,
        Vec<u8>,
        Vec<u8>,
        [String; 2],
    );

    /// What a hand-out gives JS, entry by entry: form, shape id, and the values it takes; and
    /// every layout and string registered (when each was handed over may differ).
    fn flat(pieces: &[(Encoded, NewEntries)]) -> Flat {
        let (mut forms, mut ints) = (Vec::new(), Vec::new());
        let (mut refs, mut nums, mut pool, mut values, mut new) = (
            vec![],
            vec![],
            vec![],
            vec![],
            [String::new(), String::new()],
        );
        for (e, n) in pieces {
            forms.extend(e.forms.iter().copied().zip(e.ids.iter().copied()));
            refs.extend(&e.out.refs);
            nums.extend(e.out.nums.iter().map(|n| n.to_bits()));
            ints.extend(e.out.ints.iter().map(|&i| i as u64));
            pool.extend(&e.out.pool);
            // One JSON array body, whatever the pieces.
            if !values.is_empty() && !e.out.values.is_empty() {
                values.push(b',');
            }
            values.extend(&e.out.values);
            // Layouts, then strings: each list in id order, however the pieces took them.
            for (k, body) in [&n.shapes, &n.interned].into_iter().enumerate() {
                if !body.is_empty() {
                    new[k].push_str(body);
                    new[k].push(',');
                }
            }
        }
        // The doubles, then the integers.
        nums.extend(ints);
        (forms, refs, nums, pool, values, new)
    }

    /// A loaded session of `PART_MIN`+ entries keeps the shells of the entries off its
    /// leaf's branch in chunks of their own, and a hand-out of the branch drops the shells it
    /// delivered (so the load's chunks are all freed); asked for again, those entries come
    /// whole, as objects equal to what their shells gave.
    #[test]
    fn shells_off_the_branch_are_parted_and_a_hand_out_drops_the_shells_it_delivered() {
        let n = PART_MIN + 500;
        let heavy = "h".repeat(300);
        let mut lines = vec![HEADER.to_string()];
        // A side branch of 50 entries off m99, written in the middle of the chain.
        for i in 0..n {
            let parent = (i > 0).then(|| format!("m{}", i - 1));
            lines.push(message(&format!("m{i}"), parent.as_deref(), &heavy));
            if i == 2000 {
                for j in 0..50 {
                    let parent = if j == 0 {
                        "m99".to_string()
                    } else {
                        format!("x{}", j - 1)
                    };
                    lines.push(message(&format!("x{j}"), Some(&parent), &heavy));
                }
            }
        }
        let dir = std::env::temp_dir().join(format!("psn-session-part-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("s.jsonl");
        std::fs::write(&path, lines.join("\n") + "\n").expect("write");
        let mut s = Session::new(Persistence::Memory);
        s.load_file(&path).expect("load");
        let _ = std::fs::remove_dir_all(&dir);
        let branch = s.tree().branch(None);
        assert_eq!(branch.len(), n);
        let on: std::collections::HashSet<u32> = branch.iter().copied().collect();
        let entries = &s.tree().entries;
        let shell = |i: usize| {
            entries[i]
                .shell
                .as_ref()
                .expect("every message has a shell")
        };
        let off: Vec<usize> = (1..entries.len())
            .filter(|&i| !on.contains(&(i as u32)))
            .collect();
        assert_eq!(off.len(), 50);
        for &i in &off {
            assert!(
                branch
                    .iter()
                    .all(|&b| !shell(b as usize).shares_chunk_with(shell(i)))
            );
            assert!(shell(i).shares_chunk_with(shell(off[0])));
        }
        // Hand out the branch.
        let want: Vec<u32> = branch.clone();
        let tables = Arc::new(Mutex::new(Tables::default()));
        let before = shaped_all(&mut s, &want, &tables);
        let entries = &s.tree().entries;
        assert!(want.iter().all(|&i| entries[i as usize].shell.is_none()));
        assert!(off.iter().all(|&i| entries[i].shell.is_some()));
        // Again: whole texts, which JS makes into the same objects.
        let again = shaped_all(&mut s, &want[..10], &tables);
        let forms: Vec<u8> = again.iter().flat_map(|(e, _)| e.forms.clone()).collect();
        assert_eq!(forms.len(), 10);
        let firsts: Vec<u8> = before[0].0.forms.iter().take(10).copied().collect();
        assert!(firsts.iter().all(|&f| f == shape_stream::SHAPED));
        assert!(forms.iter().all(|&f| f == shape_stream::SHAPED));
        let ids = |v: &[(Encoded, NewEntries)]| -> Vec<u32> {
            v.iter().flat_map(|(e, _)| e.ids.clone()).take(10).collect()
        };
        assert_ne!(
            ids(&before),
            ids(&again),
            "whole texts take other layouts than shells"
        );
    }

    #[test]
    fn a_large_shapes_hand_out_streams_and_gives_what_encoding_here_gives() {
        let mut s = shaped_session(shape_stream::STREAM_MIN + 900);
        let want: Vec<u32> = (1..s.tree().entries.len() as u32).collect();
        // The same entries encoded here, piece by piece, with tables of their own (first:
        // a hand-out drops the shells it delivered).
        let here = Arc::new(Mutex::new(Tables::default()));
        let mut expect = Vec::new();
        let mut done = 0;
        while done < want.len() {
            let rest = &want[done..];
            let mut e = s.lines_text(rest, Form::Shells, |text, p| {
                shape_stream::encode_piece(text, &p, &here)
            });
            e.indices = rest[..e.forms.len()].to_vec();
            done += e.indices.len();
            let new = shape_stream::lock(&here).take_new();
            expect.push((e, new));
        }
        let streamed = Arc::new(Mutex::new(Tables::default()));
        let pieces = shaped_all(&mut s, &want, &streamed);
        assert!(pieces.len() > 10);
        // The hand-out went through the worker thread.
        assert!(s.stream.is_some());
        let (a, b) = (flat(&pieces), flat(&expect));
        assert_eq!(a.0.len(), want.len());
        assert!(a.0.iter().all(|&(f, _)| f == shape_stream::SHAPED));
        // (Not assert_eq: the values of 5,000 entries would fill the screen.)
        assert!(
            a.0 == b.0 && a.1 == b.1 && a.2 == b.2,
            "forms, refs, numbers"
        );
        assert!(a.3 == b.3 && a.4 == b.4, "pool strings, JSON values");
        assert!(a.5 == b.5, "layouts and strings registered");
        // The non-ASCII text (light, so interned) was escaped.
        assert!(b.5[1].contains("\\u00e9"));
    }

    #[test]
    fn a_stream_left_part_way_loses_no_layout_or_string_js_must_learn() {
        let mut s = shaped_session(shape_stream::STREAM_MIN + 100);
        let want: Vec<u32> = (1..s.tree().entries.len() as u32).collect();
        let tables = Arc::new(Mutex::new(Tables::default()));
        // How many layouts and strings JS has learned: (shapes, interned).
        let mut known = (0usize, 0usize);
        let learn = |t: &Arc<Mutex<Tables>>, known: &mut (usize, usize)| {
            let n = shape_stream::lock(t).take_new();
            let count = |body: &str| {
                if body.is_empty() {
                    return 0;
                }
                let items: Vec<serde_json::Value> =
                    serde_json::from_str(&format!("[{body}]")).expect("json");
                items.len()
            };
            assert_eq!(n.shape_base as usize, known.0);
            assert_eq!(n.interned_base as usize, known.1);
            known.0 += count(&n.shapes);
            known.1 += count(&n.interned);
        };
        // Two pieces of one hand-out (the worker runs ahead), then another request.
        let first = s.shapes_piece(&want, &tables);
        learn(&tables, &mut known);
        let second = s.shapes_piece(&want[first.indices.len()..], &tables);
        learn(&tables, &mut known);
        assert!(s.stream.is_some());
        let other: Vec<u32> = want.iter().rev().copied().collect();
        let mut got = 0;
        while got < other.len() {
            let e = s.shapes_piece(&other[got..], &tables);
            learn(&tables, &mut known);
            assert!(other[got..].starts_with(&e.indices));
            for (&f, &id) in e.forms.iter().zip(&e.ids) {
                assert!(
                    f != shape_stream::SHAPED || (id as usize) < known.0,
                    "shape {id} not learned"
                );
            }
            assert!(e.out.refs.iter().all(|&r| (r as usize) < known.1));
            got += e.indices.len();
        }
        assert!(second.indices.first() > first.indices.last());
        // A change of the entries drops a stream.
        let _ = s.shapes_piece(&want, &tables);
        assert!(s.stream.is_some());
        s.replace_lines(HEADER).expect("lines");
        assert!(s.stream.is_none());
    }

    #[test]
    fn lines_text_reads_every_text_across_batches_and_pieces() {
        let (mut s, lines) = session(60);
        let all: Vec<u32> = (0..lines.len() as u32).collect();
        assert_eq!(read_all(&mut s, &all), lines);
        // A subset in another order, then everything again.
        let some: Vec<u32> = vec![50, 3, 3, 40, 0];
        let want: Vec<String> = some.iter().map(|&i| lines[i as usize].clone()).collect();
        assert_eq!(read_all(&mut s, &some), want);
        assert_eq!(read_all(&mut s, &all), lines);
    }

    #[test]
    fn a_change_of_the_entries_drops_the_batches_laid_out_for_the_old_ones() {
        let (mut s, mut lines) = session(60);
        let all: Vec<u32> = (0..lines.len() as u32).collect();
        // Start a read (a batch handed out in part, the next one on the prefetch thread) ...
        let first = s.lines_text(&all, Form::Whole, |_, p| p.count());
        assert!(first < all.len());
        // ... then change the entries: the rest of that request reads the new texts, not
        // those of the batches laid out before the change.
        let replaced: Vec<String> = lines
            .iter()
            .map(|l| l.replace("\"content\":\"", "\"content\":\"new "))
            .collect();
        s.replace_lines(&replaced.join("\n")).expect("lines");
        assert_eq!(read_all(&mut s, &all[first..]), replaced[first..]);
        assert_eq!(read_all(&mut s, &all), replaced);
        // An append, then a read that continues the same request plus the new entry.
        let _ = s.lines_text(&all, Form::Whole, |_, p| p.count());
        let line = message("new", Some("m59"), "appended");
        s.append_stringified(line.clone()).expect("append");
        lines = replaced;
        lines.push(line);
        let all: Vec<u32> = (0..lines.len() as u32).collect();
        assert_eq!(read_all(&mut s, &all), lines);
    }

    #[test]
    fn branch_into_keeps_the_path_and_changes_nothing_when_not_found() {
        let (mut s, lines) = session(5);
        let header = HEADER.replace("\"id\":\"s\"", "\"id\":\"b\"");
        let before = s.tree().entries.len();
        assert_eq!(
            s.branch_into(Some("nope"), header.clone(), |_| Some("l".into())),
            BranchedInto::NotFound
        );
        assert_eq!(s.tree().entries.len(), before);
        assert_eq!(
            s.branch_into(Some("m2"), header.clone(), |_| Some("l".into())),
            BranchedInto::Done
        );
        let all: Vec<u32> = (0..s.tree().entries.len() as u32).collect();
        let mut want = vec![header];
        want.extend(lines[1..4].iter().cloned());
        assert_eq!(read_all(&mut s, &all), want);
    }

    #[test]
    fn migrate_gives_v1_entries_ids_and_fork_into_writes_a_new_file_once() {
        let settings = Settings {
            fsync: crate::durability::FsyncMode::Never,
            ..Settings::default()
        };
        let mut s = Session::with_settings(Persistence::Memory, settings);
        s.replace_lines(concat!(
            r#"{"type":"session","id":"old","timestamp":"t","cwd":"/w"}"#,
            "\n",
            r#"{"type":"message","timestamp":"t","message":{"role":"user","content":"a"}}"#
        ))
        .expect("lines");
        assert!(s.migrate().expect("migrate"));
        assert!(!s.migrate().expect("second migrate"), "already v3");
        let e = &s.tree().entries[1];
        assert!(
            !e.id.is_empty() && !e.id.starts_with('\u{0}'),
            "a string id: {:?}",
            e.id
        );

        let dir = std::env::temp_dir().join(format!("psn-session-fork-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("fork.jsonl");
        s.fork_into(&path, HEADER.to_string()).expect("fork");
        let text = std::fs::read_to_string(&path).expect("read");
        let written: Vec<&str> = text.lines().collect();
        assert_eq!(written.len(), 2);
        assert_eq!(written[0], HEADER);
        assert!(written[1].contains(&format!("\"id\":\"{}\"", e.id)));
        let again = s.fork_into(&path, HEADER.to_string()).expect_err("exists");
        assert_eq!(again.code, "EEXIST");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
