/* fuzz_entry_archive.c — the transport archive unpacker (tar / tar.zst) on
 * untrusted bytes (see fuzz_entry.h).
 *
 * The input is handed to cg_archive_unpack_fd through a memfd, extracting into
 * <scratch>/archive/out under tight limits (64 entries, 1 MiB per file, 2 MiB
 * in total, 4 MiB decoded stream, zstd window 2^22, what the packer's level-3 frames need) so limit paths are
 * reachable by small inputs.
 *
 * Invariants: a refusal has an error class other than ok/local, a code from
 * {EPARSE, EVERIFY, ELIMIT} matching the class, a message, and leaves nothing
 * behind (no destination, no staging directory); an acceptance leaves exactly
 * the destination, holding only regular files and directories within the
 * limits, which cg_bundle_verify then checks without crashing. */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "bundle/archive.h"
#include "bundle/semantic.h"
#include "bundle/verify.h"
#include "fuzz_entry.h"

/* CG_EIO: check 2 reports a missing bundle.json as unreadable */
static const cg_errcode verify_codes[] = {CG_EPARSE, CG_ELIMIT, CG_EVERIFY, CG_EIO, CG_OK};

typedef struct tally {
    uint64_t files, dirs, bytes;
} tally;

static void walk(const char *dir, tally *t, unsigned depth) {
    CG_FUZZ_REQUIRE(depth < 4096, "unpacked tree deeper than any path allows");
    DIR *d = opendir(dir);
    CG_FUZZ_REQUIRE(d != NULL, "cannot open unpacked directory %s", dir);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char *p = cg_path_join(dir, de->d_name);
        struct stat st;
        CG_FUZZ_REQUIRE(lstat(p, &st) == 0, "lstat %s", p);
        if (S_ISDIR(st.st_mode)) {
            t->dirs++;
            walk(p, t, depth + 1);
        } else {
            CG_FUZZ_REQUIRE(S_ISREG(st.st_mode), "unpacked a non-regular file %s (mode %o)", p, (unsigned)st.st_mode);
            t->files++;
            t->bytes += (uint64_t)st.st_size;
        }
        free(p);
    }
    closedir(d);
}

/* Number of entries in dir other than "." and "..". */
static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    CG_FUZZ_REQUIRE(d != NULL, "cannot open %s", dir);
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
    closedir(d);
    return n;
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

int cg_fuzz_archive(const uint8_t *data, size_t size) {
    static char parent[256], dest[300];
    cg_error err;
    if (!parent[0]) {
        snprintf(parent, sizeof parent, "%s/archive", cg_fuzz_scratch_dir());
        CG_FUZZ_REQUIRE(cg_mkdir_p(parent, &err) == 0, "mkdir %s: %s", parent, err.msg);
        snprintf(dest, sizeof dest, "%s/out", parent);
    }
    cg_rm_rf(dest);

    int fd = memfd_create("cg-fuzz-archive", MFD_CLOEXEC);
    CG_FUZZ_REQUIRE(fd >= 0, "memfd_create failed");
    for (size_t off = 0; off < size;) {
        ssize_t w = write(fd, data + off, size - off);
        CG_FUZZ_REQUIRE(w > 0, "memfd write failed");
        off += (size_t)w;
    }
    CG_FUZZ_REQUIRE(lseek(fd, 0, SEEK_SET) == 0, "lseek failed");

    cg_archive_limits lim;
    cg_archive_limits_default(&lim);
    lim.max_entries = 64;
    lim.max_file_bytes = 1u << 20;
    lim.max_total_bytes = 2u << 20;
    lim.max_stream_bytes = 4u << 20;
    lim.window_log_max = 22;
    cg_err_clear(&err);
    int rc = cg_archive_unpack_fd(fd, dest, &lim, &err);
    close(fd);

    if (rc != 0) {
        cg_reason why = err.reason;
        CG_FUZZ_REQUIRE(why == CG_R_UNSAFE_PATH || why == CG_R_SPECIAL_FILE || why == CG_R_PAYLOAD_TOO_LARGE ||
                            why == CG_R_MALFORMED_ARCHIVE,
                        "refusal with reason %s (a local failure on hostile input?): %s", cg_reason_code(why), err.msg);
        static const cg_errcode codes[] = {CG_EPARSE, CG_EVERIFY, CG_ELIMIT, CG_OK};
        cg_fuzz_check_error(&err, "cg_archive_unpack_fd", codes);
        if (why == CG_R_PAYLOAD_TOO_LARGE)
            CG_FUZZ_REQUIRE(err.code == CG_ELIMIT && err.limit, "payload_too_large with code %d: %s", (int)err.code,
                            err.msg);
        if (why == CG_R_UNSAFE_PATH || why == CG_R_SPECIAL_FILE)
            CG_FUZZ_REQUIRE(err.code == CG_EVERIFY, "%s with code %d: %s", cg_reason_code(why), (int)err.code, err.msg);
        CG_FUZZ_REQUIRE(count_entries(parent) == 0, "a refused archive left files behind: %s", err.msg);
        return 0;
    }
    CG_FUZZ_REQUIRE(count_entries(parent) == 1 && cg_is_dir(dest), "an accepted archive left more than its destination");
    tally t = {0, 0, 0};
    walk(dest, &t, 0);
    CG_FUZZ_REQUIRE(t.files <= lim.max_entries, "unpacked %llu files, limit %llu entries",
                    (unsigned long long)t.files, (unsigned long long)lim.max_entries);
    CG_FUZZ_REQUIRE(t.bytes <= lim.max_total_bytes, "unpacked %llu bytes, limit %llu", (unsigned long long)t.bytes,
                    (unsigned long long)lim.max_total_bytes);
    cg_bundle_receipt r;
    cg_err_clear(&err);
    if (cg_bundle_verify(dest, &r, &err) != 0)
        cg_fuzz_check_error(&err, "cg_bundle_verify (unpacked)", verify_codes);
    else
        check_semantic(dest, &r);
    cg_rm_rf(dest);
    return 0;
}
