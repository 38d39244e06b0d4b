#!/usr/bin/env bash
# Contract test: starts a server with a throwaway SQLite database, checks every documented answer against
# Sources/ReceiptServer/Operations/openapi.json (scripts/contract.py, which also plays Apple's verifyReceipt and App Store
# Server API on loopback), then fuzzes it with schemathesis.
#
# Usage: scripts/contract.sh [BIN_DIR]     (default: $(swift build --show-bin-path); nothing is built)
#
# Environment: RECEIPTVERIFY_FIXTURES (Apple fixtures folder, default ../shared/fixtures),
# CONTRACT_ARGS (extra arguments for contract.py, e.g. "--verbose"),
# SCHEMATHESIS_EXAMPLES (examples per operation, default 100), SCHEMATHESIS_TIMEOUT (seconds, default 300),
# SCHEMATHESIS_SEED (default 20240601), SCHEMATHESIS_ARGS (extra arguments for `st run`),
# SKIP_SCHEMATHESIS=1 to skip the fuzzing, CONTRACT_SPEC (another document to check, e.g. a draft),
# ALLOW_MISSING_OPS_ROUTES=1 for a server without /openapi.json, /metrics and 405 for every wrong method yet:
# contract.py gets --allow-missing-ops-routes, schemathesis skips those two routes and the unsupported-method check.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'contract: %s\n' "$*" >&2; exit 1; }

BIN_DIR=${1:-}
if [ -z "$BIN_DIR" ]; then
    command -v swift >/dev/null 2>&1 || die "no BIN_DIR given and no swift to ask for it"
    BIN_DIR=$(swift build --show-bin-path)
fi
BIN="$BIN_DIR/receiptverify"
[ -x "$BIN" ] || die "no receiptverify binary at $BIN: build it first (swift build), or pass its folder"

SPEC=$(realpath "${CONTRACT_SPEC:-Sources/ReceiptServer/Operations/openapi.json}")
# The document is laid out by one rule, so that its diffs are the changes made.
python3 scripts/format-openapi.py --check "$SPEC" || die "run scripts/format-openapi.py"
FIXTURES=${RECEIPTVERIFY_FIXTURES:-../shared/fixtures}
RECEIPT="$FIXTURES/receipts/revenuecat_sandbox_ios_2020.b64"
[ -f "$RECEIPT" ] || die "no receipt at $RECEIPT (set RECEIPTVERIFY_FIXTURES)"
# The receipt's bundle ID and environment, from the fixture's decode.
BUNDLE=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bundle_id"])' \
    "${RECEIPT%.b64}.expected.json" 2>/dev/null || echo com.revenuecat.sampleapp)

if ! python3 -c 'import jsonschema, requests, openapi_spec_validator, schemathesis' >/dev/null 2>&1; then
    log "installing jsonschema, requests, openapi-spec-validator, schemathesis"
    python3 -m pip install --quiet jsonschema requests openapi-spec-validator schemathesis
fi
ST=$(command -v st || command -v schemathesis || true)
[ -n "$ST" ] || [ "${SKIP_SCHEMATHESIS:-0}" = 1 ] || die "schemathesis is installed but its command is not on PATH"
[ "${CI:-}" != true ] || [ "${SKIP_SCHEMATHESIS:-0}" != 1 ] || die "CI runs schemathesis: SKIP_SCHEMATHESIS=1 is not taken"

