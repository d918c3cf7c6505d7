//! `NativeSession`: the Rust-owned session behind the JS `SessionManager`, a binding of the
//! core's `pi_session_core::session::Session` (which holds the entries, their persistence
//! and the text prefetch). This file decodes arguments (`appendFields` codes, `linesText`
//! forms), maps errors to the messages the JS layer expects and builds JS values.
//!
//! JS hands entries in as JSON text (it serializes with `JSON.stringify`, which gives the
//! reference's exact bytes) and asks for entry text back only when it needs objects; tree
//! walks, labels, context selection and file writes stay in Rust.

use napi::bindgen_prelude::{Either, Function, Object};
use napi::bindgen_prelude::{Float64Array, Int32Array, Uint8Array, Uint32Array};
use napi::{Env, Error, Result};
use napi_derive::napi;
use pi_session_core::entry::{Entry, Text};
use pi_session_core::jsonl;
use pi_session_core::session::{BranchedInto, LoadFileError, Session};
use pi_session_core::store::{IdCheck, Persistence, StoreError, fs_error};
use pi_session_core::{shape_stream, shapes};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::codes::{
    BatchParent, Branched, FieldKind, FieldRole, ID_TAKEN, IDS_NOT_SPLIT, TextForm,
};
use crate::error::store_error;

#[napi]
pub struct NativeSession {
    session: Session,
    /// Entries a failed append needs the texts of (see `crate::error::NEEDS_TEXTS`).
    needed: Vec<u32>,
    /// The shapes and interned strings JS has been sent (`shapesText`): they stay valid for
    /// the life of this object, across loads (a layout does not depend on the session).
    shapes: Arc<Mutex<shapes::Tables>>,
}

/// The context plan: selected entry indices with their latest edit ([`NO_EDIT`] for none),
/// plus where model and thinking level come from (null: nowhere).
#[napi(object)]
pub struct ContextPlan {
    pub indices: Uint32Array,
    pub edits: Int32Array,
    pub thinking_from: Option<u32>,
    pub model_from: Option<u32>,
    /// Ids targeted by the selected `context_edit` entries (usually none).
    pub edit_targets: Vec<String>,
}

/// Outcome of loading a file into the session.
#[napi(object)]
pub struct LoadOutcome {
    /// Number of entries loaded (0: missing, empty, or not a session).
    pub count: u32,
    /// The file did not end with a newline (and was repaired with one).
    pub repaired: bool,
}

#[napi]
impl NativeSession {
    #[napi(constructor)]
    pub fn new(persist: bool) -> Self {
        NativeSession {
            session: Session::new(if persist {
                Persistence::File
            } else {
                Persistence::Memory
            }),
            needed: Vec::new(),
            shapes: Arc::new(Mutex::new(shapes::Tables::default())),
        }
    }

    /// The entries as they are now, in a session of their own that nothing changes: entries
    /// JS handed out before their session's entries are replaced (load, new session, branch)
    /// read their left-out values from it (lib/lazy-entries.js `Shells.settle`). Texts and
    /// shells are shared, not copied (a shared buffer or a file handle, reference-counted
    /// shells). It lives as long as JS holds it.
    #[napi(catch_unwind)]
    pub fn retire(&mut self) -> NativeSession {
        NativeSession {
            session: self.session.retire(),
            needed: Vec::new(),
            shapes: Arc::new(Mutex::new(shapes::Tables::default())),
        }
    }

    /// Set the session file path (or none) and whether it already holds the buffer.
    #[napi(catch_unwind)]
    pub fn set_file(&mut self, path: Option<String>, flushed: bool) {
        self.session.set_file(path.map(PathBuf::from), flushed);
    }

    #[napi(getter, catch_unwind)]
    pub fn flushed(&self) -> bool {
        self.session.store().flushed
    }

    #[napi(setter, catch_unwind)]
    pub fn set_flushed(&mut self, value: bool) {
        self.session.set_flushed(value);
    }

