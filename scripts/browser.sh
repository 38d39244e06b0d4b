#!/usr/bin/env bash
# Browser test of the account screen: runs Tests/Browser/account_screen.py, which starts `receiptverify serve` with
# OpenID Connect sign-in against `fake-openid` and a throwaway SQLite database, and drives the pages through headless
# Chromium with Selenium: sign-in, API keys, apps, a real POST /api, usage, transactions, revocation, sign-out.
#
# Usage: scripts/browser.sh [BIN_DIR]    BIN_DIR holds the receiptverify and fake-openid binaries (default: `swift
# build --show-bin-path`; nothing is built). Environment: RECEIPTVERIFY_FIXTURES (Apple fixtures folder, default
# ../shared/fixtures; missing fixtures skip the test), BROWSER_SCREENSHOTS (folder for the screenshots and server
# logs, default a new /tmp/receiptverify-screenshots.XXXXXX; kept, and printed at the end for CI to keep).
# Chromium, its driver (Debian's chromium, chromium-driver) and Selenium are installed when missing, as root only.
set -euo pipefail

log() { printf '==> %s\n' "$*"; }
err() { printf '==> %s\n' "$*" >&2; }

# --- inputs -------------------------------------------------------------------------------------------------

BIN_DIR=
if [ $# -gt 0 ]; then
    BIN_DIR=$(cd "$1" 2>/dev/null && pwd) || { err "no such folder: $1"; exit 1; }
fi
cd "$(dirname "$0")/.."
if [ -z "$BIN_DIR" ]; then
    BIN_DIR=$(timeout 60 swift build --show-bin-path 2>/dev/null || echo .build/debug)
fi
for bin in receiptverify fake-openid; do
    if [ ! -x "$BIN_DIR/$bin" ]; then
        err "no $bin binary at $BIN_DIR/$bin: build it first (swift build) or pass its folder: $0 BIN_DIR"
        exit 1
    fi
done
command -v python3 >/dev/null 2>&1 || { err "python3 is required"; exit 1; }

WHAT="the browser test"
# shellcheck source=scripts/fixture-receipt.sh
. scripts/fixture-receipt.sh

# --- Chromium, its driver, Selenium -------------------------------------------------------------------------

APT_UPDATED=
# apt_install PACKAGE...: installs Debian packages (root only; the caller checks).
apt_install() {
    log "installing $* (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    if [ -z "$APT_UPDATED" ]; then
        apt-get update -qq
        APT_UPDATED=1
    fi
    apt-get install -y -qq "$@" >/dev/null
    hash -r
}
need_root() { # WHAT: fails with a hint unless root
    [ "$(id -u)" -eq 0 ] && return 0
    err "$1 is missing; install it (needs root): $2"
    exit 1
}

MISSING=()
[ -x /usr/bin/chromium ] || MISSING+=(chromium)
[ -x /usr/bin/chromedriver ] || MISSING+=(chromium-driver)
if [ ${#MISSING[@]} -gt 0 ]; then
    need_root "${MISSING[*]}" "apt-get install -y ${MISSING[*]}"
    apt_install "${MISSING[@]}"
fi
have_selenium() { python3 -c 'import selenium.webdriver' >/dev/null 2>&1; }
if ! have_selenium; then
    need_root "Selenium for $(command -v python3)" "python3 -m pip install selenium"
    log "installing selenium (pip)"
    # Debian's own python3 refuses pip installs (PEP 668) and may lack pip: then Debian's python3-selenium.
    if ! python3 -m pip install --quiet selenium; then
        [ "$(command -v python3)" = /usr/bin/python3 ] || { err "pip could not install selenium"; exit 1; }
        apt_install python3-selenium
    fi
    have_selenium || { err "selenium still cannot be imported by $(command -v python3)"; exit 1; }
fi
log "chromium: $(/usr/bin/chromium --version 2>/dev/null | head -n 1); $(/usr/bin/chromedriver --version | head -n 1);" \
    "selenium $(python3 -c 'import selenium; print(selenium.__version__)')"

# --- the test -----------------------------------------------------------------------------------------------

SCREENSHOTS=${BROWSER_SCREENSHOTS:-$(mktemp -d /tmp/receiptverify-screenshots.XXXXXX)}
mkdir -p "$SCREENSHOTS"
SCREENSHOTS=$(cd "$SCREENSHOTS" && pwd)

log "browser test: $BIN_DIR, receipt $RECEIPT_NAME ($BUNDLE_ID, $ENVIRONMENT)"
rc=0
PYTHONDONTWRITEBYTECODE=1 python3 Tests/Browser/account_screen.py --bin-dir "$BIN_DIR" --screenshots "$SCREENSHOTS" \
    --receipt "$RECEIPT" --bundle-id "$BUNDLE_ID" --environment "$ENVIRONMENT" --expected-status 0 || rc=$?
echo "screenshots: $SCREENSHOTS"
exit "$rc"
