-- 0012_history_version: a version per series, bumped by every write to its
-- points (the ingest revision index) and to its change points (the sweep).
-- The post-upload change-point sweep reads the series and computes with no
-- database connection held, then writes in a short transaction under the
-- series lock that first compares the version with the one it read; when the
-- series moved in between it recomputes (issue 13). Forward-only.
ALTER TABLE history_series ADD COLUMN version bigint NOT NULL DEFAULT 0;
