#!/usr/bin/env bash
# Regenerates docs/cli.md from the binaries' own --help texts, so the reference
# can never drift from the code (tests/integration/test_docs_cli.sh checks it).
# usage: scripts/gen-cli-doc.sh [BUILD_DIR] [OUT]   (default build, docs/cli.md)
set -euo pipefail
BUILD="${1:-build}"
OUT="${2:-docs/cli.md}"
CG="$BUILD/agent/candle-graph"
SRV="$BUILD/server/candle-graph-server"
{
  echo "# Command-line reference"
  echo
  echo "Generated from the binaries' \`--help\` by \`scripts/gen-cli-doc.sh\`; do not edit by hand."
  echo "Conventions (design/CLI.md): JSON goes to stdout or \`-o FILE\`, diagnostics to stderr; exit 0"
  echo "when the declared output was produced, 1 on failure, 2 on a usage error; strict flags"
  echo "(\`summary --require-valid\`, \`compare --require-eligible\`) fail after writing."
  echo
  echo "## candle-graph"
  echo
  echo '```'
  "$CG" --help
  echo '```'
  for cmd in $("$CG" --help | awk '/^commands:/{f=1;next} f && NF {print $1}'); do
    echo
    echo "### candle-graph $cmd"
    echo
    echo '```'
    "$CG" "$cmd" --help
    echo '```'
  done
  if [ -x "$SRV" ]; then
    echo
    echo "## candle-graph-server"
    echo
    echo '```'
    "$SRV" --help
    echo '```'
    for cmd in $("$SRV" --help | awk 'NR > 1 && NF {print $1}'); do
      echo
      echo "### candle-graph-server $cmd"
      echo
      echo '```'
      "$SRV" "$cmd" --help
      echo '```'
    done
  fi
  echo
  echo "## make"
  echo
  echo "| target | what it does |"
  echo "| --- | --- |"
  echo "| \`make bootstrap\` | installs the Debian (and npm) packages the project needs, idempotently |"
  echo "| \`make build\` | builds everything with warnings as errors |"
  echo "| \`make run\` | bootstrap + build, then starts the demo system (server, embedded PostgreSQL, demo bundles) |"
  echo "| \`make test\` | bootstrap + build, every test through ctest, then the unit tests under ASan+UBSan |"
  echo "| \`make bench\` | every benchmark, each reported as a ratio to a stock tool measured in the same run |"
} > "$OUT"
