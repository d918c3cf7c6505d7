//! Where the search index's first build spends its time and bytes (issue 43), not a test:
//! `cargo run --release --example search_profile -- <sessions dir> [variant...]`.
//!
//! Reads every `*.jsonl` of the directory and its subdirectories, then times each phase of
//! the build on its own, one thread: reading the files, parsing the lines and taking their
//! texts (`extract::parse`), folding them into index tokens (`text::index_text`), and writing
//! the same rows into a fresh SQLite file per variant of the schema (FTS5 detail, columns,
//! de-duplicated tokens, hash size, merges); per variant the bytes of each table and index
//! (`dbstat`). Variants: `full` (the schema 3 index), `full-body` (no `parts` column),
//! `full-tuned` (64 MB hash, no automerge, one `optimize` at the end), `rows` (the rows table
//! alone), `none` (detail=none over each row's distinct tokens, body and parts), `none-tuned`.
//!
//! Issue 43's third pass: `SP_THREE=1` also times, on the same distinct tokens, FTS5 with one
//! row per text against one row per entry (design a), FTS5 written by 1, 2 and 3 threads
//! each into a file of its own (design b), and postings written by us (design d, an
//! estimate of its build: `own_postings`); `SP_FOLD=<n>` times the folding alone n times
//! (best of n) and stops.
use pi_session_core::search::{extract, text};
use rusqlite::{Connection, params};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

