-- ReceiptVerify SQLite schema: the same tables as ../PostgreSQL/schema.sql in SQLite's types.
--
-- Versioned like the PostgreSQL schema (`-- version: N <description>`, statements end with `;` at the end of a
-- line); each version is applied once in one transaction. UUIDs are lowercase text, times are integer
-- milliseconds since 1970 (UTC), booleans are 0/1.
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at INTEGER NOT NULL
);

-- version: 1 tenancy: plans, accounts, API keys, apps, settings
CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE plans (
    name TEXT PRIMARY KEY,
    monthly_quota INTEGER CHECK (monthly_quota >= 0),
    rate_limit_per_second INTEGER NOT NULL CHECK (rate_limit_per_second > 0),
    includes_encrypted_endpoint INTEGER NOT NULL,
    monthly_price_cents INTEGER NOT NULL CHECK (monthly_price_cents >= 0),
    overage_price_per_1000_cents INTEGER NOT NULL CHECK (overage_price_per_1000_cents >= 0)
);

INSERT INTO plans VALUES
    ('free', 1000, 5, 0, 0, 0),
    ('pro', 100000, 50, 1, 4900, 50),
    ('enterprise', NULL, 500, 1, 49900, 0);

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    email TEXT NOT NULL UNIQUE,
    plan_name TEXT NOT NULL REFERENCES plans (name) ON UPDATE CASCADE,
    enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    prefix TEXT NOT NULL UNIQUE,
    key_hash BLOB NOT NULL CHECK (length(key_hash) = 32),
    label TEXT,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER,
    revoked_at INTEGER
);
CREATE INDEX api_keys_account_idx ON api_keys (account_id);

CREATE TABLE apps (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token TEXT NOT NULL UNIQUE,
    name TEXT NOT NULL,
    allowed_environments TEXT NOT NULL,
    verification_mode TEXT NOT NULL CHECK (verification_mode IN ('local', 'apple', 'local-then-apple')),
    shared_secret BLOB,
    apple_issuer_id TEXT,
    apple_key_id TEXT,
    apple_private_key BLOB,
    result_cipher TEXT NOT NULL CHECK (result_cipher IN ('aes-256-cbc', 'aes-256-gcm')),
    result_key BLOB NOT NULL,
    allows_test_data INTEGER NOT NULL,
    enabled INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
);
CREATE INDEX apps_account_idx ON apps (account_id);

CREATE TABLE app_bundle_ids (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    position INTEGER NOT NULL,
    bundle_id TEXT NOT NULL,
    PRIMARY KEY (app_id, position),
    UNIQUE (app_id, bundle_id)
);

-- version: 2 metering: billable calls per account, app, endpoint, outcome and UTC day, and per account and month
CREATE TABLE usage_daily (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,                                                 -- UTC, YYYY-MM-DD
    app_id TEXT NOT NULL,
    endpoint TEXT NOT NULL CHECK (endpoint IN ('api', 'apiencrypted')),
    outcome TEXT NOT NULL CHECK (outcome IN ('valid', 'apple_code', 'rejected')),
    calls INTEGER NOT NULL CHECK (calls > 0),
    PRIMARY KEY (account_id, day, app_id, endpoint, outcome)
);
CREATE INDEX usage_daily_day_idx ON usage_daily (day);

CREATE TABLE usage_monthly (
    account_id TEXT NOT NULL,
    month TEXT NOT NULL,                                               -- UTC, YYYY-MM
    calls INTEGER NOT NULL CHECK (calls > 0),
    PRIMARY KEY (account_id, month)
);

-- version: 3 quota grants: calls of an account's month a server may answer without asking again
CREATE TABLE quota_grants (
    account_id TEXT NOT NULL,
    month TEXT NOT NULL,                                               -- UTC, YYYY-MM
    server_id TEXT NOT NULL,
    granted INTEGER NOT NULL CHECK (granted >= 0),
    flushed INTEGER NOT NULL DEFAULT 0 CHECK (flushed >= 0),          -- calls this server's flushes stored
    expires_at INTEGER NOT NULL,                                       -- milliseconds since 1970
    PRIMARY KEY (account_id, month, server_id)
);

-- version: 4 ledger: every verified transaction once per app and environment, claims, delivery; app ledger settings
ALTER TABLE apps ADD COLUMN claims_policy TEXT NOT NULL DEFAULT 'flag'
    CHECK (claims_policy IN ('off', 'flag', 'refuse', 'transfer'));