WORK=$(mktemp -d /tmp/receiptverify-contract.XXXXXX)
SERVER_PID=
# shellcheck disable=SC2317 # run by the trap
cleanup() {
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
# A setup step that fails shows what the CLI said (the folder is removed on exit).
trap '[ -s "$WORK/cli.log" ] && { log "a step failed; the CLI said:"; tail -5 "$WORK/cli.log" >&2; }' ERR

export RECEIPTVERIFY_DATABASE_URL="$WORK/db.sqlite"
export RECEIPTVERIFY_MASTER_KEY_FILE="$WORK/master.key"
# The webhook receiver listens on loopback over plain http: the self-hosted setting (serve and the CLI read it).
export RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS=on
unset RECEIPTVERIFY_MASTER_KEY

rv() { "$BIN" "$@" 2>>"$WORK/cli.log"; }
field() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
account() { rv account create --name "$1" --email "$1@contract.test" --plan "$2" --json >/dev/null; }
key() { rv key create --account "$1@contract.test" --json | field key; }
# app ACCOUNT ARGS… → the app's JSON
# The contract's apps are variants of one bundle in one account: each is told it shares it.
app() { local who=$1; shift; rv app add --account "$who@contract.test" --json --share-bundle-id "$@"; }

log "setting up plans, accounts, keys and apps in $WORK"
rv migrate >/dev/null
rv plan set contract-encrypted --quota unlimited --rate-limit 1000 --encrypted true >/dev/null
rv plan set contract-plain --quota unlimited --rate-limit 1000 --encrypted false >/dev/null
rv plan set contract-slow --quota unlimited --rate-limit 1 --encrypted true >/dev/null
rv plan set contract-no-quota --quota 0 --rate-limit 1000 --encrypted true >/dev/null
account main contract-encrypted
account other contract-encrypted
account plain contract-plain
account slow contract-slow
account quota contract-no-quota
account disabled contract-encrypted

MAIN_KEY=$(key main)
MAIN_APP=$(app main --bundle-id "$BUNDLE" --environment sandbox --mode local --id-lookups allow)
TOKEN=$(field token <<<"$MAIN_APP")
RESULT_KEY=$(rv app show "$TOKEN" --reveal-key --json | field result_key)
GCM_TOKEN=$(app main --name gcm --bundle-id "$BUNDLE" --environment sandbox --mode local --cipher aes-256-gcm |
    field token)
GCM_RESULT_KEY=$(rv app show "$GCM_TOKEN" --reveal-key --json | field result_key)
PRODUCTION_ONLY=$(app main --name production-only --bundle-id "$BUNDLE" --environment production --mode local |
    field token)
OTHER_BUNDLE=$(app main --bundle-id com.example.contract.other --environment sandbox --mode local | field token)
APPLE_TOKEN=$(app main --name apple --bundle-id "$BUNDLE" --bundle-id com.mbaasy.ios.demo \
    --environment sandbox --environment production --mode apple | field token)
APPLE_RESULT_KEY=$(rv app show "$APPLE_TOKEN" --reveal-key --json | field result_key)
JWS_TOKEN=$(app main --name storekit2 --bundle-id Com.VoiceRecording.Telephone --bundle-id com.audaos.audarecorder \
    --environment sandbox --mode local | field token)
JWS_RESULT_KEY=$(rv app show "$JWS_TOKEN" --reveal-key --json | field result_key)
# Claims move to whoever presents them, deliveries stay due until confirmed: transferred_from and delivered_at.
TRANSFER_TOKEN=$(app main --name transfer --bundle-id "$BUNDLE" --environment sandbox --mode local \
    --claims transfer --delivery confirm | field token)
# The verifyReceipt drop-in's refusals: a shared secret (21004; this app serves the drop-in alone, so its empty ledger
# shows the drop-in records nothing), a sandbox-only app for the fixtures' production receipt (21008), a catalog that
# holds none of the receipt's products (21010).
SECRET=$(openssl rand -hex 16)
SECRET_TOKEN=$(app main --name shared-secret --bundle-id "$BUNDLE" --environment sandbox --mode local \
    --shared-secret "$SECRET" | field token)
SANDBOX_ONLY_TOKEN=$(app main --name sandbox-only --bundle-id org.getpure.pure-iphone --environment sandbox \
    --mode local | field token)
CATALOG_TOKEN=$(app main --name catalog --bundle-id "$BUNDLE" --environment sandbox --mode local \
    --product com.example.contract.not-in-the-receipt | field token)
# App Store Server API credentials (a fresh P-256 key; contract.py's fake App Store Server API checks every JWT with
# its public key): an app of the StoreKit 2 fixtures with enrichment (look-ups by id, enriched answers), one of the
# receipt whose customer the fake does not know (enrichment unavailable), one refusing look-ups by id. The first
# delivers until confirmed: a confirmation then finishes the transaction with Apple (Finish Transaction).
openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt >"$WORK/apple-key.p8"
openssl ec -in "$WORK/apple-key.p8" -pubout -out "$WORK/apple-key.pub" 2>/dev/null
ISSUER_ID=$(python3 -c 'import uuid; print(uuid.uuid4())')
APPLE_KEY_ID=ABC123DEFG
CREDENTIALS=(--apple-issuer-id "$ISSUER_ID" --apple-key-id "$APPLE_KEY_ID" --apple-private-key-file "$WORK/apple-key.p8")
STOREKIT_TOKEN=$(app main --name storekit --bundle-id Com.VoiceRecording.Telephone --bundle-id com.audaos.audarecorder \
    --environment sandbox --mode local "${CREDENTIALS[@]}" --enrichment on --delivery confirm --id-lookups allow \
    --store-user-ids | field token)
STOREKIT_RESULT_KEY=$(rv app show "$STOREKIT_TOKEN" --reveal-key --json | field result_key)
ENRICHED_TOKEN=$(app main --name enriched --bundle-id "$BUNDLE" --environment sandbox --mode local "${CREDENTIALS[@]}" \
    --enrichment on | field token)
REFUSING_TOKEN=$(app main --name refusing --bundle-id Com.VoiceRecording.Telephone --environment sandbox \
    --mode local "${CREDENTIALS[@]}" --id-lookups refuse | field token)
# App Store Server Notifications: an app of the fixtures' notification (DID_RENEW, sandbox) that nothing else uses, so
# that the notification is new to it; the same app disabled (401). other_bundle_token's app refuses it (403).
NOTIFICATION_TOKEN=$(app main --name notifications --bundle-id com.audaos.audarecorder --environment sandbox \
    --mode local | field token)
NOTIFICATION_DISABLED_TOKEN=$(app main --name notifications-disabled --bundle-id com.audaos.audarecorder \
    --environment sandbox --mode local | field token)
rv app update "$NOTIFICATION_DISABLED_TOKEN" --disable >/dev/null
# Google Play: a fresh RSA key for a service account (contract.py's fake Google checks every grant's signature with
# its public half), an app of a package with that key and a catalog of a consumable and a subscription.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$WORK/google-key.pem" 2>/dev/null
openssl pkey -in "$WORK/google-key.pem" -pubout -out "$WORK/google-key.pub" 2>/dev/null
GOOGLE_EMAIL=verifier@contract-play.iam.gserviceaccount.com
# Real-time Developer Notifications: the audience and service account of the app's Pub/Sub push subscription.
GOOGLE_PUBSUB_AUDIENCE=https://contract.example/notifications/google
GOOGLE_PUBSUB_ACCOUNT=rtdn-push@contract-play.iam.gserviceaccount.com
python3 - "$WORK/google-key.pem" "$GOOGLE_EMAIL" >"$WORK/google-key.json" <<'PY'
import json, sys
print(json.dumps({"type": "service_account", "project_id": "contract-play", "private_key_id": "0123456789abcdef",
                  "private_key": open(sys.argv[1]).read(), "client_email": sys.argv[2],
                  "token_uri": "https://oauth2.googleapis.com/token"}))
PY
GOOGLE_TOKEN=$(app main --name google --bundle-id "$BUNDLE" --environment sandbox --environment production \
    --mode local --cipher aes-256-cbc --package-name com.example.contract \
    --google-service-account-file "$WORK/google-key.json" --product coins_100=consumable \
    --product premium_monthly=auto_renewable:pro --google-pubsub-audience "$GOOGLE_PUBSUB_AUDIENCE" \
    --google-pubsub-service-account "$GOOGLE_PUBSUB_ACCOUNT" | field token)
GOOGLE_RESULT_KEY=$(rv app show "$GOOGLE_TOKEN" --reveal-key --json | field result_key)
key other >/dev/null
OTHER_ACCOUNT_TOKEN=$(app other --bundle-id "$BUNDLE" --environment sandbox | field token)
PLAIN_KEY=$(key plain)
PLAIN_TOKEN=$(app plain --bundle-id "$BUNDLE" --environment sandbox | field token)
SLOW_KEY=$(key slow)
SLOW_TOKEN=$(app slow --bundle-id "$BUNDLE" --environment sandbox "${CREDENTIALS[@]}" | field token)
QUOTA_KEY=$(key quota)
QUOTA_TOKEN=$(app quota --bundle-id "$BUNDLE" --environment sandbox "${CREDENTIALS[@]}" | field token)
DISABLED_KEY=$(key disabled)
DISABLED_TOKEN=$(app disabled --bundle-id "$BUNDLE" --environment sandbox | field token)
rv account disable disabled@contract.test >/dev/null

cat >"$WORK/credentials.json" <<EOF
{
  "key": "$MAIN_KEY", "token": "$TOKEN", "result_key": "$RESULT_KEY", "cipher": "aes-256-cbc",
  "gcm_token": "$GCM_TOKEN", "gcm_result_key": "$GCM_RESULT_KEY",
  "production_only_token": "$PRODUCTION_ONLY", "other_bundle_token": "$OTHER_BUNDLE",
  "apple_token": "$APPLE_TOKEN", "apple_result_key": "$APPLE_RESULT_KEY",
  "jws_token": "$JWS_TOKEN", "jws_result_key": "$JWS_RESULT_KEY", "transfer_token": "$TRANSFER_TOKEN",
  "other_account_token": "$OTHER_ACCOUNT_TOKEN",
  "plain_key": "$PLAIN_KEY", "plain_token": "$PLAIN_TOKEN",
  "slow_key": "$SLOW_KEY", "slow_token": "$SLOW_TOKEN",
  "quota_key": "$QUOTA_KEY", "quota_token": "$QUOTA_TOKEN",
  "disabled_key": "$DISABLED_KEY", "disabled_token": "$DISABLED_TOKEN",
  "secret_token": "$SECRET_TOKEN", "secret": "$SECRET", "sandbox_only_token": "$SANDBOX_ONLY_TOKEN",
  "catalog_token": "$CATALOG_TOKEN",
  "storekit_token": "$STOREKIT_TOKEN", "storekit_result_key": "$STOREKIT_RESULT_KEY",
  "storekit_issuer_id": "$ISSUER_ID", "storekit_key_id": "$APPLE_KEY_ID",
  "storekit_public_key_file": "$WORK/apple-key.pub",
  "enriched_token": "$ENRICHED_TOKEN", "refusing_token": "$REFUSING_TOKEN",
  "notification_token": "$NOTIFICATION_TOKEN", "notification_disabled_token": "$NOTIFICATION_DISABLED_TOKEN",
  "google_token": "$GOOGLE_TOKEN", "google_result_key": "$GOOGLE_RESULT_KEY", "google_client_email": "$GOOGLE_EMAIL",
  "google_public_key_file": "$WORK/google-key.pub", "google_pubsub_audience": "$GOOGLE_PUBSUB_AUDIENCE",
  "google_pubsub_account": "$GOOGLE_PUBSUB_ACCOUNT"
}
EOF

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
PORT=$(free_port)
APPLE_PORT=$(free_port)
STOREKIT_PORT=$(free_port)
GOOGLE_PORT=$(free_port)
MAX_BODY_SIZE=2097152
# Two bodies at the size limit: contract.py holds this budget with idle connections to get a 503 (memory).
MAX_BODY_MEMORY=4194304
BASE="http://127.0.0.1:$PORT"

# Notifications are kept for ever: Apple's real notification of the fixtures was signed in 2022, and one signed before
# the retention is a duplicate that changes nothing (security review S14).
log "starting $BIN serve on port $PORT (log: $WORK/server.log)"
"$BIN" serve --hostname 127.0.0.1 --port "$PORT" \
    --max-body-size "$MAX_BODY_SIZE" --max-body-memory "$MAX_BODY_MEMORY" \
    --apple-production-url "http://127.0.0.1:$APPLE_PORT/production" \
    --apple-sandbox-url "http://127.0.0.1:$APPLE_PORT/sandbox" \
    --apple-attempts 2 --apple-timeout 5 \
    --storekit-production-url "http://127.0.0.1:$STOREKIT_PORT/production" \
    --storekit-sandbox-url "http://127.0.0.1:$STOREKIT_PORT/sandbox" --storekit-timeout 5 \
    --storekit-extension-poll-seconds 1 \
    --google-play-api-url "http://127.0.0.1:$GOOGLE_PORT" --google-oauth-token-url "http://127.0.0.1:$GOOGLE_PORT/token" \
    --google-acknowledge-retry-seconds 1 --google-pubsub-jwks-url "http://127.0.0.1:$GOOGLE_PORT/oauth2/v3/certs" \
    --retention-notifications-days 0 --log-level warning >"$WORK/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 100); do
    curl -sf "$BASE/healthz" >/dev/null 2>&1 && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/server.log" >&2; die "the server stopped while starting"; }
    sleep 0.1
done
curl -sf "$BASE/healthz" >/dev/null || { cat "$WORK/server.log" >&2; die "the server did not answer /healthz"; }

status=0
OPS_ARGS=()
ST_OPS_ARGS=()
if [ "${ALLOW_MISSING_OPS_ROUTES:-0}" = 1 ]; then
    log "ALLOW_MISSING_OPS_ROUTES=1: /openapi.json, /metrics and 405s on the operations routes may be missing"
    OPS_ARGS=(--allow-missing-ops-routes)
    ST_OPS_ARGS=(--exclude-path /openapi.json --exclude-path /metrics --exclude-checks unsupported_method)
fi

log "contract.py"
# shellcheck disable=SC2086 # CONTRACT_ARGS is a list of arguments
python3 scripts/contract.py --url "$BASE" --spec "$SPEC" --credentials "$WORK/credentials.json" \
    --receipt "$RECEIPT" --fixtures "$FIXTURES" --receipt-bundle-id "$BUNDLE" --fake-apple-port "$APPLE_PORT" \
    --fake-storekit-port "$STOREKIT_PORT" --fake-google-port "$GOOGLE_PORT" \
    --max-body-size "$MAX_BODY_SIZE" --max-body-memory "$MAX_BODY_MEMORY" ${OPS_ARGS[@]+"${OPS_ARGS[@]}"} \
    ${CONTRACT_ARGS:-} || status=1

# Offers signed with the app's key, judged by Apple's own App Store Server Library (PyPI), in a folder of its own
# (Debian's python3 refuses system-wide pips).
log "offers-check.py (Apple's app-store-server-library)"
if python3 -m pip install --quiet --disable-pip-version-check --target "$WORK/assl" app-store-server-library \
    >"$WORK/pip-assl.log" 2>&1; then
    python3 scripts/offers-check.py --url "$BASE" --key "$MAIN_KEY" --token "$ENRICHED_TOKEN" --bundle-id "$BUNDLE" \
        --issuer-id "$ISSUER_ID" --key-id "$APPLE_KEY_ID" --private-key "$WORK/apple-key.p8" \
        --library "$WORK/assl" || status=1
else
    log "pip could not install app-store-server-library: $(tail -1 "$WORK/pip-assl.log")"
    status=1
fi

if [ "${SKIP_SCHEMATHESIS:-0}" != 1 ]; then
    # The body's `apikey` and `token` are pinned to a valid app (local mode, sandbox allowed), so that generated
    # requests reach verification and their verdicts are checked too; the bearer key is the same key.
    # On the ledger routes (and the customer look-up) a `cursor` is pinned to a well-formed one (any other text is a 400 the schema cannot
    # express: a cursor is opaque). There the fuzzer's "positive" form bodies carry values over the declared maxLength
    # (257 characters seen, with keys such as `__main__` added after generation), which the server rightly refuses:
    # for those two operations schemathesis's positive-data check also accepts a 400 (contract.py checks that valid
    # bodies are accepted there); every other check runs as everywhere.
    # The verifyReceipt drop-in's path is pinned to the same app. It answers a body Apple would not read (not JSON, a
    # field of the wrong type, ...) as Apple did: HTTP 200 with status 21002, never a 400 (the document says so, and
    # contract.py checks those answers one by one): its negative-data check also accepts a 200.
    # /api/webhooks takes an action whose fields the schema cannot tie to it (pause needs an endpoint_id, add a URL
    # the server accepts): its positive-data check also accepts a 400, as the confirmations' does. So does /api/apple,
    # pinned to an app without App Store Server API credentials (every action but the listing is a 400 there: the
    # fuzzer never reaches Apple).
    # The notifications route's path is pinned to the notification app (a random token is a 401, and a run of them
    # spends the address's failure budget: 429s for everything after). Only what Apple signed for the app is taken, so
    # a body the schema accepts (an object with a JWS-shaped `signedPayload`) is still refused, 400 or 403 (contract.py
    # checks Apple's notification is taken): its positive-data check also accepts a 400, and its negative-data check a
    # 413 (a signedPayload over the schema's maxLength makes a body over the route's limit, refused before it is read).
    cursor=$(printf '0|Production|0' | base64 | tr '+/' '-_' | tr -d '=')
    cat >"$WORK/schemathesis.toml" <<TOML
[parameters]
"body.apikey" = "$MAIN_KEY"
"body.token" = "$TOKEN"
# Apple's inputs only: a Google Play request (store google_play) names a package, token and JSON whose forms the
# schema can state only in part (the JSON text of purchase); GooglePlayAPITests checks those answers on a live server.
"body.store" = "app_store"

[[operations]]
include-operation-id = "lookUpTransactions"
parameters = { "body.apikey" = "$MAIN_KEY", "body.token" = "$TOKEN", "body.cursor" = "$cursor" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }

[[operations]]
include-operation-id = "lookUpCustomer"
parameters = { "body.apikey" = "$MAIN_KEY", "body.token" = "$TOKEN" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }

[[operations]]
include-operation-id = "verifyReceiptDropIn"
parameters = { "path.token" = "$TOKEN" }
checks = { negative_data_rejection = { expected-statuses = ["200", "400", "401", "403", "404", "405", "406", "409", "415", "422", "428", "429", "5xx"] } }

[[operations]]
include-operation-id = "receiveNotification"
parameters = { "path.token" = "$NOTIFICATION_TOKEN" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] }, negative_data_rejection = { expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"] } }

[[operations]]
include-operation-id = "receiveGoogleNotification"
parameters = { "path.token" = "$GOOGLE_TOKEN" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] }, negative_data_rejection = { expected-statuses = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"] } }

[[operations]]
include-operation-id = "confirmDeliveries"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }

