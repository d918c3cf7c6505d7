//! Tokens, folding, query parsing and snippets of the search engine.
//!
//! The engine gives SQLite FTS5 *pre-tokenized* text: [`index_text`] turns a message text
//! into its folded tokens joined by spaces, and a query term is turned into a quoted FTS5
//! string of the same tokens. Both sides go through the same code, so what matches is
//! decided here:
//! - a token is a run of letters and digits (`char::is_alphanumeric`), folded: lower case,
//!   Latin diacritics removed (`é` → `e`, `ß` → `ss`, see [`super::fold_table`]), combining
//!   marks dropped;
//! - a CJK character (Han, kana, Hangul) is a token of its own, so a CJK query is a phrase
//!   of single characters: found as a substring, whatever the word boundaries;
//! - an identifier is findable whole and by its parts: punctuation already splits paths and
//!   `snake_case` (`src/core/session-manager.ts` is the tokens `src core session manager
//!   ts`, and a query with inner punctuation is the phrase of its tokens), and a camelCase
//!   token's parts (`idSummaryTree`: `id summary tree`) go to a second column, `parts`
//!   ([`IndexText`]), so that phrases of the text never run into them. A query word that
//!   is itself camelCase matches its whole token or the phrase of its parts
//!   (`summaryTree` finds `idSummaryTree`).
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
/// one reused buffer for the folded form.
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
    for (i, c) in text.char_indices() {
        let end = i + c.len_utf8();
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
            cur = Some((i, end));
            flush(&mut cur, &mut buf);
        } else if c.is_alphanumeric() {
            let t = cur.get_or_insert((i, i));
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

/// Separates the parts of two identifiers in the `parts` column, so that a phrase cannot
/// run from one identifier's parts into the next one's. A private-use character: FTS5's
/// `ascii` tokenizer reads it as a token, and [`for_each_token`] never makes one of it, so
/// no query can name it.
pub const PARTS_GAP: char = '\u{E000}';

/// What FTS5 is given for one text: its folded tokens (`body`) and the camelCase parts of
/// the tokens that have some (`parts`), each as tokens separated by spaces.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexText {
    pub body: String,
    pub parts: String,
}

/// Longest token (bytes) whose camelCase parts are indexed: identifiers, not encoded blobs.
pub const MAX_CAMEL_TOKEN: usize = 80;
/// Most parts of one token (more: a blob or a hash, not an identifier).
pub const MAX_CAMEL_PARTS: usize = 8;

/// The text handed to FTS5 for `text` (see [`IndexText`]). The parts of an identifier are
/// given once per text, however often it occurs (code repeats its identifiers: the text is
/// found either way).
pub fn index_text(text: &str) -> IndexText {
    let mut out = IndexText {
        body: String::with_capacity(text.len()),
        parts: String::new(),
    };
    let mut seen: std::collections::HashSet<&str> = std::collections::HashSet::new();
    for_each_token(text, |start, end, folded| {
        if !out.body.is_empty() {
            out.body.push(' ');
        }
        out.body.push_str(folded);
        let word = &text[start..end];
        if word.len() > MAX_CAMEL_TOKEN || !seen.insert(word) {
            return;
        }
        let parts = camel_parts(word);
        if parts.len() > MAX_CAMEL_PARTS {
            return;
        }
        if !parts.is_empty() {
            if !out.parts.is_empty() {
                out.parts.push(' ');
                out.parts.push(PARTS_GAP);
                out.parts.push(' ');
            }
            out.parts.push_str(&parts.join(" "));
        }
    });
    out
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

/// `"a b"` (or `"a b"*`): a quoted FTS5 phrase of tokens.
fn push_phrase(out: &mut String, tokens: &[String], prefix: bool) {
    out.push('"');
    // Tokens hold letters and digits only: no quote to escape. Escaped anyway.
    out.push_str(&tokens.join(" ").replace('"', "\"\""));
    out.push('"');
    if prefix {
        out.push('*');
    }
}

/// A parsed query: terms (all must match) and, when the query is a lone id-like word, that
/// word lower-cased (a session id or id prefix).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    pub terms: Vec<Term>,
    pub id_prefix: Option<String>,
}

impl Query {
    /// The FTS5 MATCH expression: every term a quoted string (`"a b"`, `"auth"*`), a
    /// camelCase word its whole token or its parts (`("summarytree" OR "summary tree")`),
    /// joined by AND. `None` when there is no term.
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
                push_phrase(&mut out, &t.tokens, t.prefix);
            } else {
                out.push('(');
                push_phrase(&mut out, &t.tokens, t.prefix);
                out.push_str(" OR ");
                push_phrase(&mut out, &t.parts, t.prefix);
                out.push(')');
            }
        }
        Some(out)
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
    let toks = tokens(text);
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

    #[test]
    fn folding_and_cjk() {
        assert_eq!(
            index_text("Café CRÈME—naïve straße").body,
            "cafe creme naive strasse"
        );
        assert_eq!(index_text("修复了解析器").body, "修 复 了 解 析 器");
        assert_eq!(index_text("e\u{301}cole").body, "ecole");
    }

    #[test]
    fn escape_sequences_separate_tokens() {
        assert_eq!(
            index_text("done: \x1b[31mneedle\x1b[0m is red \x1b[1;4mbold\x1b[m").body,
            "done needle is red bold"
        );
        assert_eq!(index_text("a\u{9b}2Jb \x1b(Bc \x1bMd").body, "a b c d");
        // ESC then something that is no sequence: the text is kept.
        assert_eq!(index_text("x\x1b\u{e9}t\x1b[\u{e9}t").body, "x et et");
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
                r#""auth"* AND "exact phrase" AND "near a" AND "b" AND "or" AND "x" AND "y" AND "col z""#
            )
        );
        assert_eq!(parse_query("\"\"\"").fts(), None);
        assert_eq!(parse_query("*").fts(), None);
        assert_eq!(parse_query("解析").fts().as_deref(), Some("\"解 析\""));
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
        assert_eq!(
            t.body,
            "fix idsummarytree in src core session manager ts via getleafid idsummarytree again"
        );
        // The parts of two identifiers are kept apart (no phrase runs across them).
        assert_eq!(t.parts, format!("id summary tree {PARTS_GAP} get leaf id"));
        assert_eq!(index_text("plain words only").parts, "");
        // Blobs (long, or many case changes) are tokens, not identifiers.
        assert_eq!(index_text("aGVsbG8gV29ybGQhIEhlbGxvIFdvcmxk").parts, "");
        assert_eq!(index_text(&format!("x{}", "Ab".repeat(50))).parts, "");
    }

    #[test]
    fn camel_case_queries_match_the_whole_or_the_parts() {
        assert_eq!(
            parse_query("summaryTree").fts().as_deref(),
            Some(r#"("summarytree" OR "summary tree")"#)
        );
        assert_eq!(
            parse_query("idSumm* tree").fts().as_deref(),
            Some(r#"("idsumm"* OR "id summ"*) AND "tree""#)
        );
        // Paths and kebab-case: the phrase of their tokens.
        assert_eq!(
            parse_query("src/core/session-manager.ts").fts().as_deref(),
            Some(r#""src core session manager ts""#)
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