ALTER TABLE apps ADD COLUMN delivery_mode TEXT NOT NULL DEFAULT 'once' CHECK (delivery_mode IN ('once', 'confirm'));
-- product_catalog: the app's product ids, comma-separated; NULL: no catalog.
ALTER TABLE apps ADD COLUMN product_catalog TEXT;

-- Dates Apple states are milliseconds since 1970, as Apple writes them; ours (first_seen_at, …) are too, as in
-- every SQLite table. The primary key is what makes "new" exact: a transaction is inserted if absent, never read
-- first.
CREATE TABLE ledger_transactions (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    purchase_date INTEGER,
    original_purchase_date INTEGER,
    expires_date INTEGER,
    quantity INTEGER NOT NULL,
    web_order_line_item_id TEXT,
    ownership_type TEXT,
    revocation_date INTEGER,
    revocation_reason INTEGER,
    revocation_type TEXT,
    revocation_percentage INTEGER,
    first_seen_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    first_request_id TEXT NOT NULL,
    delivered_at INTEGER,
    PRIMARY KEY (app_id, environment, transaction_id)
);
CREATE INDEX ledger_transactions_original_idx ON ledger_transactions (app_id, original_transaction_id);
CREATE INDEX ledger_transactions_order_idx ON ledger_transactions (app_id, first_seen_at, environment, transaction_id);

-- The user an original transaction belongs to, per app and environment.
CREATE TABLE ledger_claims (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    claimed_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, environment, original_transaction_id)
);
CREATE INDEX ledger_claims_user_idx ON ledger_claims (app_id, app_user_id);

-- Ledger look-ups are metered as an endpoint of their own: SQLite changes a CHECK only by rebuilding the table.
CREATE TABLE usage_daily_v4 (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,                                                 -- UTC, YYYY-MM-DD
    app_id TEXT NOT NULL,
    endpoint TEXT NOT NULL CHECK (endpoint IN ('api', 'apiencrypted', 'transactions')),
    outcome TEXT NOT NULL CHECK (outcome IN ('valid', 'apple_code', 'rejected')),
    calls INTEGER NOT NULL CHECK (calls > 0),
    PRIMARY KEY (account_id, day, app_id, endpoint, outcome)
);
INSERT INTO usage_daily_v4 SELECT account_id, day, app_id, endpoint, outcome, calls FROM usage_daily;
DROP TABLE usage_daily;
ALTER TABLE usage_daily_v4 RENAME TO usage_daily;
CREATE INDEX usage_daily_day_idx ON usage_daily (day);

