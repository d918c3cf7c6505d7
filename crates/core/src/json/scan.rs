//! A validating JSON scanner with V8 `JSON.parse` acceptance rules.
//!
//! It answers two questions for one line of a session file, without building a tree:
//! would `JSON.parse` accept this text, and where are the raw values of the top-level
//! object's keys. It is iterative (no recursion), so any nesting depth is safe.

use std::borrow::Cow;

/// The kind of a JSON value, judged by its first byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Object,
    Array,
    String,
    Number,
    True,
    False,
    Null,
}

/// One key of the top-level object: the decoded key and the raw text of its value.
#[derive(Debug)]
pub struct Field<'a> {
    pub key: Cow<'a, str>,
    pub raw: &'a str,
}

/// Result of scanning a whole JSON text.
#[derive(Debug)]
pub struct Scanned<'a> {
    pub kind: Kind,
    /// Top-level keys in text order (duplicates kept; use [`Scanned::get`], last wins).
    pub fields: Vec<Field<'a>>,
    /// Direct keys of the object under the key asked for in [`scan_with`].
    pub nested: Vec<Field<'a>>,
}

impl<'a> Scanned<'a> {
    /// Raw value of a top-level key; the last occurrence wins, as in `JSON.parse`.
    pub fn get(&self, key: &str) -> Option<&'a str> {
        self.fields
            .iter()
            .rev()
            .find(|f| f.key == key)
            .map(|f| f.raw)
    }

    /// Raw value of a key of the nested object (see [`scan_with`]); last wins.
    pub fn get_nested(&self, key: &str) -> Option<&'a str> {
        self.nested
            .iter()
            .rev()
            .find(|f| f.key == key)
            .map(|f| f.raw)
    }
}

/// Kind of a raw JSON value by its first byte.
pub fn kind_of(raw: &str) -> Kind {
    match raw.as_bytes().first() {
        Some(b'{') => Kind::Object,
        Some(b'[') => Kind::Array,
        Some(b'"') => Kind::String,
        Some(b't') => Kind::True,
        Some(b'f') => Kind::False,
        Some(b'n') => Kind::Null,
        _ => Kind::Number,
    }
}

