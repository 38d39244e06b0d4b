#!/usr/bin/env python3
"""Browser test of the account screen: `receiptverify serve` with OpenID Connect sign-in against `fake-openid`,
driven through headless Chromium with Selenium.

Run by scripts/browser.sh, which installs Chromium, its driver and Selenium and finds the fixture receipt:

    python3 Tests/Browser/account_screen.py --bin-dir .build/debug --screenshots DIR \
        --receipt ../shared/fixtures/receipts/revenuecat_sandbox_ios_2020.b64 \
        --bundle-id com.revenuecat.sampleapp --environment sandbox

Starts both servers on loopback ports with a throwaway SQLite database, signs a new user in, creates an API key and
an app through the pages, verifies the fixture receipt through POST /api with them, checks usage, transactions,
revocation and sign-out. A screenshot is saved after each browser step (NN-name.png). On failure: failure.png, the
start of the page source and the tails of both server logs; exit 1. Child processes are always stopped.
"""

import argparse
import base64
import ctypes
import hashlib
import hmac
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request

from selenium import webdriver
from selenium.common.exceptions import (
    NoSuchElementException, StaleElementReferenceException, TimeoutException, WebDriverException)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as EC
from selenium.webdriver.support.ui import Select, WebDriverWait

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
CLIENT_ID = "receiptverify-test"
CLIENT_SECRET = "test-secret"
WAIT = 15  # seconds an explicit wait may take
START_TIMEOUT = 30  # seconds a server may take to come up


class Failure(Exception):
    """A failed check: the message says what was expected and what was found."""


def check(condition, message):
    if not condition:
        raise Failure(message)


# --- child processes ----------------------------------------------------------------------------------------------

