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
