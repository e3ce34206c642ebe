-- 0003_span_path_tree: span-diff paths as a tree keyed by hash (issue 13,
-- finding 1). A span path's text grows with its depth, so storing the text of
-- every path made a deep chain cost O(depth²) in the index (a 20,000-deep chain:
-- gigabytes) and a long name overflowed the btree of the primary key. Now each
-- path is a node keyed by the SHA-256 of its text (sha256(convert_to(path,
-- 'UTF8')) finds a path given as text), with its parent node and last name;
-- the server computes the hash without building the text and rebuilds texts
-- only for answers.
-- Forward-only. The facts of existing bundles are dropped so that each is
-- recomputed once from its stored trace on first use (server/index_compare.c
-- backfills bundles without a bundle_facts row).

DELETE FROM bundle_facts;
DROP TABLE bundle_span_totals;

-- Every path node of a bundle (spans, ops, device clocks).
CREATE TABLE bundle_span_paths (
    bundle_id  text NOT NULL REFERENCES bundles ON DELETE CASCADE,
    hash       bytea NOT NULL CHECK (length(hash) = 32),   -- SHA-256 of the path text
    parent     bytea CHECK (length(parent) = 32),   -- null at a root
    name       text NOT NULL,
    PRIMARY KEY (bundle_id, hash)
);

-- Per bundle, the total of every span path (closed spans), op path and device
-- clock (busy time), as in 0002, keyed by the node hash.
CREATE TABLE bundle_span_totals (
    bundle_id    text NOT NULL REFERENCES bundles ON DELETE CASCADE,
    kind         text NOT NULL CHECK (kind IN ('span', 'op', 'device')),
    path_hash    bytea NOT NULL CHECK (length(path_hash) = 32),
    total_ns     bigint NOT NULL CHECK (total_ns >= 0),
    occurrences  bigint NOT NULL CHECK (occurrences >= 0),
    PRIMARY KEY (bundle_id, kind, path_hash)
);