def _die_with_parent():
    """In the child, before exec: get SIGKILL if this script dies without cleaning up (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


class Child:
    """A server process with its stdout and stderr in files."""

    def __init__(self, name, argv, env, workdir):
        self.name = name
        self.argv = argv
        self.stdout_path = os.path.join(workdir, f"{name}.stdout.log")
        self.stderr_path = os.path.join(workdir, f"{name}.stderr.log")
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                                         preexec_fn=_die_with_parent)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def tail(self, lines=40):
        parts = []
        for label, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            try:
                with open(path, "rb") as f:
                    text = f.read().decode("utf-8", "replace")
            except OSError as e:
                text = f"(unreadable: {e})"
            kept = text.splitlines()[-lines:]
            parts.append(f"--- {self.name} {label} (last {len(kept)} lines) ---\n" + "\n".join(kept))
        status = "running" if self.alive() else f"exited with {self.proc.returncode}"
        return f"=== {self.name} ({status}): {' '.join(self.argv)}\n" + "\n".join(parts)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env():
    """This environment without RECEIPTVERIFY_* settings: the flags given are the whole configuration."""
    return {k: v for k, v in os.environ.items() if not k.startswith("RECEIPTVERIFY_")}


def start_fake_openid(bin_dir, workdir, children):
    argv = [os.path.join(bin_dir, "fake-openid"), "--port", "0", "--client-id", CLIENT_ID,
            "--client-secret", CLIENT_SECRET]
    # stdbuf: the first line must reach the file even if the program buffers stdout (Swift's print does, to a file).
    if shutil.which("stdbuf"):
        argv = ["stdbuf", "-oL"] + argv
    child = Child("fake-openid", argv, clean_env(), workdir)
    children.append(child)
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        with open(child.stdout_path, "rb") as f:
            first = f.readline().decode("utf-8", "replace")
        if first.endswith("\n"):
            match = re.fullmatch(r"issuer (http://127\.0\.0\.1:\d+)/?\s*", first)
            check(match, f"fake-openid's first stdout line is {first.strip()!r}, "
                         "expected 'issuer http://127.0.0.1:PORT'")
            return match.group(1)
        check(child.alive(), f"fake-openid exited with {child.proc.returncode} before printing its issuer")
        time.sleep(0.05)
    raise Failure(f"fake-openid printed no 'issuer …' line within {START_TIMEOUT} s")


def start_receiptverify(bin_dir, workdir, issuer, children):
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    argv = [os.path.join(bin_dir, "receiptverify"), "serve", "--hostname", "127.0.0.1", "--port", str(port),
            "--database", os.path.join(workdir, "rv.sqlite"), "--master-key-file", os.path.join(workdir, "rv.key"),
            "--public-url", base, "--oidc-issuer", issuer, "--oidc-client-id", CLIENT_ID,
            "--auth-cache-ttl", "0", "--usage-flush-interval-ms", "100", "--log-level", "warning",
            # The webhook receiver below listens on loopback over plain http: the self-hosted setting.
            "--webhook-private-urls", "on", "--webhook-retry-seconds", "1"]
    env = clean_env()
    env["RECEIPTVERIFY_OIDC_CLIENT_SECRET"] = CLIENT_SECRET
    child = Child("receiptverify", argv, env, workdir)
    children.append(child)
    deadline = time.monotonic() + START_TIMEOUT
    last = None
    while time.monotonic() < deadline:
        check(child.alive(), f"receiptverify serve exited with {child.proc.returncode} before answering /healthz")
        try:
            with urllib.request.urlopen(base + "/healthz", timeout=2) as r:
                if r.status == 200:
                    return base
                last = f"HTTP {r.status}"
        except urllib.error.HTTPError as e:
            last = f"HTTP {e.code}"
        except (urllib.error.URLError, OSError) as e:
            last = str(e)
        time.sleep(0.1)
    raise Failure(f"GET {base}/healthz did not answer 200 within {START_TIMEOUT} s (last: {last})")


# --- a customer's webhook receiver, on loopback ----------------------------------------------------------------------

class Receiver:
    """Records each POST (headers and raw body) and answers 200."""

    def __init__(self):
        self.deliveries = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                receiver.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        self.server.shutdown()


def standard_webhooks_valid(secret, headers, body):
    """The check a Standard Webhooks library makes, written out: HMAC-SHA256 of id.timestamp.body under the secret's
    base64 key, any of the space-separated v1 signatures, a timestamp within five minutes."""
    key = base64.b64decode(secret[len("whsec_"):] + "==")
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    fresh = abs(time.time() - int(headers["webhook-timestamp"])) <= 300
    return fresh and any(hmac.compare_digest(expected, s) for s in headers["webhook-signature"].split(" "))


# --- the API, from Python -----------------------------------------------------------------------------------------

def post_api(base, key, token, receipt):
    body = json.dumps({"apikey": key, "token": token, "receipt": receipt}).encode()
    request = urllib.request.Request(base + "/api", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            code, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        code, raw = e.code, e.read()
    try:
        answer = json.loads(raw)
    except ValueError:
        raise Failure(f"POST /api answered HTTP {code} with a body that is not JSON: {raw[:500]!r}")
    check(isinstance(answer, dict) and "status" in answer,
          f"POST /api answered HTTP {code} without a 'status': {raw[:500]!r}")
    return code, answer


# --- the browser --------------------------------------------------------------------------------------------------

def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)


def text_of(element):
    """The element's text as in the HTML (textContent, whitespace collapsed), whatever CSS does to its case."""
    return " ".join((element.get_attribute("textContent") or "").split())


def row_text(row):
    """A table row's cells' texts, separated by ' | ' (textContent alone runs the cells together)."""
    cells = row.find_elements(By.CSS_SELECTOR, "td, th")
    return " | ".join(text_of(c) for c in cells) if cells else text_of(row)


