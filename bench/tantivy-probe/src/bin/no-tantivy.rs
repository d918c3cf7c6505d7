//! The probe's reading and folding without tantivy: only for the size of a stripped LTO
//! binary, against `tantivy-probe`'s (what linking tantivy adds). `no-tantivy <sessions dir>`.
use pi_session_core::search::{extract, text};

fn main() {
    let Some(dir) = std::env::args().nth(1) else {
        eprintln!("usage: no-tantivy <sessions dir>");
        std::process::exit(2);
    };
    let mut tokens = 0usize;
    let mut dirs = vec![std::path::PathBuf::from(dir)];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                for r in extract::parse(&b, 0, true).rows {
                    tokens += text::index_text(&r.text).count;
                }
            }
        }
    }
    println!("{tokens} tokens");
}
