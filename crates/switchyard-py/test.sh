#!/usr/bin/env bash
# The Python package's tests: given a venv (default: the repository's .venv), installs the
# pinned build and test tools into it, builds the extension into it with
# `maturin develop`, and runs the pytest suite against the in-process mock.
#   bash crates/switchyard-py/test.sh [VENV] [pytest args...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${1:-$root/.venv}"
shift || true

if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements-dev.txt"
# maturin develop installs into the active virtualenv.
export VIRTUAL_ENV="$venv"
export PATH="$venv/bin:$PATH"
(cd "$here" && maturin develop --quiet ${MATURIN_FLAGS:-})
# Hermetic: no user backends file, no default model from the caller's shell.
unset SWITCHYARD_MODEL SWITCHYARD_BACKEND MOCK_BASE_URL
export SWITCHYARD_BACKENDS="$here/python/tests/.no-backends.yaml"
exec "$venv/bin/python" -m pytest "$here/python/tests" -q "$@"