-- version: 5 the account screen: browser sessions, one-time sign-in links, the audit log
-- Tokens are never stored, only their SHA-256. Times are milliseconds since 1970.
CREATE TABLE account_sessions (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    token_hash BLOB NOT NULL UNIQUE,
    method TEXT NOT NULL CHECK (method IN ('oidc', 'link')),
    address TEXT,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
CREATE INDEX account_sessions_account_idx ON account_sessions (account_id);

CREATE TABLE sign_in_links (
    token_hash BLOB PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
);

-- No foreign key: the log outlives what it describes.
CREATE TABLE audit_log (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    detail TEXT NOT NULL,
    address TEXT,
    at INTEGER NOT NULL
);
CREATE INDEX audit_log_account_idx ON audit_log (account_id, at);
CREATE INDEX audit_log_at_idx ON audit_log (at);

-- version: 6 sign-up: how each account came to be, and the OpenID identities that sign in to it
-- signed_up_with: 'operator' (the CLI) or 'oidc' (self sign-up through the identity provider).
ALTER TABLE accounts ADD COLUMN signed_up_with TEXT NOT NULL DEFAULT 'operator'
    CHECK (signed_up_with IN ('operator', 'oidc'));
CREATE TABLE account_identities (
    issuer TEXT NOT NULL,
    subject TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    email TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (issuer, subject)
);
CREATE INDEX account_identities_account_idx ON account_identities (account_id);

-- version: 7 App Store Server API settings: enrichment of /api answers, look-ups by transaction id alone
ALTER TABLE apps ADD COLUMN enrichment TEXT NOT NULL DEFAULT 'off' CHECK (enrichment IN ('off', 'on'));
ALTER TABLE apps ADD COLUMN id_lookups TEXT NOT NULL DEFAULT 'allow' CHECK (id_lookups IN ('allow', 'refuse'));

-- version: 8 Apple's Finish Transaction of confirmed deliveries: state, attempts, next attempt, last error
-- apple_finish: NULL (not asked), 'pending', 'finished' or 'failed'; times in milliseconds.
ALTER TABLE ledger_transactions ADD COLUMN apple_finish TEXT
    CHECK (apple_finish IN ('pending', 'finished', 'failed'));
ALTER TABLE ledger_transactions ADD COLUMN apple_finish_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ledger_transactions ADD COLUMN apple_finish_due_at INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN apple_finish_error TEXT;
ALTER TABLE ledger_transactions ADD COLUMN apple_finished_at INTEGER;
CREATE INDEX ledger_transactions_apple_finish_idx ON ledger_transactions (apple_finish_due_at)
    WHERE apple_finish = 'pending';

-- version: 9 Server Notifications V2, subscription statuses, webhook endpoints and the outbox of their events
-- Times are milliseconds since 1970; booleans 0 or 1.
-- Every notification once per app (Apple's TEXT), with its signed payload (forwarded to endpoints that ask for it).
CREATE TABLE notifications (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    notification_uuid TEXT NOT NULL,
    environment TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    subtype TEXT,
    signed_date INTEGER NOT NULL,
    original_transaction_id TEXT,
    transaction_id TEXT,
    source TEXT NOT NULL CHECK (source IN ('apple', 'history')),
    signed_payload TEXT NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, notification_uuid)
);
CREATE INDEX notifications_received_idx ON notifications (app_id, received_at);
-- CONSUMPTION_REQUESTs grouped by the transaction they ask about.
CREATE TABLE consumption_requests (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    first_notification_uuid TEXT NOT NULL,
    requests INTEGER NOT NULL,
    first_at INTEGER NOT NULL,
    last_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, environment, transaction_id)
);
-- Which notification last set a revocation (its signed date): an older one arriving later does not undo it.
ALTER TABLE ledger_transactions ADD COLUMN revocation_as_of INTEGER;
-- Each subscription's status; as_of is the signed date of the statement that set it.
CREATE TABLE subscription_statuses (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'grace_period', 'billing_retry', 'expired', 'revoked')),
    expires_date INTEGER,
    grace_period_expires_date INTEGER,
    auto_renews INTEGER,
    auto_renew_product_id TEXT,
    as_of INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    -- When the scheduler should look at it: the expiry, or the grace period's end, while the status is entitled.
    due_at INTEGER,
    PRIMARY KEY (app_id, environment, original_transaction_id)
);
CREATE INDEX subscription_statuses_due_idx ON subscription_statuses (due_at) WHERE due_at IS NOT NULL;
-- The customers' receivers; the signing secret is sealed with the master key.
CREATE TABLE webhook_endpoints (
    id TEXT PRIMARY KEY,
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    url TEXT NOT NULL,
    environments TEXT NOT NULL,
    event_types TEXT NOT NULL,
    forwards_signed_payload INTEGER NOT NULL,
    secret BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_app_idx ON webhook_endpoints (app_id);
CREATE TABLE webhook_events (
    id TEXT PRIMARY KEY,
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment TEXT NOT NULL,
    event_type TEXT NOT NULL,
    data TEXT NOT NULL,
    notification_uuid TEXT,
    created_at INTEGER NOT NULL
);
CREATE INDEX webhook_events_app_idx ON webhook_events (app_id, created_at);
-- The outbox: one row per event and endpoint.
CREATE TABLE webhook_deliveries (
    event_id TEXT NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
    endpoint_id TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'dead')),
    attempts INTEGER NOT NULL DEFAULT 0,
    next_attempt_at INTEGER,
    last_status INTEGER,
    last_error TEXT,
    delivered_at INTEGER,
    PRIMARY KEY (event_id, endpoint_id)
);
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_endpoint_idx ON webhook_deliveries (endpoint_id);


-- version: 10 An app may require the user (app_user_id) on /api while its claims are checked, and bind its Apple app id
ALTER TABLE apps ADD COLUMN requires_user INTEGER NOT NULL DEFAULT 0 CHECK (requires_user IN (0, 1));
ALTER TABLE apps ADD COLUMN apple_app_id INTEGER CHECK (apple_app_id > 0);

-- version: 11 The operator may lock an app (it stays disabled until the operator unlocks it)
ALTER TABLE apps ADD COLUMN locked INTEGER NOT NULL DEFAULT 0 CHECK (locked IN (0, 1));

