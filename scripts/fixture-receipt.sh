# Sourced by scripts/recipes.sh and scripts/browser.sh: the real Apple receipt their live tests verify, and what an
# app needs to accept it. Sets RECEIPT (its .b64 file), BUNDLE_ID and ENVIRONMENT (production or sandbox), and the
# json helper; with no fixtures, logs "skipping WHAT" and exits 0 (under CI=true, where every part must run, it fails).
# Needs log() and python3.
#
# Usage: WHAT="the browser test"; . scripts/fixture-receipt.sh

FIXTURES=${RECEIPTVERIFY_FIXTURES:-../shared/fixtures}
RECEIPT_NAME=revenuecat_sandbox_ios_2020
if [ ! -f "$FIXTURES/receipts/$RECEIPT_NAME.b64" ]; then
    if [ "${CI:-}" = true ]; then
        log "CI: $WHAT cannot run: no fixtures at $FIXTURES/receipts/$RECEIPT_NAME.b64 (set RECEIPTVERIFY_FIXTURES)"
        exit 1
    fi
    log "skipping $WHAT: no fixtures at $FIXTURES/receipts/$RECEIPT_NAME.b64 (set RECEIPTVERIFY_FIXTURES)"
    exit 0
fi
RECEIPT=$(cd "$FIXTURES/receipts" && pwd)/$RECEIPT_NAME.b64

# json FIELD: prints a top-level field of the JSON object on stdin.
json() { python3 -c 'import json, sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

# The app must carry the receipt's bundle ID and allow its environment, or the answer is 403.
EXPECTED=${RECEIPT%.b64}.expected.json
BUNDLE_ID=$(json bundle_id < "$EXPECTED")
case $(json receipt_type < "$EXPECTED") in
    Production | ProductionVPP) ENVIRONMENT=production ;;
    *) ENVIRONMENT=sandbox ;;
esac
