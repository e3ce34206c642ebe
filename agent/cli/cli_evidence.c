#include "cli_evidence.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analysis/graph.h"
#include "base/fs.h"
#include "bundle/outpath.h"
#include "cli_util.h"

static bool has_file(const char *dir, const char *name) {
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    return cg_path_exists(p);
}

int cli_check_output_outside(const char *out_path, const char *bundle_root, cg_error *err) {
    if (!bundle_root) return 0;
    return cg_bundle_check_output_path(out_path, bundle_root, err);
}

static cg_jv *input_json(cg_arena *a, const char *requested, const cli_loaded *l) {
    cg_jv *o = cg_jv_obj(a);
    cg_jv_obj_put(a, o, "kind", cg_jv_str_nocopy(a, l->is_bundle ? "verified_bundle" : "raw_trace"));
    cg_jv_obj_put(a, o, "requested_path", cg_jv_str(a, requested));
    cg_jv_obj_put(a, o, "trace_path", cg_jv_str(a, l->trace_path));
    if (l->is_bundle) cg_jv_obj_put(a, o, "bundle_root", cg_jv_str(a, l->bundle_root));
    cg_jv_obj_put(a, o, "evidence_source",
                  cg_jv_str_nocopy(a, l->is_bundle ? "verified_evidence_json" : "trace_reconstruction"));
    bool bound = false;
    if (l->packet) {
        const char *b = cg_jv_as_str(cg_jv_get(cg_jv_get(cg_jv_get(l->packet, "gpu"), "provenance"), "binding"));
        bound = b && !strcmp(b, "bound");
    }
    cg_jv_obj_put(a, o, "gpu_identity_bound", cg_jv_bool(a, bound));
    if (l->is_bundle) cg_jv_obj_put(a, o, "verification", cg_bundle_receipt_to_json(a, &l->receipt));
    return o;
}

/* TraceRunMeta as compared by upstream (struct equality, bundles spec §7): a
 * null Option equals an absent one, and a defaulted field written with its
 * default equals an absent one. Returns a copy without such members. */
static bool defaulted_member(bool in_contract, bool in_meta, const char *k, const cg_jv *v) {
    if (v->type == CG_JNULL) return true;
    if (in_meta && !strcmp(k, "measured_region_device_synchronized")) return v->type == CG_JBOOL && !v->u.b;
    if (!in_contract) return false;
    if (!strcmp(k, "tensors") || !strcmp(k, "gradients")) {
        const char *s = cg_jv_as_str(v);
        return s && !strcmp(s, "none");
    }
    if (!strcmp(k, "required_semantic_labels") || !strcmp(k, "gpu_expected_semantic_labels") ||
        !strcmp(k, "cpu_only_semantic_labels"))
        return v->type == CG_JARR && cg_jv_len(v) == 0;
    return false;
}

static cg_jv *meta_canonical(cg_arena *a, const cg_jv *v, bool in_meta, bool in_contract) {
    if (!v || v->type != CG_JOBJ) return (cg_jv *)v;
    cg_jv *o = cg_jv_obj(a);
    for (size_t i = 0; i < v->u.obj.n; i++) {
        const cg_jmember *m = &v->u.obj.m[i];
        if (defaulted_member(in_contract, in_meta, m->key, m->val)) continue;
        bool contract = in_meta && !strcmp(m->key, "capture_contract");
        cg_jv_obj_put(a, o, m->key, meta_canonical(a, m->val, false, contract));
    }
    return o;
}

/* The packet's schema checks run inside serde (deserialize_with), so their
 * errors carry the reader's position just past the schema string read. */
static void schema_position(cg_error *err, const char *text, size_t len, const cg_jv *packet) {
    static const cg_json_step top[] = {{"schema", 0}}, graph[] = {{"graph", 0}, {"schema", 0}};
    const char *schema = cg_jv_as_str(cg_jv_get(packet, "schema"));
    const char *gschema = cg_jv_as_str(cg_jv_get(cg_jv_get(packet, "graph"), "schema"));
    if (schema && strcmp(schema, CG_EVIDENCE_SCHEMA) != 0)
        cg_json_err_at(err, text, cg_json_locate(text, len, top, 1, CG_JSON_VALUE_END));
    else if (schema && gschema && strcmp(gschema, CG_GRAPH_SCHEMA) != 0)
        cg_json_err_at(err, text, cg_json_locate(text, len, graph, 2, CG_JSON_VALUE_END));
}