/// Position of the first `"`, `\\` or control byte (< 0x20) at or after `i`.
/// Sixteen bytes at a time with SSE2 on x86_64, eight at a time (SWAR) elsewhere; the tail
/// byte by byte. String bodies are most of a session's bytes, so this loop is the scan.
#[inline]
pub(crate) fn find_special(s: &[u8], mut i: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = s.get(i..i + 16) {
        let m = special_mask16(chunk);
        if m != 0 {
            return Some(i + m.trailing_zeros() as usize);
        }
        i += 16;
    }
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    while let Some(chunk) = s.get(i..i + 8) {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(chunk);
        let w = u64::from_le_bytes(bytes);
        let zero = |x: u64| x.wrapping_sub(LO) & !x & HI;
        let m =
            zero(w ^ (LO * 0x22)) | zero(w ^ (LO * 0x5C)) | (w.wrapping_sub(LO * 0x20) & !w & HI);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    while let Some(&b) = s.get(i) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// End (just past the closing quote) of the JSON string whose body starts at `i` (just after
/// the opening quote), and whether it has escapes; `None` if the string is invalid (bad
/// escape, raw control byte) or unterminated.
///
/// Session text is dense with escapes (`\n`, `\"` every ~20–50 bytes of tool output), so on
/// x86_64 the body is classified 64 bytes at a time into quote / backslash / control masks,
/// the escaped bytes of the block come out of one branch-free computation
/// ([`escaped_positions`]), and each escape costs a table lookup. The masks are computed with
/// AVX2 when the CPU has it (checked once), else with SSE2.
#[inline]
pub(crate) fn string_end(s: &[u8], i: usize) -> Option<(usize, bool)> {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: `string_end_avx2` only requires the AVX2 target feature, and the CPU
            // running this code has it (runtime check just above).
            return unsafe { string_end_avx2(s, i) };
        }
        string_end_with::<Sse2>(s, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    string_end_with(s, i)
}

#[cfg(target_arch = "x86_64")]
fn has_avx2() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    // 0: unknown, 1: no, 2: yes (the detection macro caches too; this keeps it one load).
    static AVX2: AtomicU8 = AtomicU8::new(0);
    match AVX2.load(Ordering::Relaxed) {
        0 => {
            let yes = std::arch::is_x86_feature_detected!("avx2");
            AVX2.store(if yes { 2 } else { 1 }, Ordering::Relaxed);
            yes
        }
        v => v == 2,
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn string_end_avx2(s: &[u8], i: usize) -> Option<(usize, bool)> {
    string_end_with::<Avx2>(s, i)
}

/// The three masks of a 64-byte block that the string scan needs.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy)]
struct Masks {
    /// Bit k set when byte k is `"`.
    quote: u64,
    /// Bit k set when byte k is `\\`.
    backslash: u64,
    /// Bit k set when byte k is below 0x20 (never allowed raw in a JSON string).
    control: u64,
    /// Bit k clear when byte k cannot follow a backslash (all set: not computed, every
    /// escape is checked one by one).
    escape_ok: u64,
    /// Bit k set when byte k may be the `u` of a `\uXXXX` escape (whose four hex digits are
    /// checked one by one); all set when not computed.
    unicode: u64,
}

/// How a 64-byte block becomes its [`Masks`]; with `escapes` false the escape classes are
/// left "not computed" (the trusted walk looks only for unescaped quotes).
#[cfg(target_arch = "x86_64")]
trait BlockMask {
    fn masks(block: &[u8], escapes: bool) -> Masks;
}

#[cfg(target_arch = "x86_64")]
struct Sse2;

#[cfg(target_arch = "x86_64")]
impl BlockMask for Sse2 {
    #[inline(always)]
    fn masks(block: &[u8], _escapes: bool) -> Masks {
        string_masks64(block)
    }
}

#[cfg(target_arch = "x86_64")]
struct Avx2;

#[cfg(target_arch = "x86_64")]
impl BlockMask for Avx2 {
    #[inline(always)]
    fn masks(block: &[u8], escapes: bool) -> Masks {
        // SAFETY: only reached from `string_end_avx2` / `trusted_end_avx2`, which run only on
        // CPUs with AVX2.
        unsafe { string_masks64_avx2(block, escapes) }
    }
}

/// The positions escaped by a backslash, given the block's backslash mask and whether the
/// previous block ended inside an escape (`carry`, updated for the next block).
///
/// A run of backslashes escapes every second one of its own bytes and, when its length is
/// odd, the byte after it. Runs are told apart with one addition: adding the mask of run
/// starts at odd positions to the backslash mask carries each such run through to the bit
/// after its end, which flips the parity pattern used for those runs. (The well-known
/// branch-free technique of SIMD JSON parsers; no loop over the backslashes.)
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn escaped_positions(backslash: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    // A backslash escaped from the previous block starts nothing.
    let backslash = backslash & !*carry;
    // Every byte right after a backslash (or escaped from the previous block) is a
    // candidate; which of them are really escaped depends on the run's parity.
    let follows = (backslash << 1) | *carry;
    let odd_starts = backslash & !EVEN & !follows;
    let (sum, overflow) = odd_starts.overflowing_add(backslash);
    *carry = overflow as u64;
    let invert = sum << 1;
    (EVEN ^ invert) & follows
}

/// What may follow a backslash: 1 for a one-byte escape, 2 for `u` (four hex digits
/// follow), 0 for anything else (invalid).
#[cfg(target_arch = "x86_64")]
const ESCAPE_KIND: [u8; 256] = {
    let mut t = [0u8; 256];
    t[b'"' as usize] = 1;
    t[b'\\' as usize] = 1;
    t[b'/' as usize] = 1;
    t[b'b' as usize] = 1;
    t[b'f' as usize] = 1;
    t[b'n' as usize] = 1;
    t[b'r' as usize] = 1;
    t[b't' as usize] = 1;
    t[b'u' as usize] = 2;
    t
};

/// Check the escaped bytes at the positions of `escaped` (relative to `base`).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn escapes_valid(s: &[u8], base: usize, mut escaped: u64) -> bool {
    let mut bad = false;
    while escaped != 0 {
        let at = base + escaped.trailing_zeros() as usize;
        escaped &= escaped - 1;
        match s.get(at).map_or(0, |&c| ESCAPE_KIND[c as usize]) {
            1 => {}
            2 => {
                bad |= !s
                    .get(at + 1..at + 5)
                    .is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
            }
            _ => return false,
        }
    }
    !bad
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn string_end_with<M: BlockMask>(s: &[u8], mut i: usize) -> Option<(usize, bool)> {
    let mut any_escape = false;
    let mut carry = 0u64;
    while let Some(block) = s.get(i..i + 64) {
        let m = M::masks(block, true);
        let escaped = escaped_positions(m.backslash, &mut carry);
        let quotes = m.quote & !escaped;
        // Bits before the closing quote (all of them if the string goes on).
        let before = if quotes == 0 {
            u64::MAX
        } else {
            (quotes & quotes.wrapping_neg()) - 1
        };
        let escapes = escaped & before;
        if m.control & before != 0
            || escapes & !m.escape_ok != 0
            || !escapes_valid(s, i, escapes & m.unicode)
        {
            return None;
        }
        any_escape |= (m.backslash & before) != 0;
        if quotes != 0 {
            return Some((i + quotes.trailing_zeros() as usize + 1, any_escape));
        }
        i += 64;
    }
    if carry != 0 {
        // The previous block ended with an escaping backslash: its escape is checked here.
        i = escape_end(s, i - 1)?;
    }
    string_tail(s, i, any_escape)
}

/// End (just past the closing quote) of a string body starting at `i` in text already
/// validated (or `s.len()` if unterminated): only unescaped quotes are looked for. Walks
/// over validated lines (content blocks re-read after the validating pass) use it.
pub(crate) fn string_end_trusted(s: &[u8], i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        if has_avx2() {
            // SAFETY: `trusted_end_avx2` only requires the AVX2 target feature, and the CPU
            // running this code has it (runtime check just above).
            return unsafe { trusted_end_avx2(s, i) };
        }
        trusted_end_with::<Sse2>(s, i)
    }
    #[cfg(not(target_arch = "x86_64"))]
    trusted_tail(s, i)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn trusted_end_avx2(s: &[u8], i: usize) -> usize {
    trusted_end_with::<Avx2>(s, i)
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn trusted_end_with<M: BlockMask>(s: &[u8], mut i: usize) -> usize {
    let mut carry = 0u64;
    while let Some(block) = s.get(i..i + 64) {
        let m = M::masks(block, false);
        let quotes = m.quote & !escaped_positions(m.backslash, &mut carry);
        if quotes != 0 {
            return i + quotes.trailing_zeros() as usize + 1;
        }
        i += 64;
    }
    // The previous block's last backslash escapes the first byte here.
    trusted_tail(s, i + carry as usize)
}

fn trusted_tail(s: &[u8], mut i: usize) -> usize {
    while let Some(&b) = s.get(i) {
        match b {
            b'"' => return i + 1,
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
    s.len()
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn string_end_with(s: &[u8], i: usize) -> Option<(usize, bool)> {
    string_tail(s, i, false)
}

/// The rest of a string body from `i`, a byte-search at a time (the last < 64 bytes on
/// x86_64; every byte elsewhere).
#[inline(always)]
fn string_tail(s: &[u8], mut i: usize, mut escaped: bool) -> Option<(usize, bool)> {
    loop {
        i = find_special(s, i)?;
        match s[i] {
            b'"' => return Some((i + 1, escaped)),
            b'\\' => {
                escaped = true;
                i = escape_end(s, i)?;
            }
            _ => return None,
        }
    }
}

/// End of the escape sequence whose backslash is at `i`, if it is a valid JSON escape.
#[inline(always)]
fn escape_end(s: &[u8], i: usize) -> Option<usize> {
    match *s.get(i + 1)? {
        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => Some(i + 2),
        b'u' => {
            let hex = s.get(i + 2..i + 6)?;
            hex.iter().all(u8::is_ascii_hexdigit).then_some(i + 6)
        }
        _ => None,
    }
}

/// The [`Masks`] of a 64-byte block with SSE2 (part of the x86_64 baseline).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn string_masks64(block: &[u8]) -> Masks {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_set1_epi8,
    };
    let none = Masks {
        quote: 0,
        backslash: 0,
        control: 0,
        escape_ok: u64::MAX,
        unicode: u64::MAX,
    };
    if block.len() < 64 {
        return none;
    }
    // SAFETY: `block` has at least 64 readable bytes (checked above), and each unaligned
    // load reads 16 of them at offsets 0, 16, 32 and 48, inside the slice. The other
    // intrinsics compute on registers only. All are SSE2, part of the x86_64 baseline.
    unsafe {
        let p = block.as_ptr();
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        let low = _mm_set1_epi8(0x1F);
        let mut m = none;
        for k in 0..4 {
            let v: __m128i = _mm_loadu_si128(p.add(16 * k).cast());
            let shift = 16 * k as u32;
            m.quote |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) as u32 as u64) << shift;
            m.backslash |= (_mm_movemask_epi8(_mm_cmpeq_epi8(v, backslash)) as u32 as u64) << shift;
            // Unsigned b <= 0x1F  <=>  max(b, 0x1F) == 0x1F.
            m.control |= (_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_max_epu8(v, low), low)) as u32
                as u64)
                << shift;
        }
        m
    }
}

/// [`string_masks64`] with two 32-byte AVX2 loads.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
fn string_masks64_avx2(block: &[u8], escapes: bool) -> Masks {
    use std::arch::x86_64::{
        __m256i, _mm256_and_si256, _mm256_cmpeq_epi8, _mm256_cmpgt_epi8, _mm256_loadu_si256,
        _mm256_max_epu8, _mm256_movemask_epi8, _mm256_set1_epi8, _mm256_setr_epi8,
        _mm256_setzero_si256, _mm256_shuffle_epi8, _mm256_srli_epi16,
    };
    let mut m = Masks {
        quote: 0,
        backslash: 0,
        control: 0,
        escape_ok: 0,
        unicode: 0,
    };
    if block.len() < 64 {
        return m;
    }
    // Escape characters by nibble lookup (one `vpshufb` per nibble, tables repeated per
    // 128-bit lane): a byte may follow a backslash when the bits of its low and high
    // nibbles meet. Bit 0: `"` `/` (0x2_); bit 1: `\\` (0x5_); bit 2: `b` `f` `n` (0x6_);
    // bit 3: `r` `t` (0x7_); bit 4: `u` (0x7_).
    const LO: [i8; 16] = [
        0, 0, 0b1101, 0, 0b1000, 0b1_0000, 0b100, 0, 0, 0, 0, 0, 0b10, 0, 0b100, 0b1,
    ];
    const HI: [i8; 16] = [
        0, 0, 0b1, 0, 0, 0b10, 0b100, 0b1_1000, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let table = |t: [i8; 16]| {
        _mm256_setr_epi8(
            t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12], t[13],
            t[14], t[15], t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11],
            t[12], t[13], t[14], t[15],
        )
    };
    let (lo_table, hi_table) = (table(LO), table(HI));
    let nibble = _mm256_set1_epi8(0x0F);
    let u_bit = _mm256_set1_epi8(0b1_0000);
    let zero = _mm256_setzero_si256();
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let low = _mm256_set1_epi8(0x1F);
    // SAFETY: `block` has at least 64 readable bytes (checked above); the two unaligned
    // loads read 32 bytes each at offsets 0 and 32, inside the slice.
    let halves: [__m256i; 2] = unsafe {
        let p = block.as_ptr();
        [
            _mm256_loadu_si256(p.cast()),
            _mm256_loadu_si256(p.add(32).cast()),
        ]
    };
    for (k, v) in halves.into_iter().enumerate() {
        let shift = 32 * k as u32;
        m.quote |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, quote)) as u32 as u64) << shift;
        m.backslash |=
            (_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, backslash)) as u32 as u64) << shift;
        m.control |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_max_epu8(v, low), low)) as u32
            as u64)
            << shift;
        if !escapes {
            m.escape_ok = u64::MAX;
            m.unicode = u64::MAX;
            continue;
        }
        let class = _mm256_and_si256(
            _mm256_shuffle_epi8(lo_table, _mm256_and_si256(v, nibble)),
            _mm256_shuffle_epi8(hi_table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble)),
        );
        m.escape_ok |=
            (_mm256_movemask_epi8(_mm256_cmpgt_epi8(class, zero)) as u32 as u64) << shift;
        m.unicode |= (_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_and_si256(class, u_bit), u_bit))
            as u32 as u64)
            << shift;
    }
    m
}

