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
});

export const INVISIBLE = Object.freeze({
  "stmt@358:9 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@425:9 closeSync(fd); -> ;": "a file handle left open (the verifier does not count handles)",
  "stmt@548:9 signal?.throwIfAborted(); -> ;":
    "an abort that lands while readline waits for the end of the last file (a race the corpus does not stage)",
  "const@577:43 10 -> 11": "how many files are read at once (the results and the last progress call are the same)",
});
