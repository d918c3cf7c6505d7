//! Issue 43, fourth pass: the first build of the search index with tantivy in place of
//! SQLite FTS5, on the same texts. Not shipped and not in the workspace: a probe (it uses
//! `expect` on its own set-up and on tantivy's results; input files that fail to read are
//! skipped, as the real build does).
//!
//! `tantivy-probe build <sessions dir> <index dir> [--mode=ours|fold-in-tantivy|default|parse-only|read-only]
//!     [--threads=N] [--budget-mb=M] [--parsers=P] [--merge] [--log-merge]`
//! `tantivy-probe query <index dir> <query>...` (`a b`: both words; `abc*`: a prefix)
//! `tantivy-probe append <index dir> [turns]` (appended turns: commit, reload, query)
//!
//! Per file, as the real build's parsing threads do: read it whole, `extract::parse` (the
//! entries and their searchable texts, roles, tools, timestamps), the active branch, and
//! per text `text::index_text` (the distinct folded tokens and camelCase parts FTS5 gets).
//! One tantivy document per text: `body` (indexed, doc ids only: `IndexRecordOption::Basic`,
//! no positions, no field norms) and the columns of the `rows` table as fast fields.
//!
//! Modes: `ours` (default): folded on the parsing threads, tantivy splits on spaces;
//! `fold-in-tantivy`: the same tokens from a tantivy tokenizer that calls `index_text` (the
//! folding on tantivy's indexing threads); `default`: the raw text through tantivy's default
//! tokenizer (no camelCase parts, a lower bound); `parse-only`: everything but tantivy;
//! `read-only`: the files read and parsed, the texts not folded.
use pi_session_core::search::{extract, text};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;
use tantivy::collector::{Count, TopDocs};
use tantivy::indexer::NoMergePolicy;
use tantivy::query::{BooleanQuery, Occur, Query, RegexQuery, TermQuery};
use tantivy::schema::{
    FAST, Field, INDEXED, IndexRecordOption, STRING, Schema, TextFieldIndexing, TextOptions,
};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer, WhitespaceTokenizer};
use tantivy::{Index, IndexWriter, TantivyDocument, Term};

/// (user + system CPU seconds of the whole process so far, peak RSS in MB).
fn cpu_s() -> (f64, f64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (
        tv(ru.ru_utime) + tv(ru.ru_stime),
        ru.ru_maxrss as f64 / 1024.0,
    )
}

/// The tokens `index_text` gives, as a tantivy tokenizer (folding on tantivy's threads).
#[derive(Clone, Default)]
struct PiFold {
    token: Token,
}
struct PiFoldStream<'a> {
    folded: String,
    at: usize,
    token: &'a mut Token,
}
impl Tokenizer for PiFold {
    type TokenStream<'a> = PiFoldStream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> PiFoldStream<'a> {
        self.token.reset();
        PiFoldStream {
            folded: text::index_text(text).tokens,
            at: 0,
            token: &mut self.token,
        }
    }
}
impl TokenStream for PiFoldStream<'_> {
    fn advance(&mut self) -> bool {
        let rest = &self.folded[self.at.min(self.folded.len())..];
        if rest.is_empty() {
            return false;
        }
        let end = rest.find(' ').unwrap_or(rest.len());
        self.token.text.clear();
        self.token.text.push_str(&rest[..end]);
        self.token.offset_from = self.at;
        self.token.offset_to = self.at + end;
        self.token.position = self.token.position.wrapping_add(1);
        self.at += end + 1;
        true
    }
    fn token(&self) -> &Token {
        self.token
    }
    fn token_mut(&mut self) -> &mut Token {
        self.token
    }
}

struct Fields {
    body: Field,
    file: Field,
    entry_id: Field,
    role: Field,
    tools: Field,
    ts_ms: Field,
    off: Field,
    len: Field,
    active: Field,
    part: Field,
    ntok: Field,
}

