// Normalization shared by the pi end-to-end scenarios: makes reports from two independent runs
// (reference vs native SessionManager) comparable. Entry ids, session ids, timestamps and temp
// paths are random per run; they are replaced by stable placeholders assigned in order of first
// appearance, so two runs that write structurally identical sessions normalize identically.

const ENTRY_ID = /^[0-9a-f]{8}$/;
// uuid (v4/v7) as used for session ids
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;
// ISO timestamps, also the file-name form with ':' and '.' replaced by '-'
const ISO = /\d{4}-\d{2}-\d{2}T\d{2}[-:]\d{2}[-:]\d{2}[-.]\d{3}Z/g;
const ID_KEYS = new Set([
  "id",
  "parentId",
  "targetId",
  "firstKeptEntryId",
  "fromId",
  "leafId",
  "entryId",
  "newLeafId",
  "oldLeafId",
]);
const TIME_KEYS = new Set(["timestamp", "modified", "created", "mtime", "lastModified"]);
const DURATION_KEYS = new Set(["durationMs", "elapsedMs"]);

export class Normalizer {
  constructor(roots = []) {
    // longest first so nested roots are replaced before their parents
    this.roots = [...roots].filter(Boolean).sort((a, b) => b.length - a.length);
    this.entryIds = new Map();
    this.sessionIds = new Map();
  }

  /** Pre-register ids in file order, so numbering follows the session file and not the report order. */
  registerEntries(entries) {
    for (const e of entries) {
      if (!e || typeof e !== "object") continue;
      if (e.type === "session") this.session(e.id);
      else if (typeof e.id === "string") this.entry(e.id);
    }
  }

  entry(id) {
    if (!this.entryIds.has(id)) this.entryIds.set(id, `<E${this.entryIds.size + 1}>`);
    return this.entryIds.get(id);
  }

  session(id) {
    if (!this.sessionIds.has(id)) this.sessionIds.set(id, `<S${this.sessionIds.size + 1}>`);
    return this.sessionIds.get(id);
  }

  string(s, key) {
    if (key && ID_KEYS.has(key) && ENTRY_ID.test(s)) return this.entry(s);
    if (this.entryIds.has(s)) return this.entryIds.get(s);
    let out = s;
    for (const root of this.roots) out = out.split(root).join("<ROOT>");
    out = out.replace(UUID, (m) => this.session(m));
    out = out.replace(ISO, "<TS>");
    return out;
  }

  value(v, key) {
    if (v === null || v === undefined) return v;
    if (key && TIME_KEYS.has(key) && (typeof v === "number" || typeof v === "string")) return "<TS>";
    if (key && DURATION_KEYS.has(key) && typeof v === "number") return "<MS>";
    if (typeof v === "string") return this.string(v, key);
    if (Array.isArray(v)) return v.map((x) => this.value(x));
    if (v instanceof Date) return "<TS>";
    if (v instanceof Map) return this.value(Object.fromEntries(v), key);
    if (typeof v === "object") {
      const out = {};
      for (const k of Object.keys(v)) {
        if (v[k] === undefined) continue;
        out[k] = this.value(v[k], k);
      }
      return out;
    }
    return v;
  }
}

/** Plain JSON copy (drops functions / undefined, breaks class identity). */
export function plain(v) {
  return v === undefined ? undefined : JSON.parse(JSON.stringify(v));
}
