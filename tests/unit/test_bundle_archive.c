/* Unit tests for lib/bundle/archive: pack/unpack round trip (tar and tar.zst)
 * and hostile archives built here with libarchive + libzstd — traversal,
 * absolute path, symlink, hard link, device, FIFO, duplicate entry, file/dir
 * conflict, zstd bomb, oversized window, truncated and corrupt zstd, garbage,
 * entry-count and size limits. Every refusal must leave nothing behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <zstd.h>

#include "test_bundle_util.h"

#include "bundle/archive.h"
#include "bundle/verify.h"

typedef struct tent {
    const char *name;
    mode_t type;           /* AE_IFREG, AE_IFDIR, AE_IFLNK, AE_IFCHR, AE_IFIFO */
    const char *data;      /* regular file content */
    uint64_t zeros;        /* extra: regular file of this many zero bytes (when data NULL) */
    const char *link;      /* symlink target */
    const char *hardlink;  /* hard link target */
} tent;

/* Builds a tar in memory; caller frees. */
static unsigned char *make_tar(const tent *ents, size_t n, size_t *len) {
    size_t cap = 64 << 20;
    unsigned char *buf = malloc(cap);
    assert_non_null(buf);
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_set_bytes_per_block(a, 512), ARCHIVE_OK);
    size_t used = 0;
    assert_int_equal(archive_write_open_memory(a, buf, cap, &used), ARCHIVE_OK);
    static char zbuf[1 << 16];
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, ents[i].name);
        archive_entry_set_filetype(e, ents[i].type);
        archive_entry_set_perm(e, 0644);
        if (ents[i].link) archive_entry_set_symlink(e, ents[i].link);
        if (ents[i].hardlink) archive_entry_set_hardlink(e, ents[i].hardlink);
        if (ents[i].type == AE_IFCHR) archive_entry_set_rdev(e, 0x0103);
        uint64_t size = ents[i].type == AE_IFREG && !ents[i].hardlink
                            ? (ents[i].data ? strlen(ents[i].data) : ents[i].zeros) : 0;
        archive_entry_set_size(e, (la_int64_t)size);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        if (ents[i].data) archive_write_data(a, ents[i].data, strlen(ents[i].data));
        for (uint64_t left = ents[i].data ? 0 : size; left;) {
            size_t k = left < sizeof zbuf ? (size_t)left : sizeof zbuf;
            assert_int_equal(archive_write_data(a, zbuf, k), (la_ssize_t)k);
            left -= k;
        }
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    *len = used;
    return buf;
}

static unsigned char *zstd_of(const unsigned char *src, size_t n, size_t *out_len) {
    size_t cap = ZSTD_compressBound(n);
    unsigned char *out = malloc(cap);
    assert_non_null(out);
    size_t r = ZSTD_compress(out, cap, src, n, 3);
    assert_false(ZSTD_isError(r));
    *out_len = r;
    return out;
}

/* What an unpack did: rc 0, or -1 with the error's reason and limit. */
typedef struct outcome {
    int rc;
    cg_reason reason;
    const char *limit;
} outcome;

/* Writes data to dir/name and unpacks it into dir/out; checks that nothing but
 * the archive remains in dir on refusal. */
static outcome unpack_bytes(const void *data, size_t len, const cg_archive_limits *lim, char *msg, size_t msgsz) {
    char *dir = tb_tempdir("barch");
    tb_write(dir, "in.bin", data, len);
    char *in = tb_join(dir, "in.bin"), *out = tb_join(dir, "out");
    cg_error err;
    cg_err_clear(&err);
    int rc = cg_archive_unpack(in, out, lim, &err);
    if (msg) snprintf(msg, msgsz, "%s", err.msg);
    outcome o = {rc, rc ? err.reason : CG_R_NONE, rc ? err.limit : NULL};
    if (rc != 0) {
        assert_int_equal(rc, -1);
        /* nothing left behind: only in.bin remains */
        DIR *d = opendir(dir);
        struct dirent *de;
        while ((de = readdir(d))) {
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, "in.bin")) continue;
            fail_msg("left behind after refusal: %s (%s)", de->d_name, err.msg);
        }
        closedir(d);
    }
    cg_rm_rf(dir);
    free(in);
    free(out);
    free(dir);
    return o;
}

