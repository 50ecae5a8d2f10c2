#!/usr/bin/env bash
# Install what the tests need, then run lint, types and the tests: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
python3 -m ruff check src tests bench
python3 -m ruff format --check src tests bench
python3 -m mypy
python3 -m pytest "$@"
