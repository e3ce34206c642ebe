/* ingest.c — POST /bundles, the pipeline of ARCHITECTURE.md step by step:
 * (1–2 happen in http.c: auth, body streamed to a temp file under limits)
 * 3. unpack tar / tar.zst with the library's hardened unpacker into a private
 *    staging dir; 4. bundle/1 verification (upstream messages), run-ID binding,
 *    semantic verification (evidence/4 rederived and compared as JSON values);
 * 5. signature against the registered, unrevoked key; 6. blobs into the store,
 *    then one transaction for the bundle row and its derived index;
 * 7. 201 new / 200 identical / 409 run-ID conflict; 8. staging always removed.
 * Nothing becomes visible before the commit; blobs stored before a failed commit
 * are orphans the janitor collects after its grace period. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "bundle/archive.h"
#include "bundle/manifest.h"
#include "bundle/opened.h"
#include "bundle/semantic.h"
#include "bundle/signature.h"
#include "bundle/verify.h"
#include "analysis/evidence.h"
#include "srv_compare.h"
#include "srv_derived.h"
#include "srv_history.h"
#include "srv_index.h"
#include "srv_store.h"
#include "srv_timeline.h"
#include "srv_views.h"
#include "srv_web.h"

#define INGEST_SCHEMA "candle-graph/ingest/1"

typedef struct ingest {
    srv_req *r;
    char stage[PATH_MAX];  /* <data>/staging/<request id> */
    char root[PATH_MAX];   /* <stage>/bundle */
    const char *campaign, *planned;
    cg_trace *trace;
    cg_health verdict;       /* the trace's health verdicts (only these fields are set) */
    const char *health_json; /* its health as the index stores it, in r->arena; NULL until known */
    srv_vw_index *views;     /* the dashboard views built from the semantic step's trace and evidence */
    cg_device_clock_timing *clocks; /* the rederived evidence's device clock timings (facts), in r->arena */
    size_t n_clocks;
    bool has_clocks;
    int heavy;               /* the heavy-build gate (srv_derived.h), held from the parse to release_trace */
    cg_bundle_handle bundle; /* the staged bundle, opened once (bundle/opened.h) */
    bool opened;
    const char *manifest;    /* the bytes of bundle.json (owned by the handle) */
    size_t manifest_len;
    double t0;
    double mark;             /* when the current stage began */
    srv_ingest_stages st;    /* time and resident memory per stage */
    char id[65];            /* bundle id once the manifest is read (for logs) */
    const char *key_id;     /* signer key id once known (for logs) */
} ingest;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Ends stage s (begun at the end of the one before): its time, the resident
 * memory it leaves and the process's peak so far (the stage whose peak is
 * higher than the one before raised it). */
static void stage_end(ingest *g, srv_ingest_stage s) {
    double t = now_s();
    g->st.seconds[s] += t - g->mark;
    srv_process_memory(&g->st.rss_bytes[s], &g->st.peak_bytes[s]);
    g->mark = t;
}

/* Records a failed attempt against a planned campaign capture (campaign-status
 * shows verification_failed with the message); best effort. */
static void record_failed_attempt(ingest *g, cg_reason reason, const char *message) {
    if (!g->campaign || srv_reason_status(reason) >= 500) return;
    const char *code = cg_reason_code(reason);
    srv_attempt at = {g->campaign, g->planned, g->trace ? g->trace->run.run_id : NULL,
                      g->trace ? srv_trace_host(g->trace) : NULL, g->trace ? g->trace->run.device : NULL};
    srv_store_attempt_failed(g->r->s->pool, &at, code, message);
}

/* Upstream messages name paths as given to the verifier; show them relative to
 * the bundle root so no server path leaks into answers. */
static const char *relative_msg(ingest *g, const char *msg) {
    size_t rl = strlen(g->root);
    if (rl == 0 || !strstr(msg, g->root)) return msg;
    cg_buf b = CG_BUF_INIT;
    const char *p = msg, *hit;
    while ((hit = strstr(p, g->root))) {
        cg_buf_append(&b, p, (size_t)(hit - p));
        p = hit + rl;
        if (*p == '/') p++;
        else cg_buf_putc(&b, '.');
    }
    cg_buf_puts(&b, p);
    const char *out = cg_arena_strdup(&g->r->arena, b.data);
    cg_buf_free(&b);
    return out;
}

