//! Differential test: `canonicalize(t)` must equal node's
//! `JSON.stringify(JSON.parse(t))` (or both must reject `t`).

use pi_session_core::json::canonical;
use pi_session_core::json::value::{canonicalize, parse};
use std::process::Command;

/// xorshift64* PRNG (deterministic, seeded).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

const KEYS: &[&str] = &[
    "a",
    "b",
    "id",
    "type",
    "parentId",
    "10",
    "2",
    "0",
    "1",
    "01",
    "-1",
    "00",
    "1.0",
    "4294967295",
    "4294967294",
    "4294967296",
    "9007199254740993",
    "__proto__",
    "constructor",
    "",
    " ",
    "é",
    "😀",
    "\\ud83d",
    "\\u0031",
    "\\u0030\\u0031",
    "a\\nb",
    "toString",
    "length",
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "0.1",
    "1e21",
    "1e20",
    "1e-7",
    "1e-6",
    "123456789012345680000",
    "123456789012345678901234567890",
    "5e-324",
    "2e-324",
    "1e400",
    "-1e400",
    "1.7976931348623157e308",
    "9007199254740993",
    "9007199254740992",
    "4294967295",
    "0.30000000000000004",
    "1E+2",
    "1e-0",
    "-0.0",
    "0e0",
    "0.000001",
    "0.0000001",
    "1.5",
    "100",
    "999999999999999",
    "9999999999999999",
    "1234567.125",
    "-2.5e-5",
    "3.14159",
    "1e308",
    "1e309",
    "12e-1",
    "0.5e1",
];

const STRING_PIECES: &[&str] = &[
    "abc",
    " ",
    "hello world",
    "\\n",
    "\\t",
    "\\r",
    "\\b",
    "\\f",
    "\\/",
    "\\\\",
    "\\\"",
    "\\u0000",
    "\\u001f",
    "\\u001F",
    "\\u007f",
    "\\u00e9",
    "\\u00E9",
    "\\u2028",
    "\\u2029",
    "\u{2028}",
    "\u{2029}",
    "é",
    "中文",
    "😀",
    "\\ud83d\\ude00",
    "\\uD83D\\uDE00",
    "\\ud83d",
    "\\ude00",
    "\\udbff",
    "\\udc00",
    "\\ud800\\ud800",
    "\\ufeff",
    "\u{feff}",
    "\u{7f}",
    "\u{fffd}",
    "\\u0041",
    "<script>",
    "'",
    "\u{10ffff}",
    "\\udbff\\udfff",
];

fn gen_string(r: &mut Rng, out: &mut String) {
    out.push('"');
    let n = r.below(5);
    for _ in 0..n {
        out.push_str(r.pick(STRING_PIECES));
    }
    out.push('"');
}

fn ws(r: &mut Rng, out: &mut String) {
    if r.chance(20) {
        out.push_str(r.pick(&[" ", "\n", "\t", "\r\n", "  "]));
    }
}

fn gen_number(r: &mut Rng, out: &mut String) {
    match r.below(4) {
        0 | 1 => out.push_str(r.pick(NUMBERS)),
        2 => {
            let digits = 1 + r.below(25);
            if r.chance(30) {
                out.push('-');
            }
            out.push(char::from(b'1' + r.below(9) as u8));
            for _ in 1..digits {
                out.push(char::from(b'0' + r.below(10) as u8));
            }
        }
        _ => {
            if r.chance(30) {
                out.push('-');
            }
            out.push_str(&r.below(100000).to_string());
            if r.chance(60) {
                out.push('.');
                for _ in 0..1 + r.below(20) {
                    out.push(char::from(b'0' + r.below(10) as u8));
                }
            }
            if r.chance(50) {
                out.push(if r.chance(50) { 'e' } else { 'E' });
                out.push_str(r.pick(&["", "+", "-"]));
                out.push_str(&r.below(330).to_string());
            }
        }
    }
}

fn gen_value(r: &mut Rng, depth: usize, out: &mut String) {
    ws(r, out);
    let kind = if depth == 0 { r.below(5) } else { r.below(7) };
    match kind {
        0 => out.push_str(r.pick(&["null", "true", "false"])),
        1 | 2 => gen_number(r, out),
        3 | 4 => gen_string(r, out),
        5 => {
            out.push('[');
            let n = r.below(5);
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                gen_value(r, depth - 1, out);
            }
            ws(r, out);
            out.push(']');
        }
        _ => {
            out.push('{');
            let n = r.below(7);
            for i in 0..n {
                if i > 0 {
                    out.push(',');
                }
                ws(r, out);
                if r.chance(85) {
                    out.push('"');
                    out.push_str(r.pick(KEYS));
                    out.push('"');
                } else {
                    gen_string(r, out);
                }
                ws(r, out);
                out.push(':');
                gen_value(r, depth - 1, out);
            }
            ws(r, out);
            out.push('}');
        }
    }
    ws(r, out);
}

