/* comparison_runs.c — see comparison_runs.h. */
#include "comparison_runs.h"

#include <stdio.h>
#include <string.h>

#include "base/json.h"

void ts_run_default(ts_run *r, const char *run_id, const char *impl, uint64_t duration) {
    memset(r, 0, sizeof *r);
    snprintf(r->run_id, sizeof r->run_id, "%s", run_id);
    r->entrypoint = "train";
    r->phase = "train";
    r->device = "cpu";
    r->timing_mode = "host";
    r->scope = "production_equivalent";
    r->operations = "complete";
    r->capture_step = 3;
    r->warmup_steps = 2;
    r->has_identity = true;
    r->impl_id = impl;
    r->workload_id = "wl";
    r->physical_batch = 8;
    r->measured = 1;
    r->duration_ns = duration;
}

static void ts_json_str(cg_buf *b, const char *s) {
    cg_json_write_str(b, s, strlen(s));
}

void ts_run_text(cg_buf *b, const ts_run *r) {
    cg_buf_puts(b, "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":");
    ts_json_str(b, r->run_id);
    cg_buf_printf(b, ",\"correlation_id\":\"%s/update-%llu\",\"entrypoint\":", r->entrypoint,
                  (unsigned long long)r->capture_step);
    ts_json_str(b, r->entrypoint);
    cg_buf_printf(b,
                  ",\"phase\":\"%s\",\"timestamp\":\"2026-11-30T00:00:00.000Z\",\"capture_step\":%llu,"
                  "\"warmup_steps\":%llu,\"device\":\"%s\",\"measured_region_device_synchronized\":%s,"
                  "\"timing_mode\":\"%s\",\"capture_contract\":{\"measurement_scope\":\"%s\","
                  "\"operations\":\"%s\",\"tensors\":\"none\",\"gradients\":\"none\",\"logical_memory\":\"none\","
                  "\"physical_memory\":\"none\",\"device_timing\":\"none\",\"required_semantic_labels\":[]}",
                  r->phase, (unsigned long long)r->capture_step, (unsigned long long)r->warmup_steps, r->device,
                  r->sync ? "true" : "false", r->timing_mode, r->scope, r->operations);
    if (r->has_identity) {
        cg_buf_puts(b, ",\"comparison_identity\":{");
        if (r->impl_id) {
            cg_buf_puts(b, "\"implementation_id\":");
            ts_json_str(b, r->impl_id);
            cg_buf_puts(b, ",");
        }
        cg_buf_puts(b, "\"workload_id\":");
        ts_json_str(b, r->workload_id);
        cg_buf_printf(b,
                      ",\"model_id\":\"m\",\"config_id\":\"c\",\"data_id\":\"d\",\"seed_policy\":\"fixed\","
                      "\"physical_batch\":%llu,\"accumulation_steps\":1,\"precision\":\"f32\","
                      "\"device_state\":\"idle\"",
                      (unsigned long long)r->physical_batch);
        if (r->pair_id) {
            cg_buf_puts(b, ",\"pair_id\":");
            ts_json_str(b, r->pair_id);
        }
        cg_buf_puts(b, "}");
    }
    cg_buf_puts(b, ",\"tags\":{}}\n");
    uint64_t t = 10;
    cg_buf_printf(b, "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"%s\",\"start_ns\":0,\"span_kind\":\"function\"}\n",
                  r->entrypoint);
    int sid = 2;
    for (int i = 0; i < r->measured; i++, sid++) {
        cg_buf_printf(b,
                      "{\"kind\":\"span_start\",\"id\":\"s%d\",\"parent_id\":\"s1\",\"name\":\"step\",\"start_ns\":%llu,"
                      "\"span_kind\":\"function\",\"measured\":true}\n",
                      sid, (unsigned long long)t);
        cg_buf_printf(b, "{\"kind\":\"span_end\",\"id\":\"s%d\",\"duration_ns\":%llu}\n", sid,
                      (unsigned long long)r->duration_ns);
        t += r->duration_ns + 1;
    }
    if (r->open_measured) {
        cg_buf_printf(b,
                      "{\"kind\":\"span_start\",\"id\":\"s%d\",\"parent_id\":\"s1\",\"name\":\"open\",\"start_ns\":%llu,"
                      "\"span_kind\":\"function\",\"measured\":true}\n",
                      sid, (unsigned long long)t);
    }
    for (size_t i = 0; i < r->n_ts; i++) {
        cg_buf_puts(b, "{\"kind\":\"tensor_stats\",\"span_id\":\"s1\",\"label\":");
        ts_json_str(b, r->ts[i].label);
        cg_buf_printf(b, ",\"shape\":[4],\"dtype\":\"f32\",\"elements\":4,\"non_finite\":%llu,\"rms\":",
                      (unsigned long long)r->ts[i].non_finite);
        cg_json_write_f64(b, r->ts[i].rms);
        cg_buf_puts(b, ",\"abs_max\":");
        cg_json_write_f64(b, r->ts[i].abs_max);
        cg_buf_puts(b, ",\"mean\":0.0}\n");
    }
    for (size_t i = 0; i < r->n_grads; i++) {
        const ts_grad *g = &r->grads[i];
        cg_buf_printf(b, "{\"kind\":\"gradient\",\"event_id\":\"gradient-%zu\",\"root\":\"%s\",\"key\":\"%s\","
                         "\"state\":\"%s\"",
                      i + 1, g->root, g->key, g->state);
        if (!strcmp(g->state, "present") || !strcmp(g->state, "zero")) {
            cg_buf_puts(b, ",\"norm\":");
            cg_json_write_f64(b, g->norm);
        }
        cg_buf_puts(b, "}\n");
    }
    cg_buf_printf(b, "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":%llu}\n", (unsigned long long)(t + 5));
    if (r->failed_reason) {
        cg_buf_printf(b, "{\"kind\":\"terminal\",\"outcome\":\"failed\",\"timestamp_ns\":%llu,\"reason\":",
                      (unsigned long long)(t + 10));
        ts_json_str(b, r->failed_reason);
        cg_buf_puts(b, "}\n");
    } else {
        cg_buf_printf(b, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%llu}\n",
                      (unsigned long long)(t + 10));
    }
}