static enum MHD_Result reject(ingest *g, cg_reason reason, cg_jv *detail, const char *msg) {
    msg = relative_msg(g, msg);
    const char *code = cg_reason_code(reason);
    srv_metrics_ingest(code, g->r->body_len, now_s() - g->t0);
    record_failed_attempt(g, reason, msg);
    srv_log("info", "upload rejected", "request_id", g->r->id, "code", code, "reason", msg, "bundle_id",
            g->id[0] ? g->id : NULL, "key_id", g->key_id, NULL);
    return srv_fail(g->r, reason, detail, "%s", msg);
}

/* A failed library step: refused with the reason it was detected with, or a
 * local failure (no reason) answered 503. */
static enum MHD_Result reject_err(ingest *g, const cg_error *err, cg_jv *detail) {
    if (err->reason == CG_R_NONE) return srv_fail_error(g->r, err, NULL); /* 503, or 507 when full */
    return reject(g, err->reason, detail, err->msg);
}

static cg_jv *detail_kv(cg_arena *a, const char *k1, cg_jv *v1, const char *k2, cg_jv *v2) {
    cg_jv *d = cg_jv_obj(a);
    if (k1) cg_jv_obj_put(a, d, k1, v1);
    if (k2) cg_jv_obj_put(a, d, k2, v2);
    return d;
}

static int64_t lock_key(const char *hex) {
    unsigned char b[8];
    for (int i = 0; i < 8; i++) {
        unsigned v;
        sscanf(hex + 2 * i, "%2x", &v);
        b[i] = (unsigned char)v;
    }
    int64_t k;
    memcpy(&k, b, sizeof k);
    return k;
}

/* Validates ?campaign=&planned= against the planned captures. */
static enum MHD_Result check_campaign(ingest *g, bool *answered) {
    srv_req *r = g->r;
    *answered = false;
    g->campaign = srv_query(r, "campaign");
    g->planned = srv_query(r, "planned");
    if (!g->campaign && !g->planned) return MHD_YES;
    *answered = true;
    if (!g->campaign || !g->planned || !*g->campaign || !*g->planned) {
        g->campaign = g->planned = NULL;
        return srv_fail(r, CG_R_INVALID_PARAMETER, NULL, "campaign and planned must be given together");
    }
    cg_error err = {0};
    int n = srv_store_capture_exists(r->s->pool, g->campaign, g->planned, &err);
    if (n < 0) return srv_fail_unavailable(r, &err);
    if (n == 0) {
        const char *cid = g->campaign, *pl = g->planned;
        g->campaign = g->planned = NULL;
        return srv_fail(r, CG_R_NOT_FOUND, NULL, "campaign %s has no planned capture %s", cid, pl);
    }
    *answered = false;
    return MHD_YES;
}

