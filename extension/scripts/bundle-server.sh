#!/usr/bin/env bash
# Fills extension/bundled/ (build output, gitignored) with what the .vsix ships so the server runs on any user
# Python >= 3.10 without installing anything there:
#   libs/    pygls, lsprotocol, tomli and their dependencies: pure-Python wheels resolved for Python 3.10
#   server/  a copy of server/dynamo_lens
# The requirements are read from pyproject.toml's [project].dependencies (markers dropped: the bundle must work
# on 3.10 too, so it always carries tomli).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PYTHON" ] || PYTHON=python3
OUT="$ROOT/extension/bundled"

mapfile -t REQUIREMENTS < <("$PYTHON" - "$ROOT/pyproject.toml" <<'PY'
import sys
try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib
with open(sys.argv[1], "rb") as f:
    for requirement in tomllib.load(f)["project"]["dependencies"]:
        print(requirement.split(";")[0].strip())
PY
)

rm -rf "$OUT"
mkdir -p "$OUT/libs" "$OUT/server"
echo "bundle-server: ${REQUIREMENTS[*]} for Python 3.10 (pure Python) into $OUT/libs" >&2
"$PYTHON" -m pip install --quiet --disable-pip-version-check --no-compile \
  --target "$OUT/libs" --implementation py --python-version 3.10 --only-binary=:all: \
  "${REQUIREMENTS[@]}"
# pip judges the markers of *dependencies* (e.g. cattrs' `exceptiongroup; python_version < '3.11'`) with the
# interpreter it runs on, not with --python-version: add what Python 3.10 needs until nothing is missing.
for _ in 1 2 3; do
  mapfile -t MISSING < <("$PYTHON" - "$OUT/libs" <<'PY'
import pathlib, sys
from importlib.metadata import PathDistribution
from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name

libs = pathlib.Path(sys.argv[1])
dists = [PathDistribution(p) for p in libs.glob("*.dist-info")]
have = {canonicalize_name(d.metadata["Name"]) for d in dists}
env = {"python_version": "3.10", "python_full_version": "3.10.0", "implementation_name": "cpython", "extra": ""}
for dist in dists:
    for text in dist.requires or []:
        req = Requirement(text)
        if (req.marker is None or req.marker.evaluate(env)) and canonicalize_name(req.name) not in have:
            print(str(req).split(";")[0])
PY
)
  [ "${#MISSING[@]}" -eq 0 ] && break
  echo "bundle-server: adding what Python 3.10 needs: ${MISSING[*]}" >&2
  "$PYTHON" -m pip install --quiet --disable-pip-version-check --no-compile --no-deps \
    --target "$OUT/libs" --implementation py --python-version 3.10 --only-binary=:all: "${MISSING[@]}"
done
rm -rf "$OUT/libs/bin"

(cd "$ROOT/server" && find dynamo_lens -name '__pycache__' -prune -o -type f -print) | while read -r file; do
  mkdir -p "$OUT/server/$(dirname "$file")"
  cp "$ROOT/server/$file" "$OUT/server/$file"
done
echo "bundle-server: $(find "$OUT" -type f | wc -l) files, $(du -sh "$OUT" | cut -f1)" >&2
