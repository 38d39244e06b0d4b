"""Exports: `GET /api/export` in both formats, resumed from a cursor, and its refusals."""

from __future__ import annotations

import csv
import io
import json

from typing import Any

from .common import Answer

EXPORT = "/api/export"


class ExportChecks:

    def export(self, query: dict, key: str | None = None) -> Answer:
        return self.c.send("GET", EXPORT, params=query, headers=self.bearer(key))

    def exports(self) -> None:
        """The ledger the other checks filled, exported: every line with a cursor, a resume from one of them giving
        exactly the lines after it, CSV with its header and the same rows; then each refusal."""
        print("exports")
        c, token = self.c, self.cred["token"]

        def lines_of(a: Answer) -> list[dict]:
            return [json.loads(line) for line in a.body.decode().splitlines()]

        def jsonl(a: Answer, b: Any) -> list[str]:
            problems = []
            if not a.body.endswith(b"\n"):
                problems.append("the last line does not end in a line feed")
            try:
                rows = lines_of(a)
            except ValueError as error:
                return [f"a line is not JSON: {error}"]
            if not rows:
                problems.append("no rows (the ledger checks recorded some)")
            if any(list(row)[:1] != ["cursor"] for row in rows):
                problems.append("a line does not start with its cursor")
            if a.header("content-disposition") != 'attachment; filename="transactions.jsonl"':
                problems.append(f"Content-Disposition {a.header('content-disposition')!r}")
            return problems

        whole = self.export({"token": token, "kind": "transactions"})
        c.check("export of transactions (JSON Lines)", whole, 200, content_type="application/x-ndjson", extra=jsonl)
        rows = lines_of(whole) if whole.status == 200 else []
        if len(rows) >= 2:
            after = self.export({"token": token, "kind": "TRANSACTIONS", "cursor": rows[0]["cursor"]})
            c.check("export resumed from the first line's cursor", after, 200,
                    extra=lambda a, b: [] if lines_of(a) == rows[1:] else ["not exactly the lines after the cursor"])
            limited = self.export({"token": token, "kind": "transactions", "limit": "1"})
            c.check("export with limit=1", limited, 200,
                    extra=lambda a, b: [] if lines_of(a) == rows[:1] else ["not the first line alone"])

        def csv_rows(a: Answer, b: Any) -> list[str]:
            table = list(csv.reader(io.StringIO(a.body.decode(), newline="")))
            if not table or table[0][:2] != ["cursor", "transaction_id"]:
                return [f"header {table[:1]!r}"]
            if [row[1] for row in table[1:]] != [row["transaction_id"] for row in rows]:
                return ["the CSV rows are not the JSON Lines' rows"]
            if not a.body.endswith(b"\r\n"):
                return ["the last line does not end in CR LF"]
            return []
        c.check("export of transactions (CSV)", self.export({"token": token, "kind": "transactions", "format": "csv"}),
                200, content_type="text/csv; charset=utf-8", extra=csv_rows)
        for kind in ("customers", "events", "usage"):
            c.check(f"export of {kind}", self.export({"token": token, "kind": kind}), 200,
                    content_type="application/x-ndjson")

        # Refusals, each before the first byte.
        for name, query in (
                ("no kind", {"token": token}),
                ("an unknown kind", {"token": token, "kind": "receipts"}),
                ("an unknown format", {"token": token, "kind": "usage", "format": "xml"}),
                ("a time that is not one", {"token": token, "kind": "usage", "from": "yesterday"}),
                ("from not before to", {"token": token, "kind": "usage", "from": "2026-11-02", "to": "2026-11-01"}),
                ("a cursor no export gave", {"token": token, "kind": "usage", "cursor": "bm90IG91cnM"}),
                ("a cursor of another kind", {"token": token, "kind": "usage",
                                              "cursor": rows[0]["cursor"] if rows else "x"}),
                ("limit 0", {"token": token, "kind": "usage", "limit": "0"}),
                ("the key in the URL", {"token": token, "kind": "usage", "apikey": self.cred["key"]})):
            c.check(f"export refused: {name}", self.export(query), 400)
        c.check("export refused: a parameter twice",
                c.send("GET", f"{EXPORT}?token={token}&kind=usage&kind=events", headers=self.bearer()), 400)
        c.check("export refused: no key", c.send("GET", EXPORT, params={"token": token, "kind": "usage"}), 401)
        if self.cred.get("other_account_token"):
            c.check("export refused: another account's app",
                    self.export({"token": self.cred["other_account_token"], "kind": "usage"}), 401)
        if self.need("quota_key", "quota_token"):
            c.check("export refused: a monthly quota of 0",
                    self.export({"token": self.cred["quota_token"], "kind": "usage"}, key=self.cred["quota_key"]), 429)
        c.check("export refused: POST", c.send("POST", EXPORT, headers=self.bearer()), 405,
                extra=lambda a, b: [] if a.header("allow") == "GET" else [f"Allow {a.header('allow')!r}"])