static int load_bundle(cg_arena *a, cli_loaded *l, cg_error *err) {
    if (cg_bundle_verify(l->bundle_root, &l->receipt, err) != 0)
        return cg_err_context(err, "verify evidence bundle %s", l->bundle_root);
    snprintf(l->trace_path, sizeof l->trace_path, "%.4000s/trace.jsonl", l->bundle_root);
    l->trace = cg_trace_read_file(l->trace_path, NULL, err);
    if (!l->trace) return cg_err_context(err, "parse verified bundle trace %s", l->trace_path);
    if (strcmp(l->trace->run.run_id, l->receipt.run_id) != 0)
        return cg_err_set(err, CG_EVERIFY, "verified bundle manifest run ID %s does not match trace run ID %s",
                          CG_QUOTE(l->receipt.run_id), CG_QUOTE(l->trace->run.run_id));
    char ev_path[4200];
    snprintf(ev_path, sizeof ev_path, "%.4000s/evidence.json", l->bundle_root);
    l->evfile = cg_evidence_file_open(ev_path, true, err);
    if (!l->evfile) return cg_err_context(err, "read verified evidence packet %s", ev_path);
    cg_evidence_read_limits lim;
    cg_evidence_read_limits_default(&lim);
    lim.json.max_depth = 128;
    l->packet = cg_evidence_file_parse(l->evfile, a, &lim, err);
    int bad = !l->packet || cg_evidence_validate_schema(l->packet, err) != 0;
    if (bad && l->packet) {
        size_t len;
        const char *text = cg_evidence_file_text(l->evfile, &len);
        schema_position(err, text, len, l->packet);
    }
    if (bad) return cg_err_context(err, "parse verified evidence packet %s", ev_path);
    cg_jv *prov = cg_run_meta_to_json(a, &l->trace->run);
    if (!cg_jv_equal(meta_canonical(a, prov, true, false),
                     meta_canonical(a, cg_jv_get(l->packet, "provenance"), true, false)))
        return cg_err_set(err, CG_EVERIFY, "verified evidence packet provenance does not match its trace metadata");
    const char *consumed[] = {"trace.jsonl", "evidence.json"};
    if (cg_bundle_verify_consumed(l->bundle_root, &l->receipt, consumed, 2, err) != 0)
        return cg_err_context(err, "post-read verify consumed files in evidence bundle %s", l->bundle_root);
    return 0;
}

int cli_load_evidence(cg_arena *a, const char *path, const char *nsight_dir, cli_loaded *l, cg_error *err) {
    return cli_load_evidence_ex(a, path, nsight_dir, false, l, err);
}

/* A raw input whose parent holds evidence.json or nsight/ without bundle.json
 * would silently lose its unverified GPU evidence: refused. */
static int reject_augmented_parent(const char *root, cg_error *err) {
    if (has_file(root, "evidence.json") || has_file(root, "nsight"))
        return cg_err_set(err, CG_EINVAL,
                          "input parent %s contains augmented evidence but no bundle.json; refusing to discard "
                          "unverified GPU evidence and rebuild as trace-only",
                          root);
    return 0;
}

/* The crate's resolution: a directory is a bundle (bundle.json) or a raw-trace
 * directory (a trace.jsonl file); a file whose parent holds bundle.json
 * resolves to that bundle; anything else is a raw trace. */
static int resolve_input(const char *path, cli_loaded *l, cg_error *err) {
    struct stat st;
    if (stat(path, &st) != 0) return cg_err_set(err, CG_EIO, "evidence input does not exist: %s", path);
    if (S_ISDIR(st.st_mode)) {
        if (has_file(path, "bundle.json")) {
            l->is_bundle = true;
            snprintf(l->bundle_root, sizeof l->bundle_root, "%.4000s", path);
            return 0;
        }
        snprintf(l->trace_path, sizeof l->trace_path, "%.4000s/trace.jsonl", path);
        struct stat ts;
        if (stat(l->trace_path, &ts) != 0 || !S_ISREG(ts.st_mode))
            return cg_err_set(err, CG_EINVAL,
                              "input directory is neither a finalized bundle nor a raw-trace directory: %s", path);
        return reject_augmented_parent(path, err);
    }
    if (!S_ISREG(st.st_mode)) return cg_err_set(err, CG_EINVAL, "evidence input is not a regular file: %s", path);
    char dir[4000];
    cg_path_parent(path, dir, sizeof dir);
    if (has_file(dir, "bundle.json")) {
        l->is_bundle = true;
        snprintf(l->bundle_root, sizeof l->bundle_root, "%.4000s", dir);
        return 0;
    }
    snprintf(l->trace_path, sizeof l->trace_path, "%.4000s", path);
    return reject_augmented_parent(dir, err);
}

