/* pgembed.c — the embedded default: a private PostgreSQL cluster inside the
 * data dir (<data>/pg), created with initdb and run with pg_ctl on a Unix socket
 * in <data>/pg-run with listen_addresses='' (no TCP listener). PostgreSQL refuses
 * to run as root, so as root the cluster runs as an unprivileged user (default
 * `postgres`), which owns <data>/pg and <data>/pg-run. A cluster that is already
 * running (the server is up while `admin` runs) is reused and left running. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fs.h"
#include "srv_store.h"

#define EMBED_DB "candlegraph"
#define EMBED_ROLE "candlegraph"

static int find_bindir(const srv_config *cfg, char *out, size_t outsz, cg_error *err) {
    if (cfg->pg_bindir[0]) {
        snprintf(out, outsz, "%s", cfg->pg_bindir);
        return 0;
    }
    DIR *d = opendir("/usr/lib/postgresql");
    long best = -1;
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            char *end;
            long v = strtol(e->d_name, &end, 10);
            if (end == e->d_name || *end) continue;
            char probe[PATH_MAX];
            snprintf(probe, sizeof probe, "/usr/lib/postgresql/%ld/bin/pg_ctl", v);
            if (access(probe, X_OK) == 0 && v > best) best = v;
        }
        closedir(d);
    }
    if (best < 0)
        return cg_err_set(err, CG_EIO,
                          "no PostgreSQL server binaries found under /usr/lib/postgresql/*/bin; install "
                          "postgresql or pass --database-url");
    snprintf(out, outsz, "/usr/lib/postgresql/%ld/bin", best);
    return 0;
}

/* Runs argv (argv[0] = full path) as pg->user when we are root; output appended
 * to the log file. Returns the exit status, -1 when it could not run. */
static int run_as(const srv_pgembed *pg, char *const argv[], bool quiet_log) {
    struct passwd *pw = NULL;
    if (geteuid() == 0) {
        pw = getpwnam(pg->user);
        if (!pw) return -1;
    }
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* the server blocks SIGTERM for sigwait */
        if (pw) {
            if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(126);
        }
        if (chdir("/") != 0) _exit(126);
        int fd = open(quiet_log ? "/dev/null" : pg->logfile, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        int devnull = open("/dev/null", O_RDONLY);
        if (devnull >= 0) dup2(devnull, 0);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int own_dir(const srv_pgembed *pg, const char *dir, mode_t mode, cg_error *err) {
    if (mkdir(dir, mode) != 0 && errno != EEXIST)
        return cg_err_set(err, CG_EIO, "cannot create %s: %s", dir, strerror(errno));
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam(pg->user);
        if (!pw)
            return cg_err_set(err, CG_EINVAL,
                              "running as root: the embedded PostgreSQL needs the unprivileged user '%s' "
                              "(create it or pass --pg-user)",
                              pg->user);
        if (chown(dir, pw->pw_uid, pw->pw_gid) != 0)
            return cg_err_set(err, CG_EIO, "cannot chown %s to %s: %s", dir, pg->user, strerror(errno));
    }
    if (chmod(dir, mode) != 0) return cg_err_set(err, CG_EIO, "cannot chmod %s: %s", dir, strerror(errno));
    return 0;
}

/* The k-th (1-based) directory on the way to abs: "/", then abs up to each
 * further '/' (abs itself, without a trailing '/', is not one). Its length. */
static size_t ancestor_len(const char *abs, int k) {
    size_t len = 0;
    for (int seen = 0; abs[len]; len++)
        if (abs[len] == '/' && ++seen == k) return len ? len : 1;
    return 0;
}

/* As root: the first directory on the way to abs that pw cannot search, with
 * the credentials run_as gives the cluster (no supplementary groups). A child
 * takes them and tries each; its exit status is the index of the first it
 * cannot search (0: all can be, 255: could not check). 1 (out filled) or 0. */
static int untraversable_ancestor(const struct passwd *pw, const char *abs, char *out, size_t outsz) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", abs);
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        if (setgroups(0, NULL) != 0 || setgid(pw->pw_gid) != 0 || setuid(pw->pw_uid) != 0) _exit(255);
        for (int k = 1; k < 255; k++) {
            size_t len = ancestor_len(abs, k);
            if (!len) break;
            char keep = path[len];
            path[len] = 0;
            if (access(path, X_OK) != 0) _exit(k);
            path[len] = keep;
        }
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return 0;
    int k = WIFEXITED(st) ? WEXITSTATUS(st) : 255;
    size_t len = k > 0 && k < 255 ? ancestor_len(abs, k) : 0;
    if (!len) return 0;
    snprintf(out, outsz, "%.*s", (int)len, abs);
    return 1;
}

/* Refuses, before initdb, a data dir the cluster's user could not reach (initdb
 * would fail with a bare "could not access directory …: Permission denied"). */
static int check_reachable(const struct passwd *pw, const char *abs, cg_error *err) {
    char bad[PATH_MAX];
    if (!untraversable_ancestor(pw, abs, bad, sizeof bad)) return 0;
    struct stat st;
    bool known = stat(bad, &st) == 0;
    struct passwd *owner = known ? getpwuid(st.st_uid) : NULL;
    return cg_err_set(err, CG_EINVAL,
                      "the embedded PostgreSQL runs as the unprivileged user '%s', which cannot enter %s "
                      "(mode %04o, owner %s), a parent of the data dir %s, so its cluster cannot be created "
                      "there. Give that directory search permission for '%s' (e.g. chmod o+x %s), choose a "
                      "--data-dir whose parents '%s' can enter, or pass --database-url",
                      pw->pw_name, bad, known ? (unsigned)(st.st_mode & 07777) : 0u,
                      owner ? owner->pw_name : "unknown", abs, pw->pw_name, bad, pw->pw_name);
}

