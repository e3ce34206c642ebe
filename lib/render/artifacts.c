/* artifacts.c — evidence.json, report.md and viewer.html of a bundle, and the
 * semantic comparison of a stored evidence.json with its rebuilt packet. */
#include "render/artifacts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analysis/evidence.h"
#include "base/alloc.h"
#include "base/async_sink.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "base/writeback.h"
#include "render/payload.h"
#include "render/report.h"
#include "render/viewer_html.h"

/* A bundle's Nsight inputs always sit in its nsight/ folder: messages name it
 * so, whether the packet is built from the staging copy or rebuilt from the
 * published bundle (the crate quotes the staging path instead, which no
 * rebuild can reproduce; docs/compatibility/evidence-nsight-report.md). */
#define BUNDLE_NSIGHT "nsight"

cg_jv *cg_evidence_build_json(cg_arena *a, const char *trace_path, const char *nsight_dir, cg_error *err) {
    return cg_evidence_build_file_as(a, trace_path, nsight_dir, BUNDLE_NSIGHT, err);
}

static int buf_sink(void *ctx, const char *data, size_t len) {
    cg_buf_append(ctx, data, len);
    return 0;
}

/* Builds the packet once, as lazy arrays over the derived structures: the
 * evidence JSON is streamed to sink (when given), report.md and viewer.html
 * are rendered from the same value without materializing it (the viewer
 * payload walks the large lists item by item). */
static int build_artifacts(const char *trace_path, const char *nsight_dir, cg_json_sink sink, void *sink_ctx,
                           char **run_id, cg_buf *report_md, cg_buf *viewer_html, cg_error *err) {
    cg_trace *t = cg_trace_read_file(trace_path, NULL, err);
    if (!t) return cg_err_context(err, "parse trace %s", trace_path); /* build_evidence's context */
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    int rc = -1;
    cg_evidence *e = cg_evidence_build_as(&a, t, nsight_dir, BUNDLE_NSIGHT, err);
    if (!e) goto done;
    cg_jv *packet = cg_evidence_to_json_lazy(&a, e);
    if (run_id) {
        const char *rid = cg_jv_as_str(cg_jv_get(cg_jv_get(packet, "provenance"), "run_id"));
        if (!rid) {
            cg_err_set(err, CG_EPARSE, "evidence packet has no provenance run_id");
            goto done;
        }
        if (!(*run_id = strdup(rid))) {
            cg_err_set(err, CG_ENOMEM, "out of memory");
            goto done;
        }
    }
    if (sink && cg_json_write_sink(packet, true, true, sink, sink_ctx) != 0) {
        cg_err_set(err, CG_EIO, "write evidence packet");
        goto done;
    }
    if (report_md && cg_report_render(packet, report_md, err) != 0) goto done;
    if (viewer_html && cg_viewer_render_html(cg_viewer_payload(&a, packet), viewer_html, err) != 0) goto done;
    rc = 0;
done:
    if (rc != 0 && run_id && *run_id) {
        cg_free(*run_id);
        *run_id = NULL;
    }
    cg_evidence_free(e);
    cg_arena_free(&a);
    cg_trace_free(t);
    return rc;
}

int cg_render_bundle_artifacts(const char *trace_path, const char *nsight_dir, cg_buf *evidence_json,
                               cg_buf *report_md, cg_buf *viewer_html, cg_error *err) {
    return build_artifacts(trace_path, nsight_dir, evidence_json ? buf_sink : NULL, evidence_json, NULL, report_md,
                           viewer_html, err);
}

/* Writes to the fd (its writeback started as it grows: the publication's
 * fsync then finds little left) and hashes what it wrote. */
typedef struct hash_sink {
    cg_wb_sink_ctx out;
    cg_sha256 h;
    uint64_t bytes;
} hash_sink;

static int hash_write(void *ctx, const char *data, size_t len) {
    hash_sink *s = ctx;
    if (cg_wb_sink(&s->out, data, len) != 0) return -1;
    cg_sha256_update(&s->h, data, len);
    s->bytes += len;
    return 0;
}

int cg_render_bundle_artifacts_fd(const char *trace_path, const char *nsight_dir, int evidence_fd,
                                  cg_artifact_digest *evidence, char **run_id, cg_buf *report_md,
                                  cg_buf *viewer_html, cg_error *err) {
    hash_sink hs;
    /* drop-behind: a multi-GB packet reuses page-cache pages instead of taking
     * fresh ones (the publication's verification reads it back from disk) */
    cg_wb_sink_init(&hs.out, evidence_fd, CG_WRITEBACK_DROP_BEHIND);
    cg_sha256_init(&hs.h);
    hs.bytes = 0;
    *run_id = NULL;
    /* writing and hashing run beside the JSON text's production */
    cg_async_sink *as = cg_async_sink_start(hash_write, &hs);
    int rc = build_artifacts(trace_path, nsight_dir, as ? cg_async_sink_put : hash_write, as ? (void *)as : &hs, run_id,
                             report_md, viewer_html, err);
    if (as && cg_async_sink_finish(as) != 0 && rc == 0) {
        rc = -1;
        cg_free(*run_id);
        *run_id = NULL;
    }
    if (rc != 0) {
        if (hs.out.out.err_no) cg_err_set(err, CG_EIO, "write evidence.json: %s", strerror(hs.out.out.err_no));
        return -1;
    }
    unsigned char d[32];
    cg_sha256_final(&hs.h, d);
    cg_hex(d, sizeof d, evidence->sha256);
    evidence->bytes = hs.bytes;
    return 0;
}