[[operations]]
include-operation-id = "manageWebhooks"
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }

[[operations]]
include-operation-id = "reportConsumption"
parameters = { "body.apikey" = "$MAIN_KEY", "body.token" = "$TOKEN" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }

[[operations]]
include-operation-id = "appleAction"
parameters = { "body.apikey" = "$MAIN_KEY", "body.token" = "$TOKEN" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }

[[operations]]
include-operation-id = "signOffer"
parameters = { "body.apikey" = "$MAIN_KEY", "body.token" = "$ENRICHED_TOKEN" }
checks = { positive_data_acceptance = { expected-statuses = ["2xx", "400", "401", "403", "404", "409", "429", "5xx"] } }
TOML
    log "schemathesis ($("$ST" --version 2>/dev/null | head -1))"
    # Every check, positive and negative data, one worker and a fixed seed (a failing run can be repeated), bounded by
    # examples per operation, and a timeout as a backstop.
    # shellcheck disable=SC2086 # SCHEMATHESIS_ARGS is a list of arguments
    (cd "$WORK" && timeout "${SCHEMATHESIS_TIMEOUT:-300}" "$ST" --config-file "$WORK/schemathesis.toml" --no-color \
        run "$SPEC" --url "$BASE" --checks all --max-examples "${SCHEMATHESIS_EXAMPLES:-100}" \
        --seed "${SCHEMATHESIS_SEED:-20240601}" --workers 1 --request-timeout 20 \
        --header "Authorization: Bearer $MAIN_KEY" --generation-database none \
        ${ST_OPS_ARGS[@]+"${ST_OPS_ARGS[@]}"} ${SCHEMATHESIS_ARGS:-}) || status=1
fi

if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    log "the server is no longer running:"; tail -20 "$WORK/server.log" >&2; status=1
fi
if grep -q -E 'critical|Fatal error' "$WORK/server.log"; then
    log "the server logged a fatal error:"; grep -E 'critical|Fatal error' "$WORK/server.log" | head >&2; status=1
fi
if [ "$status" -eq 0 ]; then log "contract: passed"; else log "contract: FAILED"; fi
exit "$status"
