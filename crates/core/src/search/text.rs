//! Tokens, folding, query parsing and snippets of the search engine.
//!
//! The engine gives SQLite FTS5 *pre-tokenized* text: [`index_text`] turns a message text
//! into the distinct folded tokens it holds (a `detail=none` index: which texts hold a
//! token, not where), and a query term is turned into FTS5 strings of the same tokens. Both
//! sides go through the same code, so what matches is decided here:
//! - a token is a run of letters and digits (`char::is_alphanumeric`), folded: lower case,
//!   Latin diacritics removed (`é` → `e`, `ß` → `ss`, see [`super::fold_table`]), combining
//!   marks dropped;
//! - a CJK character (Han, kana, Hangul) is a token of its own, so a CJK query is a phrase
//!   of single characters: found as a substring, whatever the word boundaries;
//! - an identifier is findable whole and by its parts: punctuation already splits paths and
//!   `snake_case` (`src/core/session-manager.ts` is the tokens `src core session manager
//!   ts`, and a query with inner punctuation is the phrase of its tokens), and a camelCase
//!   token's parts (`idSummaryTree`: `id summary tree`) are indexed beside it. A query word
//!   that is itself camelCase matches its whole token or the phrase of its parts
//!   (`summaryTree` finds `idSummaryTree`);
//! - a term of several tokens (a phrase, a path, a camelCase word's parts) is the AND of its
//!   tokens in the index, and [`Query::matches`] checks on each candidate text, read back
//!   from its session file, that they are in a row (in the text, or among one identifier's
//!   parts, never running from one identifier into the next).
//!
//! User text never reaches FTS5's query syntax: [`parse_query`] keeps only tokens, and every
//! term is written as a double-quoted string of tokens that contain no quote (`"a b"`,
//! `"auth"*`), so `NEAR`, `OR`, `-`, `^`, `col:` and quotes are plain text or separators.

use super::fold_table::FOLD;

/// Longest query considered (characters); the rest is ignored.
pub const MAX_QUERY_CHARS: usize = 4096;
/// Most terms (words, phrases, prefixes) in one query; the rest are ignored.
pub const MAX_TERMS: usize = 32;
/// Most tokens in one phrase.
pub const MAX_PHRASE_TOKENS: usize = 64;

/// A CJK character: one token on its own.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0x1100..=0x11FF // Hangul Jamo
        | 0xF900..=0xFAFF // CJK Compatibility Ideographs
        | 0x20000..=0x2FFFF)
}

fn is_combining(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// Append the folded form of `c` to `out`.
fn push_folded(c: char, out: &mut String) {
    if c.is_ascii() {
        out.push(c.to_ascii_lowercase());
        return;
    }
    if let Ok(i) = FOLD.binary_search_by_key(&(c as u32), |&(cp, _)| cp) {
        out.push_str(FOLD[i].1);
        return;
    }
    for l in c.to_lowercase() {
        out.push(l);
    }
}

/// One token of a text: `[start, end)` byte range in the text and its folded form.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    pub start: usize,
    pub end: usize,
    pub folded: String,
}

/// Where the tokenizer is inside a terminal escape sequence.
#[derive(Clone, Copy, PartialEq)]
enum Esc {
    /// Not in one.
    No,
    /// After ESC.
    Start,
    /// In a control sequence (`ESC [` or C1 CSI): parameters and intermediates.
    Csi,
    /// After ESC and intermediate bytes.
    Inter,
}

/// The tokens of `text`, in order (linear time). Terminal escape sequences (`ESC [ 31 m`,
/// C1 CSI, two-byte `ESC x`) separate tokens and are not tokens themselves, so a coloured
/// word of a tool's output (`\x1b[31mneedle\x1b[0m`) is the token `needle`.
pub fn tokens(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    for_each_token(text, |start, end, folded| {
        out.push(Token {
            start,
            end,
            folded: folded.to_string(),
        })
    });
    out
}

