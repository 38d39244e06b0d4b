#!/usr/bin/env bash
# Runs every client recipe in docs/recipes/ against a live server: a throwaway database with a plan that includes
# /apiencrypted, an account, an API key and two apps (aes-256-cbc and aes-256-gcm) for a real Apple receipt, and a
# Google Play app whose purchase a fake Google on loopback answers (scripts/fake-google.py). Then
# the webhook verifiers of docs/recipes/webhooks/: `webhooks test` signs an event to a loopback receiver, and each
# verifier must accept that delivery and refuse its body with one byte changed.
#
# Usage: scripts/recipes.sh [BIN_DIR]    BIN_DIR holds the receiptverify binary (default: `swift build
# --show-bin-path`; nothing is built). Environment: RECEIPTVERIFY_FIXTURES (Apple fixtures folder, default
# ../shared/fixtures). With CI set and running as root, missing runtimes are installed from Debian packages;
# otherwise a recipe whose runtime is missing is skipped. Exits non-zero if a recipe that ran failed, or, with
# CI=true, if any recipe was skipped.
set -euo pipefail

log() { printf '==> %s\n' "$*"; }
err() { printf '==> %s\n' "$*" >&2; }

# --- inputs -------------------------------------------------------------------------------------------------

BIN_DIR=
if [ $# -gt 0 ]; then
    BIN_DIR=$(cd "$1" 2>/dev/null && pwd) || { err "no such folder: $1"; exit 1; }
fi
cd "$(dirname "$0")/.."
ROOT=$PWD
if [ -z "$BIN_DIR" ]; then
    BIN_DIR=$(timeout 60 swift build --show-bin-path 2>/dev/null || echo .build/debug)
fi
RV_BIN=$BIN_DIR/receiptverify
if [ ! -x "$RV_BIN" ]; then
    err "no receiptverify binary at $RV_BIN: build it first (swift build) or pass its folder: $0 BIN_DIR"
    exit 1
fi
command -v python3 >/dev/null 2>&1 || { err "python3 is required (JSON and a free port)"; exit 1; }

WHAT="all recipes"
# shellcheck source=scripts/fixture-receipt.sh
. scripts/fixture-receipt.sh

# --- a live server ------------------------------------------------------------------------------------------

TMP=$(mktemp -d /tmp/receiptverify-recipes.XXXXXX)
SERVER_PID=
HOOK_PID=
GOOGLE_PID=
cleanup() {
    local pid
    for pid in "$SERVER_PID" "$HOOK_PID" "$GOOGLE_PID"; do
        if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            wait "$pid" 2>/dev/null || true
        fi
    done
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

export RECEIPTVERIFY_DATABASE_URL=$TMP/receiptverify.sqlite
export RECEIPTVERIFY_MASTER_KEY_FILE=$TMP/receiptverify.key
# The webhook receiver listens on loopback over plain http: the self-hosted setting (serve and the CLI read it).
export RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS=on
unset RECEIPTVERIFY_MASTER_KEY

# rv ARGS...: runs an admin command; shows its errors if it fails.
rv() {
    if ! "$RV_BIN" "$@" 2>"$TMP/admin.err"; then
        err "receiptverify $* failed:"
        cat "$TMP/admin.err" >&2
        return 1
    fi
}

log "setting up: plan, account, key, apps for $BUNDLE_ID ($ENVIRONMENT)"
rv plan set recipes --quota unlimited --rate-limit 1000 --encrypted true --json >/dev/null
rv account create --name Recipes --email recipes@example.com --plan recipes --json >/dev/null
RV_KEY=$(rv key create --account recipes@example.com --label recipes --json | json key)
add_app() { # CIPHER: prints the new app's token
    rv app add --account recipes@example.com --name "recipes $1" --bundle-id "$BUNDLE_ID" \
        --environment "$ENVIRONMENT" --mode local --cipher "$1" --share-bundle-id --json | json token
}
RV_TOKEN_CBC=$(add_app aes-256-cbc)
RV_TOKEN_GCM=$(add_app aes-256-gcm)
RV_RESULT_KEY_CBC=$(rv app show "$RV_TOKEN_CBC" --reveal-key --json | json result_key)
RV_RESULT_KEY_GCM=$(rv app show "$RV_TOKEN_GCM" --reveal-key --json | json result_key)
# The verifyReceipt drop-in's app: a shared secret, as a backend migrating from Apple has one.
RV_SHARED_SECRET=$(python3 -c 'import secrets; print(secrets.token_hex(16))')
RV_TOKEN_DROPIN=$(rv app add --account recipes@example.com --name "recipes drop-in" --bundle-id "$BUNDLE_ID" \
    --environment "$ENVIRONMENT" --mode local --shared-secret "$RV_SHARED_SECRET" --share-bundle-id --json | json token)
export RV_SHARED_SECRET RV_TOKEN_DROPIN
# The generated clients' apps (docs/recipes/python-generated, swift-generated): `confirm` delivery, which each
# recipe confirms; one app each, so that each sees the receipt's transactions new for its own user.
confirm_app() { # NAME: prints the new app's token
    rv app add --account recipes@example.com --name "recipes $1" --bundle-id "$BUNDLE_ID" --environment "$ENVIRONMENT" \
        --mode local --cipher aes-256-cbc --delivery confirm --share-bundle-id --json | json token
}
RV_TOKEN_CONFIRM_PYTHON=$(confirm_app python-generated)
RV_TOKEN_CONFIRM_SWIFT=$(confirm_app swift-generated)
RV_RESULT_KEY_CONFIRM_PYTHON=$(rv app show "$RV_TOKEN_CONFIRM_PYTHON" --reveal-key --json | json result_key)
RV_RESULT_KEY_CONFIRM_SWIFT=$(rv app show "$RV_TOKEN_CONFIRM_SWIFT" --reveal-key --json | json result_key)

# Google Play (docs/recipes/google-play): a fake Google on loopback (scripts/fake-google.py checks each token grant's
# signature with the service account key's public half) and an app of its package with that key. Needs Python's
# cryptography for the key and the fake; without it the recipe is skipped.
GOOGLE_ARGS=()
RV_TOKEN_GOOGLE=
export RV_GOOGLE_PACKAGE=com.example.recipes RV_GOOGLE_PRODUCT=coins_100 RV_GOOGLE_PURCHASE_TOKEN=recipe-purchase-token
if python3 -c 'import cryptography' >/dev/null 2>&1; then
    python3 - "$TMP/google-key.json" "$TMP/google-key.pub" <<'PY'
import json, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
json.dump({"type": "service_account", "project_id": "recipes", "private_key_id": "0123456789abcdef",
           "private_key": pem.decode(), "client_email": "verifier@recipes.iam.gserviceaccount.com",
           "token_uri": "https://oauth2.googleapis.com/token"}, open(sys.argv[1], "w"))
open(sys.argv[2], "wb").write(key.public_key().public_bytes(
    serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
PY
    python3 scripts/fake-google.py "$TMP/google.port" "$TMP/google-key.pub" verifier@recipes.iam.gserviceaccount.com \
        "$RV_GOOGLE_PACKAGE" "$RV_GOOGLE_PRODUCT" "$RV_GOOGLE_PURCHASE_TOKEN" 2>"$TMP/fake-google.log" &
    GOOGLE_PID=$!
    for _ in $(seq 1 50); do [ -s "$TMP/google.port" ] && break; sleep 0.1; done
    if [ -s "$TMP/google.port" ]; then
        GOOGLE_URL=http://127.0.0.1:$(cat "$TMP/google.port")
        GOOGLE_ARGS=(--google-play-api-url "$GOOGLE_URL" --google-oauth-token-url "$GOOGLE_URL/token")
        RV_TOKEN_GOOGLE=$(rv app add --account recipes@example.com --name "recipes google" --bundle-id "$BUNDLE_ID" \
            --environment production --package-name "$RV_GOOGLE_PACKAGE" \
            --google-service-account-file "$TMP/google-key.json" --product "$RV_GOOGLE_PRODUCT=consumable" \
            --share-bundle-id --json | json token)
    fi
fi
export RV_TOKEN_GOOGLE

PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
RV_URL=http://127.0.0.1:$PORT
export RV_URL RV_KEY RV_TOKEN_CBC RV_TOKEN_GCM RV_RESULT_KEY_CBC RV_RESULT_KEY_GCM RV_RECEIPT=$RECEIPT

log "starting the server on $RV_URL"
"$RV_BIN" serve --hostname 127.0.0.1 --port "$PORT" ${GOOGLE_ARGS[@]+"${GOOGLE_ARGS[@]}"} >"$TMP/server.log" 2>&1 &
SERVER_PID=$!
healthy() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$RV_URL/healthz" 2>/dev/null; }
for _ in $(seq 1 150); do
    healthy && break
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        err "the server exited:"; cat "$TMP/server.log" >&2; exit 1
    fi
    sleep 0.2
done
healthy || { err "the server did not answer /healthz within 30 s:"; cat "$TMP/server.log" >&2; exit 1; }

# --- runtimes -----------------------------------------------------------------------------------------------

APT_UPDATED=
# apt_install PACKAGE...: installs Debian packages, only as root with CI set; fails otherwise.
apt_install() {
    [ -n "${CI:-}" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 || return 1
    log "installing $*"
    if [ -z "$APT_UPDATED" ]; then
        if ! apt-get update -qq >"$TMP/apt.log" 2>&1; then
            tail -n 5 "$TMP/apt.log" >&2
            return 1
        fi
        APT_UPDATED=1
    fi
    if ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >"$TMP/apt.log" 2>&1; then
        tail -n 5 "$TMP/apt.log" >&2
        return 1
    fi
    hash -r
}

# need_NAME: succeeds if the recipe's runtime is here (installing it if allowed), else sets REASON.
REASON=
install_hint() { # PACKAGE...: the reason when installing was not allowed or failed
    if [ -n "${CI:-}" ] && [ "$(id -u)" -eq 0 ]; then REASON="$REASON; installing $* failed"
    else REASON="$REASON; install $* or run as root with CI=1"; fi
}
have_sh() { command -v curl && command -v openssl && command -v base64 && command -v od; } >/dev/null 2>&1
need_sh() {
    have_sh && return 0
    apt_install curl openssl coreutils && have_sh && return 0
    REASON="curl, openssl, base64 or od not found"; install_hint curl openssl coreutils; return 1
}
have_python() { python3 -c 'import cryptography' >/dev/null 2>&1; }
need_python() {
    have_python && return 0
    if [ -n "${CI:-}" ] && [ "$(id -u)" -eq 0 ]; then
        log "installing Python's cryptography"
        python3 -m pip install --quiet cryptography >"$TMP/pip.log" 2>&1 || apt_install python3-cryptography || true
        have_python && return 0
    fi
    REASON="Python's cryptography not found"; install_hint "cryptography (pip)"; return 1
}
have_node() { command -v node >/dev/null 2>&1 && node -e 'process.exit(typeof fetch === "function" ? 0 : 1)' 2>/dev/null; }
need_node() {
    have_node && return 0
    apt_install nodejs && have_node && return 0
    REASON="node 18+ (built-in fetch) not found"; install_hint nodejs; return 1
}
# `java Verify.java` needs a JDK 11+: the source launcher compiles with the jdk.compiler module.
have_java() { command -v java >/dev/null 2>&1 && java --list-modules 2>/dev/null | grep -q '^jdk\.compiler@'; }
need_java() {
    have_java && return 0
    apt_install default-jdk-headless && have_java && return 0
    REASON="no JDK 11+ (java with jdk.compiler) found"; install_hint default-jdk-headless; return 1
}
have_go() { command -v go >/dev/null 2>&1; }
need_go() {
    have_go || apt_install golang-go || true
    if have_go; then
        # go run needs a build cache; without HOME there is none by default.
        [ -n "$(go env GOCACHE 2>/dev/null)" ] || export GOCACHE="$TMP/go-cache"
        return 0
    fi
    REASON="go not found"; install_hint golang-go; return 1
}
have_php() { command -v php >/dev/null 2>&1 && php -r 'exit(function_exists("openssl_decrypt") ? 0 : 1);' 2>/dev/null; }
need_php() {
    have_php && return 0
    apt_install php-cli && have_php && return 0
    REASON="php with the openssl extension not found"; install_hint php-cli; return 1
}
# The Swift recipe is a target of this package (it needs swift-crypto, already in the graph): `swift build` puts it
# beside receiptverify.
# The verifyReceipt drop-in is checked with a client library from PyPI, installed beside the recipe (not system-wide).
# The generated clients: openapi-python-client from PyPI, into a directory of its own; SwiftPM builds the Swift one
# (its first build, with swift-openapi-generator's plugin, takes minutes). CI must run both: there a missing
# generator fails the run.
need_python_generated() {
    need_python || return 1
    PYTHONPATH="$TMP/opc" python3 -c 'import openapi_python_client, httpx, attrs, dateutil' >/dev/null 2>&1 && return 0
    log "installing openapi-python-client (PyPI) into $TMP/opc"
    python3 -m pip install --quiet --disable-pip-version-check --target "$TMP/opc" openapi-python-client \
        >"$TMP/pip-opc.log" 2>&1 && return 0
    REASON="pip could not install openapi-python-client: $(tail -1 "$TMP/pip-opc.log")"
    if [ -n "${CI:-}" ]; then FAILED+=("python_generated ($REASON)"); fi
    return 1
}
need_swift_generated() {
    command -v swift >/dev/null 2>&1 && return 0
    REASON="swift not found"
    if [ -n "${CI:-}" ]; then FAILED+=("swift_generated ($REASON)"); fi
    return 1
}
have_dropin() { PYTHONPATH="$TMP/pylib" python3 -c 'import itunesiap' >/dev/null 2>&1; }
need_dropin() {
    export PYTHONPATH="$TMP/pylib${PYTHONPATH:+:$PYTHONPATH}"
    have_dropin && return 0
    log "installing itunes-iap (PyPI) into $TMP/pylib"
    python3 -m pip install --quiet --disable-pip-version-check --target "$TMP/pylib" itunes-iap >"$TMP/pip.log" 2>&1 || true
    have_dropin && return 0
    tail -n 5 "$TMP/pip.log" >&2
    REASON="itunes-iap (PyPI) could not be installed"; return 1
}
need_google() {
    [ -n "$RV_TOKEN_GOOGLE" ] && return 0
    REASON="no fake Google (Python's cryptography not found, or the fake did not start)"; return 1
}
need_swift() {
    [ -x "$BIN_DIR/SwiftRecipe" ] && return 0
    REASON="no SwiftRecipe binary in $BIN_DIR (swift build makes it)"; return 1
}

# --- the recipes --------------------------------------------------------------------------------------------

RAN=() SKIPPED=() FAILED=() PARTIAL=()
# run NAME DIR COMMAND...: runs one recipe in its folder, if its runtime is here.
run() {
    local name=$1 dir=$ROOT/docs/recipes/$2 rc=0 skips
    shift 2
    REASON=
    if ! "need_$name"; then
        log "skipping $name: $REASON"
        SKIPPED+=("$name ($REASON)")
        return 0
    fi
    log "running $name: $*"
    (cd "$dir" && timeout "${RECIPE_TIMEOUT:-600}" "$@") >"$TMP/$name.out" 2>&1 || rc=$?
    sed "s/^/    [$name] /" "$TMP/$name.out"
    RAN+=("$name")
    if [ "$rc" -ne 0 ]; then
        FAILED+=("$name (exit $rc)")
    fi
    skips=$(grep -c '^skip ' "$TMP/$name.out" || true)
    if [ "$skips" -gt 0 ]; then
        PARTIAL+=("$name $skips")
    fi
}

run sh sh sh verify.sh
run python python python3 verify.py
run node node node verify.js
run java java java Verify.java
run go go go run verify.go
run php php php verify.php
run swift swift "$BIN_DIR/SwiftRecipe"
RV_WORK=$TMP/generated-python RV_OPC=$TMP/opc RV_TOKEN_CONFIRM=$RV_TOKEN_CONFIRM_PYTHON \
    RV_RESULT_KEY_CONFIRM=$RV_RESULT_KEY_CONFIRM_PYTHON run python_generated python-generated \
    bash "$ROOT/scripts/generated-client.sh" python
RECIPE_TIMEOUT=1800 RV_WORK=$TMP/generated-swift RV_TOKEN_CONFIRM=$RV_TOKEN_CONFIRM_SWIFT \
    RV_RESULT_KEY_CONFIRM=$RV_RESULT_KEY_CONFIRM_SWIFT run swift_generated swift-generated \
    bash "$ROOT/scripts/generated-client.sh" swift
run dropin verifyreceipt python3 migrate.py
run google google-play python3 verify.py

kill "$SERVER_PID" 2>/dev/null || true
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=

# --- webhooks -----------------------------------------------------------------------------------------------
# The CLI signs and sends the test event itself, so no server is needed (none runs: no other delivery can arrive).

# A receiver on a free loopback port: saves the headers (`Name: value` lines, as received) and the raw body of the
# first POST to $TMP/hook.headers and $TMP/hook.body, answers 200 to every POST, and writes its port to $TMP/hook.port.
cat >"$TMP/receiver.py" <<'EOF'
import http.server, os, sys

folder = sys.argv[1]


def save(name, data):
    with open(os.path.join(folder, name + ".part"), "wb") as file:
        file.write(data)
    os.replace(os.path.join(folder, name + ".part"), os.path.join(folder, name))


class Hook(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                chunk = self.rfile.read(size + 2)[:size]
                if size == 0:
                    break
                body += chunk
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if not os.path.exists(os.path.join(folder, "hook.headers")):  # the first POST only; headers last
            save("hook.body", body)
            save("hook.headers", "".join(f"{name}: {value}\n" for name, value in self.headers.items()).encode())
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Hook)
save("hook.port", str(server.server_port).encode())
server.serve_forever()
EOF

# need_webhook_NAME: as need_NAME, for the verifier (standard library only, so lighter needs than the recipe's).
need_webhook_python() { return 0; }
# The Standard Webhooks library from PyPI, into a directory of its own (Debian's python3 refuses system-wide pips).
need_webhook_standard() {
    [ -d "$TMP/standardwebhooks/standardwebhooks" ] && return 0
    python3 -m pip install --quiet --disable-pip-version-check --target "$TMP/standardwebhooks" standardwebhooks \
        >"$TMP/pip-standardwebhooks.log" 2>&1 && return 0
    REASON="pip could not install standardwebhooks: $(tail -1 "$TMP/pip-standardwebhooks.log")"
    # CI must judge deliveries with the library: there a missing library fails the run.
    if [ -n "${CI:-}" ]; then FAILED+=("webhooks-standard ($REASON)"); fi
    return 1
}
have_webhook_node() { command -v node >/dev/null 2>&1; }
need_webhook_node() {
    have_webhook_node && return 0
    apt_install nodejs && have_webhook_node && return 0
    REASON="node not found"; install_hint nodejs; return 1
}
need_webhook_java() { need_java; }
need_webhook_go() { need_go; }
have_webhook_php() { command -v php >/dev/null 2>&1 && php -r 'exit(function_exists("hash_hmac") && function_exists("hash_equals") ? 0 : 1);' 2>/dev/null; }
need_webhook_php() {
    have_webhook_php && return 0
    apt_install php-cli && have_webhook_php && return 0
    REASON="php with hash_hmac not found"; install_hint php-cli; return 1
}

# webhook_setup: starts the receiver, adds an endpoint to an app, and has `webhooks test` deliver to it; sets
# HOOK_SECRET and writes $TMP/hook.tampered (the body with one byte changed).
HOOK_SECRET=
webhook_setup() {
    local added id
    python3 "$TMP/receiver.py" "$TMP" >"$TMP/receiver.log" 2>&1 &
    HOOK_PID=$!
    for _ in $(seq 1 50); do
        [ -f "$TMP/hook.port" ] && break
        kill -0 "$HOOK_PID" 2>/dev/null || break
        sleep 0.2
    done
    if [ ! -f "$TMP/hook.port" ]; then
        err "the webhook receiver did not start:"; cat "$TMP/receiver.log" >&2; return 1
    fi
    log "webhook receiver on http://127.0.0.1:$(cat "$TMP/hook.port")/hook"
    added=$(rv webhooks add --app "$RV_TOKEN_CBC" --url "http://127.0.0.1:$(cat "$TMP/hook.port")/hook" --json) || return 1
    if ! id=$(printf %s "$added" | json id 2>/dev/null) || ! HOOK_SECRET=$(printf %s "$added" | json secret 2>/dev/null); then
        err "webhooks add --json printed no id or secret: $added"; return 1
    fi
    rv webhooks test --app "$RV_TOKEN_CBC" --id "$id" | sed 's/^/    [webhooks test] /'
    [ "${PIPESTATUS[0]}" -eq 0 ] || return 1
    if [ ! -f "$TMP/hook.headers" ]; then
        err "webhooks test succeeded but the receiver saved no delivery"; return 1
    fi
    python3 -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 1; open(sys.argv[2], "wb").write(b)' \
        "$TMP/hook.body" "$TMP/hook.tampered"
}

# check_webhook NAME COMMAND...: runs one verifier on the saved delivery (it must print `valid …` and exit 0), then on
# the body with one byte changed (it must exit 1 and not print `valid`).
check_webhook() {
    local name=$1 dir=$ROOT/docs/recipes/webhooks rc=0
    shift
    log "running webhooks-$name: $* SECRET HEADERS_FILE BODY_FILE"
    RAN+=("webhooks-$name")
    (cd "$dir" && timeout 120 "$@" "$HOOK_SECRET" "$TMP/hook.headers" "$TMP/hook.body") >"$TMP/wh-$name.out" 2>&1 || rc=$?
    sed "s/^/    [webhooks-$name] /" "$TMP/wh-$name.out"
    if [ "$rc" -ne 0 ] || ! grep -q '^valid ' "$TMP/wh-$name.out"; then
        FAILED+=("webhooks-$name (exit $rc on the delivery)")
        return 0
    fi
    rc=0
    (cd "$dir" && timeout 120 "$@" "$HOOK_SECRET" "$TMP/hook.headers" "$TMP/hook.tampered") >"$TMP/wh-$name.out" 2>&1 || rc=$?
    sed "s/^/    [webhooks-$name, one byte changed] /" "$TMP/wh-$name.out"
    if [ "$rc" -ne 1 ] || grep -q '^valid ' "$TMP/wh-$name.out"; then
        FAILED+=("webhooks-$name (exit $rc on a changed body; 1 expected)")
    fi
}

# Runtimes first (installing one can take minutes): the delivery's timestamp must be under 5 minutes old when checked.
WEBHOOK_VERIFIERS=()
for name in python standard node java go php; do
    REASON=
    if "need_webhook_$name"; then
        WEBHOOK_VERIFIERS+=("$name")
    else
        log "skipping webhooks-$name: $REASON"
        SKIPPED+=("webhooks-$name ($REASON)")
    fi
done
if [ ${#WEBHOOK_VERIFIERS[@]} -gt 0 ]; then
    log "webhooks: an endpoint for $RV_TOKEN_CBC and a signed test delivery"
    if webhook_setup; then
        for name in "${WEBHOOK_VERIFIERS[@]}"; do
            case $name in
                python) check_webhook python python3 verify_webhook.py ;;
                standard) check_webhook standard env PYTHONPATH="$TMP/standardwebhooks" python3 standard_webhooks.py ;;
                node) check_webhook node node verify_webhook.js ;;
                java) check_webhook java java VerifyWebhook.java ;;
                go) check_webhook go go run verify_webhook.go ;;
                php) check_webhook php php verify_webhook.php ;;
            esac
        done
    else
        FAILED+=("webhooks (setup: see above)")
    fi
fi
if [ -n "$HOOK_PID" ]; then
    kill "$HOOK_PID" 2>/dev/null || true
    wait "$HOOK_PID" 2>/dev/null || true
    HOOK_PID=
fi

# join ITEM...: "a, b, c", or "none".
join() { local out="" item; for item in "$@"; do out+="${out:+, }$item"; done; echo "${out:-none}"; }
echo "ran: $(join "${RAN[@]+"${RAN[@]}"}")"
echo "skipped: $(join "${SKIPPED[@]+"${SKIPPED[@]}"}")"
if [ ${#PARTIAL[@]} -gt 0 ]; then echo "checks skipped inside recipes (see above): $(join "${PARTIAL[@]}")"; fi
echo "failed: $(join "${FAILED[@]+"${FAILED[@]}"}")"
# Under CI every runtime is installed: a recipe skipped there is a part of the promise that did not run.
if [ "${CI:-}" = true ] && [ ${#SKIPPED[@]} -gt 0 ]; then
    echo "CI: recipes were skipped: $(join "${SKIPPED[@]}")" >&2
    exit 1
fi
[ ${#FAILED[@]} -eq 0 ]
