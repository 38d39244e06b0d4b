#!/usr/bin/env bash
# Fetches Apple's trust anchors for ReceiptVerify into a directory and refuses any certificate whose SHA-256
# fingerprint differs from the one Apple publishes (https://www.apple.com/certificateauthority/).
# The same four certificates are built into `receiptverify`, so a server needs none of this to verify; use it to
# check Apple's current roots against the fingerprints below, or to fill a directory for `--trust-anchors`.
#
# Usage: deploy/fetch-apple-roots.sh [DIR]            download into DIR (default: apple-roots)
#        deploy/fetch-apple-roots.sh --from SRC [DIR]  copy from a directory holding the same file names (offline)
#
# Nothing is written to DIR unless every certificate matches: files are checked in a temporary directory first.
set -euo pipefail

source_dir=""
if [ "${1:-}" = "--from" ]; then
    source_dir=${2:?--from needs a directory}
    shift 2
fi
target=${1:-apple-roots}

# name | URL | SHA-256 fingerprint (uppercase hex, as Apple publishes it)
anchors="
AppleIncRootCertificate.cer|https://www.apple.com/appleca/AppleIncRootCertificate.cer|B0B1730ECBC7FF4505142C49F1295E6EDA6BCAED7E2C68C5BE91B5A11001F024
AppleRootCA-G2.cer|https://www.apple.com/certificateauthority/AppleRootCA-G2.cer|C2B9B042DD57830E7D117DAC55AC8AE19407D38E41D88F3215BC3A890444A050
AppleRootCA-G3.cer|https://www.apple.com/certificateauthority/AppleRootCA-G3.cer|63343ABFB89A6A03EBB57E9B3F5FA7BE7C4F5C756F3017B3A8C488C3653E9179
AppleiTunesStoreCertificationAuthority.cer|https://www.apple.com/certificateauthority/AppleiTunesStoreCertificationAuthority.cer|447AD65484610F20FDC33804C8597A1E208FBE4EF9C5653485CC7D3DF730C016
"

staging=$(mktemp -d)
trap 'rm -rf "$staging"' EXIT

failed=0
while IFS='|' read -r name url expected; do
    [ -n "$name" ] || continue
    if [ -n "$source_dir" ]; then
        cp "$source_dir/$name" "$staging/$name" 2>/dev/null || { echo "missing: $source_dir/$name" >&2; failed=1; continue; }
    else
        curl --fail --silent --show-error --location --proto '=https' --max-time 30 -o "$staging/$name" "$url" \
            || { echo "download failed: $url" >&2; failed=1; continue; }
    fi
    actual=$(sha256sum "$staging/$name" | cut -d' ' -f1 | tr 'a-f' 'A-F')
    if [ "$actual" != "$expected" ]; then
        echo "REFUSED $name: SHA-256 $actual, Apple publishes $expected" >&2
        failed=1
    else
        echo "ok $name $actual"
    fi
done <<< "$anchors"

if [ "$failed" -ne 0 ]; then
    echo "nothing written to $target" >&2
    exit 1
fi
mkdir -p "$target"
cp "$staging"/*.cer "$target"/
echo "wrote $(ls "$staging" | wc -l) certificates to $target"
