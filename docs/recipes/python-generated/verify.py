#!/usr/bin/env python3
"""A backend's ReceiptVerify client generated from the OpenAPI document, not written by hand.

Generate the client from the document your server serves (openapi-python-client, from PyPI), then use it:

    python3 -m pip install openapi-python-client cryptography
    curl -s https://receiptverify.example.com/openapi.json > openapi.json
    openapi-python-client generate --path openapi.json --output-path receiptverify-client \
        --config openapi-python-client.yaml
    PYTHONPATH=receiptverify-client python3 verify.py

The configuration beside this file mends the one flaw of openapi-python-client 0.29 this document meets (a missing
import in routes that take a form or JSON). Every route is a module (`api.verification.verify`, `api.customers.look_up_customer`, …) and every answer a model
(`VerifyAnswer`, `ErrorAnswer`, `CustomerAnswer`, …). This recipe uses nothing else: it verifies a receipt on
`/api` for a user, opens an `/apiencrypted` answer with the app's result key, looks the user up on `/api/customers`
and confirms the delivery on `/api/transactions/delivered` (an app with `--delivery confirm`), then checks that the
next answer no longer says to deliver. Each answer's fields are compared with the model's: a field the server sends
that the document does not have (or the reverse) fails the recipe, so it fails when the two drift apart.

Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CONFIRM (an app with `--delivery confirm` and
`--cipher aes-256-cbc`), RV_RESULT_KEY_CONFIRM (base64 of its result key), RV_RECEIPT (a file with a receipt's base64).
"""
import base64
import json
import os
import sys
import uuid

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from receipt_verify_client import AuthenticatedClient
from receipt_verify_client.api.customers import look_up_customer
from receipt_verify_client.api.ledger import confirm_deliveries
from receipt_verify_client.api.verification import verify, verify_encrypted
from receipt_verify_client.models import (CustomerAnswer, CustomersRequestForm, DeliveredRequestForm,
                                          DeliveriesConfirmed, VerifyAnswer, VerifyRequestForm)
from receipt_verify_client.types import Unset

failures = []


def check(label: str, ok: bool, detail: str = "") -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {label}{': ' + detail if detail else ''}")
    if not ok:
        failures.append(label)


def drift(sent, model_dict, where="answer") -> list[str]:
    """The fields the server sent that the generated model did not keep, and the reverse: the document and the server
    disagree where these differ (the values are the model's own spellings of the same data)."""
    problems = []
    if isinstance(sent, dict) and isinstance(model_dict, dict):
        for key in sorted(set(sent) ^ set(model_dict)):
            problems.append(f"{where}.{key}: {'sent but not in the document' if key in sent else 'not sent'}")
        for key in set(sent) & set(model_dict):
            problems += drift(sent[key], model_dict[key], f"{where}.{key}")
    elif isinstance(sent, list) and isinstance(model_dict, list):
        for index, (a, b) in enumerate(zip(sent, model_dict)):
            problems += drift(a, b, f"{where}[{index}]")
    return problems


def typed(label: str, response, model):
    """The answer as its model, after checking the model kept every field the server sent."""
    parsed = response.parsed
    if not isinstance(parsed, model):
        check(label, False, f"HTTP {response.status_code}, {response.content[:200]!r}")
        return None
    problems = drift(json.loads(response.content), parsed.to_dict())
    check(f"{label}: the answer's fields are the document's", not problems, "; ".join(problems[:5]))
    return parsed


def open_sealed(text: str, key: bytes) -> bytes:
    """An `/apiencrypted` answer of an aes-256-cbc app: base64 of IV[16] ‖ AES-256-CBC(json, PKCS#7)."""
    data = base64.b64decode(text)
    decryptor = Cipher(algorithms.AES(key), modes.CBC(data[:16])).decryptor()
    padded = decryptor.update(data[16:]) + decryptor.finalize()
    unpadder = padding.PKCS7(128).unpadder()
    return unpadder.update(padded) + unpadder.finalize()


client = AuthenticatedClient(base_url=os.environ["RV_URL"], token=os.environ["RV_KEY"], raise_on_unexpected_status=True)
token = os.environ["RV_TOKEN_CONFIRM"]
receipt = open(os.environ["RV_RECEIPT"]).read().strip()
user = f"generated-{uuid.uuid4()}"

# 1. /api: the receipt for a user; every transaction is new and to be delivered (the app confirms deliveries).
nonce = str(uuid.uuid4())
answer = typed("/api", verify.sync_detailed(client=client, body=VerifyRequestForm(
    token=token, receipt=receipt, app_user_id=user, nonce=nonce)), VerifyAnswer)
to_deliver = []
if answer is not None:
    transactions = [] if isinstance(answer.transactions, Unset) else answer.transactions
    to_deliver = [entry.transaction_id for entry in transactions if entry.deliver]
    check("/api: valid, for this request", answer.status == 0 and answer.nonce == nonce,
          f"status {answer.status}, {len(transactions)} transactions, {len(to_deliver)} to deliver")
    check("/api: something to deliver", bool(to_deliver))

# 2. /apiencrypted: the answer sealed with the app's result key; its plaintext is a VerifyAnswer too.
response = verify_encrypted.sync_detailed(client=client, body=VerifyRequestForm(
    token=token, receipt=receipt, app_user_id=user, nonce=nonce))
if isinstance(response.parsed, str) and response.headers.get("content-type", "").startswith("text/plain"):
    plaintext = open_sealed(response.parsed, base64.b64decode(os.environ["RV_RESULT_KEY_CONFIRM"]))
    sealed = VerifyAnswer.from_dict(json.loads(plaintext))
    problems = drift(json.loads(plaintext), sealed.to_dict())
    check("/apiencrypted: opened, valid, our nonce inside", sealed.status == 0 and sealed.nonce == nonce)
    check("/apiencrypted: the plaintext's fields are the document's", not problems, "; ".join(problems[:5]))
else:
    check("/apiencrypted: a sealed answer", False, f"HTTP {response.status_code}, {response.content[:200]!r}")

# 3. /api/customers: what the user may use now.
customer = typed("/api/customers", look_up_customer.sync_detailed(
    client=client, body=CustomersRequestForm(token=token, app_user_id=user)), CustomerAnswer)
if customer is not None:
    check("/api/customers: the user's view", customer.customer.app_user_id == user,
          f"{len(customer.customer.entitlements)} entitlements, {len(customer.customer.purchases)} purchases, "
          f"{len(customer.customer.subscriptions)} subscriptions")

# 4. /api/transactions/delivered: the backend delivered them; the next answer says so.
if to_deliver:
    confirmed = typed("/api/transactions/delivered", confirm_deliveries.sync_detailed(
        client=client, body=DeliveredRequestForm(token=token, transaction_ids=",".join(to_deliver))),
        DeliveriesConfirmed)
    if confirmed is not None:
        check("/api/transactions/delivered: every one confirmed",
              sorted(entry.transaction_id for entry in confirmed.transactions) == sorted(to_deliver)
              and not confirmed.unknown_transaction_ids, f"{len(confirmed.transactions)} confirmed")
    again = typed("/api (after the confirmation)", verify.sync_detailed(client=client, body=VerifyRequestForm(
        token=token, receipt=receipt, app_user_id=user)), VerifyAnswer)
    if again is not None and not isinstance(again.transactions, Unset):
        check("/api: nothing to deliver again, each delivered_at set",
              all(not entry.deliver and not isinstance(entry.delivered_at, Unset)
                  for entry in again.transactions if entry.transaction_id in to_deliver))

sys.exit(1 if failures else 0)