    /// `loadEntriesFromFile` + adopt the entries: returns how many were loaded. Repairs a
    /// missing final newline exactly when the reference does (valid header, text after the
    /// last newline). Entries are only replaced when the file is a session.
    #[napi(catch_unwind)]
    pub fn load_file(&mut self, env: &Env, path: String) -> Result<LoadOutcome> {
        let p = PathBuf::from(&path);
        let done = self.session.load_file(&p).map_err(|e| match e {
            LoadFileError::Load(jsonl::LoadError::Open(e)) => {
                crate::error::fs_error(env, &fs_error(&e, "open", &p))
            }
            // Node's readSync errors carry no path: "EISDIR: illegal operation on a directory, read".
            LoadFileError::Load(jsonl::LoadError::Read(e)) => {
                crate::error::fs_error(env, &fs_error(&e, "read", &p).without_path())
            }
            LoadFileError::Repair(e) => crate::error::fs_error(env, &e),
        })?;
        Ok(LoadOutcome {
            count: done.count as u32,
            repaired: done.repaired,
        })
    }

    /// Migrate v1/v2 entries to v3 in place (the reference's rules); true if anything was
    /// migrated (the caller then rewrites the file).
    #[napi(catch_unwind)]
    pub fn migrate(&mut self) -> Result<bool> {
        self.session
            .migrate()
            .map_err(|e| Error::from_reason(e.to_string()))
    }

    /// Replace every entry with the given lines (newline-separated JSON texts).
    #[napi(catch_unwind)]
    pub fn replace_lines(&mut self, text: String) -> Result<()> {
        self.session
            .replace_lines(&text)
            .map_err(|e| Error::from_reason(e.to_string()))
    }

    /// Append one serialized entry, persisting it by the reference's rules; returns its
    /// index (saves JS a call for `length`). `line` is the `JSON.stringify` output of the
    /// entry object (valid JSON by construction; its strings are not validated again).
    #[napi(catch_unwind)]
    pub fn append(&mut self, env: &Env, line: crate::utf8_arg::Utf8Arg) -> Result<u32> {
        let done = self.session.append_stringified(line.0);
        self.appended(env, done)?;
        Ok(self.session.tree().entries.len().saturating_sub(1) as u32)
    }

    /// `appendNew` with the entry's index fields given instead of scanned (the JS layer
    /// knows them exactly for these types; see `Entry::from_fields`). In-memory sessions send
    /// no `line` and keep no text (`Text::Js`); persisted ones send the `JSON.stringify` line,
    /// which is written as by `append` and not scanned. `role` is read for messages only.
    /// `ID_TAKEN` when the id is taken, unless `unchecked` (an id the caller already drew
    /// through the reference's loop).
    // `env` is injected by napi-rs (the error of a failed append is built with it): JS passes six.
    #[allow(clippy::too_many_arguments)]
    #[napi(catch_unwind)]
    pub fn append_fields(
        &mut self,
        env: &Env,
        kind: FieldKind,
        id: String,
        parent_id: Option<String>,
        role: FieldRole,
        unchecked: bool,
        line: Option<crate::utf8_arg::Utf8Arg>,
    ) -> Result<i32> {
        let mut entry = Entry::from_fields(
            kind.entry_type(),
            &id,
            parent_id.as_deref(),
            role.role_of(kind),
        );
        if let Some(line) = line {
            entry.text = Text::Owned(line.0.into_boxed_str());
        }
        let check = if unchecked {
            IdCheck::Unchecked
        } else {
            IdCheck::Check
        };
        let done = self.session.append_fields(entry, check);
        self.appended_at(env, done)
    }

