"""What every part of the contract test shares: imports, route names, answers, helpers."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

try:  # the packages every part needs, checked first with a hint
    import requests  # noqa: F401
    from jsonschema import Draft202012Validator, FormatChecker  # noqa: F401
    from referencing import Registry, Resource  # noqa: F401
    from referencing.jsonschema import DRAFT202012  # noqa: F401
except ImportError as error:  # pragma: no cover
    sys.exit(f"contract: missing Python package ({error}); run: python3 -m pip install jsonschema requests")

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_SPEC = REPO / "Sources/ReceiptServer/Operations/openapi.json"
SPEC_URI = "urn:receiptverify:openapi"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# (method, route, status) pairs the document lists that no request from outside can produce, with the reason.
NOT_PRODUCIBLE = {
    ("GET", "/readyz", 503): "needs a database outage, which a client cannot cause",
    ("HEAD", "/readyz", 503): "needs a database outage, which a client cannot cause",
    ("POST", "/notifications/{token}", 500): "our own failure, which a client cannot cause",
    ("GET", "/api/export", 503): "needs a database outage, which a client cannot cause",
}
# The verifyReceipt drop-in's route template.
DROP_IN = "/verifyReceipt/{token}"
# The App Store Server Notifications route template.
NOTIFICATIONS = "/notifications/{token}"
# Google Play's Real-time Developer Notifications route template.
GOOGLE_NOTIFICATIONS = "/notifications/google/{token}"
# Pseudo-routes for answers outside the operations.
UNKNOWN_PATH = "<unknown path>"
OTHER_METHODS = "<other methods>"


class Failure(Exception):
    """A mismatch between the server and the document."""


@dataclass
class Answer:
    """One HTTP answer, from requests or from a raw socket."""

    method: str
    path: str
    status: int
    headers: dict[str, str]  # lower-case names
    body: bytes

    @classmethod
    def of(cls, response: requests.Response) -> "Answer":
        return cls(
            method=response.request.method or "GET",
            path=urlsplit(response.request.url or "").path,
            status=response.status_code,
            headers={name.lower(): value for name, value in response.headers.items()},
            body=response.content,
        )

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    def json(self) -> Any:
        return json.loads(self.body)


def refs_absolute(node: Any) -> Any:
    """A copy of a schema whose document-relative `$ref`s point into the registered document."""
    if isinstance(node, dict):
        return {
            key: (SPEC_URI + value if key == "$ref" and isinstance(value, str) and value.startswith("#") else
                  refs_absolute(value))
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [refs_absolute(item) for item in node]
    return node


def is_verdict(status: Any) -> bool:
    """0 (valid) or one of Apple's codes: 21000–21199."""
    return status == 0 or (isinstance(status, int) and not isinstance(status, bool) and 21000 <= status <= 21199)


def status_rules(http: int, route: str, body: Any) -> list[str]:
    """What the document says in words of an answer's `status` (its schemas say only "an integer", so that code
    generators make one model per shape): an error answer's status is its HTTP status, with `retry_after` on 429
    and 503 and `retryable` on 503; a verdict is 0 or one of Apple's codes, sent in clear on /apiencrypted only when
    not 0; a 500 of /api is ours (500) or Apple's undocumented status passed on. The drop-in's answers are Apple's
    shape and /api/apple's failures have their own (checked by their schemas)."""
    if not isinstance(body, dict) or "status" not in body or route == DROP_IN or (route == APPLE and http != 200):
        return []
    status = body["status"]
    problems = []
    if http == 200 and route in ("/api", "/apiencrypted"):
        if not is_verdict(status):
            problems.append(f"status {status!r} in a verdict: expected 0 or 21000–21199")
        elif route == "/apiencrypted" and status == 0:
            problems.append("a valid answer of /apiencrypted sent in clear")
    elif http == 500 and route in ("/api", "/apiencrypted"):
        if status != 500 and is_verdict(status):
            problems.append(f"status {status!r} in a 500: expected 500 or a status Apple does not document")
    elif http >= 400:
        if status != http:
            problems.append(f"status {status!r} in an HTTP {http} answer")
        if http in (429, 503) and "retry_after" not in body:
            problems.append(f"no retry_after in an HTTP {http} answer")
        if http == 503 and body.get("retryable") is not True:
            problems.append("no retryable: true in an HTTP 503 answer")
    return problems


def open_sealed(text: str, key_b64: str, cipher: str) -> bytes | None:
    """The plaintext of a sealed answer; None when no tool can open it here."""
    data = base64.b64decode(text, validate=True)
    key = base64.b64decode(key_b64)
    try:
        from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
        from cryptography.hazmat.primitives.padding import PKCS7
    except ImportError:
        if cipher != "aes-256-cbc":
            return None
        result = subprocess.run(
            ["openssl", "enc", "-d", "-aes-256-cbc", "-K", key.hex(), "-iv", data[:16].hex()],
            input=data[16:], capture_output=True, check=True)
        return result.stdout
    if cipher == "aes-256-gcm":
        return AESGCM(key).decrypt(data[:16], data[16:], None)
    decryptor = Cipher(algorithms.AES(key), modes.CBC(data[:16])).decryptor()
    padded = decryptor.update(data[16:]) + decryptor.finalize()
    unpadder = PKCS7(128).unpadder()
    return unpadder.update(padded) + unpadder.finalize()


# The ledger's routes (docs/api.md, "Transactions").
LEDGER_ROUTES = ("/api/transactions", "/api/transactions/delivered")
# The webhook management route (docs/webhooks.md, "From your own scripts").
WEBHOOKS = "/api/webhooks"
# The customer look-up (docs/api.md, "Customers and entitlements").
CUSTOMERS = "/api/customers"
OFFERS = "/api/offers/signature"
CONSUMPTION = "/api/transactions/consumption"
APPLE = "/api/apple"
WEBHOOK_ACTIONS = ("list", "add", "pause", "resume", "remove", "test", "rotate_secret", "deliveries", "redeliver")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


# The requests.