/// Call `f(start, end, folded)` for each token of `text` (see [`tokens`]), in order, with
/// one reused buffer for the folded form. ASCII, the bulk of sessions, is read a byte at a
/// time; other characters (and escape sequences) one `char` at a time, same rules.
pub fn for_each_token(text: &str, mut f: impl FnMut(usize, usize, &str)) {
    // The token being read: its start and end bytes; its folded form in `buf`.
    let mut cur: Option<(usize, usize)> = None;
    let mut buf = String::new();
    let mut esc = Esc::No;
    let mut flush = |cur: &mut Option<(usize, usize)>, buf: &mut String| {
        if let Some((s, e)) = cur.take() {
            f(s, e, buf);
        }
        buf.clear();
    };
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if esc == Esc::No && b < 0x80 && b != 0x1b {
            if b.is_ascii_alphanumeric() {
                // The whole run of ASCII letters and digits at once.
                let mut j = i + 1;
                while j < bytes.len() && bytes[j].is_ascii_alphanumeric() {
                    j += 1;
                }
                let t = cur.get_or_insert((i, i));
                t.1 = j;
                let from = buf.len();
                buf.push_str(&text[i..j]);
                buf[from..].make_ascii_lowercase();
                i = j;
            } else {
                flush(&mut cur, &mut buf);
                i += 1;
            }
            continue;
        }
        // `i` is on a character boundary: ASCII bytes are whole characters.
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        let end = i + c.len_utf8();
        let at = i;
        i = end;
        if esc != Esc::No {
            let b = c as u32;
            let next = match esc {
                Esc::Start if c == '[' => Some(Esc::Csi),
                Esc::Start | Esc::Inter if (0x20..=0x2F).contains(&b) => Some(Esc::Inter),
                Esc::Csi if (0x20..=0x3F).contains(&b) => Some(Esc::Csi),
                // The final byte ends the sequence.
                _ if (0x30..=0x7E).contains(&b) && esc != Esc::Csi => Some(Esc::No),
                Esc::Csi if (0x40..=0x7E).contains(&b) => Some(Esc::No),
                // Anything else ends it and is read as text.
                _ => None,
            };
            if let Some(n) = next {
                esc = n;
                continue;
            }
            esc = Esc::No;
        }
        if c == '\u{1b}' || c == '\u{9b}' {
            flush(&mut cur, &mut buf);
            esc = if c == '\u{1b}' { Esc::Start } else { Esc::Csi };
            continue;
        }
        if is_cjk(c) {
            flush(&mut cur, &mut buf);
            push_folded(c, &mut buf);
            cur = Some((at, end));
            flush(&mut cur, &mut buf);
        } else if c.is_alphanumeric() {
            let t = cur.get_or_insert((at, at));
            t.1 = end;
            push_folded(c, &mut buf);
        } else if is_combining(c) {
            if let Some(t) = cur.as_mut() {
                t.1 = end;
            }
        } else {
            flush(&mut cur, &mut buf);
        }
    }
    flush(&mut cur, &mut buf);
}

/// What FTS5 is given for one text (a `detail=none` index: which tokens a text holds, not
/// where): every distinct folded token of the text and every distinct camelCase part of
/// its identifiers, once each, sorted, space-separated; and how many tokens the text has
/// (its length, for ranking). Phrases and the parts of one identifier in a row are checked
/// on the text itself when a hit is read back ([`Query::matches`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexText {
    pub tokens: String,
    pub count: usize,
}

/// Longest token (bytes) whose camelCase parts are indexed: identifiers, not encoded blobs.
pub const MAX_CAMEL_TOKEN: usize = 80;
/// Most parts of one token (more: a blob or a hash, not an identifier).
pub const MAX_CAMEL_PARTS: usize = 8;

/// The camelCase parts of a token as the index keeps them: none for a token over
/// [`MAX_CAMEL_TOKEN`] bytes or of more than [`MAX_CAMEL_PARTS`] parts.
pub fn indexed_parts(word: &str) -> Vec<String> {
    if word.len() > MAX_CAMEL_TOKEN {
        return Vec::new();
    }
    let parts = camel_parts(word);
    if parts.len() > MAX_CAMEL_PARTS {
        return Vec::new();
    }
    parts
}

/// The text handed to FTS5 for `text` (see [`IndexText`]): each distinct folded token or
/// camelCase part once, in the order first seen. A word is split into parts once per
/// spelling, however often the text repeats it (`idtree` then `idTree`: the second still
/// gives `id tree`). The sets it uses are kept per thread between calls (no allocation per
/// token, none per text but the output).
pub fn index_text(text: &str) -> IndexText {
    thread_local! {
        static SETS: std::cell::RefCell<(RangeSet, RangeSet)> =
            std::cell::RefCell::new((RangeSet::default(), RangeSet::default()));
    }
    SETS.with(|sets| match sets.try_borrow_mut() {
        Ok(mut sets) => {
            let (folded, words) = &mut *sets;
            index_text_with(text, folded, words)
        }
        // Only if called again from inside itself, which it never does.
        Err(_) => index_text_with(text, &mut RangeSet::default(), &mut RangeSet::default()),
    })
}

fn index_text_with(text: &str, seen: &mut RangeSet, camel_words: &mut RangeSet) -> IndexText {
    seen.start();
    camel_words.start();
    let mut out = String::with_capacity(text.len() / 2);
    let mut count = 0usize;
    let mut bounds = [(0usize, 0usize); MAX_CAMEL_PARTS + 1];
    let mut part = String::new();
    // Append `t` to `out` unless it is there already.
    let push = |out: &mut String, seen: &mut RangeSet, t: &str| {
        let at = out.len() + usize::from(!out.is_empty());
        if seen.insert(out, t, at) {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(t);
        }
    };
    for_each_token(text, |start, end, folded| {
        count += 1;
        push(&mut out, seen, folded);
        let word = &text[start..end];
        // Each spelling of a camelCase word is split once.
        if !maybe_camel(word) || !camel_words.insert(text, word, start) {
            return;
        }
        if word.is_ascii() {
            // Fast path, same parts as `indexed_parts` (checked by a test).
            let n = ascii_camel_bounds(word.as_bytes(), &mut bounds);
            if !(2..=MAX_CAMEL_PARTS).contains(&n) || word.len() > MAX_CAMEL_TOKEN {
                return;
            }
            for &(s, e) in &bounds[..n] {
                part.clear();
                part.push_str(&word[s..e]);
                part.make_ascii_lowercase();
                push(&mut out, seen, &part);
            }
        } else {
            for p in indexed_parts(word) {
                push(&mut out, seen, &p);
            }
        }
    });
    IndexText { tokens: out, count }
}

