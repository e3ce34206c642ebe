#include "cli_input.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"

static bool has_entry(const char *dir, const char *name) {
    char p[8400];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return cg_path_exists(p);
}

static int copy_path(char *dst, size_t cap, const char *src, cg_error *err) {
    size_t n = strlen(src);
    if (n >= cap) return cg_err_set(err, CG_ELIMIT, "input path is longer than %zu bytes", cap - 1);
    memcpy(dst, src, n + 1);
    return 0;
}

int cli_resolve_input(const char *path, cli_input *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    if (copy_path(out->requested_path, sizeof out->requested_path, path, err)) return -1;
    struct stat st;
    if (stat(path, &st) != 0) return cg_err_set(err, CG_EIO, "input %s: %s", path, strerror(errno));
    bool is_dir = S_ISDIR(st.st_mode);
    char dir[4096];
    if (is_dir) {
        if (copy_path(dir, sizeof dir, path, err)) return -1;
    } else {
        cg_path_parent(path, dir, sizeof dir);
    }
    /* a bundle directory, or the bundle's own trace.jsonl */
    if (has_entry(dir, "bundle.json") && (is_dir || !strcmp(cg_path_base(path), "trace.jsonl"))) {
        out->is_bundle = true;
        memcpy(out->bundle_root, dir, strlen(dir) + 1);
        snprintf(out->trace_path, sizeof out->trace_path, "%s/trace.jsonl", dir);
        return 0;
    }
    if (has_entry(dir, "evidence.json") || has_entry(dir, "nsight"))
        return cg_err_set(err, CG_EINVAL,
                          "%s holds evidence.json or nsight/ but no bundle.json; refusing to discard unverified GPU "
                          "evidence and rebuild as trace-only",
                          dir);
    if (is_dir) {
        snprintf(out->trace_path, sizeof out->trace_path, "%s/trace.jsonl", dir);
        if (!cg_path_exists(out->trace_path))
            return cg_err_set(err, CG_EINVAL, "input directory %s holds no trace.jsonl", path);
    } else {
        if (!S_ISREG(st.st_mode)) return cg_err_set(err, CG_EINVAL, "input %s is not a regular file", path);
        snprintf(out->trace_path, sizeof out->trace_path, "%s", path);
    }
    return 0;
}

cg_jv *cli_raw_input_json(cg_arena *a, const cli_input *in) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, "raw_trace"));
    cg_jv_obj_put(a, o, "requested_path", cg_jv_str(a, in->requested_path));
    cg_jv_obj_put(a, o, "trace_path", cg_jv_str(a, in->trace_path));
    cg_jv_obj_put(a, o, "evidence_source", cg_jv_str_nocopy(a, "trace_reconstruction"));
    cg_jv_obj_put(a, o, "gpu_identity_bound", cg_jv_bool(a, false));
    return o;
}