-- version: 12 Fair webhook delivery: deliveries in flight are leased (a cap per endpoint), a redelivery starts a fresh budget of time, and an endpoint that keeps failing is paused
ALTER TABLE webhook_deliveries ADD COLUMN leased_until INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN started_at INTEGER;
ALTER TABLE webhook_endpoints ADD COLUMN consecutive_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_endpoints ADD COLUMN paused_until INTEGER;
CREATE INDEX webhook_deliveries_endpoint_due_idx ON webhook_deliveries (endpoint_id, next_attempt_at) WHERE state = 'pending';
CREATE INDEX webhook_deliveries_leased_idx ON webhook_deliveries (endpoint_id, leased_until) WHERE leased_until IS NOT NULL;

-- version: 13 Retention: the indexes the purge deletes by; the reconciliation's lease and cursor per app
CREATE INDEX notifications_received_at_idx ON notifications (received_at);
CREATE INDEX webhook_events_created_idx ON webhook_events (created_at);
CREATE INDEX account_sessions_expires_idx ON account_sessions (expires_at);
CREATE INDEX sign_in_links_expires_idx ON sign_in_links (expires_at);
CREATE TABLE reconciliations (
    app_id TEXT PRIMARY KEY REFERENCES apps (id) ON DELETE CASCADE,
    leased_until INTEGER,
    cursor TEXT,
    finished_at INTEGER
);

-- version: 14 Test roots are bound to apps by fingerprint (comma-separated SHA-256, uppercase hex)
ALTER TABLE apps ADD COLUMN test_anchors TEXT NOT NULL DEFAULT '';

-- version: 15 Plans limit what an account may set up: apps and API keys per account; bundle IDs, products and webhook
-- endpoints per app (PlanLimits.standard, .free and .enterprise)
ALTER TABLE plans ADD COLUMN max_apps INTEGER NOT NULL DEFAULT 25 CHECK (max_apps >= 0);
ALTER TABLE plans ADD COLUMN max_api_keys INTEGER NOT NULL DEFAULT 25 CHECK (max_api_keys >= 0);
ALTER TABLE plans ADD COLUMN max_bundle_ids INTEGER NOT NULL DEFAULT 25 CHECK (max_bundle_ids >= 0);
ALTER TABLE plans ADD COLUMN max_products INTEGER NOT NULL DEFAULT 2000 CHECK (max_products >= 0);
ALTER TABLE plans ADD COLUMN max_webhook_endpoints INTEGER NOT NULL DEFAULT 10 CHECK (max_webhook_endpoints >= 0);
UPDATE plans SET max_apps = 2, max_api_keys = 3, max_bundle_ids = 5, max_products = 100, max_webhook_endpoints = 2
    WHERE name = 'free';
UPDATE plans SET max_apps = 500, max_api_keys = 200, max_bundle_ids = 100, max_products = 10000,
    max_webhook_endpoints = 10 WHERE name = 'enterprise';

-- version: 16 Customers run their webhooks: an endpoint may be paused, its secret rotated with the previous one still
-- signing until a time, and each delivery's last latency is kept
ALTER TABLE webhook_endpoints ADD COLUMN enabled INTEGER NOT NULL DEFAULT 1 CHECK (enabled IN (0, 1));
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret BLOB;
ALTER TABLE webhook_endpoints ADD COLUMN previous_secret_until INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN last_latency_ms INTEGER;

-- version: 17 Entitlements: each product's kind and the entitlements it grants; what the ledger keeps of a
-- transaction's kind and offer; when a subscription's billing issue and its turning off were first stated; customer
-- look-ups metered as an endpoint of their own
-- product_terms: the catalog's products that have terms, space-separated, each `ID=TYPE[:ENTITLEMENT,…]`.
ALTER TABLE apps ADD COLUMN product_terms TEXT NOT NULL DEFAULT '';
ALTER TABLE ledger_transactions ADD COLUMN product_type TEXT;
ALTER TABLE ledger_transactions ADD COLUMN offer_type INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN offer_discount_type TEXT;
ALTER TABLE subscription_statuses ADD COLUMN billing_issue_detected_at INTEGER;
ALTER TABLE subscription_statuses ADD COLUMN unsubscribe_detected_at INTEGER;
CREATE TABLE usage_daily_v17 (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,                                                 -- UTC, YYYY-MM-DD
    app_id TEXT NOT NULL,
    endpoint TEXT NOT NULL CHECK (endpoint IN ('api', 'apiencrypted', 'transactions', 'customers')),
    outcome TEXT NOT NULL CHECK (outcome IN ('valid', 'apple_code', 'rejected')),
    calls INTEGER NOT NULL CHECK (calls > 0),
    PRIMARY KEY (account_id, day, app_id, endpoint, outcome)
);
INSERT INTO usage_daily_v17 SELECT account_id, day, app_id, endpoint, outcome, calls FROM usage_daily;
DROP TABLE usage_daily;
ALTER TABLE usage_daily_v17 RENAME TO usage_daily;
CREATE INDEX usage_daily_day_idx ON usage_daily (day);
-- What was last told of each user's entitlements (customer.entitlements_changed), and when the same facts next give
-- another view (the scheduler looks then); entitlements NULL: nothing told yet.
CREATE TABLE customer_snapshots (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    environment TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    entitlements TEXT,
    next_change_at INTEGER,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, environment, app_user_id)
);
CREATE INDEX customer_snapshots_due_idx ON customer_snapshots (next_change_at) WHERE next_change_at IS NOT NULL;

