#!/usr/bin/env bash
# docs/cli.md must equal what scripts/gen-cli-doc.sh generates from the current binaries.
set -euo pipefail
BUILD="${CG_BINARY_DIR:?}"
TMP="$(mktemp)"
trap 'rm -f "$TMP"' EXIT
bash scripts/gen-cli-doc.sh "$BUILD" "$TMP"
if ! diff -u docs/cli.md "$TMP"; then
  echo "docs/cli.md is stale: run scripts/gen-cli-doc.sh $BUILD" >&2
  exit 1
fi
echo "docs/cli.md is current"
