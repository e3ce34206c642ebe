/* main.c — candle-graph-server command dispatch and each command's --help. */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/alloc.h"
#include "srv.h"

static const char serve_usage[] =
    "usage: candle-graph-server serve [--data-dir DIR] [--listen HOST:PORT] [--database-url URL]\n"
    "        [--blob-store fs|pg] [--public-read] [--require-signature yes|no]\n"
    "  Runs the HTTP API (default 127.0.0.1:8080, data dir ./var, embedded PostgreSQL\n"
    "  when no --database-url is given).\n"
    "limits: --max-body-bytes N --max-decoded-bytes N --max-decompression-ratio R (0 = off)\n"
    "  --max-files N --min-free-bytes N --max-connections N --per-ip-connections N\n"
    "  --idle-timeout S --request-timeout S --header-timeout S --body-timeout S --min-body-rate B/S\n"
    "  --max-query-params N --max-uri-bytes N --pool-size N --max-uploads N (0 = uploads refused)\n"
    "  --upload-wait-ms MS --janitor-interval S --janitor-grace S --shutdown-grace S\n"
    "memory: --resident-budget-bytes N (default 320 MiB; 0 = no spilling) --spill-min-bytes N\n"
    "  (default 1 MiB): larger blocks live in unnamed files of DIR/staging, and above the budget\n"
    "  their resident pages are dropped (docs/deployment.md \"Memory\")\n"
    "embedded PostgreSQL: --pg-user USER (when root; default postgres) --pg-bindir DIR\n";
static const char admin_usage[] =
    "usage: candle-graph-server admin bootstrap\n"
    "       candle-graph-server admin token create --name N --scopes a,b | token list | token revoke ID\n"
    "       candle-graph-server admin key add --name N --public-key FILE|BASE64 | key list | key revoke KEY_ID\n"
    "  common flags: [--data-dir DIR | --database-url URL]\n"
    "  bootstrap prints {\"id\", \"token\", \"scopes\"} of a new admin token (scopes admin, upload, read).\n";
static const char fsck_usage[] =
    "usage: candle-graph-server fsck [--data-dir DIR] [--database-url URL] [--blob-store fs|pg]\n"
    "  Re-hashes every stored blob against the index; non-zero exit when anything is missing or damaged.\n";
static const char migrate_usage[] =
    "usage: candle-graph-server migrate [--data-dir DIR | --database-url URL]\n"
    "  Applies the embedded database migrations (idempotent).\n";
static const char routes_usage[] =
    "usage: candle-graph-server routes\n"
    "  Prints the router's METHOD PATH table.\n";

static const char errors_usage[] =
    "usage: candle-graph-server errors\n"
    "  Prints the table of error codes (status, category, retry, meaning) as Markdown.\n";

static const char usage_text[] =
    "usage: candle-graph-server <command> [flags]   (candle-graph-server <command> --help for its flags)\n"
    "  serve    run the HTTP API\n"
    "  admin    tokens and signer keys (bootstrap, token, key)\n"
    "  fsck     check the blob store against the index\n"
    "  migrate  apply database migrations\n"
    "  routes   print the router's METHOD PATH table\n"
    "  errors   print the table of error codes\n";

struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
};
static const struct command commands[] = {
    {"serve", srv_cmd_serve, serve_usage},    {"admin", srv_cmd_admin, admin_usage},
    {"fsck", srv_cmd_fsck, fsck_usage},       {"migrate", srv_cmd_migrate, migrate_usage},
    {"routes", srv_cmd_routes, routes_usage}, {"errors", srv_cmd_errors, errors_usage},
};

static bool wants_help(int argc, char **argv) {
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return true;
    return false;
}

int main(int argc, char **argv) {
    umask(077); /* everything the server writes (data, blobs, staging, logs) is private */
    /* an ingest's trace model and evidence are handed back when freed instead
     * of staying on the brk heap under the next step (5M-record bundle: peak
     * RSS 815 -> 776 MiB, bench/ingest/rss.sh) */
    cg_malloc_fixed_mmap_threshold(4u << 20);
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("candle-graph-server %s\n", CG_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(argv[1], commands[i].name) != 0) continue;
        if (wants_help(argc, argv)) {
            fputs(commands[i].usage, stdout);
            return 0;
        }
        return commands[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "candle-graph-server: unknown command %s\n%s", argv[1], usage_text);
    return 2;
}
