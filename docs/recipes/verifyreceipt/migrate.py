#!/usr/bin/env python3
"""Move a backend that calls Apple's verifyReceipt through a client library to ReceiptVerify by changing one URL.

The backend here uses the PyPI library `itunes-iap` (pip install itunes-iap), unchanged: where it asked
https://buy.itunes.apple.com/verifyReceipt, it now asks https://KEY:@HOST/verifyReceipt/TOKEN. The API key travels as
HTTP Basic's user name (with an empty password: `requests` reads credentials from a URL only with the colon), so a
library that cannot set a header needs nothing more.
Apple's answer shape and status codes come back (docs/verifyreceipt-drop-in.md).

Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_DROPIN (an app whose shared secret is RV_SHARED_SECRET),
RV_RECEIPT (file of base64).
"""
import os
import sys
import urllib.parse

import itunesiap


def drop_in_url() -> str:
    base = urllib.parse.urlsplit(os.environ["RV_URL"])
    # The key as the URL's user, the password empty: requests sends `Authorization: Basic base64(KEY:)`.
    netloc = urllib.parse.quote(os.environ["RV_KEY"], safe="") + ":@" + base.netloc
    return urllib.parse.urlunsplit((base.scheme, netloc, "/verifyReceipt/" + os.environ["RV_TOKEN_DROPIN"], "", ""))


def main() -> int:
    with open(os.environ["RV_RECEIPT"]) as file:
        receipt = file.read().strip()
    url = drop_in_url()
    failures = 0

    # What the backend did before, word for word, with the new URL.
    request = itunesiap.Request(receipt, password=os.environ["RV_SHARED_SECRET"])
    response = request.verify_from(url, timeout=30)
    print(f"status {response.status}, environment {response['environment']}, bundle {response.receipt.bundle_id}")
    print(f"{len(response.receipt.in_app)} purchases in the receipt; latest: {response.latest_receipt_info[-1].product_id}")
    if response.status != 0 or not response.receipt.in_app:
        print("FAIL: a valid receipt was not answered as Apple would", file=sys.stderr)
        failures += 1
    if response["latest_receipt"] != receipt:
        print("FAIL: latest_receipt is not the receipt sent", file=sys.stderr)
        failures += 1

    # Apple's refusals arrive as the library knows them: a wrong shared secret is 21004.
    try:
        itunesiap.Request(receipt, password="not-the-shared-secret").verify_from(url, timeout=30)
        print("FAIL: a wrong shared secret was accepted", file=sys.stderr)
        failures += 1
    except itunesiap.exc.InvalidReceipt as error:
        print(f"wrong shared secret: status {error.status}")
        if error.status != 21004:
            failures += 1

    # Damaged data is 21002, as Apple said it.
    try:
        itunesiap.Request("bm90IGEgcmVjZWlwdA==").verify_from(url, timeout=30)
        failures += 1
    except itunesiap.exc.InvalidReceipt as error:
        print(f"damaged data: status {error.status}")
        if error.status != 21002:
            failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
