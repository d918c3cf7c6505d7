//! The session tree index: id -> entry, leaf, labels, children and path walks.
//!
//! It mirrors the reference's in-memory state (`fileEntries`, `byId`, `labelsById`,
//! `labelTimestampsById`, `leafId`) over [`Entry`] values, including its quirks: `byId` keeps
//! the position of an id's first insertion with its latest entry, labels are an insertion-
//! ordered map where a cleared label loses its place. Walks never hang: a parent cycle or a
//! self-parent ends the walk.

use crate::entry::{Entry, EntryType, Key, Parent, key_truthy};
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::OnceLock;

/// The reference's `byId`: id -> index into `entries` of the latest entry with that id.
///
/// The table holds only entry indices: an id is read from the entry itself
/// (`entries[i].id`), not stored a second time. A map with its own copy of each 24-byte key
/// took 32 bytes a slot: 11 MB of a 700 MB session's index (352,000 ids). Its methods take
/// the entries they index; an index in the table always names an entry that holds its id
/// ([`Tree::pop`] updates the table for the entry it takes off).
///
/// `byId`'s iteration order (an id's first insertion, holding its latest entry) is the file
/// order of each id's first entry: [`Tree::children`] walks the entries.
#[derive(Default, Clone, Debug)]
pub struct IdIndex {
    table: hashbrown::HashTable<u32>,
    /// foldhash, seeded per process (ids come from files: a fixed seed would let a crafted
    /// file collide them).
    hasher: foldhash::fast::RandomState,
}

impl IdIndex {
    fn hash(&self, k: &str) -> u64 {
        self.hasher.hash_one(k)
    }
    /// Rehash an index already in the table (when it grows).
    fn rehasher<'a>(
        entries: &'a [Entry],
        hasher: &'a foldhash::fast::RandomState,
    ) -> impl Fn(&u32) -> u64 + 'a {
        move |&j| {
            entries
                .get(j as usize)
                .map_or(0, |e| hasher.hash_one(e.id.as_str()))
        }
    }
    /// The index of the latest entry with id `k`.
    pub fn get(&self, entries: &[Entry], k: &str) -> Option<usize> {
        let eq = |&i: &u32| entries.get(i as usize).is_some_and(|e| e.id.as_str() == k);
        self.table.find(self.hash(k), eq).map(|&i| i as usize)
    }
    /// Entry `i` is now the one its id names.
    pub fn insert(&mut self, entries: &[Entry], i: usize) {
        let (Some(e), Ok(at)) = (entries.get(i), u32::try_from(i)) else {
            return;
        };
        let k = e.id.as_str();
        let h = self.hash(k);
        let eq = |&j: &u32| entries.get(j as usize).is_some_and(|x| x.id.as_str() == k);
        if let Some(slot) = self.table.find_mut(h, eq) {
            *slot = at;
            return;
        }
        let hasher = &self.hasher;
        self.table
            .insert_unique(h, at, Self::rehasher(entries, hasher));
    }
    /// Id `k`, named by entry `from`, names entry `to` again (`None`: no entry), whatever
    /// `entries` holds now (`from` may be gone from it).
    pub fn repoint(&mut self, k: &str, from: usize, to: Option<usize>) {
        let h = self.hash(k);
        let Ok(entry) = self.table.find_entry(h, |&j| j as usize == from) else {
            return;
        };
        match to.and_then(|t| u32::try_from(t).ok()) {
            Some(t) => *entry.into_mut() = t,
            None => {
                entry.remove();
            }
        }
    }
    pub fn len(&self) -> usize {
        self.table.len()
    }
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
    pub fn clear(&mut self) {
        self.table.clear();
    }
    /// Room for `n` more ids.
    pub fn reserve(&mut self, entries: &[Entry], n: usize) {
        let hasher = &self.hasher;
        self.table.reserve(n, Self::rehasher(entries, hasher));
    }
    /// The ids, in no particular order.
    pub fn keys<'a>(&'a self, entries: &'a [Entry]) -> impl Iterator<Item = &'a Key> + 'a {
        self.table
            .iter()
            .filter_map(move |&i| entries.get(i as usize).map(|e| &e.id))
    }
}

