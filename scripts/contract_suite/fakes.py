"""The outside parties, faked on loopback: Apple's verifyReceipt, Google Play, the App Store Server API."""

from __future__ import annotations

import base64
import copy
import hashlib
import http.server
import json
import re
import secrets
import threading
import time

from pathlib import Path
from typing import Any



# Apple's verifyReceipt, faked: the `password` a test sends chooses the answer.
class FakeApple:
    """A local stand-in for Apple's verifyReceipt (the server's --apple-production-url/--apple-sandbox-url point
    here): `/production` and `/sandbox` answer by the request's `password`."""

    def __init__(self, port: int, fixtures: Path | None, receipt_bundle: str):
        self.port = port
        self.answers = self._answers(fixtures, receipt_bundle)
        handler = self._handler()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @staticmethod
    def _load(fixtures: Path | None, name: str) -> dict | None:
        if fixtures is None:
            return None
        path = fixtures / name
        return json.loads(path.read_text()) if path.is_file() else None

    def _answers(self, fixtures: Path | None, bundle: str) -> dict[str, dict[str, Any]]:
        date = {"purchase_date": "2020-07-14 19:33:26 Etc/GMT", "purchase_date_ms": "1594755206000",
                "purchase_date_pst": "2020-07-14 12:33:26 America/Los_Angeles"}
        unified = self._load(fixtures, "apple-responses/revenuecat_status0_unified_sandbox_2020.json") or {
            "status": 0, "environment": "Sandbox",
            "receipt": {"receipt_type": "ProductionSandbox", "bundle_id": bundle, "in_app": [
                {"quantity": "1", "product_id": "p", "transaction_id": "1", "original_transaction_id": "1",
                 "is_trial_period": "false", **date}]},
            "latest_receipt_info": [], "latest_receipt": "MIIT", "pending_renewal_info": [
                {"auto_renew_product_id": "p", "original_transaction_id": "1", "product_id": "p",
                 "auto_renew_status": "1"}]}
        ios6 = self._load(fixtures, "apple-responses/mbaasy_status0_ios6_subscription_sandbox_2015.json") or {
            "receipt": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "latest_receipt_info": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "status": 0, "latest_receipt": "ewoJ"}
        expired = self._load(fixtures, "apple-responses/mbaasy_status21006_ios6_expired_subscription_2015.json") or {
            "receipt": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "latest_expired_receipt_info": {"bid": "com.mbaasy.ios.demo", "purchase_date_ms": "1447821281000"},
            "status": 21006}
        wrong_bundle = copy.deepcopy(unified)
        wrong_bundle["receipt"]["bundle_id"] = "com.example.not-this-app"
        # scenario → {environment → (HTTP status, body)}
        return {
            "contract-unified": {"production": (200, {"status": 21007}), "sandbox": (200, unified)},
            "contract-ios6": {"production": (200, ios6)},
            "contract-expired": {"production": (200, expired)},
            "contract-exception": {"production": (200, {"status": 21002,
                                                         "exception": "java.lang.IllegalArgumentException"})},
            "contract-retry": {"production": (200, {"status": 21005, "is-retryable": True})},
            "contract-wrong-bundle": {"production": (200, {"status": 21007}), "sandbox": (200, wrong_bundle)},
            "contract-odd-status": {"production": (200, {"status": 12345})},
            "contract-nonsense": {"production": (200, "<html>Service Unavailable</html>")},
            "contract-down": {"production": (503, "down")},
        }

    def _handler(self):
        answers = self.answers

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    request = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    request = {}
                environment = self.path.strip("/").split("/")[0]
                scenario = answers.get(request.get("password", ""), {})
                status, body = scenario.get(environment, (200, {"status": 21002}))
                data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json" if isinstance(body, dict) else "text/html")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