/// A set of strings held as byte ranges of one backing string (the index text being
/// written, or the text being read), open addressing: reused from one text to the next
/// without clearing (each slot carries the number of the text that filled it).
#[derive(Default)]
struct RangeSet {
    /// (text number, the hash's high half, start, end); a power of two long.
    slots: Vec<(u32, u32, u32, u32)>,
    /// Number of the current text (slots of other numbers are free); never 0 in use.
    round: u32,
    len: usize,
}

/// Slots of a [`RangeSet`] at most kept from one text to the next (a huge text's table
/// is let go, not probed around by every small one after it).
const RANGE_SET_KEEP: usize = 1 << 16;

impl RangeSet {
    /// Empty the set for a new text.
    fn start(&mut self) {
        if self.slots.len() > RANGE_SET_KEEP {
            self.slots = Vec::new();
        }
        self.len = 0;
        self.round = self.round.wrapping_add(1);
        if self.round == 0 {
            // Numbers wrapped: every slot free again.
            self.slots.iter_mut().for_each(|s| s.0 = 0);
            self.round = 1;
        }
    }

    fn hash(b: &[u8]) -> u64 {
        use std::hash::BuildHasher;
        foldhash::fast::FixedState::with_seed(0x5eed).hash_one(b)
    }

    /// Add `t`, whose bytes are (or are about to be) `backing[at..at + t.len()]`; whether it
    /// was new. Ranges past `u32::MAX` are never found again (a duplicate token at worst).
    fn insert(&mut self, backing: &str, t: &str, at: usize) -> bool {
        if (self.len + 1) * 2 > self.slots.len() {
            self.grow(backing);
        }
        let (Ok(s), Ok(e)) = (u32::try_from(at), u32::try_from(at + t.len())) else {
            return true;
        };
        let mask = self.slots.len() - 1;
        let h = Self::hash(t.as_bytes());
        let tag = (h >> 32) as u32;
        let mut i = h as usize & mask;
        loop {
            let (g, tg, a, b) = self.slots[i];
            if g != self.round {
                self.slots[i] = (self.round, tag, s, e);
                self.len += 1;
                return true;
            }
            if tg == tag && backing.as_bytes().get(a as usize..b as usize) == Some(t.as_bytes()) {
                return false;
            }
            i = (i + 1) & mask;
        }
    }

    /// Double the table (at least 64 slots), putting back the current text's ranges.
    fn grow(&mut self, backing: &str) {
        let n = (self.slots.len() * 2).max(64);
        let old = std::mem::replace(&mut self.slots, vec![(0, 0, 0, 0); n]);
        let mask = n - 1;
        for (g, tag, a, b) in old {
            if g != self.round {
                continue;
            }
            let bytes = backing
                .as_bytes()
                .get(a as usize..b as usize)
                .unwrap_or(&[]);
            let mut i = Self::hash(bytes) as usize & mask;
            while self.slots[i].0 == self.round {
                i = (i + 1) & mask;
            }
            self.slots[i] = (g, tag, a, b);
        }
    }
}

/// The camelCase parts of an ASCII word as byte ranges, by [`camel_parts`]' rules, into
/// `out`; how many there are (at most `out.len()`: counting stops there).
fn ascii_camel_bounds(w: &[u8], out: &mut [(usize, usize)]) -> usize {
    let mut n = 0;
    let mut start = 0;
    for i in 1..w.len() {
        let (p, c) = (w[i - 1], w[i]);
        let next_lower = w.get(i + 1).is_some_and(u8::is_ascii_lowercase);
        let boundary = c.is_ascii_uppercase()
            && (p.is_ascii_lowercase()
                || p.is_ascii_digit()
                || (p.is_ascii_uppercase() && next_lower));
        if boundary {
            if n == out.len() {
                return n;
            }
            out[n] = (start, i);
            n += 1;
            start = i;
        }
    }
    if n < out.len() && start < w.len() {
        out[n] = (start, w.len());
        n += 1;
    }
    n
}

/// Whether `word` may have camelCase parts: an upper-case letter after its first character
/// (checked on bytes for ASCII; any non-ASCII word goes to [`camel_parts`]).
fn maybe_camel(word: &str) -> bool {
    let b = word.as_bytes();
    b.len() > 1 && b[1..].iter().any(|&c| c.is_ascii_uppercase() || c >= 0x80)
}