-- version: 18 Offers signed with the app's key, metered as an endpoint of their own
CREATE TABLE usage_daily_v18 (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,                                                 -- UTC, YYYY-MM-DD
    app_id TEXT NOT NULL,
    endpoint TEXT NOT NULL CHECK (endpoint IN ('api', 'apiencrypted', 'transactions', 'customers', 'offers')),
    outcome TEXT NOT NULL CHECK (outcome IN ('valid', 'apple_code', 'rejected')),
    calls INTEGER NOT NULL CHECK (calls > 0),
    PRIMARY KEY (account_id, day, app_id, endpoint, outcome)
);
INSERT INTO usage_daily_v18 SELECT account_id, day, app_id, endpoint, outcome, calls FROM usage_daily;
DROP TABLE usage_daily;
ALTER TABLE usage_daily_v18 RENAME TO usage_daily;
CREATE INDEX usage_daily_day_idx ON usage_daily (day);

-- version: 19 Refund requests answered: each app's policy; each CONSUMPTION_REQUEST group's answer to Apple; what
-- the backend reported of a transaction's use
-- refund_answers: `POLICY consent=BOOL sample=BOOL` (RefundAnswers' stored form).
ALTER TABLE apps ADD COLUMN refund_answers TEXT NOT NULL DEFAULT 'off consent=false sample=false';
-- answer_state: NULL (not answered: the policy was off), 'pending', 'sent' or 'failed'; answer_due_at: the next
-- attempt (leased while a server sends it); answer_body: what was sent; answer_status: Apple's HTTP status.
ALTER TABLE consumption_requests ADD COLUMN answer_state TEXT CHECK (answer_state IN ('pending', 'sent', 'failed'));
ALTER TABLE consumption_requests ADD COLUMN answer_due_at INTEGER;
ALTER TABLE consumption_requests ADD COLUMN answer_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE consumption_requests ADD COLUMN answer_body TEXT;
ALTER TABLE consumption_requests ADD COLUMN answer_status INTEGER;
ALTER TABLE consumption_requests ADD COLUMN answer_error TEXT;
ALTER TABLE consumption_requests ADD COLUMN answered_at INTEGER;
CREATE INDEX consumption_requests_due_idx ON consumption_requests (answer_due_at) WHERE answer_state = 'pending';
-- consumption_milli: 0 … 100000 (milliunits of a percent); consumption_delivery: Apple's deliveryStatus.
ALTER TABLE ledger_transactions ADD COLUMN consumption_milli INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN consumption_delivery TEXT;
ALTER TABLE ledger_transactions ADD COLUMN consumption_reported_at INTEGER;

-- version: 20 Renewal-date extensions asked of Apple, one per app and request identifier
-- state: sending, extended, refused, failed, unknown (a customer's); requested, complete (a product's, polled).
-- storefronts: comma-separated ISO 3166-1 alpha-3 codes; effective_date, complete_date: Apple's, in milliseconds.
CREATE TABLE renewal_extensions (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    request_identifier TEXT NOT NULL,
    environment TEXT NOT NULL,
    original_transaction_id TEXT,
    product_id TEXT,
    storefronts TEXT NOT NULL DEFAULT '',
    days INTEGER NOT NULL,
    reason INTEGER NOT NULL,
    state TEXT NOT NULL
        CHECK (state IN ('sending', 'extended', 'refused', 'failed', 'unknown', 'requested', 'complete')),
    effective_date INTEGER,
    succeeded_count INTEGER,
    failed_count INTEGER,
    complete_date INTEGER,
    error TEXT,
    actor TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    next_poll_at INTEGER,
    PRIMARY KEY (app_id, request_identifier)
);
CREATE INDEX renewal_extensions_poll_idx ON renewal_extensions (next_poll_at) WHERE state = 'requested';
CREATE INDEX renewal_extensions_app_idx ON renewal_extensions (app_id, created_at);

-- version: 21 Apple's 2025-2026 transaction fields kept on the ledger: the app transaction, the offer's period, the
-- billing plan and the commitment a monthly period belongs to (commitment_expires_date, commitment_price: Apple's
-- milliseconds and milliunits)
ALTER TABLE ledger_transactions ADD COLUMN app_transaction_id TEXT;
ALTER TABLE ledger_transactions ADD COLUMN offer_period TEXT;
ALTER TABLE ledger_transactions ADD COLUMN billing_plan_type TEXT;
ALTER TABLE ledger_transactions ADD COLUMN commitment_period INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN commitment_periods INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN commitment_expires_date INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN commitment_price INTEGER;

-- version: 22 The store is a dimension of the ledger's key: every transaction, claim and subscription status is the
-- App Store's or Google Play's (store: app_store, google_play); the rows before it are the App Store's
-- SQLite changes a primary key only by rebuilding the table: each is copied, then replaced.
CREATE TABLE ledger_transactions_v22 (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    store TEXT NOT NULL CHECK (store IN ('app_store', 'google_play')),
    environment TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    purchase_date INTEGER,
    original_purchase_date INTEGER,
    expires_date INTEGER,
    quantity INTEGER NOT NULL,
    web_order_line_item_id TEXT,
    ownership_type TEXT,
    revocation_date INTEGER,
    revocation_reason INTEGER,
    revocation_type TEXT,
    revocation_percentage INTEGER,
    first_seen_at INTEGER NOT NULL,
    last_seen_at INTEGER NOT NULL,
    first_request_id TEXT NOT NULL,
    delivered_at INTEGER,
    apple_finish TEXT CHECK (apple_finish IN ('pending', 'finished', 'failed')),
    apple_finish_attempts INTEGER NOT NULL DEFAULT 0,
    apple_finish_due_at INTEGER,
    apple_finish_error TEXT,
    apple_finished_at INTEGER,
    revocation_as_of INTEGER,
    product_type TEXT,
    offer_type INTEGER,
    offer_discount_type TEXT,
    consumption_milli INTEGER,
    consumption_delivery TEXT,
    consumption_reported_at INTEGER,
    app_transaction_id TEXT,
    offer_period TEXT,
    billing_plan_type TEXT,
    commitment_period INTEGER,
    commitment_periods INTEGER,
    commitment_expires_date INTEGER,
    commitment_price INTEGER,
    PRIMARY KEY (app_id, store, environment, transaction_id)
);
INSERT INTO ledger_transactions_v22 SELECT app_id, 'app_store', environment, transaction_id, original_transaction_id,
    product_id, purchase_date, original_purchase_date, expires_date, quantity, web_order_line_item_id, ownership_type,
    revocation_date, revocation_reason, revocation_type, revocation_percentage, first_seen_at, last_seen_at,
    first_request_id, delivered_at, apple_finish, apple_finish_attempts, apple_finish_due_at, apple_finish_error,
    apple_finished_at, revocation_as_of, product_type, offer_type, offer_discount_type, consumption_milli,
    consumption_delivery, consumption_reported_at, app_transaction_id, offer_period, billing_plan_type,
    commitment_period, commitment_periods, commitment_expires_date, commitment_price
    FROM ledger_transactions;
DROP TABLE ledger_transactions;
ALTER TABLE ledger_transactions_v22 RENAME TO ledger_transactions;
CREATE INDEX ledger_transactions_original_idx ON ledger_transactions (app_id, original_transaction_id);
CREATE INDEX ledger_transactions_order_idx ON ledger_transactions (app_id, first_seen_at, environment, transaction_id);
CREATE INDEX ledger_transactions_apple_finish_idx ON ledger_transactions (apple_finish_due_at)
    WHERE apple_finish = 'pending';
CREATE TABLE ledger_claims_v22 (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    store TEXT NOT NULL CHECK (store IN ('app_store', 'google_play')),
    environment TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    app_user_id TEXT NOT NULL,
    claimed_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, store, environment, original_transaction_id)
);
INSERT INTO ledger_claims_v22 SELECT app_id, 'app_store', environment, original_transaction_id, app_user_id, claimed_at
    FROM ledger_claims;
