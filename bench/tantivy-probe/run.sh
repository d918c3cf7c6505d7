#!/usr/bin/env bash
# Issue 43, fourth pass: the first listing, today's first index build (FTS5, `search_build`)
# and tantivy's (this probe) on one store, alternating, each in a process of its own under
# /usr/bin/time; one line per run: CPU (user + sys), wall, peak RSS, index size, load.
#
#   bench/tantivy-probe/run.sh <agent dir holding sessions/> [rounds] [probe variants...]
#
# A probe variant is its flags joined by commas ("ours", "ours,--merge", "default");
# default set: ours, ours with a final merge, fold-in-tantivy, default, parse-only.
# Needs, built beforehand (same CARGO_TARGET_DIR):
#   cargo build --release -p pi-session-core --example search_build
#   (cd bench/tantivy-probe && cargo build --release)
# and the addon (pi-session-native.*.node) at the root for the listing. Run it under
# `nice -n 15` on a shared machine; the index of a probe run goes to /tmp and is removed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
AGENT=$(cd "$1" && pwd)
ROUNDS=${2:-3}
shift $(($# >= 2 ? 2 : 1))
VARIANTS=("$@")
[ ${#VARIANTS[@]} -gt 0 ] || VARIANTS=(ours ours,--merge fold-in-tantivy default parse-only)
T=${CARGO_TARGET_DIR:-$ROOT/target}/release
SESS=$AGENT/sessions
OUT=$(mktemp -d /tmp/tantivy-probe.XXXXXX)
trap 'rm -rf "$OUT"' EXIT

clean() {
  for d in "$SESS" "$SESS"/*/; do
    rm -f "$d"/.pi-session-index "$d"/.pi-session-search.sqlite "$d"/.pi-session-search.sqlite-journal
  done
}
load() { cut -d' ' -f1 /proc/loadavg; }
# run <label> <cmd...>: one line of measures.
run() {
  local label=$1
  shift
  clean
  local l0
  l0=$(load)
  /usr/bin/time -f "%U %S %e %M" -o "$OUT/time" "$@" >"$OUT/out" 2>"$OUT/err" || {
    cat "$OUT/err" >&2
    exit 1
  }
  read -r u s e m <"$OUT/time"
  local idx
  idx=$(grep -o 'index [0-9.]* MB' "$OUT/out" | tail -1 || true)
  local inproc
  inproc=$(grep -o '"cpu":[0-9.]*' "$OUT/out" || true)
  printf '%-34s cpu %7.2f s  wall %6.2f s  rss %6.1f MB  %-16s load %s->%s %s\n' \
    "$label" "$(echo "$u + $s" | bc)" "$e" "$(echo "$m / 1024" | bc -l)" "$idx" "$l0" "$(load)" "$inproc"
  grep -h '^fed:' "$OUT/out" | sed 's/^/    /' || true
}

LIST="import { SessionManager } from '$ROOT/index.mjs';
const c = process.cpuUsage(); const t = performance.now(); const l = await SessionManager.listAll();
const ms = performance.now() - t; const cu = process.cpuUsage(c);
console.log(JSON.stringify({ n: l.length, ms, \"cpu\": (cu.user + cu.system) / 1000 }));"

echo "store $AGENT: $(find "$SESS" -name '*.jsonl' | wc -l) files, $(du -sb "$SESS" | cut -f1) bytes; $(date -u +%H:%M) UTC"
for r in $(seq 1 "$ROUNDS"); do
  echo "-- round $r"
  run "listing (listAll, no sidecar)" env PI_CODING_AGENT_DIR="$AGENT" node --input-type=module -e "$LIST"
  run "fts5 (search_build)" "$T/examples/search_build" "$SESS"
  for v in "${VARIANTS[@]}"; do
    IFS=, read -r -a flags <<<"$v"
    run "tantivy --mode=$v" "$T/tantivy-probe" build "$SESS" "$OUT/ix" "--mode=${flags[0]}" "${flags[@]:1}"
  done
done
clean
