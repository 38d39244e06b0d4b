#!/usr/bin/env python3
"""Checks POST /api/offers/signature against Apple's own App Store Server Library (PyPI app-store-server-library).

For the same inputs, each kind the server signs with the app's key is compared with what Apple's library makes with
the same key (docs/app-store-server-api.md, "Offers"):
- promotional_offer: the server's signature (DER ECDSA, base64) must verify with the key's public half over the
  message Apple's PromotionalOfferSignatureCreator builds from the answer's nonce and timestamp;
- promotional_offer_v2 and introductory_offer_eligibility: the server's JWS header and claims must equal those of
  Apple's PromotionalOfferV2SignatureCreator / IntroductoryOfferEligibilitySignatureCreator (but `iat`, within a
  minute, and `nonce`, a fresh UUID each), and the JWS must verify with the key's public half.

Usage: offers-check.py --url BASE --key APIKEY --token TOKEN --bundle-id ID --issuer-id UUID --key-id KID
       --private-key FILE.p8 [--library DIR]   (DIR: where the library was pip-installed with --target)
"""
import argparse
import base64
import json
import sys
import time
import urllib.parse
import urllib.request
import uuid


def main():
    parser = argparse.ArgumentParser()
    for name in ("url", "key", "token", "bundle-id", "issuer-id", "key-id", "private-key"):
        parser.add_argument("--" + name, required=True)
    parser.add_argument("--library")
    args = parser.parse_args()
    if args.library:
        sys.path.insert(0, args.library)
    import jwt
    from appstoreserverlibrary.jws_signature_creator import (
        IntroductoryOfferEligibilitySignatureCreator, PromotionalOfferV2SignatureCreator)
    from appstoreserverlibrary.promotional_offer import PromotionalOfferSignatureCreator
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    pem = open(args.private_key, "rb").read()
    public = serialization.load_pem_private_key(pem, password=None).public_key()
    failures = []

    def check(condition, what):
        print(("ok   " if condition else "FAIL ") + what)
        if not condition:
            failures.append(what)

    def sign(fields):
        body = urllib.parse.urlencode({"apikey": args.key, "token": args.token, **fields}).encode()
        request = urllib.request.Request(
            args.url + "/api/offers/signature", data=body,
            headers={"Content-Type": "application/x-www-form-urlencoded"})
        with urllib.request.urlopen(request, timeout=20) as answer:
            return json.load(answer)

    def parts(token):
        header, claims, _ = token.split(".")
        pad = lambda text: text + "=" * (-len(text) % 4)
        return (json.loads(base64.urlsafe_b64decode(pad(header))), json.loads(base64.urlsafe_b64decode(pad(claims))))

    # The original StoreKit API's promotional offer, with a username in mixed case (Apple lower-cases it).
    for username in ("User-7F", ""):
        fields = {"kind": "promotional_offer", "product_id": "com.example.monthly", "offer_id": "WINBACK10"}
        if username:
            fields["application_username"] = username
        ours = sign(fields)
        check(ours.get("status") == 0 and ours.get("key_id") == args.key_id,
              f"promotional_offer ({username or 'no username'}): status 0 and the key id")
        creator = PromotionalOfferSignatureCreator(pem, args.key_id, args.bundle_id)
        built = {}

        class Recorder:
            """Apple's signing key, recording the message Apple's library signs."""
            def __init__(self, key):
                self.key = key

            def sign(self, data, algorithm):
                built["message"] = data
                return self.key.sign(data, algorithm)

        creator._signing_key = Recorder(creator._signing_key)
        apples = creator.create_signature(
            "com.example.monthly", "WINBACK10", username, uuid.UUID(ours["nonce"]), ours["timestamp"])
        for label, signature in (("ours", ours["signature"]), ("Apple's", apples)):
            try:
                public.verify(base64.b64decode(signature), built["message"], ec.ECDSA(hashes.SHA256()))
                verified = True
            except (InvalidSignature, ValueError):
                verified = False
            check(verified, f"promotional_offer ({username or 'no username'}): {label} signature verifies over the "
                  "message Apple's library builds")

    # StoreKit 2: the JWS kinds, against Apple's creators.
    cases = [
        ("promotional_offer_v2 with a transaction",
         {"kind": "promotional_offer_v2", "product_id": "com.example.monthly", "offer_id": "WINBACK10",
          "transaction_id": "2000000001"},
         lambda: PromotionalOfferV2SignatureCreator(pem, args.key_id, args.issuer_id, args.bundle_id)
         .create_signature("com.example.monthly", "WINBACK10", "2000000001"), "promotional-offer"),
        ("promotional_offer_v2 without",
         {"kind": "promotional_offer_v2", "product_id": "com.example.monthly", "offer_id": "WINBACK10"},
         lambda: PromotionalOfferV2SignatureCreator(pem, args.key_id, args.issuer_id, args.bundle_id)
         .create_signature("com.example.monthly", "WINBACK10", None), "promotional-offer"),
        ("introductory_offer_eligibility",
         {"kind": "introductory_offer_eligibility", "product_id": "com.example.monthly",
          "allow_introductory_offer": "false", "transaction_id": "2000000001"},
         lambda: IntroductoryOfferEligibilitySignatureCreator(pem, args.key_id, args.issuer_id, args.bundle_id)
         .create_signature("com.example.monthly", False, "2000000001"), "introductory-offer-eligibility"),
    ]
    for label, fields, apple, audience in cases:
        ours = sign(fields)["signature"]
        apples = apple()
        (our_header, our_claims), (apple_header, apple_claims) = parts(ours), parts(apples)
        check(our_header == apple_header, f"{label}: the header equals Apple's ({our_header} vs {apple_header})")
        strip = lambda claims: {k: v for k, v in claims.items() if k not in ("iat", "nonce")}
        check(strip(our_claims) == strip(apple_claims),
              f"{label}: the claims equal Apple's but iat and nonce ({strip(our_claims)} vs {strip(apple_claims)})")
        check(abs(our_claims.get("iat", 0) - int(time.time())) <= 60, f"{label}: iat is now")
        try:
            uuid.UUID(our_claims.get("nonce", ""))
            nonce_ok = True
        except ValueError:
            nonce_ok = False
        check(nonce_ok, f"{label}: nonce is a UUID")
        try:
            jwt.decode(ours, public, algorithms=["ES256"], audience=audience, options={"verify_iat": False})
            verified = True
        except jwt.PyJWTError as error:
            print(f"     {error}")
            verified = False
        check(verified, f"{label}: the JWS verifies with the key's public half")

    if failures:
        print(f"offers-check: {len(failures)} FAILED")
        sys.exit(1)
    print("offers-check: passed")


if __name__ == "__main__":
    main()
