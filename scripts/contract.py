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

from __future__ import annotations

import argparse
import base64
import copy
import http.server
import json
import os
import re
import secrets
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable
from urllib.parse import urlsplit

try:
    import requests
    from jsonschema import Draft202012Validator, FormatChecker
    from referencing import Registry, Resource
    from referencing.jsonschema import DRAFT202012
except ImportError as error:  # pragma: no cover
    sys.exit(f"contract: missing Python package ({error}); run: python3 -m pip install jsonschema requests")

REPO = Path(__file__).resolve().parent.parent
DEFAULT_SPEC = REPO / "Sources/ReceiptServer/Operations/openapi.json"
SPEC_URI = "urn:receiptverify:openapi"
METRICS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")

# (method, route, status) pairs the document lists that no request from outside can produce, with the reason.
NOT_PRODUCIBLE = {
    ("GET", "/readyz", 503): "needs a database outage, which a client cannot cause",
    ("HEAD", "/readyz", 503): "needs a database outage, which a client cannot cause",
    ("POST", "/notifications/{token}", 500): "our own failure, which a client cannot cause",
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


class Document:
    """The OpenAPI document: validation, `$ref` resolution, schemas, the documented pairs and fields."""

    def __init__(self, path: Path):
        self.path = path
        self.raw = path.read_bytes()
        self.doc = json.loads(self.raw)
        self.registry = Registry().with_resource(SPEC_URI, Resource(contents=self.doc, specification=DRAFT202012))
        self._validators: dict[str, Draft202012Validator] = {}

    def validate_itself(self) -> None:
        if self.doc.get("openapi") != "3.1.0":
            raise Failure(f"{self.path}: openapi is {self.doc.get('openapi')!r}, not 3.1.0")
        try:
            from openapi_spec_validator import validate
        except ImportError:
            raise Failure("openapi-spec-validator is not installed: python3 -m pip install openapi-spec-validator")
        validate(self.doc)
        # Every $ref resolves and every schema is a valid Draft 2020-12 schema.
        for pointer, ref in self._refs(self.doc, ""):
            try:
                self.pointer(ref[1:])
            except (KeyError, IndexError):
                raise Failure(f"{pointer}: $ref {ref} points nowhere")
        for name, schema in self.doc["components"]["schemas"].items():
            Draft202012Validator.check_schema(schema)
        # Every example matches the schema beside it.
        for pointer, media in self._media(self.doc, ""):
            for error in self.errors(media["schema"], media["example"], limit=1):
                raise Failure(f"{pointer}: the example does not match its schema: {error}")

    def _media(self, node: Any, pointer: str):
        if isinstance(node, dict):
            if "schema" in node and "example" in node:
                yield pointer, node
            for key, value in node.items():
                yield from self._media(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from self._media(value, f"{pointer}/{index}")

    def _refs(self, node: Any, pointer: str):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "$ref" and isinstance(value, str):
                    yield pointer, value
                else:
                    yield from self._refs(value, f"{pointer}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                yield from self._refs(value, f"{pointer}/{index}")

    def pointer(self, pointer: str) -> Any:
        node = self.doc
        for part in pointer.strip("/").split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            node = node[int(part)] if isinstance(node, list) else node[part]
        return node

    def resolve(self, node: Any) -> Any:
        """Follows `$ref`s of response and header objects (not of schemas: the validator does those)."""
        seen = 0
        while isinstance(node, dict) and "$ref" in node:
            node = self.pointer(node["$ref"][1:])
            seen += 1
            if seen > 20:
                raise Failure("a $ref cycle")
        return node

    def validator(self, schema: Any) -> Draft202012Validator:
        key = json.dumps(schema, sort_keys=True)
        if key not in self._validators:
            self._validators[key] = Draft202012Validator(
                refs_absolute(schema), registry=self.registry, format_checker=FormatChecker())
        return self._validators[key]

    def schema(self, name: str) -> dict:
        return {"$ref": f"#/components/schemas/{name}"}

    def sealed_errors(self, body: Any) -> list[str]:
        """The plaintext of a sealed answer: a `VerifyAnswer` with status 0."""
        errors = self.errors(self.schema("VerifyAnswer"), body)
        if not errors and body.get("status") != 0:
            errors.append(f"status: {body.get('status')!r}, expected 0")
        return errors

    def errors(self, schema: Any, instance: Any, limit: int = 5) -> list[str]:
        found = sorted(self.validator(schema).iter_errors(instance), key=lambda error: list(error.path))
        messages = []
        for error in found[:limit]:
            location = "/".join(str(part) for part in error.absolute_path) or "(top level)"
            messages.append(f"{location}: {self._brief(error)}")
        return messages

    @staticmethod
    def _brief(error) -> str:
        # anyOf/oneOf errors say little by themselves: name the best sub-error.
        if error.context:
            best = min(error.context, key=lambda sub: len(list(sub.absolute_path)) * -1)
            location = "/".join(str(part) for part in best.absolute_path) or "(top level)"
            return f"matches none of the alternatives ({error.validator}); deepest mismatch at {location}: " \
                   f"{best.message[:200]}"
        return error.message[:300]

    def template(self, path: str) -> str:
        """The documented path a request's path matches (`/verifyReceipt/app_…` → `/verifyReceipt/{token}`), or the
        path itself when none does."""
        if path in self.doc["paths"]:
            return path
        for documented in self.doc["paths"]:
            if "{" in documented:
                pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(documented)) + "$"
                if re.match(pattern, path):
                    return documented
        return path

    # The answer definition for a request.
    def response_for(self, method: str, path: str, status: int) -> tuple[tuple[str, str, int], dict | None]:
        path = self.template(path)
        item = self.doc["paths"].get(path)
        if item is None:
            pair = ("*", UNKNOWN_PATH, status)
            definition = self.doc["x-unknown-path"]["response"] if status == 404 else None
        elif method.lower() in item:
            pair = (method.upper(), path, status)
            responses = item[method.lower()]["responses"]
            definition = responses.get(str(status)) or responses.get(f"{str(status)[0]}XX") or responses.get("default")
        else:
            pair = (OTHER_METHODS, path, status)
            definition = item["x-other-methods"]["response"] if status == 405 else None
        return pair, (self.resolve(definition) if definition is not None else None)

    def documented_pairs(self) -> set[tuple[str, str, int]]:
        pairs = {("*", UNKNOWN_PATH, 404)}
        for path, item in self.doc["paths"].items():
            for method in HTTP_METHODS:
                if method in item:
                    pairs |= {(method.upper(), path, int(status)) for status in item[method]["responses"]}
            if "x-other-methods" in item:
                pairs.add((OTHER_METHODS, path, 405))
        return pairs

    def documented_fields(self) -> dict[str, set[str]]:
        """Top-level fields of each closed answer schema."""
        schemas = self.doc["components"]["schemas"]
        return {name: set(schemas[name]["properties"])
                for name in ("VerifyAnswer", "ErrorAnswer", "HealthStatus", "LedgerPage", "DeliveriesConfirmed",
                             "DeliveryDecision", "VerifyReceiptValid", "VerifyReceiptRefusal",
                             "NotificationRecorded", "GoogleNotificationRecorded", "WebhooksAnswer", "CustomerAnswer", "Customer",
                             "OfferSignatureAnswer", "ConsumptionRecorded", "AppleActionAnswer",
                             "AppleActionFailure")}


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


class Contract:
    """Sends requests, checks answers, keeps the coverage."""

    def __init__(self, document: Document, base: str, allow_missing_ops_routes: bool, verbose: bool):
        self.document = document
        self.base = base.rstrip("/")
        parts = urlsplit(self.base)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self.allow_missing_ops_routes = allow_missing_ops_routes
        self.verbose = verbose
        self.failures: list[str] = []
        self.pairs: dict[tuple[str, str, int], int] = {}
        self.fields: dict[str, set[str]] = {name: set() for name in document.documented_fields()}
        self.not_exercised: dict[tuple[str, str, int], str] = dict(NOT_PRODUCIBLE)
        self.fields_not_exercised: dict[str, str] = {}
        self.skipped_ops: set[str] = set()
        self.count = 0
        self.session = requests.Session()

    # Sending.

    def send(self, method: str, path: str, **options) -> Answer:
        options.setdefault("timeout", 30)
        options.setdefault("allow_redirects", False)
        response = self.session.request(method, self.base + path, **options)
        return Answer.of(response)

    def raw(self, head: bytes, body_chunks: list[bytes] | None = None, method: str = "POST", path: str = "/api") \
            -> Answer:
        """One request over its own connection, written as given; reads the answer (the server may answer before
        the body is sent, and close)."""
        with socket.create_connection((self.host, self.port), timeout=30) as connection:
            try:
                connection.sendall(head)
                for chunk in body_chunks or []:
                    connection.sendall(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass  # The server answered early and closed; its answer is read below.
            data = b""
            try:
                while True:
                    piece = connection.recv(65536)
                    if not piece:
                        break
                    data += piece
                    if self._complete(data):
                        break
            except ConnectionResetError:
                if not data:
                    raise Failure(f"{method} {path}: the connection was reset before an answer arrived")
        head_bytes, _, body = data.partition(b"\r\n\r\n")
        lines = head_bytes.decode("latin-1").split("\r\n")
        if not lines or not lines[0].startswith("HTTP/1."):
            raise Failure(f"{method} {path}: no HTTP answer (got {data[:80]!r})")
        status = int(lines[0].split(" ")[1])
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return Answer(method, path, status, headers, body)

    @staticmethod
    def _complete(data: bytes) -> bool:
        head, separator, body = data.partition(b"\r\n\r\n")
        if not separator:
            return False
        match = re.search(rb"(?im)^content-length:\s*(\d+)", head)
        return match is not None and len(body) >= int(match.group(1))

    # Checking.

    def fail(self, name: str, message: str) -> None:
        self.failures.append(f"{name}: {message}")
        print(f"  FAIL {name}: {message}")

    def check(self, name: str, answer: Answer, expect: int | set[int], *,
              content_type: str | None = None, extra: Callable[[Answer, Any], list[str] | None] | None = None) -> Any:
        """Checks one answer against the document; returns its parsed body (JSON value or text), or None."""
        self.count += 1
        expected = {expect} if isinstance(expect, int) else set(expect)
        problems: list[str] = []
        if answer.status not in expected:
            problems.append(f"HTTP {answer.status}, expected {'/'.join(map(str, sorted(expected)))}"
                            f" (body: {answer.body[:200]!r})")
        pair, definition = self.document.response_for(answer.method, answer.path, answer.status)
        body: Any = None
        if definition is None:
            problems.append(f"HTTP {answer.status} is not documented for {answer.method} {answer.path}")
        else:
            problems += self._check_headers(definition, answer)
            parsed, body_problems = self._check_body(definition, answer)
            body = parsed
            problems += body_problems
            if content_type is not None and answer.header("content-type") != content_type:
                problems.append(f"Content-Type {answer.header('content-type')!r}, expected {content_type!r}")
            problems += status_rules(answer.status, self.document.template(answer.path), body)
            if isinstance(body, dict) and "request_id" in body and answer.header("x-request-id") is not None \
                    and body["request_id"] != answer.header("x-request-id"):
                problems.append("request_id differs from X-Request-ID")
            if extra is not None and not problems:
                problems += extra(answer, body) or []
        if definition is not None and answer.status in expected:
            self.pairs[pair] = self.pairs.get(pair, 0) + 1
        if problems:
            for problem in problems:
                self.fail(name, problem)
        elif self.verbose:
            print(f"  ok   {name}: {answer.method} {answer.path} → {answer.status}")
        return body

    def _check_headers(self, definition: dict, answer: Answer) -> list[str]:
        problems = []
        for name, header in (definition.get("headers") or {}).items():
            header = self.document.resolve(header)
            value = answer.header(name)
            if value is None:
                if header.get("required"):
                    problems.append(f"header {name} is missing")
                continue
            schema = header.get("schema", {})
            resolved = self.document.resolve(schema) if "$ref" in schema else schema
            instance: Any = value
            if resolved.get("type") == "integer":
                try:
                    instance = int(value)
                except ValueError:
                    problems.append(f"header {name}: {value!r} is not an integer")
                    continue
            for error in self.document.errors(schema, instance):
                problems.append(f"header {name}: {error}")
        return problems

    def _check_body(self, definition: dict, answer: Answer) -> tuple[Any, list[str]]:
        content = definition.get("content")
        if answer.method == "HEAD":
            return None, ([f"HEAD answer has a body of {len(answer.body)} bytes"] if answer.body else [])
        if not content:
            return None, ([f"undocumented body of {len(answer.body)} bytes"] if answer.body else [])
        content_type = answer.header("content-type")
        if content_type is None:
            return None, ["no Content-Type"]
        media = content_type.split(";")[0].strip().lower()
        if media not in content:
            return None, [f"Content-Type {content_type!r} is not documented (documented: {', '.join(content)})"]
        schema = content[media].get("schema", {})
        if media == "application/json" or media.endswith("+json"):
            try:
                value = answer.json()
            except ValueError as error:
                return None, [f"body is not JSON ({error}): {answer.body[:200]!r}"]
            self._record_fields(value, answer)
        else:
            try:
                value = answer.body.decode("utf-8")
            except UnicodeDecodeError:
                return None, ["text body is not UTF-8"]
        return value, self.document.errors(schema, value)

    def _record_fields(self, value: Any, answer: Answer) -> None:
        if not isinstance(value, dict):
            return
        if self.document.template(answer.path) == DROP_IN and answer.status == 200:
            self.fields["VerifyReceiptValid" if value.get("status") == 0 else "VerifyReceiptRefusal"] |= set(value)
        elif self.document.template(answer.path) == NOTIFICATIONS and answer.status == 200:
            self.fields["NotificationRecorded"] |= set(value)
        elif self.document.template(answer.path) == GOOGLE_NOTIFICATIONS and answer.status == 200:
            self.fields["GoogleNotificationRecorded"] |= set(value)
        elif answer.path in ("/healthz", "/readyz") and answer.status == 200:
            self.fields["HealthStatus"] |= set(value)
        elif answer.path == APPLE and answer.status in (403, 500):
            self.fields["AppleActionFailure"] |= set(value)
        elif answer.status >= 400 and "receipt" not in value:
            self.fields["ErrorAnswer"] |= set(value)
        elif answer.path in ("/api", "/apiencrypted"):
            self.record_sealed(value)
        elif answer.path == "/api/transactions":
            self.fields["LedgerPage"] |= set(value)
        elif answer.path == "/api/transactions/delivered":
            self.fields["DeliveriesConfirmed"] |= set(value)
        elif answer.path == WEBHOOKS:
            self.fields["WebhooksAnswer"] |= set(value)
        elif answer.path == CUSTOMERS:
            self.fields["CustomerAnswer"] |= set(value)
            self.record_customer(value.get("customer"))
        elif answer.path == OFFERS:
            self.fields["OfferSignatureAnswer"] |= set(value)
        elif answer.path == CONSUMPTION:
            self.fields["ConsumptionRecorded"] |= set(value)
        elif answer.path == APPLE:
            self.fields["AppleActionAnswer"] |= set(value)

    def record_customer(self, customer: Any) -> None:
        if isinstance(customer, dict):
            self.fields["Customer"] |= set(customer)

    def record_sealed(self, value: dict) -> None:
        self.fields["VerifyAnswer"] |= set(value)
        self.record_customer(value.get("customer"))
        for entry in value.get("transactions") or []:
            if isinstance(entry, dict):
                self.fields["DeliveryDecision"] |= set(entry)

    REQUEST_SCHEMAS = {"/api": "VerifyRequest", "/apiencrypted": "VerifyRequest", "/api/transactions": "LookUpRequest",
                       "/api/transactions/delivered": "DeliveredRequest", "/api/webhooks": "WebhooksRequest",
                       "/api/customers": "CustomersRequest", "/api/offers/signature": "OfferSignatureRequest",
                       "/api/transactions/consumption": "ConsumptionRequest", "/api/apple": "AppleActionRequest"}

    def request_body_problems(self, media: str, body: Any, valid: bool, route: str = "/api") -> list[str]:
        """Whether the documented request schema agrees with what the server did with `body`."""
        if route == DROP_IN:
            name = "VerifyReceiptRequest"
        elif route == NOTIFICATIONS:
            name = "NotificationRequest"
        elif route == GOOGLE_NOTIFICATIONS:
            name = "GooglePushRequest"
        else:
            name = self.REQUEST_SCHEMAS[route] + ("JSON" if media == "application/json" else "Form")
        errors = self.document.errors(self.document.schema(name), body)
        if valid and errors:
            return [f"the server took this body, but the request schema {name} rejects it: {errors[0]}"]
        if not valid and not errors:
            return [f"the server refused this body, but the request schema {name} accepts it"]
        return []


# Apple's verifyReceipt, faked: the `password` a test sends chooses the answer.
class FakeApple:
    """A local stand-in for Apple's verifyReceipt (the server's --apple-production-url/--apple-sandbox-url point
    here): `/production` and `/sandbox` answer by the request's `password`."""

    def __init__(self, port: int, fixtures: Path | None, receipt_bundle: str):
        self.port = port
        self.answers = self._answers(fixtures, receipt_bundle)
        handler = self._handler()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def _load(fixtures: Path | None, name: str) -> dict | None:
        if fixtures is None:
            return None
        path = fixtures / name
        return json.loads(path.read_text()) if path.is_file() else None

    def _answers(self, fixtures: Path | None, bundle: str) -> dict[str, dict[str, Any]]:
        date = {"purchase_date": "2020-07-14 19:33:26 Etc/GMT", "purchase_date_ms": "1594755206000",
                "purchase_date_pst": "2020-07-14 12:33:26 America/Los_Angeles"}
        unified = self._load(fixtures, "apple-responses/revenuecat_status0_unified_sandbox_2020.json") or {
            "status": 0, "environment": "Sandbox",
            "receipt": {"receipt_type": "ProductionSandbox", "bundle_id": bundle, "in_app": [
                {"quantity": "1", "product_id": "p", "transaction_id": "1", "original_transaction_id": "1",
                 "is_trial_period": "false", **date}]},
            "latest_receipt_info": [], "latest_receipt": "MIIT", "pending_renewal_info": [
                {"auto_renew_product_id": "p", "original_transaction_id": "1", "product_id": "p",
                 "auto_renew_status": "1"}]}
        ios6 = self._load(fixtures, "apple-responses/mbaasy_status0_ios6_subscription_sandbox_2015.json") or {
            "receipt": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "latest_receipt_info": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "status": 0, "latest_receipt": "ewoJ"}
        expired = self._load(fixtures, "apple-responses/mbaasy_status21006_ios6_expired_subscription_2015.json") or {
            "receipt": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "latest_expired_receipt_info": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "status": 21006}
        wrong_bundle = copy.deepcopy(unified)
        wrong_bundle["receipt"]["bundle_id"] = "com.example.not-this-app"
        # scenario → {environment → (HTTP status, body)}
        return {
            "contract-unified": {"production": (200, {"status": 21007}), "sandbox": (200, unified)},
            "contract-ios6": {"production": (200, ios6)},
            "contract-expired": {"production": (200, expired)},
            "contract-exception": {"production": (200, {"status": 21002,
                                                         "exception": "java.lang.IllegalArgumentException"})},
            "contract-retry": {"production": (200, {"status": 21005, "is-retryable": True})},
            "contract-wrong-bundle": {"production": (200, {"status": 21007}), "sandbox": (200, wrong_bundle)},
            "contract-odd-status": {"production": (200, {"status": 12345})},
            "contract-nonsense": {"production": (200, "<html>Service Unavailable</html>")},
            "contract-down": {"production": (503, "down")},
        }

    def _handler(self):
        answers = self.answers

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    request = {}
                environment = self.path.strip("/").split("/")[0]
                scenario = answers.get(request.get("password", ""), {})
                status, body = scenario.get(environment, (200, {"status": 21002}))
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


# Apple's App Store Server API, faked with Apple's own signed data (the fixtures' voicerec subscription, signed by
# Apple): the id in the path chooses the answer.
class FakeGoogle:
    """A local stand-in for Google (the server's --google-play-api-url and --google-oauth-token-url point at
    http://127.0.0.1:PORT and PORT/token): the token endpoint checks each JWT bearer grant as Google does (RS256 by the
    service account's key when `cryptography` is installed, its email as issuer, the androidpublisher scope, Google's
    token URI as audience, at most an hour); the purchase resources answer only a token it granted.

    | purchase token | answer |
    |---|---|
    | PRODUCT | a paid ProductPurchase of coins_100, not acknowledged |
    | PENDING | a ProductPurchase of coins_100 awaiting payment |
    | SUBSCRIPTION | an active SubscriptionPurchaseV2 of premium_monthly |
    | any other | 404 |

    Acknowledgements and consumptions (POST …:acknowledge, …:consume) answer 204 for a known token and are
    recorded."""

    PACKAGE = "com.example.contract"
    PRODUCT = "contract-product-token"
    PENDING = "contract-pending-token"
    SUBSCRIPTION = "contract-subscription-token"

    def __init__(self, port: int, client_email: str, public_key_pem: bytes | None):
        self.port = port
        self.client_email = client_email
        self.public_key = None
        if public_key_pem:
            try:
                from cryptography.hazmat.primitives.serialization import load_pem_public_key
                self.public_key = load_pem_public_key(public_key_pem)
            except ImportError:
                pass
        self.issued: set[str] = set()
        self.bad_grants: list[str] = []
        # Google's OIDC signing key, which signs Pub/Sub's push tokens, published at /oauth2/v3/certs.
        self.signing_key = None
        try:
            from cryptography.hazmat.primitives.asymmetric import rsa
            self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        except ImportError:
            pass
        self.keys_fetched = 0
        self.acknowledged: list[str] = []
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def grant_problem(self, form: dict[str, list[str]]) -> str | None:
        """What Google would refuse in a grant, or None."""
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return f"grant_type {form.get('grant_type')}"
        parts = (form.get("assertion") or [""])[0].split(".")
        if len(parts) != 3:
            return "not a compact JWS"
        try:
            header = json.loads(base64.urlsafe_b64decode(parts[0] + "==="))
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "==="))
            signature = base64.urlsafe_b64decode(parts[2] + "===")
        except ValueError:
            return "not base64url JSON"
        if header.get("alg") != "RS256" or header.get("typ") != "JWT" or not header.get("kid"):
            return f"header {header}"
        if claims.get("iss") != self.client_email or claims.get("aud") != "https://oauth2.googleapis.com/token" \
                or claims.get("scope") != "https://www.googleapis.com/auth/androidpublisher":
            return f"claims {claims}"
        now = time.time()
        if not (abs(claims.get("iat", 0) - now) <= 60 and 0 < claims.get("exp", 0) - claims.get("iat", 0) <= 3600):
            return f"iat/exp {claims.get('iat')}/{claims.get('exp')}"
        if self.public_key is not None:
            from cryptography.exceptions import InvalidSignature
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import padding
            try:
                self.public_key.verify(signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(),
                                       hashes.SHA256())
            except InvalidSignature:
                return "the signature does not verify with the service account's key"
        return None

    def jwks(self) -> dict:
        numbers = self.signing_key.public_key().public_numbers()

        def b64(number: int) -> str:
            return base64.urlsafe_b64encode(number.to_bytes((number.bit_length() + 7) // 8, "big")).rstrip(
                b"=").decode()
        return {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "contract-google-1",
                          "n": b64(numbers.n), "e": b64(numbers.e)}]}

    def push_token(self, audience: str, email: str, **changes: Any) -> str:
        """The OIDC token Pub/Sub sends with an authenticated push, signed by Google's key."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        now = int(time.time())
        claims = {"iss": "https://accounts.google.com", "aud": audience, "email": email, "email_verified": True,
                  "sub": "113774264463038321964", "azp": "113774264463038321964", "iat": now, "exp": now + 3600,
                  **changes}

        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        signed = b64(json.dumps({"alg": "RS256", "kid": "contract-google-1", "typ": "JWT"}).encode()) + "." \
            + b64(json.dumps(claims).encode())
        signature = self.signing_key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signed + "." + b64(signature)

    def resource(self, path: str) -> tuple[int, dict | None]:
        prefix = f"/androidpublisher/v3/applications/{self.PACKAGE}/purchases/"
        if not path.startswith(prefix):
            return 404, None
        rest = path[len(prefix):]
        product = {"kind": "androidpublisher#productPurchase", "purchaseTimeMillis": "1790000000123",
                   "consumptionState": 0, "developerPayload": "", "acknowledgementState": 0, "quantity": 1,
                   "regionCode": "FR", "obfuscatedExternalAccountId": "contract-user"}
        if rest == f"products/coins_100/tokens/{self.PRODUCT}":
            return 200, {**product, "purchaseState": 0, "orderId": "GPA.3300-0000-0000-00001"}
        if rest == f"products/coins_100/tokens/{self.PENDING}":
            return 200, {**product, "purchaseState": 2, "orderId": "GPA.3300-0000-0000-00002"}
        if rest == f"subscriptionsv2/tokens/{self.SUBSCRIPTION}":
            return 200, {
                "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "FR",
                "startTime": "2026-11-01T10:00:00.5Z", "subscriptionState": "SUBSCRIPTION_STATE_ACTIVE",
                "latestOrderId": "GPA.3300-0000-0000-00003",
                "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
                "externalAccountIdentifiers": {"obfuscatedExternalAccountId": "contract-user"},
                "lineItems": [{"productId": "premium_monthly", "expiryTime": "2099-01-01T00:00:00Z",
                               "latestSuccessfulOrderId": "GPA.3300-0000-0000-00003",
                               "autoRenewingPlan": {"autoRenewEnabled": True}}]}
        return 404, {"error": {"code": 404, "message": "The purchase token was not found."}}

    def _handler(self) -> type:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def reply(self, status: int, body: dict | None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def authorized(self) -> bool:
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                with fake.lock:
                    return token in fake.issued

            def do_POST(self) -> None:  # noqa: N802: http.server's name
                sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    from urllib.parse import parse_qs
                    problem = fake.grant_problem(parse_qs(sent.decode()))
                    if problem:
                        with fake.lock:
                            fake.bad_grants.append(problem)
                        self.reply(400, {"error": "invalid_grant", "error_description": problem})
                        return
                    token = "ya29." + secrets.token_hex(16)
                    with fake.lock:
                        fake.issued.add(token)
                    self.reply(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
                    return
                if not self.authorized():
                    self.reply(401, {"error": {"code": 401}})
                    return
                match = re.match(r"^(/androidpublisher/v3/applications/[^/]+/purchases/)(products|subscriptions)/"
                                 r"([^/]+)/tokens/([^/:]+):(acknowledge|consume)$", self.path)
                if match is None or (match.group(5) == "consume" and match.group(2) != "products"):
                    self.reply(404, None)
                    return
                prefix, kind, product, token, action = match.groups()
                lookup = f"{prefix}products/{product}/tokens/{token}" if kind == "products" \
                    else f"{prefix}subscriptionsv2/tokens/{token}"
                status, _ = fake.resource(lookup)
                if status != 200:
                    self.reply(404, {"error": {"code": 404}})
                    return
                with fake.lock:
                    fake.acknowledged.append(f"{kind}/{product}/{token}" + (":consume" if action == "consume" else ""))
                self.reply(204, None)

            def do_GET(self) -> None:  # noqa: N802: http.server's name
                if self.path == "/oauth2/v3/certs" and fake.signing_key is not None:
                    with fake.lock:
                        fake.keys_fetched += 1
                    self.reply(200, fake.jwks())
                    return
                if not self.authorized():
                    self.reply(401, {"error": {"code": 401}})
                    return
                self.reply(*fake.resource(self.path))

        return Handler


class FakeAppStoreServer:
    """A local stand-in for the App Store Server API (the server's --storekit-production-url and
    --storekit-sandbox-url point at http://127.0.0.1:PORT/production and /sandbox). The fixtures' subscription is a
    sandbox purchase: production does not know it (404, 4040010), the sandbox answers it, as Apple does. Every request's
    JWT is checked (ES256, the app's key id, issuer and bundle ID; its signature too when `cryptography` is installed).

    | id | answer |
    |---|---|
    | TRANSACTION, ORIGINAL | Get Transaction Info, Get Transaction History, Get All Subscription Statuses |
    | APP_TRANSACTION | Get Transaction History, Get All Subscription Statuses |
    | UNKNOWN | 404 with errorCode 4040010 in both environments (an id Apple does not know) |
    | REFUSED_CREDENTIALS | 401 (Apple refuses the app's key) |
    | any other | 503 (Apple down): enrichment `unavailable`, a look-up 500 `retryable` |

    Finish Transaction (POST …/transactions/{id}/finish) answers 200 with no body for TRANSACTION in the sandbox.
    """

    TRANSACTION = "2000000191896422"
    ORIGINAL = "2000000184445477"
    APP_TRANSACTION = "704528340000000001"
    UNKNOWN = "1999999999"
    REFUSED_CREDENTIALS = "1401000000"
    DOWN = "1503000000"

    def __init__(self, port: int, fixtures: Path, issuer_id: str, key_id: str, public_key_pem: bytes | None,
                 other_bundle_ids: set[str]):
        self.port = port
        self.issuer_id = issuer_id
        self.key_id = key_id
        self.public_key = None
        if public_key_pem:
            try:
                from cryptography.hazmat.primitives.serialization import load_pem_public_key
                self.public_key = load_pem_public_key(public_key_pem)
            except ImportError:
                pass
        self.transaction = (fixtures / "jws/apple_transaction_voicerec_sub_2022.jws").read_text().strip()
        self.renewal = (fixtures / "jws/apple_renewal_info_voicerec_2022.jws").read_text().strip()
        payload = json.loads(base64.urlsafe_b64decode(self.transaction.split(".")[1] + "==="))
        self.bundle_id = payload["bundleId"]
        # The customer's own token (the purchase is claimed by it, as the transaction states it).
        self.app_account_token = payload.get("appAccountToken") or "5b9b0f0c-8c5e-4bd1-9d3a-2c1f00000001"
        # The bundle IDs a JWT may name: the fixtures' app, and the receipt's (an app whose customer is unknown here).
        self.bundle_ids = {self.bundle_id} | other_bundle_ids
        self.bad_tokens: list[str] = []
        self.received: list[str] = []
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def token_problem(self, authorization: str | None) -> str | None:
        """What is wrong with a request's `Authorization`, or None: Apple's rules for the JWT."""
        if not authorization or not authorization.startswith("Bearer "):
            return "no bearer token"
        parts = authorization[len("Bearer "):].split(".")
        if len(parts) != 3:
            return "not a compact JWS"
        try:
            header = json.loads(base64.urlsafe_b64decode(parts[0] + "==="))
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "==="))
            signature = base64.urlsafe_b64decode(parts[2] + "===")
        except ValueError:
            return "not base64url JSON"
        if header.get("alg") != "ES256" or header.get("kid") != self.key_id or header.get("typ") != "JWT":
            return f"header {header}"
        now = time.time()
        if claims.get("iss") != self.issuer_id or claims.get("aud") != "appstoreconnect-v1" \
                or claims.get("bid") not in self.bundle_ids:
            return f"claims {claims}"
        if not (claims.get("iat", 0) <= now + 60 < claims.get("exp", 0) + 60 <= claims.get("iat", 0) + 3660):
            return f"iat/exp {claims.get('iat')}/{claims.get('exp')} (Apple takes at most 60 minutes)"
        if self.public_key is not None:
            from cryptography.exceptions import InvalidSignature
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
            if len(signature) != 64:
                return f"signature of {len(signature)} bytes, not 64 (raw r ‖ s)"
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            try:
                self.public_key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
            except InvalidSignature:
                return "the signature does not verify with the app's key"
        return None

    def answer(self, environment: str, path: str) -> tuple[int, dict | None]:
        match = re.match(r"^/inApps/v[12]/(transactions|history|subscriptions)/([^/?]+)$", path)
        if match is None:
            return 404, {"errorCode": 4040000, "errorMessage": "Not found."}
        endpoint, identifier = match.groups()
        # History and statuses take any id of the customer, an app transaction id included; Get Transaction Info a
        # transaction id.
        known = {self.TRANSACTION, self.ORIGINAL} | ({self.APP_TRANSACTION} if endpoint != "transactions" else set())
        if identifier == self.REFUSED_CREDENTIALS:
            return 401, None
        if identifier == self.UNKNOWN or (identifier in known and environment == "production"):
            return 404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."}
        if identifier not in known:
            return 503, {"errorCode": 5000000, "errorMessage": "An unknown error occurred."}
        if endpoint == "transactions":
            return 200, {"signedTransactionInfo": self.transaction}
        if endpoint == "history":
            return 200, {"revision": "r1", "bundleId": self.bundle_id, "appAppleId": 1, "environment": "Sandbox",
                         "hasMore": False, "signedTransactions": [self.transaction]}
        item = {"originalTransactionId": self.ORIGINAL, "status": 2, "signedTransactionInfo": self.transaction,
                "signedRenewalInfo": self.renewal}
        return 200, {"environment": "Sandbox", "bundleId": self.bundle_id, "appAppleId": 1,
                     "data": [{"subscriptionGroupIdentifier": "21024612", "lastTransactions": [item]}]}

    def action(self, method: str, environment: str, path: str, sent: bytes) -> tuple[int, dict | None] | None:
        """Apple's actions on a customer, as Apple answers them; None for any other request. Known in the sandbox:
        ORIGINAL (its token set, extended); DOWN fails (503); any other id is ineligible for an extension (4030004)
        or unknown (4040005); no app transaction is known (4040019)."""
        with self.lock:
            self.received.append(f"{environment} {method} {path} {sent.decode(errors='replace')}")
        token = re.match(r"^/inApps/v1/transactions/([^/]+)/appAccountToken$", path)
        if method == "PUT" and token:
            body = json.loads(sent or b"{}")
            if not re.match(r"^[0-9a-f-]{36}$", str(body.get("appAccountToken", ""))):
                return 400, {"errorCode": 4000183, "errorMessage": "Invalid appAccountToken."}
            if token.group(1) == self.ORIGINAL and environment == "sandbox":
                return 200, None
            return 404, {"errorCode": 4040005, "errorMessage": "Original transaction id not found."}
        extend = re.match(r"^/inApps/v1/subscriptions/extend/([0-9]+)$", path)
        if method == "PUT" and extend:
            body = json.loads(sent or b"{}")
            if not (1 <= body.get("extendByDays", 0) <= 90 and body.get("extendReasonCode") in (0, 1, 2, 3)
                    and body.get("requestIdentifier")):
                return 400, {"errorCode": 4000009, "errorMessage": "Invalid extension."}
            if extend.group(1) == self.DOWN:
                return 503, {"errorCode": 5000000, "errorMessage": "An unknown error occurred."}
            if extend.group(1) == self.ORIGINAL and environment == "sandbox":
                effective = int(time.time() * 1000) + body["extendByDays"] * 86_400_000
                return 200, {"originalTransactionId": self.ORIGINAL, "webOrderLineItemId": "1", "success": True,
                             "effectiveDate": effective}
            return 403, {"errorCode": 4030004, "errorMessage": "Subscription extension ineligible."}
        if method == "POST" and path == "/inApps/v1/subscriptions/extend/mass":
            body = json.loads(sent or b"{}")
            return 200, {"requestIdentifier": body.get("requestIdentifier")}
        status = re.match(r"^/inApps/v1/subscriptions/extend/mass/([^/]+)/([^/]+)$", path)
        if method == "GET" and status:
            return 200, {"requestIdentifier": status.group(2), "complete": True,
                         "completeDate": int(time.time() * 1000), "succeededCount": 3, "failedCount": 0}
        if method == "GET" and path.startswith("/inApps/v1/transactions/appTransactions/"):
            return 404, {"errorCode": 4040019, "errorMessage": "App transaction does not exist."}
        return None

    def _handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def do_GET(self):
                self.respond("GET")

            def do_POST(self):
                self.respond("POST")

            def do_PUT(self):
                self.respond("PUT")

            def respond(self, method: str):
                environment, _, rest = self.path.lstrip("/").partition("/")
                path = "/" + rest.split("?")[0]
                problem = fake.token_problem(self.headers.get("Authorization"))
                with fake.lock:
                    fake.received.append(f"{environment} {method} {path}")
                    if problem:
                        fake.bad_tokens.append(f"{path}: {problem}")
                length = int(self.headers.get("Content-Length") or 0)
                sent = self.rfile.read(length) if length else b""
                action = fake.action(method, environment, path, sent) if not problem else None
                if problem:
                    status, body = 401, None
                elif action is not None:
                    status, body = action
                elif method == "POST":
                    finish = path == f"/inApps/v1/transactions/{fake.TRANSACTION}/finish" and environment == "sandbox"
                    status, body = (200, None) if finish else (404, {"errorCode": 4040010})
                else:
                    status, body = fake.answer(environment, path)
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


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


class Run:
    def __init__(self, contract: Contract, args, credentials: dict[str, str]):
        self.c = contract
        self.args = args
        self.cred = credentials
        self.receipt = Path(args.receipt).read_text().strip()
        self.receipt_der = base64.b64decode(self.receipt)
        self.fixtures = Path(args.fixtures) if args.fixtures and Path(args.fixtures).is_dir() else None
        self.doc = contract.document
        # Whether the App Store Server API is faked (--fake-storekit-port and the apps that use it).
        self.storekit_faked = False
        # Whether Apple's notification was recorded (its metric is then checked).
        self.notified = False

    def need(self, *names: str) -> bool:
        missing = [name for name in names if not self.cred.get(name)]
        if missing:
            self.c.fail("credentials", f"no {', '.join(missing)} given (--credentials): those checks did not run")
            return False
        return True

    def bearer(self, key: str | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {key or self.cred['key']}"}

    def post(self, route: str, fields: dict, *, key: str | None = None, as_json: bool = False,
             bearer: bool = True, headers: dict | None = None) -> Answer:
        all_headers = dict(headers or {})
        if bearer:
            all_headers.update(self.bearer(key))
        if as_json:
            return self.c.send("POST", route, json=fields, headers=all_headers)
        return self.c.send("POST", route, data=fields, headers=all_headers)

    def valid_request(self, name: str, media: str, body: dict, valid: bool = True, route: str = "/api") -> None:
        for problem in self.c.request_body_problems(media, body, valid, route):
            self.c.fail(name, problem)

    # The ledger routes.

    def webhooks(self) -> None:
        """/api/webhooks: every action once, as a customer's set-up script runs them, and a refused one."""
        print("webhook management")
        c, token = self.c, self.cred["token"]

        def call(label: str, fields: dict, expect: int = 200, as_json: bool = False) -> dict:
            body = {"token": token, **fields}
            media = "application/json" if as_json else "application/x-www-form-urlencoded"
            # The schema cannot say which fields each action needs: only bodies it can judge are held to it.
            if expect == 200 or fields.get("action") not in WEBHOOK_ACTIONS:
                self.valid_request(label, media, body, valid=expect == 200, route=WEBHOOKS)
            value = c.check(f"POST {WEBHOOKS} {label}", self.post(WEBHOOKS, body, as_json=as_json), expect)
            return value if isinstance(value, dict) else {}

        added = call("add", {"action": "add", "url": "https://hooks.example.com/contract",
                             "event_types": ["transaction.*", "webhook.test"], "nonce": "n-hook"}, as_json=True)
        endpoint = (added.get("endpoint") or {}).get("id", "")
        if not str(added.get("secret", "")).startswith("whsec_"):
            c.fail(f"POST {WEBHOOKS} add", f"no secret in {added!r}")
        listed = call("list", {"action": "list"})
        if endpoint not in [e.get("id") for e in listed.get("endpoints", [])]:
            c.fail(f"POST {WEBHOOKS} list", f"the added endpoint {endpoint} is not listed")
        paused = call("pause", {"action": "pause", "endpoint_id": endpoint})
        if (paused.get("endpoint") or {}).get("enabled") is not False:
            c.fail(f"POST {WEBHOOKS} pause", f"endpoint {paused.get('endpoint')!r}")
        call("resume", {"action": "resume", "endpoint_id": endpoint})
        tested = call("test", {"action": "test", "endpoint_id": endpoint})
        deliveries = call("deliveries", {"action": "deliveries", "limit": "10"})
        if tested.get("event_id") not in [e.get("id") for e in deliveries.get("events", [])]:
            c.fail(f"POST {WEBHOOKS} deliveries", "the queued test event is not listed")
        rotated = call("rotate_secret", {"action": "rotate_secret", "endpoint_id": endpoint, "grace_hours": "1"})
        if rotated.get("secret") in (None, added.get("secret")):
            c.fail(f"POST {WEBHOOKS} rotate_secret", "no new secret")
        call("redeliver", {"action": "redeliver", "event_id": tested.get("event_id", "")})
        call("remove", {"action": "remove", "endpoint_id": endpoint})
        for label, fields in (("an unknown action", {"action": "explode", "nonce": "n-bad"}),
                              ("no endpoint_id", {"action": "pause"}),
                              ("an unknown endpoint", {"action": "pause", "endpoint_id": endpoint}),
                              ("a plain http URL", {"action": "add", "url": "ftp://hooks.example.com/x"}),
                              ("grace_hours 169", {"action": "rotate_secret", "endpoint_id": endpoint,
                                                   "grace_hours": "169"})):
            call(label, fields, expect=400)

    def customers(self) -> None:
        """/api with a user carries `customer`; /api/customers answers the same view without a receipt, by user or by
        original transaction, and refuses what it cannot answer."""
        print("customers")
        if not self.need("transfer_token"):
            return
        # The app that moves claims: the receipt's purchases become this user's whoever presented them before.
        c, token = self.c, self.cred["transfer_token"]
        user = "customer-" + secrets.token_hex(4)
        answer = self.post("/api", {"token": token, "receipt": self.receipt, "app_user_id": user})

        def carries_customer(a: Answer, b: Any) -> list[str]:
            customer = b.get("customer") if isinstance(b, dict) else None
            if not isinstance(customer, dict) or customer.get("app_user_id") != user:
                return [f"no customer of {user}: {customer!r}"]
            owned = {p["transaction_id"] for p in customer["purchases"]} | {
                s["original_transaction_id"] for s in customer["subscriptions"]}
            if not owned:
                return ["the customer holds none of the receipt's purchases"]
            return []
        c.check("/api with app_user_id carries customer", answer, 200, extra=carries_customer)
        recorded = answer.json().get("customer") if answer.status == 200 else None
        body = {"token": token, "app_user_id": user, "nonce": "n-customer"}
        self.valid_request("customer look-up", "application/x-www-form-urlencoded", body, route=CUSTOMERS)

        def same_view(a: Answer, b: Any) -> list[str]:
            view = dict(b.get("customer") or {})
            expected = dict(recorded or {})
            view.pop("computed_at", None)
            expected.pop("computed_at", None)
            problems = [] if view == expected else [f"the route's view {view!r} is not the answer's {expected!r}"]
            return problems + ([] if b.get("nonce") == "n-customer" else ["nonce not echoed"])
        c.check(f"POST {CUSTOMERS} by user", self.post(CUSTOMERS, body), 200, extra=same_view)
        originals = [s["original_transaction_id"] for s in (recorded or {}).get("subscriptions", [])] + [
            p["original_transaction_id"] for p in (recorded or {}).get("purchases", [])]
        if originals:
            body = {"token": token, "original_transaction_id": originals[0], "environment": "sandbox"}
            self.valid_request("customer look-up as JSON", "application/json", body, route=CUSTOMERS)
            c.check(f"POST {CUSTOMERS} by original transaction (JSON)", self.post(CUSTOMERS, body, as_json=True), 200,
                    extra=lambda a, b: [] if b["customer"].get("original_transaction_id") == originals[0]
                    and b["customer"]["app_user_id"] is None else [f"customer {b['customer']!r}"])
        for label, body in (("no user and no original transaction", {"token": token}),
                            ("an unknown environment", {"token": token, "app_user_id": user,
                                                        "environment": "Staging"})):
            c.check(f"POST {CUSTOMERS} {label} (400)", self.post(CUSTOMERS, body), 400)
            self.valid_request(label, "application/x-www-form-urlencoded", body, valid=False, route=CUSTOMERS)

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

    def consumption(self) -> None:
        """/api/transactions/consumption keeps the backend's report for the ledger's transactions, names the unknown
        ones, and refuses what it cannot keep, saying what to fix."""
        print("consumption reports")
        c, token = self.c, self.cred["token"]
        answer = self.post("/api", {"token": token, "receipt": self.receipt})
        known = [t["transaction_id"] for t in (answer.json().get("transactions") or [])] if answer.status == 200 else []
        if not known:
            c.fail(f"POST {CONSUMPTION}", "the receipt recorded no transaction to report on")
            return
        body = {"token": token, "transaction_ids": f"{known[0]},unknown-1", "consumption_percentage": "25000",
                "nonce": "n-consumption"}
        self.valid_request("consumption report", "application/x-www-form-urlencoded", body, route=CONSUMPTION)
        c.check(f"POST {CONSUMPTION}", self.post(CONSUMPTION, body), 200,
                extra=lambda a, b: [] if b.get("transaction_ids") == [known[0]]
                and b.get("unknown_transaction_ids") == ["unknown-1"] and b.get("nonce") == "n-consumption"
                else [f"answer {b!r}"])
        body = {"token": token, "transaction_ids": [known[0]], "consumption_percentage": 100000,
                "delivery_status": "DELIVERED", "environment": "sandbox"}
        self.valid_request("consumption report as JSON", "application/json", body, route=CONSUMPTION)
        c.check(f"POST {CONSUMPTION} (JSON)", self.post(CONSUMPTION, body, as_json=True), 200,
                extra=lambda a, b: [] if b.get("transaction_ids") == [known[0]] else [f"answer {b!r}"])
        for label, body in (("no transaction", {"token": token, "consumption_percentage": "1"}),
                            ("no value", {"token": token, "transaction_id": known[0]}),
                            ("a percentage over 100000", {"token": token, "transaction_id": known[0],
                                                          "consumption_percentage": "100001"}),
                            ("an unknown delivery status", {"token": token, "transaction_id": known[0],
                                                            "delivery_status": "LOST"})):
            c.check(f"POST {CONSUMPTION} {label} (400)", self.post(CONSUMPTION, body), 400,
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
                and b.get("retryable") is True else [f"answer {b!r}"])
        ineligible = {**lost, "original_transaction_id": "1000000001", "nonce": "n-refused"}
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

    def ledger(self) -> None:
        """/api with a user, then the ledger look-ups and delivery confirmations of what it recorded."""
        print("ledger routes")
        c, token = self.c, self.cred["token"]
        user = "contract-" + secrets.token_hex(4)
        fields = {"token": token, "receipt": self.receipt, "app_user_id": user}
        self.valid_request("/api with app_user_id", "application/x-www-form-urlencoded", fields)
        answer = self.post("/api", fields)

        def decisions(a: Answer, b: Any) -> list[str]:
            entries = b.get("transactions") if isinstance(b, dict) else None
            if not entries:
                return ["no transactions in a valid answer"]
            return [f"{e['transaction_id']} is {e['state']}, expected seen (the verdicts recorded it)"
                    for e in entries if e.get("state") != "seen"]
        c.check("/api with app_user_id", answer, 200, extra=decisions)
        entries = answer.json().get("transactions") or [] if answer.status == 200 else []
        ids = sorted(e["transaction_id"] for e in entries)

        # Every row of the user, one per page, through the cursors.
        seen: list[str] = []
        cursor = None
        for _ in range(len(ids) + 1):
            body = {"token": token, "app_user_id": user, "limit": "1", "nonce": "n-page",
                    **({"cursor": cursor} if cursor else {})}
            self.valid_request("look-up page", "application/x-www-form-urlencoded", body, route="/api/transactions")
            page = self.post("/api/transactions", body)
            c.check("POST /api/transactions by user, one row a page", page, 200)
            value = page.json() if page.status == 200 else {}
            seen += [row["transaction_id"] for row in value.get("transactions", [])]
            cursor = value.get("next_cursor")
            if not cursor:
                break
        if sorted(seen) != ids:
            c.fail("ledger paging", f"pages gave {sorted(seen)}, the answer recorded {ids}")
        if entries:
            original = entries[0]["original_transaction_id"]
            body = {"token": token, "original_transaction_id": original, "limit": 1000}
            self.valid_request("look-up as JSON", "application/json", body, route="/api/transactions")
            c.check("POST /api/transactions by original transaction (JSON)",
                    self.post("/api/transactions", body, as_json=True), 200,
                    extra=lambda a, b: [] if all(row["original_transaction_id"] == original
                                                 and row.get("app_user_id") == user for row in b["transactions"])
                    and b["transactions"] else [f"rows {b['transactions']!r}"])
        for label, body in (("no user and no original transaction", {"token": token}),
                            ("a cursor it did not give", {"token": token, "app_user_id": user, "cursor": "x"}),
                            ("limit 0", {"token": token, "app_user_id": user, "limit": "0"}),
                            ("limit 1001", {"token": token, "app_user_id": user, "limit": "1001"})):
            c.check(f"POST /api/transactions {label} (400)", self.post("/api/transactions", body), 400)
            if label != "a cursor it did not give":
                self.valid_request(label, "application/x-www-form-urlencoded", body, valid=False,
                                   route="/api/transactions")

        # An app that moves claims and delivers until confirmed: a second user takes the purchases over
        # (transferred_from), and a confirmation shows in the next answer (delivered_at).
        if self.need("transfer_token"):
            transfer = {"token": self.cred["transfer_token"], "receipt": self.receipt}
            self.post("/api", {**transfer, "app_user_id": "first-user"})
            c.check("/api: a claim moves to another user", self.post("/api", {**transfer, "app_user_id": "second-user"}),
                    200, extra=lambda a, b: [] if b["transactions"] and all(
                        e.get("transferred_from") == "first-user" for e in b["transactions"]) else [
                        f"transactions {b['transactions']!r}"])
            moved = [e["transaction_id"] for e in entries]
            self.post("/api/transactions/delivered", {"token": self.cred["transfer_token"],
                                                      "transaction_ids": ",".join(moved)})
            c.check("/api: confirmed deliveries", self.post("/api", {**transfer, "app_user_id": "second-user"}), 200,
                    extra=lambda a, b: [] if b["transactions"] and all(
                        "delivered_at" in e and e["deliver"] is False for e in b["transactions"]) else [
                        f"transactions {b['transactions']!r}"])

        # Confirmations: a JSON list, a form list, an unknown id; idempotent.
        route = "/api/transactions/delivered"
        body = {"token": token, "transaction_ids": ids[:2] + ["no-such-transaction"], "nonce": "n-delivered"}
        self.valid_request("confirmation as JSON", "application/json", body, route=route)

        def confirmed(a: Answer, b: Any) -> list[str]:
            problems = []
            if sorted(t["transaction_id"] for t in b["transactions"]) != ids[:2]:
                problems.append(f"confirmed {b['transactions']!r}, expected {ids[:2]}")
            if b["unknown_transaction_ids"] != ["no-such-transaction"]:
                problems.append(f"unknown {b['unknown_transaction_ids']!r}")
            if b.get("nonce") != "n-delivered":
                problems.append("nonce not echoed")
            return problems
        first = self.post(route, body, as_json=True)
        c.check(f"POST {route} (JSON)", first, 200, extra=confirmed)
        again = self.post(route, {**body, "transaction_ids": ",".join(body["transaction_ids"])})
        c.check(f"POST {route} again, as a form", again, 200, extra=lambda a, b: [] if first.status == 200 and {
            t["transaction_id"]: t["delivered_at"] for t in b["transactions"]} == {
            t["transaction_id"]: t["delivered_at"] for t in first.json()["transactions"]} else [
            "a second confirmation changed delivered_at"])
        for label, body in (("without transaction_ids", {"token": token}),
                            ("1001 ids", {"token": token, "transaction_ids": ",".join(map(str, range(1001)))})):
            c.check(f"POST {route} {label} (400)", self.post(route, body), 400)
            self.valid_request(label, "application/x-www-form-urlencoded", body, valid=False, route=route)

    # Operations routes.

    def operations(self) -> None:
        print("operations routes")
        c = self.c
        c.check("GET /healthz", c.send("GET", "/healthz"), 200,
                extra=lambda a, b: [] if b == {"status": "ok"} else [f"body {b!r}"])
        c.check("HEAD /healthz", c.send("HEAD", "/healthz"), 200)
        c.check("GET /readyz", c.send("GET", "/readyz"), 200,
                extra=lambda a, b: [] if b == {"status": "ready"} else [f"body {b!r}"])
        c.check("HEAD /readyz", c.send("HEAD", "/readyz"), 200)

        answer = c.send("GET", "/openapi.json")
        if answer.status == 404 and self.args.allow_missing_ops_routes:
            c.skipped_ops.add("GET /openapi.json")
        else:
            c.check("GET /openapi.json", answer, 200, extra=lambda a, b: [] if a.body == self.doc.raw else [
                f"the served document ({len(a.body)} bytes) is not {self.doc.path} ({len(self.doc.raw)} bytes)"])
        self.metrics("GET /metrics")

        c.check("GET unknown path", c.send("GET", "/no-such-path"), 404)
        c.check("POST unknown path", c.send("POST", "/v1/api", data={"a": "b"}), 404)
        c.check("GET /API (paths are case-sensitive)", c.send("GET", "/API"), 404)
        for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"):
            for route in LEDGER_ROUTES + (WEBHOOKS, CUSTOMERS, OFFERS, CONSUMPTION, APPLE, "/api", "/apiencrypted"):
                c.check(f"{method} {route}", c.send(method, route), 405,
                        extra=lambda a, b: [] if a.header("allow") == "POST" else [f"Allow {a.header('allow')!r}"])
        # Methods the router has no handler for, and wrong methods on the operations routes.
        for method, route in (("TRACE", "/api"), ("POST", "/healthz"), ("DELETE", "/readyz"),
                              ("POST", "/openapi.json"), ("PUT", "/metrics")):
            answer = c.send(method, route)
            if answer.status == 404 and self.args.allow_missing_ops_routes:
                c.skipped_ops.add(f"{method} {route} → 405")
                continue
            allowed = self.doc.doc["paths"][route]["x-other-methods"]["allow"]

            def allow(a: Answer, b: Any, allowed: str = allowed) -> list[str]:
                def methods(text: str) -> set[str]:
                    return {part.strip() for part in text.split(",")}
                if methods(a.header("allow") or "") == methods(allowed):
                    return []
                return [f"Allow {a.header('allow')!r}, expected {allowed!r}"]
            c.check(f"{method} {route}", answer, 405, extra=allow)

    def metrics(self, name: str, after: bool = False) -> None:
        c = self.c
        answer = c.send("GET", "/metrics")
        if answer.status == 404 and self.args.allow_missing_ops_routes:
            c.skipped_ops.add("GET /metrics")
            return

        def exposition(a: Answer, body: Any) -> list[str]:
            problems = []
            sample = re.compile(r'^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="([^"\\]|\\.)*",?)*\})?'
                                r' (-?[0-9.]+([eE][-+]?[0-9]+)?|NaN|[+-]Inf)( -?[0-9]+)?$')
            for number, line in enumerate(body.splitlines(), 1):
                if not line or line.startswith("#"):
                    if line.startswith("#") and not re.match(r"^# (HELP|TYPE) [a-zA-Z_:][a-zA-Z0-9_:]* ", line):
                        problems.append(f"line {number} is no HELP/TYPE comment: {line[:100]!r}")
                    continue
                if not sample.match(line):
                    problems.append(f"line {number} is no sample: {line[:100]!r}")
            if after and not re.search(r'^http_server_requests_total\{[^}]*route="/api"', body, re.M):
                problems.append("no http_server_requests_total sample for route /api after the /api requests")
            if after and re.search(r'app_[0-9a-f]{8}', body):
                problems.append("a label value carries an app token (labels must be bounded)")
            if after and self.storekit_faked:
                for pattern in (r'receiptverify_storekit_requests_total\{[^}]*endpoint="transaction_info"'
                                r'[^}]*status="200"',
                                r'receiptverify_storekit_requests_total\{[^}]*endpoint="subscription_statuses"',
                                r'receiptverify_storekit_requests_total\{[^}]*status="503"',
                                r'receiptverify_storekit_request_duration_seconds_bucket\{[^}]*endpoint="transaction_history"',
                                r'receiptverify_storekit_retries_total ', r'receiptverify_storekit_rate_limit_wait_seconds',
                                r'receiptverify_storekit_cache_total\{result="hit"\}',
                                r'receiptverify_storekit_cache_total\{result="miss"\}',
                                r'receiptverify_storekit_requests_total\{[^}]*endpoint="finish_transaction"'
                                r'[^}]*environment="sandbox"[^}]*status="200"',
                                r'receiptverify_apple_finishes_total\{result="finished"\}'):
                    if not re.search(pattern, body, re.M):
                        problems.append(f"no sample matching {pattern!r} after the App Store Server API requests")
            if after and self.notified and not re.search(
                    r'^receiptverify_notifications_total\{(?=[^}]*type="DID_RENEW")(?=[^}]*outcome="recorded")',
                    body, re.M):
                problems.append("no receiptverify_notifications_total sample for the recorded DID_RENEW")
            return problems[:5]

        c.check(name, answer, 200, content_type=METRICS_CONTENT_TYPE, extra=exposition)

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
            body = {"token": token, "store": "google_play", "package_name": FakeGoogle.PACKAGE, **fields}
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
        verify("an active subscription", {"product_id": "premium_monthly", "purchase_token": FakeGoogle.SUBSCRIPTION},
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

    # Google Play's Real-time Developer Notifications (docs/google-play.md).

    def google_notifications(self, google: FakeGoogle) -> None:
        print(f"Google Play Real-time Developer Notifications ({GOOGLE_NOTIFICATIONS})")
        c = self.c
        if not self.need("google_token", "google_pubsub_audience", "google_pubsub_account"):
            return
        token = self.cred["google_token"]
        audience, account = self.cred["google_pubsub_audience"], self.cred["google_pubsub_account"]
        path = f"/notifications/google/{token}"

        def push(message_id: str, notification: dict | None, *, bearer: str | None = "valid",
                 raw: bytes | None = None, target: str = path) -> Answer:
            time.sleep(0.12)  # refused pushes spend the address's budget of failures (10 a second)
            headers = {"Content-Type": "application/json"}
            if bearer == "valid":
                bearer = google.push_token(audience, account)
            if bearer is not None:
                headers["Authorization"] = "Bearer " + bearer
            if raw is None:
                data = base64.b64encode(json.dumps(notification).encode()).decode()
                body = {"message": {"data": data, "messageId": message_id, "publishTime": "2026-11-26T10:00:00Z"},
                        "subscription": "projects/contract-play/subscriptions/play-rtdn"}
                self.valid_request("a Pub/Sub push", "application/json", body, route=GOOGLE_NOTIFICATIONS)
                raw = json.dumps(body).encode()
            return c.send("POST", target, data=raw, headers=headers)

        subscription = {"version": "1.0", "packageName": FakeGoogle.PACKAGE, "eventTimeMillis": "1790000000123",
                        "subscriptionNotification": {"version": "1.0", "notificationType": 2,
                                                     "purchaseToken": FakeGoogle.SUBSCRIPTION,
                                                     "subscriptionId": "premium_monthly"}}
        message = "contract-" + secrets.token_hex(6)
        c.check(f"{GOOGLE_NOTIFICATIONS} a renewal (200)", push(message, subscription), 200,
                extra=lambda a, b: [] if b.get("duplicate") is False and b.get("effect") == "recorded"
                else [f"answer {b!r}"])
        c.check(f"{GOOGLE_NOTIFICATIONS} Pub/Sub's redelivery (duplicate)", push(message, subscription), 200,
                extra=lambda a, b: [] if b.get("duplicate") is True and "effect" not in b else [f"answer {b!r}"])
        test = {"version": "1.0", "packageName": FakeGoogle.PACKAGE, "eventTimeMillis": "1790000000123",
                "testNotification": {"version": "1.0"}}
        c.check(f"{GOOGLE_NOTIFICATIONS} Play Console's test notification (200)", push(message + "-t", test), 200,
                extra=lambda a, b: [] if b.get("effect") == "none" else [f"answer {b!r}"])
        for label, bearer in (("no bearer token", None),
                              ("another audience", google.push_token("https://other.example", account)),
                              ("another service account", google.push_token(audience, "x@evil.iam.gserviceaccount.com")),
                              ("an expired token", google.push_token(audience, account, exp=int(time.time()) - 600,
                                                                      iat=int(time.time()) - 4200))):
            c.check(f"{GOOGLE_NOTIFICATIONS} {label} (403)", push(message + "-x", subscription, bearer=bearer), 403)
        other = dict(subscription, packageName="com.example.other")
        c.check(f"{GOOGLE_NOTIFICATIONS} another package (403)", push(message + "-p", other), 403)
        c.check(f"{GOOGLE_NOTIFICATIONS} a body that is not a push (400)",
                push(message, None, raw=b'{"message":{"data":"***","messageId":"1"}}'), 400)
        c.check(f"{GOOGLE_NOTIFICATIONS} unknown token (401)",
                push(message, subscription, target="/notifications/google/app_" + "0" * 32), 401)
        head = (f"POST {path} HTTP/1.1\r\nHost: {c.host}\r\nContent-Type: application/json\r\n"
                f"Authorization: Bearer {google.push_token(audience, account)}\r\n"
                f"Content-Length: {65_536 + 1}\r\n\r\n").encode()
        c.check(f"{GOOGLE_NOTIFICATIONS} Content-Length over the limit (413)", c.raw(head, path=path), 413)
        for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"):
            c.check(f"{method} {GOOGLE_NOTIFICATIONS}", c.send(method, path), 405,
                    extra=lambda a, b: [] if a.header("allow") == "POST" else [f"Allow {a.header('allow')!r}"])
        # 429: past the address's budget of failures, unknown tokens are answered without a lookup.
        time.sleep(1.1)
        answers = [c.send("POST", "/notifications/google/app_" + secrets.token_hex(16), data=b"{}")
                   for _ in range(25)]
        for answer in answers:
            if answer.status == 429:
                c.check(f"{GOOGLE_NOTIFICATIONS} past the failure budget (429)", answer, 429)
                break
        else:
            c.fail(f"{GOOGLE_NOTIFICATIONS} failure budget", "25 unknown tokens in a row were never answered 429")
        time.sleep(1.1)

    # App Store Server Notifications V2 (docs/notifications.md).

    # The largest body the route reads: a signedPayload at its limit (64 KiB) and 1 KiB for Apple's JSON around it.
    NOTIFICATION_BODY_LIMIT = 65_536 + 1_024

    def notifications(self) -> None:
        print(f"App Store Server Notifications ({NOTIFICATIONS})")
        c = self.c
        if not self.need("notification_token"):
            return
        token = self.cred["notification_token"]

        def path(app: str) -> str:
            return f"/notifications/{app}"

        def send(app: str, body: Any = None, *, raw: bytes | None = None,
                 content_type: str | None = "application/json", paced: bool = True) -> Answer:
            # No API key: the path's token is the only credential. Apple sends application/json; the route reads
            # JSON whatever the Content-Type says. Spaced out: refused notifications spend the address's budget
            # (10 a second), and past it the route answers 429 without looking (checked on its own below).
            if paced:
                time.sleep(0.12)
            data = raw if raw is not None else json.dumps(body).encode()
            return c.send("POST", path(app), data=data,
                          headers={"Content-Type": content_type} if content_type else {})

        def described(description: str):
            def check(a: Answer, b: Any) -> list[str]:
                return [] if b.get("description") == description else [
                    f"description {b.get('description')!r}, expected {description!r}"]
            return check
        malformed = "The body is not an App Store Server Notification"
        inauthentic = "The notification is not authentic"
        not_the_apps = "The notification is not for this app or one of its environments"

        fixture = self.fixtures / "jws/apple_notification_did_renew_2022.jws" if self.fixtures else None
        if fixture is not None and fixture.is_file():
            signed = fixture.read_text().strip()
            uuid = json.loads(base64.urlsafe_b64decode(signed.split(".")[1] + "==="))["notificationUUID"]
            body = {"signedPayload": signed}

            def recorded(duplicate: bool):
                def check(a: Answer, b: Any) -> list[str]:
                    keys = ["status", "description", "notification_uuid", "duplicate"] + ([] if duplicate else
                                                                                           ["events"])
                    problems = [] if list(b) == keys else [f"members {list(b)}, expected {keys}"]
                    if b.get("notification_uuid") != uuid:
                        problems.append(f"notification_uuid {b.get('notification_uuid')!r}, expected {uuid!r}")
                    if b.get("duplicate") is not duplicate:
                        problems.append(f"duplicate {b.get('duplicate')!r}, expected {duplicate}")
                    if not duplicate and not (isinstance(b.get("events"), int) and b["events"] >= 1):
                        problems.append(f"events {b.get('events')!r}, expected at least 1 (the notification's own)")
                    return problems
                return check
            # Apple's notification, then Apple's retry of it: recorded once.
            self.valid_request("notification", "application/json", body, route=NOTIFICATIONS)
            answer = send(token, body)
            c.check(f"{NOTIFICATIONS} Apple's notification", answer, 200, content_type="application/json",
                    extra=recorded(False))
            self.notified = answer.status == 200
            c.check(f"{NOTIFICATIONS} the same notification again, no Content-Type (duplicate)",
                    send(token, body, content_type=None), 200, extra=recorded(True))
            # /api on the notified transaction (Apple's signed transaction from the notification) answers with its
            # subscription's status, and the ledger look-up shows it.
            nested = self.fixtures / "jws/apple_notification_did_renew_2022__signedTransactionInfo.jws"
            if nested.is_file():
                def expired(a: Answer, b: Any) -> list[str]:
                    statuses = b.get("subscriptions") or []
                    return [] if [s.get("status") for s in statuses] == ["expired"] else [
                        f"subscriptions {statuses!r}, expected one expired"]
                c.check("/api on a notified subscription's transaction (subscriptions)",
                        self.post("/api", {"token": token, "receipt": nested.read_text().strip()}), 200,
                        extra=expired)
                c.check("POST /api/transactions of a notified subscription (subscriptions)",
                        self.post("/api/transactions", {"token": token, "original_transaction_id": "2000000000842607"}),
                        200, extra=expired)
            # The most the route reads: a body of exactly the limit, 16 members, a value 3 levels deep (members the
            # route ignores).
            padded = {**body, **{f"member{i}": i for i in range(13)}, "deep": [[1]], "padding": ""}
            padded["padding"] = "x" * (self.NOTIFICATION_BODY_LIMIT - len(json.dumps(padded).encode()))
            data = json.dumps(padded).encode()
            self.valid_request("the most the route reads", "application/json", padded, route=NOTIFICATIONS)
            c.check(f"{NOTIFICATIONS} {len(data)} bytes (the limit), 16 members, a value 3 levels deep",
                    send(token, raw=data), 200, extra=recorded(True))

            # 400: what is not Apple's body, with the real signedPayload where the shape alone is wrong.
            refusals: list[tuple[str, Any, bytes | None, bool]] = [  # (label, body, raw, the schema refuses it)
                ("no signedPayload", {"x": 1}, None, True),
                ("a body that is not JSON", None, b"{not json", True),
                ("JSON that is not an object", [signed], None, True),
                ("signedPayload of the wrong type", {"signedPayload": 1}, None, True),
                ("a signedPayload that is not a JWS", {"signedPayload": "not a jws"}, None, True),
                ("17 members", {**body, **{f"member{i}": i for i in range(16)}}, None, True),
                ("signedPayload given twice", None,
                 b'{"signedPayload":"' + signed.encode() + b'","signedPayload":"' + signed.encode() + b'"}', True),
                ("a value 4 levels deep", {**body, "deep": [[[1]]]}, None, False),
            ]
            transaction = self.fixtures / "jws/apple_transaction_voicerec_sub_2022.jws"
            if transaction.is_file():
                # Authentic and the app's, but a transaction, not a notification.
                refusals.append(("a signed transaction", {"signedPayload": transaction.read_text().strip()}, None,
                                 False))
            for label, refused_body, raw, schema_refuses in refusals:
                if raw is None and schema_refuses:
                    self.valid_request(label, "application/json", refused_body, valid=False, route=NOTIFICATIONS)
                c.check(f"{NOTIFICATIONS} {label} (400)", send(token, refused_body, raw=raw), 400,
                        extra=described(malformed))

            # 403: one character of the signature changed; a notification of another app.
            header, payload, signature = signed.split(".")
            middle = len(signature) // 2
            changed = signature[:middle] + ("B" if signature[middle] == "A" else "A") + signature[middle + 1:]
            c.check(f"{NOTIFICATIONS} signature changed (403)",
                    send(token, {"signedPayload": ".".join([header, payload, changed])}), 403,
                    extra=described(inauthentic))
            if self.need("other_bundle_token"):
                c.check(f"{NOTIFICATIONS} another bundle ID (403)", send(self.cred["other_bundle_token"], body), 403,
                        extra=described(not_the_apps))
        else:
            body = {"signedPayload": "a.b.c"}
            c.fail(NOTIFICATIONS, "no Server Notification in the fixtures (jws/apple_notification_did_renew_2022.jws):"
                                  " 200, 400 and 403 not exercised")

        # 401, spaced out to stay within the failure budget per address (10 a second).
        def unauthorized(label: str, answer_fn: Callable[[], Answer]):
            time.sleep(0.25)
            c.check(f"{NOTIFICATIONS} {label} (401)", answer_fn(), 401,
                    extra=described("The API key or app token is not valid"))
        unauthorized("unknown token", lambda: send("app_" + "0" * 32, body))
        if self.need("notification_disabled_token"):
            unauthorized("a disabled app's token", lambda: send(self.cred["notification_disabled_token"], body))

        # 413: by Content-Length, and a chunked body that passes the limit.
        limit = self.NOTIFICATION_BODY_LIMIT
        head = (f"POST {path(token)} HTTP/1.1\r\nHost: {c.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {limit + 1}\r\n\r\n").encode()
        c.check(f"{NOTIFICATIONS} Content-Length over the limit (413)", c.raw(head, path=path(token)), 413,
                extra=lambda a, b: [] if a.header("connection") == "close" else ["no Connection: close"])
        head = (f"POST {path(token)} HTTP/1.1\r\nHost: {c.host}\r\nContent-Type: application/json\r\n"
                f"Transfer-Encoding: chunked\r\n\r\n").encode()
        piece = b"a" * 65536
        chunks = [b"%x\r\n%s\r\n" % (len(piece), piece)] * (limit // len(piece) + 2) + [b"0\r\n\r\n"]
        c.check(f"{NOTIFICATIONS} chunked body over the limit (413)", c.raw(head, chunks, path=path(token)), 413)

        # 503: the memory budget for bodies is shared with /api, whose bodies hold it.
        self.memory_budget_spent(NOTIFICATIONS, "/api", self.cred["key"], self.args.max_body_size,
                                 "application/json", "application/json", target=path(token))

        for method in ("GET", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"):
            c.check(f"{method} {NOTIFICATIONS}", c.send(method, path(token)), 405,
                    extra=lambda a, b: [] if a.header("allow") == "POST" else [f"Allow {a.header('allow')!r}"])
        c.check("POST /notifications without a token (404)", c.send("POST", "/notifications", data=b"{}"), 404)

        # 429: past the failure budget of the address, unknown tokens get 429 instead of a lookup.
        time.sleep(1.1)
        answers = [send("app_" + secrets.token_hex(16), {"signedPayload": "a.b.c"}, paced=False) for _ in range(25)]
        if not any(a.status == 429 for a in answers):
            c.fail(f"{NOTIFICATIONS} failure budget",
                   f"25 unknown tokens in a row got no 429 ({sorted({a.status for a in answers})})")
        for a in answers:
            c.check(f"{NOTIFICATIONS} unknown tokens in a row", a, {401, 429}, extra=lambda a, b: [] if a.status == 401
                    or "failed authentications" in b.get("description", "") else [f"429 body {b!r}"])
        time.sleep(2.5)

    # Coverage.

    def coverage(self) -> None:
        c, doc = self.c, self.doc
        print("coverage")
        documented = doc.documented_pairs()
        for pair in sorted(documented):
            if pair in c.pairs:
                continue
            method, route, status = pair
            label = f"{method} {route} → {status}"
            if pair in c.not_exercised:
                print(f"  not exercised: {label} ({c.not_exercised[pair]})")
            elif self.args.allow_missing_ops_routes and any(
                    skipped.startswith(f"{method} {route}") or (method == OTHER_METHODS and route in skipped)
                    for skipped in c.skipped_ops):
                print(f"  not exercised: {label} (the server does not serve it yet; --allow-missing-ops-routes)")
            else:
                c.fail("coverage", f"documented {label} never occurred")
        for pair in sorted(set(c.pairs) - documented):
            c.fail("coverage", f"{pair} occurred but is not documented")
        for schema, names in doc.documented_fields().items():
            for name in sorted(names - c.fields[schema]):
                if name in c.fields_not_exercised:
                    print(f"  not exercised: field {schema}.{name} ({c.fields_not_exercised[name]})")
                else:
                    c.fail("coverage", f"documented field {schema}.{name} never occurred in an answer")
        for skipped in sorted(c.skipped_ops):
            print(f"  skipped (--allow-missing-ops-routes): {skipped}: the server answered 404")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
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
    for name in ("app_transaction_id", "offer_period", "billing_plan_type", "commitment"):
        contract.fields_not_exercised[name] = "no fixture of Apple's states it (2022 items); AppleFieldsTests covers it"
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


if __name__ == "__main__":
    sys.exit(main())
