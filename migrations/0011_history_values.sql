-- 0011_history_values: each revision row keeps its run's outer wall time (a copy
-- of bundles.measured_ns, written in the same ingest transaction), and the
-- point index covers it, so GET /history and the change-point sweep read
-- narrow index entries instead of one wide bundles row per run (issue 15,
-- bench/history). Forward-only; existing rows are filled from bundles.
ALTER TABLE bundle_revisions ADD COLUMN measured_ns numeric(20,0);
UPDATE bundle_revisions r SET measured_ns = b.measured_ns FROM bundles b WHERE b.id = r.bundle_id;
ALTER TABLE bundle_revisions ALTER COLUMN measured_ns SET NOT NULL;
DROP INDEX bundle_revisions_point;
CREATE INDEX bundle_revisions_point ON bundle_revisions (series_id, commit_sha) INCLUDE (bundle_id, measured_ns);