    /// Many in-memory `appendFields` in one call: the JS layer queues the appends of an
    /// in-memory session (their ids already checked against its complete id map) and hands
    /// them over when Rust is next asked anything. Entry `k` has `kinds[k]` (a `FieldKind`),
    /// `roles[k]` (a `FieldRole`), id key `ids[k]`, and parent `parents[k]`: a `BatchParent`
    /// (null, or the id of entry `k - 1`), otherwise `parentKeys[parents[k]]`. `ids` is one
    /// newline-separated string (generated ids never hold a newline) or an array; a string that
    /// does not split into exactly one id per entry answers `IDS_NOT_SPLIT` with nothing
    /// appended (the caller sends the array).
    /// Appended unchecked (as the reference's `_appendEntry`). Returns the index of the first.
    /// Checked whole before anything is appended: a malformed batch changes nothing.
    #[napi(catch_unwind)]
    pub fn append_fields_batch(
        &mut self,
        env: &Env,
        kinds: Uint8Array,
        roles: Uint8Array,
        ids: Either<String, Vec<String>>,
        parents: Int32Array,
        parent_keys: Vec<String>,
    ) -> Result<i32> {
        if self.session.store().persist == Persistence::File {
            return Err(Error::from_reason(
                "appendFieldsBatch: a persisted session writes each append",
            ));
        }
        let n = kinds.len();
        let ids: Vec<&str> = match &ids {
            Either::A(_) if n == 0 => Vec::new(),
            Either::A(joined) => {
                let v: Vec<&str> = joined.split('\n').collect();
                if v.len() != n {
                    return Ok(IDS_NOT_SPLIT);
                }
                v
            }
            Either::B(list) => list.iter().map(String::as_str).collect(),
        };
        if roles.len() != n || parents.len() != n || ids.len() != n {
            return Err(Error::from_reason(format!(
                "appendFieldsBatch: {n} kinds, {} roles, {} ids, {} parents",
                roles.len(),
                ids.len(),
                parents.len()
            )));
        }
        // Checked whole first, so that a bad code appends nothing.
        let parent_of = |k: usize| -> Result<Option<&str>> {
            match parents[k] {
                p if p == BatchParent::Null as i32 => Ok(None),
                p if p == BatchParent::Previous as i32 && k > 0 => Ok(Some(ids[k - 1])),
                p => usize::try_from(p)
                    .ok()
                    .and_then(|p| parent_keys.get(p))
                    .map(|p| Some(p.as_str()))
                    .ok_or_else(|| {
                        Error::from_reason(format!(
                            "appendFieldsBatch: entry {k} has parent code {p}"
                        ))
                    }),
            }
        };
        let codes = |k: usize| -> Result<(FieldKind, FieldRole)> {
            let kind = FieldKind::from_code(kinds[k]).ok_or_else(|| {
                Error::from_reason(format!(
                    "appendFieldsBatch: entry {k} has unknown kind {}",
                    kinds[k]
                ))
            })?;
            let role = FieldRole::from_code(roles[k]).ok_or_else(|| {
                Error::from_reason(format!(
                    "appendFieldsBatch: entry {k} has unknown role {}",
                    roles[k]
                ))
            })?;
            Ok((kind, role))
        };
        for k in 0..n {
            codes(k)?;
            parent_of(k)?;
        }
        let start = self.session.tree().entries.len();
        let entries = (0..n).filter_map(|k| {
            let (kind, role) = codes(k).ok()?;
            let parent = parent_of(k).ok()?;
            Some(Entry::from_fields(
                kind.entry_type(),
                ids[k],
                parent,
                role.role_of(kind),
            ))
        });
        self.session
            .extend_in_memory(n, entries)
            .map_err(|e| store_error(env, e))?;
        i32::try_from(start).map_err(|_| Error::from_reason("appendFieldsBatch: too many entries"))
    }

    /// Every id key (`byId`'s keys), for the JS layer's id map of an in-memory session.
    #[napi(catch_unwind)]
    pub fn id_keys(&self) -> Vec<String> {
        let tree = self.session.tree();
        tree.by_id
            .keys(&tree.entries)
            .map(|k| k.to_string())
            .collect()
    }

    /// The index of an append, or [`ID_TAKEN`] when it was refused for its id (`Ok(false)`).
    fn appended_at(
        &mut self,
        env: &Env,
        done: std::result::Result<bool, StoreError>,
    ) -> Result<i32> {
        if !self.appended(env, done)? {
            return Ok(ID_TAKEN);
        }
        Ok(self.session.tree().entries.len().saturating_sub(1) as i32)
    }

    /// The outcome of an append, with [`StoreError::NeedsTexts`] kept for `neededTexts`.
    fn appended<T>(&mut self, env: &Env, done: std::result::Result<T, StoreError>) -> Result<T> {
        done.map_err(|e| {
            if let StoreError::NeedsTexts(v) = &e {
                self.needed.clone_from(v);
            }
            store_error(env, e)
        })
    }

    /// The entries the last append that threw code `PI_SESSION_NATIVE_NEEDS_TEXTS` needs.
    #[napi(catch_unwind)]
    pub fn needed_texts(&mut self) -> Uint32Array {
        Uint32Array::new(std::mem::take(&mut self.needed))
    }

