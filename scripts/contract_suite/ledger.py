"""The ledger, the customer view, consumption reports and webhook management."""

from __future__ import annotations

import secrets

from typing import Any

from .common import (
    Answer,
    CONSUMPTION,
    CUSTOMERS,
    WEBHOOKS,
    WEBHOOK_ACTIONS,
)


class LedgerChecks:

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