DROP TABLE ledger_claims;
ALTER TABLE ledger_claims_v22 RENAME TO ledger_claims;
CREATE INDEX ledger_claims_user_idx ON ledger_claims (app_id, app_user_id);
CREATE TABLE subscription_statuses_v22 (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    store TEXT NOT NULL CHECK (store IN ('app_store', 'google_play')),
    environment TEXT NOT NULL,
    original_transaction_id TEXT NOT NULL,
    product_id TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('active', 'grace_period', 'billing_retry', 'expired', 'revoked')),
    expires_date INTEGER,
    grace_period_expires_date INTEGER,
    auto_renews INTEGER,
    auto_renew_product_id TEXT,
    as_of INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    due_at INTEGER,
    billing_issue_detected_at INTEGER,
    unsubscribe_detected_at INTEGER,
    PRIMARY KEY (app_id, store, environment, original_transaction_id)
);
INSERT INTO subscription_statuses_v22 SELECT app_id, 'app_store', environment, original_transaction_id, product_id,
    status, expires_date, grace_period_expires_date, auto_renews, auto_renew_product_id, as_of, updated_at, due_at,
    billing_issue_detected_at, unsubscribe_detected_at
    FROM subscription_statuses;
DROP TABLE subscription_statuses;
ALTER TABLE subscription_statuses_v22 RENAME TO subscription_statuses;
CREATE INDEX subscription_statuses_due_idx ON subscription_statuses (due_at) WHERE due_at IS NOT NULL;