fn schema(mode: &str) -> (Schema, Fields) {
    let mut b = Schema::builder();
    let tok = match mode {
        "default" => "default",
        "fold-in-tantivy" => "pifold",
        _ => "ws",
    };
    let body = b.add_text_field(
        "body",
        TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(tok)
                .set_index_option(IndexRecordOption::Basic)
                .set_fieldnorms(false),
        ),
    );
    let f = Fields {
        body,
        file: b.add_u64_field("file", INDEXED | FAST),
        entry_id: b.add_text_field("entry_id", TextOptions::default().set_fast("raw")),
        role: b.add_text_field("role", STRING | FAST),
        tools: b.add_text_field(
            "tools",
            TextOptions::default()
                .set_indexing_options(
                    TextFieldIndexing::default()
                        .set_tokenizer("ws")
                        .set_index_option(IndexRecordOption::Basic)
                        .set_fieldnorms(false),
                )
                .set_fast("raw"),
        ),
        ts_ms: b.add_i64_field("ts_ms", FAST),
        off: b.add_u64_field("off", FAST),
        len: b.add_u64_field("len", FAST),
        active: b.add_bool_field("active", FAST),
        part: b.add_u64_field("part", FAST),
        ntok: b.add_u64_field("ntok", FAST),
    };
    (b.build(), f)
}

fn register(index: &Index) {
    index
        .tokenizers()
        .register("ws", WhitespaceTokenizer::default());
    index.tokenizers().register("pifold", PiFold::default());
}

/// As the real build's `active_set`: the entries on the path from the last one to the root.
fn active_set(entries: &[extract::Entry]) -> Vec<bool> {
    let mut by_id: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    for (i, e) in entries.iter().enumerate() {
        if let Some(id) = &e.id {
            by_id.insert(id.as_str(), i);
        }
    }
    let mut on = vec![false; entries.len()];
    let Some(mut cur) = entries.len().checked_sub(1) else {
        return on;
    };
    while !on[cur] {
        on[cur] = true;
        match entries[cur]
            .parent
            .as_deref()
            .and_then(|p| by_id.get(p).copied())
        {
            Some(n) => cur = n,
            None => break,
        }
    }
    on
}

fn session_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn arg<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .find_map(|a| a.strip_prefix(name)?.strip_prefix('='))
}

