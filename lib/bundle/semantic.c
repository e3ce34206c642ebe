/* semantic.c — run-ID binding and evidence rederivation of a verified bundle. */
#include "bundle/semantic.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/evidence.h"
#include "analysis/evidence_read.h"
#include "base/alloc.h"
#include "base/fs.h"
#include "bundle/manifest.h"
#include "bundle/opened.h"
#include "render/artifacts.h"
#include "trace/trace.h"

/* the display name of a bundle's Nsight directory in rebuild messages */
#define BUNDLE_NSIGHT "nsight"

const char *cg_semantic_result_name(cg_semantic_result r) {
    return r == CG_SEMANTIC_NOT_REDERIVABLE ? "not_rederivable" : "rederived_match";
}

static int semfail(cg_error *err, cg_reason reason, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int semfail(cg_error *err, cg_reason reason, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    cg_err_vset(err, CG_EVERIFY, fmt, ap);
    va_end(ap);
    return cg_err_reason(err, reason);
}

/* First top-level key whose values differ (or that only one side has). */
static const char *first_difference(const cg_jv *a, const cg_jv *b) {
    if (a->type != CG_JOBJ || b->type != CG_JOBJ) return "(root)";
    for (size_t i = 0; i < a->u.obj.n; i++) {
        const cg_jv *o = cg_jv_get(b, a->u.obj.m[i].key);
        if (!o || !cg_jv_equal(a->u.obj.m[i].val, o)) return a->u.obj.m[i].key;
    }
    for (size_t i = 0; i < b->u.obj.n; i++)
        if (!cg_jv_get(a, b->u.obj.m[i].key)) return b->u.obj.m[i].key;
    return "(root)";
}

/* Where the semantic step reads: display names for messages, and the names
 * handed to the readers (the same paths, or the /proc/self/fd names of files a
 * bundle handle opened). h, when given, is the bundle opened once: its parsed
 * manifest lists the nsight inputs and the post-read check goes through it. */
typedef struct sem_io {
    const char *root, *tp, *ep, *np;    /* display */
    const char *t_in, *e_in, *n_in;     /* read; n_in NULL: no nsight/ directory */
    const cg_bundle_handle *h;
    cg_semantic_diff *diff;             /* may be NULL */
} sem_io;

/* err->msg with every occurrence of from replaced by to (reader messages name
 * the file they were given). */
static void msg_rename(cg_error *e, const char *from, const char *to) {
    if (!from || !to || !strcmp(from, to) || !strstr(e->msg, from)) return;
    char out[sizeof e->msg];
    size_t o = 0, fl = strlen(from), tl = strlen(to);
    for (const char *p = e->msg; *p && o + 1 < sizeof out;) {
        if (!strncmp(p, from, fl) && o + tl < sizeof out) {
            memcpy(out + o, to, tl);
            o += tl;
            p += fl;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = 0;
    memcpy(e->msg, out, o + 1);
}

/* The post-read re-check of trace, evidence and (rederived) nsight inputs. */
static int post_read(const sem_io *io, cg_arena *a, const cg_bundle_receipt *receipt, cg_semantic_result res,
                     cg_error *err) {
    cg_bundle_manifest m;
    char *mdata = NULL;
    if (io->h) {
        m = io->h->man; /* verify_consumed_handle confirms bundle.json still has these bytes */
    } else {
        cg_error terr;
        cg_err_clear(&terr);
        size_t mlen = 0;
        char *mp = cg_path_join(io->root, CG_BUNDLE_MANIFEST_NAME);
        mdata = mp ? cg_read_file(mp, CG_BUNDLE_MANIFEST_MAX, &mlen, &terr) : NULL;
        cg_free(mp);
        if (!mdata || cg_bundle_manifest_parse(a, mdata, mlen, &m, &terr) != 0) {
            cg_free(mdata);
            return semfail(err, CG_R_DIGEST_MISMATCH, "bundle manifest changed after initial verification");
        }
    }
    const char **consumed = malloc((m.n_files + 2) * sizeof *consumed);
    if (!consumed) {
        cg_free(mdata);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    size_t nc = 0;
    consumed[nc++] = "trace.jsonl";
    consumed[nc++] = "evidence.json";
    if (res == CG_SEMANTIC_REDERIVED_MATCH)
        for (size_t i = 0; i < m.n_files; i++)
            if (!strncmp(m.files[i].path, "nsight/", 7)) consumed[nc++] = m.files[i].path;
    int rc = io->h ? cg_bundle_verify_consumed_handle(io->h, receipt, consumed, nc, err)
                   : cg_bundle_verify_consumed(io->root, receipt, consumed, nc, err);
    cg_free(consumed);
    cg_free(mdata);
    return rc;
}

/* Compares evidence.json with the packet rebuilt from the trace: first the
 * rebuilt packet streamed against the file's bytes (no DOM on either side),
 * then, when the bytes differ, as JSON values (evidence.json read without a
 * DOM of its large arrays, analysis/evidence_read.h, against the lazy rebuilt
 * packet). The packet is built once. *schema_out (malloc'd, may stay NULL)
 * receives the stored schema; *e_out the rebuilt evidence on a match (the
 * caller's, cg_evidence_free; its arrays live in a). */
static int compare_evidence(const sem_io *io, cg_arena *a, const cg_trace *t, bool allow_not_rederivable,
                            cg_semantic_result *res, char **schema_out, cg_evidence **e_out, cg_error *err) {
    *res = CG_SEMANTIC_REDERIVED_MATCH;
    cg_error berr;
    cg_err_clear(&berr);
    cg_evidence *e = cg_evidence_build_as(a, t, io->n_in, BUNDLE_NSIGHT, &berr);
    msg_rename(&berr, io->t_in, io->tp);
    bool match = false;
    cg_error merr;
    cg_err_clear(&merr);
    if (e && cg_evidence_bytes_match(e, io->e_in, &match, &merr) == 0 && match) {
        *schema_out = strdup(CG_EVIDENCE_SCHEMA);
        *e_out = e;
        return 0;
    }
    /* any other outcome: the value comparison, with its messages */
    cg_error terr;
    cg_err_clear(&terr);
    cg_evidence_file *ef = cg_evidence_file_open(io->e_in, false, &terr);
    cg_jv *stored = ef ? cg_evidence_file_parse(ef, a, NULL, &terr) : NULL;
    msg_rename(&terr, io->e_in, io->ep);
    int rc = 0;
    if (!stored) {
        rc = semfail(err, CG_R_SEMANTIC_MISMATCH, "semantic verification failed: read evidence.json: %s", terr.msg);
        goto done;
    }
    const char *schema = cg_jv_as_str(cg_jv_get(stored, "schema"));
    if (schema) *schema_out = strdup(schema);
    if (!schema || strcmp(schema, CG_EVIDENCE_SCHEMA) != 0) {
        if (!allow_not_rederivable)
            rc = semfail(err, CG_R_SEMANTIC_MISMATCH,
                         "semantic verification failed: evidence schema %s cannot be rederived (expected %s)",
                         schema ? schema : "(missing)", CG_EVIDENCE_SCHEMA);
        else
            *res = CG_SEMANTIC_NOT_REDERIVABLE;
        goto done;
    }
    if (!e) {
        rc = semfail(err, CG_R_SEMANTIC_MISMATCH,
                     "semantic verification failed: evidence cannot be rebuilt from trace.jsonl: %s", berr.msg);
        goto done;
    }
    cg_jv *rebuilt = cg_evidence_to_json_lazy(a, e);
    if (!cg_jv_equal(stored, rebuilt)) {
        if (io->diff) snprintf(io->diff->member, sizeof io->diff->member, "%s", first_difference(stored, rebuilt));
        rc = semfail(err, CG_R_SEMANTIC_MISMATCH,
                     "semantic verification failed: rederived evidence differs from published evidence.json for %s",
                     io->root);
    }
done:
    cg_evidence_file_close(ef); /* after the last walk of stored's lazy arrays */
    if (rc == 0 && *res == CG_SEMANTIC_REDERIVED_MATCH) *e_out = e;
    else if (e) cg_evidence_free(e);
    return rc;
}

static int semantic_run(const sem_io *io, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                        cg_semantic_result *result, cg_trace **trace_out,
                        char **schema_out, const cg_semantic_hook *hook, cg_error *err) {
    if (trace_out) *trace_out = NULL;
    if (io->diff) io->diff->member[0] = 0;
    char *schema = NULL;
    cg_arena a;
    cg_arena_init(&a, 1 << 20);
    cg_error terr;
    cg_err_clear(&terr);
    int rc = -1;
    cg_evidence *e = NULL;
    cg_trace *t = cg_trace_read_file(io->t_in, NULL, &terr);
    msg_rename(&terr, io->t_in, io->tp);
    if (!t) {
        /* the reader's reason (trace_invalid); a trace that cannot be read at all is one too */
        semfail(err, terr.reason ? terr.reason : CG_R_TRACE_INVALID, "read bundle trace %s: %s", io->tp, terr.msg);
        goto out;
    }
    const char *trace_run = t->run.run_id ? t->run.run_id : "";
    if (strcmp(receipt->run_id, trace_run) != 0) {
        semfail(err, CG_R_RUN_ID_MISMATCH, "bundle manifest run ID %s does not match its trace run ID %s",
                receipt->run_id, trace_run);
        goto out;
    }
    cg_semantic_result res;
    if (compare_evidence(io, &a, t, allow_not_rederivable, &res, &schema, &e, err) != 0) goto out;
    if (post_read(io, &a, receipt, res, err) != 0) goto out;
    if (hook && hook->use && hook->use(hook->ctx, t, e, err) != 0) goto out;
    if (e) cg_evidence_free(e);
    e = NULL;
    cg_arena_free(&a); /* the evidence's arrays, before the trace goes to the caller */
    if (result) *result = res;
    if (trace_out) {
        *trace_out = t;
        t = NULL;
    }
    if (schema_out) {
        *schema_out = schema;
        schema = NULL;
    }
    rc = 0;
out:
    if (e) cg_evidence_free(e);
    cg_free(schema);
    cg_trace_free(t);
    cg_arena_free(&a);
    return rc;
}

int cg_bundle_verify_semantic(const char *root, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                              cg_semantic_result *result, cg_error *err) {
    return cg_bundle_verify_semantic_trace(root, receipt, allow_not_rederivable, result, NULL, NULL, err);
}

int cg_bundle_verify_semantic_trace(const char *root, const cg_bundle_receipt *receipt, bool allow_not_rederivable,
                                    cg_semantic_result *result, cg_trace **trace_out, cg_semantic_diff *diff,
                                    cg_error *err) {
    if (trace_out) *trace_out = NULL;
    char *tp = cg_path_join(root, "trace.jsonl"), *ep = cg_path_join(root, "evidence.json"),
         *np = cg_path_join(root, "nsight");
    int rc = -1;
    if (!tp || !ep || !np) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
    } else {
        sem_io io = {root, tp, ep, np, tp, ep, cg_is_dir(np) ? np : NULL, NULL, diff};
        rc = semantic_run(&io, receipt, allow_not_rederivable, result, trace_out, NULL, NULL, err);
    }
    cg_free(tp);
    cg_free(ep);
    cg_free(np);
    return rc;
}

int cg_bundle_verify_semantic_handle(const cg_bundle_handle *h, const cg_bundle_receipt *receipt,
                                     bool allow_not_rederivable, cg_semantic_result *result,
                                     cg_trace **trace_out, char **evidence_schema, cg_semantic_diff *diff,
                                     cg_error *err) {
    return cg_bundle_verify_semantic_use(h, receipt, allow_not_rederivable, result, trace_out, evidence_schema, diff,
                                         NULL, err);
}

int cg_bundle_verify_semantic_use(const cg_bundle_handle *h, const cg_bundle_receipt *receipt,
                                  bool allow_not_rederivable, cg_semantic_result *result, cg_trace **trace_out,
                                  char **evidence_schema, cg_semantic_diff *diff, const cg_semantic_hook *hook,
                                  cg_error *err) {
    if (trace_out) *trace_out = NULL;
    if (evidence_schema) *evidence_schema = NULL;
    char *tp = cg_path_join(h->root, "trace.jsonl"), *ep = cg_path_join(h->root, "evidence.json"),
         *np = cg_path_join(h->root, "nsight");
    int tfd = cg_bundle_handle_open(h, "trace.jsonl", O_RDONLY), efd = cg_bundle_handle_open(h, "evidence.json", O_RDONLY),
        nfd = cg_bundle_handle_open(h, "nsight", O_RDONLY | O_DIRECTORY);
    char tn[32], en[32], nn[32];
    int rc = -1;
    if (!tp || !ep || !np) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
    } else {
        /* a file that cannot be opened is read by its display name, so that the
         * readers report it missing in their own words */
        sem_io io = {h->root, tp, ep, np, tfd >= 0 ? cg_bundle_fd_name(tfd, tn) : tp,
                     efd >= 0 ? cg_bundle_fd_name(efd, en) : ep, nfd >= 0 ? cg_bundle_fd_name(nfd, nn) : NULL, h, diff};
        rc = semantic_run(&io, receipt, allow_not_rederivable, result, trace_out, evidence_schema, hook, err);
    }
    if (tfd >= 0) close(tfd);
    if (efd >= 0) close(efd);
    if (nfd >= 0) close(nfd);
    cg_free(tp);
    cg_free(ep);
    cg_free(np);
    return rc;
}
