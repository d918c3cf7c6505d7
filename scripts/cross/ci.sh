#!/usr/bin/env bash
# CI's part of the cross run (.ci/run): when the cross toolchain is already in the cache
# (`npm run test:cross` installs it), clippy -D warnings for every target and the core tests
# under Wine and QEMU. When it is not there, one line saying so: installing it takes about
# 12 minutes and 5 GB (debootstrap, apt), twice CI's whole run, so CI does not.
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