-- version: 23 Google Play: an app's Android package names and its Google Play Developer API credentials (a service
-- account's identity; its private key sealed with the master key)
-- package_names: comma-separated, in the order given.
ALTER TABLE apps ADD COLUMN package_names TEXT NOT NULL DEFAULT '';
ALTER TABLE apps ADD COLUMN google_client_email TEXT;
ALTER TABLE apps ADD COLUMN google_key_id TEXT;
ALTER TABLE apps ADD COLUMN google_token_uri TEXT;
ALTER TABLE apps ADD COLUMN google_private_key BLOB;

-- version: 24 Google Play purchases on the ledger: each row's purchase token, package and linked (replaced) token, and
-- its acknowledgement, asked of Google once the purchase is delivered (Google refunds one unacknowledged for three days)
-- google_ack: NULL (not asked: not delivered yet, or not Google's), 'pending', 'acknowledged' (by us or already by
-- Google) or 'failed'; google_ack_due_at: the next attempt (leased while a server asks).
ALTER TABLE ledger_transactions ADD COLUMN purchase_token TEXT;
ALTER TABLE ledger_transactions ADD COLUMN package_name TEXT;
ALTER TABLE ledger_transactions ADD COLUMN linked_purchase_token TEXT;
ALTER TABLE ledger_transactions ADD COLUMN google_ack TEXT
    CHECK (google_ack IN ('pending', 'acknowledged', 'failed'));
ALTER TABLE ledger_transactions ADD COLUMN google_ack_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE ledger_transactions ADD COLUMN google_ack_due_at INTEGER;
ALTER TABLE ledger_transactions ADD COLUMN google_ack_error TEXT;
ALTER TABLE ledger_transactions ADD COLUMN google_acknowledged_at INTEGER;
CREATE INDEX ledger_transactions_google_ack_idx ON ledger_transactions (google_ack_due_at)
    WHERE google_ack = 'pending';
CREATE INDEX ledger_transactions_token_idx ON ledger_transactions (app_id, purchase_token)
    WHERE purchase_token IS NOT NULL;

-- version: 25 Google Play's voided purchases, read per app and package from a cursor (one server at a time)
-- start_time: the oldest voided time (milliseconds) the next read asks for; page_token: where a read stopped;
-- next_run_at: when the next read is due (moved past a lease while a server reads).
CREATE TABLE google_voided_cursors (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    package_name TEXT NOT NULL,
    start_time INTEGER,
    page_token TEXT,
    next_run_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, package_name)
);
CREATE INDEX google_voided_cursors_due_idx ON google_voided_cursors (next_run_at);

