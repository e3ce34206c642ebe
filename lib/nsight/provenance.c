/* provenance.c — capture-manifest.json (`candle-graph/nsight-capture/1`):
 * parsing into a normalized manifest, the load-time checks, and binding to a
 * trace run (§10 "Provenance"). A mismatch never discards normalized rows. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "nsight/nsight_internal.h"

static void issue(cg_arena *a, cg_nsight_provenance *p, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void issue(cg_arena *a, cg_nsight_provenance *p, size_t *cap, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char **items = (const char **)p->issues.items;
    size_t n = p->issues.n;
    CG_NSI_PUSH(a, items, n, *cap, cg_arena_strdup(a, msg));
    p->issues.items = items;
    p->issues.n = n;
}

/* ---- manifest parsing (serde-like: required fields, unknown ones ignored,
 * duplicate keys rejected) ---- */

typedef struct manifest {
    const char *schema, *run_id, *correlation_id;
    cg_strlist required, gpu, cpu;
    bool has_partition; /* gpu or cpu list non-empty */
    struct decl {
        const char *path, *sha256;
        uint64_t size;
    } *artifacts;
    size_t n_artifacts;
} manifest;

static int need_obj(const cg_jv *v, const char *what, cg_error *err) {
    if (!v) return cg_err_set(err, CG_EPARSE, "missing field `%s`", what);
    if (v->type != CG_JOBJ) return cg_err_set(err, CG_EPARSE, "field `%s` must be an object", what);
    const char *dup = cg_jv_obj_dup_key(v);
    if (dup) return cg_err_set(err, CG_EPARSE, "duplicate field `%s` in `%s`", dup, what);
    return 0;
}

static const char *need_str(const cg_jv *obj, const char *key, const char *what, bool optional,
                            cg_error *err, int *rc) {
    const cg_jv *v = cg_jv_get(obj, key);
    if (!v) {
        if (!optional) *rc = cg_err_set(err, CG_EPARSE, "missing field `%s`", what);
        return NULL;
    }
    const char *s = cg_jv_as_str(v);
    if (!s || strlen(s) != v->u.str.len) {
        *rc = cg_err_set(err, CG_EPARSE, "field `%s` must be a string", what);
        return NULL;
    }
    return s;
}

static int str_array(cg_arena *a, const cg_jv *obj, const char *key, bool optional, cg_strlist *out,
                     cg_jv **json_out, cg_error *err) {
    out->items = NULL;
    out->n = 0;
    *json_out = cg_jv_arr(a);
    const cg_jv *v = cg_jv_get(obj, key);
    if (!v) return optional ? 0 : cg_err_set(err, CG_EPARSE, "missing field `%s`", key);
    if (v->type != CG_JARR) return cg_err_set(err, CG_EPARSE, "field `%s` must be an array", key);
    out->items = cg_arena_alloc(a, (v->u.arr.n ? v->u.arr.n : 1) * sizeof(char *));
    for (size_t i = 0; i < v->u.arr.n; i++) {
        const char *s = cg_jv_as_str(v->u.arr.items[i]);
        if (!s || strlen(s) != v->u.arr.items[i]->u.str.len)
            return cg_err_set(err, CG_EPARSE, "field `%s` must be an array of strings", key);
        out->items[out->n++] = s;
        cg_jv_arr_push(a, *json_out, cg_jv_str(a, s));
    }
    return 0;
}

