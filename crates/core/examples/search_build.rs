//! One first build of the search index of a sessions directory, for `perf` and
//! `/usr/bin/time` (issue 43), not a test:
//! `cargo run --release --example search_build -- <sessions dir> [--background]`.
//! Removes the directory's index file first; prints the wall time and the index's size.
use pi_session_core::search::{INDEX_FILE, Index, Load};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(dir) = args.first().map(PathBuf::from) else {
        eprintln!("usage: search_build <sessions dir> [--background]");
        std::process::exit(2);
    };
    let load = if args.iter().any(|a| a == "--background") {
        Load::Background
    } else {
        Load::Interactive
    };
    let _ = std::fs::remove_file(dir.join(INDEX_FILE));
    let t = Instant::now();
    let result = Index::open(&dir).and_then(|mut ix| {
        ix.refresh_with(&AtomicBool::new(false), None, load)?;
        Ok(ix.size())
    });
    match result {
        Ok(size) => println!(
            "build {:.2} s, index {:.2} MB",
            t.elapsed().as_secs_f64(),
            size as f64 / 1048576.0
        ),
        Err(e) => {
            eprintln!("{}", e.0);
            std::process::exit(1);
        }
    }
}
