#!/usr/bin/env bash
# CI's part of the cross run (.ci/run), opt-in with PI_CROSS_CI=1: when the cross toolchain is
# already in the cache (`npm run test:cross` installs it), clippy -D warnings for every target
# and the core tests under Wine and QEMU. Off by default, measured: on this 2-core machine
# under the other sessions' load, clippy for one target (its std checked from source) took
# ~35 min and the Windows core tests ~11 min, against CI's ~6 min; installing the toolchain
# takes ~12 minutes and 5 GB. Otherwise one line saying what was skipped and the command.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ "${PI_CROSS_CI:-0}" != 1 ]; then
  echo "cross: skipped (clippy and tests for Windows, arm64, macOS, musl take far longer than CI here): run \`npm run test:cross\`, or PI_CROSS_CI=1 for its CI part"
  exit 0
fi
if [ "$(id -u)" != 0 ] || [ ! -e "$ROOTFS/.stamp-packages" ] || [ ! -e "$ROOTFS/opt/libnode/.stamp" ]; then
  echo "cross: skipped: no cross toolchain in $CACHE (or not root); \`npm run test:cross\` installs it and builds, lints and tests the other platforms"
  exit 0
fi
PI_CROSS_SKIP="build js user" exec bash "$CROSS_DIR/run.sh"