int ts_write_bundle(const char *dir, const char *trace, size_t len, const char *run_id) {
    cg_error err;
    if (cg_mkdir_p(dir, &err) != 0) return -1;
    static const char evidence[] = "{}\n";
    char p1[4096], p2[4096], p3[4096], h1[65], h2[65];
    snprintf(p1, sizeof p1, "%s/evidence.json", dir);
    snprintf(p2, sizeof p2, "%s/trace.jsonl", dir);
    snprintf(p3, sizeof p3, "%s/bundle.json", dir);
    if (cg_write_file(p1, evidence, sizeof evidence - 1, false, &err) != 0 ||
        cg_write_file(p2, trace, len, false, &err) != 0)
        return -1;
    cg_sha256_hex(evidence, sizeof evidence - 1, h1);
    cg_sha256_hex(trace, len, h2);
    cg_bundle_file files[2] = {{"evidence.json", 13, sizeof evidence - 1, h1}, {"trace.jsonl", 11, len, h2}};
    cg_bundle_manifest m = {"candle-graph/bundle/1", run_id, strlen(run_id), files, 2};
    cg_buf b = CG_BUF_INIT;
    cg_bundle_manifest_write(&b, &m);
    int rc = cg_write_file(p3, b.data, b.len, false, &err);
    cg_buf_free(&b);
    return rc;
}

int ts_write_run_bundle(const char *dir, const ts_run *r) {
    cg_buf b = CG_BUF_INIT;
    ts_run_text(&b, r);
    int rc = ts_write_bundle(dir, b.data, b.len, r->run_id);
    cg_buf_free(&b);
    return rc;
}
int ts_cohort_row(cg_arena *a, const ts_run *r, cg_cohort_row *out, cg_error *err) {
    cg_buf b = CG_BUF_INIT;
    ts_run_text(&b, r);
    cg_trace *t = cg_trace_read_mem(b.data, b.len, r->run_id, NULL, err);
    cg_buf_free(&b);
    if (!t) return cg_err_context(err, "trace %s", r->run_id);
    cg_health h;
    memset(&h, 0, sizeof h);
    h.structurally_valid = true;
    h.capture_complete = true;
    char hex[65];
    cg_sha256_hex(r->run_id, strlen(r->run_id), hex);
    cg_cohort_receipt rc = {r->run_id, hex};
    cg_cohort_row_from_trace(a, t, &h, &rc, out);
    cg_trace_free(t);
    return 0;
}

int ts_cohorts_build(ts_cohorts *k, cg_error *err) {
    for (size_t i = 0; i < k->nb; i++)
        if (ts_cohort_row(&k->a, &k->b[i], &k->rb[i], err) != 0) return -1;
    for (size_t i = 0; i < k->nc; i++)
        if (ts_cohort_row(&k->a, &k->c[i], &k->rc[i], err) != 0) return -1;
    return 0;
}
