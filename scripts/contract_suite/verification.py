"""/api and /apiencrypted: verdicts, refusals, Apple, the App Store Server API, Google Play."""

from __future__ import annotations

import base64
import json
import secrets
import socket
import time

from typing import Any, Callable

from .common import (
    APPLE,
    Answer,
    CONSUMPTION,
    CUSTOMERS,
    OFFERS,
    WEBHOOKS,
    b64url,
    open_sealed,
)
from .fakes import FakeAppStoreServer, FakeGoogle


class VerificationChecks:

    # Verdicts.

    def verdicts(self, route: str) -> None:
        print(f"verdicts on {route}")
        c, token = self.c, self.cred["token"]
        sealed = route == "/apiencrypted"

        def valid(nonce: str | None = None, repairs: list[str] | None = None, kind: str | None = None,
                  environment: str = "Sandbox", result_key: str | None = None, cipher: str | None = None):
            def check(a: Answer, body: Any) -> list[str]:
                if sealed:
                    if a.header("content-type") != "text/plain; charset=utf-8":
                        return [f"sealed answer Content-Type {a.header('content-type')!r}"]
                    key = result_key or self.cred.get("result_key")
                    if not key:
                        return ["no result key given to open the sealed answer"]
                    plaintext = open_sealed(body, key, cipher or self.cred.get("cipher", "aes-256-cbc"))
                    if plaintext is None:
                        print("  note: `cryptography` is missing; a GCM answer was not opened")
                        return []
                    try:
                        body = json.loads(plaintext)
                    except ValueError:
                        return [f"the sealed answer does not open to JSON: {plaintext[:80]!r}"]
                    errors = self.doc.sealed_errors(body)
                    if errors:
                        return [f"sealed plaintext: {error}" for error in errors]
                    self.c.record_sealed(body)
                    if body.get("request_id") != a.header("x-request-id"):
                        return ["the sealed request_id differs from X-Request-ID"]
                problems = []
                if body.get("status") != 0:
                    problems.append(f"status {body.get('status')}, expected 0")
                if nonce is not None and body.get("nonce") != nonce:
                    problems.append(f"nonce {body.get('nonce')!r}, expected {nonce!r}")
                if body.get("repairs") != repairs:
                    problems.append(f"repairs {body.get('repairs')!r}, expected {repairs!r}")
                if body.get("kind") != kind:
                    problems.append(f"kind {body.get('kind')!r}, expected {kind!r}")
                if body.get("environment") != environment:
                    problems.append(f"environment {body.get('environment')!r}, expected {environment!r}")
                if body.get("assurance") != ("signed-jws" if kind else "signed-receipt"):
                    problems.append(f"assurance {body.get('assurance')!r}")
                return problems + self.order_problems(body)
            return check

        def verdict(status: int | set[int]):
            statuses = {status} if isinstance(status, int) else status

            def check(a: Answer, body: Any) -> list[str]:
                problems = [] if body.get("status") in statuses else [f"status {body.get('status')}, expected "
                                                                      f"{'/'.join(map(str, sorted(statuses)))}"]
                if "receipt" in body:
                    problems.append("a failure of ours carries `receipt`")
                return problems
            return check

        expect_200 = {"content_type": "text/plain; charset=utf-8"} if sealed else {"content_type": "application/json"}
        body = {"token": token, "receipt": self.receipt, "nonce": "n-" + secrets.token_hex(8)}
        self.valid_request("valid, form", "application/x-www-form-urlencoded", body)
        c.check(f"{route} valid receipt (form, bearer, nonce)", self.post(route, body), 200, **expect_200,
                extra=valid(nonce=body["nonce"]))

        body = {"apikey": self.cred["key"], "token": token, "receipt-data": self.receipt.replace("+", " "),
                "exclude-old-transactions": True, "nonce": 12345, "password": None}
        self.valid_request("valid, JSON", "application/json", body)
        c.check(f"{route} valid receipt (JSON, apikey field, Apple's names, spaces for +, integer nonce)",
                self.post(route, body, as_json=True, bearer=False), 200, **expect_200,
                extra=valid(nonce="12345", repairs=["spaces_to_plus"]))

        body = {"token": token, "receipt": self.receipt, "receipt-data": "ignored", "exclude_old_transactions": "0",
                "exclude-old-transactions": "ignored"}
        self.valid_request("both spellings", "application/x-www-form-urlencoded", body)
        c.check(f"{route} both spellings: ours are read", self.post(route, body), 200, **expect_200, extra=valid())

        if not sealed:
            all_latest = self.post(route, {"token": token, "receipt": self.receipt}).json()
            newest = self.post(route, {"token": token, "receipt": self.receipt,
                                       "exclude_old_transactions": "true"}).json()
            if len(newest.get("latest_receipt_info", [])) > len(all_latest.get("latest_receipt_info", [])):
                c.fail("exclude_old_transactions", "more entries in latest_receipt_info, not fewer")
            wrapped = "\n".join(self.receipt[i:i + 76] for i in range(0, len(self.receipt), 76))
            cases = [
                ("line breaks", wrapped, ["removed_line_breaks"]),
                ("URL-safe, unpadded", b64url(self.receipt_der), ["url_safe_alphabet", "added_padding"]),
                ("base64 of base64", base64.b64encode(self.receipt.encode()).decode(), ["double_base64"]),
            ]
            for label, text, repairs in cases:
                c.check(f"{route} valid receipt ({label})", self.post(route, {"token": token, "receipt": text}), 200,
                        **expect_200, extra=valid(repairs=repairs))
            first = ((all_latest.get("receipt") or {}).get("in_app") or [{}])[0]
            if str(first.get("transaction_id", "")).isdigit():
                body = {"token": token, "receipt": self.receipt, "transaction_id": int(first["transaction_id"]),
                        "product_id": first.get("product_id")}
                self.valid_request("transaction_id as integer", "application/json", body)
                c.check(f"{route} asserted transaction and product present",
                        self.post(route, body, as_json=True), 200, extra=valid())
                c.check(f"{route} asserted product absent (403)", self.post(route, {
                    "token": token, "receipt": self.receipt, "product_id": "com.example.not-in-receipt"}), 403)
                c.check(f"{route} asserted transaction absent (403)", self.post(route, {
                    "token": token, "receipt": self.receipt, "transaction_id": "1"}), 403)

        if self.cred.get("gcm_token") and self.cred.get("gcm_result_key"):
            c.check(f"{route} valid receipt (app with aes-256-gcm)",
                    self.post(route, {"token": self.cred["gcm_token"], "receipt": self.receipt, "nonce": "gcm"}),
                    200, **expect_200,
                    extra=valid(nonce="gcm", result_key=self.cred["gcm_result_key"], cipher="aes-256-gcm"))

        as_json = {"content_type": "application/json"}
        tampered = bytearray(self.receipt_der)
        tampered[-1] ^= 0x01
        unsigned_jws = ".".join([b64url(b'{"alg":"none","typ":"JWT"}'),
                                 b64url(b'{"bundleId":"com.example","signedDate":1700000000000}'), ""])
        made_up_chain = [base64.b64encode(secrets.token_bytes(300)).decode()] * 3
        forged_jws = ".".join([
            b64url(json.dumps({"alg": "ES256", "x5c": made_up_chain}).encode()),
            b64url(b'{"bundleId":"com.example","signedDate":1700000000000,"transactionId":"1"}'),
            b64url(secrets.token_bytes(64))])
        failures = [
            ("no receipt", {"token": token}, 21002),
            ("empty receipt", {"token": token, "receipt": ""}, 21002),
            ("garbage receipt", {"token": token, "receipt": "not a receipt!"}, 21002),
            ("truncated PKCS#7", {"token": token, "receipt": base64.b64encode(self.receipt_der[:400]).decode()}, 21002),
            ("bytes after the PKCS#7 structure",
             {"token": token, "receipt": base64.b64encode(self.receipt_der + b"\0\0").decode()}, 21002),
            ("signature byte flipped", {"token": token, "receipt": base64.b64encode(bytes(tampered)).decode()}, 21003),
            ("JWS with alg none", {"token": token, "receipt": unsigned_jws}, {21002, 21003}),
            ("JWS with a made-up chain", {"token": token, "receipt": forged_jws}, {21002, 21003}),
        ]
        if self.fixtures:
            for label, name in (("self-signed (Xcode) JWS", "jws/xcode_transaction_2023.jws"),
                                ("JWS of a test CA", "jws/testca_transaction_info.jws"),
                                ("JWS payload modified", "tampered/jws_payload_modified.jws")):
                path = self.fixtures / name
                if path.is_file():
                    failures.append((label, {"token": token, "receipt": path.read_text().strip()}, 21003))
        for label, fields, status in failures:
            c.check(f"{route} {label}", self.post(route, fields), 200, **as_json, extra=verdict(status))
        # JSON Schema (and RFC 8259) make 12345.0 the same integer as 12345: read as "12345", like 12345.
        body = {"token": token, "receipt": "x", "nonce": 12345.0, "exclude_old_transactions": 1.0}
        self.valid_request("integers written with a fraction", "application/json", body)
        c.check(f"{route} integers written 12345.0 and 1.0", self.post(route, body, as_json=True), 200,
                extra=lambda a, b: [] if b.get("nonce") == "12345" else [f"nonce {b.get('nonce')!r}"])
        c.check(f"{route} nonce echoed on a verdict", self.post(route, {"token": token, "receipt": "x", "nonce": "ñ"}),
                200, extra=lambda a, b: [] if b.get("nonce") == "ñ" else [f"nonce {b.get('nonce')!r}"])

        if self.need("other_bundle_token"):
            c.check(f"{route} another bundle ID (403)",
                    self.post(route, {"token": self.cred["other_bundle_token"], "receipt": self.receipt}), 403)
        if self.need("production_only_token"):
            c.check(f"{route} environment not allowed (403)",
                    self.post(route, {"token": self.cred["production_only_token"], "receipt": self.receipt,
                                      "nonce": "n403"}), 403,
                    extra=lambda a, b: [] if b.get("nonce") == "n403" else ["nonce not echoed on 403"])

        if self.fixtures and self.cred.get("jws_token"):
            jws = self.fixtures / "jws/apple_transaction_voicerec_sub_2022.jws"
            notification = self.fixtures / "jws/apple_notification_did_renew_2022.jws"
            renewal = self.fixtures / "jws/apple_renewal_info_voicerec_2022.jws"
            if jws.is_file():
                c.check(f"{route} StoreKit 2 signed transaction", self.post(route, {
                    "token": self.cred["jws_token"], "receipt": jws.read_text().strip()}), 200, **expect_200,
                    extra=valid(kind="signed_transaction", result_key=self.cred.get("jws_result_key")))
            if notification.is_file() and not sealed:
                c.check(f"{route} App Store Server Notification V2", self.post(route, {
                    "token": self.cred["jws_token"], "receipt": notification.read_text().strip()}), 200,
                    extra=valid(kind="notification"))
            if renewal.is_file() and not sealed:
                # Renewal info names no bundle ID: authentic, but no app's (403).
                c.check(f"{route} StoreKit 2 renewal info (no bundle ID)", self.post(route, {
                    "token": self.cred["jws_token"], "receipt": renewal.read_text().strip()}), 403)
        elif not sealed:
            self.c.fields_not_exercised["kind"] = "no fixtures folder or jws_token: no StoreKit 2 item was verified"


    # Refusals before verification.

    def refusals(self, route: str) -> None:
        print(f"refusals on {route}")
        c, token, key = self.c, self.cred["token"], self.cred["key"]
        # A body each route answers 200 (a verdict, an empty page, an unknown id).
        extra = {"/api/transactions": {"app_user_id": "nobody"},
                 "/api/transactions/delivered": {"transaction_ids": "none"},
                 WEBHOOKS: {"action": "list"}, CUSTOMERS: {"app_user_id": "nobody"},
                 OFFERS: {"kind": "promotional_offer", "product_id": "com.example.p", "offer_id": "o"},
                 CONSUMPTION: {"transaction_ids": "none", "consumption_percentage": "0"},
                 APPLE: {"action": "renewal_extensions"}
                 }.get(route, {"receipt": "x"})
        # Offers need an app with a key: the enriched app has one (so do the slow and quota apps).
        good = {"token": self.cred["enriched_token"] if route == OFFERS else token, **extra}

        # 400
        bad_bodies = [
            ("JSON that is not JSON", b"{bad", "application/json"),
            ("JSON that is not an object", b"[]", "application/json"),
            ("JSON field of the wrong type", json.dumps({"token": token, "receipt": "x", "nonce": {"a": 1}}).encode(),
             "application/json"),
            ("JSON flag that is no flag", json.dumps({"token": token, "receipt": "x",
                                                      "exclude_old_transactions": "maybe"}).encode(),
             "application/json"),
            ("JSON nested 20 deep", ('{"token":"t","x":' + "[" * 20 + "]" * 20 + "}").encode(), "application/json"),
            ("JSON field given twice", b'{"token":"a","token":"b"}', "application/json"),
            ("form field given twice", f"token={token}&token={token}&receipt=x".encode(),
             "application/x-www-form-urlencoded"),
            ("malformed percent-encoding", b"token=%zz&receipt=x", "application/x-www-form-urlencoded"),
            ("form field not UTF-8", b"token=%ff%fe&receipt=x", "application/x-www-form-urlencoded"),
            ("nonce over 256 bytes", f"token={token}&receipt=x&nonce={'n' * 257}".encode(),
             "application/x-www-form-urlencoded"),
            ("65 fields", "&".join(f"f{i}=x" for i in range(65)).encode(), "application/x-www-form-urlencoded"),
        ]
        for label, data, media in bad_bodies:
            c.check(f"{route} {label} (400)", c.send("POST", route, data=data,
                                                      headers={"Content-Type": media, **self.bearer()}), 400)
        self.valid_request("nonce as object", "application/json", {"token": token, "receipt": "x", "nonce": {"a": 1}},
                           valid=False)
        self.valid_request("nonce over 256", "application/x-www-form-urlencoded",
                           {"token": token, "receipt": "x", "nonce": "n" * 257}, valid=False)
        self.valid_request("flag maybe", "application/json",
                           {"token": token, "receipt": "x", "exclude_old_transactions": "maybe"}, valid=False)

        # 415
        for label, media in (("text/xml", "text/xml"), ("a charset other than UTF-8",
                                                       "application/json; charset=iso-8859-1"),
                             ("multipart", "multipart/form-data; boundary=x")):
            c.check(f"{route} {label} (415)", c.send("POST", route, data=b"<a/>", headers={
                "Content-Type": media, **self.bearer()}), 415)
        c.check(f"{route} no Content-Type (415)", c.send("POST", route, data=b"token=x"), 415)
        c.check(f"{route} charset=utf-8 accepted", c.send("POST", route, data=json.dumps(good).encode(), headers={
            "Content-Type": "application/json; charset=UTF-8", **self.bearer()}), 200)

        # 413: by Content-Length, and a chunked body that passes the limit.
        limit = self.args.max_body_size
        head = (f"POST {route} HTTP/1.1\r\nHost: {c.host}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Content-Length: {limit + 1}\r\n\r\n").encode()
        c.check(f"{route} Content-Length over the limit (413)", c.raw(head, path=route), 413,
                extra=lambda a, b: [] if a.header("connection") == "close" else ["no Connection: close"])
        head = (f"POST {route} HTTP/1.1\r\nHost: {c.host}\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                f"Transfer-Encoding: chunked\r\n\r\n").encode()
        piece = b"a" * 65536
        chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * (limit // len(piece) + 2) + [b"0\r\n\r\n"]
        c.check(f"{route} chunked body over the limit (413)", c.raw(head, chunks, path=route), 413)

        self.memory_budget_spent(route, route, key, limit, "application/json", "application/x-www-form-urlencoded")

        # 401, spaced out to stay within the failure budget per address (10 a second).
        def refused(label: str, answer_fn: Callable[[], Answer], nonce: str | None = None):
            time.sleep(0.25)
            c.check(f"{route} {label} (401)", answer_fn(), 401, extra=(lambda a, b: [] if b.get("nonce") == nonce
                                                                       else [f"nonce {b.get('nonce')!r}"])
                    if nonce else None)

        random_key = "rvk_" + secrets.token_hex(24)
        refused("unknown key", lambda: self.post(route, good, key=random_key))
        refused("malformed key", lambda: self.post(route, good, key="not-a-key"))
        refused("no key", lambda: self.post(route, good, bearer=False))
        refused("Basic authorization", lambda: self.post(route, good, bearer=False,
                                                         headers={"Authorization": "Basic dXNlcjpwYXNz"}))
        refused("apikey field and bearer differ", lambda: self.post(route, {**good, "apikey": random_key}))
        refused("unknown token", lambda: self.post(route, {"token": "app_" + secrets.token_hex(16), "receipt": "x",
                                                           "nonce": "n401"}), nonce="n401")
        refused("no token", lambda: self.post(route, {"receipt": "x"}))
        if self.need("other_account_token"):
            refused("another account's token", lambda: self.post(route, {"token": self.cred["other_account_token"],
                                                                         "receipt": self.receipt}))
        if self.need("disabled_key", "disabled_token"):
            refused("disabled account", lambda: self.post(route, {"token": self.cred["disabled_token"],
                                                                  "receipt": "x"}, key=self.cred["disabled_key"]))

        # 402
        if route == "/apiencrypted" and self.need("plain_key", "plain_token"):
            c.check(f"{route} plan without the endpoint (402)", self.post(
                route, {"token": self.cred["plain_token"], "receipt": self.receipt, "nonce": "n402"},
                key=self.cred["plain_key"]), 402,
                extra=lambda a, b: [] if b.get("nonce") == "n402" else ["nonce not echoed on 402"])
        if route == "/api" and self.cred.get("plain_key"):
            c.check(f"{route} plan without /apiencrypted takes /api", self.post(
                route, {"token": self.cred["plain_token"], "receipt": self.receipt}, key=self.cred["plain_key"]), 200)

        # 429: the plan's rate limit, the monthly quota.
        if self.need("slow_key", "slow_token"):
            time.sleep(1.1)
            answers = [self.post(route, {**good, "token": self.cred["slow_token"]}, key=self.cred["slow_key"])
                       for _ in range(3)]
            limited = [a for a in answers if a.status == 429]
            if not limited:
                c.fail(f"{route} rate limit", f"no 429 in 3 quick calls ({[a.status for a in answers]})")
            for a in answers:
                c.check(f"{route} rate limit of 1/s", a, {200, 429}, extra=lambda a, b: [] if a.status == 200 or (
                    b.get("retry_after") == int(a.header("retry-after") or 0) and "quota_resets_at" not in b
                    and "Rate limit" in b.get("description", "")) else [f"429 body {b!r}"])
        if self.need("quota_key", "quota_token"):
            def quota(a: Answer, b: Any) -> list[str]:
                problems = []
                if "quota_resets_at" not in b:
                    problems.append("no quota_resets_at")
                if b.get("retry_after") != int(a.header("retry-after") or 0):
                    problems.append("retry_after differs from Retry-After")
                if "Monthly quota" not in b.get("description", ""):
                    problems.append(f"description {b.get('description')!r} does not name the quota")
                return problems
            c.check(f"{route} monthly quota of 0 (429)", self.post(
                route, {**good, "token": self.cred["quota_token"], "receipt": self.receipt},
                key=self.cred["quota_key"]), 429,
                extra=quota)


    def failed_authentications(self) -> None:
        """Past the failure budget of an address, unknown keys get 429 instead of a lookup."""
        print("failure budget")
        c = self.c
        time.sleep(1.1)
        answers = [self.post("/api", {"token": "app_" + secrets.token_hex(16), "receipt": "x"},
                             key="rvk_" + secrets.token_hex(24)) for _ in range(25)]
        statuses = [a.status for a in answers]
        if 429 not in statuses:
            c.fail("failure budget", f"25 unknown keys in a row got no 429 ({sorted(set(statuses))})")
        for a in answers:
            c.check("unknown keys in a row", a, {401, 429}, extra=lambda a, b: [] if a.status == 401 or (
                "failed authentications" in b.get("description", "")) else [f"429 body {b!r}"])
        time.sleep(2.5)


    # Apple's verifyReceipt, faked.

    def apple(self, route: str) -> None:
        print(f"Apple verification on {route} (fake verifyReceipt)")
        c, token = self.c, self.cred["apple_token"]
        sealed = route == "/apiencrypted"

        def ask(password: str) -> Answer:
            return self.post(route, {"token": token, "receipt": self.receipt, "password": password, "nonce": "na"})

        def fields(*names: str, status: int | None = None, retryable: bool | None = None):
            def check(a: Answer, body: Any) -> list[str]:
                if sealed and isinstance(body, str):
                    if not self.cred.get("apple_result_key"):
                        return []
                    body = json.loads(open_sealed(body, self.cred["apple_result_key"], "aes-256-cbc") or b"{}")
                    errors = self.doc.sealed_errors(body)
                    if errors:
                        return [f"sealed plaintext: {error}" for error in errors]
                    self.c.record_sealed(body)
                problems = [f"no {name}" for name in names if name not in body]
                if status is not None and body.get("status") != status:
                    problems.append(f"status {body.get('status')}, expected {status}")
                if retryable is not None and bool(body.get("retryable")) != retryable:
                    problems.append(f"retryable {body.get('retryable')!r}")
                if body.get("nonce") != "na":
                    problems.append("nonce not echoed")
                return problems + self.order_problems(body)
            return check

        ok = 200
        c.check(f"{route} Apple: unified receipt via the sandbox redirect", ask("contract-unified"), ok, extra=fields(
            "environment", "receipt", "latest_receipt_info", "latest_receipt", "pending_renewal_info", status=0))
        c.check(f"{route} Apple: iOS 6 receipt", ask("contract-ios6"), ok,
                extra=fields("receipt", "latest_receipt_info", "latest_receipt", status=0))
        c.check(f"{route} Apple: 21006 expired", ask("contract-expired"), 200,
                content_type="application/json", extra=fields("receipt", "latest_expired_receipt_info", status=21006))
        c.check(f"{route} Apple: 21002 with exception", ask("contract-exception"), 200,
                extra=fields("exception", status=21002))
        c.check(f"{route} Apple: 21005 until retries run out", ask("contract-retry"), 200,
                extra=fields("is-retryable", status=21005, retryable=True))
        c.check(f"{route} Apple: valid, another bundle ID (403)", ask("contract-wrong-bundle"), 403)
        c.check(f"{route} Apple: a status Apple does not document (500)", ask("contract-odd-status"), 500,
                extra=fields(status=12345))
        c.check(f"{route} Apple: answer is not JSON (500)", ask("contract-nonsense"), 500,
                extra=fields(status=500, retryable=True))
        c.check(f"{route} Apple: HTTP 503 until retries run out (500)", ask("contract-down"), 500,
                extra=fields(status=500, retryable=True))


    # The App Store Server API: enriched answers, look-ups by id (docs/app-store-server-api.md).

    def google_play(self, route: str, google: FakeGoogle) -> None:
        """Google Play purchases (store=google_play) against the fake Google: a paid product, a pending one, a
        subscription, what is refused before and by Google; on /api the ledger rows and their acknowledgement."""
        print(f"Google Play on {route} (fake Google)")
        c = self.c
        sealed = route == "/apiencrypted"
        token, result_key = self.cred["google_token"], self.cred.get("google_result_key")

        def verify(label: str, fields: dict, expect: int, check: Callable[[dict], list[str]] | None = None) -> None:
            # The backend names its user: the purchase's obfuscatedExternalAccountId (a hash) claims nothing.
            body = {"token": token, "store": "google_play", "package_name": FakeGoogle.PACKAGE,
                    "app_user_id": "contract-user", **fields}
            self.valid_request(f"{route} Google Play {label}", "application/x-www-form-urlencoded", body, route=route)

            def extra(a: Answer, value: Any) -> list[str]:
                if sealed and expect == 200 and isinstance(value, str):
                    if not result_key:
                        return ["no google_result_key to open the sealed answer"]
                    value = json.loads(open_sealed(value, result_key, "aes-256-cbc") or b"{}")
                    errors = self.doc.sealed_errors(value)
                    if errors:
                        return [f"sealed plaintext: {error}" for error in errors]
                    c.record_sealed(value)
                if not isinstance(value, dict):
                    return [f"not a JSON object: {value!r}"]
                return check(value) if check is not None else []
            c.check(f"POST {route} Google Play {label}", self.post(route, body), expect, extra=extra)

        def product(b: dict) -> list[str]:
            entries = b.get("transactions") or [{}]
            wanted = {"status": 0, "store": "google_play", "assurance": "google-play-api", "environment": "Production"}
            problems = [f"{k} {b.get(k)!r}, expected {v!r}" for k, v in wanted.items() if b.get(k) != v]
            if (b.get("google_play") or {}).get("orderId") != "GPA.3300-0000-0000-00001":
                problems.append(f"google_play {b.get('google_play')!r}")
            if entries[0].get("store") != "google_play" or entries[0].get("transaction_id") != "GPA.3300-0000-0000-00001":
                problems.append(f"transactions {entries!r}")
            return problems
        verify("a paid product", {"product_id": "coins_100", "purchase_token": FakeGoogle.PRODUCT}, 200, product)
        if sealed:
            return
        verify("a pending product", {"product_id": "coins_100", "purchase_token": FakeGoogle.PENDING}, 202,
               lambda b: [] if b.get("status") == 202 and b.get("store") == "google_play" else [f"answer {b!r}"])

        def subscription(b: dict) -> list[str]:
            statuses = [s.get("status") for s in b.get("subscriptions") or []]
            entitlements = [(e.get("name"), e.get("store")) for e in (b.get("customer") or {}).get("entitlements", [])]
            return ([] if statuses == ["active"] else [f"subscriptions {statuses}"]) + \
                ([] if ("pro", "google_play") in entitlements else [f"entitlements {entitlements}"])
        verify("an active subscription", {"product_id": "premium_monthly", "purchase_token": FakeGoogle.SUBSCRIPTION,
                                          "app_user_id": "contract-user"},
               200, subscription)
        verify("a token Google does not know",
               {"product_id": "coins_100", "purchase_token": "contract-unknown-token"}, 403)
        verify("another app's package", {"package_name": "com.example.other", "product_id": "coins_100",
                                         "purchase_token": FakeGoogle.PRODUCT}, 403)
        verify("a malformed token", {"product_id": "coins_100", "purchase_token": "not a token"}, 400)
        verify("no purchase type where the catalog says none",
               {"product_id": "not_in_catalog", "purchase_token": FakeGoogle.PRODUCT}, 403)
        # The user's rows: the store and, once the server asked Google, the product's acknowledgement.
        deadline = time.time() + 15
        while True:
            body = {"token": token, "app_user_id": "contract-user"}
            answer = self.post("/api/transactions", body)
            rows = answer.json().get("transactions", []) if answer.status == 200 else []
            states = {r.get("transaction_id"): (r.get("google_acknowledgement") or {}).get("state") for r in rows}
            if states.get("GPA.3300-0000-0000-00001") == "acknowledged" or time.time() > deadline:
                break
            time.sleep(0.3)
        self.valid_request("look-up of Google Play rows", "application/x-www-form-urlencoded", body,
                           route="/api/transactions")

        def ledger(a: Answer, b: Any) -> list[str]:
            rows = b.get("transactions", []) if isinstance(b, dict) else []
            problems = [f"row {r.get('transaction_id')} store {r.get('store')!r}" for r in rows
                        if r.get("store") != "google_play"]
            states = {r.get("transaction_id"): (r.get("google_acknowledgement") or {}).get("state") for r in rows}
            if states.get("GPA.3300-0000-0000-00001") != "acknowledged":
                problems.append(f"the product's acknowledgement {states}")
            with google.lock:
                # coins_100 is a consumable of the catalog: consumed once delivered, which acknowledges it.
                if f"products/coins_100/{FakeGoogle.PRODUCT}:consume" not in google.acknowledged:
                    problems.append(f"Google received the acknowledgements {google.acknowledged}")
            return problems
        c.check("POST /api/transactions Google Play rows", answer, 200, extra=ledger)
        with google.lock:
            for problem in google.bad_grants:
                c.fail("Google token grant", problem)


    def storekit(self, route: str) -> None:
        print(f"App Store Server API on {route} (fake App Store Server API)")
        c, fake = self.c, FakeAppStoreServer
        sealed = route == "/apiencrypted"
        token, result_key = self.cred["storekit_token"], self.cred.get("storekit_result_key")

        def expect(status: int | None = None, *, fields: tuple[str, ...] = (), absent: tuple[str, ...] = (),
                   retryable: bool | None = None, **values: Any):
            def check(a: Answer, body: Any) -> list[str]:
                if sealed and isinstance(body, str):
                    if not result_key:
                        return ["no storekit_result_key to open the sealed answer"]
                    body = json.loads(open_sealed(body, result_key, "aes-256-cbc") or b"{}")
                    errors = self.doc.sealed_errors(body)
                    if errors:
                        return [f"sealed plaintext: {error}" for error in errors]
                    self.c.record_sealed(body)
                problems = [f"no {name}" for name in fields if name not in body]
                problems += [f"{name} present" for name in absent if name in body]
                if status is not None and body.get("status") != status:
                    problems.append(f"status {body.get('status')}, expected {status}")
                if retryable is not None and bool(body.get("retryable")) != retryable:
                    problems.append(f"retryable {body.get('retryable')!r}")
                for name, value in values.items():
                    if body.get(name) != value:
                        problems.append(f"{name} {body.get(name)!r}, expected {value!r}")
                problems += self.order_problems(body)
                return problems
            return check

        ok = {"content_type": "text/plain; charset=utf-8"} if sealed else {"content_type": "application/json"}
        # By transaction id: Get Transaction Info, then (enrichment on) the customer's history and statuses.
        body = {"token": token, "transaction_id": fake.TRANSACTION, "lookup": "true"}
        self.valid_request("look-up by transaction_id", "application/x-www-form-urlencoded", body)
        c.check(f"{route} look-up by transaction_id", self.post(route, body), 200, **ok, extra=expect(
            0, fields=("receipt", "latest_receipt_info", "pending_renewal_info", "transactions"),
            kind="signed_transaction", assurance="id-lookup", enrichment="applied", environment="Sandbox"))
        if sealed:
            return
        body = {"token": token, "app_transaction_id": fake.APP_TRANSACTION, "lookup": True}
        self.valid_request("look-up by app_transaction_id", "application/json", body)
        c.check(f"{route} look-up by app_transaction_id", self.post(route, body, as_json=True), 200, extra=expect(
            0, fields=("latest_receipt_info", "pending_renewal_info", "transactions"), kind="transaction_history",
            assurance="id-lookup", receipt={"bundle_id": self.jws_bundle_id(), "app_transaction_id":
                                            fake.APP_TRANSACTION}))
        # A StoreKit 2 transaction, enriched; the same customer again comes from the answer cache.
        jws = (self.fixtures / "jws/apple_transaction_voicerec_sub_2022.jws").read_text().strip()
        for label in ("", " again (cached)"):
            c.check(f"{route} StoreKit 2 transaction, enriched{label}", self.post(route, {"token": token,
                                                                                        "receipt": jws}), 200,
                    extra=expect(0, fields=("latest_receipt_info", "pending_renewal_info"), kind="signed_transaction",
                                 assurance="signed-jws", enrichment="applied"))
        # Apple out of reach: the receipt's own answer, enrichment unavailable, retryable.
        if self.need("enriched_token"):
            c.check(f"{route} enrichment, Apple down", self.post(route, {"token": self.cred["enriched_token"],
                                                                        "receipt": self.receipt}), 200,
                    extra=expect(0, fields=("receipt", "latest_receipt_info", "transactions"),
                                 absent=("pending_renewal_info",), retryable=True, enrichment="unavailable",
                                 assurance="signed-receipt"))
        # The refusals and failures of a look-up.
        cases = [
            ("an id Apple does not know (21010)", {"transaction_id": fake.UNKNOWN}, 200, 21010),
            ("a malformed id (21002)", {"transaction_id": "../../admin"}, 200, 21002),
            ("Apple down (500, retryable)", {"transaction_id": fake.DOWN}, 500, 500),
            ("Apple refuses the app's credentials (500)", {"transaction_id": fake.REFUSED_CREDENTIALS}, 500, 500),
            ("both ids (400)", {"transaction_id": fake.TRANSACTION, "app_transaction_id": fake.APP_TRANSACTION},
             400, 400),
        ]
        for label, fields, http_status, status in cases:
            body = {"token": token, "lookup": "true", **fields}
            self.valid_request(label, "application/x-www-form-urlencoded", body, valid=http_status != 400)

            def failed(a: Answer, b: Any, label: str = label, status: int = status) -> list[str]:
                problems = [] if b.get("status") == status else [f"status {b.get('status')}, expected {status}"]
                if "assurance" in b or "receipt" in b:
                    problems.append("a failure carries assurance or receipt")
                if "Apple down" in label and b.get("retryable") is not True:
                    problems.append("not retryable")
                if "credentials" in label and ("credentials" not in b.get("description", "")
                                               or "retryable" in b):
                    problems.append(f"description {b.get('description')!r} does not name the credentials, "
                                    f"or retryable {b.get('retryable')!r}")
                return problems
            c.check(f"{route} look-up: {label}", self.post(route, body), http_status, extra=failed)
        if self.need("refusing_token"):
            c.check(f"{route} look-up refused by the app (403)", self.post(route, {
                "token": self.cred["refusing_token"], "transaction_id": fake.TRANSACTION, "lookup": "true"}), 403,
                extra=lambda a, b: [] if "transaction id alone" in b.get("description", "") else [
                    f"description {b.get('description')!r}"])
        c.check(f"{route} look-up by an app without credentials (403)", self.post(route, {
            "token": self.cred["token"], "app_transaction_id": fake.APP_TRANSACTION, "lookup": "true"}), 403,
            extra=lambda a, b: [] if "credentials" in b.get("description", "") else [
                f"description {b.get('description')!r}"])
        # Without lookup=true, an id with no receipt is no look-up: a receipt is missing (21002), and Apple is not asked.
        c.check(f"{route} an id without a receipt or lookup is malformed (21002)", self.post(route, {
            "token": token, "receipt": "", "transaction_id": fake.TRANSACTION}), 200,
            extra=lambda a, b: [] if b.get("status") == 21002 and "assurance" not in b else [
                f"status {b.get('status')}, assurance {b.get('assurance')!r}"])
        # With a receipt, transaction_id keeps its meaning: the receipt must hold it.
        c.check(f"{route} transaction_id with a receipt is an assertion (403)", self.post(route, {
            "token": token, "receipt": jws, "transaction_id": fake.UNKNOWN}), 403)

        # A confirmed delivery is finished with Apple, in the background: pending, then finished (`confirm` delivery: a
        # delivery `once` mode recorded with its answer is not confirmed again, and so not finished).
        def finish(state: str):
            def check(a: Answer, b: Any) -> list[str]:
                rows = [row for row in b["transactions"] if row["transaction_id"] == fake.TRANSACTION]
                found = rows[0].get("apple_finish") if rows else None
                return [] if found and found["state"] == state else [
                    f"apple_finish {found!r}, expected {state} (rows {str(b['transactions'])[:300]})"]
            return check
        c.check("POST /api/transactions/delivered: Finish Transaction pending", self.post(
            "/api/transactions/delivered", {"token": token, "transaction_ids": fake.TRANSACTION}), 200,
            extra=finish("pending"))
        finished = None
        for _ in range(50):
            time.sleep(0.2)
            finished = self.post("/api/transactions", {"token": token, "original_transaction_id": fake.ORIGINAL})
            rows = finished.json().get("transactions", []) if finished.status == 200 else []
            if any((row.get("apple_finish") or {}).get("state") == "finished" for row in rows):
                break
        if finished is not None:
            c.check("POST /api/transactions: Finish Transaction finished", finished, 200, extra=lambda a, b: finish(
                "finished")(a, b) + [f"no finished_at in {row['apple_finish']!r}" for row in b["transactions"]
                                     if (row.get("apple_finish") or {}).get("state") == "finished"
                                     and "finished_at" not in row["apple_finish"]])


    def jws_bundle_id(self) -> str:
        jws = (self.fixtures / "jws/apple_transaction_voicerec_sub_2022.jws").read_text().strip()
        return json.loads(base64.urlsafe_b64decode(jws.split(".")[1] + "==="))["bundleId"]

    # The members a valid answer's schema lists, in the order the answer gives them.
    OUR_ORDER = ("enrichment", "retryable", "assurance", "repairs", "transactions", "subscriptions", "customer", "nonce",
                 "request_id")


    def order_problems(self, body: dict) -> list[str]:
        """A valid answer lists Apple's members, then `enrichment`, `assurance`, `repairs`, `transactions`, `nonce`,
        `request_id` (docs/api.md, "Response")."""
        if body.get("status") != 0:
            return []
        keys = list(body)
        ours = [key for key in keys if key in self.OUR_ORDER]
        problems = []
        if ours != [key for key in self.OUR_ORDER if key in ours]:
            problems.append(f"our members in the order {ours}")
        first = min((keys.index(key) for key in ours), default=len(keys))
        if any(key not in self.OUR_ORDER and key != "description" for key in keys[first:]):
            problems.append(f"an Apple member after ours: {keys}")
        return problems


    # The verifyReceipt drop-in (docs/verifyreceipt-drop-in.md).

    def memory_budget_spent(self, label: str, path: str, key: str, limit: int, holder_type: str | None,
                            last_type: str | None, target: str | None = None) -> None:
        """503: a body that would take its client address past its share of the memory budget for bodies (an eighth of
        --max-body-memory, at least one body at the size limit and a 64 KiB granule). Memory is held as the bytes
        arrive, never as Content-Length declares: a holder sends all but the last byte of a body at the size limit of
        `path` (`limit`), then one more body from the same address, to `target` (default: `path`; its own size limit
        may be smaller: the budget is shared), is refused once it passes the share, with `retryable` and
        `retry_after` 1."""
        c = self.c

        def head(length: int, media: str | None, route: str = path) -> bytes:
            content_type = f"Content-Type: {media}\r\n" if media else ""
            return (f"POST {route} HTTP/1.1\r\nHost: {c.host}\r\n{content_type}Authorization: Bearer {key}\r\n"
                    f"Content-Length: {length}\r\n\r\n").encode()
        holder = socket.create_connection((c.host, c.port), timeout=30)
        try:
            holder.sendall(head(limit, holder_type) + b"a" * (limit - 1))
            time.sleep(0.5)
            last = target or path
            # More than one granule, within the notification route's size limit (66,560 bytes).
            size = 66_000
            answer = c.raw(head(size, last_type, last), [b"a" * size], path=last)
            c.check(f"{label} body past its address's share of the memory budget (503)", answer,
                    503, extra=lambda a, b: [] if b.get("retryable") is True and b.get("retry_after") == 1 else [
                        f"retryable/retry_after: {b!r}"])
        finally:
            holder.close()
