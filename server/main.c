/* main.c — candle-graph-server command dispatch. */
#include <stdio.h>
#include <string.h>

#include "srv.h"

static const char usage_text[] =
    "usage: candle-graph-server <command> [flags]\n"
    "  serve [--data-dir DIR] [--listen HOST:PORT] [--database-url URL] [--blob-store fs|pg]\n"
    "        [--public-read] [--require-signature yes|no]\n"
    "  admin bootstrap | token create --name N --scopes a,b | token list | token revoke ID\n"
    "        | key add --name N --public-key FILE|BASE64 | key list | key revoke KEY_ID\n"
    "        [--data-dir DIR | --database-url URL]\n"
    "  fsck [--data-dir DIR] [--database-url URL] [--blob-store fs|pg]\n"
    "  migrate [--data-dir DIR | --database-url URL]\n"
    "  routes   (prints the router's METHOD PATH table)\n"
    "limits (serve): --max-body-bytes N --max-decoded-bytes N --max-files N --min-free-bytes N\n"
    "  --max-connections N --per-ip-connections N --idle-timeout S --request-timeout S --pool-size N\n"
    "  --max-uploads N --upload-wait-ms MS --janitor-interval S --janitor-grace S --shutdown-grace S\n"
    "embedded PostgreSQL: --pg-user USER (when root; default postgres) --pg-bindir DIR\n";

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        fputs(usage_text, argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("candle-graph-server %s\n", CG_VERSION);
        return 0;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "serve")) return srv_cmd_serve(argc - 1, argv + 1);
    if (!strcmp(cmd, "admin")) return srv_cmd_admin(argc - 1, argv + 1);
    if (!strcmp(cmd, "fsck")) return srv_cmd_fsck(argc - 1, argv + 1);
    if (!strcmp(cmd, "migrate")) return srv_cmd_migrate(argc - 1, argv + 1);
    if (!strcmp(cmd, "routes")) return srv_cmd_routes(argc - 1, argv + 1);
    fprintf(stderr, "candle-graph-server: unknown command %s\n%s", cmd, usage_text);
    return 2;
}
