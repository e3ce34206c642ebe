/* publish.c — atomic, verified, fsynced bundle publication (§1.4). */
#define _GNU_SOURCE /* renameat2 / RENAME_NOREPLACE */
#include "bundle/publish.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "bundle/dirnames.h"
#include "bundle/manifest.h"
#include "bundle/verify.h"
#include "render/artifacts.h"

static cg_publish_hook_fn g_hook;
static void *g_hook_ctx;

void cg_publish_set_hook(cg_publish_hook_fn fn, void *ctx) {
    g_hook = fn;
    g_hook_ctx = ctx;
}

static void step_done(cg_publish_step s, const char *staging) {
    if (g_hook) g_hook(s, staging, g_hook_ctx);
}

static uint64_t unix_nanos(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Removes ".{name}.tmp-{pid}-{nanos}" directories in parent whose pid is gone. */
static void sweep_stale_staging(const char *parent, const char *name) {
    DIR *d = opendir(parent);
    if (!d) return;
    char prefix[NAME_MAX + 16];
    int pl = snprintf(prefix, sizeof prefix, ".%s.tmp-", name);
    if (pl < 0 || (size_t)pl >= sizeof prefix) {
        closedir(d);
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, prefix, (size_t)pl) != 0) continue;
        const char *p = de->d_name + pl;
        char *end = NULL;
        errno = 0;
        long pid = strtol(p, &end, 10);
        if (errno || end == p || *end != '-' || pid <= 0 || pid == (long)getpid()) continue;
        const char *q = end + 1;
        if (!*q) continue;
        for (; *q; q++)
            if (*q < '0' || *q > '9') break;
        if (*q) continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue; /* alive or unknown: keep */
        char *full = cg_path_join(parent, de->d_name);
        struct stat st;
        if (full && lstat(full, &st) == 0 && S_ISDIR(st.st_mode)) cg_rm_rf(full);
        cg_free(full);
    }
    closedir(d);
}

typedef struct staged {
    cg_bundle_file *files;
    char (*hex)[65];
    char **paths;
    size_t n, cap;
} staged;

static int staged_grow(staged *s, cg_error *err) {
    if (s->n == s->cap) {
        size_t c = s->cap ? s->cap * 2 : 16;
        cg_bundle_file *nf = realloc(s->files, c * sizeof *nf);
        if (nf) s->files = nf;
        char(*nh)[65] = realloc(s->hex, c * sizeof *nh);
        if (nh) s->hex = nh;
        char **np = realloc(s->paths, c * sizeof *np);
        if (np) s->paths = np;
        if (!nf || !nh || !np) return cg_err_set(err, CG_ENOMEM, "out of memory");
        s->cap = c;
    }
    return 0;
}

/* Declares rel with a digest computed while it was written. */
static int staged_add_known(staged *s, const char *rel, const cg_artifact_digest *d, cg_error *err) {
    if (staged_grow(s, err) != 0) return -1;
    if (!(s->paths[s->n] = strdup(rel))) return cg_err_set(err, CG_ENOMEM, "out of memory");
    memcpy(s->hex[s->n], d->sha256, sizeof s->hex[s->n]);
    s->files[s->n].bytes = d->bytes;
    s->n++;
    return 0;
}

static int staged_add(staged *s, const char *root, const char *rel, cg_error *err) {
    if (staged_grow(s, err) != 0) return -1;
    char *full = cg_path_join(root, rel);
    s->paths[s->n] = strdup(rel);
    if (!full || !s->paths[s->n]) {
        cg_free(full);
        cg_free(s->paths[s->n]);
        return cg_err_set(err, CG_ENOMEM, "out of memory");
    }
    uint64_t size = 0;
    int rc = cg_sha256_file(full, true, s->hex[s->n], &size, err);
    cg_free(full);
    if (rc != 0) {
        cg_free(s->paths[s->n]);
        return -1;
    }
    /* pointers into hex/paths are fixed up after the last add (realloc moves them) */
    s->files[s->n].bytes = size;
    s->n++;
    return 0;
}