fn dir_bytes(d: &Path) -> u64 {
    std::fs::read_dir(d)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn build(args: &[String]) {
    let sessions = PathBuf::from(&args[0]);
    let out = PathBuf::from(&args[1]);
    let mode = arg(args, "--mode").unwrap_or("ours").to_string();
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let threads: usize = arg(args, "--threads").map_or(cores, |v| v.parse().expect("--threads"));
    let parsers: usize = arg(args, "--parsers").map_or(cores, |v| v.parse().expect("--parsers"));
    let budget_mb: usize =
        arg(args, "--budget-mb").map_or(128, |v| v.parse().expect("--budget-mb"));
    let merge = args.iter().any(|a| a == "--merge");
    let log_merge = args.iter().any(|a| a == "--log-merge");
    // Only `body` and `file` (no columns of the `rows` table): what the postings alone cost.
    let body_only = args.iter().any(|a| a == "--body-only");

    let t0 = Instant::now();
    let _ = std::fs::remove_dir_all(&out);
    std::fs::create_dir_all(&out).expect("index dir");
    let (schema, f) = schema(&mode);
    let index = Index::create_in_dir(&out, schema).expect("create index");
    register(&index);
    let writer: Option<IndexWriter<TantivyDocument>> =
        (mode != "parse-only" && mode != "read-only").then(|| {
            let w = index
                .writer_with_num_threads(threads, budget_mb << 20)
                .expect("writer");
            if !log_merge {
                w.set_merge_policy(Box::new(NoMergePolicy));
            }
            w
        });
    let files = session_files(&sessions);
    let next = AtomicUsize::new(0);
    let rows = AtomicUsize::new(0);
    let tokens = AtomicUsize::new(0);
    let text_bytes = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..parsers {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(path) = files.get(i) else { break };
                    let Ok(bytes) = std::fs::read(path) else {
                        continue;
                    };
                    let p = extract::parse(&bytes, 0, true);
                    let active = active_set(&p.entries);
                    let (mut nr, mut nt, mut nb) = (0, 0, 0);
                    for r in p.rows {
                        nr += 1;
                        nb += r.text.len();
                        let e = &p.entries[r.entry];
                        let (body, count) = match mode.as_str() {
                            "ours" | "parse-only" => {
                                let t = text::index_text(&r.text);
                                nt += t.tokens.split(' ').filter(|t| !t.is_empty()).count();
                                (t.tokens, t.count)
                            }
                            _ => (r.text, 0),
                        };
                        let Some(w) = &writer else { continue };
                        let mut d = TantivyDocument::default();
                        d.add_text(f.body, &body);
                        d.add_u64(f.file, i as u64);
                        if body_only {
                            w.add_document(d).expect("add_document");
                            continue;
                        }
                        if let Some(id) = &e.id {
                            d.add_text(f.entry_id, id);
                        }
                        d.add_text(f.role, &r.role);
                        if !r.tools.is_empty() {
                            d.add_text(f.tools, &r.tools);
                        }
                        if let Some(ts) = r.ts_ms {
                            d.add_i64(f.ts_ms, ts);
                        }
                        d.add_u64(f.off, e.off);
                        d.add_u64(f.len, e.len);
                        d.add_bool(f.active, active.get(r.entry).copied().unwrap_or(false));
                        d.add_u64(f.part, r.part as u64);
                        d.add_u64(f.ntok, count as u64);
                        w.add_document(d).expect("add_document");
                    }
                    rows.fetch_add(nr, Ordering::Relaxed);
                    tokens.fetch_add(nt, Ordering::Relaxed);
                    text_bytes.fetch_add(nb, Ordering::Relaxed);
                }
            });
        }
    });
    let (cpu_fed, _) = cpu_s();
    let t_fed = t0.elapsed().as_secs_f64();
    let mut segs_before = 0;
    let mut t_merge = 0.0;
    let mut cpu_merge = 0.0;
    if let Some(mut w) = writer {
        w.commit().expect("commit");
        let ids = index.searchable_segment_ids().expect("segments");
        segs_before = ids.len();
        if merge && ids.len() > 1 {
            let tm = Instant::now();
            let c0 = cpu_s().0;
            w.merge(&ids).wait().expect("merge");
            t_merge = tm.elapsed().as_secs_f64();
            cpu_merge = cpu_s().0 - c0;
        }
        // Files of merged-away segments are removed (what is left is the index).
        w.garbage_collect_files().wait().expect("gc");
        w.wait_merging_threads().expect("wait merging");
    }
    let t_all = t0.elapsed().as_secs_f64();
    let (cpu, rss) = cpu_s();
    let segs_after = index.searchable_segment_ids().map_or(0, |v| v.len());
    println!(
        "mode={mode} files={} rows={} tokens={} text={:.1}MB threads={threads} parsers={parsers} budget={budget_mb}MB merge={merge} log_merge={log_merge} body_only={body_only}",
        files.len(),
        rows.load(Ordering::Relaxed),
        tokens.load(Ordering::Relaxed),
        text_bytes.load(Ordering::Relaxed) as f64 / 1048576.0
    );
    println!(
        "fed: wall {t_fed:.2} s cpu {cpu_fed:.2} s | total: wall {t_all:.2} s cpu {cpu:.2} s | merge: wall {t_merge:.2} s cpu {cpu_merge:.2} s | segments {segs_before} -> {segs_after} | index {:.1} MB | peak RSS {rss:.1} MB",
        dir_bytes(&out) as f64 / 1048576.0
    );
}

