//! std-only fallback fuzzer: mutates seed inputs (and random bytes) and feeds them to the
//! same harness as the libFuzzer targets, for a fixed wall-clock time.
//!
//!   cargo run --release --no-default-features --bin soak -- <loader|ops|both> <seconds> [seed-dir...]
//!
//! A panic prints the input (hex) and writes it to artifacts/soak-<target>-crash.bin, then
//! aborts; a single input running longer than 10 s is reported as a hang.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static CURRENT: Mutex<(String, Vec<u8>)> = Mutex::new((String::new(), Vec::new()));
static EXECS: AtomicU64 = AtomicU64::new(0);

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
        (self.next() % n.max(1) as u64) as usize
    }
}

const TOKENS: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\"",
    b"\\",
    b"\n",
    b"\r\n",
    b" ",
    b"null",
    b"true",
    b"false",
    b"0",
    b"-0",
    b"1e400",
    b"-",
    b"1.5e-7",
    b"\\u",
    b"\\ud800",
    b"\\udc00",
    b"\\ud83d\\ude00",
    b"\"id\":",
    b"\"parentId\":",
    b"\"type\":",
    b"\"message\":",
    b"\"role\":\"user\"",
    b"\"role\":\"assistant\"",
    b"\"targetId\":",
    b"\"label\":",
    b"\"firstKeptEntryId\":",
    b"\"retainedTail\":[]",
    b"\"session\"",
    b"\"label\"",
    b"\"compaction\"",
    b"\"context_edit\"",
    b"\"message\"",
    b"\"a\"",
    b"\"b\"",
    b"\xff",
    b"\xed\xa0\x80",
    b"\xef\xbf\xbd",
    b"\xe2\x80\xa8",
    b"\x00",
    b"\t",
    b"{\"type\":\"message\",\"id\":\"a\",\"parentId\":\"a\",\"message\":{\"role\":\"user\"}}\n",
];

fn mutate(r: &mut Rng, input: &mut Vec<u8>, pool: &[Vec<u8>]) {
    let rounds = 1 + r.below(8);
    for _ in 0..rounds {
        let len = input.len();
        match r.below(9) {
            0 if len > 0 => {
                let i = r.below(len);
                input[i] ^= 1 << r.below(8);
            }
            1 if len > 0 => {
                let i = r.below(len);
                input[i] = r.next() as u8;
            }
            2 if len > 0 => {
                let a = r.below(len);
                let b = (a + 1 + r.below(16)).min(len);
                input.drain(a..b);
            }
            3 => {
                let t = TOKENS[r.below(TOKENS.len())];
                let i = r.below(len + 1);
                input.splice(i..i, t.iter().copied());
            }
            4 if len > 0 => {
                // Duplicate a chunk (repeats lines, nests deeper).
                let a = r.below(len);
                let b = (a + 1 + r.below(64)).min(len);
                let chunk = input[a..b].to_vec();
                let i = r.below(len + 1);
                input.splice(i..i, chunk);
            }
            5 if !pool.is_empty() => {
                // Splice with another input.
                let o = &pool[r.below(pool.len())];
                if !o.is_empty() {
                    let a = r.below(o.len());
                    let b = (a + 1 + r.below(256)).min(o.len());
                    let i = r.below(len + 1);
                    input.splice(i..i, o[a..b].iter().copied());
                }
            }
            6 if len > 0 => input.truncate(r.below(len)),
            7 => {
                let n = r.below(32);
                let i = r.below(len + 1);
                let bytes: Vec<u8> = (0..n).map(|_| r.next() as u8).collect();
                input.splice(i..i, bytes);
            }
            _ => {
                // Deep nesting.
                let n = 1 + r.below(2000);
                let i = r.below(len + 1);
                let open = if r.below(2) == 0 { b'[' } else { b'{' };
                let mut v = vec![open; n];
                if open == b'{' {
                    v = b"{\"a\":".repeat(n);
                }
                input.splice(i..i, v);
            }
        }
    }
    if input.len() > 64 * 1024 {
        input.truncate(64 * 1024);
    }
}

fn read_seeds(dirs: &[String]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if let Ok(b) = std::fs::read(&p) {
                out.push(b);
            }
        }
    }
    out
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let which = args.get(1).cloned().unwrap_or_else(|| "both".into());
    let secs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(60);
    let seed_dirs: Vec<String> = args.iter().skip(3).cloned().collect();
    let seed: u64 = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x9E37_79B9_7F4A_7C15);

    std::panic::set_hook(Box::new(|info| {
        let (target, input) = match CURRENT.try_lock() {
            Ok(g) => g.clone(),
            Err(_) => ("?".into(), Vec::new()),
        };
        eprintln!("CRASH in target {target}: {info}");
        eprintln!("input ({} bytes) hex: {}", input.len(), hex(&input));
        let _ = std::fs::create_dir_all("artifacts");
        let path = format!("artifacts/soak-{target}-crash.bin");
        let _ = std::fs::write(&path, &input);
        eprintln!("written to {path}");
        std::process::abort();
    }));

    // Hang watchdog: a single input must finish within 10 s.
    std::thread::spawn(|| {
        let mut last = EXECS.load(Ordering::Relaxed);
        loop {
            std::thread::sleep(Duration::from_secs(10));
            let now = EXECS.load(Ordering::Relaxed);
            if now == last {
                let input = CURRENT.lock().map(|g| g.1.clone()).unwrap_or_default();
                eprintln!("HANG: no progress for 10 s; input hex: {}", hex(&input));
                let _ = std::fs::create_dir_all("artifacts");
                let _ = std::fs::write("artifacts/soak-hang.bin", &input);
                std::process::abort();
            }
            last = now;
        }
    });

    let targets: Vec<(&str, fn(&[u8]))> = match which.as_str() {
        "loader" => vec![("loader", pisn_fuzz::harness::loader)],
        "ops" => vec![("ops", pisn_fuzz::harness::ops)],
        _ => vec![
            ("loader", pisn_fuzz::harness::loader),
            ("ops", pisn_fuzz::harness::ops),
        ],
    };
    let mut pool = read_seeds(&seed_dirs);
    if pool.is_empty() {
        pool.push(b"{\"type\":\"session\",\"id\":\"s\"}\n".to_vec());
    }
    let seeds = pool.len();
    let mut r = Rng(seed | 1);
    let start = Instant::now();
    let deadline = start + Duration::from_secs(secs);
    let mut execs = [0u64; 2];
    let mut k = 0usize;
    while Instant::now() < deadline {
        for (ti, (name, f)) in targets.iter().enumerate() {
            let mut input = if r.below(20) == 0 {
                let n = r.below(512);
                (0..n).map(|_| r.next() as u8).collect()
            } else {
                pool[r.below(pool.len())].clone()
            };
            mutate(&mut r, &mut input, &pool);
            {
                let mut g = CURRENT.lock().unwrap();
                g.0 = name.to_string();
                g.1.clone_from(&input);
            }
            f(&input);
            execs[ti] += 1;
            EXECS.fetch_add(1, Ordering::Relaxed);
            // Keep a bounded pool of mutated inputs to mutate further.
            k += 1;
            if k % 7 == 0 {
                if pool.len() < 4096 {
                    pool.push(input);
                } else {
                    let i = seeds + r.below(pool.len() - seeds);
                    pool[i] = input;
                }
            }
        }
    }
    for (ti, (name, _)) in targets.iter().enumerate() {
        println!(
            "soak {name}: {} execs in {:.0} s, 0 crashes",
            execs[ti],
            start.elapsed().as_secs_f64()
        );
    }
    println!("pool size: {}", pool.len());
}
