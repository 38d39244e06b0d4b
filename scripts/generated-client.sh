#!/usr/bin/env bash
# Generates a client for the live server at RV_URL from the OpenAPI document it serves and runs the recipe built on
# it (docs/recipes/python-generated or docs/recipes/swift-generated). Fails if the served document is not the
# repository's, if the generator warns (a warning means a route or model left out), or if the recipe fails.
# scripts/recipes.sh runs it with the recipe's environment.
#
# Usage: scripts/generated-client.sh python|swift    Environment: RV_URL (and the recipe's inputs), RV_WORK (a
# scratch folder), RV_OPC (python: where openapi-python-client is installed, for PYTHONPATH).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
language=${1:?python or swift}
work=${RV_WORK:?a scratch folder}
mkdir -p "$work"

python3 - "$RV_URL/openapi.json" "$work/openapi.json" <<'PY'
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=30) as response:
    open(sys.argv[2], "wb").write(response.read())
PY
if ! cmp -s "$work/openapi.json" Sources/ReceiptServer/Operations/openapi.json; then
    echo "FAIL the served /openapi.json is not Sources/ReceiptServer/Operations/openapi.json"
    exit 1
fi
echo "ok   the served document is the repository's"

# warnings LOG PATTERN: fails, showing them, if the generator's log has any.
warnings() {
    if grep -qiE "$2" "$1"; then
        echo "FAIL the generator warned (something would be left out of the client):"
        grep -iE -A8 "$2" "$1" | head -n 60
        exit 1
    fi
}

case $language in
python)
    # The recipe's configuration (its post-hook mends a missing import of the generator's; see the file).
    rm -rf "$work/python-client"
    PYTHONPATH="$RV_OPC" python3 -m openapi_python_client generate --path "$work/openapi.json" \
        --output-path "$work/python-client" --config "$ROOT/docs/recipes/python-generated/openapi-python-client.yaml" \
        >"$work/opc.log" 2>&1 \
        || { cat "$work/opc.log"; echo "FAIL openapi-python-client did not generate a client"; exit 1; }
    warnings "$work/opc.log" "warning|unable|error|cannot|failed|skipping"
    echo "ok   openapi-python-client generated $(ls "$work/python-client/receipt_verify_client/models" | grep -c '\.py$') model files, no warning"
    cd "$ROOT/docs/recipes/python-generated"
    PYTHONPATH="$work/python-client:$RV_OPC" exec python3 verify.py
    ;;
swift)
    # The build plugin generates from Sources/GeneratedClientRecipe/openapi.json, a link to the repository's
    # document (checked above to be the served one).
    cd "$ROOT/docs/recipes/swift-generated"
    swift build --product GeneratedClientRecipe >"$work/swift-build.log" 2>&1 \
        || { tail -n 60 "$work/swift-build.log"; echo "FAIL the generated client did not build"; exit 1; }
    warnings "$work/swift-build.log" "warning:.*\[context:"
    echo "ok   swift-openapi-generator generated a client that builds, no warning"
    exec "$(swift build --show-bin-path)/GeneratedClientRecipe"
    ;;
*)
    echo "usage: $0 python|swift" >&2
    exit 2
    ;;
esac