class Browser:
    def __init__(self, driver, base, screenshots):
        self.d = driver
        self.base = base
        self.screenshots = screenshots

    def open(self, path):
        self.d.get(self.base + path)

    def path(self):
        return urllib.parse.urlsplit(self.d.current_url).path

    def wait(self, condition, what, timeout=WAIT):
        """Waits until condition(driver) is truthy and returns it; fails saying what was awaited and where we are."""
        try:
            return WebDriverWait(self.d, timeout, ignored_exceptions=(StaleElementReferenceException,)).until(
                condition)
        except TimeoutException:
            raise Failure(f"waited {timeout} s for {what}; the browser is at {self.d.current_url} "
                          f"(title {self.d.title!r})") from None

    def find(self, css, what=None):
        return self.wait(EC.presence_of_element_located((By.CSS_SELECTOR, css)), what or f"an element {css}")

    def visible(self, css, what=None):
        return self.wait(EC.visibility_of_element_located((By.CSS_SELECTOR, css)), what or f"a visible {css}")

    def clickable(self, css, what=None):
        return self.wait(EC.element_to_be_clickable((By.CSS_SELECTOR, css)), what or f"a clickable {css}")

    def absent(self, css):
        return len(self.d.find_elements(By.CSS_SELECTOR, css)) == 0

    def at_path(self, path, timeout=WAIT):
        self.wait(lambda d: urllib.parse.urlsplit(d.current_url).path == path, f"the path {path}", timeout)

    def gone(self, element, what):
        """Waits until the page holding element has been replaced (a form submitted, a link followed). Chromium may
        answer a node of the old page, caught between the two documents, with an inspector error rather than a stale
        reference ("does not belong to the document"): that node is gone too."""
        def replaced(_driver):
            try:
                element.is_enabled()
                return False
            except StaleElementReferenceException:
                return True
            except WebDriverException as error:
                if "does not belong to the document" in str(error):
                    return True
                raise
        self.wait(replaced, what)

    def type_into(self, css, value):
        field = self.visible(css, f"a visible field {css}")
        field.clear()
        if value:
            field.send_keys(value)
        actual = field.get_attribute("value")
        check(actual == value, f"the field {css} holds {actual!r} after typing {value!r}")
        return field

    def set_checked(self, css, checked=True):
        box = self.find(css, f"a checkbox {css}")
        if box.is_selected() != checked:
            self.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", box)
            box.click()
        check(box.is_selected() == checked, f"the checkbox {css} is {'not ' if checked else ''}checked after a click")

    def http_status(self):
        """The HTTP status of the page now shown (Chromium's Navigation Timing), or None where it is not given."""
        status = self.d.execute_script(
            "const n = performance.getEntriesByType('navigation')[0]; return n ? n.responseStatus : null;")
        return status or None

    def shot(self, name):
        self.d.save_screenshot(os.path.join(self.screenshots, name))


# --- the flow -----------------------------------------------------------------------------------------------------