static bool safe_for_shell(const char *s) {
    for (; *s; s++)
        if (*s == '\'' || *s == '"' || *s == ' ' || *s == '\\' || *s == '$' || *s == '`') return false;
    return true;
}

int srv_pgembed_start(srv_pgembed *pg, const srv_config *cfg, char *conninfo, size_t cisz, cg_error *err) {
    memset(pg, 0, sizeof *pg);
    snprintf(pg->user, sizeof pg->user, "%s", cfg->pg_user);
    if (find_bindir(cfg, pg->bindir, sizeof pg->bindir, err) < 0) return -1;
    if (cg_mkdir_p(cfg->data_dir, err) < 0) return -1;
    char abs[PATH_MAX];
    if (!realpath(cfg->data_dir, abs)) return cg_err_set(err, CG_EIO, "cannot resolve %s: %s", cfg->data_dir, strerror(errno));
    if (!safe_for_shell(abs))
        return cg_err_set(err, CG_EINVAL, "the data dir path must not contain spaces or quotes for the embedded "
                                          "PostgreSQL: %s", abs);
    if (strlen(abs) + 32 > 100)
        return cg_err_set(err, CG_EINVAL, "the data dir path is too long for a Unix socket (%s); use a shorter "
                                          "--data-dir or --database-url", abs);
    if (snprintf(pg->pgdata, sizeof pg->pgdata, "%s/pg", abs) >= (int)sizeof pg->pgdata ||
        snprintf(pg->sockdir, sizeof pg->sockdir, "%s/pg-run", abs) >= (int)sizeof pg->sockdir ||
        snprintf(pg->logfile, sizeof pg->logfile, "%s/pg-run/postgres.log", abs) >= (int)sizeof pg->logfile)
        return cg_err_set(err, CG_EINVAL, "the data dir path is too long");
    if (geteuid() == 0) {
        /* the cluster user may traverse the data dir (group x, through its own
         * group) and nothing more: no other user, and no read of its entries */
        struct passwd *pw = getpwnam(pg->user);
        if (!pw)
            return cg_err_set(err, CG_EINVAL,
                              "running as root: the embedded PostgreSQL needs the unprivileged user '%s' "
                              "(create it or pass --pg-user)",
                              pg->user);
        if (check_reachable(pw, abs, err) < 0) return -1;
        if (chown(abs, (uid_t)-1, pw->pw_gid) != 0 || chmod(abs, 0710) != 0)
            return cg_err_set(err, CG_EIO, "cannot make %s traversable for %s: %s", abs, pg->user, strerror(errno));
    }
    if (own_dir(pg, pg->sockdir, 0700, err) < 0) return -1;
    char pgv[PATH_MAX + 16];
    snprintf(pgv, sizeof pgv, "%s/PG_VERSION", pg->pgdata);
    char tool[PATH_MAX + 16];
    if (!cg_path_exists(pgv)) {
        if (own_dir(pg, pg->pgdata, 0700, err) < 0) return -1;
        snprintf(tool, sizeof tool, "%s/initdb", pg->bindir);
        char *argv[] = {tool, "-D", pg->pgdata, "-U", EMBED_ROLE, "--auth=trust", "-E", "UTF8",
                        "--no-locale", "--no-instructions", NULL};
        int rc = run_as(pg, argv, false);
        if (rc != 0)
            return cg_err_set(err, CG_EIO, "initdb failed (exit %d); see %s", rc, pg->logfile);
    }
    snprintf(tool, sizeof tool, "%s/pg_ctl", pg->bindir);
    char *status_argv[] = {tool, "-D", pg->pgdata, "status", NULL};
    if (run_as(pg, status_argv, true) != 0) {
        char opts[PATH_MAX + 128];
        snprintf(opts, sizeof opts,
                 "-c listen_addresses='' -c unix_socket_directories='%s' -c unix_socket_permissions=0700 -c fsync=on",
                 pg->sockdir);
        char *argv[] = {tool, "-D", pg->pgdata, "-l", pg->logfile, "-w", "-t", "60", "-o", opts, "start", NULL};
        int rc = run_as(pg, argv, false);
        if (rc != 0)
            return cg_err_set(err, CG_EIO, "pg_ctl start failed (exit %d); see %s", rc, pg->logfile);
        pg->started_by_us = true;
    }
    char admin_ci[PATH_MAX + 64];
    snprintf(admin_ci, sizeof admin_ci, "host=%s dbname=postgres user=" EMBED_ROLE, pg->sockdir);
    PGconn *c = srv_db_connect(admin_ci, 60000, err);
    if (!c) {
        srv_pgembed_stop(pg);
        return -1;
    }
    int rc = srv_store_database_ensure(c, EMBED_DB, err);
    PQfinish(c);
    if (rc < 0) {
        srv_pgembed_stop(pg);
        return -1;
    }
    snprintf(conninfo, cisz, "host=%s dbname=" EMBED_DB " user=" EMBED_ROLE, pg->sockdir);
    return 0;
}

void srv_pgembed_stop(srv_pgembed *pg) {
    if (!pg->started_by_us) return;
    char tool[PATH_MAX + 16];
    snprintf(tool, sizeof tool, "%s/pg_ctl", pg->bindir);
    char *argv[] = {tool, "-D", pg->pgdata, "-m", "fast", "-w", "-t", "60", "stop", NULL};
    int rc = run_as(pg, argv, false);
    if (rc != 0) srv_log("error", "pg_ctl stop failed", "log", pg->logfile, NULL);
    pg->started_by_us = false;
}
