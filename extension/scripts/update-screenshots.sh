#!/usr/bin/env bash
# Copies the README's screenshots from the last end-to-end run (test-artifacts/e2e/, `npm run test:e2e`) to
# docs/screenshots/, shrunk with pngquant when it is installed (Debian package `pngquant`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
FROM="$ROOT/test-artifacts/e2e"
TO="$ROOT/docs/screenshots"
SHOTS=(trusted/hover-predicted trusted/run-problems trusted/lens trusted/frames-tree trusted/quick-fix-menu untrusted/untrusted-run-refused)

mkdir -p "$TO"
for shot in "${SHOTS[@]}"; do
  source=$(ls "$FROM/$(dirname "$shot")"/[0-9][0-9]-"$(basename "$shot")".png 2>/dev/null | head -1)
  [ -n "$source" ] || { echo "update-screenshots: no $shot in $FROM; run npm run test:e2e first" >&2; exit 1; }
  target="$TO/$(basename "$shot").png"
  if command -v pngquant >/dev/null; then
    pngquant --quality 60-85 --speed 1 --force --output "$target" "$source"
  else
    cp "$source" "$target"
  fi
  echo "$target $(stat -c %s "$target") bytes"
done
