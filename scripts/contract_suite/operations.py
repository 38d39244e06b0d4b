"""Health, readiness, the document itself and metrics."""

from __future__ import annotations

import re

from typing import Any

from .common import (
    APPLE,
    Answer,
    CONSUMPTION,
    CUSTOMERS,
    LEDGER_ROUTES,
    METRICS_CONTENT_TYPE,
    OFFERS,
    WEBHOOKS,
)


class OperationsChecks:

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
