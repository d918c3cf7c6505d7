#!/usr/bin/env bash
# CI's part of the cross run (.ci/run): when the cross toolchain is already in the cache
# (`npm run test:cross` installs it, ~12 min and ~5 GB, which CI does not do): clippy -D warnings
# for every target (Windows, Linux arm64, macOS x64/arm64, musl x64/arm64) and the core crate's
# tests under Wine. cargo's target folders live in the cache too (env.sh), so a fresh clone
# rebuilds only this package's crates: ~4 min in all, warm (BENCHMARKS.md, "Cross builds").
# Left to `npm run test:cross`: the core tests under QEMU (~11 min: emulated arm64) and the JS
# subsets under Wine (~4 min) and QEMU (~8 min); PI_CROSS_CI=full runs them here too.
# Without the toolchain (or not root: the chroot needs it) one line says what was skipped and the
# command that does it all. PI_CROSS_CI=0 skips it.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
case "${PI_CROSS_CI:-1}" in
  0)
    echo "cross: skipped (PI_CROSS_CI=0)"
    exit 0
    ;;
esac
if [ "$(id -u)" != 0 ] || [ ! -e "$ROOTFS/.stamp-packages" ] || [ ! -e "$ROOTFS/opt/libnode/.stamp" ]; then
  echo "cross: skipped: no cross toolchain in $CACHE (or not root); \`npm run test:cross\` installs it and builds, lints and tests the other platforms"
  exit 0
fi
# The sid root is entered in a private mount namespace (env.sh in_root): a sandbox that refuses
# one cannot run the cross part at all, which is a skip here, not a failure.
if ! unshare -m --propagation private -- true 2>/dev/null; then
  echo "cross: skipped: this environment refuses a private mount namespace (unshare -m), which the cross toolchain's chroot needs"
  exit 0
fi
if [ "${PI_CROSS_CI:-1}" = full ]; then
  PI_CROSS_SKIP="user" exec bash "$CROSS_DIR/run.sh"
fi
PI_CROSS_SKIP="build js user" PI_CROSS_CORE_TARGETS="x86_64-pc-windows-gnu" exec bash "$CROSS_DIR/run.sh"