/// An insertion-ordered map (JS `Map` semantics for set / delete / iteration order): the
/// reference's `labelsById`.
///
/// Each key is stored once, in its slot: the hash table holds only slot numbers.
#[derive(Default, Clone, Debug)]
pub struct OrderedMap<V> {
    slots: Vec<Option<(Key, V)>>,
    /// The slots of the keys present, by the hash of their key.
    pos: hashbrown::HashTable<u32>,
    /// foldhash: several times cheaper than SipHash per id, still seeded per process
    /// (ids come from files, so a fixed-seed hash would let a crafted file collide them).
    hasher: foldhash::fast::RandomState,
}

impl<V> OrderedMap<V> {
    fn hash(&self, k: &str) -> u64 {
        self.hasher.hash_one(k)
    }
    /// The slot of `k`, if present.
    fn find(&self, k: &str) -> Option<usize> {
        let slots = &self.slots;
        let eq =
            |&i: &u32| matches!(slots.get(i as usize), Some(Some((key, _))) if key.as_str() == k);
        self.pos.find(self.hash(k), eq).map(|&i| i as usize)
    }
    /// Index slot `i` (which holds a key) in the table.
    fn index_slot(&mut self, i: usize) {
        let Some(Some((key, _))) = self.slots.get(i) else {
            return;
        };
        let (slots, hasher) = (&self.slots, &self.hasher);
        let rehash = |&j: &u32| match slots.get(j as usize) {
            Some(Some((k, _))) => hasher.hash_one(k.as_str()),
            _ => 0,
        };
        self.pos
            .insert_unique(hasher.hash_one(key.as_str()), i as u32, rehash);
    }
    pub fn get(&self, k: &str) -> Option<&V> {
        let i = self.find(k)?;
        self.slots.get(i)?.as_ref().map(|(_, v)| v)
    }
    pub fn contains(&self, k: &str) -> bool {
        self.find(k).is_some()
    }
    /// `Map.set`: an existing key keeps its position.
    pub fn set(&mut self, k: Key, v: V) {
        if let Some(i) = self.find(&k)
            && let Some(slot) = self.slots.get_mut(i)
        {
            *slot = Some((k, v));
            return;
        }
        self.slots.push(Some((k, v)));
        self.index_slot(self.slots.len() - 1);
    }
    pub fn delete(&mut self, k: &str) {
        let h = self.hash(k);
        let slots = &self.slots;
        let eq =
            |&i: &u32| matches!(slots.get(i as usize), Some(Some((key, _))) if key.as_str() == k);
        if let Ok(entry) = self.pos.find_entry(h, eq) {
            let (i, _) = entry.remove();
            if let Some(slot) = self.slots.get_mut(i as usize) {
                *slot = None;
            }
        }
    }
    /// Slot position of a key (its place in iteration order).
    pub fn slot_of(&self, k: &str) -> Option<usize> {
        self.find(k)
    }
    /// Put a deleted key back at its old position (undo of a delete), keeping the order.
    pub fn restore_at(&mut self, k: Key, slot: usize, v: V) {
        if self.contains(&k) || !matches!(self.slots.get(slot), Some(None)) {
            self.set(k, v);
            return;
        }
        if let Some(s) = self.slots.get_mut(slot) {
            *s = Some((k, v));
        }
        self.index_slot(slot);
    }
    pub fn clear(&mut self) {
        self.slots.clear();
        self.pos.clear();
    }
    pub fn iter(&self) -> impl Iterator<Item = &V> {
        self.slots.iter().flatten().map(|(_, v)| v)
    }
}