/// Bit k set when byte k of the 16-byte `chunk` is `"`, `\\` or below 0x20.
#[cfg(target_arch = "x86_64")]
#[inline]
fn special_mask16(chunk: &[u8]) -> u32 {
    use std::arch::x86_64::{
        __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_max_epu8, _mm_movemask_epi8, _mm_or_si128,
        _mm_set1_epi8,
    };
    debug_assert_eq!(chunk.len(), 16);
    if chunk.len() < 16 {
        return 0;
    }
    // SAFETY: `chunk` has at least 16 readable bytes (checked above; callers pass exactly
    // 16) and `_mm_loadu_si128` has no alignment requirement, so the load stays inside the
    // slice. The other intrinsics only compute on register values. All of them are SSE2,
    // which is part of the x86_64 baseline: the instructions exist on every CPU this code
    // is compiled for.
    unsafe {
        let v: __m128i = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // Unsigned b <= 0x1F  <=>  max(b, 0x1F) == 0x1F.
        let low = _mm_set1_epi8(0x1F);
        let control = _mm_cmpeq_epi8(_mm_max_epu8(v, low), low);
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(quote, backslash), control)) as u32
    }
}

#[inline]
fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
    /// The text is known to be valid JSON (see [`scan_trusted`]): string values are skipped
    /// by their closing quote without validating their content.
    trusted: bool,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn skip_ws(&mut self) {
        while self.i < self.s.len() && is_ws(self.s[self.i]) {
            self.i += 1;
        }
    }
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }

    /// Scan a string starting at the opening quote; returns whether it contains escapes.
    fn string(&mut self) -> Option<bool> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        let (end, escaped) = string_end(self.s, self.i + 1)?;
        self.i = end;
        Some(escaped)
    }

    /// Skip a string value (its escape flag is not needed).
    #[inline]
    fn value_string(&mut self) -> Option<()> {
        if !self.trusted {
            return self.string().map(|_| ());
        }
        let end = string_end_trusted(self.s, self.i + 1);
        // Unterminated (only possible if the trust was misplaced): reject, never guess.
        if end <= self.i + 1 || self.s.get(end - 1) != Some(&b'"') {
            return None;
        }
        self.i = end;
        Some(())
    }

    fn number(&mut self) -> Option<()> {
        let s = self.s;
        if s.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match s.get(self.i) {
            Some(b'0') => self.i += 1,
            Some(b'1'..=b'9') => {
                while matches!(s.get(self.i), Some(b'0'..=b'9')) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        if s.get(self.i) == Some(&b'.') {
            self.i += 1;
            if !matches!(s.get(self.i), Some(b'0'..=b'9')) {
                return None;
            }
            while matches!(s.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        if matches!(s.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(s.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if !matches!(s.get(self.i), Some(b'0'..=b'9')) {
                return None;
            }
            while matches!(s.get(self.i), Some(b'0'..=b'9')) {
                self.i += 1;
            }
        }
        Some(())
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.s.get(self.i..self.i + word.len())? == word {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }
}

/// Scan `text` as `JSON.parse` would. `None` means `JSON.parse` throws.
pub fn scan(text: &str) -> Option<Scanned<'_>> {
    scan_with(text, None)
}

/// Like [`scan`], and also records the direct fields of the object under the top-level key
/// `nested` (e.g. an entry's `message`) in [`Scanned::nested`], in the same single pass.
pub fn scan_with<'a>(text: &'a str, nested: Option<&str>) -> Option<Scanned<'a>> {
    scan_impl(text, nested, false)
}

/// [`scan_with`] for text known to be valid JSON, such as the output of `JSON.stringify`
/// (the lines our own `append*` methods write): the structure is walked the same way, but
/// string values are skipped by their closing quote, without validating escapes or control
/// bytes. On text that is not valid JSON the answer may be wrong (or `None`), never a panic.
pub fn scan_trusted<'a>(text: &'a str, nested: Option<&str>) -> Option<Scanned<'a>> {
    scan_impl(text, nested, true)
}

