#!/usr/bin/env python3
"""Verify a receipt with ReceiptVerify from an app backend: /api, then /apiencrypted for a CBC and a GCM app.

Needs Python 3.8+ and `cryptography` (pip install cryptography). Inputs, from the environment: RV_URL, RV_KEY,
RV_TOKEN_CBC, RV_TOKEN_GCM, RV_RESULT_KEY_CBC, RV_RESULT_KEY_GCM (base64), RV_RECEIPT (file of base64).
"""
import base64
import json
import os
import secrets
import sys
import urllib.error
import urllib.parse
import urllib.request

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.padding import PKCS7


def open_gcm(body: str, key: bytes) -> dict:
    data = base64.b64decode(body)  # nonce[16] ‖ ciphertext ‖ tag[16]
    return json.loads(AESGCM(key).decrypt(data[:16], data[16:], None))  # raises InvalidTag if modified


def open_cbc(body: str, key: bytes) -> dict:
    data = base64.b64decode(body)  # IV[16] ‖ ciphertext
    decryptor = Cipher(algorithms.AES(key), modes.CBC(data[:16])).decryptor()
    padded = decryptor.update(data[16:]) + decryptor.finalize()
    unpadder = PKCS7(128).unpadder()
    return json.loads(unpadder.update(padded) + unpadder.finalize())


def post(path: str, token: str, receipt: str, nonce: str):
    form = urllib.parse.urlencode(
        {"apikey": os.environ["RV_KEY"], "token": token, "receipt": receipt, "nonce": nonce}).encode()
    request = urllib.request.Request(os.environ["RV_URL"].rstrip("/") + path, data=form)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.headers.get_content_type(), response.read().decode()
    except urllib.error.HTTPError as error:  # 4xx/5xx: the body is plain JSON
        return error.headers.get_content_type(), error.read().decode()


def verify(label: str, path: str, token: str, receipt: str, open_result=None, key: bytes = b"") -> bool:
    nonce = secrets.token_hex(16)
    try:
        content_type, body = post(path, token, receipt, nonce)
        # A successful /apiencrypted answer is text/plain base64; every other answer is plain JSON.
        answer = open_result(body, key) if open_result and content_type == "text/plain" else json.loads(body)
    except Exception as error:  # network, decryption or JSON failure
        print(f"FAIL {label}: {error!r}")
        return False
    ok = answer.get("status") == 0 and answer.get("nonce") == nonce
    print(f"{'ok  ' if ok else 'FAIL'} {label}: status {answer.get('status')}, "
          f"nonce {'echoed' if answer.get('nonce') == nonce else 'MISMATCH'}")
    return ok


def main() -> int:
    with open(os.environ["RV_RECEIPT"]) as file:
        receipt = file.read().strip()
    results = [
        verify("/api", "/api", os.environ["RV_TOKEN_CBC"], receipt),
        verify("/apiencrypted aes-256-cbc", "/apiencrypted", os.environ["RV_TOKEN_CBC"], receipt,
               open_cbc, base64.b64decode(os.environ["RV_RESULT_KEY_CBC"])),
        verify("/apiencrypted aes-256-gcm", "/apiencrypted", os.environ["RV_TOKEN_GCM"], receipt,
               open_gcm, base64.b64decode(os.environ["RV_RESULT_KEY_GCM"])),
    ]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