/* Compares the streamed bytes with the file, chunk by chunk. */
typedef struct cmp_sink {
    int fd;
    char *buf;
    size_t cap;
    int err_no;   /* read error */
    bool differs; /* bytes differ or the file is shorter */
} cmp_sink;

static ssize_t read_full(int fd, char *p, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, p + got, n - got);
        if (r < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int cmp_write(void *ctx, const char *data, size_t len) {
    cmp_sink *s = ctx;
    while (len) {
        size_t n = len < s->cap ? len : s->cap;
        ssize_t r = read_full(s->fd, s->buf, n);
        if (r < 0) {
            s->err_no = errno;
            return -1;
        }
        if ((size_t)r != n || memcmp(s->buf, data, n) != 0) {
            s->differs = true;
            return 1;
        }
        data += n;
        len -= n;
    }
    return 0;
}

int cg_evidence_semantic_match(const char *trace_path, const char *nsight_dir, const char *evidence_json_path,
                               bool *match, cg_error *err) {
    *match = false;
    cg_trace *t = cg_trace_read_file(trace_path, NULL, err);
    if (!t) return -1;
    int rc = cg_evidence_semantic_match_trace(t, nsight_dir, evidence_json_path, match, err);
    cg_trace_free(t);
    return rc;
}

int cg_evidence_bytes_match(const cg_evidence *e, const char *evidence_json_path, bool *match, cg_error *err) {
    *match = false;
    cg_arena a;
    cg_arena_init(&a, 1 << 16);
    cmp_sink cs = {-1, NULL, 0, 0, false};
    int rc = -1, fd = open(evidence_json_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        cg_err_set(err, CG_EIO, "open %s: %s", evidence_json_path, strerror(errno));
        goto done;
    }
    cs.fd = fd;
    cs.cap = CG_JSON_CHUNK + 64 * 1024;
    cs.buf = malloc(cs.cap);
    if (!cs.buf) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        goto done;
    }
    int wr = cg_json_write_sink(cg_evidence_to_json_lazy(&a, e), true, true, cmp_write, &cs);
    if (cs.err_no) {
        cg_err_set(err, CG_EIO, "read %s: %s", evidence_json_path, strerror(cs.err_no));
        goto done;
    }
    rc = 0;
    if (wr == 0 && !cs.differs) {
        char extra;
        ssize_t r = read_full(fd, &extra, 1);
        if (r < 0) rc = cg_err_set(err, CG_EIO, "read %s: %s", evidence_json_path, strerror(errno));
        *match = r == 0;
    }
done:
    cg_free(cs.buf);
    if (fd >= 0) close(fd);
    cg_arena_free(&a);
    return rc;
}

int cg_evidence_semantic_match_trace(const cg_trace *t, const char *nsight_dir, const char *evidence_json_path,
                                     bool *match, cg_error *err) {
    *match = false;
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    int rc = -1;
    char *stored_text = NULL;
    cg_evidence *e = cg_evidence_build_as(&a, t, nsight_dir, BUNDLE_NSIGHT, err);
    if (!e) goto done;
    cg_jv *packet = cg_evidence_to_json_lazy(&a, e);
    /* fast path: identical bytes (the writer is deterministic) */
    if (cg_evidence_bytes_match(e, evidence_json_path, match, err) != 0 || *match) {
        rc = *match ? 0 : -1;
        goto done;
    }
    struct stat st;
    if (stat(evidence_json_path, &st) != 0) {
        cg_err_set(err, CG_EIO, "stat %s: %s", evidence_json_path, strerror(errno));
        goto done;
    }

    /* slow path: JSON value equality (key order, whitespace, number spelling may differ) */
    if ((uint64_t)st.st_size > CG_EVIDENCE_VALUE_COMPARE_MAX) {
        cg_err_set(err, CG_ELIMIT,
                   "%s differs byte-wise from the rebuilt evidence packet and, at %llu bytes, exceeds the %llu-byte "
                   "limit for JSON value comparison",
                   evidence_json_path, (unsigned long long)st.st_size,
                   (unsigned long long)CG_EVIDENCE_VALUE_COMPARE_MAX);
        goto done;
    }
    size_t len = 0;
    stored_text = cg_read_file(evidence_json_path, CG_EVIDENCE_VALUE_COMPARE_MAX, &len, err);
    if (!stored_text) goto done;
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    lim.max_depth = 128;
    cg_error perr;
    cg_err_clear(&perr);
    cg_jv *stored = cg_json_parse(&a, stored_text, len, &lim, &perr);
    *match = stored && cg_jv_equal(stored, packet); /* unparsable JSON never matches */
    rc = 0;
done:
    cg_free(stored_text);
    cg_evidence_free(e);
    cg_arena_free(&a);
    return rc;
}
