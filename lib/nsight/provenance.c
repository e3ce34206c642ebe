/* provenance.c — capture-manifest.json (`candle-graph/nsight-capture/1`):
 * parsing into the manifest the crate re-serializes, the load-time checks
 * (validate_provenance) and binding to a trace run (bind_to_trace), with the
 * crate's diagnostics (src/nsight.rs at 65b3678d). A mismatch never discards
 * normalized rows. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "nsight/nsight_internal.h"

void cg_nsi_prov_diag(cg_arena *a, cg_nsight_provenance *p, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char **items = (const char **)p->diagnostics.items;
    size_t n = p->diagnostics.n;
    CG_NSI_PUSH(a, items, n, p->diag_cap, cg_arena_strdup(a, msg));
    p->diagnostics.items = items;
    p->diagnostics.n = n;
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
    if (!v || (optional && v->type == CG_JNULL)) { /* an Option accepts null */
        if (!optional) *rc = cg_err_set(err, CG_EPARSE, "missing field `%s`", what);
        return NULL;
    }
    const char *s = cg_jv_as_cstr(v);
    if (!s) {
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
        const char *s = cg_jv_as_cstr(v->u.arr.items[i]);
        if (!s)
            return cg_err_set(err, CG_EPARSE, "field `%s` must be an array of strings", key);
        out->items[out->n++] = s;
        cg_jv_arr_push(a, *json_out, cg_jv_str(a, s));
    }
    return 0;
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
    if (str_array(a, hw, "devices", true, &tmp, &jarr, err))
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
    /* the two partition lists default to empty (legacy manifests) and are
     * omitted again when empty */
    if (str_array(a, root, "gpu_expected_semantic_labels", true, &m->gpu, &jarr, err)) return -1;
    if (m->gpu.n) cg_jv_obj_put(a, cap, "gpu_expected_semantic_labels", jarr);
    if (str_array(a, root, "cpu_only_semantic_labels", true, &m->cpu, &jarr, err)) return -1;
    if (m->cpu.n) cg_jv_obj_put(a, cap, "cpu_only_semantic_labels", jarr);
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

/* Rust's `{:?}` of a Vec<String>: ["a", "b"] with string escapes. */
static const char *debug_list(cg_arena *a, const cg_strlist *l) {
    cg_buf b = CG_BUF_INIT;
    cg_buf_putc(&b, '[');
    for (size_t i = 0; i < l->n; i++) {
        cg_buf_puts(&b, i ? ", \"" : "\"");
        for (const unsigned char *c = (const unsigned char *)l->items[i]; *c; c++) {
            if (*c == '"' || *c == '\\') cg_buf_printf(&b, "\\%c", *c);
            else if (*c == '\n') cg_buf_puts(&b, "\\n");
            else if (*c == '\r') cg_buf_puts(&b, "\\r");
            else if (*c == '\t') cg_buf_puts(&b, "\\t");
            else if (*c < 0x20 || *c == 0x7f) cg_buf_printf(&b, "\\u{%x}", *c);
            else cg_buf_putc(&b, (char)*c);
        }
        cg_buf_putc(&b, '"');
    }
    cg_buf_putc(&b, ']');
    const char *out = cg_arena_strndup(a, b.data, b.len);
    cg_buf_free(&b);
    return out;
}

static bool same_list(const cg_strlist *x, const cg_strlist *y) {
    if (x->n != y->n) return false;
    for (size_t i = 0; i < x->n; i++)
        if (strcmp(x->items[i], y->items[i]) != 0) return false;
    return true;
}

/* Path::components() of a relative path yields only normal parts: not empty,
 * not absolute, no "..", no leading "."; interior "." and repeated or trailing
 * separators are normalized away by Rust and so allowed. */