static int cmp_str_ptr(const void *x, const void *y) {
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static int cmp_member(const void *x, const void *y) {
    return strcmp(((const cg_jmember *)x)->key, ((const cg_jmember *)y)->key);
}

/* Parses and normalizes the manifest; *capture receives the normalized JSON
 * (fields in manifest order; source_revisions sorted by key like a BTreeMap). */
static int parse_manifest(cg_arena *a, const char *text, size_t len, manifest *m, cg_jv **capture,
                          cg_error *err) {
    memset(m, 0, sizeof *m);
    cg_json_limits jl;
    cg_json_limits_default(&jl);
    jl.max_depth = 16;
    cg_jv *root = cg_json_parse(a, text, len, &jl, err);
    if (!root) return -1;
    if (need_obj(root, "manifest", err)) return -1;
    int rc = 0;
    cg_jv *cap = cg_jv_obj(a);
    m->schema = need_str(root, "schema", "schema", false, err, &rc);
    if (rc) return -1;
    cg_jv_obj_put(a, cap, "schema", cg_jv_str(a, m->schema));

    const cg_jv *run = cg_jv_get(root, "run");
    if (need_obj(run, "run", err)) return -1;
    m->run_id = need_str(run, "id", "run.id", false, err, &rc);
    const char *started = need_str(run, "started_at", "run.started_at", true, err, &rc);
    if (rc) return -1;
    cg_jv *jrun = cg_jv_obj(a);
    cg_jv_obj_put(a, jrun, "id", cg_jv_str(a, m->run_id));
    if (started) cg_jv_obj_put(a, jrun, "started_at", cg_jv_str(a, started));
    cg_jv_obj_put(a, cap, "run", jrun);

    const cg_jv *corr = cg_jv_get(root, "correlation");
    if (need_obj(corr, "correlation", err)) return -1;
    m->correlation_id = need_str(corr, "id", "correlation.id", false, err, &rc);
    if (rc) return -1;
    cg_jv *jcorr = cg_jv_obj(a);
    cg_jv_obj_put(a, jcorr, "id", cg_jv_str(a, m->correlation_id));
    cg_jv_obj_put(a, cap, "correlation", jcorr);

    const cg_jv *tool = cg_jv_get(root, "tool");
    if (need_obj(tool, "tool", err)) return -1;
    const char *tname = need_str(tool, "name", "tool.name", false, err, &rc);
    if (rc) return -1;
    const char *tver = need_str(tool, "version", "tool.version", false, err, &rc);
    if (rc) return -1;
    cg_jv *jtool = cg_jv_obj(a);
    cg_jv_obj_put(a, jtool, "name", cg_jv_str(a, tname));
    cg_jv_obj_put(a, jtool, "version", cg_jv_str(a, tver));
    cg_jv_obj_put(a, cap, "tool", jtool);

    cg_strlist tmp;
    cg_jv *jarr;
    if (str_array(a, root, "commands", false, &tmp, &jarr, err)) return -1;
    cg_jv_obj_put(a, cap, "commands", jarr);

    const cg_jv *hw = cg_jv_get(root, "hardware");
    if (need_obj(hw, "hardware", err)) return -1;
    const char *host = need_str(hw, "host", "hardware.host", true, err, &rc);
    if (rc) return -1;
    cg_jv *jhw = cg_jv_obj(a);
    if (host) cg_jv_obj_put(a, jhw, "host", cg_jv_str(a, host));
    if (str_array(a, hw, "devices", false, &tmp, &jarr, err))
        return cg_err_context(err, "hardware");
    cg_jv_obj_put(a, jhw, "devices", jarr);
    cg_jv_obj_put(a, cap, "hardware", jhw);

    const cg_jv *rev = cg_jv_get(root, "source_revisions");
    if (need_obj(rev, "source_revisions", err)) return -1;
    cg_jmember *mem = cg_arena_alloc(a, (rev->u.obj.n ? rev->u.obj.n : 1) * sizeof *mem);
    for (size_t i = 0; i < rev->u.obj.n; i++) {
        const char *s = cg_jv_as_str(rev->u.obj.m[i].val);
        if (!s || strlen(rev->u.obj.m[i].key) != rev->u.obj.m[i].key_len)
            return cg_err_set(err, CG_EPARSE, "field `source_revisions` must map strings to strings");
        mem[i] = rev->u.obj.m[i];
    }
    qsort(mem, rev->u.obj.n, sizeof *mem, cmp_member);
    cg_jv *jrev = cg_jv_obj(a);
    for (size_t i = 0; i < rev->u.obj.n; i++)
        cg_jv_obj_put(a, jrev, mem[i].key, cg_jv_clone(a, mem[i].val));
    cg_jv_obj_put(a, cap, "source_revisions", jrev);

    if (str_array(a, root, "required_semantic_labels", false, &m->required, &jarr, err)) return -1;
    cg_jv_obj_put(a, cap, "required_semantic_labels", jarr);
    /* the two partition lists default to empty (legacy manifests) */
    if (str_array(a, root, "gpu_expected_semantic_labels", true, &m->gpu, &jarr, err)) return -1;
    cg_jv_obj_put(a, cap, "gpu_expected_semantic_labels", jarr);
    if (str_array(a, root, "cpu_only_semantic_labels", true, &m->cpu, &jarr, err)) return -1;
    cg_jv_obj_put(a, cap, "cpu_only_semantic_labels", jarr);
    m->has_partition = m->gpu.n > 0 || m->cpu.n > 0;

    const cg_jv *arts = cg_jv_get(root, "artifacts");
    if (!arts) return cg_err_set(err, CG_EPARSE, "missing field `artifacts`");
    if (arts->type != CG_JARR) return cg_err_set(err, CG_EPARSE, "field `artifacts` must be an array");
    cg_jv *jarts = cg_jv_arr(a);
    m->artifacts = cg_arena_alloc(a, (arts->u.arr.n ? arts->u.arr.n : 1) * sizeof *m->artifacts);
    for (size_t i = 0; i < arts->u.arr.n; i++) {
        const cg_jv *e = arts->u.arr.items[i];
        if (need_obj(e, "artifacts[]", err)) return -1;
        struct decl d;
        d.path = need_str(e, "path", "artifacts[].path", false, err, &rc);
        if (rc) return -1;
        if (!cg_jv_as_u64(cg_jv_get(e, "size_bytes"), &d.size))
            return cg_err_set(err, CG_EPARSE, "field `artifacts[].size_bytes` must be an unsigned integer");
        d.sha256 = need_str(e, "sha256", "artifacts[].sha256", false, err, &rc);
        if (rc) return -1;
        m->artifacts[m->n_artifacts++] = d;
        cg_jv *ja = cg_jv_obj(a);
        cg_jv_obj_put(a, ja, "path", cg_jv_str(a, d.path));
        cg_jv_obj_put(a, ja, "size_bytes", cg_jv_u64(a, d.size));
        cg_jv_obj_put(a, ja, "sha256", cg_jv_str(a, d.sha256));
        cg_jv_arr_push(a, jarts, ja);
    }
    cg_jv_obj_put(a, cap, "artifacts", jarts);
    *capture = cap;
    return 0;
}

/* First duplicated label in byte order, or NULL. */
static const char *first_duplicate(cg_arena *a, const cg_strlist *l) {
    if (l->n < 2) return NULL;
    const char **tmp = cg_arena_alloc(a, l->n * sizeof(char *));
    memcpy(tmp, l->items, l->n * sizeof(char *));
    qsort(tmp, l->n, sizeof *tmp, cmp_str_ptr);
    for (size_t i = 1; i < l->n; i++)
        if (strcmp(tmp[i - 1], tmp[i]) == 0) return tmp[i];
    return NULL;
}

static bool same_set(cg_arena *a, const cg_strlist *x, const cg_strlist *y) {
    cg_strlist sx = cg_nsi_sorted_set(a, x), sy = cg_nsi_sorted_set(a, y);
    if (sx.n != sy.n) return false;
    for (size_t i = 0; i < sx.n; i++)
        if (strcmp(sx.items[i], sy.items[i]) != 0) return false;
    return true;
}

static bool unsafe_path(const char *p) {
    if (p[0] == '\0' || p[0] == '/') return true;
    const char *s = p;
    for (;;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return true;
        if (!e) return false;
        s = e + 1;
    }
}

/* entries are sorted by name (byte order) */
static const cg_nsi_dir_entry *find_entry(const cg_nsi_dir_entry *e, size_t n, const char *name) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(e[mid].name, name);
        if (c == 0) return &e[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

void cg_nsi_provenance_load(cg_arena *a, cg_nsight_evidence *ev, const char *dir,
                            const cg_nsi_dir_entry *entries, size_t n_entries,
                            const cg_strlist *required, const cg_strlist *gpu_expected,
                            const cg_strlist *cpu_only, const cg_nsight_limits *lim) {
    cg_nsight_provenance *p = &ev->provenance;
    memset(p, 0, sizeof *p);
    p->binding = CG_NSIGHT_PARTIAL;
    const cg_nsi_dir_entry *me = find_entry(entries, n_entries, CG_NSIGHT_MANIFEST_FILE);
    if (!me || !me->regular) {
        p->reason = CG_NSIGHT_MANIFEST_FILE " is absent";
        return;
    }
    char *path = cg_path_join(dir, CG_NSIGHT_MANIFEST_FILE);
    cg_error err;
    size_t len = 0;
    char *text = cg_read_file(path, lim->max_manifest_bytes, &len, &err);
    free(path);
    if (!text) {
        p->reason = cg_arena_printf(a, CG_NSIGHT_MANIFEST_FILE " is invalid: %s", err.msg);
        cg_nsi_diag(a, ev, CG_NSIGHT_MANIFEST_FILE ": %s", err.msg);
        return;
    }
    p->manifest_file = cg_arena_zalloc(a, sizeof *p->manifest_file);
    p->manifest_file->path = CG_NSIGHT_MANIFEST_FILE;
    p->manifest_file->size_bytes = len;
    cg_sha256_hex(text, len, p->manifest_file->sha256);
    manifest m;
    cg_jv *capture = NULL;
    int rc = parse_manifest(a, text, len, &m, &capture, &err);
    free(text);
    if (rc != 0) {
        p->reason = cg_arena_printf(a, CG_NSIGHT_MANIFEST_FILE " is invalid: %s", err.msg);
        cg_nsi_diag(a, ev, CG_NSIGHT_MANIFEST_FILE ": %s", err.msg);
        return;
    }
    p->manifest_valid = true;
    p->capture = capture;
    p->run_id = m.run_id;
    p->correlation_id = m.correlation_id;

    size_t icap = 0;
    if (strcmp(m.schema, CG_NSIGHT_CAPTURE_SCHEMA) != 0)
        issue(a, p, &icap, "capture manifest schema %s is not %s", m.schema, CG_NSIGHT_CAPTURE_SCHEMA);
    if (!ev->raw_report) issue(a, p, &icap, "Nsight capture has no raw .nsys-rep report");

    /* semantic label contract */
    const cg_strlist *lists[3] = {&m.required, &m.gpu, &m.cpu};
    const char *list_names[3] = {"required", "GPU-expected", "CPU-only"};
    for (int k = 0; k < 3; k++) {
        const char *dup = first_duplicate(a, lists[k]);
        if (dup)
            issue(a, p, &icap, "capture manifest declares %s semantic label %s more than once",
                  list_names[k], dup);
    }
    cg_strlist empty = {NULL, 0};
    /* legacy manifest (no partition): GPU-expected = required */
    const cg_strlist *m_gpu = m.has_partition ? &m.gpu : &m.required;
    const cg_strlist *m_cpu = m.has_partition ? &m.cpu : &empty;
    if (!same_set(a, &m.required, required))
        issue(a, p, &icap, "capture manifest required semantic labels do not match the trace contract");
    if (!same_set(a, m_gpu, gpu_expected))
        issue(a, p, &icap,
              "capture manifest GPU-expected semantic labels do not match the trace contract");
    if (!same_set(a, m_cpu, cpu_only))
        issue(a, p, &icap, "capture manifest CPU-only semantic labels do not match the trace contract");

    /* declared artifacts (paths seen so far kept as a sorted set for the
     * duplicate check; inputs are bounded by max_manifest_bytes) */
    cg_strlist declared = {cg_arena_alloc(a, (m.n_artifacts ? m.n_artifacts : 1) * sizeof(char *)), 0};
    for (size_t i = 0; i < m.n_artifacts; i++) declared.items[declared.n++] = m.artifacts[i].path;
    declared = cg_nsi_sorted_set(a, &declared);
    bool *reported_dup = cg_arena_zalloc(a, (declared.n ? declared.n : 1) * sizeof(bool));
    size_t *seen = cg_arena_zalloc(a, (declared.n ? declared.n : 1) * sizeof(size_t));
    for (size_t i = 0; i < m.n_artifacts; i++) {
        const struct decl *d = &m.artifacts[i];
        if (unsafe_path(d->path)) {
            issue(a, p, &icap, "capture manifest artifact path %s is unsafe", d->path);
            continue;
        }
        size_t lo = 0, hi = declared.n;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (strcmp(declared.items[mid], d->path) < 0) lo = mid + 1;
            else hi = mid;
        }
        if (seen[lo]++) {
            if (!reported_dup[lo])
                issue(a, p, &icap, "capture manifest declares artifact %s more than once", d->path);
            reported_dup[lo] = true;
            continue;
        }
        const cg_nsi_dir_entry *e = find_entry(entries, n_entries, d->path);
        if (!e || !e->regular) {
            issue(a, p, &icap, "capture manifest artifact %s is missing", d->path);
            continue;
        }
        uint64_t size;
        char hex[65];
        if (e->art) {
            size = e->art->size_bytes;
            memcpy(hex, e->art->sha256, sizeof hex);
        } else {
            char *fp = cg_path_join(dir, d->path);
            int hrc = cg_sha256_file(fp, true, hex, &size, &err);
            free(fp);
            if (hrc != 0) {
                issue(a, p, &icap, "capture manifest artifact %s could not be read: %s", d->path,
                      err.msg);
                continue;
            }
        }
        if (size != d->size)
            issue(a, p, &icap,
                  "capture manifest artifact %s size %llu does not match the file size %llu", d->path,
                  (unsigned long long)d->size, (unsigned long long)size);
        if (strlen(d->sha256) != 64 || strcasecmp(d->sha256, hex) != 0)
            issue(a, p, &icap, "capture manifest artifact %s SHA-256 does not match the file", d->path);
    }
    /* every retained file must be declared */
    for (size_t i = 0; i < n_entries; i++) {
        if (!entries[i].retained) continue;
        if (!cg_nsi_set_contains(&declared, entries[i].name))
            issue(a, p, &icap, "retained Nsight file %s is not declared in the capture manifest",
                  entries[i].name);
    }

    if (p->issues.n) {
        p->binding = CG_NSIGHT_MISMATCH;
        p->reason = p->issues.items[0];
    } else {
        p->reason = "capture manifest was not bound to a trace run";
    }
}

void cg_nsight_bind_to_trace(cg_nsight_evidence *ev, const char *run_id, const char *correlation_id) {
    cg_nsight_provenance *p = &ev->provenance;
    if (p->binding == CG_NSIGHT_MISMATCH || !p->manifest_valid) return;
    cg_arena *a = ev->arena;
    size_t icap = p->issues.n;
    /* issues was built with capacity >= n; start a fresh array to append */
    const char **items = cg_arena_alloc(a, (p->issues.n + 2) * sizeof(char *));
    if (p->issues.n) memcpy(items, p->issues.items, p->issues.n * sizeof(char *));
    p->issues.items = items;
    icap = p->issues.n + 2;
    if (!run_id || strcmp(p->run_id, run_id) != 0)
        issue(a, p, &icap, "capture manifest run id %s does not match trace run id %s", p->run_id,
              run_id ? run_id : "(none)");
    if (!correlation_id || strcmp(p->correlation_id, correlation_id) != 0)
        issue(a, p, &icap,
              "capture manifest correlation id %s does not match trace correlation id %s",
              p->correlation_id, correlation_id ? correlation_id : "(none)");
    if (p->issues.n) {
        p->binding = CG_NSIGHT_MISMATCH;
        p->reason = p->issues.items[0];
    } else {
        p->binding = CG_NSIGHT_BOUND;
        p->reason = "capture manifest matches the trace run and correlation ids, the semantic "
                    "label contract and every retained artifact";
    }
}
