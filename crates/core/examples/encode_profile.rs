//! Time `shapes::encode` over every shell of a session on one thread (what the shape stream's
//! worker does for a hand-out): `cargo run --release --example encode_profile -- <file>`.
use std::path::Path;
fn main() {
    let p = std::env::args().nth(1).expect("path");
    let l = pi_session_core::jsonl::load_file(Path::new(&p), 64 << 20).expect("load");
    let mut t = pi_session_core::shapes::Tables::default();
    for round in 0..3 {
        let t0 = std::time::Instant::now();
        let mut n = 0;
        let mut out = pi_session_core::shapes::Out::default();
        for e in &l.entries {
            if let Some(s) = &e.shell {
                pi_session_core::shapes::encode(s.as_bytes(), true, &mut t, &mut out);
                n += 1;
                if out.values.len() > 1 << 20 {
                    out = pi_session_core::shapes::Out::default();
                }
            }
        }
        println!("round {round}: {n} shells in {:?}", t0.elapsed());
    }
}