/* Step 5: the signature header. Fills sig_json/key_id, or answers. */
static bool check_signature(ingest *g, const char **sig_json, const char **key_id, enum MHD_Result *res) {
    srv_req *r = g->r;
    cg_arena *a = &r->arena;
    *sig_json = *key_id = NULL;
    const char *hdr = srv_header(r, "Candle-Graph-Signature");
    if (!hdr || !*hdr) {
        if (!r->s->cfg.require_signature) return true;
        *res = reject(g, CG_R_SIGNATURE_MISSING, NULL,
                      "this server requires a candle-graph/signature/1 signature (Candle-Graph-Signature header)");
        return false;
    }
    size_t hl = strlen(hdr), n = 0;
    char *raw = cg_arena_alloc(a, hl + 1);
    if (hl > 64 * 1024 ||
        sodium_base642bin((unsigned char *)raw, hl, hdr, hl, " \t", &n, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
        *res = reject(g, CG_R_MALFORMED_SIGNATURE, NULL, "Candle-Graph-Signature is not valid base64");
        return false;
    }
    raw[n] = 0;
    cg_error err = {0};
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 8;
    cg_jv *doc = cg_json_parse(a, raw, n, &lim, &err);
    const char *kid = doc ? cg_jv_as_str(cg_jv_get(doc, "key_id")) : NULL;
    if (!doc || doc->type != CG_JOBJ || !kid) {
        *res = reject(g, CG_R_MALFORMED_SIGNATURE, NULL,
                      doc ? "signature has no key_id" : "signature is not a candle-graph/signature/1 JSON document");
        return false;
    }
    unsigned char pk[32];
    bool pk_ok = false, revoked = false;
    int found = srv_store_signer_key(r->s->pool, kid, pk, &pk_ok, &revoked, &err);
    if (found < 0) {
        *res = srv_fail_unavailable(r, &err);
        return false;
    }
    g->key_id = kid;
    cg_jv *d = detail_kv(a, "key_id", cg_jv_str(a, kid), NULL, NULL);
    if (found == 0) {
        *res = reject(g, CG_R_SIGNER_UNKNOWN, d, "the signing key is not registered on this server");
        return false;
    }
    if (revoked) {
        *res = reject(g, CG_R_SIGNER_REVOKED, d, "the signing key has been revoked");
        return false;
    }
    cg_signature_info info;
    if (!pk_ok || cg_sig_verify_manifest(g->manifest, g->manifest_len, raw, n, pk, &info, &err) < 0) {
        *res = reject(g, pk_ok && err.reason ? err.reason : CG_R_SIGNATURE_INVALID, d, err.msg);
        return false;
    }
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, doc, false);
    *sig_json = cg_arena_strndup(a, b.data, b.len);
    cg_buf_free(&b);
    *key_id = cg_arena_strdup(a, info.key_id);
    return true;
}

static cg_jv *links(cg_arena *a, const char *id) {
    static const char *const names[] = {"self", "files", "evidence", "trace", "graph", "viewer", "archive"};
    static const char *const suffix[] = {"", "/files/", "/evidence", "/files/trace.jsonl", "/graph", "/viewer",
                                         "/archive"};
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; i < 7; i++) cg_jv_obj_put(a, o, names[i], cg_jv_str(a, cg_arena_printf(a, "/bundles/%s%s", id, suffix[i])));
    return o;
}

/* Offset of the first \u0000 escape in a JSON text read from fd (an escape,
 * not an escaped backslash followed by "u0000"), -1 when none, -2 on a read
 * error. */
static int64_t find_nul_escape(int fd) {
    enum { BUF = 1 << 20 };
    char *buf = malloc(BUF);
    if (!buf) return -2;
    static const char pat[] = "u0000";
    int esc = 0, m = 0;
    int64_t base = 0, hit = -1;
    ssize_t n;
    while (hit < 0 && (n = read(fd, buf, BUF)) > 0) {
        size_t i = 0;
        while (i < (size_t)n) {
            char c = buf[i];
            if (m) {
                if (c == pat[m]) {
                    if (++m == 5) {
                        hit = base + (int64_t)i;
                        break;
                    }
                    i++;
                    continue;
                }
                m = 0;
            }
            if (esc) {
                esc = 0;
                m = c == 'u';
                i++;
                continue;
            }
            if (c == '\\') {
                esc = 1;
                i++;
                continue;
            }
            const char *p = memchr(buf + i, '\\', (size_t)n - i);
            i = p ? (size_t)(p - buf) : (size_t)n;
        }
        base += n;
    }
    if (n < 0 && hit < 0) hit = -2;
    cg_free(buf);
    return hit;
}

/* 1-based line of byte offset off in fd. */
static uint64_t line_of(int fd, int64_t off) {
    char buf[65536];
    uint64_t line = 1;
    int64_t pos = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) return 0;
    while (pos < off) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0) break;
        for (ssize_t i = 0; i < n && pos < off; i++, pos++) line += buf[i] == '\n';
    }
    return line;
}

/* Rules the server adds to the bundle/1 checks (issue 13): a run_id that is
 * empty or blank cannot identify a run, and a NUL inside a trace string would
 * be stored cut at the NUL (the trace model keeps C strings), so both are
 * refused here rather than stored differently from the uploaded bytes. */
