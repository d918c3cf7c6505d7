//! Differential test: where `serde_json` gives the bytes of V8's
//! `JSON.stringify(JSON.parse(x))` (and V8's acceptance), and where it cannot, which is why
//! `src/json/` is hand-written. Each case says which it is; the test runs Node on every
//! input and fails when a case changes side (a `serde_json` that learns V8's answer shows up
//! here as a failure of a `Differs` case: then the hand-written code there may go).
//!
//! `serde_json` is used as a caller would use it to keep a document as written: with
//! `preserve_order` (insertion order) and `RawValue` (the text as it is). The list of cases
//! is in `docs/architecture.md`, section "JSON: where serde_json is used and where it cannot
//! be".

use std::io::Write as _;
use std::process::{Command, Stdio};

use serde_json::value::RawValue;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Expect {
    /// `serde_json::Value` round trip gives V8's bytes (or both reject).
    Same,
    /// It cannot: the reason is the case's name.
    Differs,
}
use Expect::{Differs, Same};

fn cases() -> Vec<(&'static str, String, Expect)> {
    let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let mut v: Vec<(&'static str, String, Expect)> = vec![
        // Objects
        (
            "integer-like keys first",
            r#"{"b":1,"1":2}"#.into(),
            Differs,
        ),
        (
            "integer-like keys ascending, up to 2^32-2",
            r#"{"x":0,"4294967295":1,"4294967294":2,"10":3,"2":4,"01":5,"-1":6}"#.into(),
            Differs,
        ),
        (
            "no integer-like keys",
            r#"{"b":1,"a":{"d":[],"c":null}}"#.into(),
            Same,
        ),
        (
            "duplicate key: last value, first position",
            r#"{"a":1,"b":2,"a":3}"#.into(),
            Same,
        ),
        (
            "__proto__ is an own key",
            r#"{"__proto__":{"x":1}}"#.into(),
            Same,
        ),
        // Strings
        ("lone high surrogate", r#""\ud800""#.into(), Differs),
        (
            "lone low surrogate in a key",
            r#"{"\udc00":1}"#.into(),
            Differs,
        ),
        ("surrogate pair", r#""\ud83d\ude00""#.into(), Same),
        (
            "escapes normalized",
            r#""\u0041\/\b\f\n\r\t\"\\""#.into(),
            Same,
        ),
        ("controls escaped", "\"\\u0000\\u001f\\u007f\"".into(), Same),
        ("U+2028/2029 written raw", r#""\u2028\u2029""#.into(), Same),
        (
            "non-ASCII written raw",
            "\"caf\u{e9} \u{1F600}\"".into(),
            Same,
        ),
        // Numbers
        ("exponent sign of 1e21", "1e21".into(), Same),
        ("negative zero", "-0".into(), Differs),
        ("trailing .0", "1.0".into(), Differs),
        ("integer above 2^53", "9007199254740993".into(), Differs),
        (
            "integer as a double above u64",
            "123456789012345678901234567890".into(),
            Same,
        ),
        ("1e20 as digits", "100000000000000000000".into(), Differs),
        ("1e-6 as digits", "0.000001".into(), Differs),
        ("overflow to Infinity is null", "1e400".into(), Differs),
        ("integral double in exponent form", "1E2".into(), Differs),
        ("small exponent", "5e-7".into(), Same),
        ("plain double", "0.1".into(), Same),
        ("integer", "[0,-1,42,9007199254740992]".into(), Same),
        // Nesting and syntax
        ("depth 127", deep(127), Same),
        ("depth 128", deep(128), Differs),
        ("depth 1000", deep(1000), Differs),
        (
            "whitespace dropped",
            " [ 1 , { \"a\" : true } ]\n".into(),
            Same,
        ),
        ("trailing comma rejected", "[1,]".into(), Same),
        ("BOM rejected", "\u{feff}{}".into(), Same),
        ("single quotes rejected", "'a'".into(), Same),
    ];
    v.push(("empty input rejected", String::new(), Same));
    v
}

/// `JSON.stringify(JSON.parse(x))` for each input in Node (`None`: it throws).
fn v8_round_trips(inputs: &[String]) -> Option<Vec<Option<String>>> {
    let mut child = Command::new("node")
        .args([
            "-e",
            "let s='';process.stdin.on('data',d=>s+=d).on('end',()=>process.stdout.write(\
             JSON.stringify(JSON.parse(s).map(x=>{try{return JSON.stringify(JSON.parse(x))}\
             catch{return null}}))))",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()?;
    let input = serde_json::to_vec(inputs).ok()?;
    child.stdin.take()?.write_all(&input).ok()?;
    let out = child.wait_with_output().ok()?;
    serde_json::from_slice(&out.stdout).ok()
}

fn serde_round_trip(x: &str) -> Option<String> {
    let v: serde_json::Value = serde_json::from_str(x).ok()?;
    serde_json::to_string(&v).ok()
}

#[test]
fn serde_json_against_v8() {
    let cases = cases();
    let inputs: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
    let Some(v8) = v8_round_trips(&inputs) else {
        eprintln!("node not found: serde_json_against_v8 skipped");
        return;
    };
    assert_eq!(v8.len(), cases.len());
    let mut wrong = Vec::new();
    for ((what, input, expect), want) in cases.iter().zip(&v8) {
        let got = serde_round_trip(input);
        let seen = if got == *want { Same } else { Differs };
        let short = |s: &Option<String>| {
            s.as_deref()
                .map_or("(rejected)".to_string(), |s| s.chars().take(60).collect())
        };
        eprintln!(
            "{seen:?}: {what}: V8 {} / serde_json {}",
            short(want),
            short(&got)
        );
        if seen != *expect {
            wrong.push(format!("{what}: expected {expect:?}, saw {seen:?}"));
        }
    }
    assert!(wrong.is_empty(), "{wrong:#?}");
}

/// `RawValue` keeps the text as written: V8's bytes exactly when the text already is
/// `JSON.stringify`'s output (our own writing), not otherwise.
#[test]
fn raw_value_is_v8_only_on_canonical_text() {
    let cases = cases();
    let inputs: Vec<String> = cases.iter().map(|c| c.1.clone()).collect();
    let Some(v8) = v8_round_trips(&inputs) else {
        eprintln!("node not found: raw_value_is_v8_only_on_canonical_text skipped");
        return;
    };
    let mut canonical = 0;
    for ((what, input, _), want) in cases.iter().zip(&v8) {
        let raw = serde_json::from_str::<&RawValue>(input)
            .ok()
            .map(|r| r.get().to_owned());
        if want.as_deref() == Some(input.as_str()) {
            canonical += 1;
            assert_eq!(raw.as_deref(), Some(input.as_str()), "{what}");
            // And V8 gives the same text again: a fixed point.
        } else if let (Some(raw), Some(want)) = (&raw, want) {
            assert_ne!(raw, want, "{what}: non-canonical text kept as is");
        }
    }
    assert!(canonical >= 10, "only {canonical} canonical cases");
}
