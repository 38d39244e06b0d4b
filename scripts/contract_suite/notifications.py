"""App Store Server Notifications and Google Play's Real-time Developer Notifications."""

from __future__ import annotations

import base64
import json
import secrets
import time

from typing import Any, Callable

from .common import (
    Answer,
    GOOGLE_NOTIFICATIONS,
    NOTIFICATIONS,
)
from .fakes import FakeGoogle


class NotificationChecks:

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