static bool check_ingest_rules(ingest *g, const char *run_id, enum MHD_Result *res) {
    cg_arena *a = &g->r->arena;
    size_t k = 0;
    while (run_id[k] == ' ' || run_id[k] == '\t' || run_id[k] == '\n' || run_id[k] == '\r') k++;
    if (!run_id[k]) {
        *res = reject(g, CG_R_INVALID_RUN_ID, detail_kv(a, "path", cg_jv_str(a, "bundle.json"), NULL, NULL),
                      "the bundle's run_id is empty");
        return false;
    }
    int fd = cg_bundle_handle_open(&g->bundle, "trace.jsonl", O_RDONLY);
    if (fd < 0) return true; /* a bundle without a trace fails semantic verification next */
    int64_t off = find_nul_escape(fd);
    uint64_t line = off >= 0 ? line_of(fd, off) : 0;
    close(fd);
    if (off < 0) return true;
    *res = reject(g, CG_R_TRACE_INVALID, detail_kv(a, "path", cg_jv_str(a, "trace.jsonl"), "line", cg_jv_u64(a, line)),
                  cg_arena_printf(a,
                                  "trace.jsonl line %llu: a string contains NUL (\\u0000), which traces must not "
                                  "carry",
                                  (unsigned long long)line));
    return false;
}

/* The pg blob store puts the staged files inside the publishing transaction. */
typedef struct pg_blobs_ctx {
    ingest *g;
    const srv_file_row *files;
    size_t n;
} pg_blobs_ctx;

/* Puts staged file `path` into the blob store through a descriptor opened
 * beneath the bundle's directory (no path resolved through the filesystem). */
static int put_blob(ingest *g, PGconn *c, const srv_file_row *f, bool *enospc, cg_error *err) {
    *enospc = false;
    int fd = cg_bundle_handle_open(&g->bundle, f->path, O_RDONLY | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size != f->bytes)) {
        close(fd);
        return cg_err_set(err, CG_EIO, "staged %s changed after verification", f->path);
    }
    if (fd < 0) return cg_err_set(err, CG_EIO, "open staged %s: %s", f->path, strerror(errno));
    int rc = srv_blob_put_fd(&g->r->s->blobs, c, fd, f->path, f->sha256, f->bytes, enospc, err);
    close(fd);
    return rc;
}

static int put_pg_blobs(void *ctx, PGconn *c, cg_error *err) {
    pg_blobs_ctx *p = ctx;
    bool enospc;
    for (size_t i = 0; i < p->n; i++)
        if (put_blob(p->g, c, &p->files[i], &enospc, err) < 0) return -1;
    return 0;
}

/* The ingest transaction's statement timeout: the server's, once more per
 * 512 MiB of decoded bundle (its index, facts and history rows grow with the
 * trace; a 5M-record bundle of 3.9 GB gets 8x, 30 s -> 240 s). */
static uint64_t tx_timeout_ms(const srv_server *s, uint64_t decoded) {
    return (uint64_t)s->cfg.statement_timeout_ms * (1 + decoded / ((uint64_t)512 << 20));
}

/* Frees the parsed trace and the indexes not saved, returns the
 * heap to the system and opens the heavy-build gate. */
static void release_trace(ingest *g) {
    cg_trace_free(g->trace);
    g->trace = NULL;
    srv_vw_free(g->views);
    g->views = NULL;
    srv_memory_trim();
    srv_heavy_leave(g->heavy);
    g->heavy = 0;
}

/* The trace's health as the index and the facts need it: its JSON text and
 * verdicts, from h (the rederived evidence's, cg_health_analyze of the same
 * trace) or, when NULL, analyzed here and freed at once. */
static void set_health(ingest *g, const cg_health *h) {
    cg_health *own = h ? NULL : cg_health_analyze(g->trace);
    if (own) h = own;
    g->health_json = srv_index_health_json(&g->r->arena, h);
    g->verdict = (cg_health){.structurally_valid = h->structurally_valid, .capture_complete = h->capture_complete};
    if (own) cg_health_free(own);
}

