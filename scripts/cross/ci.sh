#!/usr/bin/env bash
# CI's part of the cross run (.ci/run): when the cross toolchain is already in the cache
# (`npm run test:cross` installs it, ~12 min and ~5 GB, which CI does not do), clippy -D warnings
# for every target and the core crate's tests under Wine (windows-gnu) and QEMU (linux arm64).
# cargo's target folders live in the cache too (env.sh), so a fresh clone rebuilds only this
# package's crates: measured warm in BENCHMARKS.md ("Cross builds"). Without the toolchain (or
# not root: the chroot needs it) one line says what was skipped and the command that does it all.
# PI_CROSS_CI=0 skips it.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
if [ "${PI_CROSS_CI:-1}" = 0 ]; then
  echo "cross: skipped (PI_CROSS_CI=0)"
  exit 0
fi
if [ "$(id -u)" != 0 ] || [ ! -e "$ROOTFS/.stamp-packages" ] || [ ! -e "$ROOTFS/opt/libnode/.stamp" ]; then
  echo "cross: skipped: no cross toolchain in $CACHE (or not root); \`npm run test:cross\` installs it and builds, lints and tests the other platforms"
  exit 0
fi
PI_CROSS_SKIP="build js user" exec bash "$CROSS_DIR/run.sh"
