//! Entry shapes for a large hand-out encoded on a worker thread, piece by piece, while JS
//! builds the objects of the pieces before (lib/lazy-entries.js `Shells.make`).
//!
//! Why: encoding a giant session's branch ([`crate::shapes::encode`], ~1.5 µs an entry with
//! its lay-out) ran on the JS thread between JS's builds, so the two added up: ~0.5 s of the
//! ~1 s the first `getBranch()` of a 700 MB session cost. On a second core the encoding
//! overlaps the building.
//!
//! The worker reads clones of the entries' shells and texts (reference counts), so the
//! session may change meanwhile; the session drops its stream on any change of its entries
//! (`Session::entries_changing`). It registers layouts and interned strings in the session's
//! [`Tables`] under a lock taken per entry; the JS thread takes what is new when it hands a
//! piece over ([`Tables::take_new`]), which may include what later pieces registered: JS
//! learns them in id order all the same, a little early. So a stream dropped part way loses
//! nothing JS must learn.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::entry::{Entry, Shell, Text};
use crate::materialize::{self, Form, Piece, UNREADABLE};
use crate::shapes::{self, Out, Tables};
use foldhash::{HashMap, HashMapExt};

/// `Encoded::forms[k]` of an entry built from a shape (the other forms are
/// [`materialize::WHOLE`] and [`materialize::SHELL`]).
pub const SHAPED: u8 = 3;
/// `Encoded::forms[k]` of an entry whose text could not be read.
pub const UNREAD: u8 = 255;

/// Hand-outs of fewer entries are encoded on the JS thread (a thread costs more than it saves).
pub const STREAM_MIN: usize = 4096;
/// Pieces encoded ahead of JS at most.
const AHEAD: usize = 8;

/// One piece of a hand-out: the entries at `indices`, each with its form and shape id, and
/// the values the shapes take (`out`).
#[derive(Debug, Default)]
pub struct Encoded {
    pub indices: Vec<u32>,
    pub forms: Vec<u8>,
    pub ids: Vec<u32>,
    pub out: Out,
}

/// Encode one entry's laid-out text `t` (`None`: it could not be read) in `form` into `e`.
fn encode_one(t: Option<&[u8]>, form: u8, tables: &Mutex<Tables>, e: &mut Encoded) {
    let Some(t) = t else {
        e.forms.push(UNREAD);
        e.ids.push(0);
        return;
    };
    match shapes::encode(t, form == materialize::SHELL, &mut lock(tables), &mut e.out) {
        Some(id) => {
            e.forms.push(SHAPED);
            e.ids.push(id);
        }
        // A shell no shape carries goes as a placeholder: JS reads that entry whole; a whole
        // text goes as it is.
        None => {
            e.out.push_value(if form == materialize::SHELL {
                b"null"
            } else {
                t
            });
            e.forms.push(form);
            e.ids.push(0);
        }
    }
}

/// Lock the tables. A worker that panicked while holding them left them usable: each entry's
/// registration is whole or absent (`encode` registers a layout after its values).
pub fn lock(tables: &Mutex<Tables>) -> MutexGuard<'_, Tables> {
    tables.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Encode a piece laid out with [`Form::Shells`] (`text` is its bytes) into its forms, shape
/// ids and values (`indices` left empty). The tables are locked for each entry.
pub fn encode_piece(text: &[u8], p: &Piece, tables: &Mutex<Tables>) -> Encoded {
    let n = p.count();
    let mut e = Encoded {
        indices: Vec::new(),
        forms: Vec::with_capacity(n),
        ids: Vec::with_capacity(n),
        out: Out::default(),
    };
    e.out.values.reserve(text.len() / 4);
    for k in 0..n {
        let (start, end) = (
            p.starts.get(k).copied().unwrap_or(UNREADABLE),
            p.ends.get(k).copied().unwrap_or(UNREADABLE),
        );
        let t = (start != UNREADABLE)
            .then(|| text.get(start as usize..end as usize).unwrap_or_default());
        let form = p.shells.get(k).copied().unwrap_or(materialize::WHOLE);
        encode_one(t, form, tables, &mut e);
    }
    e.out.finish();
    e
}

/// A hand-out being encoded on a worker thread.
pub struct ShapeStream {
    rx: Receiver<Encoded>,
    cancel: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl ShapeStream {
    /// Start encoding the entries at `want` (indices into `entries`), in pieces of about
    /// `piece` bytes. `None` if no thread could be started.
    pub fn spawn(
        entries: &[Entry],
        want: &[u32],
        tables: Arc<Mutex<Tables>>,
        piece: usize,
    ) -> Option<ShapeStream> {
        // What the worker reads: each entry's shell, or else its text (an owned text is
        // copied here: only light entries without a shell need it, and they are small).
        let mut shells: Vec<Option<Shell>> = Vec::with_capacity(want.len());
        // Texts only for entries without a shell (a few): a slot per entry of the hand-out
        // would be ~15 MB for a 700 MB session's branch.
        let mut texts: HashMap<usize, Text> = HashMap::new();
        for (k, &i) in want.iter().enumerate() {
            let e = entries.get(i as usize);
            let shell = e.and_then(|e| e.shell.clone());
            if shell.is_none()
                && let Some(e) = e
            {
                texts.insert(k, e.text.clone());
            }
            shells.push(shell);
        }
        let want = want.to_vec();
        let cancel = Arc::new(AtomicBool::new(false));
        let (tx, rx) = sync_channel(AHEAD);
        let flag = Arc::clone(&cancel);
        let handle = std::thread::Builder::new()
            .name("psn-shapes".into())
            .spawn(move || {
                let job = Job {
                    want,
                    texts,
                    shells,
                    tables,
                    cancel: flag,
                    piece,
                };
                job.run(&tx);
            })
            .ok()?;
        Some(ShapeStream {
            rx,
            cancel,
            handle: Some(handle),
        })
    }

    /// The next piece, if it is the one a request for `want` starts with (else the stream
    /// is of no further use: the caller drops it).
    pub fn next(&mut self, want: &[u32]) -> Option<Encoded> {
        let e = self.rx.recv().ok()?;

        (!e.indices.is_empty() && want.starts_with(&e.indices)).then_some(e)
    }
}

impl Drop for ShapeStream {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        // Unblock a worker waiting to send, then wait for it to stop.
        while self.rx.try_recv().is_ok() {}
        if let Some(h) = self.handle.take() {
            // Drain while it finishes the piece it is on (it stops at the next check).
            while !h.is_finished() {
                let _ = self.rx.recv_timeout(std::time::Duration::from_millis(1));
            }
            let _ = h.join();
        }
    }
}

