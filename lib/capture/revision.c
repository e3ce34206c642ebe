/* revision.c — vcs.* / ci.run_url tags from git and the CI environment
 * (revision.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/revision.h"

/* Reads both pipes to EOF (bounded by the buffers; the rest is discarded). */
static void drain(int fo, int fe, char *out, size_t outsz, char *errb, size_t errsz) {
    size_t no = 0, ne = 0;
    struct pollfd p[2] = {{fo, POLLIN, 0}, {fe, POLLIN, 0}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int k = 0; k < 2; k++) {
            if (p[k].fd < 0 || !(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
            char tmp[4096];
            ssize_t got = read(p[k].fd, tmp, sizeof tmp);
            if (got <= 0) {
                close(p[k].fd);
                p[k].fd = -1;
                open_fds--;
                continue;
            }
            char *dst = k == 0 ? out : errb;
            size_t *n = k == 0 ? &no : &ne, cap = k == 0 ? outsz : errsz;
            size_t take = (size_t)got < cap - 1 - *n ? (size_t)got : cap - 1 - *n;
            memcpy(dst + *n, tmp, take);
            *n += take;
        }
    }
    out[no] = 0;
    errb[ne] = 0;
}

int cg_git_output(const char *dir, const char *const *args, char *out, size_t outsz, cg_error *err) {
    const char *argv[32];
    size_t n = 0;
    argv[n++] = "git";
    if (dir) {
        argv[n++] = "-C";
        argv[n++] = dir;
    }
    for (size_t i = 0; args[i] && n < 31; i++) argv[n++] = args[i];
    argv[n] = NULL;
    int po[2], pe[2];
    if (pipe(po) < 0) return cg_err_set(err, CG_EIO, "git: pipe: %s", strerror(errno));
    if (pipe(pe) < 0) {
        close(po[0]);
        close(po[1]);
        return cg_err_set(err, CG_EIO, "git: pipe: %s", strerror(errno));
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        return cg_err_set(err, CG_EIO, "git: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        dup2(po[1], 1);
        dup2(pe[1], 2);
        close(po[0]), close(po[1]), close(pe[0]), close(pe[1]);
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        execvp("git", (char *const *)argv);
        fprintf(stderr, "cannot run git: %s\n", strerror(errno));
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    char errb[512];
    drain(po[0], pe[0], out, outsz, errb, sizeof errb);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    size_t len = strlen(out);
    while (len && (out[len - 1] == '\n' || out[len - 1] == '\r')) out[--len] = 0;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        char *nl = strchr(errb, '\n');
        if (nl) *nl = 0;
        return cg_err_set(err, CG_EIO, "git %s failed: %s", args[0], errb[0] ? errb : "non-zero exit");
    }
    return 0;
}

static const char *env(const char *name) {
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

static void run_url(char *out, size_t n) {
    const char *srv = env("GITHUB_SERVER_URL"), *repo = env("GITHUB_REPOSITORY"), *run = env("GITHUB_RUN_ID");
    out[0] = 0;
    if (srv && repo && run) snprintf(out, n, "%s/%s/actions/runs/%s", srv, repo, run);
    else if (env("CI_JOB_URL")) snprintf(out, n, "%s", env("CI_JOB_URL"));
    else if (env("BUILD_URL")) snprintf(out, n, "%s", env("BUILD_URL"));
    else if (env("CG_CI_RUN_URL")) snprintf(out, n, "%s", env("CG_CI_RUN_URL"));
}

int cg_revision_detect(const char *dir, cg_revision *out, cg_error *err) {
    memset(out, 0, sizeof *out);
    const char *head[] = {"rev-parse", "--verify", "HEAD", NULL};
    if (cg_git_output(dir, head, out->commit, sizeof out->commit, err) < 0) return -1;
    const char *when[] = {"show", "-s", "--format=%cI", "HEAD", NULL};
    if (cg_git_output(dir, when, out->commit_time, sizeof out->commit_time, err) < 0) return -1;
    const char *vars[] = {"CG_VCS_BRANCH", "GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME", "BRANCH_NAME"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0] && !out->branch[0]; i++)
        if (env(vars[i])) snprintf(out->branch, sizeof out->branch, "%s", env(vars[i]));
    if (!out->branch[0]) {
        const char *br[] = {"rev-parse", "--abbrev-ref", "HEAD", NULL};
        if (cg_git_output(dir, br, out->branch, sizeof out->branch, err) < 0) return -1;
        if (!strcmp(out->branch, "HEAD"))
            return cg_err_set(err, CG_ESTATE, "detached HEAD: set CG_VCS_BRANCH to the branch this commit belongs to");
    }
    const char *origin[] = {"config", "--get", "remote.origin.url", NULL};
    cg_error ignore = {0};
    if (cg_git_output(dir, origin, out->repository, sizeof out->repository, &ignore) < 0) out->repository[0] = 0;
    run_url(out->run_url, sizeof out->run_url);
    return 0;
}

int cg_profile_run_revision_tags(cg_profile_run *r, const char *dir, cg_error *err) {
    cg_revision rev;
    if (cg_revision_detect(dir, &rev, err) < 0) return -1;
    if (cg_profile_run_tag(r, "vcs.commit", rev.commit) < 0 || cg_profile_run_tag(r, "vcs.branch", rev.branch) < 0 ||
        cg_profile_run_tag(r, "vcs.commit_time", rev.commit_time) < 0 ||
        (rev.repository[0] && cg_profile_run_tag(r, "vcs.repository", rev.repository) < 0) ||
        (rev.run_url[0] && cg_profile_run_tag(r, "ci.run_url", rev.run_url) < 0))
        return cg_err_set(err, CG_EINVAL, "cannot set the revision tags");
    return 0;
}