/// The in-memory session: all file entries (header included) and their index.
#[derive(Default, Clone, Debug)]
pub struct Tree {
    /// Every parsed file entry in file order, like the reference's `fileEntries`.
    pub entries: Vec<Entry>,
    /// id -> index into `entries` (latest entry with that id).
    pub by_id: IdIndex,
    /// targetId -> index of the label entry that set the current label.
    pub labels: OrderedMap<usize>,
    /// Current leaf id; `None` is `null`.
    pub leaf: Option<Key>,
    /// How many entries are user/assistant messages (the first-flush rule).
    pub conversation: usize,
    /// The entry index each entry's parent resolves to, made by the first walk and kept while
    /// appends leave every earlier resolution as it is ([`Tree::push`]): a walk is then array
    /// steps, not an id lookup per entry (55 ms for a 700 MB session's 321,395-entry path).
    parents: OnceLock<Parents>,
    /// Bumped whenever the kept parent indices are dropped (a rebuild, a pop, an append that
    /// changes an earlier resolution). While it stays the same, every path walked before is
    /// still a prefix of the paths through its end: `context::plan_with` extends its last plan.
    pub epoch: u64,
}

/// [`Tree::parents`]: per entry its parent's index ([`NO_PARENT`]: none, missing or falsy),
/// and the parent ids that resolve to no entry (an append of one of them changes a resolution).
#[derive(Default, Clone, Debug)]
struct Parents {
    of: Vec<u32>,
    unresolved: HashSet<Key, foldhash::fast::RandomState>,
}

/// Entries from which [`Tree::parents`] resolves on several threads.
const PARALLEL_PARENTS_MIN: usize = 50_000;

/// [`Parents::of`] of an entry whose walk ends there.
const NO_PARENT: u32 = u32::MAX;

impl Tree {
    /// Build the index over entries, like the reference's `_buildIndex`.
    pub fn from_entries(entries: Vec<Entry>) -> Tree {
        let mut t = Tree {
            entries,
            ..Tree::default()
        };
        t.rebuild_index();
        t
    }

    pub fn rebuild_index(&mut self) {
        self.drop_parents();
        self.by_id.clear();
        self.labels.clear();
        self.leaf = None;
        self.conversation = 0;
        // Sized once: growing by doubling re-hashed every id (each a cache miss) again and again.
        self.by_id.reserve(&self.entries, self.entries.len());
        for i in 0..self.entries.len() {
            self.index_entry_at(i, false);
        }
        // The leaf is the id of the last non-header entry (set once, not per entry); an id
        // that is JSON `null` makes the leaf null, as the reference's `leafId = entry.id`
        // does (its context is then empty, not the last entry's path).
        self.leaf = self
            .entries
            .iter()
            .rposition(|e| e.etype != EntryType::Session)
            .and_then(|i| self.entries.get(i))
            .map(|e| e.id.clone())
            .filter(|k| k != crate::entry::NULL);
    }

    fn index_entry(&mut self, i: usize) {
        self.index_entry_at(i, true);
    }

    fn index_entry_at(&mut self, i: usize, move_leaf: bool) {
        let Some(e) = self.entries.get(i) else { return };
        if e.is_conversation() {
            self.conversation += 1;
        }
        if e.etype == EntryType::Session {
            return;
        }
        let label = if e.etype == EntryType::Label {
            Some((e.target().cloned().unwrap_or_default(), e.label_truthy))
        } else {
            None
        };
        if move_leaf {
            self.leaf = Some(e.id.clone());
        }
        self.by_id.insert(&self.entries, i);
        if let Some((target, truthy)) = label {
            if truthy {
                self.labels.set(target, i);
            } else {
                self.labels.delete(&target);
            }
        }
    }

    /// Room for `n` more entries (a batch of appends).
    pub fn reserve(&mut self, n: usize) {
        self.entries.reserve(n);
        self.by_id.reserve(&self.entries, n);
    }

