"""Apple's verifyReceipt drop-in."""

from __future__ import annotations

import base64
import json
import re
import secrets
import time

from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

from .common import (
    Answer,
    DROP_IN,
)


class DropInChecks:

    def drop_in(self) -> None:
        print(f"verifyReceipt drop-in ({DROP_IN})")
        c, key, token = self.c, self.cred["key"], self.cred["token"]

        def path(app: str) -> str:
            return f"/verifyReceipt/{app}"

        def send(app: str, body: Any, *, api_key: str | None = None, headers: dict | None = None,
                 raw: bytes | None = None) -> Answer:
            data = raw if raw is not None else json.dumps(body).encode()
            all_headers = {"Authorization": f"Bearer {api_key or key}", **(headers or {})}
            return c.send("POST", path(app), data=data, headers=all_headers)

        def apple(status: int, *, keys: list[str] | None = None, passthrough: bool = False, **values: Any):
            def check(a: Answer, b: Any) -> list[str]:
                problems = [] if b.get("status") == status else [f"status {b.get('status')}, expected {status}"]
                # Ours in Apple's order; `status` comes first even where Apple's answer had it later (21006).
                if keys is not None and (list(b) != keys and not (passthrough and set(b) == set(keys))):
                    problems.append(f"members {list(b)}, expected {keys}")
                for name, value in values.items():
                    if b.get(name) != value:
                        problems.append(f"{name} {str(b.get(name))[:80]!r}, expected {str(value)[:80]!r}")
                if a.header("x-request-id") is None:
                    problems.append("no X-Request-ID")
                return problems
            return check

        valid_keys = ["status", "environment", "receipt", "latest_receipt_info", "latest_receipt"]
        request = {"receipt-data": self.receipt, "password": None, "exclude-old-transactions": False}
        self.valid_request("drop-in request", "application/json", request, route=DROP_IN)

        def dated(a: Answer, b: Any) -> list[str]:
            receipt = b.get("receipt") or {}
            requested = int(receipt.get("request_date_ms", "0"))
            return [] if abs(requested - time.time() * 1000) < 60_000 else [
                f"request_date_ms {receipt.get('request_date_ms')!r} is not the time of the request"]
        # No Content-Type, as libraries send it; then text/plain and a form type: read as JSON all the same.
        for label, headers in (("no Content-Type", {}), ("text/plain", {"Content-Type": "text/plain"}),
                               ("a form's Content-Type", {"Content-Type": "application/x-www-form-urlencoded"})):
            answer = send(token, request, headers=headers)
            c.check(f"{DROP_IN} valid receipt ({label})", answer, 200, content_type="application/json",
                    extra=lambda a, b: apple(0, keys=valid_keys, latest_receipt=self.receipt)(a, b) + dated(a, b))
        # The key as HTTP Basic's user, as a URL with credentials sends it (`KEY:@`: Python's requests sends no
        # credentials for a user without the colon).
        parts = urlsplit(c.base)
        url = f"{parts.scheme}://{key}:@{parts.netloc}{path(token)}"
        answer = Answer.of(c.session.post(url, data=json.dumps(request).encode(), timeout=30))
        c.check(f"{DROP_IN} the key as Basic user in the URL", answer, 200, extra=apple(0, keys=valid_keys))
        c.check(f"{DROP_IN} exclude-old-transactions", send(token, {**request, "exclude-old-transactions": True}),
                200, extra=apple(0))

        # Apple's refusals: HTTP 200, `status` alone.
        tampered = bytearray(self.receipt_der)
        tampered[-1] ^= 0x01
        refusals: list[tuple[str, str | None, Any, bytes | None, int]] = [
            ("damaged receipt-data", token, {"receipt-data": "AAAA"}, None, 21002),
            ("no receipt-data", token, {"password": "x"}, None, 21002),
            ("a body that is not JSON", token, None, b"{not json", 21002),
            ("an empty body", token, None, b"", 21002),
            ("JSON that is not an object", token, [], None, 21002),
            ("receipt-data of the wrong type", token, {"receipt-data": {"a": 1}}, None, 21002),
            ("not authentic", token, {"receipt-data": base64.b64encode(bytes(tampered)).decode()}, None, 21003),
            ("a sandbox receipt for a production-only app", self.cred.get("production_only_token"), request, None,
             21007),
            ("another app's receipt", self.cred.get("other_bundle_token"), request, None, 21010),
            ("a product outside the app's catalog", self.cred.get("catalog_token"), request, None, 21010),
            ("another shared secret", self.cred.get("secret_token"), {**request, "password": "not-the-secret"}, None,
             21004),
        ]
        production = self.fixtures / "receipts/tp_production_ios_g5_2024.b64" if self.fixtures else None
        if production is not None and production.is_file():
            refusals.append(("a production receipt for a sandbox-only app", self.cred.get("sandbox_only_token"),
                             {"receipt-data": production.read_text().strip()}, None, 21008))
        else:
            c.fail(DROP_IN, "no production receipt in the fixtures: 21008 not exercised")
        for label, app, body, raw, status in refusals:
            if app is None:
                c.fail(DROP_IN, f"no credentials for {label!r}")
                continue
            if raw is None and isinstance(body, dict) and status == 21002:
                self.valid_request(label, "application/json", body, valid="wrong type" not in label, route=DROP_IN)
            c.check(f"{DROP_IN} {label} ({status})", send(app, body, raw=raw), 200, content_type="application/json",
                    extra=apple(status, keys=["status"]))
        if self.need("secret_token", "secret"):
            c.check(f"{DROP_IN} the app's shared secret", send(self.cred["secret_token"], {
                **request, "password": self.cred["secret"]}), 200, extra=apple(0, keys=valid_keys))
            # Stateless: nothing the drop-in verified is in the app's ledger (the app is used by the drop-in alone).
            expected = Path(re.sub(r"\.b64$", "", self.args.receipt) + ".expected.json")
            ids = sorted({entry["transaction_id"] for entry in json.loads(expected.read_text()).get("in_app", [])}) \
                if expected.is_file() else []
            if ids:
                c.check(f"{DROP_IN} records nothing in the ledger", self.post("/api/transactions/delivered", {
                    "token": self.cred["secret_token"], "transaction_ids": ",".join(ids[:1000])}), 200,
                    extra=lambda a, b: [] if not b["transactions"] else [
                        f"the ledger holds {len(b['transactions'])} transactions the drop-in verified"])

        # Apple's verifyReceipt behind an app in `apple` mode (the fake Apple): Apple's answer passes through.
        if self.cred.get("apple_token") and self.args.fake_apple_port:
            apple_token = self.cred["apple_token"]
            cases = [
                ("contract-unified", 0, ["status", "environment", "receipt", "latest_receipt_info", "latest_receipt",
                                         "pending_renewal_info"]),
                ("contract-expired", 21006, ["receipt", "latest_expired_receipt_info", "status"]),
                ("contract-exception", 21002, ["status", "exception"]),
                ("contract-retry", 21005, ["status", "is-retryable"]),
                ("contract-down", 21005, ["status", "is-retryable"]),
            ]
            for password, status, keys in cases:
                c.check(f"{DROP_IN} apple mode: {password} ({status})", send(apple_token, {
                    **request, "password": password}), 200, extra=apple(status, keys=keys, passthrough=True))
            c.check(f"{DROP_IN} apple mode: a status Apple does not document (21005)", send(apple_token, {
                **request, "password": "contract-odd-status"}), 200,
                extra=apple(21005, keys=["status", "is-retryable"]))

        # Enriched answers: Apple's history and renewal state, in Apple's shape (no `enrichment`, no `retryable`).
        if self.storekit_faked and self.need("storekit_token", "enriched_token"):
            jws = (self.fixtures / "jws/apple_transaction_voicerec_sub_2022.jws").read_text().strip()
            c.check(f"{DROP_IN} StoreKit 2 transaction, enriched", send(self.cred["storekit_token"], {
                "receipt-data": jws}), 200, extra=apple(0, keys=["status", "environment", "receipt",
                                                                 "latest_receipt_info", "pending_renewal_info"]))
            c.check(f"{DROP_IN} enrichment unavailable: the receipt's own answer", send(self.cred["enriched_token"],
                                                                                       request), 200,
                    extra=apple(0, keys=valid_keys))

        # Failures of the exchange: our JSON error shape and HTTP status.
        def refused(label: str, answer_fn: Callable[[], Answer]):
            time.sleep(0.25)  # within the failure budget per address
            c.check(f"{DROP_IN} {label} (401)", answer_fn(), 401)
        random_key = "rvk_" + secrets.token_hex(24)
        refused("unknown key", lambda: send(token, request, api_key=random_key))
        refused("no key", lambda: c.send("POST", path(token), data=json.dumps(request).encode()))
        refused("Basic with an unknown key", lambda: c.send("POST", path(token), data=json.dumps(request).encode(),
                                                            headers={"Authorization": "Basic " + base64.b64encode(
                                                                f"{random_key}:".encode()).decode()}))
        refused("unknown token", lambda: send("app_" + secrets.token_hex(16), request))
        if self.need("other_account_token"):
            refused("another account's token", lambda: send(self.cred["other_account_token"], request))
        if self.need("disabled_key", "disabled_token"):
            refused("disabled account", lambda: send(self.cred["disabled_token"], request,
                                                     api_key=self.cred["disabled_key"]))
        limit = self.args.max_body_size
        head = (f"POST {path(token)} HTTP/1.1\r\nHost: {c.host}\r\nAuthorization: Bearer {key}\r\n"
                f"Content-Length: {limit + 1}\r\n\r\n").encode()
        c.check(f"{DROP_IN} Content-Length over the limit (413)", c.raw(head, path=path(token)), 413)
        if self.need("slow_key", "slow_token"):
            time.sleep(1.1)
            answers = [send(self.cred["slow_token"], request, api_key=self.cred["slow_key"]) for _ in range(3)]
            if not any(a.status == 429 for a in answers):
                c.fail(f"{DROP_IN} rate limit", f"no 429 in 3 quick calls ({[a.status for a in answers]})")
            for a in answers:
                c.check(f"{DROP_IN} rate limit of 1/s", a, {200, 429})
        if self.need("quota_key", "quota_token"):
            c.check(f"{DROP_IN} monthly quota of 0 (429)", send(self.cred["quota_token"], request,
                                                               api_key=self.cred["quota_key"]), 429,
                    extra=lambda a, b: [] if "quota_resets_at" in b else ["no quota_resets_at"])
        self.memory_budget_spent(DROP_IN, path(token), key, limit, None, None)
        for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"):
            c.check(f"{method} {DROP_IN}", c.send(method, path(token)), 405,
                    extra=lambda a, b: [] if a.header("allow") == "POST" else [f"Allow {a.header('allow')!r}"])
        c.check(f"POST /verifyReceipt without a token (404)", c.send("POST", "/verifyReceipt", data=b"{}",
                                                                     headers=self.bearer()), 404)