struct Row {
    file: i64,
    entry_id: Option<String>,
    role: String,
    tools: String,
    ts_ms: Option<i64>,
    off: i64,
    len: i64,
    part: i64,
    body: String,
    parts: String,
    distinct: String,
    ntok: usize,
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(e.path());
            }
        }
    }
    for d in dirs {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "jsonl") && p.is_file() {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn secs(t: Instant) -> f64 {
    t.elapsed().as_secs_f64()
}

fn mb(b: u64) -> String {
    format!("{:.2}", b as f64 / 1048576.0)
}

fn build(path: &Path, variant: &str, rows: &[Row], per_tx: usize) -> rusqlite::Result<f64> {
    let _ = std::fs::remove_file(path);
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "cache_size", -16_000)?;
    let rows_sql = "CREATE TABLE rows(id INTEGER PRIMARY KEY, file INTEGER NOT NULL, entry_id TEXT, role TEXT NOT NULL,
  tools TEXT NOT NULL, ts_ms INTEGER, off INTEGER NOT NULL, len INTEGER NOT NULL, active INTEGER NOT NULL,
  part INTEGER NOT NULL); CREATE INDEX rows_file ON rows(file);";
    conn.execute_batch(rows_sql)?;
    let (fts, two, dedup, tuned) = match variant {
        "full" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, parts, content='', contentless_delete=1, tokenize='ascii')",
            true,
            false,
            false,
        ),
        "full-body" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, tokenize='ascii')",
            false,
            false,
            false,
        ),
        "full-tuned" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, parts, content='', contentless_delete=1, tokenize='ascii')",
            true,
            false,
            true,
        ),
        "none" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none, tokenize='ascii')",
            false,
            true,
            false,
        ),
        "none-tuned" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none, tokenize='ascii')",
            false,
            true,
            true,
        ),
        "none-hash" | "none-hash-big" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none, tokenize='ascii')",
            false,
            true,
            false,
        ),
        "none-files" | "none-files-ins" | "none-files-upd" => (
            "CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none, tokenize='ascii')",
            false,
            true,
            false,
        ),
        "rows" => ("", false, false, false),
        v => panic!("unknown variant {v}"),
    };
    if !fts.is_empty() {
        conn.execute_batch(fts)?;
    }
    if tuned {
        conn.execute_batch(
            "INSERT INTO fts(fts, rank) VALUES('hashsize', 67108864); INSERT INTO fts(fts, rank) VALUES('automerge', 0); INSERT INTO fts(fts, rank) VALUES('crisismerge', 64);",
        )?;
    }
    conn.execute_batch("CREATE TABLE files(id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, size INTEGER NOT NULL)")?;
    let files_ins = variant == "none-files" || variant == "none-files-ins";
    let files_upd = variant == "none-files" || variant == "none-files-upd";
    // `SP_HASH` (bytes) and `SP_PER_TX` (files) override the hash size and the files per
    // transaction of the `none-hash*` variants.
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<usize>().ok());
    if variant.starts_with("none-hash") || variant.starts_with("none-files") {
        let hash = env("SP_HASH").unwrap_or(67108864);
        conn.execute_batch(&format!(
            "INSERT INTO fts(fts, rank) VALUES('hashsize', {hash});"
        ))?;
    }
    let per_tx = if variant == "none-hash-big" {
        env("SP_PER_TX").unwrap_or(per_tx * 8)
    } else {
        per_tx
    };
    let t = Instant::now();
    let mut i = 0;
    let mut last_file = -1;
    let mut files_in_tx = 0;
    conn.execute_batch("BEGIN")?;
    {
        let mut ins_row = conn.prepare_cached(
            "INSERT INTO rows(file, entry_id, role, tools, ts_ms, off, len, active, part) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8)",
        )?;
        let mut ins2 = if fts.is_empty() {
            None
        } else if two {
            Some(conn.prepare_cached("INSERT INTO fts(rowid, body, parts) VALUES (?1, ?2, ?3)")?)
        } else {
            Some(conn.prepare_cached("INSERT INTO fts(rowid, body) VALUES (?1, ?2)")?)
        };
        for r in rows {
            if r.file != last_file {
                last_file = r.file;
                if files_ins {
                    conn.execute(
                        "INSERT INTO files(id, path, size) VALUES (?1, ?2, 0)",
                        params![r.file, format!("p{}", r.file)],
                    )?;
                }
                if files_upd {
                    conn.execute(
                        "UPDATE files SET size = ?2 WHERE id = ?1",
                        params![r.file - 1, 5],
                    )?;
                }
                files_in_tx += 1;
                if files_in_tx > per_tx {
                    conn.execute_batch("COMMIT; BEGIN")?;
                    files_in_tx = 1;
                }
            }
            ins_row.execute(params![
                r.file, r.entry_id, r.role, r.tools, r.ts_ms, r.off, r.len, r.part
            ])?;
            let id = conn.last_insert_rowid();
            if let Some(st) = ins2.as_mut() {
                if two {
                    st.execute(params![id, r.body, r.parts])?;
                } else if dedup {
                    st.execute(params![id, r.distinct])?;
                } else {
                    st.execute(params![id, r.body])?;
                }
            }
            i += 1;
        }
    }
    conn.execute_batch("COMMIT")?;
    let insert = secs(t);
    let mut opt = 0.0;
    if tuned {
        let t = Instant::now();
        conn.execute_batch("INSERT INTO fts(fts) VALUES('optimize')")?;
        opt = secs(t);
    }
    let total = secs(t);
    let mut st = conn.prepare(
        "SELECT name, sum(pgsize), sum(payload), count(*) FROM dbstat GROUP BY name ORDER BY 2 DESC",
    )?;
    let sizes: Vec<(String, i64, i64, i64)> = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
        .collect::<rusqlite::Result<_>>()?;
    let file = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "variant {variant}: {i} rows, insert {insert:.2} s, optimize {opt:.2} s, total {total:.2} s; file {} MB",
        mb(file)
    );
    for (n, s, p, c) in sizes {
        println!(
            "  {n:<14} {:>8} MB ({:>5.1}%), payload {:>8} MB, {c} pages",
            mb(s as u64),
            100.0 * s as f64 / file.max(1) as f64,
            mb(p as u64)
        );
    }
    Ok(total)
}

/// FTS5 (`detail=none`, 64 MB hash) over `docs` alone, one transaction per `per_tx` docs,
/// in a fresh file: the insert time (issue 43, third pass: rows per entry, writers in
/// parallel).
fn fts_only(path: &Path, docs: &[(i64, String)], per_tx: usize) -> rusqlite::Result<f64> {
    let _ = std::fs::remove_file(path);
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.execute_batch(
        "CREATE VIRTUAL TABLE fts USING fts5(body, content='', contentless_delete=1, detail=none, tokenize='ascii'); INSERT INTO fts(fts, rank) VALUES('hashsize', 67108864);",
    )?;
    let t = Instant::now();
    conn.execute_batch("BEGIN")?;
    {
        let mut st = conn.prepare_cached("INSERT INTO fts(rowid, body) VALUES (?1, ?2)")?;
        for (i, (id, body)) in docs.iter().enumerate() {
            if i > 0 && i % per_tx == 0 {
                conn.execute_batch("COMMIT; BEGIN")?;
            }
            st.execute(params![id, body])?;
        }
    }
    conn.execute_batch("COMMIT")?;
    let s = secs(t);
    drop(conn);
    let _ = std::fs::remove_file(path);
    Ok(s)
}