    /// Append an entry and advance the leaf (the reference's `_appendEntry` before persisting).
    /// Labels are applied too (appendLabelChange does it right after a successful write).
    pub fn push(&mut self, e: Entry) {
        // The kept parent indices stay right unless this id was taken (its children would
        // now resolve to it) or is a parent nothing resolved to yet.
        let keep = self
            .parents
            .get()
            .is_some_and(|p| self.index_of(&e.id).is_none() && !p.unresolved.contains(&e.id));
        if !keep {
            self.drop_parents();
        }
        self.entries.push(e);
        let i = self.entries.len() - 1;
        self.index_entry(i);
        if keep {
            let resolved = self.entries.get(i).map(|e| self.resolve(e));
            if let (Some(p), Some((of, missing))) = (self.parents.get_mut(), resolved) {
                p.of.push(of);
                p.unresolved.extend(missing);
            }
        }
    }

    /// Where entry `e`'s parent resolves: its index (or [`NO_PARENT`]) and, when a truthy
    /// parent id names no entry, that id.
    fn resolve(&self, e: &Entry) -> (u32, Option<Key>) {
        match &e.parent {
            Parent::Key(k) if key_truthy(k) => match self.index_of(k) {
                Some(i) => (u32::try_from(i).unwrap_or(NO_PARENT), None),
                None => (NO_PARENT, Some(k.clone())),
            },
            _ => (NO_PARENT, None),
        }
    }

    fn drop_parents(&mut self) {
        self.parents = OnceLock::new();
        self.epoch = self.epoch.wrapping_add(1);
    }

    /// The index of entry `i`'s parent on a walk (none: the walk ends at `i`).
    pub fn parent_index(&self, i: usize) -> Option<usize> {
        let p = *self.parents().of.get(i)?;
        (p != NO_PARENT).then_some(p as usize)
    }