/// The camelCase parts of one token (its original text), folded: `idSummaryTree` → `id
/// summary tree`, `HTMLParser` → `html parser`, `utf8Decode` → `utf8 decode`. Empty when
/// the token is one part (`session`, `HTML`, `parse2`).
pub fn camel_parts(word: &str) -> Vec<String> {
    let chars: Vec<char> = word.chars().collect();
    // Cheap exit for the common case: no upper-case letter after the first character.
    if !chars.iter().skip(1).any(|c| c.is_uppercase()) {
        return Vec::new();
    }
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = if i > 0 {
            chars.get(i - 1).copied()
        } else {
            None
        };
        let next = chars.get(i + 1).copied();
        let boundary = c.is_uppercase()
            && prev.is_some_and(|p| {
                p.is_lowercase()
                    || p.is_ascii_digit()
                    || (p.is_uppercase() && next.is_some_and(char::is_lowercase))
            });
        if boundary && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        push_folded(c, &mut cur);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// One term of a query: all its tokens must appear in this order, adjacent; with
/// `prefix`, the last one as a prefix. A one-token term that is camelCase also matches the
/// phrase of its `parts` (empty otherwise).
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub tokens: Vec<String>,
    pub prefix: bool,
    pub parts: Vec<String>,
}

/// `"a" AND "b"` (the last one `"b"*` with `prefix`), in parentheses when `group` and
/// there are several: the tokens of one term as FTS5 strings.
fn push_all(out: &mut String, tokens: &[String], prefix: bool, group: bool) {
    let group = group && tokens.len() > 1;
    if group {
        out.push('(');
    }
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            out.push_str(" AND ");
        }
        out.push('"');
        // Tokens hold letters and digits only: no quote to escape. Escaped anyway.
        out.push_str(&t.replace('"', "\"\""));
        out.push('"');
        if prefix && i + 1 == tokens.len() {
            out.push('*');
        }
    }
    if group {
        out.push(')');
    }
}

/// Whether `list` holds `want` in a row (the last one as a prefix with `prefix`).
/// Whether `low` holds `want`'s tokens one after the other, separated by bytes that are not
/// ASCII letters or digits, or by nothing (every place the first one is at is tried).
fn in_sequence(low: &[u8], want: &[String]) -> bool {
    let Some(first) = want.first().map(String::as_bytes) else {
        return true;
    };
    if first.is_empty() {
        return true;
    }
    let finder = memchr::memmem::Finder::new(first);
    let mut from = 0;
    while let Some(k) = low.get(from..).and_then(|rest| finder.find(rest)) {
        let at = from + k;
        let mut i = at + first.len();
        let all = want[1..].iter().all(|t| {
            while i < low.len() && !low[i].is_ascii_alphanumeric() {
                i += 1;
            }
            let ok = low.get(i..).is_some_and(|r| r.starts_with(t.as_bytes()));
            i += t.len();
            ok
        });
        if all {
            return true;
        }
        from = at + 1;
    }
    false
}

fn in_a_row(list: &[&str], want: &[String], prefix: bool) -> bool {
    if want.is_empty() || list.len() < want.len() {
        return false;
    }
    list.windows(want.len()).any(|w| {
        w.iter().zip(want).enumerate().all(|(i, (have, t))| {
            if prefix && i + 1 == want.len() {
                have.starts_with(t.as_str())
            } else {
                have == t
            }
        })
    })
}

/// A parsed query: terms (all must match) and, when the query is a lone id-like word, that
/// word lower-cased (a session id or id prefix).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    pub terms: Vec<Term>,
    pub id_prefix: Option<String>,
}

impl Query {
    /// The FTS5 MATCH expression over the `detail=none` index: every term the AND of its
    /// tokens as quoted strings (`"a" AND "b"`, the last one `"auth"*` for a prefix), a
    /// camelCase word its whole token or its parts (`("summarytree" OR ("summary" AND
    /// "tree"))`), all terms joined by AND. Which texts hold a term's tokens in a row is
    /// checked on the texts themselves ([`Query::matches`]). `None` when there is no term.
    pub fn fts(&self) -> Option<String> {
        if self.terms.is_empty() {
            return None;
        }
        let mut out = String::new();
        for t in &self.terms {
            if !out.is_empty() {
                out.push_str(" AND ");
            }
            if t.parts.is_empty() {
                push_all(&mut out, &t.tokens, t.prefix, false);
            } else {
                out.push('(');
                push_all(&mut out, &t.tokens, t.prefix, true);
                out.push_str(" OR ");
                push_all(&mut out, &t.parts, t.prefix, true);
                out.push(')');
            }
        }
        Some(out)
    }

    /// Whether some term needs [`Query::matches`]: more than one token in a row (a phrase,
    /// a path, a camelCase word's parts). A one-token term is decided by the index alone.
    pub fn needs_check(&self) -> bool {
        self.terms
            .iter()
            .any(|t| t.tokens.len() > 1 || t.parts.len() > 1)
    }

    /// A necessary condition for [`Query::matches_text`], checked an order of magnitude
    /// faster, for texts of ASCII without escape sequences (their tokens are their runs of
    /// ASCII letters and digits, lower-cased): each term's tokens (or parts) must be in the
    /// lower-cased text one after the other with only other bytes between them (nothing
    /// between: one identifier's parts). `true` for any other text.
    pub fn may_match_text(&self, text: &str) -> bool {
        let b = text.as_bytes();
        if !b.is_ascii() || memchr::memchr(0x1b, b).is_some() {
            return true;
        }
        let low = b.to_ascii_lowercase();
        self.terms.iter().all(|t| {
            [&t.tokens, &t.parts]
                .into_iter()
                .filter(|l| !l.is_empty())
                .any(|l| in_sequence(&low, l))
        })
    }

