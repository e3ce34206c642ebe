#!/usr/bin/env bash
# Installs the Debian 12 packages candle-graph needs to build, test and run.
# Idempotent: packages already installed are skipped; apt is only touched when
# something is missing. Set CG_BOOTSTRAP_SKIP=1 to skip entirely (e.g. in a
# prepared container). Set CG_BOOTSTRAP_BROWSER=0 to skip Chromium and npm.
set -euo pipefail
[ "${CG_BOOTSTRAP_SKIP:-0}" = "1" ] && exit 0

PKGS=(
  build-essential cmake pkg-config
  libsodium-dev libzstd-dev libarchive-dev libcmocka-dev
  libmicrohttpd-dev libpq-dev libcurl4-openssl-dev
  postgresql postgresql-contrib
  jq zstd openssl curl ca-certificates
)
if [ "${CG_BOOTSTRAP_BROWSER:-1}" = "1" ]; then
  PKGS+=(chromium nodejs npm)
fi

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    # nodejs/npm may come from another source (e.g. a preinstalled node); accept a binary on PATH
    case "$p" in
      nodejs) command -v node >/dev/null 2>&1 && continue ;;
      npm) command -v npm >/dev/null 2>&1 && continue ;;
    esac
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -gt 0 ]; then
  echo "bootstrap: installing ${missing[*]}" >&2
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "bootstrap: all Debian packages present" >&2
fi

# npm packages (pinned by web/package-lock.json) for the browser tests
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
if [ "${CG_BOOTSTRAP_BROWSER:-1}" = "1" ] && [ -f "$ROOT/web/package-lock.json" ]; then
  if [ ! -d "$ROOT/web/node_modules" ] || [ "$ROOT/web/package-lock.json" -nt "$ROOT/web/node_modules/.package-lock.json" ]; then
    echo "bootstrap: npm ci in web/" >&2
    (cd "$ROOT/web" && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