/* The semantic step's hook: the dashboard view index from the trace and the
 * rederived evidence it holds (kept unsaved until the bundle is published),
 * and the health the evidence computed (no second analysis). */
static int build_views(void *ctx, const cg_trace *t, const cg_evidence *e, cg_error *err) {
    ingest *g = ctx;
    if (!e) return 0;
    (void)err;
    g->views = srv_views_build_evidence(g->id, t, e); /* its span and op rows: after the evidence is freed */
    /* the facts' device totals from the same profile (no second timing analysis) */
    g->n_clocks = e->timing->n_device_clocks;
    g->clocks = cg_arena_alloc(&g->r->arena, (g->n_clocks + 1) * sizeof *g->clocks);
    if (g->n_clocks) memcpy(g->clocks, e->timing->device_clocks, g->n_clocks * sizeof *g->clocks);
    g->has_clocks = true;
    set_health(g, e->health);
    return 0;
}

/* Bytes of trace.jsonl as the manifest declares them (0 when it lists none). */
static uint64_t trace_bytes(const cg_bundle_manifest *m) {
    for (size_t i = 0; i < m->n_files; i++)
        if (!strcmp(m->files[i].path, "trace.jsonl")) return m->files[i].bytes;
    return 0;
}

static enum MHD_Result run(ingest *g) {
    srv_req *r = g->r;
    srv_server *s = r->s;
    cg_arena *a = &r->arena;
    cg_error err = {0};
    bool answered;
    enum MHD_Result res = check_campaign(g, &answered);
    if (answered) return res;

    /* 3. unpack */
    if (snprintf(g->stage, sizeof g->stage, "%s/staging/%s", s->cfg.data_dir, r->id) >= (int)sizeof g->stage ||
        snprintf(g->root, sizeof g->root, "%s/bundle", g->stage) >= (int)sizeof g->root) {
        g->stage[0] = 0;
        return srv_fail(r, CG_R_UNAVAILABLE, NULL, "data dir path too long");
    }
    if (mkdir(g->stage, 0700) != 0) {
        bool full = errno == ENOSPC;
        g->stage[0] = 0;
        return full ? srv_fail(r, CG_R_INSUFFICIENT_STORAGE, NULL, "no space left for staging")
                    : srv_fail(r, CG_R_UNAVAILABLE, NULL, "cannot create the staging directory");
    }
    if (lseek(r->body_fd, 0, SEEK_SET) != 0) return srv_fail(r, CG_R_UNAVAILABLE, NULL, "cannot rewind the upload");
    cg_archive_limits lim;
    cg_archive_limits_default(&lim);
    lim.max_entries = s->cfg.max_files + 1;
    lim.max_total_bytes = s->cfg.max_decoded_bytes;
    lim.max_file_bytes = s->cfg.max_decoded_bytes;
    lim.max_stream_bytes = s->cfg.max_decoded_bytes + 1536 * lim.max_entries + (1u << 20);
    lim.scratch = true; /* staging is private and always removed; the blobs are the durable copies */
    lim.max_ratio = s->cfg.max_decode_ratio;
    if (cg_archive_unpack_fd(r->body_fd, g->root, &lim, &err) < 0) {
        if (err.reason == CG_R_NONE) {
            if (err.code == CG_ENOSPC || srv_free_bytes(s->cfg.data_dir) < (1u << 20))
                return srv_fail(r, CG_R_INSUFFICIENT_STORAGE, NULL, "no space left to unpack the upload");
            return srv_fail_unavailable(r, &err);
        }
        cg_jv *d = err.limit ? detail_kv(a, "limit", cg_jv_str(a, err.limit), NULL, NULL) : NULL;
        if (err.limit && strcmp(err.limit, "decompression_ratio") == 0)
            cg_jv_obj_put(a, d, "expected", cg_jv_u64(a, s->cfg.max_decode_ratio));
        return reject(g, err.reason, d, err.msg);
    }
    stage_end(g, SRV_STAGE_UNPACK);
    /* 4. bundle/1 verification, exactly as upstream, on the bundle opened once:
     * every later stage reads through this handle (bundle.json bytes and their
     * parse, the trace parsed by the semantic step, files opened beneath its
     * directory descriptor) */
    cg_bundle_receipt rcpt;
    g->opened = true;
    if (cg_bundle_open_dir(g->root, &g->bundle, &err) < 0 || cg_bundle_verify_handle(&g->bundle, &rcpt, &err) < 0)
        return reject_err(g, &err, NULL);
    g->manifest = g->bundle.manifest;
    g->manifest_len = g->bundle.manifest_len;
    char id[65];
    memcpy(id, g->bundle.manifest_sha256, sizeof id);
    memcpy(g->id, id, sizeof id);
    if (!check_ingest_rules(g, rcpt.run_id, &res)) return res;
    const cg_bundle_manifest man = g->bundle.man;
    stage_end(g, SRV_STAGE_BUNDLE);

