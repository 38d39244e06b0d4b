"""Sends requests, checks answers against the document, keeps the coverage."""

from __future__ import annotations

import re
import socket

from typing import Any, Callable
from urllib.parse import urlsplit

import requests

from .common import (
    Answer,
    Failure,
    NOT_PRODUCIBLE,
    status_rules,
)
from .document import Document


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
            self.document.record_fields(schema, value, self.fields)
        else:
            try:
                value = answer.body.decode("utf-8")
            except UnicodeDecodeError:
                return None, ["text body is not UTF-8"]
        return value, self.document.errors(schema, value)

    def record_sealed(self, value: Any) -> None:
        """The fields of an opened `/apiencrypted` answer, a `VerifyAnswer`."""
        self.document.record_fields(self.document.schema("VerifyAnswer"), value, self.fields)

    def request_body_problems(self, media: str, body: Any, valid: bool, route: str = "/api") -> list[str]:
        """Whether the documented request schema agrees with what the server did with `body`."""
        name = self.document.request_schema_name(route, media)
        errors = self.document.errors(self.document.schema(name), body)
        if valid and errors:
            return [f"the server took this body, but the request schema {name} rejects it: {errors[0]}"]
        if not valid and not errors:
            return [f"the server refused this body, but the request schema {name} accepts it"]
        return []
