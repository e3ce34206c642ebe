-- 0010_history: revisions, per-commit history, change points, alerts and
-- webhooks (issue 15). Forward-only. Numbered 0010 so that other 000x
-- migrations can land independently (migrate.c applies every missing one).

-- A series: one value of the comparison identity (minus implementation_id and
-- pair_id) plus entrypoint, phase and device, on one branch. series_key is the
-- canonical compact JSON of `identity` (fixed key order, written by the server).
-- params: per-series detection overrides {p_max, window, min_segment,
-- min_relative_change}; null fields take the defaults.
CREATE TABLE history_series (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    series_key  text NOT NULL,
    branch      text NOT NULL,
    identity    jsonb NOT NULL,
    params      jsonb NOT NULL DEFAULT '{}'::jsonb,
    dirty_from  integer,                 -- lowest point position not yet re-detected (null: clean)
    created_at  timestamptz NOT NULL DEFAULT now(),
    UNIQUE (series_key, branch)
);
CREATE INDEX history_series_workload ON history_series ((identity->>'workload_id'), branch);

-- The revision of a bundle, from its trace tags vcs.commit / vcs.branch /
-- vcs.commit_time (+ vcs.repository, ci.run_url). Only bundles with a single
-- closed measured region are indexed (they are the samples of the history).
CREATE TABLE bundle_revisions (
    bundle_id    text PRIMARY KEY REFERENCES bundles ON DELETE CASCADE,
    series_id    bigint NOT NULL REFERENCES history_series,
    commit_sha   text NOT NULL,
    branch       text NOT NULL,
    commit_time  timestamptz NOT NULL,
    repository   text,
    run_url      text
);
CREATE INDEX bundle_revisions_point ON bundle_revisions (series_id, commit_sha);
CREATE INDEX bundle_revisions_commit ON bundle_revisions (commit_sha text_pattern_ops);
CREATE INDEX bundle_revisions_branch ON bundle_revisions (branch, commit_time);

-- Points: one per (series, commit), in (commit_time, commit_sha) order; pos is
-- the 0-based rank (kept dense when an older commit arrives late).
CREATE TABLE history_points (
    series_id    bigint NOT NULL REFERENCES history_series,
    commit_sha   text NOT NULL,
    commit_time  timestamptz NOT NULL,
    pos          integer NOT NULL,
    PRIMARY KEY (series_id, commit_sha)
);
CREATE INDEX history_points_pos ON history_points (series_id, pos);

-- Change points of the outer_wall_time_ns history, as the incremental sweep
-- found them: pos = position of the first commit after the change, detected_pos
-- = position of the newest point when it was found (a change at a position ≥
-- detected_pos re-runs the sweep from there).
CREATE TABLE history_change_points (
    series_id       bigint NOT NULL REFERENCES history_series,
    metric          text NOT NULL,
    pos             integer NOT NULL,
    detected_pos    integer NOT NULL,
    commit_sha      text NOT NULL,
    before_commit   text NOT NULL,
    p_value         double precision NOT NULL,
    relative_change double precision NOT NULL,
    state           text NOT NULL CHECK (state IN ('confirmed', 'unconfirmed')),
    verdict         text NOT NULL,
    reasons         jsonb NOT NULL,
    alert_id        bigint,
    PRIMARY KEY (series_id, metric, pos)
);
CREATE INDEX history_change_points_detected ON history_change_points (series_id, metric, detected_pos);

-- Alerts: confirmed change points, with the confirming comparison's inputs.
CREATE TABLE alerts (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    series_id       bigint NOT NULL REFERENCES history_series,
    metric          text NOT NULL,
    before_commit   text NOT NULL,
    after_commit    text NOT NULL,
    delta_ns        double precision NOT NULL,
    relative_change double precision NOT NULL,
    ci_lower_ns     double precision NOT NULL,
    ci_upper_ns     double precision NOT NULL,
    baseline        text[] NOT NULL,
    candidate       text[] NOT NULL,
    state           text NOT NULL DEFAULT 'open'
                    CHECK (state IN ('open', 'acknowledged', 'false_positive', 'resolved')),
    note            text,
    updated_by      text,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    UNIQUE (series_id, metric, before_commit, after_commit)
);
CREATE INDEX alerts_state ON alerts (state, id);

-- Webhooks and their outbox. An event's body is written once (the exact bytes
-- every attempt sends); a delivery row per (webhook, event) is the outbox entry
-- the delivery thread works off, so nothing is lost across restarts.
CREATE TABLE webhooks (
    id          text PRIMARY KEY,
    url         text NOT NULL,
    secret      text NOT NULL,
    events      text[] NOT NULL CHECK (events <@ ARRAY['alert.opened','alert.updated']::text[]),
    created_at  timestamptz NOT NULL DEFAULT now(),
    deleted_at  timestamptz
);
CREATE TABLE webhook_events (
    id          text PRIMARY KEY,
    type        text NOT NULL,
    alert_id    bigint NOT NULL REFERENCES alerts,
    body        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE webhook_deliveries (
    webhook_id      text NOT NULL REFERENCES webhooks ON DELETE CASCADE,
    event_id        text NOT NULL REFERENCES webhook_events,
    state           text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'delivered', 'abandoned')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_status     integer,
    last_error      text,
    delivered_at    timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE state = 'pending';
