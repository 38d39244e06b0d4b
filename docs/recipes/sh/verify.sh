#!/bin/sh
# Verify a receipt with ReceiptVerify from a shell: /api, then /apiencrypted for a CBC app, with curl and openssl.
# `openssl enc` has no AEAD ciphers, so the GCM answer cannot be decrypted here: that check is skipped (see the
# other recipes). Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CBC, RV_TOKEN_GCM, RV_RESULT_KEY_CBC,
# RV_RESULT_KEY_GCM (base64), RV_RECEIPT (file of base64).
set -eu
url=${RV_URL%/}
body=$(mktemp)
trap 'rm -f "$body"' EXIT
failed=0

# post PATH TOKEN NONCE: writes the answer to $body and prints its Content-Type.
post() {
    tr -d ' \r\n' < "$RV_RECEIPT" | curl -s -o "$body" -w '%{content_type}' "$url$1" \
        --data-urlencode "apikey=$RV_KEY" --data-urlencode "token=$2" \
        --data-urlencode "receipt@-" --data-urlencode "nonce=$3"
}

# open_cbc KEY_BASE64: decrypts $body, IV[16] ‖ AES-256-CBC(json, PKCS#7 padding), to stdout.
open_cbc() {
    key_hex=$(printf %s "$1" | base64 -d | od -An -tx1 -v | tr -d ' \n')
    iv_hex=$(base64 -d < "$body" | head -c 16 | od -An -tx1 -v | tr -d ' \n')
    base64 -d < "$body" | tail -c +17 | openssl enc -d -aes-256-cbc -K "$key_hex" -iv "$iv_hex"
}

# check LABEL NONCE JSON: the answer is compact JSON with `status` first (use jq in real scripts).
check() {
    status=$(printf %s "$3" | grep -o '^{"status":-*[0-9]*' | sed 's/.*://' || true)
    echoed=MISMATCH
    case $3 in *"\"nonce\":\"$2\""*) echoed=echoed ;; esac
    if [ "$status" = 0 ] && [ "$echoed" = echoed ]; then
        echo "ok   $1: status $status, nonce $echoed"
    else
        echo "FAIL $1: status ${status:-missing}, nonce $echoed"
        failed=1
    fi
}

nonce=$(openssl rand -hex 16)
post /api "$RV_TOKEN_CBC" "$nonce" >/dev/null || { echo "FAIL /api: request failed"; exit 1; }
check /api "$nonce" "$(cat "$body")"

nonce=$(openssl rand -hex 16)
type=$(post /apiencrypted "$RV_TOKEN_CBC" "$nonce") || { echo "FAIL /apiencrypted: request failed"; exit 1; }
case $type in
    text/plain*) # a successful answer is base64 of the ciphertext; every other answer is plain JSON
        if json=$(open_cbc "$RV_RESULT_KEY_CBC" 2>/dev/null); then
            check "/apiencrypted aes-256-cbc" "$nonce" "$json"
        else
            echo "FAIL /apiencrypted aes-256-cbc: decryption failed (wrong key?)"; failed=1
        fi ;;
    *) check "/apiencrypted aes-256-cbc" "$nonce" "$(cat "$body")" ;;
esac

echo "skip /apiencrypted aes-256-gcm: openssl enc cannot decrypt AEAD ciphers (RV_TOKEN_GCM unused)"
exit "$failed"
