"""What every surface uses: the credentials, the requests, the coverage."""

from __future__ import annotations

from pathlib import Path

from .checker import Contract
import base64

from .common import (
    Answer,
    OTHER_METHODS,
)


class RunBase:
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
                reason = next((c.fields_not_exercised[key] for key in (f"{schema}.{name}", schema, name)
                               if key in c.fields_not_exercised), None)
                if reason is not None:
                    print(f"  not exercised: field {schema}.{name} ({reason})")
                else:
                    c.fail("coverage", f"documented field {schema}.{name} never occurred in an answer")
        for skipped in sorted(c.skipped_ops):
            print(f"  skipped (--allow-missing-ops-routes): {skipped}: the server answered 404")