class Flow:
    def __init__(self, browser, args, issuer, receipt, in_app_count):
        self.b = browser
        self.args = args
        self.issuer = issuer
        self.receipt = receipt
        self.in_app_count = in_app_count
        self.email = f"browser-{secrets.token_hex(4)}@example.com"
        self.key = None
        self.key_prefix = None
        self.app_id = None
        self.token = None
        self.receiver = Receiver()
        self.webhook_secret = None
        self.original = None

    def steps(self):
        """(screenshot name or None, summary, function) in order; each function returns a detail for its line.
        The screenshot of step N is NN-name.png; the two API steps have none (the page does not change)."""
        return [
            ("plans", "/plans lists the free plan", self.plans),
            ("docs", "/docs shows the API documentation", self.docs),
            ("account-signed-out", "/account without a session goes to /signin", self.account_signed_out),
            ("provider", "/signin leads to the provider's authorize page", self.signin_to_provider),
            ("account", "the provider signs a new user in to /account", self.approve),
            ("key-created", "a new API key is shown once", self.create_key),
            ("keys-reloaded", "the key is not shown again", self.keys_reloaded),
            ("app-form", "/account/apps leads to the new-app form", self.open_app_form),
            ("app-created", "a new app shows its token", self.create_app),
            ("app-form-error", "an empty bundle ID is refused on the form", self.bad_app_form),
            ("apps", "the refused form made no app", self.apps_list),
            (None, "POST /api verifies the receipt with the new key and app", self.api_call),
            ("usage", "/account counts the call", self.usage),
            ("transactions", "/account/transactions lists the ledger", self.transactions),
            ("customer", "/account/customers shows the holder of a purchase and draws its timeline", self.customer),
            ("webhook-added", "the app's Webhooks page adds an endpoint and shows its secret once", self.add_webhook),
            ("webhook-delivered", "a test event reaches the receiver, signed, and its delivery is shown",
             self.test_webhook),
            ("webhook-redelivered", "a redelivery sends the event again", self.redeliver_webhook),
            ("key-revoked", "the key is revoked on /account/keys", self.revoke_key),
            (None, "POST /api refuses the revoked key", self.api_revoked),
            ("signed-out", "sign-out ends the session", self.sign_out),
        ]

    # public pages

    def plans(self):
        self.b.open("/plans")
        self.b.find("table#plans", "the table #plans on /plans")
        rows = [row_text(r) for r in self.b.d.find_elements(By.CSS_SELECTOR, "table#plans tr")]
        check(any("free" in r.lower() for r in rows),
              f"no row of table#plans mentions 'free'; rows: {rows}")
        return f"{len(rows)} rows"

    def docs(self):
        self.b.open("/docs")
        article = self.b.find("article#docs", "article#docs on /docs")
        check("POST /api" in text_of(article), "article#docs does not contain the text 'POST /api'")
        return "contains 'POST /api'"

    # signing in

    def account_signed_out(self):
        self.b.open("/account")
        self.b.at_path("/signin")
        return f"redirected to {self.b.d.current_url}"

    def signin_to_provider(self):
        self.b.clickable("a#signin-oidc", "the link a#signin-oidc on /signin").click()
        self.b.visible("#email", "the provider's authorize page (#email)")
        provider = urllib.parse.urlsplit(self.issuer).netloc
        here = urllib.parse.urlsplit(self.b.d.current_url).netloc
        check(here == provider, f"the authorize page is on {here}, expected the provider at {provider}")
        return f"at {self.b.d.current_url.split('?')[0]}"

    def approve(self):
        self.b.type_into("#email", self.email)
        self.b.set_checked("#email_verified", True)
        self.b.clickable("#approve", "the button #approve").click()
        self.b.at_path("/account", timeout=30)
        plan = text_of(self.b.find("#plan-name", "#plan-name on /account"))
        check(plan == "free", f"#plan-name shows {plan!r}, expected 'free'")
        calls = text_of(self.b.find("#month-calls", "#month-calls on /account"))
        check(calls == "0", f"#month-calls shows {calls!r}, expected '0' for a new account")
        return f"signed in as {self.email}, plan free, 0 calls"

    # API keys

    def key_row(self):
        """The tr[data-prefix] of the key labelled 'browser test', or None."""
        for row in self.b.d.find_elements(By.CSS_SELECTOR, "table#keys tr[data-prefix]"):
            if any(text_of(cell) == "browser test" for cell in row.find_elements(By.CSS_SELECTOR, "td, th")):
                return row
        return None

    def create_key(self):
        self.b.open("/account/keys")
        self.b.type_into("#key-label", "browser test")
        button = self.b.clickable("#create-key", "the button #create-key")
        button.click()
        self.b.gone(button, "the key form to be submitted")
        key = text_of(self.b.find("code#new-key", "the new key in code#new-key"))
        check(key and " " not in key, f"code#new-key shows {key!r}, expected one API key")
        self.key = key
        copy = self.b.d.find_elements(By.CSS_SELECTOR, "#copy-key")
        check(copy, "no #copy-key button beside the new key")
        check(copy[0].tag_name == "button", f"#copy-key is a <{copy[0].tag_name}>, expected a <button>")
        self.b.find("table#keys", "the table #keys")
        row = self.key_row()
        rows = [row_text(r) for r in self.b.d.find_elements(By.CSS_SELECTOR, "table#keys tr")]
        check(row is not None, f"no row tr[data-prefix] of table#keys has a cell 'browser test'; rows: {rows}")
        self.key_prefix = row.get_attribute("data-prefix")
        check(self.key_prefix, "the key's row has an empty data-prefix")
        return f"key {key[:8]}… (data-prefix {self.key_prefix!r})"

    def keys_reloaded(self):
        self.b.open("/account/keys")
        self.b.find("table#keys", "the table #keys")
        check(self.b.absent("#new-key"), "#new-key is shown again on a fresh GET /account/keys: it must be shown once")
        check(self.key_row() is not None, "the key labelled 'browser test' is no longer listed")
        check(self.key not in self.b.d.page_source, "the clear API key is still somewhere in the page")
        return "no #new-key, the key still listed"

    # apps

    def open_app_form(self):
        self.b.open("/account/apps")
        self.b.clickable("a#add-app", "the link a#add-app on /account/apps").click()
        self.b.find("form#app-form", "form#app-form")
        return f"at {self.b.path()}"

    def fill_app_form(self, name, bundle_ids):
        self.b.type_into("#name", name)
        self.b.type_into("#bundle_ids", bundle_ids)
        self.b.set_checked(f"#env-{self.args.environment}", True)
        # Not in the spec: if the form offers a verification mode, verify locally (no call to Apple).
        modes = self.b.d.find_elements(By.CSS_SELECTOR, "form#app-form select#mode")
        for option in (Select(modes[0]).options if modes else []):
            if option.get_attribute("value") == "local" and not option.is_selected():
                option.click()

    def submit_app_form(self):
        button = self.b.clickable("#save-app", "the button #save-app")
        self.b.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", button)
        button.click()
        self.b.gone(button, "the app form to be submitted")

    def create_app(self):
        self.fill_app_form("Browser app", self.args.bundle_id)
        self.submit_app_form()
        self.b.wait(lambda d: re.fullmatch(r"/account/apps/[0-9A-Fa-f-]{36}", self.b.path()),
                    "the app's page /account/apps/<uuid>")
        self.app_id = self.b.path().rsplit("/", 1)[1]
        token = text_of(self.b.find("code#app-token", "the app's token in code#app-token"))
        check(token and " " not in token, f"code#app-token shows {token!r}, expected one token")
        self.token = token
        return f"app {self.app_id}, token {token[:8]}…"

    def bad_app_form(self):
        self.b.open("/account/apps/new")
        self.b.find("form#app-form", "form#app-form on /account/apps/new")
        self.fill_app_form("Bad browser app", "")
        # The server's check is under test, not the browser's: skip HTML validation (a `required` field).
        self.b.d.execute_script("document.getElementById('app-form').noValidate = true;")
        self.submit_app_form()
        self.b.find("form#app-form", "form#app-form again after the refused submission")
        status = self.b.http_status()
        check(status in (None, 422), f"the refused form came back with HTTP {status}, expected 422 (the page again, with its error)")
        error = self.b.visible("#error-bundle_ids", "a visible #error-bundle_ids")
        role = error.get_attribute("role")
        check(role == "alert", f"#error-bundle_ids has role={role!r}, expected 'alert'")
        return f"{self.b.path()} again (HTTP {status or '?'}): {text_of(error)!r}"

    def apps_list(self):
        self.b.open("/account/apps")
        self.b.find("table#apps", "the table #apps on /account/apps")
        rows = self.b.d.find_elements(By.CSS_SELECTOR, "table#apps tbody tr")
        check(len(rows) == 1, f"table#apps has {len(rows)} rows, expected exactly 1 (Browser app): "
                              f"{[row_text(r) for r in rows]}")
        check("Browser app" in row_text(rows[0]), f"the one app row does not mention 'Browser app': {row_text(rows[0])}")
        return "1 app"

    # webhooks

    def add_webhook(self):
        self.b.open(f"/account/apps/{self.app_id}")
        self.b.clickable("a#app-webhooks", "the link a#app-webhooks on the app's page").click()
        self.b.find("form#add-endpoint", "form#add-endpoint on the Webhooks page")
        self.b.type_into("#url", self.receiver.url)
        self.b.clickable("#add-endpoint-button", "the button #add-endpoint-button").click()
        secret = text_of(self.b.find("code#webhook-secret", "the new secret in code#webhook-secret"))
        check(secret.startswith("whsec_"), f"code#webhook-secret shows {secret!r}, expected whsec_…")
        self.webhook_secret = secret
        rows = self.b.d.find_elements(By.CSS_SELECTOR, "table#endpoints tbody tr")
        check(len(rows) == 1 and self.receiver.url in row_text(rows[0]),
              f"table#endpoints: {[row_text(r) for r in rows]}")
        endpoint = rows[0].get_attribute("data-endpoint")
        self.b.open(f"/account/apps/{self.app_id}/webhooks")
        check(self.b.absent("code#webhook-secret"), "the secret is shown again on a fresh GET: it must be shown once")
        return f"endpoint {endpoint} → {self.receiver.url}"

    def test_webhook(self):
        self.b.clickable("table#endpoints button.test", "the endpoint's test button").click()
        self.b.visible("#notice", "the notice that the test event was queued")
        deadline = time.monotonic() + 20
        while not self.receiver.deliveries and time.monotonic() < deadline:
            time.sleep(0.1)
        check(self.receiver.deliveries, "the receiver got no delivery within 20 s")
        headers, body = self.receiver.deliveries[0]
        check(standard_webhooks_valid(self.webhook_secret, headers, body),
              f"the delivery's Standard Webhooks signature does not check out: {headers}")
        event = json.loads(body)
        check(event.get("type") == "webhook.test", f"the delivery is {event.get('type')!r}, expected webhook.test")
        # Its outcome is recorded within a second or two; the page then shows it delivered, with status and latency.
        for _ in range(50):
            self.b.open(f"/account/apps/{self.app_id}/webhooks")
            rows = self.b.d.find_elements(By.CSS_SELECTOR, "table#deliveries tbody tr[data-state='delivered']")
            if rows:
                break
            time.sleep(0.3)
        check(rows, "no delivered row in table#deliveries after the receiver took the event")
        status = text_of(rows[0].find_element(By.CSS_SELECTOR, ".status"))
        latency = text_of(rows[0].find_element(By.CSS_SELECTOR, ".latency"))
        check(status == "200" and latency.endswith("ms"), f"the delivered row shows status {status!r}, latency {latency!r}")
        self.event_id = rows[0].get_attribute("data-event")
        return f"event {self.event_id} delivered: HTTP {status}, {latency}"

    def redeliver_webhook(self):
        before = len(self.receiver.deliveries)
        row = self.b.find(f"table#deliveries tbody tr[data-event='{self.event_id}']", "the delivered event's row")
        row.find_element(By.CSS_SELECTOR, "button.redeliver").click()
        self.b.visible("#notice", "the notice that the delivery was queued again")
        deadline = time.monotonic() + 20
        while len(self.receiver.deliveries) == before and time.monotonic() < deadline:
            time.sleep(0.1)
        check(len(self.receiver.deliveries) > before, "the redelivery did not reach the receiver within 20 s")
        again = json.loads(self.receiver.deliveries[-1][1])
        check(again.get("id") == self.event_id, f"the redelivered event is {again.get('id')!r}, expected {self.event_id}")
        return f"event {self.event_id} delivered again"

    # the API

    def api_call(self):
        code, answer = post_api(self.b.base, self.key, self.token, self.receipt)
        want = self.args.expected_status
        check(answer["status"] == want,
              f"POST /api answered status {answer['status']} (HTTP {code}), expected {want}: "
              f"{json.dumps(answer)[:800]}")
        if want == 0:
            check(code == 200, f"POST /api answered HTTP {code} with status 0, expected HTTP 200")
        return f"HTTP {code}, status {answer['status']}, request_id {answer.get('request_id')}"

    def usage(self):
        deadline = time.monotonic() + 10
        calls = None
        while True:
            self.b.open("/account")
            calls = text_of(self.b.find("#month-calls", "#month-calls on /account"))
            if calls == "1" or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        check(calls == "1", f"#month-calls still shows {calls!r} 10 s after one call, expected '1'")
        check(self.b.d.find_elements(By.CSS_SELECTOR, "svg#usage-chart"), "no svg#usage-chart on /account")
        rows = [row_text(r) for r in self.b.d.find_elements(By.CSS_SELECTOR, "table#usage-table tr")]
        check(rows, "no table#usage-table (or no rows in it) on /account")
        check(any("Browser app" in r for r in rows), f"no row of table#usage-table mentions 'Browser app': {rows}")
        return "1 call this month, chart and table"

    def transactions(self):
        self.b.open("/account/transactions")
        form = self.b.find("form#transactions-form", "form#transactions-form on /account/transactions")
        for css in ("select#app", "#user", "#original_transaction_id"):
            check(form.find_elements(By.CSS_SELECTOR, css), f"form#transactions-form has no {css}")
        select = Select(form.find_element(By.CSS_SELECTOR, "select#app"))
        options = [(o.get_attribute("value"), text_of(o)) for o in select.options]
        chosen = [v for v, t in options if v in (self.app_id, self.token)] or \
                 [v for v, t in options if "Browser app" in t]
        check(chosen, f"select#app has no option for the app (id {self.app_id}, 'Browser app'): {options}")
        for option in select.options:
            if option.get_attribute("value") == chosen[0] and not option.is_selected():
                option.click()
        self.b.type_into("#user", "")
        self.b.type_into("#original_transaction_id", "")
        buttons = form.find_elements(By.CSS_SELECTOR, "button[type=submit], button:not([type]), input[type=submit]")
        if buttons:
            buttons[0].click()
        else:
            self.b.d.execute_script("arguments[0].requestSubmit();", form)
        self.b.gone(form, "the transactions form to be submitted")
        self.b.find("table#transactions", "table#transactions after submitting the form")
        rows = self.b.d.find_elements(By.CSS_SELECTOR, "table#transactions tbody tr")
        # The original transaction of the first row, for the customer page.
        self.original = text_of(rows[0].find_elements(By.CSS_SELECTOR, "td")[1]) if rows else None
        if self.in_app_count > 0:
            check(rows, f"table#transactions has no rows, but the receipt has {self.in_app_count} in-app purchases "
                        "that POST /api recorded")
        return f"{len(rows)} rows (the receipt has {self.in_app_count} in-app purchases)"

    def customer(self):
        check(self.original, "no original transaction id from the transactions table")
        self.b.open("/account")
        self.b.clickable('nav a[href="/account/customers"]', "the Customers link in the navigation").click()
        form = self.b.find("form#customers-form", "form#customers-form on /account/customers")
        select = Select(form.find_element(By.CSS_SELECTOR, "select#app"))
        for option in select.options:
            if option.get_attribute("value") == self.app_id and not option.is_selected():
                option.click()
        self.b.type_into("#original_transaction_id", self.original)
        self.b.clickable("#search-customers", "the button #search-customers").click()
        self.b.gone(form, "the customers form to be submitted")
        heading = text_of(self.b.find("h2#customer", "the customer's heading h2#customer"))
        check(self.original in heading, f"h2#customer says {heading!r}, expected the original {self.original}")
        self.b.find("table#entitlements", "table#entitlements")
        svg = self.b.visible("svg#timeline", "the timeline svg#timeline")
        bars = svg.find_elements(By.CSS_SELECTOR, "rect.bar-period, rect.bar-kept, rect.bar-refunded")
        check(bars, "svg#timeline draws no period or purchase")
        check(svg.find_elements(By.CSS_SELECTOR, "line.now"), "svg#timeline has no line for now")
        width = svg.size.get("width", 0)
        check(width > 300, f"svg#timeline is {width}px wide, expected it drawn across the page")
        return f"{heading}: {len(bars)} bars drawn"

    # revocation and sign-out

    def revoke_key(self):
        self.b.open("/account/keys")
        self.b.find("table#keys", "the table #keys")
        row = self.key_row()
        check(row is not None, "the key labelled 'browser test' is not listed")
        buttons = row.find_elements(By.CSS_SELECTOR, "button.revoke")
        check(buttons, f"the key's row has no button.revoke: {row_text(row)}")
        # A confirm() before revoking is answered yes.
        self.b.d.execute_script("window.confirm = function () { return true; };")
        self.b.d.execute_script("arguments[0].scrollIntoView({block: 'center'});", buttons[0])
        buttons[0].click()
        self.b.gone(row, "the revoke form to be submitted")
        selector = f'table#keys tr[data-prefix="{self.key_prefix}"]'

        def revoked(d):
            rows = d.find_elements(By.CSS_SELECTOR, selector)
            return rows and "revoked" in row_text(rows[0]).lower()
        self.b.wait(revoked, f"the row {selector} to show 'revoked'")
        return "the row shows revoked"

    def api_revoked(self):
        code, answer = post_api(self.b.base, self.key, self.token, self.receipt)
        check(answer["status"] == 401,
              f"POST /api with the revoked key answered status {answer['status']} (HTTP {code}), expected 401")
        return f"HTTP {code}, status 401"

    def sign_out(self):
        self.b.open("/account")
        self.b.at_path("/account")
        self.b.clickable("#signout", "the sign-out button #signout").click()
        self.b.at_path("/signin")
        self.b.open("/account")
        self.b.at_path("/signin")
        return "/account goes to /signin again"


