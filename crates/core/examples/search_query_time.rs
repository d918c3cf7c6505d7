//! Times FTS5 expressions on an existing index file, not a test:
//! `cargo run --release --example search_query_time -- <index.sqlite> <match expr>...`.
use rusqlite::{Connection, OpenFlags};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let conn =
        Connection::open_with_flags(&args[0], OpenFlags::SQLITE_OPEN_READ_ONLY).expect("open");
    // Where the file's pages go: per table and index, and free.
    let mut st = conn
        .prepare("SELECT name, sum(pgsize), count(*) FROM dbstat GROUP BY name ORDER BY 2 DESC")
        .expect("dbstat");
    let rows: Vec<(String, i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("dbstat")
        .collect::<rusqlite::Result<_>>()
        .expect("dbstat");
    for (n, b, c) in rows {
        println!("{n:<14} {:>9.2} MB {c:>8} pages", b as f64 / 1048576.0);
    }
    let free: i64 = conn
        .pragma_query_value(None, "freelist_count", |r| r.get(0))
        .expect("freelist");
    let size: i64 = conn
        .pragma_query_value(None, "page_size", |r| r.get(0))
        .expect("page_size");
    println!(
        "free pages     {:>9.2} MB {free:>8} pages",
        (free * size) as f64 / 1048576.0
    );
    for q in &args[1..] {
        if q.starts_with("EXEC:") {
            continue;
        }
        if let Some(sql) = q.strip_prefix("SQL:") {
            let v: i64 = conn.query_row(sql, [], |r| r.get(0)).expect("sql");
            println!("{v}  {sql}");
            continue;
        }
        for sql in [
            "SELECT count(*) FROM fts WHERE fts MATCH ?1",
            "SELECT count(*) FROM fts JOIN rows r ON r.id = fts.rowid WHERE fts MATCH ?1 AND r.active = 1",
            "SELECT count(*) FROM (SELECT rowid FROM fts WHERE fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET 19999)",
            "SELECT count(*) FROM (SELECT r.file, r.ntok FROM fts JOIN rows r ON r.id = fts.rowid WHERE fts MATCH ?1 AND r.active = 1 ORDER BY r.ntok, r.id DESC)",
        ] {
            let mut best = f64::MAX;
            let mut n = 0i64;
            for _ in 0..5 {
                let t = Instant::now();
                n = conn.query_row(sql, [q], |r| r.get(0)).expect("query");
                best = best.min(t.elapsed().as_secs_f64() * 1000.0);
            }
            println!(
                "{best:8.2} ms  {n:8} rows  {q}  [{}]",
                &sql[..sql.len().min(60)]
            );
        }
    }
}