static void staged_free(staged *s) {
    for (size_t i = 0; i < s->n; i++) cg_free(s->paths[i]);
    cg_free(s->paths);
    cg_free(s->hex);
    cg_free(s->files);
}

static int create_excl(const char *root, const char *rel, cg_error *err) {
    char *p = cg_path_join(root, rel);
    if (!p) return cg_err_set(err, CG_ENOMEM, "out of memory");
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0) cg_err_set(err, CG_EIO, "create %s: %s", p, strerror(errno));
    cg_free(p);
    return fd;
}

/* fsync + close (fd is closed in every case). */
static int sync_close(int fd, const char *rel, cg_error *err) {
    if (fsync(fd) != 0) {
        int e = errno;
        close(fd);
        return cg_err_set(err, CG_EIO, "sync %s: %s", rel, strerror(e));
    }
    if (close(fd) != 0) return cg_err_set(err, CG_EIO, "close %s: %s", rel, strerror(errno));
    return 0;
}

static int write_synced(const char *root, const char *rel, const cg_buf *b, cg_error *err) {
    int fd = create_excl(root, rel, err);
    if (fd < 0) return -1;
    cg_fd_sink_ctx fs = {fd, 0};
    if (cg_fd_sink(&fs, b->data ? b->data : "", b->len) != 0) {
        close(fd);
        return cg_err_set(err, CG_EIO, "write %s: %s", rel, strerror(fs.err_no));
    }
    return sync_close(fd, rel, err);
}

/* Step 5.3: evidence.json streamed into staging (hashed while written), and
 * report.md / viewer.html rendered from the same packet. */
static int write_artifacts(const char *staging, const char *trace, const char *nsight, staged *s, char **run_id,
                           cg_buf *report, cg_buf *viewer, cg_error *err) {
    int fd = create_excl(staging, "evidence.json", err);
    if (fd < 0) return -1;
    cg_artifact_digest d;
    if (cg_render_bundle_artifacts_fd(trace, nsight, fd, &d, run_id, report, viewer, err) != 0) {
        close(fd);
        return -1;
    }
    if (sync_close(fd, "evidence.json", err) != 0 || staged_add_known(s, "evidence.json", &d, err) != 0) return -1;
    return 0;
}

/* Step 5.2: copy the regular files of nsight_dir into staging/nsight/. */
static int copy_nsight(const char *staging, const char *nsight_dir, staged *s, cg_error *err) {
    char *dst_dir = cg_path_join(staging, "nsight");
    if (!dst_dir) return cg_err_set(err, CG_ENOMEM, "out of memory");
    if (mkdir(dst_dir, 0755) != 0) {
        int rc = cg_err_set(err, CG_EIO, "create %s: %s", dst_dir, strerror(errno));
        cg_free(dst_dir);
        return rc;
    }
    char **names;
    size_t n;
    if (cg_dir_names_sorted(nsight_dir, "Nsight", &names, &n, err) != 0) {
        cg_free(dst_dir);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < n; i++) {
        char *src = cg_path_join(nsight_dir, names[i]);
        struct stat st;
        if (!src) {
            rc = cg_err_set(err, CG_ENOMEM, "out of memory");
        } else if (lstat(src, &st) != 0) {
            rc = cg_err_set(err, CG_EIO, "inspect Nsight input %s: %s", src, strerror(errno));
        } else if (S_ISLNK(st.st_mode)) {
            rc = cg_err_set(err, CG_EINVAL, "symbolic links are not allowed in Nsight inputs: %s", src);
        } else if (S_ISDIR(st.st_mode)) {
            rc = cg_err_set(err, CG_EINVAL, "directories are not allowed in Nsight inputs: %s", src);
        } else if (!S_ISREG(st.st_mode)) {
            rc = cg_err_set(err, CG_EINVAL, "special files are not allowed in Nsight inputs: %s", src);
        } else {
            char *dst = cg_path_join(dst_dir, names[i]);
            char rel[NAME_MAX + 16];
            snprintf(rel, sizeof rel, "nsight/%s", names[i]);
            if (!dst) rc = cg_err_set(err, CG_ENOMEM, "out of memory");
            else if (cg_copy_file(src, dst, err) != 0) rc = cg_err_context(err, "copy Nsight input");
            else rc = staged_add(s, staging, rel, err);
            cg_free(dst);
        }
        cg_free(src);
    }
    cg_dir_names_free(names, n);
    cg_free(dst_dir);
    return rc;
}