/// Postings written by us, the shape of design (d) (issue 43, third pass): per thread a
/// hash map of term -> (last rowid, delta-varint doclist) over the rows' distinct tokens
/// (each thread a contiguous range of rowids), then the terms sorted, the threads' lists
/// joined per term, and blocks of 64 terms (prefix-compressed terms, doclists) written as
/// blobs into a `WITHOUT ROWID` table keyed by each block's first term. Wall times of the
/// phases and the file's bytes; no query side (an estimate of the build, not an engine).
fn own_postings(path: &Path, docs: &[(i64, String)], threads: usize) -> rusqlite::Result<()> {
    type Map<'a> = std::collections::HashMap<&'a str, (u32, Vec<u8>), foldhash::fast::RandomState>;
    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }
    let t = Instant::now();
    let chunk = docs.len().div_ceil(threads.max(1));
    // Per thread, its terms sorted, each with its last rowid and its doclist (the first
    // delta from 0: the rowid itself).
    type Lists<'a> = Vec<(&'a str, u32, Vec<u8>)>;
    let lists: Vec<Lists> = std::thread::scope(|s| {
        let hs: Vec<_> = docs
            .chunks(chunk.max(1))
            .map(|c| {
                s.spawn(move || {
                    let mut m: Map = Map::default();
                    for (id, body) in c {
                        let id = *id as u32;
                        for tok in body.split(' ') {
                            if tok.is_empty() {
                                continue;
                            }
                            let e = m.entry(tok).or_insert_with(|| (0, Vec::new()));
                            varint(&mut e.1, u64::from(id - e.0));
                            e.0 = id;
                        }
                    }
                    let mut v: Lists = m.into_iter().map(|(k, (last, d))| (k, last, d)).collect();
                    v.sort_unstable_by(|a, b| a.0.cmp(b.0));
                    v
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_default())
            .collect()
    });
    let accumulate = secs(t);
    let t = Instant::now();
    // Join the threads' lists per term, in thread (= rowid) order: a later thread's list
    // starts with its first rowid, re-encoded as the delta from the last one before it.
    let mut all: Vec<(&str, usize, u32, Vec<u8>)> = lists
        .into_iter()
        .enumerate()
        .flat_map(|(k, v)| v.into_iter().map(move |(t, last, d)| (t, k, last, d)))
        .collect();
    all.sort_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
    let mut merged: Vec<(&str, Vec<u8>)> = Vec::new();
    let mut prev_last = 0u32;
    for (term, _, last, d) in all {
        let same = merged.last().is_some_and(|(t, _)| *t == term);
        if !same {
            merged.push((term, d));
        } else if let Some((_, list)) = merged.last_mut() {
            // The first varint of `d` is a rowid: rebased on the previous list's last.
            let mut first = 0u64;
            let mut n = 0;
            for (i, b) in d.iter().enumerate() {
                first |= u64::from(b & 0x7f) << (7 * i);
                if b & 0x80 == 0 {
                    n = i + 1;
                    break;
                }
            }
            varint(list, first - u64::from(prev_last));
            list.extend_from_slice(&d[n..]);
        }
        prev_last = last;
    }
    let merge = secs(t);
    let t = Instant::now();
    let _ = std::fs::remove_file(path);
    let conn = Connection::open(path)?;
    conn.pragma_update(None, "journal_mode", "DELETE")?;
    conn.execute_batch(
        "CREATE TABLE post(first TEXT PRIMARY KEY, block BLOB NOT NULL) WITHOUT ROWID; BEGIN",
    )?;
    let (mut terms, mut bytes) = (0usize, 0usize);
    {
        let mut st = conn.prepare("INSERT INTO post(first, block) VALUES (?1, ?2)")?;
        for block in merged.chunks(64) {
            let mut b: Vec<u8> = Vec::new();
            let mut prev: &str = "";
            for (term, list) in block {
                let common = prev
                    .bytes()
                    .zip(term.bytes())
                    .take_while(|(a, c)| a == c)
                    .count();
                varint(&mut b, common as u64);
                varint(&mut b, (term.len() - common) as u64);
                b.extend_from_slice(&term.as_bytes()[common..]);
                varint(&mut b, list.len() as u64);
                b.extend_from_slice(list);
                prev = term;
                terms += 1;
            }
            bytes += b.len();
            st.execute(params![block[0].0, b])?;
        }
    }
    conn.execute_batch("COMMIT")?;
    let write = secs(t);
    drop(conn);
    let file = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(path);
    println!(
        "own postings, {threads} thread(s): accumulate {accumulate:.2} s (wall), merge {merge:.2} s, write {write:.2} s; {terms} terms, {} MB of blocks, file {} MB",
        mb(bytes as u64),
        mb(file)
    );
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let dir = PathBuf::from(
        args.first()
            .expect("usage: search_profile <dir> [variant...]"),
    );
    let variants: Vec<&str> = if args.len() > 1 {
        args[1..].iter().map(String::as_str).collect()
    } else {
        vec![
            "rows",
            "full",
            "full-body",
            "full-tuned",
            "none",
            "none-tuned",
        ]
    };
    // Schema 3's variants need the texts' tokens in order too.
    let body_too = variants.iter().any(|v| v.starts_with("full"));
    let list = files(&dir);
    let t = Instant::now();
    let mut datas = Vec::new();
    let mut bytes = 0u64;
    for p in &list {
        let b = std::fs::read(p).unwrap_or_default();
        bytes += b.len() as u64;
        datas.push(b);
    }
    let read = secs(t);
    let t = Instant::now();
    let parsed: Vec<extract::Parsed> = datas.iter().map(|b| extract::parse(b, 0, true)).collect();
    let parse = secs(t);
    drop(datas);
    let t = Instant::now();
    let mut rows = Vec::new();
    let (mut text_bytes, mut body_bytes, mut parts_bytes, mut distinct_bytes) = (0, 0, 0, 0);
    let (mut toks, mut part_toks, mut distinct_toks) = (0usize, 0usize, 0usize);
    // Schema 3's index text: the folded tokens in order, and the camelCase parts of each
    // distinct identifier.
    for p in &parsed {
        for r in &p.rows {
            text_bytes += r.text.len();
            let mut seen = HashSet::new();
            text::for_each_token(&r.text, |s, e, f| {
                toks += 1;
                body_bytes += f.len() + 1;
                let w = &r.text[s..e];
                if seen.insert(w) {
                    for p in text::indexed_parts(w) {
                        part_toks += 1;
                        parts_bytes += p.len() + 1;
                    }
                }
            });
        }
    }
    let fold3 = secs(t);
    let t = Instant::now();
    let mut n = 0usize;
    for p in &parsed {
        for r in &p.rows {
            text::for_each_token(&r.text, |_, _, f| n += f.len());
        }
    }
    let tok_only = secs(t);
    let t = Instant::now();
    let mut n2 = 0usize;
    for p in &parsed {
        for r in &p.rows {
            let mut seen: std::collections::HashSet<&str, foldhash::fast::RandomState> =
                Default::default();
            text::for_each_token(&r.text, |s, e, _| {
                if seen.insert(&r.text[s..e]) {
                    n2 += 1
                }
            });
        }
    }
    let tok_seen = secs(t);
    println!(
        "tokens alone {tok_only:.2} s ({n} bytes), with a seen set {tok_seen:.2} s ({n2} distinct words)"
    );
    // `SP_FOLD=<n>`: the folding alone, n times, best time (a steadier figure on a shared
    // machine).
    if let Some(n) = std::env::var("SP_FOLD")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        let mut best = f64::MAX;
        let mut sum = 0usize;
        for _ in 0..n {
            let t = Instant::now();
            for p in &parsed {
                for r in &p.rows {
                    sum += text::index_text(&r.text).tokens.len();
                }
            }
            best = best.min(secs(t));
        }
        println!("fold alone, best of {n}: {best:.3} s ({sum} bytes)");
        return;
    }
    let t = Instant::now();
    let mut folded = Vec::new();
    for p in &parsed {
        for r in &p.rows {
            folded.push(text::index_text(&r.text));
        }
    }
    let fold = secs(t);
    let mut k = 0;
    for (fi, p) in parsed.iter().enumerate() {
        for r in &p.rows {
            let f = std::mem::take(&mut folded[k]);
            k += 1;
            let e = &p.entries[r.entry];
            distinct_toks += f.tokens.split(' ').filter(|s| !s.is_empty()).count();
            distinct_bytes += f.tokens.len();
            let (body, parts) = if body_too {
                let mut b = String::new();
                let mut ps = String::new();
                let mut seen = HashSet::new();
                text::for_each_token(&r.text, |s, e, fo| {
                    if !b.is_empty() {
                        b.push(' ');
                    }
                    b.push_str(fo);
                    let w = &r.text[s..e];
                    if seen.insert(w) {
                        let pp = text::indexed_parts(w);
                        if !pp.is_empty() {
                            if !ps.is_empty() {
                                ps.push_str(" \u{E000} ");
                            }
                            ps.push_str(&pp.join(" "));
                        }
                    }
                });
                (b, ps)
            } else {
                (String::new(), String::new())
            };
            rows.push(Row {
                file: fi as i64 + 1,
                entry_id: e.id.clone(),
                role: r.role.clone(),
                tools: r.tools.clone(),
                ts_ms: r.ts_ms,
                off: e.off as i64,
                len: e.len as i64,
                part: r.part as i64,
                body,
                parts,
                distinct: f.tokens,
                ntok: f.count,
            });
        }
    }
    let dedup = fold3;
    let ntok_max = rows.iter().map(|r| r.ntok).max().unwrap_or(0);
    println!(
        "{} files, {} MB; {} rows; text {} MB; body {} MB ({toks} tokens, longest row {ntok_max}); parts {} MB ({part_toks} tokens); distinct per row {} MB ({distinct_toks} tokens)",
        list.len(),
        mb(bytes),
        rows.len(),
        mb(text_bytes as u64),
        mb(body_bytes as u64),
        mb(parts_bytes as u64),
        mb(distinct_bytes as u64)
    );
    println!(
        "read {read:.2} s, parse + texts {parse:.2} s, index text (distinct tokens + parts, schema 4) {fold:.2} s; tokens + parts of schema 3 (counted, not joined) {dedup:.2} s (one thread)"
    );
    // Third pass of issue 43: one FTS5 row per entry (the union of its texts' tokens) and
    // FTS5 writers on several threads, each its own file (`SP_THREE=1`).
    if std::env::var("SP_THREE").is_ok() {
        let per_text: Vec<(i64, String)> = rows
            .iter()
            .enumerate()
            .map(|(i, r)| (i as i64 + 1, r.distinct.clone()))
            .collect();
        let mut per_entry: Vec<(i64, String)> = Vec::new();
        let mut key = (-1i64, -1i64);
        let mut seen: HashSet<String> = HashSet::new();
        for r in &rows {
            if (r.file, r.off) != key {
                key = (r.file, r.off);
                seen.clear();
                per_entry.push((per_entry.len() as i64 + 1, String::new()));
            }
            let Some(last) = per_entry.last_mut() else {
                continue;
            };
            for t in r.distinct.split(' ') {
                if !t.is_empty() && seen.insert(t.to_string()) {
                    if !last.1.is_empty() {
                        last.1.push(' ');
                    }
                    last.1.push_str(t);
                }
            }
        }
        let count = |d: &[(i64, String)]| {
            d.iter()
                .map(|(_, b)| b.split(' ').filter(|t| !t.is_empty()).count())
                .sum::<usize>()
        };
        println!(
            "per text: {} docs, {} tokens; per entry: {} docs, {} tokens",
            per_text.len(),
            count(&per_text),
            per_entry.len(),
            count(&per_entry)
        );
        let base = std::env::temp_dir().join(format!("search-profile3-{}", std::process::id()));
        let one = |tag: &str, docs: &[(i64, String)]| {
            let p = base.with_extension(format!("{tag}.sqlite"));
            fts_only(&p, docs, 1 << 30).unwrap_or(-1.0)
        };
        for k in [1usize, 2] {
            let p = base.with_extension("own.sqlite");
            if let Err(e) = own_postings(&p, &per_text, k) {
                println!("own postings: {e}");
            }
        }
        for _ in 0..2 {
            println!("fts per text, one thread: {:.2} s", one("t", &per_text));
            println!("fts per entry, one thread: {:.2} s", one("e", &per_entry));
            for k in [2usize, 3] {
                for (name, docs) in [("text", &per_text), ("entry", &per_entry)] {
                    let t = Instant::now();
                    let chunk = docs.len().div_ceil(k);
                    let times: Vec<f64> = std::thread::scope(|s| {
                        let hs: Vec<_> = docs
                            .chunks(chunk)
                            .enumerate()
                            .map(|(i, c)| {
                                let one = &one;
                                s.spawn(move || one(&format!("{name}{i}"), c))
                            })
                            .collect();
                        hs.into_iter().map(|h| h.join().unwrap_or(-1.0)).collect()
                    });
                    println!(
                        "fts per {name}, {k} threads: wall {:.2} s, each {:?}",
                        secs(t),
                        times
                    );
                }
            }
        }
    }
    let db = std::env::temp_dir().join(format!("search-profile-{}.sqlite", std::process::id()));
    for v in variants {
        if let Err(e) = build(&db, v, &rows, 128) {
            println!("variant {v}: {e}");
        }
    }
    let _ = std::fs::remove_file(&db);
    let _ = std::fs::remove_file(db.with_extension("sqlite-journal"));
}
