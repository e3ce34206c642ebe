-- 0013_fact_rows_bulk: the per-bundle rows an ingest writes in bulk
-- (bundle_span_paths, bundle_span_totals, bundle_tensor_stats: about a
-- million each for a 5M-record trace) no longer carry a row-level foreign key
-- to bundles (issue 14). The key's check ran once per inserted row (an index
-- probe of bundles and a row lock on the same bundle each time): measured on
-- a million sorted span-path rows it was 60% of the COPY (14.5 s with the key,
-- 5.5 s without), and the two COPYs were two thirds of a 5M ingest's commit.
--
-- The same guarantees hold without it:
-- * a referenced bundle exists and stays while its rows go in: every writer
--   inserts these rows in a transaction that first inserted the bundles row
--   (ingest) or the bundle_facts row (the facts backfill), and bundle_facts
--   keeps its foreign key, whose check locks the bundles row FOR KEY SHARE
--   until the transaction ends (server/store_facts.c, store_ingest.c);
-- * deleting a bundles row deletes its rows, as ON DELETE CASCADE did, through
--   the trigger below (each DELETE uses the primary key's bundle_id prefix).
-- Forward-only.

ALTER TABLE bundle_span_paths DROP CONSTRAINT bundle_span_paths_bundle_id_fkey;
ALTER TABLE bundle_span_totals DROP CONSTRAINT bundle_span_totals_bundle_id_fkey;
ALTER TABLE bundle_tensor_stats DROP CONSTRAINT bundle_tensor_stats_bundle_id_fkey;

CREATE FUNCTION cg_delete_bundle_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM bundle_span_paths WHERE bundle_id = OLD.id;
    DELETE FROM bundle_span_totals WHERE bundle_id = OLD.id;
    DELETE FROM bundle_tensor_stats WHERE bundle_id = OLD.id;
    RETURN OLD;
END
$$;

CREATE TRIGGER bundles_delete_rows AFTER DELETE ON bundles
    FOR EACH ROW EXECUTE FUNCTION cg_delete_bundle_rows();
