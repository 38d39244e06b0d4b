#!/usr/bin/env python3
"""Contract test: a live ReceiptVerify server against its OpenAPI document.

Validates the document (openapi-spec-validator), sends requests chosen to produce every documented (route, status)
pair, checks each answer's HTTP status, content type, headers and body against the document (Draft 2020-12, `$ref`s
resolved), and checks coverage both ways: every field of every answer is documented (the top-level answer schemas
are closed) and every documented top-level answer field and (route, status) pair occurred, except the pairs listed
in NOT_PRODUCIBLE, which are printed as "not exercised".

Needs `jsonschema` and `requests` (and `openapi-spec-validator` to validate the document itself); `cryptography` is
used to open sealed `/apiencrypted` answers when installed (else the `openssl` command, CBC only).
`scripts/contract.sh` sets up a server, its accounts and apps, and runs this.

Credentials come from flags (`--key`, `--token`, `--result-key`) and from `--credentials FILE`, a JSON object with
any of these entries (a check whose entry is missing fails the coverage check, naming the entry):
  other_account_token       an app token of another account (401)
  disabled_key, disabled_token   a key and app of a disabled account (401)
  production_only_token     an app of --key's account with the receipt's bundle ID, production only (403)
  other_bundle_token        an app of --key's account with another bundle ID (403)
  plain_key, plain_token    an account whose plan lacks /apiencrypted (402)
  slow_key, slow_token      an account whose plan allows 1 request per second (429)
  quota_key, quota_token    an account whose plan has a monthly quota of 0 (429 with quota_resets_at)
  gcm_token, gcm_result_key an app of --key's account like --token, with --cipher aes-256-gcm
  apple_token, apple_result_key  an app of --key's account in `apple` mode, allowing sandbox and production,
                            with the receipt's bundle ID and com.mbaasy.ios.demo (needs --fake-apple-port)
  jws_token, jws_result_key an app of --key's account in `local` mode, allowing sandbox, with the bundle IDs of the
                            fixtures' StoreKit 2 items (Com.VoiceRecording.Telephone, com.audaos.audarecorder)
  secret_token, secret      an app like --token with a shared secret, and the secret (drop-in 21004); used by nothing
                            else, so that its empty ledger shows the drop-in records nothing
  sandbox_only_token        an app allowing sandbox only, with the bundle ID of the fixtures' production receipt
                            (tp_production_ios_g5_2024: org.getpure.pure-iphone) (drop-in 21008)
  catalog_token             an app like --token whose product catalog holds none of the receipt's products (21010)
  storekit_token, storekit_result_key  an app like jws_token with App Store Server API credentials, `--enrichment
                            on` and `--delivery confirm` (needs --fake-storekit-port): look-ups by id, enriched
                            answers, Finish Transaction of a confirmed delivery
  storekit_issuer_id, storekit_key_id, storekit_public_key_file  those credentials (the public key as PEM), to check
                            the JWT of every request the fake App Store Server API receives
  enriched_token            an app like --token with the same credentials and `--enrichment on`, whose customer the
                            fake does not know: enrichment `unavailable`
  refusing_token            an app like jws_token with the same credentials and `--id-lookups refuse` (403)
  notification_token        an app of the fixtures' Server Notification (com.audaos.audarecorder), allowing sandbox;
                            used by nothing else, so that the notification is new to it (200, then a duplicate)
  notification_disabled_token  an app like notification_token, disabled (`app update --disable`) (401)
  google_token, google_result_key  an app with the Android package com.example.contract, a Google service account key
                            and a catalog of coins_100 (consumable) and premium_monthly (auto_renewable:pro), allowing
                            sandbox and production (needs --fake-google-port)
  google_client_email, google_public_key_file  that service account and its public key (PEM), to check every grant
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from contract_suite.main import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