/* true: unpack_tar runs with lim.scratch (no fsync) — the same checks apply */
static bool g_scratch;

static outcome unpack_tar(const tent *ents, size_t n, bool zstd, char *msg, size_t msgsz) {
    size_t len;
    unsigned char *tar = make_tar(ents, n, &len);
    outcome k;
    cg_archive_limits sl;
    cg_archive_limits_default(&sl);
    sl.scratch = true;
    const cg_archive_limits *lim = g_scratch ? &sl : NULL;
    if (zstd) {
        size_t zl;
        unsigned char *z = zstd_of(tar, len, &zl);
        k = unpack_bytes(z, zl, lim, msg, msgsz);
        free(z);
    } else {
        k = unpack_bytes(tar, len, lim, msg, msgsz);
    }
    free(tar);
    return k;
}

#define REG(n, d) {n, AE_IFREG, d, 0, NULL, NULL}

/* A refusal with reason want (and, for payload_too_large, the limit named). */
static void expect(outcome got, cg_reason want, const char *want_limit, const char *msg, const char *substr) {
    if (got.rc == 0) fail_msg("unpacked, want refusal %s", cg_reason_code(want));
    if (got.reason != want) fail_msg("reason %s, want %s (%s)", cg_reason_code(got.reason), cg_reason_code(want), msg);
    if (want_limit && (!got.limit || strcmp(got.limit, want_limit) != 0))
        fail_msg("limit %s, want %s (%s)", got.limit ? got.limit : "(none)", want_limit, msg);
    if (substr && !strstr(msg, substr)) fail_msg("message %s lacks %s", msg, substr);
}

static void expect_ok(outcome got, const char *msg) {
    if (got.rc != 0) fail_msg("refused (%s): %s", cg_reason_code(got.reason), msg);
}

