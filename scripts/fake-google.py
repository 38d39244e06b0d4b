#!/usr/bin/env python3
"""A stand-in for Google on loopback, for the Google Play recipe (scripts/recipes.sh): the OAuth 2.0 token endpoint
checks each JWT bearer grant as Google does (RS256 by the service account's key, its email as issuer, the
androidpublisher scope, Google's token URI as audience, at most an hour, issued now) and grants a token; the Google
Play Developer API answers one paid, unacknowledged one-time purchase to a granted token only, and takes its
acknowledgement or consumption.

Usage: fake-google.py PORT_FILE PUBLIC_KEY_PEM CLIENT_EMAIL PACKAGE PRODUCT PURCHASE_TOKEN
Writes the port it listens on to PORT_FILE; serves until killed. Needs Python's cryptography.
"""
import base64
import hashlib
import http.server
import json
import secrets
import sys
import time
from urllib.parse import parse_qs

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.serialization import load_pem_public_key

PORT_FILE, KEY_FILE, EMAIL, PACKAGE, PRODUCT, TOKEN = sys.argv[1:7]
PUBLIC_KEY = load_pem_public_key(open(KEY_FILE, "rb").read())
ISSUED: set[str] = set()
PURCHASE = {"kind": "androidpublisher#productPurchase", "purchaseTimeMillis": str(int(time.time() * 1000) - 60_000),
            "purchaseState": 0, "consumptionState": 0, "orderId": "GPA.3312-4000-5000-60001",
            "acknowledgementState": 0, "quantity": 1, "regionCode": "FR",
            # As Google advises apps: a one-way hash of the backend's user id, never the id itself.
            "obfuscatedExternalAccountId": hashlib.sha256(b"receiptverify-test:user-1").hexdigest()}


def b64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def grant_problem(form: dict) -> str | None:
    if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
        return "not a JWT bearer grant"
    parts = (form.get("assertion") or [""])[0].split(".")
    if len(parts) != 3:
        return "not a compact JWS"
    header, claims = json.loads(b64(parts[0])), json.loads(b64(parts[1]))
    if header.get("alg") != "RS256":
        return "not RS256"
    try:
        PUBLIC_KEY.verify(b64(parts[2]), f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return "bad signature"
    if claims.get("iss") != EMAIL or claims.get("scope") != "https://www.googleapis.com/auth/androidpublisher" \
            or claims.get("aud") != "https://oauth2.googleapis.com/token":
        return f"claims {claims}"
    if abs(claims.get("iat", 0) - time.time()) > 60 or not 0 < claims.get("exp", 0) - claims.get("iat", 0) <= 3600:
        return "iat/exp"
    return None


class Handler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_) -> None:
        pass

    def reply(self, status: int, body: dict | None = None) -> None:
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def granted(self) -> bool:
        return (self.headers.get("Authorization") or "").removeprefix("Bearer ") in ISSUED

    def do_POST(self) -> None:  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/token":
            problem = grant_problem(parse_qs(body.decode()))
            if problem:
                print(f"refused grant: {problem}", file=sys.stderr, flush=True)
                return self.reply(400, {"error": "invalid_grant", "error_description": problem})
            token = "ya29." + secrets.token_hex(16)
            ISSUED.add(token)
            return self.reply(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
        if not self.granted():
            return self.reply(401, {"error": {"code": 401}})
        base = f"/androidpublisher/v3/applications/{PACKAGE}/purchases/products/{PRODUCT}/tokens/{TOKEN}"
        if self.path in (base + ":acknowledge", base + ":consume"):
            return self.reply(204)
        self.reply(404, {"error": {"code": 404}})

    def do_GET(self) -> None:  # noqa: N802
        if not self.granted():
            return self.reply(401, {"error": {"code": 401}})
        if self.path == f"/androidpublisher/v3/applications/{PACKAGE}/purchases/products/{PRODUCT}/tokens/{TOKEN}":
            return self.reply(200, PURCHASE)
        self.reply(404, {"error": {"code": 404, "message": "The purchase token was not found."}})


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
with open(PORT_FILE, "w") as file:
    file.write(str(server.server_address[1]))
server.serve_forever()
