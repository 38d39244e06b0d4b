"""Offers signed with the app's key and Apple's actions on a customer."""

from __future__ import annotations

import secrets
import time

from .common import (
    APPLE,
    OFFERS,
)
from .fakes import FakeAppStoreServer


class AppleAPIChecks:

    def offers(self) -> None:
        """/api/offers/signature signs each kind with the app's key (scripts/offers-check.py judges the signatures
        with Apple's library) and refuses what it cannot sign, saying what to fix."""
        print("offers")
        if not self.need("enriched_token"):
            return
        c, token = self.c, self.cred["enriched_token"]
        kinds = (
            ("promotional_offer", {"product_id": "com.example.p", "offer_id": "o", "application_username": "U-1"},
             ("key_id", "nonce", "timestamp", "signature")),
            ("promotional_offer_v2", {"product_id": "com.example.p", "offer_id": "o", "transaction_id": "2000000001"},
             ("signature",)),
            ("introductory_offer_eligibility", {"product_id": "com.example.p", "allow_introductory_offer": True,
                                                "transaction_id": "2000000001"}, ("signature",)),
        )
        for kind, fields, expected in kinds:
            body = {"token": token, "kind": kind, **fields}
            for as_json in (False, True):
                media = "application/json" if as_json else "application/x-www-form-urlencoded"
                sent = body if as_json else {k: str(v).lower() if isinstance(v, bool) else v for k, v in body.items()}
                self.valid_request(f"offer {kind}", media, sent, route=OFFERS)
                c.check(f"POST {OFFERS} {kind}{' (JSON)' if as_json else ''}", self.post(OFFERS, sent, as_json=as_json),
                        200, extra=lambda a, b, expected=expected, kind=kind: [] if b.get("kind") == kind and all(
                            b.get(name) for name in expected) else [f"answer {b!r}"])
        for label, body in (("no kind", {"token": token, "product_id": "p", "offer_id": "o"}),
                            ("an unknown kind", {"token": token, "kind": "winback", "product_id": "p"}),
                            ("no offer_id", {"token": token, "kind": "promotional_offer", "product_id": "p"}),
                            ("a nonce", {"token": token, "kind": "promotional_offer", "product_id": "p",
                                         "offer_id": "o", "nonce": "n"}),
                            ("an app without a key", {"token": self.cred["token"], "kind": "promotional_offer",
                                                      "product_id": "p", "offer_id": "o"})):
            c.check(f"POST {OFFERS} {label} (400)", self.post(OFFERS, body), 400,
                    extra=lambda a, b: [] if b.get("description") not in (None, "The request body could not be read")
                    else [f"the description does not say what to fix: {b.get('description')!r}"])


    def apple_actions(self, fake: FakeAppStoreServer) -> None:
        """/api/apple asks Apple (the fake checks every JWT and body): a token set, an extension sent once however
        often it is asked under one identifier, a lost answer (500), Apple's refusals (403), a mass extension, the
        app's extensions listed; and refuses what it cannot ask, saying what to fix."""
        print("Apple's actions")
        if not self.need("storekit_token"):
            return
        c, token = self.c, self.cred["storekit_token"]
        original = FakeAppStoreServer.ORIGINAL
        # The purchase's own token (upper case: any case is a UUID), then another user's, refused before Apple.
        body = {"token": token, "action": "set_app_account_token", "original_transaction_id": original,
                "app_account_token": fake.app_account_token.upper(), "environment": "Sandbox", "nonce": "n-apple"}
        self.valid_request("set an app account token", "application/x-www-form-urlencoded", body, route=APPLE)
        c.check(f"POST {APPLE} set_app_account_token", self.post(APPLE, body), 200,
                extra=lambda a, b: [] if b.get("app_account_token") == fake.app_account_token.lower()
                and b.get("nonce") == "n-apple" and b.get("claimed") is True else [f"answer {b!r}"])
        other = {**body, "app_account_token": "5b9b0f0c-8c5e-4bd1-9d3a-2c1f00000002"}
        c.check(f"POST {APPLE} set_app_account_token, another user's purchase (400)", self.post(APPLE, other), 400,
                extra=lambda a, b: [] if "another user" in (b.get("description") or "") else [f"answer {b!r}"])
        identifier = "contract-" + secrets.token_hex(4)
        body = {"token": token, "action": "extend_renewal_date", "original_transaction_id": original,
                "extend_by_days": 7, "extend_reason_code": "service_issue_or_outage", "request_identifier": identifier,
                "environment": "Sandbox"}
        self.valid_request("extend a renewal date", "application/json", body, route=APPLE)
        for attempt in ("", " again"):
            c.check(f"POST {APPLE} extend_renewal_date{attempt}", self.post(APPLE, body, as_json=True), 200,
                    extra=lambda a, b: [] if (b.get("extension") or {}).get("state") == "extended"
                    and (b.get("extension") or {}).get("request_identifier") == identifier else [f"answer {b!r}"])
        with fake.lock:
            sent = [r for r in fake.received if f"PUT /inApps/v1/subscriptions/extend/{original} " in r]
        if len(sent) != 1 or '"extendByDays":7' not in sent[0] or '"extendReasonCode":3' not in sent[0]:
            c.fail(f"POST {APPLE} extend_renewal_date", f"Apple was asked {sent!r}, expected one request")
        lost = {"token": token, "action": "extend_renewal_date", "original_transaction_id": FakeAppStoreServer.DOWN,
                "extend_by_days": "3", "extend_reason_code": "0", "environment": "Sandbox", "nonce": "n-lost"}
        c.check(f"POST {APPLE} extend_renewal_date, Apple's answer lost (500)", self.post(APPLE, lost), 500,
                extra=lambda a, b: [] if (b.get("extension") or {}).get("state") == "unknown"
                and "retryable" not in b else [f"answer {b!r}"])
        # Apple down before anything is sent (its renewal date, read first, cannot be): never sent, retryable.
        unsent = {**lost, "original_transaction_id": FakeAppStoreServer.UNREACHABLE, "nonce": "n-unsent"}
        c.check(f"POST {APPLE} extend_renewal_date, never sent (500, retryable)", self.post(APPLE, unsent), 500,
                extra=lambda a, b: [] if (b.get("extension") or {}).get("state") == "failed"
                and b.get("retryable") is True else [f"answer {b!r}"])
        ineligible = {**lost, "original_transaction_id": FakeAppStoreServer.INELIGIBLE, "nonce": "n-refused"}
        c.check(f"POST {APPLE} extend_renewal_date, ineligible (403)", self.post(APPLE, ineligible), 403,
                extra=lambda a, b: [] if (b.get("extension") or {}).get("state") == "refused" else [f"answer {b!r}"])
        info = {"token": token, "action": "app_transaction_info", "transaction_id": FakeAppStoreServer.TRANSACTION,
                "environment": "Sandbox"}
        c.check(f"POST {APPLE} app_transaction_info, unknown to Apple (403)", self.post(APPLE, info), 403,
                extra=lambda a, b: [] if b.get("apple_error_code") == 4040019 else [f"answer {b!r}"])
        mass = {"token": token, "action": "mass_extend_renewal_date", "product_id": "com.example.p",
                "extend_by_days": "2", "extend_reason_code": "other", "storefront_country_codes": "usa,fra",
                "request_identifier": identifier + "-mass", "environment": "Sandbox"}
        self.valid_request("extend every subscriber", "application/x-www-form-urlencoded", mass, route=APPLE)
        c.check(f"POST {APPLE} mass_extend_renewal_date", self.post(APPLE, mass), 200,
                extra=lambda a, b: [] if (b.get("extension") or {}).get("state") == "requested"
                and (b.get("extension") or {}).get("storefront_country_codes") == ["USA", "FRA"] else [f"answer {b!r}"])
        c.check(f"POST {APPLE} renewal_extensions", self.post(APPLE, {"token": token, "action": "renewal_extensions"}),
                200, extra=lambda a, b: [] if {identifier, identifier + "-mass"} <= {
                    e.get("request_identifier") for e in b.get("extensions") or []} else [f"answer {b!r}"])
        # The server polls Apple for the mass extension (every second here) until Apple says it is complete, with
        # its counts.
        listing = lambda: self.post(APPLE, {"token": token, "action": "renewal_extensions"})
        mass_of = lambda b: next((e for e in b.get("extensions") or []
                                  if e.get("request_identifier") == identifier + "-mass"), {})
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and mass_of(listing().json()).get("state") != "complete":
            time.sleep(0.5)
        c.check(f"POST {APPLE} renewal_extensions, the mass extension complete", listing(), 200,
                extra=lambda a, b: [] if mass_of(b).get("state") == "complete" and mass_of(b).get("complete_date")
                and (mass_of(b).get("succeeded_count"), mass_of(b).get("failed_count")) == (3, 0)
                else [f"answer {b!r}"])
        for label, body in (("no action", {"token": token}),
                            ("an unknown action", {"token": token, "action": "refund"}),
                            ("91 days", {"token": token, "action": "extend_renewal_date",
                                         "original_transaction_id": original, "extend_by_days": "91",
                                         "extend_reason_code": "0"}),
                            ("a token that is no UUID", {"token": token, "action": "set_app_account_token",
                                                         "original_transaction_id": original,
                                                         "app_account_token": "alice"}),
                            ("an app without credentials", {"token": self.cred["token"],
                                                            "action": "app_transaction_info", "transaction_id": "1"})):
            c.check(f"POST {APPLE} {label} (400)", self.post(APPLE, body), 400,
                    extra=lambda a, b: [] if b.get("description") not in (None, "The request body could not be read")
                    else [f"the description does not say what to fix: {b.get('description')!r}"])
