#!/usr/bin/env bash
# Install Debian's Chromium for the UI tests (tests/ui, `pytest -m ui`); nothing to do when it
# is there. The tests launch /usr/bin/chromium through Python Playwright (a test dependency in
# pyproject.toml); Playwright's own browser download is not used.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
