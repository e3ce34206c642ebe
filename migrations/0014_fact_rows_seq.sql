-- 0014_fact_rows_seq: the bulk fact tables (bundle_span_paths,
-- bundle_span_totals, bundle_tensor_stats) name their bundle by bundles.seq
-- (bigint, 8 bytes) instead of its 64-character id (65 bytes a row and as
-- much again in every primary-key entry). Measured on a 5M-record trace's
-- bundle: about a million path rows and a million total rows took 293 + 271
-- MB against 89 MB of blobs; a million path rows keyed by seq 177 MB instead
-- of 295 MB, and their COPY a fifth faster (issue 14).
--
-- The tables are rebuilt, fixed-width columns first (no alignment padding),
-- the rows of a bundle that no longer exists dropped on the way (0013's
-- trigger leaves none). Readers join through bundles (id -> seq, its unique
-- index). The guarantees of 0013 stay: rows go in only in the transaction
-- that inserted the bundles row or its bundle_facts row (which keeps its
-- foreign key), and deleting a bundles row deletes its rows (the trigger,
-- now by seq, each DELETE a prefix of the primary key). Forward-only.

CREATE TABLE bundle_span_paths_seq (
    bundle_seq bigint NOT NULL,
    hash       bytea NOT NULL CHECK (length(hash) = 32),   -- SHA-256 of the path text
    parent     bytea CHECK (length(parent) = 32),          -- null at a root
    name       text NOT NULL
);
INSERT INTO bundle_span_paths_seq (bundle_seq, hash, parent, name)
    SELECT b.seq, p.hash, p.parent, p.name FROM bundle_span_paths p JOIN bundles b ON b.id = p.bundle_id
    ORDER BY b.seq, p.hash;
DROP TABLE bundle_span_paths;
ALTER TABLE bundle_span_paths_seq RENAME TO bundle_span_paths;
ALTER TABLE bundle_span_paths ADD PRIMARY KEY (bundle_seq, hash);

CREATE TABLE bundle_span_totals_seq (
    bundle_seq   bigint NOT NULL,
    total_ns     bigint NOT NULL CHECK (total_ns >= 0),
    occurrences  bigint NOT NULL CHECK (occurrences >= 0),
    kind         text NOT NULL CHECK (kind IN ('span', 'op', 'device')),
    path_hash    bytea NOT NULL CHECK (length(path_hash) = 32)
);
INSERT INTO bundle_span_totals_seq (bundle_seq, total_ns, occurrences, kind, path_hash)
    SELECT b.seq, t.total_ns, t.occurrences, t.kind, t.path_hash FROM bundle_span_totals t
    JOIN bundles b ON b.id = t.bundle_id ORDER BY b.seq, t.kind COLLATE "C", t.path_hash;
DROP TABLE bundle_span_totals;
ALTER TABLE bundle_span_totals_seq RENAME TO bundle_span_totals;
ALTER TABLE bundle_span_totals ADD PRIMARY KEY (bundle_seq, kind, path_hash);

CREATE TABLE bundle_tensor_stats_seq (
    bundle_seq      bigint NOT NULL,
    samples         bigint NOT NULL,
    sum_rms         double precision NOT NULL,
    sum_abs_max     double precision NOT NULL,
    sum_mean        double precision NOT NULL,
    label           text NOT NULL,
    sum_elements    numeric NOT NULL,
    sum_non_finite  numeric NOT NULL
);
INSERT INTO bundle_tensor_stats_seq (bundle_seq, samples, sum_rms, sum_abs_max, sum_mean, label, sum_elements,
                                     sum_non_finite)
    SELECT b.seq, s.samples, s.sum_rms, s.sum_abs_max, s.sum_mean, s.label, s.sum_elements, s.sum_non_finite
    FROM bundle_tensor_stats s JOIN bundles b ON b.id = s.bundle_id ORDER BY b.seq, s.label;
DROP TABLE bundle_tensor_stats;
ALTER TABLE bundle_tensor_stats_seq RENAME TO bundle_tensor_stats;
ALTER TABLE bundle_tensor_stats ADD PRIMARY KEY (bundle_seq, label);

CREATE OR REPLACE FUNCTION cg_delete_bundle_rows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM bundle_span_paths WHERE bundle_seq = OLD.seq;
    DELETE FROM bundle_span_totals WHERE bundle_seq = OLD.seq;
    DELETE FROM bundle_tensor_stats WHERE bundle_seq = OLD.seq;
    RETURN OLD;
END
$$;