    /// The parent indices, made now if they are not kept.
    fn parents(&self) -> &Parents {
        self.parents.get_or_init(|| {
            // An id lookup per entry (~50 ms on one thread for a 700 MB session's 354,000
            // entries, most of it cache misses): a giant session's are split across threads.
            let resolve_all = |entries: &[Entry]| {
                let mut p = Parents {
                    of: Vec::with_capacity(entries.len()),
                    ..Parents::default()
                };
                for e in entries {
                    let (of, missing) = self.resolve(e);
                    p.of.push(of);
                    p.unresolved.extend(missing);
                }
                p
            };
            let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(4));
            if threads < 2 || self.entries.len() < PARALLEL_PARENTS_MIN {
                return resolve_all(&self.entries);
            }
            let chunk = self.entries.len().div_ceil(threads);
            let parts: Vec<Parents> = std::thread::scope(|scope| {
                let handles: Vec<_> = self
                    .entries
                    .chunks(chunk)
                    .map(|c| {
                        let t = std::thread::Builder::new().name("psn-parents".into());
                        (c, t.spawn_scoped(scope, move || resolve_all(c)))
                    })
                    .collect();
                // A part whose thread could not start or finish is made here.
                handles
                    .into_iter()
                    .map(|(c, h)| match h {
                        Ok(h) => h.join().unwrap_or_else(|_| resolve_all(c)),
                        Err(_) => resolve_all(c),
                    })
                    .collect()
            });
            let mut p = Parents {
                of: Vec::with_capacity(self.entries.len()),
                ..Parents::default()
            };
            for part in parts {
                p.of.extend(part.of);
                p.unresolved.extend(part.unresolved);
            }
            p
        })
    }

    /// Undo the last [`Tree::push`] after a failed write: memory goes back to what it was.
    pub fn pop(&mut self, previous_leaf: Option<Key>, snapshot: PushUndo) {
        self.drop_parents();
        if let Some(e) = self.entries.pop() {
            if e.is_conversation() {
                self.conversation = self.conversation.saturating_sub(1);
            }
            // The id named the entry just taken off (at the length the entries now have).
            let popped = self.entries.len();
            self.by_id.repoint(&e.id, popped, snapshot.by_id_prev);
            if let Some((target, prev)) = snapshot.label_prev {
                match prev {
                    // A clearing label deleted the key: put it back where it was.
                    Some((slot, p)) => self.labels.restore_at(target, slot, p),
                    None => self.labels.delete(&target),
                }
            }
        }
        self.leaf = previous_leaf;
    }

    /// What a push will overwrite, so that it can be undone exactly.
    pub fn undo_info(&self, e: &Entry) -> PushUndo {
        PushUndo {
            by_id_prev: self.index_of(&e.id),
            label_prev: if e.etype == EntryType::Label {
                let t = e.target().cloned().unwrap_or_default();
                let prev = self
                    .labels
                    .slot_of(&t)
                    .and_then(|slot| self.labels.get(&t).map(|&v| (slot, v)));
                Some((t, prev))
            } else {
                None
            },
        }
    }

    pub fn get(&self, id: &str) -> Option<&Entry> {
        self.index_of(id).and_then(|i| self.entries.get(i))
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(&self.entries, id)
    }

    /// Indices of entries that are not `type: "session"` (what `getEntries()` returns).
    pub fn non_session(&self) -> Vec<u32> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.etype != EntryType::Session)
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Index of the header: the first `type: "session"` entry.
    pub fn header_index(&self) -> Option<usize> {
        self.entries
            .iter()
            .position(|e| e.etype == EntryType::Session)
    }

    /// `getLeafEntry()`: the entry for a truthy leaf id.
    pub fn leaf_index(&self) -> Option<usize> {
        let leaf = self.leaf.as_deref()?;
        if !key_truthy(leaf) {
            return None;
        }
        self.index_of(leaf)
    }

    /// Children of `parent` (`None` = `null`), in `byId` order: each id at its first entry,
    /// holding its latest.
    pub fn children(&self, parent: Option<&str>) -> Vec<u32> {
        let of = |e: &Entry| match (&e.parent, parent) {
            (Parent::Null, None) => true,
            (Parent::Key(k), Some(p)) => k == p,
            _ => false,
        };
        // Every id held once (the usual case): each entry is its id's first and latest, and
        // the children are the entries naming `parent`, in file order, found without a lookup.
        let mut indexed = 0;
        let mut out = Vec::new();
        for (i, e) in self.entries.iter().enumerate() {
            if e.etype == EntryType::Session {
                continue;
            }
            indexed += 1;
            if of(e) {
                out.push(i as u32);
            }
        }
        if indexed == self.by_id.len() {
            return out;
        }
        // Some id is held by several entries: each id at its first entry, holding its latest.
        out.clear();
        let mut repeated: HashSet<&str, foldhash::fast::RandomState> = HashSet::default();
        for (i, e) in self.entries.iter().enumerate() {
            if e.etype == EntryType::Session {
                continue;
            }
            let Some(latest) = self.index_of(&e.id) else {
                continue;
            };
            if latest == i {
                if repeated.contains(e.id.as_str()) {
                    continue;
                }
            } else if !repeated.insert(e.id.as_str()) {
                continue;
            }
            if self.entries.get(latest).is_some_and(of) {
                out.push(latest as u32);
            }
        }
        out
    }

    /// Walk from the entry at `start` to the root; returns indices in root-first order.
    /// Stops at a missing or falsy parent, and at the first repeated entry (a cycle).
    pub fn walk_from(&self, start: usize) -> Vec<u32> {
        let of = &self.parents().of;
        let mut path: Vec<u32> = Vec::new();
        let mut cur = start;
        // At most one step per entry; more means a cycle, which the walk below stops at.
        while cur < of.len() && path.len() <= of.len() {
            path.push(cur as u32);
            match of.get(cur) {
                Some(&p) if p != NO_PARENT => cur = p as usize,
                _ => {
                    path.reverse();
                    return path;
                }
            }
        }
        if start >= of.len() {
            return Vec::new();
        }
        self.walk_with_seen(start)
    }

    /// [`Tree::walk_from`] for a path with a cycle: stops at the first repeated entry.
    fn walk_with_seen(&self, start: usize) -> Vec<u32> {
        let of = &self.parents().of;
        let mut path: Vec<u32> = Vec::new();
        let mut seen = vec![false; of.len()];
        let mut cur = Some(start);
        while let Some(i) = cur {
            if i >= seen.len() || seen[i] {
                break;
            }
            seen[i] = true;
            path.push(i as u32);
            cur = of.get(i).filter(|&&p| p != NO_PARENT).map(|&p| p as usize);
        }
        path.reverse();
        path
    }

    /// `getBranch(fromId?)`: an absent `from` (null/undefined) means the leaf.
    pub fn branch(&self, from: Option<&str>) -> Vec<u32> {
        // `fromId ?? this.leafId`, then a falsy start id means an empty path.
        let start = match from {
            Some(f) => Some(Key::from(f)),
            None => self.leaf.clone(),
        };
        match start
            .filter(|s| key_truthy(s))
            .and_then(|s| self.index_of(&s))
        {
            Some(i) => self.walk_from(i),
            None => Vec::new(),
        }
    }

    /// The reference's `buildSessionPath(entries, leafId, byId)` for the manager's state:
    /// `null` leaf -> empty; an unknown or falsy leaf falls back to the last entry.
    pub fn session_path(&self) -> Vec<u32> {
        match self.path_start() {
            Some(i) => self.walk_from(i),
            None => Vec::new(),
        }
    }

    /// Where [`Tree::session_path`] starts: the leaf's entry, else the last entry.
    pub fn path_start(&self) -> Option<usize> {
        let leaf = self.leaf.as_deref()?;
        let start = if key_truthy(leaf) {
            self.index_of(leaf)
        } else {
            None
        };
        start.or_else(|| {
            self.entries
                .iter()
                .rposition(|e| e.etype != EntryType::Session)
        })
    }
}