    /// [`Query::matches`] on `text` itself, its tokens read into one buffer (no allocation
    /// per token): the phrase check of every candidate a query reads back.
    pub fn matches_text(&self, text: &str) -> bool {
        let mut buf = String::with_capacity(text.len());
        let mut spans: Vec<(usize, usize, usize, usize)> = Vec::new();
        for_each_token(text, |s, e, f| {
            let a = buf.len();
            buf.push_str(f);
            spans.push((s, e, a, buf.len()));
        });
        let folded: Vec<&str> = spans.iter().map(|&(_, _, a, b)| &buf[a..b]).collect();
        self.terms_in_a_row(text, &folded, || spans.iter().map(|&(s, e, _, _)| (s, e)))
    }

    /// Whether the text (`text` and its [`tokens`]) holds every term: its tokens (or, for a
    /// camelCase word, its parts) in a row, the last one as a prefix when the term is one,
    /// either among the text's tokens or among the indexed parts of one of its identifiers
    /// ([`indexed_parts`]): what a phrase matched in the index with positions (schema 3).
    pub fn matches(&self, text: &str, toks: &[Token]) -> bool {
        let folded: Vec<&str> = toks.iter().map(|t| t.folded.as_str()).collect();
        self.terms_in_a_row(text, &folded, || toks.iter().map(|k| (k.start, k.end)))
    }

    /// The check of [`Query::matches`] over a text's folded tokens and (made only when a term
    /// is not among them) the byte ranges of its tokens in `text`, for their camelCase parts.
    fn terms_in_a_row<I: Iterator<Item = (usize, usize)>>(
        &self,
        text: &str,
        folded: &[&str],
        ranges: impl Fn() -> I,
    ) -> bool {
        let mut parts: Option<Vec<Vec<String>>> = None;
        self.terms.iter().all(|t| {
            [&t.tokens, &t.parts]
                .into_iter()
                .filter(|l| !l.is_empty())
                .any(|l| {
                    if in_a_row(folded, l, t.prefix) {
                        return true;
                    }
                    let parts = parts.get_or_insert_with(|| {
                        ranges()
                            .filter_map(|(s, e)| text.get(s..e))
                            .filter(|w| maybe_camel(w))
                            .map(indexed_parts)
                            .filter(|p| !p.is_empty())
                            .collect()
                    });
                    parts.iter().any(|p| {
                        let p: Vec<&str> = p.iter().map(String::as_str).collect();
                        in_a_row(&p, l, t.prefix)
                    })
                })
        })
    }

    /// Whether a token of a text (its folded form, and its original text for its
    /// camelCase parts) is one a snippet marks: it is a word of a term (or of a camelCase
    /// term's parts), or its own parts hold a term's words or parts in a row
    /// (`idSummaryTree` for `summary`, `summaryTree` or `"summary tree"`).
    pub fn marks(&self, folded: &str, original: &str) -> bool {
        let eq = |w: &str, t: &str, prefix: bool| if prefix { w.starts_with(t) } else { w == t };
        let lists = || {
            self.terms.iter().flat_map(|t| {
                [(&t.tokens, t.prefix), (&t.parts, t.prefix)]
                    .into_iter()
                    .filter(|(l, _)| !l.is_empty())
            })
        };
        let word = lists().any(|(l, prefix)| {
            l.iter()
                .enumerate()
                .any(|(i, t)| eq(folded, t, prefix && i + 1 == l.len()))
        });
        if word {
            return true;
        }
        let own = camel_parts(original);
        !own.is_empty()
            && lists().any(|(l, prefix)| {
                own.windows(l.len()).any(|w| {
                    w.iter()
                        .zip(l.iter())
                        .enumerate()
                        .all(|(i, (p, t))| eq(p, t, prefix && i + 1 == l.len()))
                })
            })
    }
}

fn id_like(s: &str) -> bool {
    (4..=36).contains(&s.len())
        && s.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
        && s.bytes().any(|b| b.is_ascii_hexdigit())
}

/// Parse a query: `"exact phrase"` (an unclosed quote runs to the end), bare words (a word
/// with inner punctuation such as `foo-bar` is the phrase `foo bar`), `auth*` (prefix).
/// Everything else is text. Bounded: [`MAX_QUERY_CHARS`], [`MAX_TERMS`],
/// [`MAX_PHRASE_TOKENS`]; linear time.
pub fn parse_query(q: &str) -> Query {
    let q: &str = match q.char_indices().nth(MAX_QUERY_CHARS) {
        Some((i, _)) => &q[..i],
        None => q,
    };
    let trimmed = q.trim();
    let id_prefix = id_like(trimmed).then(|| trimmed.to_ascii_lowercase());
    let mut terms = Vec::new();
    let push = |text: &str, prefix: bool, terms: &mut Vec<Term>| {
        if terms.len() >= MAX_TERMS {
            return;
        }
        let all = tokens(text);
        // A one-token word that is camelCase also matches its parts.
        let parts = match all.as_slice() {
            [only] => camel_parts(&text[only.start..only.end]),
            _ => Vec::new(),
        };
        let toks: Vec<String> = all
            .into_iter()
            .take(MAX_PHRASE_TOKENS)
            .map(|t| t.folded)
            .collect();
        if toks.is_empty() {
            return;
        }
        // A prefix applies to a trailing word, not to a CJK character run.
        let prefix = prefix && !text.trim_end_matches('*').ends_with(is_cjk);
        terms.push(Term {
            tokens: toks,
            prefix,
            parts,
        });
    };
    let mut rest = q;
    while !rest.is_empty() {
        let r = rest.trim_start();
        if r.is_empty() {
            break;
        }
        if let Some(body) = r.strip_prefix('"') {
            let (phrase, after) = match body.find('"') {
                Some(i) => (&body[..i], &body[i + 1..]),
                None => (body, ""),
            };
            let prefix = after.starts_with('*');
            push(phrase, prefix, &mut terms);
            rest = after;
        } else {
            let end = r
                .find(|c: char| c.is_whitespace() || c == '"')
                .unwrap_or(r.len());
            let word = &r[..end];
            push(word, word.ends_with('*'), &mut terms);
            rest = &r[end..];
        }
    }
    Query { terms, id_prefix }
}

