-- 0004_u64_columns: trace fields that are u64 in the crate (capture_step,
-- warmup_steps, the identity's physical_batch and accumulation_steps, the
-- measured span's duration) are stored exactly as numeric(20,0) instead of
-- bigint, whose range ends at 2^63-1: a value ≥ 2^63 made the ingest
-- transaction fail and was answered 503 (issue 13, finding 8). Forward-only.
ALTER TABLE bundles
    ALTER COLUMN capture_step TYPE numeric(20,0),
    ALTER COLUMN warmup_steps TYPE numeric(20,0),
    ALTER COLUMN physical_batch TYPE numeric(20,0),
    ALTER COLUMN accumulation_steps TYPE numeric(20,0),
    ALTER COLUMN measured_ns TYPE numeric(20,0);