    /// Give entries their JSON text back: `lines[k]` is `JSON.stringify` of entry
    /// `indices[k]`'s object, or null when there is none (see `Store::restore_texts`).
    #[napi(catch_unwind)]
    pub fn restore_texts(&mut self, indices: Vec<u32>, lines: Vec<Option<String>>) {
        self.session.restore_texts(&indices, lines);
    }

    /// `append` for an entry carrying a fresh, unchecked id candidate: `ID_TAKEN` (nothing
    /// appended) when an entry with that id exists. Saves the per-append `indexOf` round trip
    /// of the id check; the caller redraws on `ID_TAKEN`.
    #[napi(catch_unwind)]
    pub fn append_new(&mut self, env: &Env, line: crate::utf8_arg::Utf8Arg) -> Result<i32> {
        let done = self.session.append_stringified_if_new_id(line.0);
        self.appended_at(env, done)
    }

    /// `createBranchedSession` on text: replace the entries with `header` followed by the
    /// path to `from` (or the leaf) without labels, re-chained, and its labels re-created
    /// (see `crate::branch`). Says whether it was done, the path was empty, or a line on the
    /// path does not qualify (the caller then takes the object route; nothing changed).
    #[napi(catch_unwind)]
    pub fn branch_into(
        &mut self,
        from: Option<String>,
        header: String,
        draw: Option<Function<'_, bool, String>>,
    ) -> Result<Branched> {
        // Label ids come from `draw(full)` (JS: `crypto.randomUUID()`, sliced unless `full`),
        // so they are drawn exactly as the reference's object route draws them; a throwing
        // `draw` sends the caller to that route.
        let new_id = |full: bool| match &draw {
            Some(f) => f.call(full).ok(),
            None => pi_session_core::branch::rust_id(full),
        };
        Ok(
            match self.session.branch_into(from.as_deref(), header, new_id) {
                BranchedInto::Done => Branched::Done,
                BranchedInto::NotFound => Branched::NotFound,
                BranchedInto::Fallback => Branched::ObjectRoute,
            },
        )
    }

    /// `_rewriteFile()`.
    #[napi(catch_unwind)]
    pub fn rewrite(&mut self, env: &Env) -> Result<()> {
        self.session
            .rewrite()
            .map_err(|e| crate::error::fs_error(env, &e))
    }

    /// forkFrom: write `header` and every non-header entry to a new file (exclusive create).
    /// Lines are written as `JSON.stringify(JSON.parse(line))`, as the reference does.
    #[napi(catch_unwind)]
    pub fn fork_into(&self, env: &Env, path: String, header: String) -> Result<()> {
        self.session
            .fork_into(Path::new(&path), header)
            .map_err(|e| crate::error::fs_error(env, &e))
    }

    /// Number of file entries (header included).
    #[napi(getter, catch_unwind)]
    pub fn length(&self) -> u32 {
        self.session.tree().entries.len() as u32
    }

    /// `byId.size`.
    #[napi(catch_unwind)]
    pub fn id_count(&self) -> u32 {
        self.session.tree().by_id.len() as u32
    }

    /// Whether any user/assistant message is held (`_hasConversation`).
    #[napi(catch_unwind)]
    pub fn has_conversation(&self) -> bool {
        self.session.tree().conversation > 0
    }

    /// JSON text of one file entry.
    #[napi(catch_unwind)]
    pub fn line(&self, index: u32) -> Option<String> {
        self.session
            .tree()
            .entries
            .get(index as usize)
            .and_then(|e| e.text.read().ok().map(|t| t.into_owned()))
    }