fn scan_impl<'a>(text: &'a str, nested: Option<&str>, trusted: bool) -> Option<Scanned<'a>> {
    let bytes = text.as_bytes();
    let mut c = Cursor {
        s: bytes,
        i: 0,
        trusted,
    };
    // Stack of open containers: true = object, false = array. Sized for a session entry
    // up front: grown from empty, these vectors cost several reallocations per line, which
    // showed as ~10% of a 100 MB open in malloc/realloc/free.
    let mut stack: Vec<bool> = Vec::with_capacity(32);
    let mut fields: Vec<Field<'_>> = Vec::with_capacity(16);
    let mut nested_fields: Vec<Field<'_>> = Vec::with_capacity(16);
    let mut top_kind: Option<Kind> = None;
    // Pending key (top level / nested object) and the start of its value.
    let mut pending_key: Option<(Cow<'_, str>, usize)> = None;
    let mut pending_nested: Option<(Cow<'_, str>, usize)> = None;
    let mut in_nested = false;

    c.skip_ws();
    // State machine: expecting a value.
    'value: loop {
        c.skip_ws();
        let b = c.peek()?;
        let kind = kind_of_byte(b)?;
        if top_kind.is_none() {
            top_kind = Some(kind);
        }
        match b {
            b'{' => {
                if stack.len() == 1
                    && nested.is_some()
                    && pending_key.as_ref().map(|(k, _)| k.as_ref()) == nested
                {
                    // A later duplicate key replaces the earlier object, as in JSON.parse.
                    in_nested = true;
                    nested_fields.clear();
                }
                c.i += 1;
                c.skip_ws();
                if c.peek()? == b'}' {
                    c.i += 1;
                    if stack.len() == 1 {
                        in_nested = false;
                    }
                } else {
                    stack.push(true);
                    if stack.len() == 1 {
                        read_key(&mut c, text, true, &mut pending_key)?;
                    } else {
                        read_key(
                            &mut c,
                            text,
                            stack.len() == 2 && in_nested,
                            &mut pending_nested,
                        )?;
                    }
                    continue 'value;
                }
            }
            b'[' => {
                c.i += 1;
                c.skip_ws();
                if c.peek()? == b']' {
                    c.i += 1;
                } else {
                    stack.push(false);
                    continue 'value;
                }
            }
            b'"' => c.value_string()?,
            b't' => c.literal(b"true")?,
            b'f' => c.literal(b"false")?,
            b'n' => c.literal(b"null")?,
            _ => c.number()?,
        }
        // A value ended; record it, then close containers / handle separators.
        loop {
            if stack.len() == 1 && stack[0] {
                if let Some((key, vstart)) = pending_key.take() {
                    fields.push(Field {
                        key,
                        raw: &text[vstart..c.i],
                    });
                }
            } else if stack.len() == 2
                && in_nested
                && stack[1]
                && let Some((key, vstart)) = pending_nested.take()
            {
                nested_fields.push(Field {
                    key,
                    raw: &text[vstart..c.i],
                });
            }
            c.skip_ws();
            let Some(&is_obj) = stack.last() else {
                // Top-level value complete: only whitespace may follow.
                return if c.i == bytes.len() {
                    Some(Scanned {
                        kind: top_kind?,
                        fields,
                        nested: nested_fields,
                    })
                } else {
                    None
                };
            };
            match c.peek()? {
                b',' => {
                    c.i += 1;
                    if is_obj {
                        if stack.len() == 1 {
                            read_key(&mut c, text, true, &mut pending_key)?;
                        } else {
                            let rec = stack.len() == 2 && in_nested;
                            read_key(&mut c, text, rec, &mut pending_nested)?;
                        }
                    }
                    continue 'value;
                }
                b'}' if is_obj => {
                    c.i += 1;
                    stack.pop();
                    if stack.len() == 1 {
                        in_nested = false;
                    }
                }
                b']' if !is_obj => {
                    c.i += 1;
                    stack.pop();
                }
                _ => return None,
            }
        }
    }
}