    /* run-ID binding and semantic verification, as `candle-graph verify --semantic` */
    cg_semantic_result sres = CG_SEMANTIC_NOT_REDERIVABLE;
    char *schema = NULL;
    cg_semantic_diff diff;
    /* one large parse and rederivation at a time in the process: the trace is
     * then parsed once per upload, the view index built from what the
     * semantic step holds and the Timeline index from the same trace */
    g->heavy = srv_heavy_enter(trace_bytes(&man), 0);
    stage_end(g, SRV_STAGE_GATE);
    const cg_semantic_hook hook = {build_views, g};
    if (cg_bundle_verify_semantic_use(&g->bundle, &rcpt, true, &sres, &g->trace, &schema, &diff, &hook, &err) < 0) {
        cg_jv *d = NULL;
        if (err.reason == CG_R_TRACE_INVALID)
            d = detail_kv(a, "path", cg_jv_str(a, "trace.jsonl"), err.line ? "line" : NULL,
                          cg_jv_u64(a, (uint64_t)err.line));
        else if (err.reason == CG_R_SEMANTIC_MISMATCH)
            d = detail_kv(a, "path", cg_jv_str(a, "evidence.json"), diff.member[0] ? "member" : NULL,
                          cg_jv_str(a, diff.member));
        /* the library's message names the unpack directory; the uploader is
         * told the first differing member instead */
        if (err.reason == CG_R_SEMANTIC_MISMATCH && diff.member[0])
            return reject(g, err.reason, d,
                          cg_arena_printf(a, "semantic verification failed: evidence.json differs from the evidence "
                                             "rederived from the bundle trace (first difference at `%s`)",
                                          diff.member));
        return reject_err(g, &err, d);
    }
    /* the evidence schema is the one the semantic step found */
    const char *semantic = cg_semantic_result_name(sres);
    const char *evidence_schema = schema ? cg_arena_strdup(a, schema) : NULL;
    cg_free(schema);
    /* the rebuilt evidence is freed: its heap goes back to the system before
     * the later stages (facts, Timeline) allocate, so that they fill
     * what the evidence left instead of stacking on the semantic peak */
    srv_memory_trim();
    stage_end(g, SRV_STAGE_SEMANTIC);
    /* the derived index, the facts and the Timeline index use the trace
     * semantic verification parsed (default limits) and its post-read check
     * confirmed; so do the view index's span and op rows */
    if (g->views) srv_views_finish(g->views, g->trace);
    stage_end(g, SRV_STAGE_VIEWS);
    /* 5. signature */
    const char *sig_json, *key_id;
    if (!check_signature(g, &sig_json, &key_id, &res)) return res;
    stage_end(g, SRV_STAGE_SIGNATURE);

    /* derived index inputs */
    if (!g->health_json) set_health(g, NULL);
    srv_file_row *files = cg_arena_zalloc(a, (man.n_files + 1) * sizeof *files);
    uint64_t total = g->manifest_len;
    files[0].path = "bundle.json";
    memcpy(files[0].sha256, id, 65);
    files[0].bytes = g->manifest_len;
    for (size_t i = 0; i < man.n_files; i++) {
        files[i + 1].path = man.files[i].path;
        for (int k = 0; k < 64; k++) files[i + 1].sha256[k] = (char)tolower((unsigned char)man.files[i].sha256[k]);
        files[i + 1].sha256[64] = 0;
        files[i + 1].bytes = man.files[i].bytes;
        total += man.files[i].bytes;
    }