static int rename_noreplace(const char *from, const char *to) {
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS) return -1;
    /* filesystem without RENAME_NOREPLACE: check, then rename */
    if (cg_path_exists(to)) {
        errno = EEXIST;
        return -1;
    }
    return rename(from, to);
}

int cg_publish_bundle(const char *destination, const char *trace_path, const char *nsight_dir, cg_buf *manifest_out,
                      cg_error *err) {
    return cg_publish_bundle_verified(destination, trace_path, nsight_dir, manifest_out, NULL, err);
}

int cg_publish_bundle_verified(const char *destination_in, const char *trace_path, const char *nsight_dir,
                               cg_buf *manifest_out, cg_bundle_receipt *verified, cg_error *err) {
    /* "dir/" names "dir" (like a Rust Path file name) */
    char destination[PATH_MAX];
    size_t dl = strlen(destination_in);
    while (dl > 1 && destination_in[dl - 1] == '/') dl--;
    if (dl == 0 || dl >= sizeof destination) return cg_err_set(err, CG_EINVAL, "bundle destination needs a file name");
    memcpy(destination, destination_in, dl);
    destination[dl] = '\0';
    /* 1 */
    if (cg_path_exists(destination))
        return cg_err_set(err, CG_EEXIST, "bundle destination already exists: %s", destination);
    /* 2 */
    char parent[PATH_MAX];
    cg_path_parent(destination, parent, sizeof parent);
    if (cg_mkdir_p(parent, err) != 0) return cg_err_context(err, "create bundle parent %s", parent);
    /* 3 */
    const char *name = cg_path_base(destination);
    size_t nl = strlen(name);
    if (nl == 0 || !strcmp(name, ".") || !strcmp(name, "..") || nl > NAME_MAX - 48)
        return cg_err_set(err, CG_EINVAL, "bundle destination needs a file name");
    /* 4 */
    sweep_stale_staging(parent, name);
    char staging[PATH_MAX];
    int sl = snprintf(staging, sizeof staging, "%s/.%s.tmp-%ld-%llu", parent, name, (long)getpid(),
                      (unsigned long long)unix_nanos());
    if (sl < 0 || (size_t)sl >= sizeof staging) return cg_err_set(err, CG_EINVAL, "bundle destination path is too long");
    if (mkdir(staging, 0755) != 0)
        return cg_err_set(err, CG_EIO, "create staging directory %s: %s", staging, strerror(errno));
    step_done(CG_PUBLISH_STEP_STAGING_CREATED, staging);

    int rc = -1;
    staged s = {0};
    cg_buf report = CG_BUF_INIT, viewer = CG_BUF_INIT, man = CG_BUF_INIT;
    char *run_id = NULL, *staged_trace = cg_path_join(staging, "trace.jsonl"), *staged_nsight = NULL;
    if (!staged_trace) {
        cg_err_set(err, CG_ENOMEM, "out of memory");
        goto out;
    }
    /* 5.1: the copy is hashed as it is written (step 6 reads it back) */
    cg_artifact_digest td;
    if (cg_copy_file_sha256(trace_path, staged_trace, td.sha256, &td.bytes, err) != 0) {
        cg_err_context(err, "copy trace into bundle");
        goto out;
    }
    if (staged_add_known(&s, "trace.jsonl", &td, err) != 0) goto out;
    step_done(CG_PUBLISH_STEP_TRACE_COPIED, staging);
    /* 5.2 */
    if (nsight_dir) {
        if (copy_nsight(staging, nsight_dir, &s, err) != 0) goto out;
        staged_nsight = cg_path_join(staging, "nsight");
        if (!staged_nsight) {
            cg_err_set(err, CG_ENOMEM, "out of memory");
            goto out;
        }
    }
    step_done(CG_PUBLISH_STEP_NSIGHT_COPIED, staging);
    /* 5.3: derived files from the staged copies */
    /* write_bundle propagates build_evidence's error as it is */
    if (write_artifacts(staging, staged_trace, staged_nsight, &s, &run_id, &report, &viewer, err) != 0) goto out;
    step_done(CG_PUBLISH_STEP_EVIDENCE_WRITTEN, staging);
    if (write_synced(staging, "report.md", &report, err) != 0 || staged_add(&s, staging, "report.md", err) != 0)
        goto out;
    if (write_synced(staging, "viewer.html", &viewer, err) != 0 || staged_add(&s, staging, "viewer.html", err) != 0)
        goto out;
    step_done(CG_PUBLISH_STEP_ARTIFACTS_WRITTEN, staging);
    /* 5.4 */
    for (size_t i = 0; i < s.n; i++) {
        s.files[i].path = s.paths[i];
        s.files[i].path_len = strlen(s.paths[i]);
        s.files[i].sha256 = s.hex[i];
    }
    cg_bundle_manifest m = {.schema = CG_BUNDLE_SCHEMA, .run_id = run_id, .run_id_len = strlen(run_id),
                            .files = s.files, .n_files = s.n};
    cg_bundle_manifest_sort(&m);
    cg_bundle_manifest_write(&man, &m);
    if (write_synced(staging, CG_BUNDLE_MANIFEST_NAME, &man, err) != 0) goto out;
    step_done(CG_PUBLISH_STEP_MANIFEST_WRITTEN, staging);
    /* 6 */
    cg_bundle_receipt r;
    if (cg_bundle_verify_drop_behind(staging, &r, err) != 0) { /* nothing here reads the files again */
        cg_err_context(err, "verify staged evidence bundle");
        goto out;
    }
    step_done(CG_PUBLISH_STEP_VERIFIED, staging);
    /* 7 */
    if ((staged_nsight && cg_fsync_path(staged_nsight, err) != 0) || cg_fsync_path(staging, err) != 0) goto out;
    step_done(CG_PUBLISH_STEP_STAGING_SYNCED, staging);
    /* 8 */
    if (rename_noreplace(staging, destination) != 0) {
        int e = errno;
        cg_err_set(err, e == EEXIST || e == ENOTEMPTY ? CG_EEXIST : CG_EIO, "atomically publish bundle %s: %s",
                   destination, e == EEXIST || e == ENOTEMPTY ? "bundle destination already exists" : strerror(e));
        goto out;
    }
    step_done(CG_PUBLISH_STEP_RENAMED, staging);
    /* 9: the bundle is published; a sync failure is still reported */
    if (cg_fsync_path(parent, err) != 0) {
        cg_err_context(err, "sync bundle parent directory");
        rc = -1;
        goto done;
    }
    step_done(CG_PUBLISH_STEP_PARENT_SYNCED, staging);
    if (manifest_out) cg_buf_append(manifest_out, man.data, man.len);
    if (verified) *verified = r;
    rc = 0;
    goto done;
out:
    /* 10: best-effort removal of the staging directory */
    cg_rm_rf(staging);
done:
    cg_free(run_id);
    cg_free(staged_trace);
    cg_free(staged_nsight);
    cg_buf_free(&report);
    cg_buf_free(&viewer);
    cg_buf_free(&man);
    staged_free(&s);
    return rc;
}
