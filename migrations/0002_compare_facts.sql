-- 0002_compare_facts: per-bundle facts for comparison, campaign status, series
-- and span diffs (issue 7), written in the ingest transaction so those routes
-- never re-read traces. Forward-only. Bundles ingested before this migration
-- have no row here; the server computes it once from the stored trace the first
-- time such a bundle is used (server/index_compare.c).

-- One row per bundle.
--   cohort_row   : candle-graph/cohort-row/1 compact JSON (lib/comparison/cohort.h),
--                  receipt = {run_id of bundle.json, manifest_sha256 = bundle id}
--   series_point : the series point JSON (lib/campaign/series.h); its `bundle`
--                  is replaced by the name the request uses
--   terminal_reason : trace terminal reason (campaign-status failed_run), null when absent
CREATE TABLE bundle_facts (
    bundle_id        text PRIMARY KEY REFERENCES bundles ON DELETE CASCADE,
    cohort_row       text NOT NULL,
    series_point     text NOT NULL,
    terminal_reason  text
);

-- Per bundle, the total duration of every span name path (kind 'span'), every
-- op under its span path (kind 'op', path = span path + '/' + op name) and the
-- busy time of every device clock (kind 'device', path = 'device:<device>/<clock_id>').
-- total_ns sums the closed occurrences in the run (saturating at 2^63-1);
-- occurrences counts them.
CREATE TABLE bundle_span_totals (
    bundle_id    text NOT NULL REFERENCES bundles ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('span', 'op', 'device')),
    path         text NOT NULL,
    total_ns     bigint NOT NULL CHECK (total_ns >= 0),
    occurrences  bigint NOT NULL CHECK (occurrences >= 0),
    PRIMARY KEY (bundle_id, kind, path)
);
