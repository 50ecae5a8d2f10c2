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
command -v openssl >/dev/null || need+=(openssl)  # a TLS redis-server's certificates
if ((${#need[@]})); then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
python3 -m ruff check src tests bench scripts conftest.py
python3 -m ruff format --check src tests bench scripts conftest.py
python3 -m mypy
# every core: the slow real-service tests run beside the quick ones
python3 -m pytest -n auto "$@"

# The quick tests again on each newer Python this machine has (pyenv's, or on PATH), in a
# venv of its own: faults that only a newer Python shows (its gc, its gzip) were found that
# way. NEARDUP_OTHER_PYTHONS=0 skips them.
[ "${NEARDUP_OTHER_PYTHONS:-1}" = 0 ] && exit 0
for v in 3.12 3.13; do
    py=""
    for candidate in "$(command -v "python$v" || true)" \
        $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}/versions/$v".*/bin/"python$v" 2>/dev/null | sort -V -r); do
        # a pyenv shim is on PATH for every version pyenv knows, and fails for the others
        if [ -n "$candidate" ] && "$candidate" -c 'import sys' 2>/dev/null; then
            py="$candidate"
            break
        fi
    done
    if [ -z "$py" ]; then
        echo "check.sh: no Python $v on this machine; its quick tests are not run"
        continue
    fi
    venv="${XDG_CACHE_HOME:-$HOME/.cache}/neardup-check/py$v"
    [ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e '.[test]'
    echo "check.sh: the quick tests on $("$venv/bin/python" --version)"
    "$venv/bin/python" -m pytest -n auto -m "not slow" -p no:cacheprovider "$@"
done