    /* input the index cannot hold is refused before anything is stored */
    const char *big = srv_index_oversized(g->trace, rcpt.run_id, files, man.n_files + 1);
    if (big) {
        cg_jv *d = detail_kv(a, "limit", cg_jv_str(a, "indexed_field_bytes"), "field", cg_jv_str(a, big));
        cg_jv_obj_put(a, d, "max", cg_jv_u64(a, SRV_INDEX_MAX_KEY_BYTES));
        return reject(g, CG_R_PAYLOAD_TOO_LARGE, d,
                      cg_arena_printf(a, "%s is longer than %d bytes", big, SRV_INDEX_MAX_KEY_BYTES));
    }
    /* 6. store blobs (fs: before the transaction; pg: inside it) */
    bool pg_blobs = s->blobs.kind == SRV_BLOB_PG;
    if (!pg_blobs) {
        for (size_t i = 0; i <= man.n_files; i++) {
            bool enospc = false;
            if (put_blob(g, NULL, &files[i], &enospc, &err) < 0)
                return enospc ? srv_fail(r, CG_R_INSUFFICIENT_STORAGE, NULL, "no space left in the blob store")
                              : srv_fail_unavailable(r, &err);
        }
    }
    stage_end(g, SRV_STAGE_BLOBS);
    srv_index_row row = {
        .id = id, .run_id = rcpt.run_id, .manifest = g->manifest, .manifest_len = g->manifest_len,
        .files = files, .n_files = man.n_files + 1, .total_bytes = total, .uploader = r->token_id,
        .signature_json = sig_json, .signer_key_id = key_id, .semantic_status = semantic,
        .evidence_schema = evidence_schema, .trace = g->trace,
        .structurally_valid = g->verdict.structurally_valid, .capture_complete = g->verdict.capture_complete,
        .health_json = g->health_json,
        .campaign_id = g->campaign, .planned_name = g->planned,
    };
    srv_index_params ix;
    srv_index_prepare(&row, a, &ix);
    srv_facts_text facts;
    cg_arena fa;
    cg_arena_init(&fa, 0);
    srv_facts_compute(&fa, id, rcpt.run_id, g->trace, &g->verdict, g->has_clocks ? g->clocks : NULL, g->n_clocks, &facts);
    stage_end(g, SRV_STAGE_FACTS);
    pg_blobs_ctx pbc = {g, files, man.n_files + 1};
    srv_ingest_tx tx = {
        .id = id, .lock_key = lock_key(id),
        .attempt = {g->campaign, g->planned, rcpt.run_id, srv_trace_host(g->trace), g->trace->run.device},
        .index = &ix, .facts = &facts, .trace = g->trace,
        .put_blobs = pg_blobs ? put_pg_blobs : NULL, .blob_ctx = &pbc,
        .statement_timeout_ms = tx_timeout_ms(s, total),
    };
    srv_ingest_outcome oc;
    int committed = srv_store_ingest_commit(s->pool, &tx, &oc, &err);
    srv_index_params_free(&ix);
    cg_arena_free(&fa);
    srv_memory_trim();
    stage_end(g, SRV_STAGE_COMMIT);
    if (committed < 0) {
        srv_metrics_ingest("unavailable", r->body_len, now_s() - g->t0);
        return srv_fail_unavailable(r, &err);
    }
    bool existed = oc.existed;
    long long history_series = oc.history_series;
    if (oc.conflict) {
        cg_jv *d = detail_kv(a, "run_id", cg_jv_str(a, rcpt.run_id), oc.other[0] ? "existing_id" : NULL,
                             oc.other[0] ? cg_jv_str(a, oc.other) : NULL);
        return reject(g, CG_R_RUN_ID_CONFLICT, d, "a different bundle already holds this run_id");
    }
    srv_history_detect(s, history_series); /* issue 15: change points of the bundle's series */
    bool valid = g->verdict.structurally_valid, complete = g->verdict.capture_complete;
    /* a new bundle's indexes come from this upload's parse: the Timeline
     * index is built now, after the facts are freed (its memory then stacks
     * on the trace and the view index only), and both are saved once the
     * trace is freed (and the heap handed back) and the publication logged,
     * then loaded by the background warm-up */
    srv_vw_index *views = existed ? NULL : g->views;
    srv_tl_index *timeline = existed ? NULL : srv_timeline_build(id, g->trace);
    stage_end(g, SRV_STAGE_TIMELINE);
    if (!existed) g->views = NULL;
    release_trace(g);

