// Mutants of pi 1.6.0's dist/core/session-manager.js (ids from generate.mjs) that the verifier serves,
// each with why. The mutation test (scripts/verify-mutants.mjs) expects every mutant in these two
// lists served and every other one refused.
//
// EQUIVALENT: no input changes what the session code returns, writes or throws.
// INVISIBLE: a behaviour change the verifier does not look for by design (docs/compatibility.md,
// "What the verifier cannot see"), counted as served in the score, not as equivalent.

const COLLISION = "generateId: differs only when 100 random 8-hex-digit ids in a row are taken";
const V2_THEN_V3 = "a v1 header's version is set to 3 by the v2-to-v3 step right after";
const MIGRATE_ONLY_BELOW_3 = "reached only with version < 3 (>= 3 returned before)";
const BLANK = "a blank line fails JSON.parse and is skipped the same";
const DEFAULT_DIR = "mkdirSync(recursive) of an existing folder does nothing";
const BUFFER = "a read buffer's size: the same lines whatever the chunking";
const HEADER_ERROR_NAME = "SessionHeaderScanLimitError never leaves the module (open and discovery catch it)";
const UTF8 = 'new StringDecoder("") is utf8';

export const EQUIVALENT = Object.freeze({
  "const@22:18 0 -> 1": COLLISION,
  "cmp@22:23 < -> <=": COLLISION,
  "const@22:25 100 -> 101": COLLISION,
  "cond@24:13 !byId.has(id) -> true": COLLISION,
  "stmt@36:13 entry.version = 2; -> ;": V2_THEN_V3,
  "const@36:29 2 -> 0": V2_THEN_V3,
  "const@36:29 2 -> 3": V2_THEN_V3,
  "logic@77:37 ?? -> ||":
    "header.version ?? 1 and || 1 differ for 0, false, '' and NaN: each below 2 (or not a number) migrates the same",
  "const@77:40 1 -> 0": "a header without a version is below 2 either way",
  "cond@82:9 version < 3 -> true": MIGRATE_ONLY_BELOW_3,
  "cmp@82:17 < -> <=": MIGRATE_ONLY_BELOW_3,
  "const@82:19 3 -> 4": MIGRATE_ONLY_BELOW_3,
  "cond@95:13 !line.trim() -> false": BLANK,
  "cond@134:9 !leaf -> false": "without a leaf the walk yields the same empty path",
  "cmp@213:23 < -> <=": "compactionIdx 0: the loop before it is empty, the same entries either way",
  "const@213:25 0 -> 1": "compactionIdx 0: the loop before it is empty, the same entries either way",
  "cond@213:9 compactionIdx < 0 -> false": "the compaction was found on that very path: never below 0",
  "cond@299:9 !existsSync(sessionDir) -> true": DEFAULT_DIR,
  "const@304:34 1024 -> 1025": BUFFER,
  "const@304:41 1024 -> 1025": BUFFER,
  "const@305:41 4096 -> 4097": BUFFER,
  'stmt@311:9 this.name = "SessionHeaderScanLimitEr... -> ;': HEADER_ERROR_NAME,
  'const@311:21 "SessionHeaderScanLimitError" -> ""': HEADER_ERROR_NAME,
  "cond@315:9 !line.trim() -> false": BLANK,
  'const@334:43 "utf8" -> ""': UTF8,
  "cond@377:9 !line.trim() -> false": "parseSessionEntryLine skips a blank line itself",
  'const@389:43 "utf8" -> ""': UTF8,
  "arith@394:86 - -> +":
    "the scan reads 4096 bytes at a time up to 1 MiB, a multiple of 4096: the minimum is 4096 either way (short reads aside)",
  "args@394:41 buffer.length, MAX_SESSION_HEADER_SCA... -> MAX_SESSION_HEADER_SCAN_BYTES - scann...":
    "Math.min of the same two values",
  "logic@398:73 ?? -> ||": "the candidate is an object, null or undefined: ?? null and || null agree",
  "const@417:42 1 -> 2": "the probe for the end of the file: 0 bytes read at the end, more otherwise, either size",
  "logic@420:69 ?? -> ||": "the candidate is an object, null or undefined: ?? null and || null agree",
  "args@443:58 resolvePath(cwd), resolvedCwd -> resolvedCwd, resolvePath(cwd)": "pathsEqual is symmetric",
  'logic@468:12 typeof message.role === "string" && "... -> "content" in message':
    "every caller then requires the role to be user or assistant",
  "logic@495:33 ?? -> ||": "the stats are an object or undefined",
  "logic@528:66 ?? -> ||": "Math.max(0, t) either way: the activity time is undefined or a number",
  "cond@549:13 !header -> false": "without a header the next line throws, and the catch returns null the same",
  'logic@554:26 typeof lastActivityTime === "number" ... -> lastActivityTime > 0': "undefined > 0 is false",
  'logic@985:14 typeof replacement !== "object" || ... -> typeof replacement !== "object"':
    "an object without content has no string or array content either: the check after it throws the same",
  "logic@1149:17 entry.parentId === null || entry.pare... -> entry.parentId === entry.id":
    "an entry whose parent is null is not found as a parent and is made a root the same (as an orphan)",
  "stmt@509:17 signal?.throwIfAborted(); -> ;":
    "an abort while a file is read is thrown at the end of the read instead: the same rejection",
  "args@528:49 lastActivityTime ?? 0, activityTime -> activityTime, lastActivityTime ?? 0":
    "Math.max of the same two values",
  "args@591:53 limit, items.length -> items.length, limit": "Math.min of the same two values",
  "cond@606:9 !existsSync(dir) -> false":
    "readdir of a missing folder fails and the catch returns [] the same (an aborted signal was thrown just before)",
  'const@643:17 "" -> "x"': "a field's first value, set by every constructor before it is read",
  "const@648:15 false -> true":
    "a field's first value: a manager that persists sets it before writing; one in memory never writes",
  "logic@658:13 persist && this.sessionDir && !exists... -> persist && this.sessionDir":
    "mkdirSync(recursive) of an existing folder does nothing",
  "logic@658:21 && -> ||": "a persisting manager always has a folder, one in memory has none and does not persist",
  "logic@658:13 persist && this.sessionDir -> persist": "a persisting manager always has a folder",
  "logic@658:13 persist && this.sessionDir -> this.sessionDir": "only a persisting manager has a folder",
  "logic@678:50 ?? -> ||": "the preloaded entries are an array (truthy) or undefined",
  "logic@705:38 ?? -> ||": "an empty id fails assertValidSessionId before",
  "stmt@718:9 this.labelTimestampsById.clear(); -> ;":
    "a new session's entries have new ids: an old label time is never looked up",
  "logic@765:13 !this.persist || !this.sessionFile -> !this.persist": "a persisting manager always has a session file",
  "args@787:27 this.sessionDir, getDefaultSessionDir... -> getDefaultSessionDirPath(this.cwd), t...":
    "pathsEqual is symmetric",
  "logic@805:13 !this.persist || !this.sessionFile -> !this.persist": "a persisting manager always has a session file",
  "cmp@952:53 >= -> >": "index 0 is the header, never a session_info entry",
  "const@952:56 0 -> 1": "index 0 is the header, never a session_info entry",
  'const@1003:78 "custom" -> ""': "only compared with assistant and toolResult",
  "logic@1205:36 ?? -> ||": "the leaf is an id (non-empty) or null",
  "stmt@1206:9 this.leafId = branchFromId; -> ;":
    "the append right after sets the leaf; the entry's parent is branchFromId itself",
  "logic@1254:77 ?? -> ||": "the replacement is an entry id (non-empty) or undefined",
  "stmt@1293:17 pathEntryIds.add(labelEntry.id); -> ;":
    "label ids: differs only when a random 8-hex-digit id is taken twice",
  "stmt@1305:17 this.flushed = true; -> ;":
    "a path with a conversation comes from a session that wrote it: already flushed",
  "logic@1351:13 cwdOverride === undefined && existsSy... -> existsSync(resolvedPath)":
    "with a cwd override the header read changes nothing (its errors are the full load's too)",
  "cond@1356:21 !(error instanceof SessionHeaderScanL... -> false": "the full load after it throws the same error",
  "cond@1379:13 mostRecent -> true": "a manager without a file starts a new session, as the other branch",
  "cmp@1402:63 === -> !==": "the header is only tested for presence, and the first entry is one",
  "cond@1403:13 !sourceHeader -> false": "loadEntriesFromFile returns nothing without a header: there is one",
  "cond@1407:13 !existsSync(dir) -> true": "mkdirSync(recursive) of an existing folder does nothing",
  "logic@1414:42 ?? -> ||": "an empty id fails assertValidSessionId before",
  "cond@1504:17 !existsSync(sessionsDir) -> false":
    "readdir of a missing folder fails and the catch returns [] the same (an aborted signal was thrown before)",
  "logic@1281:33 pathWithoutLabels[pathWithoutLabels.l... -> pathWithoutLabels[pathWithoutLabels.l...":
    "an empty path has no labels to write, so the label parent is never read",
  "logic@1314:24 pathWithoutLabels[pathWithoutLabels.l... -> pathWithoutLabels[pathWithoutLabels.l...":
    "an empty path has no labels to write, so the label parent is never read",
  "logic@1377:27 sessionDir !== undefined && !pathsEqu... -> !pathsEqual(dir, getDefaultSessionDir...":
    "without a folder the default one is used, which pathsEqual finds equal to itself",
  "args@1377:67 dir, getDefaultSessionDirPath(cwd) -> getDefaultSessionDirPath(cwd), dir": "pathsEqual is symmetric",
  "logic@1451:27 sessionDir !== undefined && !pathsEqu... -> !pathsEqual(dir, getDefaultSessionDir...":
    "without a folder the default one is used, which pathsEqual finds equal to itself",
  "args@1451:67 dir, getDefaultSessionDirPath(cwd) -> getDefaultSessionDirPath(cwd), dir": "pathsEqual is symmetric",
  "logic@1479:27 sessionDir !== undefined && !pathsEqu... -> !pathsEqual(dir, getDefaultSessionDir...":
    "without a folder the default one is used, which pathsEqual finds equal to itself",
  "args@1479:67 dir, getDefaultSessionDirPath(cwd) -> getDefaultSessionDirPath(cwd), dir": "pathsEqual is symmetric",
  "logic@1527:57 ?? -> ||":
    "a modification time of 0 ranks the same as a failed stat only against files whose stat failed, which list no session",
  "logic@1527:106 ?? -> ||":
    "a modification time of 0 ranks the same as a failed stat only against files whose stat failed, which list no session",
});

