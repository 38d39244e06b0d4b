"""The contract test's command line: sets up the fakes and runs every surface's checks."""

from __future__ import annotations

from pathlib import Path

import requests

from .checker import Contract
import argparse
import json
import os
import sys

from .common import (
    APPLE,
    CONSUMPTION,
    CUSTOMERS,
    DEFAULT_SPEC,
    DROP_IN,
    Failure,
    GOOGLE_NOTIFICATIONS,
    LEDGER_ROUTES,
    OFFERS,
    REPO,
    WEBHOOKS,
)
from .document import Document
from .fakes import FakeApple, FakeAppStoreServer, FakeGoogle
from .apple_api import AppleAPIChecks
from .base import RunBase
from .drop_in import DropInChecks
from .exports import ExportChecks
from .ledger import LedgerChecks
from .notifications import NotificationChecks
from .operations import OperationsChecks
from .verification import VerificationChecks


# The command's description: the docstring of scripts/contract.py.
DESCRIPTION = getattr(sys.modules.get("__main__"), "__doc__", None) or __doc__


class Run(RunBase, VerificationChecks, LedgerChecks, AppleAPIChecks, DropInChecks, NotificationChecks, OperationsChecks,
          ExportChecks):
    """Every surface's checks against one server."""


def main() -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="the server's base URL, e.g. http://127.0.0.1:8080")
    parser.add_argument("--spec", default=str(DEFAULT_SPEC), help="the OpenAPI document (default: %(default)s)")
    parser.add_argument("--key", default=os.environ.get("CONTRACT_KEY"), help="an API key (env CONTRACT_KEY)")
    parser.add_argument("--token", default=os.environ.get("CONTRACT_TOKEN"),
                        help="an app of the key's account: local mode, sandbox allowed, the receipt's bundle ID, "
                             "aes-256-cbc (env CONTRACT_TOKEN)")
    parser.add_argument("--result-key", default=os.environ.get("CONTRACT_RESULT_KEY"),
                        help="that app's result key, base64 (app show --reveal-key), to open sealed answers")
    parser.add_argument("--credentials", help="JSON file with the other keys and tokens (see above)")
    parser.add_argument("--receipt", required=True, help="a real unified receipt (base64), valid for --token")
    parser.add_argument("--fixtures",
                        default=os.environ.get("RECEIPTVERIFY_FIXTURES", str(REPO.parent / "shared/fixtures")),
                        help="Apple fixtures folder, for StoreKit 2 items and Apple answers (default: %(default)s)")
    parser.add_argument("--fake-apple-port", type=int,
                        help="serve a fake verifyReceipt on this port (the server's --apple-production-url must be "
                             "http://127.0.0.1:PORT/production and --apple-sandbox-url http://127.0.0.1:PORT/sandbox)")
    parser.add_argument("--fake-storekit-port", type=int,
                        help="serve a fake App Store Server API on this port (the server's --storekit-production-url "
                             "must be http://127.0.0.1:PORT/production and --storekit-sandbox-url "
                             "http://127.0.0.1:PORT/sandbox); needs the fixtures and the storekit_* credentials")
    parser.add_argument("--fake-google-port", type=int,
                        help="serve a fake Google (token endpoint and Play Developer API) on this port (the server's "
                             "--google-play-api-url must be http://127.0.0.1:PORT and --google-oauth-token-url "
                             "http://127.0.0.1:PORT/token); needs the google_* credentials")
    parser.add_argument("--receipt-bundle-id", default="com.revenuecat.sampleapp",
                        help="the receipt's bundle ID (fake Apple answers without fixtures)")
    parser.add_argument("--max-body-size", type=int, default=2 << 20, help="the server's --max-body-size")
    parser.add_argument("--max-body-memory", type=int, default=64 << 20,
                        help="the server's --max-body-memory (the 503 check fills one address's share of it)")
    parser.add_argument("--allow-missing-ops-routes", action="store_true",
                        help="while /openapi.json and /metrics are being added: accept 404 for them and for wrong "
                             "methods on the operations routes, and leave them out of the coverage check")
    parser.add_argument("--verbose", "-v", action="store_true", help="print every passing check")
    args = parser.parse_args()

    credentials: dict[str, str] = {}
    if args.credentials:
        credentials = json.loads(Path(args.credentials).read_text())
    for name in ("key", "token", "result_key"):
        if getattr(args, name):
            credentials[name] = getattr(args, name)
    for name in ("key", "token"):
        if not credentials.get(name):
            parser.error(f"--{name} (or its entry in --credentials) is required")

    document = Document(Path(args.spec))
    print(f"document {args.spec}")
    try:
        document.validate_itself()
    except Exception as error:  # noqa: BLE001: any validator error is a failure of the document
        print(f"contract: the OpenAPI document is not valid: {error}", file=sys.stderr)
        return 1
    print("  valid OpenAPI 3.1.0")

    contract = Contract(document, args.url, args.allow_missing_ops_routes, args.verbose)
    run = Run(contract, args, credentials)
    fake = None
    if args.fake_apple_port and credentials.get("apple_token"):
        fake = FakeApple(args.fake_apple_port, run.fixtures, args.receipt_bundle_id)
        fake.start()
    else:
        reason = "Apple's verifyReceipt is not faked (--fake-apple-port and apple_token)"
        for route in ("/api", "/apiencrypted", DROP_IN):
            contract.not_exercised[("POST", route, 500)] = reason
        for name in ("latest_receipt", "latest_expired_receipt_info", "pending_renewal_info", "is-retryable",
                     "exception", "retryable", "receipt"):
            contract.fields_not_exercised[name] = reason
    google = None
    if args.fake_google_port and credentials.get("google_token"):
        public_key = credentials.get("google_public_key_file")
        google = FakeGoogle(args.fake_google_port, credentials.get("google_client_email", ""),
                            Path(public_key).read_bytes() if public_key else None)
        google.start()
    else:
        reason = "Google is not faked (--fake-google-port and google_token)"
        contract.not_exercised[("POST", "/api", 202)] = reason
        for name in ("google_play", "google_acknowledgement"):
            contract.fields_not_exercised[name] = reason
    if google is None or google.signing_key is None:
        reason = "Google is not faked, or Python's cryptography is missing (no push token can be signed)"
        for status in (200, 400, 403, 413, 429):
            contract.not_exercised[("POST", GOOGLE_NOTIFICATIONS, status)] = reason
        contract.fields_not_exercised["effect"] = reason
    # The app's key refused, or Google or the database failing: GoogleNotificationAPITests covers them.
    for status in (500, 503):
        contract.not_exercised[("POST", GOOGLE_NOTIFICATIONS, status)] = (
            "needs a refused key or Google's or the database's failure (GoogleNotificationAPITests covers them)")
    storekit = None
    if args.fake_storekit_port and run.fixtures and credentials.get("storekit_token"):
        public_key = credentials.get("storekit_public_key_file")
        storekit = FakeAppStoreServer(
            args.fake_storekit_port, run.fixtures, credentials.get("storekit_issuer_id", ""),
            credentials.get("storekit_key_id", ""), Path(public_key).read_bytes() if public_key else None,
            {args.receipt_bundle_id})
        storekit.start()
        run.storekit_faked = True
    else:
        reason = "the App Store Server API is not faked (--fake-storekit-port, fixtures and storekit_token)"
        contract.fields_not_exercised["enrichment"] = reason
        for status in (200, 403, 500):
            contract.not_exercised[("POST", APPLE, status)] = reason
    # Apple's 2025-2026 fields: the fixtures (2022) state none; AppleFieldsTests covers them.
    for name in ("app_transaction_id", "offer_period", "billing_plan_type", "commitment", "commitment_expires_at",
                 "Commitment"):
        contract.fields_not_exercised[name] = "no fixture of Apple's states it (2022 items); AppleFieldsTests covers it"
    # A grace period is stated by Apple's renewal info alone, and the fixtures hold none in one.
    contract.fields_not_exercised["SubscriptionStatus.grace_period_expires_at"] = (
        "no fixture's renewal info is in a grace period (ServerAPIAnswersTests covers it)")
    # A finish or an acknowledgement refused, then its error kept: the fakes do not refuse them.
    for schema in ("AppleFinish", "GoogleAcknowledgement"):
        contract.fields_not_exercised[f"{schema}.last_error"] = (
            "needs Apple or Google to refuse a finish or an acknowledgement (ServerAPIAnswersTests, "
            "StoreDimensionTests cover it)")
    # Only Apple signs an app transaction, and the fixtures hold none: AppleActionsTests covers the answer.
    contract.fields_not_exercised["app_transaction"] = "no Apple-signed app transaction among the fixtures"
    # Apple's real receipts hold no refund, and only Apple can sign one: LedgerAPITests covers refunds with test-signed
    # receipts and JWS.
    for name in ("refunded_at", "reason", "refund_type", "refund_percentage", "refunded_after_delivery"):
        contract.fields_not_exercised[name] = "no real Apple receipt here holds a refund (LedgerAPITests covers them)"
    try:
        run.operations()
        for route in ("/api", "/apiencrypted"):
            run.verdicts(route)
            run.refusals(route)
            if fake is not None:
                run.apple(route)
            if storekit is not None:
                run.storekit(route)
            if google is not None:
                run.google_play(route, google)
        run.drop_in()
        run.notifications()
        if google is not None and google.signing_key is not None:
            run.google_notifications(google)
        run.ledger()
        run.customers()
        run.exports()
        run.webhooks()
        run.offers()
        run.consumption()
        if storekit is not None:
            run.apple_actions(storekit)
        for route in LEDGER_ROUTES + (WEBHOOKS, CUSTOMERS, OFFERS, CONSUMPTION, APPLE):
            run.refusals(route)
        run.failed_authentications()
        run.metrics("GET /metrics after the requests", after=True)
    except (requests.RequestException, OSError, Failure) as error:
        contract.fail("run", f"stopped: {error}")
    finally:
        if fake is not None:
            fake.stop()
        if google is not None:
            google.stop()
        if storekit is not None:
            storekit.stop()
            if any("look-up" in failure for failure in contract.failures) or args.verbose:
                print("App Store Server API requests received:", *storekit.received, sep="\n  ")
            if storekit.bad_tokens:
                contract.fail("App Store Server API tokens", f"{len(storekit.bad_tokens)} request(s) with a JWT Apple "
                                                             f"would refuse, e.g. {storekit.bad_tokens[0]}")
    run.coverage()

    exercised = len(contract.pairs)
    print(f"{contract.count} answers checked, {exercised} of {len(document.documented_pairs())} documented "
          f"(route, status) pairs exercised")
    if contract.failures:
        print(f"contract: {len(contract.failures)} mismatch(es) between the server and {args.spec}:", file=sys.stderr)
        for failure in contract.failures:
            print(f"  - {failure}", file=sys.stderr)
        return 1
    print("contract: the server answers as documented")
    return 0