fn kind_of_byte(b: u8) -> Option<Kind> {
    Some(match b {
        b'{' => Kind::Object,
        b'[' => Kind::Array,
        b'"' => Kind::String,
        b't' => Kind::True,
        b'f' => Kind::False,
        b'n' => Kind::Null,
        b'-' | b'0'..=b'9' => Kind::Number,
        _ => return None,
    })
}

/// Read `"key" :` and remember it (with its value start) when it is a top-level key.
fn read_key<'a>(
    c: &mut Cursor<'a>,
    text: &'a str,
    top: bool,
    pending: &mut Option<(Cow<'a, str>, usize)>,
) -> Option<()> {
    c.skip_ws();
    if c.peek()? != b'"' {
        return None;
    }
    let kstart = c.i;
    let escaped = c.string()?;
    let kend = c.i;
    c.skip_ws();
    if c.peek()? != b':' {
        return None;
    }
    c.i += 1;
    c.skip_ws();
    if top {
        let raw = &text[kstart..kend];
        let key = if escaped {
            Cow::Owned(decode_string_body(&raw[1..raw.len() - 1]))
        } else {
            Cow::Borrowed(&raw[1..raw.len() - 1])
        };
        *pending = Some((key, c.i));
    }
    Some(())
}

/// Decode a raw JSON string literal (with quotes). Lone surrogates become U+FFFD.
/// Returns `None` if `raw` is not a string literal.
pub fn decode_str(raw: &str) -> Option<String> {
    if raw.len() < 2 || !raw.starts_with('"') || !raw.ends_with('"') {
        return None;
    }
    Some(decode_string_body(&raw[1..raw.len() - 1]))
}

