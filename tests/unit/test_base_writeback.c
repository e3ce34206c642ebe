/* base/writeback: early writeback and drop-behind are advisory — the bytes of
 * the file are exactly what was written, in any chunking, for a file larger
 * than the cached window, a small file and a pipe (where the calls fail and
 * are given up). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/writeback.h"
#include "test_tmpdir.h"

static unsigned char pattern(uint64_t i) { return (unsigned char)((i * 2654435761u) >> 13); }

/* Writes total bytes of the pattern through cg_wb_sink in uneven chunks. */
static void write_pattern(cg_wb_sink_ctx *s, uint64_t total) {
    enum { MAXCHUNK = 3 << 20 };
    unsigned char *buf = malloc(MAXCHUNK);
    assert_non_null(buf);
    uint64_t off = 0, step = 1;
    while (off < total) {
        size_t n = (size_t)(step * 7919 % MAXCHUNK) + 1;
        if (n > total - off) n = (size_t)(total - off);
        for (size_t i = 0; i < n; i++) buf[i] = pattern(off + i);
        assert_int_equal(cg_wb_sink(s, (const char *)buf, n), 0);
        off += n;
        step++;
    }
    free(buf);
}

static void check_file(const char *path, uint64_t total) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char buf[1 << 16];
    uint64_t i = 0;
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t k = 0; k < n; k++, i++)
            if (buf[k] != pattern(i)) fail_msg("byte %llu differs", (unsigned long long)i);
    fclose(f);
    assert_int_equal(i, total);
}

static void roundtrip(cg_writeback_mode mode, uint64_t total) {
    char *d = test_tmpdir("writeback");
    assert_non_null(d);
    char path[4200];
    snprintf(path, sizeof path, "%s/out", d);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    cg_wb_sink_ctx s;
    cg_wb_sink_init(&s, fd, mode);
    write_pattern(&s, total);
    assert_int_equal(fsync(fd), 0);
    assert_int_equal(close(fd), 0);
    assert_int_equal(s.out.err_no, 0);
    if (mode != CG_WRITEBACK_OFF) assert_true(s.wb.written == total || s.wb.fd < 0);
    if (mode == CG_WRITEBACK_OFF) assert_int_equal(s.wb.written, 0);
    check_file(path, total);
    assert_int_equal(cg_rm_rf(d), 0);
    free(d);
}

static void test_large_file_drop_behind(void **st) {
    (void)st;
    uint64_t total = CG_WRITEBACK_WINDOW + 3 * CG_WRITEBACK_STEP + 12345;
    roundtrip(CG_WRITEBACK_DROP_BEHIND, total);
}

static void test_early_and_off(void **st) {
    (void)st;
    roundtrip(CG_WRITEBACK_EARLY, 2 * CG_WRITEBACK_STEP + 1);
    roundtrip(CG_WRITEBACK_OFF, CG_WRITEBACK_STEP + 7);
    roundtrip(CG_WRITEBACK_DROP_BEHIND, 10); /* smaller than one step: nothing to do */
}

static void test_pipe(void **st) {
    (void)st;
    int p[2];
    assert_int_equal(pipe(p), 0);
    cg_wb_sink_ctx s;
    cg_wb_sink_init(&s, p[1], CG_WRITEBACK_DROP_BEHIND);
    /* more than a step, in pieces the pipe holds, drained as we go */
    static char chunk[1 << 15];
    memset(chunk, 'x', sizeof chunk);
    uint64_t sent = 0;
    while (sent <= CG_WRITEBACK_STEP) {
        assert_int_equal(cg_wb_sink(&s, chunk, sizeof chunk), 0);
        sent += sizeof chunk;
        char got[sizeof chunk];
        size_t have = 0;
        while (have < sizeof got) {
            ssize_t r = read(p[0], got + have, sizeof got - have);
            assert_true(r > 0);
            have += (size_t)r;
        }
        assert_memory_equal(got, chunk, sizeof got);
    }
    assert_true(s.wb.fd < 0); /* sync_file_range refused a pipe: given up */
    close(p[0]);
    close(p[1]);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_large_file_drop_behind),
        cmocka_unit_test(test_early_and_off),
        cmocka_unit_test(test_pipe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
