/* fuzz_entry_json.c — cg_json_parse on untrusted bytes (see fuzz_entry.h).
 *
 * Invariants: rejections are CG_EPARSE / CG_ELIMIT with a message; an accepted
 * document writes (compact and pretty) to text that parses back to an equal
 * value and writes back to the same bytes; a clone is equal; parsing under
 * tighter limits never accepts what the defaults reject, and when it refuses
 * what the defaults accept the reason is CG_ELIMIT. */
#include <string.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/json.h"
#include "fuzz_entry.h"

static const cg_errcode parse_codes[] = {CG_EPARSE, CG_ELIMIT, CG_OK};

/* The pairwise definition of cg_jv_obj_dup_key: the key whose second
 * occurrence comes first in document order (reference for the sorted path). */
static const char *dup_key_reference(const cg_jv *o) {
    for (size_t i = 1; i < o->u.obj.n; i++)
        for (size_t j = 0; j < i; j++) {
            const cg_jmember *a = &o->u.obj.m[i], *b = &o->u.obj.m[j];
            if (a->key_len == b->key_len && memcmp(a->key, b->key, a->key_len) == 0) return a->key;
        }
    return NULL;
}

/* Walks the value once through every accessor (no crash on any shape). */
static void touch(const cg_jv *v, unsigned depth) {
    uint64_t u;
    int64_t i;
    double d;
    (void)cg_jv_as_u64(v, &u);
    (void)cg_jv_as_i64(v, &i);
    (void)cg_jv_as_f64(v, &d);
    (void)cg_jv_as_str(v);
    if (v->type == CG_JOBJ) {
        const char *dup = cg_jv_obj_dup_key(v);
        if (v->u.obj.n <= 2048)
            CG_FUZZ_REQUIRE(dup == dup_key_reference(v), "cg_jv_obj_dup_key disagrees with the pairwise definition");
        for (size_t k = 0; k < v->u.obj.n; k++) {
            const cg_jmember *m = &v->u.obj.m[k];
            CG_FUZZ_REQUIRE(m->key != NULL && m->key[m->key_len] == '\0', "object key not NUL-terminated");
            if (strlen(m->key) == m->key_len)
                CG_FUZZ_REQUIRE(cg_jv_get(v, m->key) != NULL, "member %s not found by cg_jv_get", m->key);
            touch(m->val, depth + 1);
        }
    } else if (v->type == CG_JARR) {
        for (size_t k = 0; k < v->u.arr.n; k++) touch(cg_jv_at(v, k), depth + 1);
    } else if (v->type == CG_JSTR) {
        CG_FUZZ_REQUIRE(v->u.str.s[v->u.str.len] == '\0', "string not NUL-terminated");
    }
}

static void round_trip(const cg_jv *v, bool pretty) {
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_buf b1 = CG_BUF_INIT, b2 = CG_BUF_INIT;
    cg_json_write(&b1, v, pretty);
    cg_error err;
    cg_err_clear(&err);
    cg_jv *back = cg_json_parse(&a, b1.data, b1.len, NULL, &err);
    CG_FUZZ_REQUIRE(back != NULL, "written JSON does not parse back: %s", err.msg);
    CG_FUZZ_REQUIRE(cg_jv_equal(v, back), "written JSON parses to a different value: %.*s", (int)(b1.len > 200 ? 200 : b1.len), b1.data);
    cg_json_write(&b2, back, pretty);
    CG_FUZZ_REQUIRE(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0, "write is not stable after a round trip");
    cg_buf_free(&b1);
    cg_buf_free(&b2);
    cg_arena_free(&a);
}

int cg_fuzz_json(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    cg_arena a;
    cg_arena_init(&a, 0);
    cg_error err, err2, terr;
    cg_err_clear(&err);
    cg_err_clear(&err2);
    cg_err_clear(&terr);

    cg_jv *v = cg_json_parse(&a, text, size, NULL, &err);
    cg_jv *again = cg_json_parse(&a, text, size, NULL, &err2);
    CG_FUZZ_REQUIRE(!v == !again, "parse is not deterministic");
    if (!v) {
        cg_fuzz_check_error(&err, "cg_json_parse", parse_codes);
        CG_FUZZ_REQUIRE(err.code == err2.code && strcmp(err.msg, err2.msg) == 0, "error is not deterministic");
    } else {
        CG_FUZZ_REQUIRE(cg_jv_equal(v, again), "parse is not deterministic (values differ)");
        touch(v, 0);
        round_trip(v, false);
        round_trip(v, true);
        cg_jv *c = cg_jv_clone(&a, v);
        CG_FUZZ_REQUIRE(cg_jv_equal(v, c), "clone differs");
    }

    cg_json_limits tight = {.max_depth = 4, .max_string = 32, .max_items = 8};
    cg_jv *t = cg_json_parse(&a, text, size, &tight, &terr);
    if (t) {
        CG_FUZZ_REQUIRE(v != NULL, "tight limits accepted what the defaults reject: %s", err.msg);
        CG_FUZZ_REQUIRE(cg_jv_equal(v, t), "tight-limit parse gives a different value");
    } else {
        cg_fuzz_check_error(&terr, "cg_json_parse (tight limits)", parse_codes);
        if (v) CG_FUZZ_REQUIRE(terr.code == CG_ELIMIT, "defaults accept but tight limits say: %s", terr.msg);
    }
    cg_arena_free(&a);
    return 0;
}