/// Decode the inside of a validated JSON string literal.
fn decode_string_body(body: &str) -> String {
    if !body.contains('\\') {
        return body.to_string();
    }
    let mut out = String::with_capacity(body.len());
    let b = body.as_bytes();
    let mut i = 0;
    let mut seg = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        out.push_str(&body[seg..i]);
        let esc = b.get(i + 1).copied().unwrap_or(b'\\');
        i += 2;
        match esc {
            b'b' => out.push('\u{8}'),
            b'f' => out.push('\u{c}'),
            b'n' => out.push('\n'),
            b'r' => out.push('\r'),
            b't' => out.push('\t'),
            b'u' => {
                let unit = hex4(b, i);
                // Four hex digits (ASCII) are skipped only when they are there: on text that
                // was not validated, a bad escape must not leave `i` inside a character.
                if unit.is_some() {
                    i += 4;
                }
                match unit {
                    Some(hi @ 0xD800..=0xDBFF) => {
                        // A pair only if a low surrogate escape follows immediately.
                        let lo = if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'u') {
                            hex4(b, i + 2).filter(|lo| (0xDC00..=0xDFFF).contains(lo))
                        } else {
                            None
                        };
                        if let Some(lo) = lo {
                            i += 6;
                            let cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                            out.push(char::from_u32(cp).unwrap_or('\u{FFFD}'));
                        } else {
                            out.push('\u{FFFD}');
                        }
                    }
                    Some(u) => out.push(char::from_u32(u).unwrap_or('\u{FFFD}')),
                    None => out.push('\u{FFFD}'),
                }
            }
            other if other.is_ascii() => out.push(other as char),
            _ => {
                // `\` before a non-ASCII character (never in validated text): the character
                // is kept, starting the next segment at its first byte.
                out.push('\u{FFFD}');
                i -= 1;
            }
        }
        seg = i.min(b.len());
    }
    if seg < b.len() {
        out.push_str(&body[seg..]);
    }
    out
}

fn hex4(b: &[u8], i: usize) -> Option<u32> {
    let s = b.get(i..i + 4)?;
    let s = std::str::from_utf8(s).ok()?;
    u32::from_str_radix(s, 16).ok()
}

/// Raw value of a top-level key inside an (already validated) object text.
pub fn field<'a>(raw_object: &'a str, key: &str) -> Option<&'a str> {
    scan(raw_object)?.get(key)
}

/// JavaScript truthiness of a raw JSON value.
pub fn is_truthy(raw: &str) -> bool {
    match kind_of(raw) {
        Kind::Object | Kind::Array | Kind::True => true,
        Kind::False | Kind::Null => false,
        Kind::String => raw.len() > 2,
        Kind::Number => raw
            .parse::<f64>()
            .map(|n| n != 0.0 && !n.is_nan())
            .unwrap_or(true),
    }
}

/// The raw items of a raw JSON array already validated by [`scan`] or [`scan_with`] (an
/// array value taken from a scanned line), in order; `None` if `raw` is not an array. On
/// text that is not valid JSON the answer may be wrong (or `None`), never a panic.
pub fn array_items(raw: &str) -> Option<Vec<&str>> {
    let s = raw.as_bytes();
    let mut i = 0;
    while i < s.len() && is_ws(s[i]) {
        i += 1;
    }
    if s.get(i) != Some(&b'[') {
        return None;
    }
    i += 1;
    let mut out = Vec::new();
    loop {
        while i < s.len() && is_ws(s[i]) {
            i += 1;
        }
        match s.get(i)? {
            b']' if out.is_empty() => return Some(out),
            _ => {}
        }
        let start = i;
        i = value_end_trusted(s, i)?;
        out.push(raw.get(start..i)?);
        while i < s.len() && is_ws(s[i]) {
            i += 1;
        }
        match s.get(i)? {
            b',' => i += 1,
            b']' => return Some(out),
            _ => return None,
        }
    }
}

