#!/usr/bin/env bash
# Install what the tests need (Python packages and the services: redis-server from Debian),
# then run lint, types and the tests: the README's test command.
set -euo pipefail
cd "$(dirname "$0")/.."

# services and programs the tests start themselves: Redis for the stores, Chromium (driven
# by Playwright, never downloaded by it) and CJK fonts for the page
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || need+=(chromium)
dpkg -s fonts-noto-cjk >/dev/null 2>&1 || need+=(fonts-noto-cjk)
command -v wget >/dev/null || need+=(wget)  # the WARC test crawls a local site with wget --warc-file
if ((${#need[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
python3 -m ruff check src tests bench conftest.py
python3 -m ruff format --check src tests bench conftest.py
python3 -m mypy
# every core: the slow real-service tests run beside the quick ones
python3 -m pytest -n auto "$@"