/// What a worker owns.
struct Job {
    want: Vec<u32>,
    /// Per entry of `want`: its text, when it has no shell. An ASCII shell (nearly all) is
    /// encoded as it is; other shells and the texts are laid out ([`materialize::batch`]:
    /// escaped, read from the file).
    texts: HashMap<usize, Text>,
    shells: Vec<Option<Shell>>,
    tables: Arc<Mutex<Tables>>,
    cancel: Arc<AtomicBool>,
    piece: usize,
}

impl Job {
    /// The bytes entry `k` adds to a piece.
    fn size(&self, k: usize) -> usize {
        let shell = self.shells[k].as_ref().map_or(0, |s| s.len());
        shell + self.texts.get(&k).map_or(0, Text::len)
    }

    /// Entry `k`'s shell, if it is encoded as it is (ASCII, as the text JS reads must be).
    fn direct(&self, k: usize) -> Option<&str> {
        self.shells[k].as_deref().filter(|s| s.is_ascii())
    }

    fn run(mut self, tx: &SyncSender<Encoded>) {
        let n = self.want.len();
        let mut scratch = Vec::new();
        let mut pos = 0;
        // The first piece is small, so JS starts building at once.
        let mut budget = (self.piece / 4).max(1);
        // Shell bytes encoded since free pages were last given back: the JS thread drops
        // the shells of each piece it takes (`Session::delivered`), a few pieces behind.
        let mut since_trim = 0;
        while pos < n {
            if self.cancel.load(Ordering::Relaxed) {
                return;
            }
            // The piece: entries while their bytes stay within the budget.
            let mut end = pos;
            let mut bytes = 0;
            while end < n && (end == pos || bytes < budget) {
                bytes += self.size(end);
                end += 1;
            }
            budget = self.piece;
            // The entries not encoded from their shell as it is, laid out in one batch.
            let direct: Vec<bool> = (pos..end).map(|k| self.direct(k).is_some()).collect();
            let others: Vec<u32> = (pos..end)
                .filter(|&k| !direct[k - pos])
                .map(|k| k as u32)
                .collect();
            let b = if others.is_empty() {
                materialize::Batch::default()
            } else {
                materialize::batch(
                    |i| self.texts.get(&(i as usize)),
                    |i| self.shells.get(i as usize).and_then(|s| s.as_deref()),
                    |_| None::<&[u32]>,
                    Form::Shells,
                    &others,
                    usize::MAX,
                    &mut scratch,
                )
            };
            let count = end - pos;
            let mut e = Encoded {
                indices: self.want.get(pos..end).unwrap_or_default().to_vec(),
                forms: Vec::with_capacity(count),
                ids: Vec::with_capacity(count),
                out: Out::default(),
            };
            // Room for what a piece of messages takes (no growing while encoding).
            e.out.values.reserve(bytes / 8);
            e.out.pool.reserve(count * 24);
            e.out.starts.reserve(count * 3);
            e.out.refs.reserve(count * 8);
            e.out.nums.reserve(count * 4);
            e.out.ints.reserve(count * 6);
            let mut slot = 0;
            for k in pos..end {
                if direct[k - pos] {
                    let shell = self.direct(k).unwrap_or_default().as_bytes();
                    encode_one(Some(shell), materialize::SHELL, &self.tables, &mut e);
                    continue;
                }
                // The batch holds every entry asked for (no budget), in order.
                let (start, stop) = (
                    b.starts.get(slot).copied().unwrap_or(UNREADABLE),
                    b.ends.get(slot).copied().unwrap_or(UNREADABLE),
                );
                let form = b.shells.get(slot).copied().unwrap_or(materialize::WHOLE);
                slot += 1;
                let t = (start != UNREADABLE).then(|| {
                    b.bytes
                        .get(start as usize..stop as usize)
                        .unwrap_or_default()
                });
                encode_one(t, form, &self.tables, &mut e);
            }
            e.out.finish();
            // Encoded: this thread's references to those shells and texts go.
            for k in pos..end {
                self.shells[k] = None;
                self.texts.remove(&k);
            }
            pos = end;
            if tx.send(e).is_err() {
                return;
            }
            since_trim += bytes;
            if since_trim >= crate::session::TRIM_AFTER {
                since_trim = 0;
                crate::session::release_free_pages();
            }
        }
    }
}