/// The end of the valid JSON value starting at `i` (no whitespace before it): containers
/// by their depth, strings by their closing quote, scalars by the next delimiter.
fn value_end_trusted(s: &[u8], mut i: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match *s.get(i)? {
            b'"' => {
                let end = string_end_trusted(s, i + 1);
                if end <= i + 1 || s.get(end - 1) != Some(&b'"') {
                    return None;
                }
                i = end;
            }
            b'{' | b'[' => {
                depth += 1;
                i += 1;
            }
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                i += 1;
            }
            b if depth == 0 => {
                // A scalar at the top: up to the next delimiter.
                if b == b',' || b == b':' {
                    return None;
                }
                while i < s.len() && !matches!(s[i], b',' | b']' | b'}') && !is_ws(s[i]) {
                    i += 1;
                }
                return Some(i);
            }
            _ => i += 1,
        }
        if depth == 0 {
            return Some(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The block-mask string scan (AVX2 and SSE2) agrees with the byte-search one on strings
    /// whose specials, escapes and `\\u` sequences fall on and across 64-byte boundaries.
    #[test]
    fn string_end_block_paths_agree_with_the_byte_search() {
        let pieces: [&[u8]; 17] = [
            b"\\/",
            b"\\t",
            b"\\e",
            b"\\U",
            b"\\",
            b"a",
            b"bcdefgh",
            b"\\n",
            b"\\\"",
            b"\\\\",
            b"\\u00e9",
            b"\\u12",
            b"\\x",
            b"\x01",
            b"\"",
            b"\xc3\xa9",
            b"                              ",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut valid, mut invalid) = (0, 0);
        for _ in 0..200_000 {
            let mut body = Vec::new();
            let len = (next() % 60) as usize;
            for _ in 0..len {
                // Mostly plain runs, so strings reach several blocks.
                let r = next() % 45;
                let p = if r < 28 {
                    pieces[(r % 2) as usize + 15]
                } else {
                    pieces[(r - 28) as usize]
                };
                body.extend_from_slice(p);
            }
            if next() % 4 != 0 {
                body.push(b'"');
            }
            let start = (next() % 3) as usize;
            let mut s = vec![b' '; start];
            s.extend_from_slice(&body);
            let want = string_tail(&s, start, false);
            if want.is_some_and(|(end, _)| end > start + 64) {
                valid += 1;
            } else if want.is_none() {
                invalid += 1;
            }
            #[cfg(target_arch = "x86_64")]
            {
                assert_eq!(
                    string_end_with::<Sse2>(&s, start),
                    want,
                    "sse2 {:?}",
                    String::from_utf8_lossy(&s)
                );
                if has_avx2() {
                    // SAFETY: the CPU has AVX2 (checked just above).
                    let got = unsafe { string_end_avx2(&s, start) };
                    assert_eq!(got, want, "avx2 {:?}", String::from_utf8_lossy(&s));
                }
            }
            assert_eq!(string_end(&s, start), want);
            if let Some((end, _)) = want {
                assert_eq!(string_end_trusted(&s, start), end, "trusted");
            }
        }
        // Both outcomes, with valid strings longer than a block, are well represented.
        assert!(
            valid > 1000 && invalid > 1000,
            "valid {valid}, invalid {invalid}"
        );
    }

    /// xorshift64: deterministic random for the property tests below.
    fn rng(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// A random JSON string literal as `JSON.stringify` writes them: escapes (`\n`, `\"`,
    /// `\\`, `\u001b`, lone-surrogate `\udXXX`), multi-byte characters, long plain runs.
    fn json_string(next: &mut impl FnMut() -> u64, out: &mut String) {
        const PIECES: [&str; 10] = [
            "\\n", "\\\"", "\\\\", "\\u001b", "\\ud83d", "é", "🙂", "{[,:]}", "\\t", "/",
        ];
        out.push('"');
        for _ in 0..next() % 12 {
            if next().is_multiple_of(3) {
                out.push_str(PIECES[(next() % PIECES.len() as u64) as usize]);
            } else {
                let n = (next() % 90) as usize;
                out.extend(std::iter::repeat_n('x', n));
            }
        }
        out.push('"');
    }

    /// A random entry-like JSON object (nested `message` object, arrays, numbers, literals).
    fn json_value(next: &mut impl FnMut() -> u64, depth: u32, out: &mut String) {
        let pick = if depth > 4 { next() % 4 } else { next() % 7 };
        match pick {
            0 => json_string(next, out),
            1 => out.push_str(["0", "-1.5e3", "42", "3.25"][(next() % 4) as usize]),
            2 => out.push_str(["true", "false", "null"][(next() % 3) as usize]),
            3 => out.push_str("\"plain\""),
            4 | 5 => {
                out.push('{');
                for k in 0..next() % 6 {
                    if k > 0 {
                        out.push(',');
                    }
                    let keys = [
                        "\"role\"",
                        "\"content\"",
                        "\"model\"",
                        "\"x\\\"y\"",
                        "\"message\"",
                    ];
                    out.push_str(keys[(next() % keys.len() as u64) as usize]);
                    out.push(':');
                    json_value(next, depth + 1, out);
                }
                out.push('}');
            }
            _ => {
                out.push('[');
                for k in 0..next() % 5 {
                    if k > 0 {
                        out.push(',');
                    }
                    json_value(next, depth + 1, out);
                }
                out.push(']');
            }
        }
    }

    fn entry_line(next: &mut impl FnMut() -> u64) -> String {
        let mut s = String::from(r#"{"type":"message","id":"a1b2c3d4","parentId":null,"message":"#);
        json_value(next, 1, &mut s);
        s.push_str(r#","timestamp":"2025-01-01T00:00:00.000Z""#);
        if next().is_multiple_of(2) {
            s.push_str(r#","extra":"#);
            json_value(next, 1, &mut s);
        }
        s.push('}');
        s
    }

    fn same_scan(a: &Scanned<'_>, b: &Scanned<'_>) -> bool {
        let pairs = |f: &[Field<'_>]| -> Vec<(String, String)> {
            f.iter()
                .map(|x| (x.key.to_string(), x.raw.to_string()))
                .collect()
        };
        a.kind == b.kind
            && pairs(&a.fields) == pairs(&b.fields)
            && pairs(&a.nested) == pairs(&b.nested)
    }

    /// On valid JSON (what `JSON.stringify` produces) the trusted scan finds exactly what the
    /// validating one finds.
    #[test]
    fn trusted_scan_agrees_with_the_validating_scan_on_valid_json() {
        let mut next = rng(0x2545_f491_4f6c_dd1d);
        for _ in 0..20_000 {
            let line = entry_line(&mut next);
            let v = scan_with(&line, Some("message")).expect("generated lines are valid JSON");
            let t = scan_trusted(&line, Some("message")).expect("trusted scan of valid JSON");
            assert!(same_scan(&v, &t), "{line}");
        }
    }

    /// On text that is not valid JSON (the trust misplaced) the trusted scan may answer
    /// differently, but never panics, and neither does decoding what it found; whenever the
    /// mutated text is still valid, both scans agree.
    #[test]
    fn trusted_scan_of_invalid_text_never_panics() {
        let mut next = rng(0x9e37_79b9_7f4a_7c15);
        let junk = [
            "\\", "\"", "é", "\\u12", "\\é", "{", "]", ",", ":", "\u{1}", "\\u",
        ];
        let (mut agreed, mut rejected) = (0, 0);
        for _ in 0..20_000 {
            let mut line = entry_line(&mut next);
            for _ in 0..1 + next() % 3 {
                let mut at = (next() as usize) % (line.len() + 1);
                while !line.is_char_boundary(at) {
                    at -= 1;
                }
                if next().is_multiple_of(4) {
                    line.truncate(at);
                } else {
                    line.insert_str(at, junk[(next() % junk.len() as u64) as usize]);
                }
            }
            let t = scan_trusted(&line, Some("message"));
            if let Some(t) = &t {
                for f in t.fields.iter().chain(&t.nested) {
                    let _ = decode_str(f.raw);
                }
            }
            match (scan_with(&line, Some("message")), t) {
                (Some(v), Some(t)) => {
                    assert!(same_scan(&v, &t), "{line}");
                    agreed += 1;
                }
                (Some(_), None) => panic!("trusted scan rejected valid text: {line}"),
                (None, _) => rejected += 1,
            }
        }
        assert!(
            agreed > 100 && rejected > 1000,
            "agreed {agreed}, rejected {rejected}"
        );
    }

    /// Decoding a string body never panics, whatever follows a backslash.
    #[test]
    fn decoding_bad_escapes_does_not_panic() {
        for body in [
            "\\é",
            "a\\u12é",
            "\\u",
            "\\",
            "x\\ud83d\\u",
            "\\u+1é",
            "é\\\u{1F642}",
        ] {
            let _ = decode_string_body(body);
        }
        assert_eq!(decode_string_body("a\\é"), "a\u{FFFD}é");
        assert_eq!(decode_string_body("\\u12é"), "\u{FFFD}12é");
        assert_eq!(decode_string_body("\\u00e9\\n"), "é\n");
    }

    fn ok(s: &str) -> bool {
        scan(s).is_some()
    }

    #[test]
    fn accepts_what_json_parse_accepts() {
        for s in [
            "{}",
            "[]",
            " {\"a\":1} \r",
            "1",
            "-0",
            "1e400",
            "0.5e-3",
            "\"x\"",
            "null",
            "[1,[2,[3]],{\"a\":{}}]",
            "{\"a\":\"\\ud83d\"}",
            "{\"a\":1,\"a\":2}",
            "\"\\u00e9\\/\"",
        ] {
            assert!(ok(s), "{s}");
        }
    }

    #[test]
    fn rejects_what_json_parse_rejects() {
        for s in [
            "",
            " ",
            "{",
            "{\"a\":1,}",
            "[1,]",
            "01",
            "+1",
            ".5",
            "1.",
            "1e",
            "NaN",
            "'a'",
            "\"a\tb\"",
            "\"\\u12\"",
            "\u{feff}{}",
            "{} x",
            "{\"a\" 1}",
            "{a:1}",
            "\"\\x\"",
            "tru",
            "[1 2]",
            "{\"a\":1]",
        ] {
            assert!(!ok(s), "{s:?}");
        }
    }

    #[test]
    fn top_level_fields_last_wins() {
        let s = scan("{\"type\":\"message\",\"id\":\"a\",\"m\":{\"id\":\"inner\"},\"id\":\"b\"}")
            .expect("valid");
        assert_eq!(s.kind, Kind::Object);
        assert_eq!(s.get("id"), Some("\"b\""));
        assert_eq!(s.get("m"), Some("{\"id\":\"inner\"}"));
        assert_eq!(s.get("type"), Some("\"message\""));
    }

    #[test]
    fn nested_fields_in_one_pass() {
        let t = r#"{"type":"message","message":{"role":"user","content":[{"role":"x"}],"model":"m"},"z":{"role":"no"}}"#;
        let s = scan_with(t, Some("message")).expect("valid");
        assert_eq!(s.get_nested("role"), Some("\"user\""));
        assert_eq!(s.get_nested("model"), Some("\"m\""));
        assert_eq!(s.nested.len(), 3);
        let s = scan_with(
            r#"{"message":{"role":"a"},"message":{"x":1}}"#,
            Some("message"),
        )
        .expect("valid");
        assert_eq!(s.get_nested("role"), None);
        let s = scan_with(r#"{"message":{},"b":{"role":"a"}}"#, Some("message")).expect("valid");
        assert!(s.nested.is_empty());
    }

    #[test]
    fn swar_finds_specials_anywhere() {
        for pad in 0..20 {
            let body = "a".repeat(pad);
            assert!(ok(&format!("\"{body}\"")));
            assert!(!ok(&format!("\"{body}\u{1}\"")));
            assert!(ok(&format!("\"{body}\\n{body}é\"")));
        }
    }

    #[test]
    fn escaped_keys_are_decoded() {
        let s = scan("{\"\\u0069d\":\"x\"}").expect("valid");
        assert_eq!(s.get("id"), Some("\"x\""));
    }

    #[test]
    fn decodes_strings_with_lone_surrogates() {
        assert_eq!(decode_str("\"a\\ud83d\"").as_deref(), Some("a\u{FFFD}"));
        assert_eq!(decode_str("\"\\ud83d\\ude00\"").as_deref(), Some("😀"));
        assert_eq!(decode_str("\"\\n\\\"\"").as_deref(), Some("\n\""));
    }

    #[test]
    fn deep_nesting_does_not_overflow() {
        let deep = "[".repeat(1_000_000) + &"]".repeat(1_000_000);
        assert!(ok(&deep));
        let bad = "[".repeat(1_000_000);
        assert!(!ok(&bad));
    }

    #[test]
    fn truthiness() {
        assert!(is_truthy("\"a\""));
        assert!(!is_truthy("\"\""));
        assert!(!is_truthy("0"));
        assert!(!is_truthy("-0.0"));
        assert!(is_truthy("{}"));
        assert!(!is_truthy("null"));
    }
}