    /* 7. answer */
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "schema", cg_jv_str(a, INGEST_SCHEMA));
    cg_jv_obj_put(a, o, "status", cg_jv_str(a, existed ? "already_published" : "published"));
    cg_jv_obj_put(a, o, "id", cg_jv_str(a, id));
    cg_jv_obj_put(a, o, "run_id", cg_jv_str(a, rcpt.run_id));
    cg_jv_obj_put(a, o, "verification", cg_bundle_receipt_to_json(a, &rcpt));
    cg_jv *sem = cg_jv_obj(a);
    cg_jv_obj_put(a, sem, "status", cg_jv_str(a, semantic));
    cg_jv_obj_put(a, sem, "evidence_schema", evidence_schema ? cg_jv_str(a, evidence_schema) : cg_jv_null(a));
    cg_jv_obj_put(a, o, "semantic", sem);
    if (key_id) {
        cg_jv *sg = cg_jv_obj(a);
        cg_jv_obj_put(a, sg, "algorithm", cg_jv_str(a, CG_SIGNATURE_ALGORITHM));
        cg_jv_obj_put(a, sg, "key_id", cg_jv_str(a, key_id));
        cg_jv_obj_put(a, sg, "verified", cg_jv_bool(a, true));
        cg_jv_obj_put(a, o, "signature", sg);
    } else {
        cg_jv_obj_put(a, o, "signature", cg_jv_null(a));
    }
    cg_jv *h = cg_jv_obj(a);
    cg_jv_obj_put(a, h, "structurally_valid", cg_jv_bool(a, valid));
    cg_jv_obj_put(a, h, "capture_complete", cg_jv_bool(a, complete));
    cg_jv_obj_put(a, o, "health", h);
    cg_jv_obj_put(a, o, "links", links(a, id));
    srv_metrics_ingest(existed ? "already_published" : "published", r->body_len, now_s() - g->t0);
    srv_log("info", existed ? "bundle already published" : "bundle published", "request_id", r->id, "id", id, "run_id",
            rcpt.run_id, "key_id", key_id, NULL);
    srv_metrics_ingest_stages(&g->st);
    srv_log_ingest_stages(r->id, id, &g->st, now_s() - g->t0);
    /* after the publication (a failed save is logged, the index then built from the store) */
    if (views) srv_views_keep(s, views);
    if (timeline) srv_timeline_keep(s, timeline);
    if (!existed) srv_timeline_warm(r->s, id); /* loads both indexes in the background */
    char loc[96];
    snprintf(loc, sizeof loc, "/bundles/%s", id);
    cg_buf b = CG_BUF_INIT;
    cg_json_write(&b, o, true);
    cg_buf_putc(&b, '\n');
    const char *hdrs[] = {"Location", loc, "Cache-Control", "no-store", NULL};
    res = srv_reply_bytes(r, existed ? 200 : 201, "application/json; charset=utf-8", b.data, b.len, hdrs);
    cg_buf_free(&b);
    return res;
}

enum MHD_Result srv_h_bundles_post(srv_req *r) {
    ingest g;
    memset(&g, 0, sizeof g);
    g.r = r;
    g.t0 = now_s();
    g.mark = g.t0;
    enum MHD_Result res = run(&g);
    if (g.stage[0]) cg_rm_rf(g.stage);
    release_trace(&g);
    if (g.opened) cg_bundle_handle_close(&g.bundle);
    return res;
}