/// What to restore when a pushed entry must be taken back.
#[derive(Debug, Clone)]
pub struct PushUndo {
    by_id_prev: Option<usize>,
    label_prev: Option<(Key, Option<(usize, usize)>)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(json: &str) -> Entry {
        Entry::parse(json.to_string(), 0).expect("valid entry")
    }

    fn chain(n: usize) -> Tree {
        let mut v = vec![e(r#"{"type":"session","id":"s","version":3}"#)];
        for i in 0..n {
            let parent = if i == 0 {
                "null".to_string()
            } else {
                format!("\"e{}\"", i - 1)
            };
            v.push(e(&format!(
                r#"{{"type":"message","id":"e{i}","parentId":{parent},"message":{{"role":"user"}}}}"#
            )));
        }
        Tree::from_entries(v)
    }

    /// The kept parent indices answer as a fresh walk would, after every kind of change.
    #[test]
    fn parents_resolved_on_several_threads_match_the_walk_and_missing_parents() {
        let n = PARALLEL_PARENTS_MIN + 10_000;
        let mut entries = vec![
            Entry::parse(r#"{"type":"session","id":"s","version":3}"#.to_string(), 0).expect("h"),
        ];
        for i in 0..n {
            // Every 10,000th names a parent that does not exist (yet).
            let parent = if i % 10_000 == 5 {
                format!("missing{i}")
            } else if i == 0 {
                "null".to_string()
            } else {
                format!("m{}", i - 1)
            };
            let parent = if parent == "null" {
                parent
            } else {
                format!("\"{parent}\"")
            };
            let line = format!(
                r#"{{"type":"message","id":"m{i}","parentId":{parent},"message":{{"role":"user"}}}}"#
            );
            entries.push(Entry::parse(line, 0).expect("valid"));
        }
        let mut t = Tree::from_entries(entries);
        let last = t.entries.len() - 1;
        let path = t.walk_from(last);
        // From the last entry back to the last one with a missing parent.
        let stop = (0..n).rev().find(|i| i % 10_000 == 5).expect("one");
        assert_eq!(path.len(), n - stop);
        assert_eq!(path[0] as usize, stop + 1);
        // Every missing parent was recorded, whichever thread resolved it: appending one of
        // them changes resolutions, so the kept indices go and the walk goes further back.
        let epoch = t.epoch;
        let line = format!(
            r#"{{"type":"message","id":"missing{stop}","parentId":"m{}","message":{{"role":"user"}}}}"#,
            stop - 1
        );
        t.push(Entry::parse(line, 0).expect("valid"));
        assert_ne!(t.epoch, epoch);
        let path = t.walk_from(last);
        let before = (0..stop).rev().find(|i| i % 10_000 == 5).expect("one");
        assert_eq!(path.len(), n - before + 1);
    }

    #[test]
    fn kept_parents_follow_appends() {
        let msg = |id: &str, parent: &str| {
            e(&format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"message":{{"role":"user"}}}}"#
            ))
        };
        let fresh = |t: &Tree| {
            let mut c = Tree::from_entries(t.entries.clone());
            c.leaf = t.leaf.clone();
            c
        };
        let mut t = chain(3);
        assert_eq!(t.branch(None), vec![1, 2, 3]);
        // An entry whose parent does not exist yet, then that parent: the first one's walk
        // now goes through it.
        t.push(msg("x", "\"later\""));
        assert_eq!(t.branch(None), vec![4]);
        t.push(msg("later", "\"e0\""));
        assert_eq!(t.branch(Some("x")), vec![1, 5, 4]);
        assert_eq!(t.branch(Some("x")), fresh(&t).branch(Some("x")));
        // A repeated id: its children now resolve to the new entry (as byId does).
        t.push(msg("e1", "null"));
        assert_eq!(t.branch(Some("e2")), vec![6, 3]);
        assert_eq!(t.branch(Some("e2")), fresh(&t).branch(Some("e2")));
        // An ordinary append extends the kept indices.
        t.push(msg("y", "\"e2\""));
        assert_eq!(t.branch(None), vec![6, 3, 7]);
        // Undo of a push.
        let undo = t.undo_info(&msg("z", "\"y\""));
        let leaf = t.leaf.clone();
        t.push(msg("z", "\"y\""));
        assert_eq!(t.branch(None), vec![6, 3, 7, 8]);
        t.pop(leaf, undo);
        assert_eq!(t.branch(None), vec![6, 3, 7]);
        // A cycle ends at the first repeated entry, as before.
        let mut c = Tree::from_entries(vec![msg("a", "\"b\""), msg("b", "\"a\"")]);
        assert_eq!(c.branch(Some("a")), vec![1, 0]);
        c.push(msg("c", "\"c\""));
        assert_eq!(c.branch(None), vec![2]);
    }