static int load(cg_arena *a, const char *path, const char *nsight_dir, bool lazy, bool summary_only, cli_loaded *l,
                cg_error *err) {
    memset(l, 0, sizeof *l);
    if (resolve_input(path, l, err) != 0) return -1;
    if (l->is_bundle) {
        if (nsight_dir)
            return cg_err_set(err, CG_EINVAL, "bundle inputs already bind their Nsight evidence; drop --nsight-dir for %s",
                              path);
        if (load_bundle(a, l, err) != 0) return -1;
        if (!lazy) cg_jv_materialize(a, l->packet);
    } else {
        l->trace = cg_trace_read_file(l->trace_path, NULL, err);
        if (!l->trace) return cg_err_context(err, "parse trace %s", l->trace_path); /* build_evidence's context */
        l->evidence = summary_only ? cg_evidence_build_summary(a, l->trace, nsight_dir, err)
                                   : cg_evidence_build(a, l->trace, nsight_dir, err);
        if (!l->evidence) return -1;
        l->packet = lazy ? cg_evidence_to_json_lazy(a, l->evidence) : cg_evidence_to_json(a, l->evidence);
    }
    l->input = input_json(a, path, l);
    return 0;
}

int cli_load_evidence_ex(cg_arena *a, const char *path, const char *nsight_dir, bool lazy, cli_loaded *l,
                         cg_error *err) {
    return load(a, path, nsight_dir, lazy, false, l, err);
}

void cli_loaded_free(cli_loaded *l) {
    if (l->evidence) cg_evidence_free(l->evidence);
    cg_trace_free(l->trace);
    cg_evidence_file_close(l->evfile);
    l->evidence = NULL;
    l->trace = NULL;
    l->evfile = NULL;
}

int cli_evidence_arg(const char *cmd, int argc, char **argv, int *i, bool allow_nsight, cli_evidence_args *ea) {
    int r;
    if ((r = cli_take_value(argc, argv, i, "--output", "-o", &ea->out))) return r < 0 ? 2 : 0;
    if (allow_nsight && (r = cli_take_value(argc, argv, i, "--nsight-dir", NULL, &ea->nsight_dir)))
        return r < 0 ? 2 : 0;
    if (argv[*i][0] == '-' && argv[*i][1]) return cli_usage_unexpected(cmd, argv[*i]);
    if (ea->input) return cli_usage_unexpected(cmd, argv[*i]);
    ea->input = argv[*i];
    return 0;
}

int cli_evidence_require_input(const char *cmd, const cli_evidence_args *ea) {
    return ea->input ? 0 : cli_usage_missing(cmd, !strcmp(cmd, "view") ? "<TRACE>" : "<INPUT>");
}

int cli_evidence_parse(const char *cmd, int argc, char **argv, cli_evidence_args *ea) {
    memset(ea, 0, sizeof *ea);
    for (int i = 1; i < argc; i++) {
        int rc = cli_evidence_arg(cmd, argc, argv, &i, true, ea);
        if (rc) return rc;
    }
    return cli_evidence_require_input(cmd, ea);
}

int cli_evidence_open(const cli_evidence_args *ea, bool lazy, cli_evidence *ev) {
    cg_arena_init(&ev->arena, 1 << 20);
    cg_error err;
    cg_err_clear(&err);
    if (load(&ev->arena, ea->input, ea->nsight_dir, lazy, ea->summary_only, &ev->l, &err) != 0 ||
        cli_check_output_outside(ea->out, ev->l.is_bundle ? ev->l.bundle_root : NULL, &err) != 0)
        return cli_fail(&err);
    return 0;
}

void cli_evidence_close(cli_evidence *ev) {
    cli_loaded_free(&ev->l);
    cg_arena_free(&ev->arena);
}
