/* revision.h — the revision a capture ran on (issue 15), as the trace tags the
 * server indexes: vcs.commit (full hash of HEAD), vcs.branch, vcs.commit_time
 * (committer date, RFC 3339), vcs.repository (remote "origin" URL, when set)
 * and ci.run_url (from the CI's environment, when known). docs/ci.md.
 *
 * The branch: $CG_VCS_BRANCH, else the CI's branch variable
 * ($GITHUB_HEAD_REF, $GITHUB_REF_NAME, $CI_COMMIT_REF_NAME, $BRANCH_NAME),
 * else the checked-out branch; a detached HEAD without any of them is an
 * error (CI checkouts are often detached). The run URL: GitHub Actions
 * ($GITHUB_SERVER_URL/$GITHUB_REPOSITORY/actions/runs/$GITHUB_RUN_ID),
 * GitLab ($CI_JOB_URL), Jenkins ($BUILD_URL), else $CG_CI_RUN_URL.
 *
 * git is run as a child process (execvp "git", no shell) with `-C dir`.
 * Errors: -1 with err naming the git command and its message. */
#ifndef CG_CAPTURE_REVISION_H
#define CG_CAPTURE_REVISION_H

#include <stddef.h>

#include "base/error.h"
#include "capture/capture.h"

typedef struct cg_revision {
    char commit[65];
    char branch[256];
    char commit_time[64];
    char repository[1024]; /* "" when there is no origin remote */
    char run_url[1024];    /* "" when unknown */
} cg_revision;

/* Runs `git -C dir args…` (args NULL-terminated; dir NULL = current
 * directory) and keeps its standard output, trailing newlines removed, in out
 * (truncated to outsz − 1). Non-zero exit → -1 with git's first stderr line. */
int cg_git_output(const char *dir, const char *const *args, char *out, size_t outsz, cg_error *err);

/* The revision of the working copy at dir (NULL = current directory). */
int cg_revision_detect(const char *dir, cg_revision *out, cg_error *err);

/* cg_revision_detect, then one cg_profile_run_tag per known field. */
int cg_profile_run_revision_tags(cg_profile_run *r, const char *dir, cg_error *err);

#endif