# Apple's App Store Server API, faked with Apple's own signed data (the fixtures' voicerec subscription, signed by
# Apple): the id in the path chooses the answer.
# The obfuscatedExternalAccountId of the fake's purchases: as Google advises apps, a one-way hash of the backend's user
# id ("contract-user"), never the id itself; only a request's app_user_id claims.
HASHED_USER = hashlib.sha256(b"receiptverify-test:contract-user").hexdigest()


class FakeGoogle:
    """A local stand-in for Google (the server's --google-play-api-url and --google-oauth-token-url point at
    http://127.0.0.1:PORT and PORT/token): the token endpoint checks each JWT bearer grant as Google does (RS256 by the
    service account's key when `cryptography` is installed, its email as issuer, the androidpublisher scope, Google's
    token URI as audience, at most an hour); the purchase resources answer only a token it granted.

    | purchase token | answer |
    |---|---|
    | PRODUCT | a paid ProductPurchase of coins_100, not acknowledged |
    | PENDING | a ProductPurchase of coins_100 awaiting payment |
    | SUBSCRIPTION | an active SubscriptionPurchaseV2 of premium_monthly |
    | any other | 404 |

    Acknowledgements and consumptions (POST …:acknowledge, …:consume) answer 204 for a known token and are
    recorded."""

    PACKAGE = "com.example.contract"
    PRODUCT = "contract-product-token"
    PENDING = "contract-pending-token"
    SUBSCRIPTION = "contract-subscription-token"

    def __init__(self, port: int, client_email: str, public_key_pem: bytes | None):
        self.port = port
        self.client_email = client_email
        self.public_key = None
        if public_key_pem:
            try:
                from cryptography.hazmat.primitives.serialization import load_pem_public_key
                self.public_key = load_pem_public_key(public_key_pem)
            except ImportError:
                pass
        self.issued: set[str] = set()
        self.bad_grants: list[str] = []
        # Google's OIDC signing key, which signs Pub/Sub's push tokens, published at /oauth2/v3/certs.
        self.signing_key = None
        try:
            from cryptography.hazmat.primitives.asymmetric import rsa
            self.signing_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        except ImportError:
            pass
        self.keys_fetched = 0
        self.acknowledged: list[str] = []
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def grant_problem(self, form: dict[str, list[str]]) -> str | None:
        """What Google would refuse in a grant, or None."""
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return f"grant_type {form.get('grant_type')}"
        parts = (form.get("assertion") or [""])[0].split(".")
        if len(parts) != 3:
            return "not a compact JWS"
        try:
            header = json.loads(base64.urlsafe_b64decode(parts[0] + "==="))
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "==="))
            signature = base64.urlsafe_b64decode(parts[2] + "===")
        except ValueError:
            return "not base64url JSON"
        if header.get("alg") != "RS256" or header.get("typ") != "JWT" or not header.get("kid"):
            return f"header {header}"
        if claims.get("iss") != self.client_email or claims.get("aud") != "https://oauth2.googleapis.com/token" \
                or claims.get("scope") != "https://www.googleapis.com/auth/androidpublisher":
            return f"claims {claims}"
        now = time.time()
        if not (abs(claims.get("iat", 0) - now) <= 60 and 0 < claims.get("exp", 0) - claims.get("iat", 0) <= 3600):
            return f"iat/exp {claims.get('iat')}/{claims.get('exp')}"
        if self.public_key is not None:
            from cryptography.exceptions import InvalidSignature
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import padding
            try:
                self.public_key.verify(signature, f"{parts[0]}.{parts[1]}".encode(), padding.PKCS1v15(),
                                       hashes.SHA256())
            except InvalidSignature:
                return "the signature does not verify with the service account's key"
        return None

    def jwks(self) -> dict:
        numbers = self.signing_key.public_key().public_numbers()

        def b64(number: int) -> str:
            return base64.urlsafe_b64encode(number.to_bytes((number.bit_length() + 7) // 8, "big")).rstrip(
                b"=").decode()
        return {"keys": [{"kty": "RSA", "alg": "RS256", "use": "sig", "kid": "contract-google-1",
                          "n": b64(numbers.n), "e": b64(numbers.e)}]}

    def push_token(self, audience: str, email: str, **changes: Any) -> str:
        """The OIDC token Pub/Sub sends with an authenticated push, signed by Google's key."""
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding
        now = int(time.time())
        claims = {"iss": "https://accounts.google.com", "aud": audience, "email": email, "email_verified": True,
                  "sub": "113774264463038321964", "azp": "113774264463038321964", "iat": now, "exp": now + 3600,
                  **changes}

        def b64(data: bytes) -> str:
            return base64.urlsafe_b64encode(data).rstrip(b"=").decode()
        signed = b64(json.dumps({"alg": "RS256", "kid": "contract-google-1", "typ": "JWT"}).encode()) + "." \
            + b64(json.dumps(claims).encode())
        signature = self.signing_key.sign(signed.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signed + "." + b64(signature)

    def resource(self, path: str) -> tuple[int, dict | None]:
        prefix = f"/androidpublisher/v3/applications/{self.PACKAGE}/purchases/"
        if not path.startswith(prefix):
            return 404, None
        rest = path[len(prefix):]
        product = {"kind": "androidpublisher#productPurchase", "purchaseTimeMillis": "1790000000123",
                   "consumptionState": 0, "developerPayload": "", "acknowledgementState": 0, "quantity": 1,
                   "regionCode": "FR", "obfuscatedExternalAccountId": HASHED_USER}
        if rest == f"products/coins_100/tokens/{self.PRODUCT}":
            return 200, {**product, "purchaseState": 0, "orderId": "GPA.3300-0000-0000-00001"}
        if rest == f"products/coins_100/tokens/{self.PENDING}":
            return 200, {**product, "purchaseState": 2, "orderId": "GPA.3300-0000-0000-00002"}
        if rest == f"subscriptionsv2/tokens/{self.SUBSCRIPTION}":
            return 200, {
                "kind": "androidpublisher#subscriptionPurchaseV2", "regionCode": "FR",
                "startTime": "2026-11-01T10:00:00.5Z", "subscriptionState": "SUBSCRIPTION_STATE_ACTIVE",
                "latestOrderId": "GPA.3300-0000-0000-00003",
                "acknowledgementState": "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED",
                "externalAccountIdentifiers": {"obfuscatedExternalAccountId": HASHED_USER},
                "lineItems": [{"productId": "premium_monthly", "expiryTime": "2099-01-01T00:00:00Z",
                               "latestSuccessfulOrderId": "GPA.3300-0000-0000-00003",
                               "autoRenewingPlan": {"autoRenewEnabled": True}}]}
        return 404, {"error": {"code": 404, "message": "The purchase token was not found."}}

    def _handler(self) -> type:
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                pass

            def reply(self, status: int, body: dict | None) -> None:
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def authorized(self) -> bool:
                token = (self.headers.get("Authorization") or "").removeprefix("Bearer ")
                with fake.lock:
                    return token in fake.issued

            def do_POST(self) -> None:  # noqa: N802: http.server's name
                sent = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path == "/token":
                    from urllib.parse import parse_qs
                    problem = fake.grant_problem(parse_qs(sent.decode()))
                    if problem:
                        with fake.lock:
                            fake.bad_grants.append(problem)
                        self.reply(400, {"error": "invalid_grant", "error_description": problem})
                        return
                    token = "ya29." + secrets.token_hex(16)
                    with fake.lock:
                        fake.issued.add(token)
                    self.reply(200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"})
                    return
                if not self.authorized():
                    self.reply(401, {"error": {"code": 401}})
                    return
                match = re.match(r"^(/androidpublisher/v3/applications/[^/]+/purchases/)(products|subscriptions)/"
                                 r"([^/]+)/tokens/([^/:]+):(acknowledge|consume)$", self.path)
                if match is None or (match.group(5) == "consume" and match.group(2) != "products"):
                    self.reply(404, None)
                    return
                prefix, kind, product, token, action = match.groups()
                lookup = f"{prefix}products/{product}/tokens/{token}" if kind == "products" \
                    else f"{prefix}subscriptionsv2/tokens/{token}"
                status, _ = fake.resource(lookup)
                if status != 200:
                    self.reply(404, {"error": {"code": 404}})
                    return
                with fake.lock:
                    fake.acknowledged.append(f"{kind}/{product}/{token}" + (":consume" if action == "consume" else ""))
                self.reply(204, None)

            def do_GET(self) -> None:  # noqa: N802: http.server's name
                if self.path == "/oauth2/v3/certs" and fake.signing_key is not None:
                    with fake.lock:
                        fake.keys_fetched += 1
                    self.reply(200, fake.jwks())
                    return
                if not self.authorized():
                    self.reply(401, {"error": {"code": 401}})
                    return
                self.reply(*fake.resource(self.path))

        return Handler


class FakeAppStoreServer:
    """A local stand-in for the App Store Server API (the server's --storekit-production-url and
    --storekit-sandbox-url point at http://127.0.0.1:PORT/production and /sandbox). The fixtures' subscription is a
    sandbox purchase: production does not know it (404, 4040010), the sandbox answers it, as Apple does. Every request's
    JWT is checked (ES256, the app's key id, issuer and bundle ID; its signature too when `cryptography` is installed).

    | id | answer |
    |---|---|
    | TRANSACTION, ORIGINAL | Get Transaction Info, Get Transaction History, Get All Subscription Statuses |
    | APP_TRANSACTION | Get Transaction History, Get All Subscription Statuses |
    | UNKNOWN | 404 with errorCode 4040010 in both environments (an id Apple does not know) |
    | REFUSED_CREDENTIALS | 401 (Apple refuses the app's key) |
    | any other | 503 (Apple down): enrichment `unavailable`, a look-up 500 `retryable` |

    Finish Transaction (POST …/transactions/{id}/finish) answers 200 with no body for TRANSACTION in the sandbox.
    """

    TRANSACTION = "2000000191896422"
    ORIGINAL = "2000000184445477"
    APP_TRANSACTION = "704528340000000001"
    UNKNOWN = "1999999999"
    REFUSED_CREDENTIALS = "1401000000"
    DOWN = "1503000000"
    INELIGIBLE = "1000000001"
    # A subscription whose statuses Apple cannot answer (503, as any id the fake does not know).
    UNREACHABLE = "1503000002"

    def __init__(self, port: int, fixtures: Path, issuer_id: str, key_id: str, public_key_pem: bytes | None,
                 other_bundle_ids: set[str]):
        self.port = port
        self.issuer_id = issuer_id
        self.key_id = key_id
        self.public_key = None
        if public_key_pem:
            try:
                from cryptography.hazmat.primitives.serialization import load_pem_public_key
                self.public_key = load_pem_public_key(public_key_pem)
            except ImportError:
                pass
        self.transaction = (fixtures / "jws/apple_transaction_voicerec_sub_2022.jws").read_text().strip()
        self.renewal = (fixtures / "jws/apple_renewal_info_voicerec_2022.jws").read_text().strip()
        payload = json.loads(base64.urlsafe_b64decode(self.transaction.split(".")[1] + "==="))
        self.bundle_id = payload["bundleId"]
        # The customer's own token (the purchase is claimed by it, as the transaction states it).
        self.app_account_token = payload.get("appAccountToken") or "5b9b0f0c-8c5e-4bd1-9d3a-2c1f00000001"
        # The bundle IDs a JWT may name: the fixtures' app, and the receipt's (an app whose customer is unknown here).
        self.bundle_ids = {self.bundle_id} | other_bundle_ids
        self.bad_tokens: list[str] = []
        self.received: list[str] = []
        self.lock = threading.Lock()
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def token_problem(self, authorization: str | None) -> str | None:
        """What is wrong with a request's `Authorization`, or None: Apple's rules for the JWT."""
        if not authorization or not authorization.startswith("Bearer "):
            return "no bearer token"
        parts = authorization[len("Bearer "):].split(".")
        if len(parts) != 3:
            return "not a compact JWS"
        try:
            header = json.loads(base64.urlsafe_b64decode(parts[0] + "==="))
            claims = json.loads(base64.urlsafe_b64decode(parts[1] + "==="))
            signature = base64.urlsafe_b64decode(parts[2] + "===")
        except ValueError:
            return "not base64url JSON"
        if header.get("alg") != "ES256" or header.get("kid") != self.key_id or header.get("typ") != "JWT":
            return f"header {header}"
        now = time.time()
        if claims.get("iss") != self.issuer_id or claims.get("aud") != "appstoreconnect-v1" \
                or claims.get("bid") not in self.bundle_ids:
            return f"claims {claims}"
        if not (claims.get("iat", 0) <= now + 60 < claims.get("exp", 0) + 60 <= claims.get("iat", 0) + 3660):
            return f"iat/exp {claims.get('iat')}/{claims.get('exp')} (Apple takes at most 60 minutes)"
        if self.public_key is not None:
            from cryptography.exceptions import InvalidSignature
            from cryptography.hazmat.primitives import hashes
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
            if len(signature) != 64:
                return f"signature of {len(signature)} bytes, not 64 (raw r ‖ s)"
            der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
            try:
                self.public_key.verify(der, f"{parts[0]}.{parts[1]}".encode(), ec.ECDSA(hashes.SHA256()))
            except InvalidSignature:
                return "the signature does not verify with the app's key"
        return None

    def answer(self, environment: str, path: str) -> tuple[int, dict | None]:
        match = re.match(r"^/inApps/v[12]/(transactions|history|subscriptions)/([^/?]+)$", path)
        if match is None:
            return 404, {"errorCode": 4040000, "errorMessage": "Not found."}
        endpoint, identifier = match.groups()
        # History and statuses take any id of the customer, an app transaction id included; Get Transaction Info a
        # transaction id.
        known = {self.TRANSACTION, self.ORIGINAL} | ({self.APP_TRANSACTION} if endpoint != "transactions" else set())
        if identifier == self.REFUSED_CREDENTIALS:
            return 401, None
        if endpoint == "subscriptions" and environment == "sandbox" and identifier in (self.DOWN, self.INELIGIBLE):
            # Subscriptions Apple knows whose extension fails (DOWN) or is refused (INELIGIBLE): their statuses, which
            # the service reads before it extends, hold nothing of the app's.
            return 200, {"environment": "Sandbox", "bundleId": self.bundle_id, "appAppleId": 1, "data": []}
        if identifier == self.UNKNOWN or (identifier in known and environment == "production"):
            return 404, {"errorCode": 4040010, "errorMessage": "Transaction id not found."}
        if identifier not in known:
            return 503, {"errorCode": 5000000, "errorMessage": "An unknown error occurred."}
        if endpoint == "transactions":
            return 200, {"signedTransactionInfo": self.transaction}
        if endpoint == "history":
            return 200, {"revision": "r1", "bundleId": self.bundle_id, "appAppleId": 1, "environment": "Sandbox",
                         "hasMore": False, "signedTransactions": [self.transaction]}
        item = {"originalTransactionId": self.ORIGINAL, "status": 2, "signedTransactionInfo": self.transaction,
                "signedRenewalInfo": self.renewal}
        return 200, {"environment": "Sandbox", "bundleId": self.bundle_id, "appAppleId": 1,
                     "data": [{"subscriptionGroupIdentifier": "21024612", "lastTransactions": [item]}]}

    def action(self, method: str, environment: str, path: str, sent: bytes) -> tuple[int, dict | None] | None:
        """Apple's actions on a customer, as Apple answers them; None for any other request. Known in the sandbox:
        ORIGINAL (its token set, extended); DOWN fails (503); any other id is ineligible for an extension (4030004)
        or unknown (4040005); no app transaction is known (4040019)."""
        with self.lock:
            self.received.append(f"{environment} {method} {path} {sent.decode(errors='replace')}")
        token = re.match(r"^/inApps/v1/transactions/([^/]+)/appAccountToken$", path)
        if method == "PUT" and token:
            body = json.loads(sent or b"{}")
            if not re.match(r"^[0-9a-f-]{36}$", str(body.get("appAccountToken", ""))):
                return 400, {"errorCode": 4000183, "errorMessage": "Invalid appAccountToken."}
            if token.group(1) == self.ORIGINAL and environment == "sandbox":
                return 200, None
            return 404, {"errorCode": 4040005, "errorMessage": "Original transaction id not found."}
        extend = re.match(r"^/inApps/v1/subscriptions/extend/([0-9]+)$", path)
        if method == "PUT" and extend:
            body = json.loads(sent or b"{}")
            if not (1 <= body.get("extendByDays", 0) <= 90 and body.get("extendReasonCode") in (0, 1, 2, 3)
                    and body.get("requestIdentifier")):
                return 400, {"errorCode": 4000009, "errorMessage": "Invalid extension."}
            if extend.group(1) == self.DOWN:
                return 503, {"errorCode": 5000000, "errorMessage": "An unknown error occurred."}
            if extend.group(1) == self.ORIGINAL and environment == "sandbox":
                effective = int(time.time() * 1000) + body["extendByDays"] * 86_400_000
                return 200, {"originalTransactionId": self.ORIGINAL, "webOrderLineItemId": "1", "success": True,
                             "effectiveDate": effective}
            return 403, {"errorCode": 4030004, "errorMessage": "Subscription extension ineligible."}
        if method == "POST" and path == "/inApps/v1/subscriptions/extend/mass":
            body = json.loads(sent or b"{}")
            return 200, {"requestIdentifier": body.get("requestIdentifier")}
        status = re.match(r"^/inApps/v1/subscriptions/extend/mass/([^/]+)/([^/]+)$", path)
        if method == "GET" and status:
            return 200, {"requestIdentifier": status.group(2), "complete": True,
                         "completeDate": int(time.time() * 1000), "succeededCount": 3, "failedCount": 0}
        if method == "GET" and path.startswith("/inApps/v1/transactions/appTransactions/"):
            return 404, {"errorCode": 4040019, "errorMessage": "App transaction does not exist."}
        return None

    def _handler(self):
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *arguments):
                pass

            def do_GET(self):
                self.respond("GET")

            def do_POST(self):
                self.respond("POST")

            def do_PUT(self):
                self.respond("PUT")

            def respond(self, method: str):
                environment, _, rest = self.path.lstrip("/").partition("/")
                path = "/" + rest.split("?")[0]
                problem = fake.token_problem(self.headers.get("Authorization"))
                with fake.lock:
                    fake.received.append(f"{environment} {method} {path}")
                    if problem:
                        fake.bad_tokens.append(f"{path}: {problem}")
                length = int(self.headers.get("Content-Length") or 0)
                sent = self.rfile.read(length) if length else b""
                action = fake.action(method, environment, path, sent) if not problem else None
                if problem:
                    status, body = 401, None
                elif action is not None:
                    status, body = action
                elif method == "POST":
                    finish = path == f"/inApps/v1/transactions/{fake.TRANSACTION}/finish" and environment == "sandbox"
                    status, body = (200, None) if finish else (404, {"errorCode": 4040010})
                else:
                    status, body = fake.answer(environment, path)
                data = json.dumps(body).encode() if body is not None else b""
                self.send_response(status)
                if body is not None:
                    self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler
