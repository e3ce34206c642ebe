/* fuzz_entry_bundle_manifest.c — bundle.json parsing and bundle verification on
 * untrusted manifest bytes (see fuzz_entry.h).
 *
 * The manifest is parsed in memory (cg_bundle_manifest_parse), then written as
 * bundle.json into a scratch bundle that holds the three files of the
 * good_minimal fixture, and cg_bundle_verify runs over it, so every check of
 * the spec table (schema, unsafe/duplicate paths, digests, undeclared/missing
 * files, sizes, hashes) sees hostile declarations.
 *
 * Invariants: parse rejections are CG_EPARSE with a message; an accepted
 * manifest sorts and writes to JSON that parses back and writes identically;
 * a verification failure names a reason and has a message; a success declares
 * only the scratch files, every declared path is safe, and the receipt's
 * manifest digest is the SHA-256 of the bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "bundle/manifest.h"
#include "bundle/semantic.h"
#include "bundle/verify.h"
#include "fuzz_entry.h"

static const cg_errcode parse_codes[] = {CG_EPARSE, CG_ELIMIT, CG_OK};
static const cg_errcode verify_codes[] = {CG_EPARSE, CG_ELIMIT, CG_EVERIFY, CG_OK};

static const struct {
    const char *name, *body;
} scratch_files[] = {
    {"evidence.json", "{\n  \"schema\": \"candle-graph/evidence/4\"\n}\n"},
    {"report.md", "# Evidence report\n\nfixture\n"},
    {"trace.jsonl", "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"run-fixture-1\"}\n"
                    "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":5}\n"},
};

static const char *scratch_bundle(void) {
    static char root[128];
    if (root[0]) return root;
    snprintf(root, sizeof root, "%s/bundle", cg_fuzz_scratch_dir());
    cg_error err;
    CG_FUZZ_REQUIRE(cg_mkdir_p(root, &err) == 0, "mkdir %s: %s", root, err.msg);
    for (size_t i = 0; i < sizeof scratch_files / sizeof scratch_files[0]; i++) {
        char *p = cg_path_join(root, scratch_files[i].name);
        CG_FUZZ_REQUIRE(cg_write_file(p, scratch_files[i].body, strlen(scratch_files[i].body), false, &err) == 0,
                        "write %s: %s", p, err.msg);
        free(p);
    }
    return root;
}

static void check_write_round_trip(cg_bundle_manifest *m) {
    cg_bundle_manifest_sort(m);
    for (size_t i = 1; i < m->n_files; i++) {
        const cg_bundle_file *x = &m->files[i - 1], *y = &m->files[i];
        size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
        int c = memcmp(x->path, y->path, n);
        CG_FUZZ_REQUIRE(c < 0 || (c == 0 && x->path_len <= y->path_len), "manifest sort is not in byte order");
    }
    cg_buf w1 = CG_BUF_INIT, w2 = CG_BUF_INIT;
    cg_bundle_manifest_write(&w1, m);
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_bundle_manifest back;
    cg_error err;
    cg_err_clear(&err);
    CG_FUZZ_REQUIRE(cg_bundle_manifest_parse(&a, w1.data, w1.len, &back, &err) == 0,
                    "a written manifest does not parse back: %s", err.msg);
    CG_FUZZ_REQUIRE(back.n_files == m->n_files && back.run_id_len == m->run_id_len, "manifest round trip changed it");
    cg_bundle_manifest_write(&w2, &back);
    CG_FUZZ_REQUIRE(w1.len == w2.len && memcmp(w1.data, w2.data, w1.len) == 0, "manifest write is not stable");
    cg_arena_free(&a);
    cg_buf_free(&w1);
    cg_buf_free(&w2);
}

/* Semantic verification (trace parse, run-id binding, evidence rebuild) of a
 * bundle that passed cg_bundle_verify: a failure names its reason and has a message. */
static void check_semantic(const char *root, const cg_bundle_receipt *r) {
    cg_semantic_result res;
    cg_error err;
    cg_err_clear(&err);
    if (cg_bundle_verify_semantic(root, r, true, &res, &err) != 0) {
        CG_FUZZ_REQUIRE(err.reason != CG_R_NONE, "semantic failure without a reason: %s", err.msg);
        CG_FUZZ_REQUIRE(err.msg[0] != '\0', "semantic failure without a message");
    }
}

int cg_fuzz_bundle_manifest(const uint8_t *data, size_t size) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err;
    cg_err_clear(&err);
    cg_bundle_manifest m;
    int prc = cg_bundle_manifest_parse(&a, (const char *)data, size, &m, &err);
    if (prc != 0) {
        cg_fuzz_check_error(&err, "cg_bundle_manifest_parse", parse_codes);
    } else {
        for (size_t i = 0; i < m.n_files; i++) (void)cg_bundle_path_is_safe(m.files[i].path);
        check_write_round_trip(&m);
    }

    const char *root = scratch_bundle();
    char *mpath = cg_path_join(root, "bundle.json");
    CG_FUZZ_REQUIRE(cg_write_file(mpath, data, size, false, &err) == 0, "write %s: %s", mpath, err.msg);
    cg_bundle_receipt r;
    cg_err_clear(&err);
    int vrc = cg_bundle_verify(root, &r, &err);
    if (vrc != 0) {
        cg_fuzz_check_error(&err, "cg_bundle_verify", verify_codes);
        CG_FUZZ_REQUIRE(err.reason != CG_R_NONE, "verification failure without a reason: %s", err.msg);
        if (prc != 0)
            CG_FUZZ_REQUIRE(err.reason == CG_R_MALFORMED_MANIFEST, "unparseable manifest failed with %s: %s",
                            cg_reason_code(err.reason), err.msg);
    } else {
        CG_FUZZ_REQUIRE(prc == 0, "verify accepted a manifest the parser rejects");
        CG_FUZZ_REQUIRE(r.files_verified == m.n_files && r.files_verified <= 3, "receipt counts %llu files",
                        (unsigned long long)r.files_verified);
        for (size_t i = 0; i < m.n_files; i++)
            CG_FUZZ_REQUIRE(cg_bundle_path_is_safe(m.files[i].path), "verified an unsafe path %s", m.files[i].path);
        char hex[65];
        cg_sha256_hex(data, size, hex);
        CG_FUZZ_REQUIRE(strcmp(hex, r.manifest_sha256) == 0, "receipt digest is not the manifest's SHA-256");
        const char *consumed[3];
        for (size_t i = 0; i < m.n_files; i++) consumed[i] = m.files[i].path;
        CG_FUZZ_REQUIRE(cg_bundle_verify_consumed(root, &r, consumed, m.n_files, &err) == 0,
                        "re-check of an unchanged bundle failed: %s", err.msg);
        check_semantic(root, &r);
        cg_arena ja;
        cg_arena_init(&ja, 0);
        cg_buf b = CG_BUF_INIT;
        cg_json_write(&b, cg_bundle_receipt_to_json(&ja, &r), true);
        cg_buf_free(&b);
        cg_arena_free(&ja);
    }
    free(mpath);
    cg_arena_free(&a);
    return 0;
}