    /// Texts of the given entries for JS to parse one by one: `{ text, starts, ends }`,
    /// where entry `k`'s JSON is `text.slice(starts[k], ends[k])` (`starts[k]` is
    /// `UNREADABLE` when its text cannot be read). Holds a prefix of the requested entries
    /// (about 64 KB of text per call, at least one entry): `starts.length` says how many.
    /// Texts are laid out in Rust a batch (up to 1 MB) at a time and handed over in pieces;
    /// while JS parses a batch's pieces, the next batch is laid out on a worker thread.
    /// `shells[k]` is the `TextForm` entry `k` came in. `form` `TextForm.Shell`: an entry
    /// that has a shell (heavy values left out, see `crate::entry::Entry::shell`) comes as
    /// that shell; `TextForm.Values`: it comes as the array of the values its shell left out
    /// (what filling it needs). With either, texts are separated by commas:
    /// `JSON.parse("[" + text + "]")` gives the readable entries. Default `TextForm.Whole`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ text: string; starts: Uint32Array; ends: Uint32Array; shells: Uint8Array }"
    )]
    pub fn lines_text<'env>(
        &mut self,
        env: &'env Env,
        indices: Uint32Array,
        form: Option<TextForm>,
    ) -> Result<Object<'env>> {
        let want: &[u32] = &indices;
        let form = form.unwrap_or(TextForm::Whole).form();
        self.session.lines_text(want, form, |text, p| {
            // The text is ASCII (materialize escapes the rest), so V8 takes it as one-byte
            // text without decoding. A piece is copied into the V8 heap, not handed over as
            // an external string: V8 allocates external strings in old space, so dead ones
            // wait for a full GC, which external-memory pressure starts only after ~64 MB of
            // them (the peak RSS of a 100 MB materialization carried that much dead text).
            let text = env.create_string_latin1(text)?;
            let mut o = Object::new(env)?;
            o.set("text", text)?;
            o.set("starts", Uint32Array::new(p.starts))?;
            o.set("ends", Uint32Array::new(p.ends))?;
            o.set("shells", Uint8Array::new(p.shells))?;
            Ok(o)
        })
    }

    /// The given entries as *shapes* where they can be (crates/core/src/shapes.rs), for
    /// lib/lazy-entries.js to build their objects with: a prefix of the requested entries (a
    /// piece, as `linesText` with `TextForm.Shell`), `forms.length` of them. `forms[k]`:
    /// `SHAPED` (entry `k` is built by shape `shapes[k]` from the next values of `text` and
    /// the next `refs`, the next slices of `pool` (string `k` of the piece is
    /// `pool.slice(starts[k], starts[k + 1])`), the next `nums` and `ints`), `TextForm.Whole` (the next value of `text` is the entry),
    /// `TextForm.Shell` (a shell no shape carries: the next value is a `null` placeholder and
    /// JS reads the entry whole), or `UNREAD` (it could not be read). `text` is a JSON array (brackets included). `newShapes` and
    /// `newInterned` (JSON array bodies) are the layouts and strings registered by this call,
    /// the first with id `shapeBase` / `internedBase`.
    #[napi(
        catch_unwind,
        ts_return_type = "{ text: string; pool: string; starts: Uint32Array; nums: Float64Array; ints: Int32Array; forms: Uint8Array; shapes: Uint32Array; refs: Uint32Array; newShapes: string; shapeBase: number; newInterned: string; internedBase: number }"
    )]
    pub fn shapes_text<'env>(
        &mut self,
        env: &'env Env,
        indices: Uint32Array,
    ) -> Result<Object<'env>> {
        let want: &[u32] = &indices;
        let e = self.session.shapes_piece(want, &self.shapes);
        let new = shape_stream::lock(&self.shapes).take_new();
        // ASCII (the texts are, and so is all that is copied from them).
        let mut o = Object::new(env)?;
        // A whole JSON array, brackets included: JS parses it as it is. Bracketed there (a
        // template string), V8 made and flattened a second copy of every piece's text, young
        // garbage for the scavenger (~25 MB over a 700 MB session's branch).
        let mut text = Vec::with_capacity(e.out.values.len() + 2);
        text.push(b'[');
        text.extend_from_slice(&e.out.values);
        text.push(b']');
        o.set("text", env.create_string_latin1(&text)?)?;
        o.set("pool", env.create_string_latin1(&e.out.pool)?)?;
        o.set("starts", Uint32Array::new(e.out.starts))?;
        o.set("nums", Float64Array::new(e.out.nums))?;
        o.set("ints", Int32Array::new(e.out.ints))?;
        o.set("forms", Uint8Array::new(e.forms))?;
        o.set("shapes", Uint32Array::new(e.ids))?;
        o.set("refs", Uint32Array::new(e.out.refs))?;
        o.set(
            "newShapes",
            env.create_string_latin1(new.shapes.as_bytes())?,
        )?;
        o.set("shapeBase", new.shape_base)?;
        o.set(
            "newInterned",
            env.create_string_latin1(new.interned.as_bytes())?,
        )?;
        o.set("internedBase", new.interned_base)?;
        Ok(o)
    }

    /// Indices of entries that are not `type: "session"`.
    #[napi(catch_unwind)]
    pub fn non_session(&self) -> Uint32Array {
        Uint32Array::new(self.session.tree().non_session())
    }

    /// Index of the header (first `type: "session"` entry), or null.
    #[napi(catch_unwind)]
    pub fn header_index(&self) -> Option<u32> {
        self.session.tree().header_index().map(|i| i as u32)
    }

    /// Entry index for an id key, or null.
    #[napi(catch_unwind)]
    pub fn index_of(&self, key: String) -> Option<u32> {
        self.session.tree().index_of(&key).map(|i| i as u32)
    }

    /// The leaf's id key: `null`, a string id, or (for a non-string id) its `\u{0}`-prefixed
    /// tagged key, which JS looks up with `indexOf` to read the id value from that entry.
    #[napi(catch_unwind)]
    pub fn leaf_key(&self) -> Option<String> {
        self.session.tree().leaf.as_ref().map(|k| k.to_string())
    }

    #[napi(catch_unwind)]
    pub fn set_leaf(&mut self, key: Option<String>) {
        self.session.set_leaf(key.map(Into::into));
    }

    /// `getLeafEntry()` index, or null.
    #[napi(catch_unwind)]
    pub fn leaf_index(&self) -> Option<u32> {
        self.session.tree().leaf_index().map(|i| i as u32)
    }

    /// Children of a parent key (`null` for roots).
    #[napi(catch_unwind)]
    pub fn children(&self, parent: Option<String>) -> Uint32Array {
        Uint32Array::new(self.session.tree().children(parent.as_deref()))
    }

    /// `getBranch(fromId?)` as indices.
    #[napi(catch_unwind)]
    pub fn branch(&self, from: Option<String>) -> Uint32Array {
        Uint32Array::new(self.session.tree().branch(from.as_deref()))
    }

    /// Whether an entry with this id key is on the current leaf's branch.
    #[napi(catch_unwind)]
    pub fn branch_contains(&self, key: String) -> bool {
        let tree = &self.session.tree();
        tree.branch(None)
            .iter()
            .any(|&i| tree.entries.get(i as usize).is_some_and(|e| e.id == key))
    }

    /// Label entry index for a target key, or null.
    #[napi(catch_unwind)]
    pub fn label_index(&self, target: String) -> Option<u32> {
        self.session.tree().labels.get(&target).map(|&i| i as u32)
    }

    /// Label entry indices in `labelsById` order.
    #[napi(catch_unwind)]
    pub fn label_indices(&self) -> Uint32Array {
        Uint32Array::new(
            self.session
                .tree()
                .labels
                .iter()
                .map(|&i| i as u32)
                .collect(),
        )
    }

    /// Index of the latest `session_info` entry, or null.
    #[napi(catch_unwind)]
    pub fn last_session_info(&self) -> Option<u32> {
        self.session
            .tree()
            .entries
            .iter()
            .rposition(|e| e.etype == pi_session_core::entry::EntryType::SessionInfo)
            .map(|i| i as u32)
    }

    /// The projection plan for the current leaf.
    #[napi(catch_unwind)]
    pub fn context_plan(&mut self) -> ContextPlan {
        let plan = self.session.context_plan();
        ContextPlan {
            indices: Uint32Array::new(plan.selected.iter().map(|s| s.index).collect()),
            edits: Int32Array::new(
                plan.selected
                    .iter()
                    .map(|s| s.edit.map_or(crate::codes::NO_EDIT, |e| e as i32))
                    .collect(),
            ),
            thinking_from: plan.settings.thinking_from,
            model_from: plan.settings.model_from,
            edit_targets: plan.edit_targets.iter().map(|k| k.to_string()).collect(),
        }
    }

    /// Indices of the session path for the current leaf (`buildSessionPath`).
    #[napi(catch_unwind)]
    pub fn session_path(&self) -> Uint32Array {
        Uint32Array::new(self.session.tree().session_path())
    }
}