static void hostile_paths_and_types(void) {
    char msg[CG_ERROR_MAX];
    for (int z = 0; z < 2; z++) {
        tent trav[] = {REG("bundle.json", "{}"), REG("../evil", "x")};
        expect(unpack_tar(trav, 2, z, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg, "unsafe path in archive: ../evil");
        tent trav2[] = {REG("nsight/../../evil", "x")};
        expect(unpack_tar(trav2, 1, z, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg, NULL);
        tent absol[] = {REG("/tmp/evil-absolute", "x")};
        expect(unpack_tar(absol, 1, z, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg, "unsafe path");
        tent ctl[] = {REG("bundle.json", "{}"), REG("nsight/evil\nINFO forged log line", "x")};
        expect(unpack_tar(ctl, 2, z, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg, "control character 0x0a");
        if (strchr(msg, '\n')) fail_msg("refusal message echoes the control character");
        tent bslash[] = {REG("a\\b", "x")};
        expect(unpack_tar(bslash, 1, z, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg, NULL);
        tent sym[] = {REG("bundle.json", "{}"), {"trace.jsonl", AE_IFLNK, NULL, 0, "/etc/passwd", NULL}};
        expect(unpack_tar(sym, 2, z, msg, sizeof msg), CG_R_SPECIAL_FILE, NULL, msg, "symbolic links are not allowed");
        tent hard[] = {REG("bundle.json", "{}"), {"trace.jsonl", AE_IFREG, NULL, 0, NULL, "bundle.json"}};
        expect(unpack_tar(hard, 2, z, msg, sizeof msg), CG_R_SPECIAL_FILE, NULL, msg, "hard links are not allowed");
        tent dev[] = {{"tty", AE_IFCHR, NULL, 0, NULL, NULL}};
        expect(unpack_tar(dev, 1, z, msg, sizeof msg), CG_R_SPECIAL_FILE, NULL, msg, "special files");
        tent blk[] = {{"disk", AE_IFBLK, NULL, 0, NULL, NULL}};
        expect(unpack_tar(blk, 1, z, msg, sizeof msg), CG_R_SPECIAL_FILE, NULL, msg, "special files");
        tent fifo[] = {{"pipe", AE_IFIFO, NULL, 0, NULL, NULL}};
        expect(unpack_tar(fifo, 1, z, msg, sizeof msg), CG_R_SPECIAL_FILE, NULL, msg, "special files");
        tent dup[] = {REG("bundle.json", "{}"), REG("trace.jsonl", "a"), REG("./trace.jsonl", "b")};
        expect(unpack_tar(dup, 3, z, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg,
               "duplicate archive entry: trace.jsonl");
        tent conflict[] = {REG("a", "file"), REG("a/b", "x")};
        expect(unpack_tar(conflict, 2, z, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg,
               "both a file and a directory");
        tent conflict2[] = {{"d/", AE_IFDIR, NULL, 0, NULL, NULL}, REG("d", "x")};
        expect(unpack_tar(conflict2, 2, z, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
        /* accepted: "./" prefixes, a root "." entry and explicit directories */
        tent ok[] = {{"./", AE_IFDIR, NULL, 0, NULL, NULL}, REG("./bundle.json", "{}"),
                     {"./nsight/", AE_IFDIR, NULL, 0, NULL, NULL}, REG("./nsight/a.csv", "x,y\n")};
        expect_ok(unpack_tar(ok, 4, z, msg, sizeof msg), msg);
    }
}

static void test_hostile_paths_and_types(void **st) {
    (void)st;
    g_scratch = false;
    hostile_paths_and_types();
    g_scratch = true; /* the server's scratch unpack refuses exactly the same */
    hostile_paths_and_types();
    g_scratch = false;
}

static void test_zstd_bombs_and_corruption(void **st) {
    (void)st;
    char msg[CG_ERROR_MAX];
    cg_archive_limits lim;
    /* 48 MiB of zeros compresses to a few KiB */
    tent big[] = {REG("bundle.json", "{}"), {"trace.jsonl", AE_IFREG, NULL, 48u << 20, NULL, NULL}};
    size_t len, zl;
    unsigned char *tar = make_tar(big, 2, &len);
    unsigned char *z = zstd_of(tar, len, &zl);
    assert_true(zl < 64 * 1024);
    /* total size bound */
    cg_archive_limits_default(&lim);
    lim.max_total_bytes = 8u << 20;
    expect(unpack_bytes(z, zl, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg, NULL);
    /* per-file bound */
    cg_archive_limits_default(&lim);
    lim.max_file_bytes = 1u << 20;
    expect(unpack_bytes(z, zl, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg, "larger than the limit");
    /* decoded-stream bound (independent of the tar headers' claims) */
    cg_archive_limits_default(&lim);
    lim.max_stream_bytes = 4u << 20;
    expect(unpack_bytes(z, zl, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg,
           "decompressed archive exceeds");
    /* window bound: a frame needing a larger window than allowed */
    cg_archive_limits_default(&lim);
    lim.window_log_max = 10;
    expect(unpack_bytes(z, zl, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg, "window");
    /* ratio trip-wire (issue 13): 48 MiB from a few KiB is over 200x, whatever the size limits */
    cg_archive_limits_default(&lim);
    lim.max_ratio = 200;
    expect(unpack_bytes(z, zl, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "decompression_ratio", msg,
           "times its compressed size");
    lim.ratio_floor_bytes = 64u << 20; /* under the floor any ratio is accepted */
    expect_ok(unpack_bytes(z, zl, &lim, msg, sizeof msg), msg);
    /* within default limits the same archive unpacks */
    expect_ok(unpack_bytes(z, zl, NULL, msg, sizeof msg), msg);
    /* truncated zstd (cut in the middle, and just before the end/checksum) */
    expect(unpack_bytes(z, zl / 2, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
    expect(unpack_bytes(z, zl - 3, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
    /* corrupt zstd body */
    unsigned char *bad = malloc(zl);
    memcpy(bad, z, zl);
    for (size_t i = 20; i < zl - 8; i += 7) bad[i] ^= 0x5a;
    expect(unpack_bytes(bad, zl, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
    free(bad);
    free(z);
    free(tar);
    /* truncated plain tar */
    tent small[] = {REG("bundle.json", "{\"a\": 1}"), REG("trace.jsonl", "0123456789")};
    tar = make_tar(small, 2, &len);
    expect(unpack_bytes(tar, 700, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
    free(tar);
    /* garbage and empty input */
    const char garbage[] = "this is not an archive at all, just text. this is not an archive at all, just text. "
                           "this is not an archive at all, just text. this is not an archive at all, just text.";
    expect(unpack_bytes(garbage, sizeof garbage, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
    expect(unpack_bytes("", 0, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
    /* gzip is not a transport format */
    const unsigned char gz[] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 3, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    expect(unpack_bytes(gz, sizeof gz, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg, NULL);
}

/* tar + extra bytes, unpacked plain and as one zstd frame (A10: one behaviour). */
static outcome unpack_with_tail(const unsigned char *tar, size_t len, const unsigned char *tail, size_t tail_len,
                                bool zstd, char *msg, size_t msgsz) {
    unsigned char *all = malloc(len + tail_len + 1);
    assert_non_null(all);
    memcpy(all, tar, len);
    if (tail_len) memcpy(all + len, tail, tail_len);
    outcome o;
    if (zstd) {
        size_t zl;
        unsigned char *z = zstd_of(all, len + tail_len, &zl);
        o = unpack_bytes(z, zl, NULL, msg, msgsz);
        free(z);
    } else {
        o = unpack_bytes(all, len + tail_len, NULL, msg, msgsz);
    }
    free(all);
    return o;
}

/* Bytes after the end-of-archive marker: zero padding (what `tar` writes to
 * fill its 10240-byte records) is accepted; anything else — a second archive
 * appended, a stray byte deep in the padding, a second zstd frame holding
 * another tar — is malformed_archive, since another reader (tar
 * --ignore-zeros) would extract content this unpack never checked. A tar
 * split over several zstd frames (pzstd, `cat a.zst b.zst`) is one stream. */
static void test_data_after_end_marker(void **st) {
    (void)st;
    char msg[CG_ERROR_MAX];
    tent first[] = {REG("bundle.json", "{\"a\": 1}"), REG("trace.jsonl", "0123456789")};
    tent second[] = {REG("evil.txt", "hidden")};
    size_t len, len2;
    unsigned char *tar = make_tar(first, 2, &len), *tar2 = make_tar(second, 1, &len2);
    static unsigned char pad[200000];
    memset(pad, 0, sizeof pad);
    for (int zstd = 0; zstd < 2; zstd++) {
        expect_ok(unpack_with_tail(tar, len, NULL, 0, zstd, msg, sizeof msg), msg);
        expect_ok(unpack_with_tail(tar, len, pad, sizeof pad, zstd, msg, sizeof msg), msg);
        expect(unpack_with_tail(tar, len, tar2, len2, zstd, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg,
               "data after the end-of-archive marker");
        /* the byte's offset in the decoded stream is named */
        char want[96];
        snprintf(want, sizeof want, "at byte %zu of the tar stream", len);
        if (!strstr(msg, want)) fail_msg("%s lacks %s", msg, want);
        /* one stray byte right after the marker, inside the first read, and beyond several reads */
        size_t at[] = {0, 1000, sizeof pad - 1};
        for (size_t i = 0; i < sizeof at / sizeof *at; i++) {
            pad[at[i]] = 'x';
            expect(unpack_with_tail(tar, len, pad, sizeof pad, zstd, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL,
                   msg, "data after the end-of-archive marker");
            snprintf(want, sizeof want, "at byte %zu of", len + at[i]);
            if (!strstr(msg, want)) fail_msg("%s lacks %s", msg, want);
            pad[at[i]] = 0;
        }
    }
    /* one tar over three zstd frames: accepted; a second frame holding another tar: refused */
    size_t cut[] = {0, 700, 1500, len};
    unsigned char *frames = malloc(2 * ZSTD_compressBound(len) + ZSTD_compressBound(len2) + 64);
    size_t fl = 0;
    for (size_t i = 0; i + 1 < sizeof cut / sizeof *cut; i++) {
        size_t zl;
        unsigned char *z = zstd_of(tar + cut[i], cut[i + 1] - cut[i], &zl);
        memcpy(frames + fl, z, zl);
        fl += zl;
        free(z);
    }
    expect_ok(unpack_bytes(frames, fl, NULL, msg, sizeof msg), msg);
    size_t zl;
    unsigned char *z = zstd_of(tar2, len2, &zl);
    memcpy(frames + fl, z, zl);
    free(z);
    expect(unpack_bytes(frames, fl + zl, NULL, msg, sizeof msg), CG_R_MALFORMED_ARCHIVE, NULL, msg,
           "data after the end-of-archive marker");
    free(frames);
    free(tar2);
    free(tar);
}

/* One regular file in a hand-built ustar archive (libarchive's writer would
 * not emit a name that is not UTF-8): header, data, two zero blocks. */
static unsigned char *raw_ustar(const char *name, const char *data, size_t *len) {
    size_t dl = strlen(data), blocks = 1 + (dl + 511) / 512 + 2;
    unsigned char *t = calloc(blocks, 512);
    assert_non_null(t);
    memcpy(t, name, strlen(name) < 100 ? strlen(name) : 100);
    memcpy(t + 100, "0000644", 7);
    memcpy(t + 108, "0000000", 7);
    memcpy(t + 116, "0000000", 7);
    snprintf((char *)t + 124, 12, "%011o", (unsigned)dl);
    memcpy(t + 136, "00000000000", 11);
    t[156] = '0';
    memcpy(t + 257, "ustar", 6);
    memcpy(t + 263, "00", 2);
    memset(t + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < 512; i++) sum += t[i];
    snprintf((char *)t + 148, 8, "%06o", sum & 0777777u);
    memcpy(t + 512, data, dl);
    *len = blocks * 512;
    return t;
}

/* RELIABILITY.md A22: an entry name that is not UTF-8 is unsafe_path, and the
 * message does not echo its bytes; a UTF-8 name is accepted. */
static void test_names_not_utf8(void **st) {
    (void)st;
    char msg[CG_ERROR_MAX];
    static const char *const bad[] = {"caf\xe9.txt", "a\xc0\xaf" "b", "s\xed\xa0\x80.txt", "cut\xe2\x82", "\xff"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        size_t len;
        unsigned char *t = raw_ustar(bad[i], "x", &len);
        expect(unpack_bytes(t, len, NULL, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg, "not valid UTF-8");
        for (const unsigned char *c = (const unsigned char *)msg; *c; c++)
            if (*c >= 0x80) fail_msg("message echoes a name byte 0x%02x: %s", *c, msg);
        free(t);
    }
    size_t len;
    unsigned char *t = raw_ustar("caf\xc3\xa9.txt", "x", &len);
    expect_ok(unpack_bytes(t, len, NULL, msg, sizeof msg), msg);
    free(t);
}

/* "d/d/…/d" of n components into out. */
static void chain(char *out, size_t outsz, int n, const char *leaf) {
    size_t k = 0;
    for (int i = 0; i < n; i++) k += (size_t)snprintf(out + k, outsz - k, i ? "/d" : "d");
    if (leaf) snprintf(out + k, outsz - k, "/%s", leaf);
}

/* Deep paths: each directory is made once however many entries lie below it,
 * a directory made for a path without its own header counts against
 * max_entries exactly once, and more than CG_ARCHIVE_MAX_DEPTH components is
 * unsafe_path (every mkdir walks its whole path: 20,000 empty files 1,000
 * levels down in a 67 KB tar.zst took over 13 minutes before). */
static void test_deep_paths(void **st) {
    (void)st;
    char msg[CG_ERROR_MAX];
    enum { FILES = 50, DEPTH = 19 };
    static char names[FILES + DEPTH][256];
    tent ents[FILES + DEPTH];
    for (int i = 0; i < DEPTH; i++) {
        chain(names[i], sizeof names[i], i + 1, NULL);
        ents[i] = (tent){names[i], AE_IFDIR, NULL, 0, NULL, NULL};
    }
    for (int i = 0; i < FILES; i++) {
        char leaf[16];
        snprintf(leaf, sizeof leaf, "f%02d", i);
        chain(names[DEPTH + i], sizeof names[DEPTH + i], DEPTH, leaf);
        ents[DEPTH + i] = (tent)REG(names[DEPTH + i], "x");
    }
    cg_archive_limits lim;
    cg_archive_limits_default(&lim);
    size_t len;
    /* files only: 50 headers + 19 directories their paths create */
    unsigned char *tar = make_tar(ents + DEPTH, FILES, &len);
    lim.max_entries = FILES + DEPTH;
    expect_ok(unpack_bytes(tar, len, &lim, msg, sizeof msg), msg);
    lim.max_entries = FILES + DEPTH - 1;
    expect(unpack_bytes(tar, len, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg,
           "counting the directories its paths create");
    free(tar);
    /* the same with a header for every directory first: 69 headers, nothing counted twice */
    tar = make_tar(ents, FILES + DEPTH, &len);
    lim.max_entries = FILES + DEPTH;
    expect_ok(unpack_bytes(tar, len, &lim, msg, sizeof msg), msg);
    lim.max_entries = FILES + DEPTH - 1;
    expect(unpack_bytes(tar, len, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg, "more than 68 entries");
    free(tar);
    /* depth: 64 components unpack, 65 are refused, named by their first 200 bytes and an ellipsis */
    static char deep[2][1024];
    chain(deep[0], sizeof deep[0], CG_ARCHIVE_MAX_DEPTH - 1, "f");
    chain(deep[1], sizeof deep[1], CG_ARCHIVE_MAX_DEPTH, "a-leaf-name-long-enough-to-pass-200-bytes-of-path-0123456789-0123456789-0123456789-0123456789");
    for (int i = 0; i < 2; i++) {
        tent one[] = {REG(deep[i], "x")};
        tar = make_tar(one, 1, &len);
        if (i == 0) {
            expect_ok(unpack_bytes(tar, len, NULL, msg, sizeof msg), msg);
        } else {
            expect(unpack_bytes(tar, len, NULL, msg, sizeof msg), CG_R_UNSAFE_PATH, NULL, msg,
                   "archive entry path has more than 64 components: d/d/d");
            assert_true(cg_utf8_valid(msg, strlen(msg)));
            assert_non_null(strstr(msg, "…"));
        }
        free(tar);
    }
}

static void test_entry_count_limit(void **st) {
    (void)st;
    char msg[CG_ERROR_MAX];
    tent many[40];
    char names[40][16];
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "f%02d", i);
        many[i] = (tent)REG(names[i], "x");
    }
    size_t len;
    unsigned char *tar = make_tar(many, 40, &len);
    cg_archive_limits lim;
    cg_archive_limits_default(&lim);
    lim.max_entries = 39;
    expect(unpack_bytes(tar, len, &lim, msg, sizeof msg), CG_R_PAYLOAD_TOO_LARGE, "archive", msg,
           "more than 39 entries");
    lim.max_entries = 40;
    expect_ok(unpack_bytes(tar, len, &lim, msg, sizeof msg), msg);
    free(tar);
}

static void test_pack_unpack_roundtrip(void **st) {
    (void)st;
    char *tmp = tb_tempdir("barch");
    char *root = tb_join(tmp, "b");
    tb_make_bundle(root, "run-arch");
    tb_write_str(root, "nsight/k.csv", "a,b\n1,2\n");
    const char *paths[] = {"trace.jsonl", "evidence.json", "report.md", "nsight/k.csv"};
    tb_write_manifest(root, "run-arch", paths, 4);
    cg_bundle_receipt r0, r1, r2;
    cg_error err;
    char *empty = tb_join(root, "empty/inner"); /* empty directories travel too */
    assert_int_equal(cg_mkdir_p(empty, &err), 0);
    free(empty);
    assert_int_equal(cg_bundle_verify(root, &r0, &err), 0);
    for (int z = 0; z < 2; z++) {
        char *arch = tb_join(tmp, z ? "b.tar.zst" : "b.tar");
        char *out = tb_join(tmp, z ? "unz" : "unt");
        assert_int_equal(cg_archive_pack(root, arch, z, &err), 0);
        size_t alen;
        char *ad = tb_read(arch, NULL, &alen);
        if (z) assert_memory_equal(ad, "\x28\xb5\x2f\xfd", 4);
        else assert_memory_equal(ad, "bundle.json", 11); /* manifest first, at the archive root */
        free(ad);
        assert_int_equal(cg_archive_unpack(arch, out, NULL, &err), 0);
        assert_int_equal(cg_bundle_verify(out, z ? &r2 : &r1, &err), 0);
        char *inner = tb_join(out, "empty/inner");
        assert_true(cg_is_dir(inner));
        free(inner);
        /* unpacking again into the same destination is refused and changes nothing */
        assert_int_equal(cg_archive_unpack(arch, out, NULL, &err), -1);
        assert_int_equal(err.reason, CG_R_NONE); /* a local failure, not the archive's */
        assert_int_equal(err.code, CG_EEXIST);
        free(arch);
        free(out);
    }
    assert_memory_equal(&r0, &r1, sizeof r0);
    assert_memory_equal(&r0, &r2, sizeof r0);
    {
        /* scratch unpack (no fsync): the same tree */
        char *arch = tb_join(tmp, "b.tar.zst"), *out = tb_join(tmp, "uns");
        cg_archive_limits sl;
        cg_archive_limits_default(&sl);
        sl.scratch = true;
        cg_bundle_receipt r3;
        assert_int_equal(cg_archive_unpack(arch, out, &sl, &err), 0);
        assert_int_equal(cg_bundle_verify(out, &r3, &err), 0);
        assert_memory_equal(&r0, &r3, sizeof r0);
        char *inner = tb_join(out, "empty/inner");
        assert_true(cg_is_dir(inner));
        free(inner);
        free(arch);
        free(out);
    }
    /* packing is deterministic */
    char *a1 = tb_join(tmp, "again.tar.zst");
    assert_int_equal(cg_archive_pack(root, a1, true, &err), 0);
    size_t l1, l2;
    char *d1 = tb_read(a1, NULL, &l1), *d2 = tb_read(tmp, "b.tar.zst", &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(d1, d2, l1);
    free(d1);
    free(d2);
    /* a bundle that does not verify is not packed */
    tb_write_str(root, "stray.txt", "x");
    char *a2 = tb_join(tmp, "bad.tar");
    assert_int_equal(cg_archive_pack(root, a2, false, &err), -1);
    assert_false(cg_path_exists(a2));
    assert_non_null(strstr(err.msg, "undeclared regular file in bundle: stray.txt"));
    cg_rm_rf(tmp);
    free(a1);
    free(a2);
    free(root);
    free(tmp);
}

/* Deterministic mutations of valid archives: every outcome is either a clean
 * unpack or a classified refusal that leaves nothing behind (checked by
 * unpack_bytes); run under ASan this also exercises memory safety. */
static void test_mutations_never_crash_or_leak(void **st) {
    (void)st;
    tent ents[] = {REG("bundle.json", "{\"schema\": \"candle-graph/bundle/1\"}"), REG("trace.jsonl", "line one\nline two\n"),
                   {"nsight/", AE_IFDIR, NULL, 0, NULL, NULL}, REG("nsight/a.csv", "a,b\n1,2\n")};
    size_t len, zl;
    unsigned char *tar = make_tar(ents, 4, &len);
    unsigned char *z = zstd_of(tar, len, &zl);
    uint32_t seed = 12345;
    char msg[CG_ERROR_MAX];
    for (int round = 0; round < 160; round++) {
        int use_z = round & 1;
        size_t n = use_z ? zl : len;
        unsigned char *buf = malloc(n);
        memcpy(buf, use_z ? z : tar, n);
        for (int k = 0; k < 1 + round % 4; k++) {
            seed = seed * 1103515245u + 12345u;
            size_t pos = (seed >> 8) % n;
            seed = seed * 1103515245u + 12345u;
            buf[pos] ^= (unsigned char)(1u << ((seed >> 16) % 8));
        }
        size_t cut = round % 5 == 4 ? n - (n / 7) : n; /* some truncated too */
        outcome k = unpack_bytes(buf, cut, NULL, msg, sizeof msg);
        assert_true(k.rc == 0 || k.reason == CG_R_UNSAFE_PATH || k.reason == CG_R_SPECIAL_FILE ||
                    k.reason == CG_R_PAYLOAD_TOO_LARGE || k.reason == CG_R_MALFORMED_ARCHIVE);
        free(buf);
    }
    free(z);
    free(tar);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hostile_paths_and_types),
        cmocka_unit_test(test_zstd_bombs_and_corruption),
        cmocka_unit_test(test_data_after_end_marker),
        cmocka_unit_test(test_names_not_utf8),
        cmocka_unit_test(test_deep_paths),
        cmocka_unit_test(test_entry_count_limit),
        cmocka_unit_test(test_pack_unpack_roundtrip),
        cmocka_unit_test(test_mutations_never_crash_or_leak),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