fn query(args: &[String]) {
    let dir = PathBuf::from(&args[0]);
    let index = Index::open_in_dir(&dir).expect("open");
    register(&index);
    let schema = index.schema();
    let body = schema.get_field("body").expect("body");
    let t = Instant::now();
    let reader = index.reader().expect("reader");
    let searcher = reader.searcher();
    println!(
        "open: {:.2} ms, {} segments, {} docs",
        t.elapsed().as_secs_f64() * 1e3,
        searcher.segment_readers().len(),
        searcher.num_docs()
    );
    for q in &args[1..] {
        let mut times = Vec::new();
        let mut hits = 0;
        let mut first = Vec::new();
        for round in 0..7 {
            let t = Instant::now();
            let subs: Vec<(Occur, Box<dyn Query>)> = q
                .split_whitespace()
                .map(|w| {
                    let w = w.to_lowercase();
                    let sub: Box<dyn Query> = match w.strip_suffix('*') {
                        Some(p) => Box::new(
                            RegexQuery::from_pattern(&format!("{}.*", regex_escape(p)), body)
                                .expect("regex"),
                        ),
                        None => Box::new(TermQuery::new(
                            Term::from_field_text(body, &w),
                            IndexRecordOption::Basic,
                        )),
                    };
                    (Occur::Must, sub)
                })
                .collect();
            let bq = BooleanQuery::new(subs);
            let (n, top) = searcher
                .search(&bq, &(Count, TopDocs::with_limit(20).order_by_score()))
                .expect("search");
            // The hits' file numbers, as a query reads its rows back.
            let mut files = Vec::new();
            for (_, a) in &top {
                let seg = searcher.segment_reader(a.segment_ord);
                let col = seg.fast_fields().u64("file").expect("file column");
                files.push(col.first(a.doc_id).unwrap_or(u64::MAX));
            }
            times.push(t.elapsed().as_secs_f64() * 1e3);
            if round == 0 {
                hits = n;
                first = files;
            }
        }
        let first_ms = times[0];
        times.sort_by(|a, b| a.total_cmp(b));
        println!(
            "{q:?}: {hits} hits, first file ids {:?}; first run {:.2} ms, median of 7 {:.2} ms, max {:.2} ms",
            &first[..first.len().min(5)],
            first_ms,
            times[3],
            times[6]
        );
    }
}

/// Appended turns, as the freshness guarantee needs them: per turn, two documents added to
/// the open index (one writer kept open, tantivy's default merge policy), a commit, the
/// reader reloaded and the turn's word searched. Prints each turn's times.
fn append(args: &[String]) {
    let dir = PathBuf::from(&args[0]);
    let n: usize = args.get(1).map_or(30, |v| v.parse().expect("count"));
    let index = Index::open_in_dir(&dir).expect("open");
    register(&index);
    let schema = index.schema();
    let body = schema.get_field("body").expect("body");
    let file = schema.get_field("file").expect("file");
    let t = Instant::now();
    let mut w: IndexWriter<TantivyDocument> =
        index.writer_with_num_threads(1, 15 << 20).expect("writer");
    let reader = index.reader().expect("reader");
    println!(
        "writer + reader open: {:.2} ms",
        t.elapsed().as_secs_f64() * 1e3
    );
    let mut times = Vec::new();
    for i in 0..n {
        let t = Instant::now();
        for k in 0..2 {
            let mut d = TantivyDocument::default();
            d.add_text(body, format!("appended turn{i}x walrus {k}"));
            d.add_u64(file, 1_000_000 + i as u64);
            w.add_document(d).expect("add");
        }
        w.commit().expect("commit");
        let commit = t.elapsed().as_secs_f64() * 1e3;
        reader.reload().expect("reload");
        let q = TermQuery::new(
            Term::from_field_text(body, &format!("turn{i}x")),
            IndexRecordOption::Basic,
        );
        let hits = reader.searcher().search(&q, &Count).expect("search");
        let all = t.elapsed().as_secs_f64() * 1e3;
        times.push(all);
        println!("turn {i}: commit {commit:.2} ms, + reload and query {all:.2} ms, {hits} hits");
    }
    w.wait_merging_threads().expect("merges");
    let segs = index.searchable_segment_ids().map_or(0, |v| v.len());
    times.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{n} turns: p50 {:.2} ms, max {:.2} ms; {segs} segments after",
        times[times.len() / 2],
        times[times.len() - 1]
    );
}

fn regex_escape(s: &str) -> String {
    let mut o = String::new();
    for c in s.chars() {
        if !c.is_alphanumeric() {
            o.push('\\');
        }
        o.push(c);
    }
    o
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("build") if args.len() >= 3 => build(&args[1..]),
        Some("query") if args.len() >= 2 => query(&args[1..]),
        Some("append") if args.len() >= 2 => append(&args[1..]),
        _ => {
            eprintln!(
                "usage: tantivy-probe build <sessions dir> <index dir> [--mode=ours|fold-in-tantivy|default|parse-only|read-only] [--threads=N] [--budget-mb=M] [--parsers=P] [--merge] [--log-merge]\n       tantivy-probe query <index dir> <query>...\n       tantivy-probe append <index dir> [turns]"
            );
            std::process::exit(2);
        }
    }
}