/// Opening and closing marks of a match in a snippet.
pub const MARK_OPEN: &str = "«";
pub const MARK_CLOSE: &str = "»";

/// A snippet of `text` of about `width` characters around the first token that matches a
/// term of `q`, every matching token in it marked `«…»`; ellipses where the text was cut.
/// Line breaks and tabs become spaces. Linear in the text.
pub fn snippet(text: &str, q: &Query, width: usize) -> String {
    snippet_of(text, &tokens(text), q, width)
}

/// [`snippet`] of a text whose [`tokens`] are known already.
pub fn snippet_of(text: &str, toks: &[Token], q: &Query, width: usize) -> String {
    let marked: Vec<&Token> = toks
        .iter()
        .filter(|t| q.marks(&t.folded, &text[t.start..t.end]))
        .collect();
    let first = marked.first().map(|t| t.start).unwrap_or(0);
    // Window in characters: a third before the match.
    let char_starts: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
    let total = char_starts.len();
    let first_char = char_starts.partition_point(|&b| b < first);
    let from_char = first_char.saturating_sub(width / 3);
    let to_char = (from_char + width).min(total);
    let from = char_starts.get(from_char).copied().unwrap_or(text.len());
    let to = char_starts.get(to_char).copied().unwrap_or(text.len());
    let mut out = String::new();
    if from > 0 {
        out.push('…');
    }
    let mut pos = from;
    for t in marked {
        if t.start < from || t.end > to || t.start < pos {
            continue;
        }
        push_clean(&text[pos..t.start], &mut out);
        out.push_str(MARK_OPEN);
        push_clean(&text[t.start..t.end], &mut out);
        out.push_str(MARK_CLOSE);
        pos = t.end;
    }
    push_clean(&text[pos..to], &mut out);
    if to < text.len() {
        out.push('…');
    }
    // Adjacent marked tokens (a CJK run) as one mark.
    out.replace(&format!("{MARK_CLOSE}{MARK_OPEN}"), "")
}