const INVALID: &[&str] = &[
    "",
    " ",
    "[1,]",
    "{\"a\":1,}",
    "01",
    "-01",
    "+1",
    ".5",
    "1.",
    "1.e5",
    "1e",
    "NaN",
    "Infinity",
    "-Infinity",
    "undefined",
    "'a'",
    "{'a':1}",
    "\"\t\"",
    "\"a\nb\"",
    "\"\\u12\"",
    "\"\\u12g4\"",
    "\"\\x41\"",
    "\"\\a\"",
    "\u{feff}{}",
    "\u{feff}1",
    "1 2",
    "{} x",
    "[1]]",
    "[[1]",
    "tru",
    "True",
    "nul",
    "{a:1}",
    "{\"a\" 1}",
    "{\"a\":1 \"b\":2}",
    "[1 2]",
    "/*x*/1",
    "1//x",
    "\u{a0}1",
    "\u{2028}1",
    "\u{b}1",
    "\u{c}1",
    "0x10",
    "1_000",
    "--1",
    "\"\u{1f}\"",
    "[,1]",
    "{,}",
    "\"abc",
    "\"\\",
    "\"\\u",
    "\"\\ud83d\\u\"",
    "1e+",
    "-",
    "0.",
    "00",
    "[01]",
    "1\u{0}",
];

fn mutate(r: &mut Rng, t: &str) -> String {
    let chars: Vec<char> = t.chars().collect();
    if chars.is_empty() {
        return String::from(r.pick(&["[", ",", "\""]));
    }
    let mut chars = chars;
    let i = r.below(chars.len());
    const INS: &[char] = &[
        ',', ']', '}', '[', '{', '"', '\\', '0', '-', '.', 'e', ' ', '\t', '\u{1}', ':', 'x',
        '\u{feff}',
    ];
    match r.below(3) {
        0 => {
            chars.remove(i);
        }
        1 => chars.insert(i, INS[r.below(INS.len())]),
        _ => chars[i] = INS[r.below(INS.len())],
    }
    chars.into_iter().collect()
}

fn build_corpus() -> Vec<String> {
    let mut r = Rng(0x9E37_79B9_7F4A_7C15);
    let mut texts: Vec<String> = Vec::new();
    for s in INVALID {
        texts.push((*s).to_owned());
    }
    for n in NUMBERS {
        texts.push((*n).to_owned());
        texts.push(format!("[{n}]"));
    }
    for k in KEYS {
        texts.push(format!("{{\"{k}\":1,\"z\":2,\"{k}\":3}}"));
    }
    texts.push(r#"{"10":1,"2":2,"01":3,"-1":4,"4294967295":5,"4294967294":6,"x":7,"1":8}"#.into());
    texts.push(r#"{"b":1,"a":2,"b":3,"1":4,"__proto__":null,"__proto__":[1]}"#.into());
    // Deep nesting (1000 levels), arrays and objects.
    texts.push(format!("{}{}", "[".repeat(1000), "]".repeat(1000)));
    texts.push(format!("{}0{}", "{\"a\":[".repeat(500), "]}".repeat(500)));
    texts.push(format!("{}{}", "[".repeat(1000), "]".repeat(999)));
    let mut valid = Vec::new();
    for i in 0..4000 {
        let mut t = String::new();
        gen_value(&mut r, 1 + i % 5, &mut t);
        valid.push(t);
    }
    for t in &valid {
        if r.chance(30) {
            texts.push(mutate(&mut r, t));
        }
    }
    texts.extend(valid);
    texts
}

fn node_available() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

#[test]
fn canonicalize_matches_node() {
    if !node_available() {
        println!("SKIP: `node` not found on PATH; differential JSON test skipped");
        return;
    }
    let texts = build_corpus();
    let nonce = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("json_vs_node_{}_{nonce}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("in.json");
    let output = dir.join("out.json");
    std::fs::write(&input, serde_json::to_string(&texts).unwrap()).unwrap();
    let script = r#"
        const fs = require('fs');
        const texts = JSON.parse(fs.readFileSync(process.argv[1], 'utf8'));
        const out = texts.map(t => { try { return JSON.stringify(JSON.parse(t)); } catch (e) { return null; } });
        fs.writeFileSync(process.argv[2], JSON.stringify(out));
    "#;
    let status = Command::new("node")
        .arg("-e")
        .arg(script)
        .arg(&input)
        .arg(&output)
        .status()
        .unwrap();
    assert!(status.success(), "node failed");
    let expected: Vec<Option<String>> =
        serde_json::from_str(&std::fs::read_to_string(&output).unwrap()).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(expected.len(), texts.len());

    let mut failures = Vec::new();
    let (mut ok, mut rejected) = (0, 0);
    // `is_canonical` (used to splice lines in createBranchedSession) must never call a text
    // canonical that node would change; and it should recognize node's own output.
    let mut recognized = 0;
    for (t, want) in texts.iter().zip(&expected) {
        if canonical::is_canonical(t) && want.as_deref() != Some(t.as_str()) {
            failures.push(format!("called canonical: {t:?}\n  node: {want:?}"));
        }
        if want.as_deref().is_some_and(canonical::is_canonical) {
            recognized += 1;
        }
    }
    println!("is_canonical recognized {recognized} of node's outputs");
    for (t, want) in texts.iter().zip(&expected) {
        let got = canonicalize(t);
        if &got != want {
            failures.push(format!("input {t:?}\n  node: {want:?}\n  rust: {got:?}"));
        } else if got.is_some() {
            ok += 1;
            // Idempotence: re-canonicalizing the output is a fixed point.
            assert_eq!(canonicalize(got.as_deref().unwrap_or("")), got);
            let v = parse(t).unwrap();
            assert_eq!(v.clone().to_json(), *got.as_ref().unwrap());
        } else {
            rejected += 1;
        }
    }
    println!(
        "{} texts: {ok} matched output, {rejected} matched rejection, {} mismatches",
        texts.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} mismatches, first ones:\n{}",
        failures.len(),
        failures[..failures.len().min(10)].join("\n")
    );
}