export const INVISIBLE = Object.freeze({
  "stmt@358:9 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@425:9 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@548:9 signal?.throwIfAborted(); -> ;":
    "an abort that lands while readline waits for the end of the last file (a race the corpus does not stage)",
  "const@577:43 10 -> 11": "how many files are read at once (the results and the last progress call are the same)",
  "stmt@545:13 stream.destroy(); -> ;": "a read stream left to close itself (the verifier does not count handles)",
  "stmt@774:13 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@817:17 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@1439:13 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@573:9 signal?.throwIfAborted(); -> ;":
    "an abort that lands while a file is being read (a race the corpus does not stage)",
  "stmt@586:13 signal?.throwIfAborted(); -> ;":
    "an abort that lands between two files (a race the corpus does not stage)",
  "stmt@627:9 signal?.throwIfAborted(); -> ;":
    "an abort that lands while the folder is read (a race the corpus does not stage)",
  "stmt@1546:13 abortSignal?.throwIfAborted(); -> ;":
    "an abort that lands while the folders are read (a race the corpus does not stage)",
  "const@580:43 100 -> 101":
    "listAll's partial lists every 100 files: which calls carry one depends on which files were read first (only the last call is compared)",
  "const@580:43 100 -> 0":
    "listAll's partial lists every 100 files: which calls carry one depends on which files were read first (only the last call is compared)",
  "const@578:48 64 -> 65": "how many files are read at once",
  "const@1247:38 0 -> 1":
    "seen only with a compaction without firstKeptEntryId in a branched path beside labels, where this package itself differs from pi (pi keeps the key with undefined): left out of the corpus",
  "stmt@836:13 this.fileEntries.pop(); -> ;":
    "a failed write's roll-back: not staged, because pi 1.3.0 and 1.4.0 (known-good) keep such an entry",
  "stmt@837:13 this.byId.delete(entry.id); -> ;":
    "a failed write's roll-back: not staged, because pi 1.3.0 and 1.4.0 (known-good) keep such an entry",
  "stmt@838:13 this.leafId = previousLeafId; -> ;":
    "a failed write's roll-back: not staged, because pi 1.3.0 and 1.4.0 (known-good) keep such an entry",
  "const@1531:40 false -> true":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "cond@1535:21 index === 0 -> true":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "cmp@1535:27 === -> !==":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "const@1535:31 0 -> 1":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1539:61 && -> ||":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1539:40 firstCandidateLoaded && ... -> firstCandidateLoaded":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1539:40 firstCandidateLoaded && ... -> (index === 0 || loaded % ALL_SESSION_...":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1540:22 index === 0 || loaded % ALL_SESSION_L... -> loaded === totalFiles":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1540:34 || -> &&":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1540:22 index === 0 || loaded % ALL_SESSION_L... -> index === 0":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "logic@1540:22 index === 0 || loaded % ALL_SESSION_L... -> loaded % ALL_SESSION_LIST_PUBLISH_INT...":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "cmp@1540:28 === -> !==":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "const@1540:32 0 -> 1":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "cmp@1540:80 === -> !==":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
  "const@1540:84 0 -> 1":
    "listAll's partial lists between its first and last call: which calls carry one depends on which files were read first",
});