fn push_clean(s: &str, out: &mut String) {
    for c in s.chars() {
        if c == '\n' || c == '\r' || c == '\t' {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The folded tokens of `text`, in order.
    fn body(text: &str) -> String {
        tokens(text)
            .into_iter()
            .map(|t| t.folded)
            .collect::<Vec<_>>()
            .join(" ")
    }

    #[test]
    fn folding_and_cjk() {
        assert_eq!(body("Café CRÈME—naïve straße"), "cafe creme naive strasse");
        assert_eq!(body("修复了解析器"), "修 复 了 解 析 器");
        assert_eq!(body("e\u{301}cole"), "ecole");
    }

    #[test]
    fn escape_sequences_separate_tokens() {
        assert_eq!(
            body("done: \x1b[31mneedle\x1b[0m is red \x1b[1;4mbold\x1b[m"),
            "done needle is red bold"
        );
        assert_eq!(body("a\u{9b}2Jb \x1b(Bc \x1bMd"), "a b c d");
        // ESC then something that is no sequence: the text is kept.
        assert_eq!(body("x\x1b\u{e9}t\x1b[\u{e9}t"), "x et et");
        let q = parse_query("needle");
        let s = snippet("\x1b[31mneedle\x1b[0m here", &q, 80);
        assert!(s.contains("«needle»"), "{s:?}");
    }

    #[test]
    fn queries_are_escaped() {
        let q = parse_query(r#"auth* "exact Phrase" NEAR(a b) OR -x ^y col:z"#);
        assert_eq!(
            q.fts().as_deref(),
            Some(
                r#""auth"* AND "exact" AND "phrase" AND "near" AND "a" AND "b" AND "or" AND "x" AND "y" AND "col" AND "z""#
            )
        );
        assert_eq!(parse_query("\"\"\"").fts(), None);
        assert_eq!(parse_query("*").fts(), None);
        assert_eq!(
            parse_query("解析").fts().as_deref(),
            Some("\"解\" AND \"析\"")
        );
        assert_eq!(
            parse_query("019a3B4c").id_prefix.as_deref(),
            Some("019a3b4c")
        );
        let big = "a ".repeat(100_000);
        assert_eq!(parse_query(&big).terms.len(), MAX_TERMS);
    }

    #[test]
    fn snippets_mark_matches() {
        let q = parse_query("parser auth*");
        let s = snippet("The JSON Parser crashed in authentication.\nFixed.", &q, 80);
        assert_eq!(s, "The JSON «Parser» crashed in «authentication». Fixed.");
        let long = format!("{} needle {}", "x ".repeat(200), "y ".repeat(200));
        let s = snippet(&long, &parse_query("needle"), 60);
        assert!(
            s.starts_with('…') && s.ends_with('…') && s.contains("«needle»"),
            "{s}"
        );
        assert!(s.chars().count() <= 64);
    }

    #[test]
    fn camel_case_parts() {
        assert_eq!(camel_parts("idSummaryTree"), ["id", "summary", "tree"]);
        assert_eq!(camel_parts("HTMLParser"), ["html", "parser"]);
        assert_eq!(camel_parts("utf8Decode"), ["utf8", "decode"]);
        assert_eq!(camel_parts("SessionManager"), ["session", "manager"]);
        assert_eq!(camel_parts("ÉcoleNormale"), ["ecole", "normale"]);
        for one in ["session", "HTML", "parse2", "Word", "x"] {
            assert!(camel_parts(one).is_empty(), "{one}");
        }
    }

    #[test]
    fn identifiers_are_indexed_whole_and_by_parts() {
        let t = index_text(
            "fix idSummaryTree in src/core/session-manager.ts via getLeafId, idSummaryTree again",
        );
        // Every distinct word and its parts once, in the order seen; the count is of the
        // text's tokens.
        assert_eq!(
            t.tokens,
            "fix idsummarytree id summary tree in src core session manager ts via getleafid get leaf again"
        );
        assert_eq!(t.count, 12);
        assert_eq!(index_text("plain words only").tokens, "plain words only");
        // Blobs (long, or many case changes) are tokens, not identifiers.
        assert_eq!(
            index_text("aGVsbG8gV29ybGQhIEhlbGxvIFdvcmxk").tokens,
            "agvsbg8gv29ybgqhiehlbgxvifdvcmxk"
        );
        assert_eq!(
            index_text(&format!("x{}", "Ab".repeat(50)))
                .tokens
                .split(' ')
                .count(),
            1
        );
        assert_eq!(index_text(""), IndexText::default());
    }

    #[test]
    fn each_folded_token_is_given_once_and_each_spelling_split_once() {
        // Folded duplicates once; a part already there as a token is not repeated.
        let t = index_text("Session session SESSION id idTree tree idtree IdTree");
        assert_eq!(t.tokens, "session id idtree tree");
        assert_eq!(t.count, 8);
        // A spelling met after its folded form still gives its parts.
        assert_eq!(index_text("idtree idTree").tokens, "idtree id tree");
        assert_eq!(
            index_text("ÉcoleNormale écolenormale").tokens,
            "ecolenormale ecole normale"
        );
        // The sets are reused from one text to the next: nothing leaks between texts, and a
        // huge text (its table let go afterwards) changes nothing for the next ones.
        let many: String = (0..100_000).map(|i| format!("w{i}x ")).collect();
        let big = index_text(&many);
        assert_eq!(big.tokens.split(' ').count(), 100_000);
        assert_eq!(index_text("w1x w2x w1x").tokens, "w1x w2x");
        for i in 0..2000 {
            let a = format!("a{i} b{i} a{i} Ab{i}Cd");
            let want = format!("a{i} b{i} ab{i}cd ab{i} cd");
            assert_eq!(index_text(&a).tokens, want);
        }
    }

    /// The ASCII fast path of the camelCase split gives `indexed_parts`' parts.
    #[test]
    fn ascii_camel_parts_agree() {
        for w in [
            "idSummaryTree",
            "HTMLParser",
            "utf8Decode",
            "getX",
            "ABCdef",
            "aB",
            "Word",
            "x",
            "a1B2C3",
            "XMLHttpRequest",
            "fooBARBaz",
            "aBcDeFgHiJkLmN",
            "AbAbAbAbAbAbAbAbAb",
        ] {
            let got = index_text(w).tokens;
            let mut want = vec![w.to_ascii_lowercase()];
            for p in indexed_parts(w) {
                if !want.contains(&p) {
                    want.push(p);
                }
            }
            assert_eq!(got, want.join(" "), "{w}");
        }
    }

    /// The ASCII fast path of the tokenizer gives what the `char` path gives.
    #[test]
    fn ascii_and_unicode_paths_agree() {
        let t = tokens("Ab1 c\u{e9}D x\x1b[1mY\x1b[0mz 9");
        let got: Vec<(usize, usize, &str)> = t
            .iter()
            .map(|t| (t.start, t.end, t.folded.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (0, 3, "ab1"),
                (4, 8, "ced"),
                (9, 10, "x"),
                (14, 15, "y"),
                (19, 20, "z"),
                (21, 22, "9")
            ]
        );
    }

    /// Terms of several tokens are checked on the text: in a row, or in a row among one
    /// identifier's parts; one-token terms need no check.
    #[test]
    fn phrases_are_checked_on_the_text() {
        // Both checks (tokens given, and tokens read into one buffer) agree on every case.
        let yes = |q: &str, text: &str| {
            let q = parse_query(q);
            let r = q.matches(text, &tokens(text));
            assert_eq!(q.matches_text(text), r, "{q:?} on {text:?}");
            // The fast condition is necessary: never false where the check is true.
            assert!(q.may_match_text(text) || !r, "{q:?} on {text:?}");
            r
        };
        assert!(yes("\"purple walrus\"", "the Purple walrus sat"));
        assert!(!yes("\"purple walrus\"", "walrus purple"));
        assert!(!yes("\"purple walrus\"", "purple and walrus"));
        assert!(yes("\"purple wal\"*", "a purple walrus"));
        assert!(yes(
            "src/core/session-manager.ts",
            "edit src/core/session-manager.ts now"
        ));
        assert!(!yes(
            "src/core/session-manager.ts",
            "src/core/manager-session.ts"
        ));
        assert!(yes("summaryTree", "call idSummaryTree()"));
        assert!(yes("summaryTree", "a summary tree"));
        assert!(!yes("summaryTree", "idSummaryX tree"));
        assert!(yes("\"summary tree\"", "idSummaryTree"));
        // Parts never run from one identifier into the next.
        assert!(!yes("\"summary tree\"", "idSummary treeHelper"));
        assert!(yes("解析", "修复了解析器"));
        assert!(!yes("解析", "析解"));
        assert!(yes("\"ecole normale\"", "l'École Normale"));
        assert!(yes("\"red word\"", "a \x1b[31mred\x1b[0m word"));
        assert!(!yes("\"word red\"", "a \x1b[31mred\x1b[0m word"));
        assert!(yes("\"html parser\" x*", "new HTMLParser(xyz)"));
        assert!(!yes("\"html parser\" q*", "new HTMLParser(xyz)"));
        assert!(!yes("\"a b\"", ""));
        assert!(!parse_query("walrus auth*").needs_check());
        assert!(parse_query("\"a b\"").needs_check());
        assert!(parse_query("summaryTree").needs_check());
    }

    /// `may_match_text` is a necessary condition of `matches_text` (never false where the
    /// check is true) and turns down most non-adjacent candidates without tokenizing them.
    #[test]
    fn the_fast_phrase_condition_never_turns_down_a_match() {
        let words = [
            "the",
            "session",
            "Session",
            "idSummaryTree",
            "summary",
            "tree",
            "HTMLParser",
            "html",
            "parser",
            "a1B2",
            "b2",
            "file",
            "files",
            "x",
            "é",
            "école",
            "\x1b[31mred",
            "red",
        ];
        let seps = [" ", "\n", "/", "-", "_", ".", "", "  ", "\"", "(", "\t"];
        let mut seed = 0x1234_5678_u64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let (mut checked, mut turned_down_fast, mut matched) = (0, 0, 0);
        for _ in 0..4000 {
            let mut text = String::new();
            for _ in 0..next(12) + 1 {
                text.push_str(words[next(words.len())]);
                text.push_str(seps[next(seps.len())]);
            }
            let mut q = String::from("\"");
            for k in 0..next(3) + 1 {
                if k > 0 {
                    q.push(' ');
                }
                q.push_str(words[next(words.len())]);
            }
            q.push('"');
            if next(4) == 0 {
                q.pop();
                q.pop();
                q.push_str("\"*");
            }
            if next(5) == 0 {
                q = words[next(words.len())].to_string();
            }
            let query = parse_query(&q);
            let full = query.matches_text(&text);
            let fast = query.may_match_text(&text);
            assert!(fast || !full, "{q} on {text:?}");
            checked += 1;
            matched += full as usize;
            turned_down_fast += (!fast) as usize;
        }
        assert!(
            matched > 300 && turned_down_fast > 800,
            "{checked} {matched} {turned_down_fast}"
        );
        let q = parse_query("\"update session file\"");
        assert!(!q.may_match_text("update the session of a file"));
        assert!(q.may_match_text("Update session-file"));
        assert!(q.may_match_text("updateSessionFile()"));
    }

    #[test]
    fn camel_case_queries_match_the_whole_or_the_parts() {
        assert_eq!(
            parse_query("summaryTree").fts().as_deref(),
            Some(r#"("summarytree" OR ("summary" AND "tree"))"#)
        );
        assert_eq!(
            parse_query("idSumm* tree").fts().as_deref(),
            Some(r#"("idsumm"* OR ("id" AND "summ"*)) AND "tree""#)
        );
        // Paths and kebab-case: the phrase of their tokens.
        assert_eq!(
            parse_query("src/core/session-manager.ts").fts().as_deref(),
            Some(r#""src" AND "core" AND "session" AND "manager" AND "ts""#)
        );
        let q = parse_query("summary");
        assert_eq!(
            snippet("call idSummaryTree() now", &q, 80),
            "call «idSummaryTree»() now"
        );
        let q = parse_query("summaryTree");
        assert_eq!(
            snippet("id summary tree; idSummaryTree", &q, 80),
            "id «summary» «tree»; «idSummaryTree»"
        );
    }
}
