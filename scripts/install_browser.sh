#!/usr/bin/env bash
# Install what the browser UI tests (tests/ui, pytest -m ui) need, skipping what is there:
# Debian's Chromium at /usr/bin/chromium (apt-get) and Python Playwright (pip). Playwright's
# own browser download is not used: the tests launch /usr/bin/chromium.
#
#   bash scripts/install_browser.sh            # Playwright into `python3`
#   PYTHON=/path/to/venv/bin/python bash scripts/install_browser.sh
set -euo pipefail

PYTHON="${PYTHON:-python3}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi

if [ ! -x /usr/bin/chromium ]; then
    $SUDO apt-get update
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y chromium
fi

if ! "$PYTHON" -c "import playwright.sync_api" 2>/dev/null; then
    "$PYTHON" -m pip install "playwright>=1.40"
fi

/usr/bin/chromium --version
"$PYTHON" -c "import importlib.metadata as m; print('playwright', m.version('playwright'))"
