#!/usr/bin/env python3
"""Check one ReceiptVerify webhook delivery with the Standard Webhooks library, not a hand-written verifier.

Needs `pip install standardwebhooks` (PyPI). Usage: standard_webhooks.py SECRET HEADERS_FILE BODY_FILE, where SECRET
is the endpoint's secret as `webhooks add` printed it (`whsec_…`), HEADERS_FILE holds the request's headers as
`Name: value` lines and BODY_FILE its body, byte for byte. Prints `valid EVENT_ID EVENT_TYPE` and exits 0, or prints
why not and exits 1. In a web app, pass the raw body and the request's headers to `Webhook(secret).verify` the same way
(Flask: `request.get_data()`, `request.headers`).
"""
import sys

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


def headers_of(lines: str) -> dict:
    headers = {}
    for line in lines.splitlines():
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return headers


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: standard_webhooks.py SECRET HEADERS_FILE BODY_FILE", file=sys.stderr)
        return 2
    secret, headers_file, body_file = sys.argv[1:]
    with open(headers_file, encoding="utf-8") as file:
        headers = headers_of(file.read())
    with open(body_file, "rb") as file:
        body = file.read()
    try:
        # webhook-id, webhook-timestamp (at most 5 minutes from our clock) and webhook-signature over the raw body.
        event = Webhook(secret).verify(body, headers)
    except WebhookVerificationError as error:
        print(f"invalid: {error}")
        return 1
    print(f"valid {event['id']} {event['type']}")  # deduplicate by event["id"] (also the webhook-id header)
    return 0


if __name__ == "__main__":
    sys.exit(main())