    /// `byId` without its own keys: a repeated id keeps its first place and names its latest
    /// entry; an undone push of a repeated or a new id leaves the table as it was.
    #[test]
    fn repeated_ids_keep_their_first_place_and_undo_restores_them() {
        let msg = |id: &str, parent: &str| {
            e(&format!(
                r#"{{"type":"message","id":"{id}","parentId":{parent},"message":{{"role":"user"}}}}"#
            ))
        };
        let mut t = Tree::from_entries(vec![
            msg("a", "null"),
            msg("b", "\"a\""),
            msg("a", "null"),
            msg("c", "null"),
        ]);
        assert_eq!(t.index_of("a"), Some(2));
        assert_eq!(t.by_id.len(), 3);
        assert_eq!(t.children(None), vec![2, 3]);
        assert_eq!(t.children(Some("a")), vec![1]);
        for id in ["c", "d"] {
            let before = (t.index_of(id), t.by_id.len(), t.children(None));
            let undo = t.undo_info(&msg(id, "null"));
            let leaf = t.leaf.clone();
            t.push(msg(id, "null"));
            assert_eq!(t.index_of(id), Some(4));
            t.pop(leaf, undo);
            assert_eq!(
                (t.index_of(id), t.by_id.len(), t.children(None)),
                before,
                "{id}"
            );
        }
        let mut ids: Vec<_> = t.by_id.keys(&t.entries).map(|k| k.to_string()).collect();
        ids.sort();
        assert_eq!(ids, ["a", "b", "c"]);
    }

