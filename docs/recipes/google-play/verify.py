#!/usr/bin/env python3
"""Move a backend that asks Google Play itself to ReceiptVerify: one POST in place of Google's API, and delivery
decided by the ledger (docs/google-play.md, "Migrating from calling Google directly").

Before, the backend held a service account key and did, for each purchase its app reported:

    from googleapiclient.discovery import build
    from google.oauth2 import service_account
    credentials = service_account.Credentials.from_service_account_file(
        "play-key.json", scopes=["https://www.googleapis.com/auth/androidpublisher"])
    play = build("androidpublisher", "v3", credentials=credentials)
    purchase = play.purchases().products().get(packageName=package, productId=product, token=token).execute()
    if purchase["purchaseState"] == 0:
        deliver(user, product)          # again on every retry of the app's request, and to anyone holding the token
        play.purchases().products().acknowledge(packageName=package, productId=product, token=token).execute()

After, the key lives with the app on ReceiptVerify (`app update … --package-name … --google-service-account-file …`)
and the backend sends the purchase to /api: `deliver` is true once, for the user who holds the purchase, and the
server acknowledges (or consumes) it with Google after the delivery. Standard library only.

Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_GOOGLE (an app with the package and a Google key),
RV_GOOGLE_PACKAGE, RV_GOOGLE_PRODUCT, RV_GOOGLE_PURCHASE_TOKEN.
"""
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def post(path: str, fields: dict) -> dict:
    request = urllib.request.Request(
        os.environ["RV_URL"] + path, data=urllib.parse.urlencode(fields).encode(),
        headers={"Authorization": "Bearer " + os.environ["RV_KEY"]})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:  # 4xx and 5xx answers carry the same JSON envelope
        return json.load(error)


def verify(user: str) -> dict:
    return post("/api", {
        "token": os.environ["RV_TOKEN_GOOGLE"], "store": "google_play",
        "package_name": os.environ["RV_GOOGLE_PACKAGE"], "product_id": os.environ["RV_GOOGLE_PRODUCT"],
        "purchase_token": os.environ["RV_GOOGLE_PURCHASE_TOKEN"], "app_user_id": user,
    })


def main() -> int:
    failures = 0

    def expect(condition: bool, message: str) -> None:
        nonlocal failures
        if not condition:
            print("FAIL: " + message, file=sys.stderr)
            failures += 1

    answer = verify("user-1")
    print(f"status {answer.get('status')}, store {answer.get('store')}, environment {answer.get('environment')}")
    expect(answer.get("status") == 0, f"the purchase was not confirmed: {answer}")
    transactions = answer.get("transactions") or []
    for transaction in transactions:
        print(f"order {transaction['transaction_id']}: {transaction['state']}, deliver {transaction['deliver']}")
    expect(len(transactions) == 1 and transactions[0].get("deliver") is True, "the first answer does not deliver")
    expect(answer.get("google_play", {}).get("purchaseState") == 0, "Google's resource is not in the answer")

    # The app retries its request (a timeout, a restart): nothing is delivered twice.
    again = verify("user-1")
    expect([t.get("deliver") for t in again.get("transactions") or []] == [False], f"a retry delivered: {again}")

    # Another user presenting the same token (a shared or leaked token) is told, never delivered to.
    other = verify("user-2")
    decisions = other.get("transactions") or []
    print(f"another user: status {other.get('status')}, deliver {[t.get('deliver') for t in decisions]}")
    expect(all(t.get("deliver") is False for t in decisions), f"another user was delivered to: {other}")

    # The ledger keeps the purchase with its store, for support and for the backend's own records.
    rows = post("/api/transactions", {"token": os.environ["RV_TOKEN_GOOGLE"], "app_user_id": "user-1"})
    stores = [row.get("store") for row in rows.get("transactions") or []]
    print(f"ledger rows of user-1: {stores}")
    expect(stores == ["google_play"], f"the ledger rows are {rows}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