-- version: 26 Google Play's Real-time Developer Notifications: each app's Pub/Sub push authentication, and each push
-- message recorded once per app by its messageId
-- google_pubsub: `AUDIENCE SERVICE_ACCOUNT` (GooglePubSubPush's stored form); NULL: the app takes none.
-- notification_type: the developer notification's kind and type (SUBSCRIPTION_RENEWED, VOIDED_PURCHASE, TEST, ...);
-- environment: the purchase's (Production when none was read); event_time: Google's eventTimeMillis.
ALTER TABLE apps ADD COLUMN google_pubsub TEXT;
CREATE TABLE google_notifications (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    message_id TEXT NOT NULL,
    package_name TEXT NOT NULL,
    notification_type TEXT NOT NULL,
    purchase_token TEXT,
    environment TEXT NOT NULL,
    event_time INTEGER NOT NULL,
    received_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, message_id)
);
CREATE INDEX google_notifications_received_idx ON google_notifications (received_at);

-- version: 27 Google Play: an app's Play licensing public key (Play Console's base64 RSA key), which signs the purchase
-- JSON a client sends with its signature
ALTER TABLE apps ADD COLUMN google_license_key TEXT;

-- version: 28 Exports (GET /api/export, receiptverify export), metered as an endpoint of their own; an app's usage read
-- by day
CREATE TABLE usage_daily_v28 (
    account_id TEXT NOT NULL,
    day TEXT NOT NULL,                                                 -- UTC, YYYY-MM-DD
    app_id TEXT NOT NULL,
    endpoint TEXT NOT NULL CHECK (endpoint IN ('api', 'apiencrypted', 'transactions', 'customers', 'offers', 'export')),
    outcome TEXT NOT NULL CHECK (outcome IN ('valid', 'apple_code', 'rejected')),
    calls INTEGER NOT NULL CHECK (calls > 0),
    PRIMARY KEY (account_id, day, app_id, endpoint, outcome)
);
INSERT INTO usage_daily_v28 SELECT account_id, day, app_id, endpoint, outcome, calls FROM usage_daily;
DROP TABLE usage_daily;
ALTER TABLE usage_daily_v28 RENAME TO usage_daily;
CREATE INDEX usage_daily_day_idx ON usage_daily (day);
CREATE INDEX usage_daily_app_idx ON usage_daily (app_id, day);

-- version: 29 Money review M1: whether an app's stores' user ids (Apple's appAccountToken, Google's
-- obfuscatedExternalAccountId) are its backend's app_user_id; off: a request without app_user_id claims nothing
ALTER TABLE apps ADD COLUMN store_user_ids INTEGER NOT NULL DEFAULT 0 CHECK (store_user_ids IN (0, 1));

-- version: 30 Money review M10: each customer's changes are numbered under the snapshot's lock, so that a receiver can
-- order customer.entitlements_changed events
ALTER TABLE customer_snapshots ADD COLUMN sequence INTEGER NOT NULL DEFAULT 0;

-- version: 31 Money review M6: the customer's renewal date Apple stated just before an extension was sent, against
-- which an extension whose answer was lost is judged before it is ever sent again
ALTER TABLE renewal_extensions ADD COLUMN expires_before INTEGER;

-- version: 32 Money review M3: when an answer in `confirm` mode first said `deliver: true` for a row; a switch to `once`
-- settles exactly those rows. Rows of apps in `confirm` mode now are taken as offered where a request saw them (the
-- rule the switch used before)
ALTER TABLE ledger_transactions ADD COLUMN offered_at INTEGER;
UPDATE ledger_transactions SET offered_at = last_seen_at
WHERE delivered_at IS NULL AND revocation_date IS NULL
    AND (first_request_id NOT LIKE 'notification:%' OR last_seen_at > first_seen_at)
    AND app_id IN (SELECT id FROM apps WHERE delivery_mode = 'confirm');

-- version: 33 Money review M8: Google Play's voided purchases, kept as read (once each, by order and voided time), so
-- that an order the ledger records after its void is recorded revoked, and quantity-based partial refunds add up
-- voided_quantity: the quantity a partial refund voided (NULL: the whole order); recorded_at: when it was read.
CREATE TABLE google_voided_purchases (
    app_id TEXT NOT NULL REFERENCES apps (id) ON DELETE CASCADE,
    order_id TEXT NOT NULL,
    voided_time INTEGER NOT NULL,
    voided_reason INTEGER,
    voided_quantity INTEGER,
    recorded_at INTEGER NOT NULL,
    PRIMARY KEY (app_id, order_id, voided_time)
);
CREATE INDEX google_voided_purchases_recorded_idx ON google_voided_purchases (app_id, recorded_at);