static bool safe_relative_path(const char *p) {
    if (p[0] == '\0' || p[0] == '/') return false;
    if (p[0] == '.' && (p[1] == '/' || p[1] == '\0')) return false;
    for (const char *s = p;;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (n == 2 && s[0] == '.' && s[1] == '.') return false;
        if (!e) return true;
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

/* The semantic label checks of validate_provenance, in the crate's order. */
static void check_labels(cg_arena *a, cg_nsight_provenance *p, const manifest *m, const cg_strlist *required,
                         const cg_strlist *gpu_expected, const cg_strlist *cpu_only) {
    cg_strlist m_req = cg_nsi_sorted_set(a, &m->required), want_req = cg_nsi_sorted_set(a, required);
    if (m_req.n != m->required.n) cg_nsi_prov_diag(a, p, "manifest required application labels contain duplicates");
    if (!same_list(&m_req, &want_req))
        cg_nsi_prov_diag(a, p,
                         "manifest required application labels do not match the application expectation: "
                         "expected %s, declared %s",
                         debug_list(a, &want_req), debug_list(a, &m_req));
    cg_strlist m_gpu = m->has_partition ? cg_nsi_sorted_set(a, &m->gpu) : m_req;
    cg_strlist m_cpu = cg_nsi_sorted_set(a, &m->cpu);
    if (m->has_partition && m_gpu.n != m->gpu.n)
        cg_nsi_prov_diag(a, p, "manifest GPU-expected labels contain duplicates");
    if (m_cpu.n != m->cpu.n) cg_nsi_prov_diag(a, p, "manifest CPU-only labels contain duplicates");
    cg_strlist want_gpu = cg_nsi_sorted_set(a, gpu_expected), want_cpu = cg_nsi_sorted_set(a, cpu_only);
    if (!same_list(&m_gpu, &want_gpu))
        cg_nsi_prov_diag(a, p,
                         "manifest GPU-expected labels do not match the application expectation: expected %s, "
                         "declared %s",
                         debug_list(a, &want_gpu), debug_list(a, &m_gpu));
    if (!same_list(&m_cpu, &want_cpu))
        cg_nsi_prov_diag(a, p,
                         "manifest CPU-only labels do not match the application expectation: expected %s, "
                         "declared %s",
                         debug_list(a, &want_cpu), debug_list(a, &m_cpu));
}

/* One declared artifact against the retained (or, failing that, on-disk) file. */
static void check_artifact(cg_arena *a, cg_nsight_provenance *p, const char *dir, const cg_nsi_dir_entry *e,
                           const struct decl *d) {
    uint64_t size = 0;
    char hex[65];
    if (e && e->art) {
        size = e->art->size_bytes;
        memcpy(hex, e->art->sha256, sizeof hex);
    } else {
        char *fp = cg_path_join(dir, d->path);
        struct stat st;
        bool file = stat(fp, &st) == 0 && S_ISREG(st.st_mode);
        cg_error err;
        int hrc = file ? cg_sha256_file(fp, false, hex, &size, &err) : -1;
        cg_free(fp);
        if (!file) {
            cg_nsi_prov_diag(a, p, "manifest artifact `%s` is missing", d->path);
            return;
        }
        if (hrc != 0) {
            cg_nsi_prov_diag(a, p, "manifest artifact `%s` could not be hashed: %s", d->path, err.msg);
            cg_nsi_prov_diag(a, p, "manifest artifact `%s` is missing", d->path);
            return;
        }
    }
    if (size != d->size)
        cg_nsi_prov_diag(a, p, "manifest artifact `%s` size mismatch: expected %llu, observed %llu", d->path,
                         (unsigned long long)d->size, (unsigned long long)size);
    if (strcasecmp(d->sha256, hex) != 0) cg_nsi_prov_diag(a, p, "manifest artifact `%s` SHA-256 mismatch", d->path);
}

static void check_artifacts(cg_arena *a, cg_nsight_provenance *p, const char *dir, const cg_nsi_dir_entry *entries,
                            size_t n_entries, const manifest *m, const cg_nsight_artifact *raw_report) {
    cg_strlist declared = {cg_arena_alloc(a, (m->n_artifacts ? m->n_artifacts : 1) * sizeof(char *)), 0};
    for (size_t i = 0; i < m->n_artifacts; i++) {
        const struct decl *d = &m->artifacts[i];
        bool seen = false;
        for (size_t j = 0; j < declared.n && !seen; j++) seen = strcmp(declared.items[j], d->path) == 0;
        if (seen) {
            cg_nsi_prov_diag(a, p, "manifest declares `%s` more than once", d->path);
            continue;
        }
        declared.items[declared.n++] = d->path;
        if (!safe_relative_path(d->path)) {
            cg_nsi_prov_diag(a, p, "manifest artifact path `%s` is not a safe relative path", d->path);
            continue;
        }
        const cg_nsi_dir_entry *e = find_entry(entries, n_entries, d->path);
        check_artifact(a, p, dir, e && e->retained ? e : NULL, d);
    }
    declared = cg_nsi_sorted_set(a, &declared);
    /* retained CSVs first (by name), then the raw report, as the crate chains them */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < n_entries; i++) {
            const cg_nsi_dir_entry *e = &entries[i];
            bool raw = e->art && e->art == raw_report;
            if (!e->retained || raw != (pass == 1)) continue;
            if (!cg_nsi_set_contains(&declared, e->name))
                cg_nsi_prov_diag(a, p, "retained artifact `%s` is absent from the manifest", e->name);
        }
}

/* Reads and parses the manifest; false (with a diagnostic) when there is none to use. */
static bool read_manifest(cg_arena *a, cg_nsight_provenance *p, const char *dir, const char *display,
                          const cg_nsight_limits *lim, manifest *m) {
    const char *shown = cg_nsi_display_path(a, display, CG_NSIGHT_MANIFEST_FILE);
    char *path = cg_path_join(dir, CG_NSIGHT_MANIFEST_FILE);
    cg_error err;
    size_t len = 0;
    struct stat st;
    bool present = stat(path, &st) == 0;
    char *text = present ? cg_read_file(path, lim->max_manifest_bytes, &len, &err) : NULL;
    cg_free(path);
    if (!present) {
        cg_nsi_prov_diag(a, p, "%s is absent", shown);
        return false;
    }
    if (!text) {
        cg_nsi_prov_diag(a, p, "Could not read %s: %s", shown, err.msg);
        return false;
    }
    cg_jv *capture = NULL;
    int rc = parse_manifest(a, text, len, m, &capture, &err);
    cg_free(text);
    if (rc != 0) {
        cg_nsi_prov_diag(a, p, "Invalid %s: %s", shown, err.msg);
        return false;
    }
    p->manifest = capture;
    p->run_id = m->run_id;
    p->correlation_id = m->correlation_id;
    return true;
}

void cg_nsi_provenance_load(cg_arena *a, cg_nsight_evidence *ev, const char *dir, const char *display,
                            const cg_nsi_dir_entry *entries, size_t n_entries, const cg_strlist *required,
                            const cg_strlist *gpu_expected, const cg_strlist *cpu_only, const cg_nsight_limits *lim) {
    cg_nsight_provenance *p = &ev->provenance;
    memset(p, 0, sizeof *p);
    p->binding = CG_NSIGHT_PARTIAL;
    manifest m;
    if (!read_manifest(a, p, dir, display, lim, &m)) return;
    if (strcmp(m.schema, CG_NSIGHT_CAPTURE_SCHEMA) != 0)
        cg_nsi_prov_diag(a, p, "manifest schema `%s` is unsupported; expected `%s`", m.schema, CG_NSIGHT_CAPTURE_SCHEMA);
    if (!ev->raw_report) cg_nsi_prov_diag(a, p, "a bound capture requires a retained raw .nsys-rep artifact");
    check_labels(a, p, &m, required, gpu_expected, cpu_only);
    check_artifacts(a, p, dir, entries, n_entries, &m, ev->raw_report);
    if (p->diagnostics.n) p->binding = CG_NSIGHT_MISMATCH;
}

void cg_nsight_bind_to_trace(cg_nsight_evidence *ev, const char *run_id, const char *correlation_id) {
    cg_nsight_provenance *p = &ev->provenance;
    cg_arena *a = ev->arena;
    if (!p->manifest) {
        p->binding = CG_NSIGHT_PARTIAL;
        cg_nsi_prov_diag(a, p, "Trace binding cannot be verified without capture-manifest.json");
        return;
    }
    bool run_ok = run_id && strcmp(p->run_id, run_id) == 0;
    bool corr_ok = correlation_id && strcmp(p->correlation_id, correlation_id) == 0;
    if (!run_ok)
        cg_nsi_prov_diag(a, p, "manifest run `%s` does not match trace run `%s`", p->run_id, run_id ? run_id : "");
    if (!corr_ok)
        cg_nsi_prov_diag(a, p, "manifest correlation `%s` does not match trace correlation `%s`", p->correlation_id,
                         correlation_id ? correlation_id : "");
    if (!run_ok || !corr_ok) p->binding = CG_NSIGHT_MISMATCH;
    else if (p->binding != CG_NSIGHT_MISMATCH) p->binding = CG_NSIGHT_BOUND;
}
