#!/usr/bin/env bash
# `make demo-editor`: the real editor experience in a browser in one step. Installs code-server (cached), installs
# the freshly built .vsix into a private profile, copies examples/ to a scratch workspace (so quick fixes never edit
# the repository), starts code-server on 127.0.0.1 without a password and prints the URL. Ctrl+C stops it.
# PORT (default 8080) and DYNAMO_LENS_E2E_PYTHON (the interpreter runs use; default .venv/bin/python) can be set.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
CACHE="${DYNAMO_LENS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dynamo-lens}"
PORT="${PORT:-8080}"
PYTHON="${DYNAMO_LENS_E2E_PYTHON:-$ROOT/.venv/bin/python}"
VERSION="$(node -p "require('$ROOT/package.json').version")"
VSIX="$ROOT/dynamo-lens-$VERSION.vsix"
DEMO="$CACHE/demo-editor"

[ -f "$VSIX" ] || { echo "demo-editor: $VSIX is missing; run 'make extension' first" >&2; exit 1; }
bash "$ROOT/extension/scripts/install-code-server.sh" >/dev/null
CODE_SERVER="$CACHE/bin/code-server"

rm -rf "$DEMO"
mkdir -p "$DEMO/user-data/User" "$DEMO/extensions" "$DEMO/workspace"
cp -R "$ROOT/examples" "$DEMO/workspace/examples"
"$CODE_SERVER" --user-data-dir "$DEMO/user-data" --extensions-dir "$DEMO/extensions" --install-extension "$VSIX" >&2
cat > "$DEMO/user-data/User/settings.json" <<JSON
{
  "dynamoLens.interpreter": "$PYTHON",
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.secondarySideBar.defaultVisibility": "hidden",
  "chat.disableAIFeatures": true,
  "telemetry.telemetryLevel": "off",
  "editor.inlayHints.enabled": "on"
}
JSON
: > "$DEMO/config.yaml"

echo
echo "  Dynamo Lens in VS Code (code-server): http://127.0.0.1:$PORT/?folder=$DEMO/workspace"
echo "  Open examples/recompiling_counter.py, hover 'forward', then run 'Dynamo Lens: Run Current File' (F1)."
echo "  Ctrl+C stops it."
echo
exec "$CODE_SERVER" --bind-addr "127.0.0.1:$PORT" --auth none --config "$DEMO/config.yaml" \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --user-data-dir "$DEMO/user-data" --extensions-dir "$DEMO/extensions" "$DEMO/workspace"
