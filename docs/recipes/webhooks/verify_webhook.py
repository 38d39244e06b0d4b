#!/usr/bin/env python3
"""Check one ReceiptVerify webhook delivery: its ReceiptVerify-Signature over the raw body, at most 5 minutes old.

Python 3.6+, standard library only. Usage: verify_webhook.py SECRET HEADERS_FILE BODY_FILE, where SECRET is the
endpoint's secret as `webhooks add` printed it (`whsec_…`, all of it is the key), HEADERS_FILE holds the request's
headers as `Name: value` lines and BODY_FILE its body, byte for byte. Prints `valid EVENT_ID EVENT_TYPE` and exits
0, or prints why not and exits 1 (docs/webhooks.md, "Checking a delivery").
"""
import hashlib
import hmac
import json
import re
import sys
import time

TOLERANCE = 300  # seconds between the signature's timestamp and our clock, either way


def verify(secret: str, signature_header: str, body: bytes, now: float) -> None:
    """Raises ValueError unless `signature_header` (t=…,v1=…) signs `body` with `secret` within the tolerance."""
    timestamp, signatures = None, []
    for part in signature_header.split(","):
        key, _, value = part.strip().partition("=")
        if key == "t" and re.fullmatch(r"[0-9]{1,15}", value):
            timestamp = int(value)
        elif key == "v1":
            signatures.append(value)
    if timestamp is None or not signatures:
        raise ValueError("the signature header has no t= or no v1=")
    if abs(now - timestamp) > TOLERANCE:
        raise ValueError(f"the timestamp is {int(now - timestamp)} s from our clock (more than {TOLERANCE})")
    signed = str(timestamp).encode() + b"." + body  # the raw bytes: never a re-serialised JSON
    expected = hmac.new(secret.encode("utf-8"), signed, hashlib.sha256).hexdigest()
    if not any(hmac.compare_digest(expected.encode(), candidate.encode()) for candidate in signatures):  # constant time
        raise ValueError("the signature does not match (wrong secret, or the body was changed)")


def header(lines: str, name: str):
    for line in lines.splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip().lower() == name.lower():
            return value.strip()
    return None


def main() -> int:
    if len(sys.argv) != 4:
        print("usage: verify_webhook.py SECRET HEADERS_FILE BODY_FILE", file=sys.stderr)
        return 2
    secret, headers_file, body_file = sys.argv[1:]
    with open(headers_file, encoding="utf-8") as file:
        signature_header = header(file.read(), "ReceiptVerify-Signature")
    with open(body_file, "rb") as file:
        body = file.read()
    if signature_header is None:
        print("invalid: no ReceiptVerify-Signature header")
        return 1
    try:
        verify(secret, signature_header, body, time.time())
    except ValueError as error:
        print(f"invalid: {error}")
        return 1
    event = json.loads(body)  # only now is the body trusted; deduplicate by event["id"]
    print(f"valid {event['id']} {event['type']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