# --- main ---------------------------------------------------------------------------------------------------------

def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin-dir", required=True, help="folder with receiptverify and fake-openid")
    parser.add_argument("--screenshots", required=True, help="folder for the screenshots (created if missing)")
    parser.add_argument("--receipt", required=True, help="the fixture receipt NAME.b64 (NAME.expected.json beside it)")
    parser.add_argument("--bundle-id", required=True, help="the receipt's bundle ID")
    parser.add_argument("--environment", required=True, choices=("production", "sandbox"),
                        help="the receipt's environment")
    parser.add_argument("--expected-status", type=int, default=0, help="POST /api's status for the receipt")
    args = parser.parse_args()

    os.makedirs(args.screenshots, exist_ok=True)
    with open(args.receipt) as f:
        receipt = f.read().strip()
    expected_path = re.sub(r"\.b64$", "", args.receipt) + ".expected.json"
    try:
        with open(expected_path) as f:
            in_app_count = len(json.load(f).get("in_app") or [])
    except (OSError, ValueError) as e:
        print(f"note: cannot read {expected_path} ({e}): not asserting transaction rows", flush=True)
        in_app_count = 0

    # SIGTERM stops the test like Ctrl-C: the finally below stops every child.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    workdir = tempfile.mkdtemp(prefix="receiptverify-browser.")
    children, driver, ok, done = [], None, False, 0
    try:
        issuer = start_fake_openid(args.bin_dir, workdir, children)
        print(f"fake-openid: {issuer}", flush=True)
        base = start_receiptverify(args.bin_dir, workdir, issuer, children)
        print(f"receiptverify serve: {base}", flush=True)
        driver = start_browser()
        print(f"browser: Chromium {driver.capabilities.get('browserVersion')}", flush=True)
        browser = Browser(driver, base, args.screenshots)
        steps = Flow(browser, args, issuer, receipt, in_app_count).steps()
        for number, (shot, summary, run) in enumerate(steps, 1):
            detail = run()
            if shot:
                browser.shot(f"{number:02d}-{shot}.png")
            done = number
            print(f"ok {number:2d}/{len(steps)} {summary}: {detail}", flush=True)
        ok = True
        print(f"browser tests passed ({len(steps)} steps)", flush=True)
    except BaseException as e:  # noqa: BLE001 - every failure, Ctrl-C included, gets the same report
        if isinstance(e, Failure):
            print(f"FAIL after {done} steps: {e}", file=sys.stderr, flush=True)
        elif isinstance(e, (KeyboardInterrupt, SystemExit)):
            print(f"interrupted after {done} steps", file=sys.stderr, flush=True)
        else:
            print(f"ERROR after {done} steps:", file=sys.stderr, flush=True)
            traceback.print_exc()
        report(driver, children, args.screenshots)
    finally:
        if driver is not None:
            try:
                driver.quit()
            except Exception as e:  # noqa: BLE001
                print(f"note: stopping the browser: {e}", file=sys.stderr)
        for child in reversed(children):
            child.stop()
        for child in children:  # the logs stay with the screenshots
            for path in (child.stdout_path, child.stderr_path):
                try:
                    shutil.copy(path, args.screenshots)
                except OSError:
                    pass
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 1


def report(driver, children, screenshots):
    """On failure: failure.png, the start of the page source, the tails of the server logs."""
    if driver is not None:
        try:
            driver.save_screenshot(os.path.join(screenshots, "failure.png"))
            print(f"--- page {driver.current_url} (failure.png), first 3000 chars of its source ---", file=sys.stderr)
            print(driver.page_source[:3000], file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - the browser itself may be what failed
            print(f"(no screenshot or page source: {e})", file=sys.stderr)
    for child in children:
        print(child.tail(), file=sys.stderr)
    sys.stderr.flush()


if __name__ == "__main__":
    sys.exit(main())