    #[test]
    fn leaf_path_children() {
        let t = chain(3);
        assert_eq!(t.leaf.as_deref(), Some("e2"));
        assert_eq!(t.branch(None), vec![1, 2, 3]);
        assert_eq!(t.children(Some("e0")), vec![2]);
        assert_eq!(t.children(None), vec![1]);
        assert_eq!(t.conversation, 3);
    }

    #[test]
    fn a_last_entry_with_a_null_id_makes_the_leaf_null() {
        let t = Tree::from_entries(vec![
            e(r#"{"type":"session","id":"s"}"#),
            e(r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#),
            e(r#"{"type":"message","id":null,"parentId":"a","message":{"role":"user"}}"#),
        ]);
        assert_eq!(t.leaf, None);
        assert!(t.session_path().is_empty());
        // A missing id is `undefined`: the reference then walks from the last entry.
        let t = Tree::from_entries(vec![
            e(r#"{"type":"session","id":"s"}"#),
            e(r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#),
            e(r#"{"type":"message","parentId":"a","message":{"role":"user"}}"#),
        ]);
        assert_eq!(t.session_path(), vec![1, 2]);
    }

    #[test]
    fn cycles_and_self_parents_terminate() {
        let t = Tree::from_entries(vec![
            e(r#"{"type":"session","id":"s"}"#),
            e(r#"{"type":"x","id":"a","parentId":"b"}"#),
            e(r#"{"type":"x","id":"b","parentId":"a"}"#),
            e(r#"{"type":"x","id":"c","parentId":"c"}"#),
        ]);
        assert_eq!(t.branch(Some("a")), vec![2, 1]);
        assert_eq!(t.branch(Some("c")), vec![3]);
    }

    #[test]
    fn deep_chain_of_a_million() {
        let t = chain(1_000_000);
        assert_eq!(t.branch(None).len(), 1_000_000);
    }

    #[test]
    fn failed_label_clear_restores_label_order() {
        // Found by the `ops` fuzz target: undoing a clearing label moved it to the end.
        let mut t = Tree::from_entries(vec![
            e(r#"{"type":"message","id":"a","parentId":null,"message":{"role":"user"}}"#),
            e(r#"{"type":"label","id":"l1","parentId":"a","targetId":"a","label":"x"}"#),
            e(r#"{"type":"label","id":"l2","parentId":"l1","targetId":"l1","label":"y"}"#),
        ]);
        let before: Vec<usize> = t.labels.iter().copied().collect();
        let clear = e(r#"{"type":"label","id":"l3","parentId":"l2","targetId":"a","label":""}"#);
        let (undo, leaf) = (t.undo_info(&clear), t.leaf.clone());
        t.push(clear);
        t.pop(leaf, undo);
        let after: Vec<usize> = t.labels.iter().copied().collect();
        assert_eq!(after, before);
    }

    #[test]
    fn labels_latest_wins_and_clear() {
        let mut t = chain(1);
        t.push(e(
            r#"{"type":"label","id":"l1","parentId":"e0","targetId":"e0","label":"a"}"#,
        ));
        t.push(e(
            r#"{"type":"label","id":"l2","parentId":"l1","targetId":"e0","label":"b"}"#,
        ));
        assert_eq!(t.labels.get("e0"), Some(&3));
        let undo = t.undo_info(&e(r#"{"type":"label","id":"l3","targetId":"e0"}"#));
        let prev = t.leaf.clone();
        t.push(e(
            r#"{"type":"label","id":"l3","parentId":"l2","targetId":"e0"}"#,
        ));
        assert!(t.labels.get("e0").is_none());
        t.pop(prev, undo);
        assert_eq!(t.labels.get("e0"), Some(&3));
        assert_eq!(t.leaf.as_deref(), Some("l2"));
    }
}
