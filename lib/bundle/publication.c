/* publication.c — CaptureRun and reconciliation (§2). */
#include "bundle/publication.h"
#include "bundle/manifest_wire.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "bundle/outpath.h"
#include "bundle/publish.h"
#include "trace/trace.h"

/* Planned coordinates (the retry identity). */
typedef struct planned {
    char *entrypoint, *correlation_id, *device;
    cg_phase phase;
    uint64_t capture_step;
} planned;

struct cg_capture_run {
    cg_session *session;
    bool finished;
    planned plan;
    char *destination, *staging_trace, *nsight_dir;
};

cg_jv *cg_publication_receipt_to_json(cg_arena *a, const cg_publication_receipt *r) {
    return cg_bw_encode(a, &cg_bw_publication_receipt, r);
}

static void plan_free(planned *p) {
    cg_free(p->entrypoint);
    cg_free(p->correlation_id);
    cg_free(p->device);
    memset(p, 0, sizeof *p);
}

static int plan_from_run(const cg_profile_run *run, planned *p, cg_error *err) {
    memset(p, 0, sizeof *p);
    const cg_run_meta *m = run ? cg_profile_run_meta(run) : NULL;
    if (!m) return cg_err_set(err, CG_EINVAL, "a planned profile run is required");
    p->entrypoint = strdup(m->entrypoint ? m->entrypoint : "");
    p->correlation_id = strdup(m->correlation_id ? m->correlation_id : "");
    p->device = strdup(m->device ? m->device : "");
    p->phase = m->phase;
    p->capture_step = m->capture_step;
    if (!p->entrypoint || !p->correlation_id || !p->device) {
        plan_free(p);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    return 0;
}

static void fill_receipt(cg_publication_receipt *out, cg_publication_status st, const char *dest,
                         const cg_bundle_receipt *v) {
    memset(out, 0, sizeof *out);
    out->status = st;
    snprintf(out->bundle_path, sizeof out->bundle_path, "%s", dest);
    out->verification = *v;
}

static int reconcile_plan(const char *destination, const planned *p, bool *found, cg_publication_receipt *out,
                          cg_error *err) {
    *found = false;
    if (!cg_path_exists(destination)) return 0;
    cg_bundle_receipt r;
    if (cg_bundle_verify(destination, &r, err) != 0)
        return cg_err_context(err,
                              "existing destination %s is not a verifiable evidence bundle; refusing to reuse or "
                              "overwrite it",
                              destination);
    char *tp = cg_path_join(destination, "trace.jsonl");
    if (!tp) return cg_err_set(err, CG_ENOMEM, "out of memory");
    cg_trace *t = cg_trace_read_file(tp, NULL, err);
    cg_free(tp);
    if (!t) return cg_err_context(err, "read published trace of %s", destination);
    int rc = -1;
    const cg_run_meta *m = &t->run;
    const char *trace_run = m->run_id ? m->run_id : "";
    if (strcmp(r.run_id, trace_run) != 0) {
        cg_err_set(err, CG_EVERIFY, "published bundle manifest run ID %s does not match its trace run ID %s", r.run_id,
                   trace_run);
        goto out;
    }
    char conflicts[256] = "";
    size_t cl = 0;
#define CONFLICT(cond, name)                                                                         \
    do {                                                                                              \
        if (cond) cl += (size_t)snprintf(conflicts + cl, sizeof conflicts - cl, "%s%s", cl ? ", " : "", name); \
    } while (0)
    CONFLICT(strcmp(m->entrypoint ? m->entrypoint : "", p->entrypoint) != 0, "entrypoint");
    CONFLICT(strcmp(m->correlation_id ? m->correlation_id : "", p->correlation_id) != 0, "correlation_id");
    CONFLICT(m->phase != p->phase, "phase");
    CONFLICT(m->capture_step != p->capture_step, "capture_step");
    CONFLICT(strcmp(m->device ? m->device : "", p->device) != 0, "device");
#undef CONFLICT
    if (cl) {
        cg_err_set(err, CG_EVERIFY, "bundle destination %s already holds a different planned capture (conflicting %s)",
                   destination, conflicts);
        goto out;
    }
    /* the trace we just read is still the one the manifest approved */
    const char *consumed[] = {"trace.jsonl"};
    if (cg_bundle_verify_consumed(destination, &r, consumed, 1, err) != 0) goto out;
    fill_receipt(out, CG_PUBLICATION_ALREADY_PUBLISHED, destination, &r);
    *found = true;
    rc = 0;
out:
    cg_trace_free(t);
    return rc;
}

int cg_reconcile_published_bundle(const char *destination, const cg_profile_run *run, bool *found,
                                  cg_publication_receipt *out, cg_error *err) {
    planned p;
    if (plan_from_run(run, &p, err) != 0) return -1;
    int rc = reconcile_plan(destination, &p, found, out, err);
    plan_free(&p);
    return rc;
}

/* The crate's Path::ancestors().skip(1): the destination as written, cut one
 * component at a time ("a/../b/c" → "a/../b", "a/..", "a", ""); an empty
 * ancestor is the cwd. Each is displayed as written. */
int cg_publication_check_not_nested(const char *destination, cg_error *err) {
    char anc[PATH_MAX];
    size_t n = strlen(destination);
    if (n >= sizeof anc) return cg_err_set(err, CG_EINVAL, "bundle destination path is too long: %s", destination);
    memcpy(anc, destination, n + 1);
    for (;;) {
        while (n > 1 && anc[n - 1] == '/') n--; /* trailing separators */
        if (n == 1 && anc[0] == '/') break;      /* the root has no parent */
        while (n > 0 && anc[n - 1] != '/') n--; /* the last component */
        if (n == 0 && anc[0] == '\0') break;    /* "" has no parent */
        while (n > 1 && anc[n - 1] == '/') n--;
        anc[n] = '\0';
        char probe[PATH_MAX + 16];
        snprintf(probe, sizeof probe, "%s%sbundle.json", anc, n == 0 ? "" : n == 1 && anc[0] == '/' ? "" : "/");
        struct stat st;
        if (stat(probe, &st) == 0 && S_ISREG(st.st_mode))
            return cg_err_set(err, CG_EINVAL, "refusing to publish bundle %s inside existing bundle %s", destination,
                              anc);
        if (n == 0) break;
    }
    return 0;
}

static uint64_t unix_nanos(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int cg_capture_run_begin(const char *destination, const cg_profile_run *run, cg_capture_begin *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    if (cg_publication_check_not_nested(destination, err) != 0) return -1;
    planned p;
    if (plan_from_run(run, &p, err) != 0) return -1;
    bool found = false;
    if (reconcile_plan(destination, &p, &found, &out->receipt, err) != 0) {
        plan_free(&p);
        return -1;
    }
    if (found) {
        plan_free(&p);
        out->kind = CG_CAPTURE_ALREADY_PUBLISHED;
        return 0;
    }
    char stripped[PATH_MAX];
    size_t dl = strlen(destination);
    while (dl > 1 && destination[dl - 1] == '/') dl--; /* "dir/" names "dir" */
    if (dl >= sizeof stripped) {
        plan_free(&p);
        return cg_err_set(err, CG_EINVAL, "bundle destination path is too long: %s", destination);
    }
    memcpy(stripped, destination, dl);
    stripped[dl] = '\0';
    char parent[PATH_MAX];
    cg_path_parent(stripped, parent, sizeof parent);
    const char *name = cg_path_base(stripped);
    if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
        plan_free(&p);
        return cg_err_set(err, CG_EINVAL, "bundle destination needs a file name");
    }
    if (cg_mkdir_p(parent, err) != 0) {
        plan_free(&p);
        return -1;
    }
    cg_capture_run *r = calloc(1, sizeof *r);
    size_t sl = strlen(parent) + strlen(name) + 80;
    char *staging = malloc(sl);
    char *dest = strdup(destination);
    if (!r || !staging || !dest) {
        cg_free(r);
        cg_free(staging);
        cg_free(dest);
        plan_free(&p);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    snprintf(staging, sl, "%s/.%s.trace-%ld-%llu.jsonl", parent, name, (long)getpid(),
             (unsigned long long)unix_nanos());
    r->plan = p;
    r->destination = dest;
    r->staging_trace = staging;
    r->session = cg_session_open(staging, run, err);
    if (!r->session) {
        cg_capture_run_free(r);
        return cg_err_context(err, "open staging trace session");
    }
    out->kind = CG_CAPTURE_ACTIVE;
    out->run = r;
    return 0;
}

cg_session *cg_capture_run_session(cg_capture_run *r) { return r->finished ? NULL : r->session; }
const char *cg_capture_run_destination(const cg_capture_run *r) { return r->destination; }
const char *cg_capture_run_staging_trace(const cg_capture_run *r) { return r->staging_trace; }

int cg_capture_run_with_nsight_dir(cg_capture_run *r, const char *dir, cg_error *err) {
    char *d = strdup(dir);
    if (!d) return cg_err_set(err, CG_ENOMEM, "out of memory");
    cg_free(r->nsight_dir);
    r->nsight_dir = d;
    return 0;
}

static void remove_staged_trace(const char *path) {
    if (unlink(path) == 0) {
        char parent[PATH_MAX];
        cg_path_parent(path, parent, sizeof parent);
        cg_fsync_path(parent, NULL);
    }
}

static int finalize(cg_capture_run *r, cg_publication_receipt *out, cg_error *err) {
    bool found = false;
    if (reconcile_plan(r->destination, &r->plan, &found, out, err) != 0) {
        cg_err_context(err, "staged trace retained at %s", r->staging_trace);
        return -1;
    }
    if (found) {
        remove_staged_trace(r->staging_trace);
        return 0;
    }
    if (cg_publish_bundle(r->destination, r->staging_trace, r->nsight_dir, NULL, err) != 0) {
        /* a concurrent retry of the same planned capture won the atomic rename:
         * converge on its bundle (same rule as the reconciliation above) */
        if (err && err->code == CG_EEXIST) {
            cg_error rerr;
            cg_err_clear(&rerr);
            if (reconcile_plan(r->destination, &r->plan, &found, out, &rerr) == 0 && found) {
                remove_staged_trace(r->staging_trace);
                return 0;
            }
        }
        return cg_err_context(err, "publish evidence bundle %s (staged trace retained at %s)", r->destination,
                              r->staging_trace);
    }
    cg_bundle_receipt v;
    if (cg_bundle_verify(r->destination, &v, err) != 0)
        return cg_err_context(err, "verify published evidence bundle %s (staged trace retained at %s)",
                              r->destination, r->staging_trace);
    remove_staged_trace(r->staging_trace);
    fill_receipt(out, CG_PUBLICATION_PUBLISHED, r->destination, &v);
    return 0;
}

static int finish_and_publish(cg_capture_run *r, const char *failed_reason, cg_publication_receipt *out,
                              cg_error *err) {
    if (r->finished) return cg_err_set(err, CG_ESTATE, "capture run was already published");
    int rc = failed_reason ? cg_session_finish_failed(r->session, failed_reason, err)
                           : cg_session_finish(r->session, err);
    r->finished = true;
    cg_session_free(r->session);
    r->session = NULL;
    if (rc != 0) return cg_err_context(err, "finish capture session (staged trace retained at %s)", r->staging_trace);
    return finalize(r, out, err);
}

int cg_capture_run_publish(cg_capture_run *r, cg_publication_receipt *out, cg_error *err) {
    return finish_and_publish(r, NULL, out, err);
}

int cg_capture_run_publish_failed(cg_capture_run *r, const char *reason, cg_publication_receipt *out,
                                  cg_error *err) {
    return finish_and_publish(r, reason ? reason : "", out, err);
}

void cg_capture_run_free(cg_capture_run *r) {
    if (!r) return;
    if (r->session) cg_session_free(r->session);
    plan_free(&r->plan);
    cg_free(r->destination);
    cg_free(r->staging_trace);
    cg_free(r->nsight_dir);
    cg_free(r);
}
