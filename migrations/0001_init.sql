-- 0001_init: the candle-graph-server index. Forward-only; applied by the server
-- at start under an advisory lock (server/migrate.c records it in schema_migrations).

-- Bearer tokens: random secrets shown once; only their SHA-256 is stored.
CREATE TABLE api_tokens (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    token_hash  bytea NOT NULL UNIQUE,
    scopes      text[] NOT NULL CHECK (scopes <@ ARRAY['upload','read','admin']::text[]),
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz,
    revoked_at  timestamptz
);

-- Ed25519 signer keys (key_id = hex of the first 16 bytes of SHA-256(public key)).
CREATE TABLE signer_keys (
    key_id      text PRIMARY KEY CHECK (key_id ~ '^[0-9a-f]{32}$'),
    name        text NOT NULL,
    public_key  bytea NOT NULL UNIQUE CHECK (length(public_key) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- Campaigns (candle-graph/campaign/1) and their planned captures (for issue 7's routes).
CREATE TABLE campaigns (
    campaign_id      text PRIMARY KEY,
    manifest         jsonb NOT NULL,
    manifest_sha256  text NOT NULL CHECK (manifest_sha256 ~ '^[0-9a-f]{64}$'),
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE campaign_captures (
    campaign_id  text NOT NULL REFERENCES campaigns ON DELETE CASCADE,
    name         text NOT NULL,           -- the planned `bundle` name
    position     integer NOT NULL,        -- order in the manifest
    planned      jsonb NOT NULL,          -- the planned capture object as written
    PRIMARY KEY (campaign_id, name)
);

-- One row per published bundle. id = SHA-256 of the exact bundle.json bytes.
CREATE TABLE bundles (
    id                text COLLATE "C" PRIMARY KEY CHECK (id ~ '^[0-9a-f]{64}$'),  -- C collation: prefix LIKE uses the index
    seq               bigint GENERATED ALWAYS AS IDENTITY UNIQUE,   -- keyset pagination order
    run_id            text NOT NULL UNIQUE,
    manifest          bytea NOT NULL,                               -- exact bundle.json bytes
    file_count        integer NOT NULL,
    total_bytes       bigint NOT NULL,
    uploaded_at       timestamptz NOT NULL DEFAULT now(),
    uploader_token_id text,
    -- signature (candle-graph/signature/1), null when unsigned
    signature         json,
    signer_key_id     text REFERENCES signer_keys,
    -- semantic verification
    semantic_status   text NOT NULL CHECK (semantic_status IN ('rederived_match','not_rederivable')),
    evidence_schema   text,
    -- trace meta (provenance)
    trace_schema      text NOT NULL,
    correlation_id    text NOT NULL,
    entrypoint        text NOT NULL,
    phase             text NOT NULL,
    captured_at       text NOT NULL,          -- meta.timestamp as written
    capture_step      bigint NOT NULL,
    warmup_steps      bigint NOT NULL,
    device            text NOT NULL,
    measured_region_device_synchronized boolean NOT NULL,
    timing_mode       text NOT NULL,
    candle_version    text,
    provenance        json NOT NULL,          -- the full TraceRunMeta object
    -- capture semantics
    measurement_scope text NOT NULL,
    capture_contract  json NOT NULL,
    -- comparison identity (null columns when the trace has none)
    implementation_id text,
    workload_id       text,
    model_id          text,
    config_id         text,
    data_id           text,
    seed_policy       text,
    physical_batch    bigint,
    accumulation_steps bigint,
    "precision"       text,
    device_state      text,
    pair_id           text,
    identity          json,
    -- health
    structurally_valid boolean NOT NULL,
    capture_complete   boolean NOT NULL,
    outcome            text NOT NULL,          -- terminal outcome (complete/failed/…)
    health             json NOT NULL,          -- {structurally_valid, capture_complete, issues, coverage}
    -- measured sample: duration of the single closed measured span, else null + count
    measured_ns          bigint,
    measured_span_count  integer NOT NULL,
    -- placement
    host              text,                    -- tags.host (or tags.hostname), null when absent
    campaign_id       text REFERENCES campaigns,
    planned_name      text,
    FOREIGN KEY (campaign_id, planned_name) REFERENCES campaign_captures (campaign_id, name)
);
CREATE INDEX bundles_entrypoint ON bundles (entrypoint, seq);
CREATE INDEX bundles_workload ON bundles (workload_id, seq);
CREATE INDEX bundles_implementation ON bundles (implementation_id, seq);
CREATE INDEX bundles_campaign ON bundles (campaign_id, planned_name);
CREATE INDEX bundles_signer ON bundles (signer_key_id);

-- Every declared file of a bundle (bundle.json itself is kept in bundles.manifest
-- and also as a blob, listed here with path 'bundle.json').
CREATE TABLE bundle_files (
    bundle_id  text NOT NULL REFERENCES bundles ON DELETE CASCADE,
    path       text NOT NULL,
    sha256     text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    bytes      bigint NOT NULL CHECK (bytes >= 0),
    PRIMARY KEY (bundle_id, path)
);
CREATE INDEX bundle_files_sha256 ON bundle_files (sha256);

-- Trace meta tags (BTreeMap<String,String>), for tag=k:v filters.
CREATE TABLE bundle_tags (
    bundle_id  text NOT NULL REFERENCES bundles ON DELETE CASCADE,
    key        text NOT NULL,
    value      text NOT NULL,
    PRIMARY KEY (bundle_id, key)
);
CREATE INDEX bundle_tags_kv ON bundle_tags (key, value);

-- Tensor statistics per label: sums and counts, so series/means need no blob reads.
CREATE TABLE bundle_tensor_stats (
    bundle_id       text NOT NULL REFERENCES bundles ON DELETE CASCADE,
    label           text NOT NULL,
    samples         bigint NOT NULL,
    sum_rms         double precision NOT NULL,
    sum_abs_max     double precision NOT NULL,
    sum_mean        double precision NOT NULL,
    sum_elements    numeric NOT NULL,
    sum_non_finite  numeric NOT NULL,
    PRIMARY KEY (bundle_id, label)
);

-- Upload attempts against planned campaign captures (campaign-status needs
-- verification_failed with its message even though the bundle was rejected).
CREATE TABLE upload_attempts (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    campaign_id   text NOT NULL,
    planned_name  text NOT NULL,
    state         text NOT NULL CHECK (state IN ('published','verification_failed')),
    bundle_id     text,
    run_id        text,
    code          text,
    message       text,
    host          text,
    device        text,
    attempted_at  timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (campaign_id, planned_name) REFERENCES campaign_captures (campaign_id, name) ON DELETE CASCADE
);
CREATE INDEX upload_attempts_capture ON upload_attempts (campaign_id, planned_name, id);

-- PostgreSQL-backed blob store (--blob-store pg): chunked bytea keyed by SHA-256.
CREATE TABLE pg_blobs (
    sha256      text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    bytes       bigint NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE pg_blob_chunks (
    sha256  text NOT NULL REFERENCES pg_blobs ON DELETE CASCADE,
    idx     integer NOT NULL,
    data    bytea NOT NULL,
    PRIMARY KEY (sha256, idx)
);
