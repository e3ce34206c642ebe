/* candle-graph version — prints the tool name and version as JSON. */
#include <stdio.h>

#include "cli_util.h"

const char cg_cmd_version_help[] =
    "usage: candle-graph version\n"
    "Print the tool package and version as JSON ({package, version}).\n";

int cg_cmd_version(int argc, char **argv) {
    (void)argv;
    if (argc > 1) return cli_usage_error("version", "takes no arguments");
    cg_arena a;
    cg_arena_init(&a, 0);
    int rc = cli_write_json(NULL, cli_tool_json(&a));
    cg_arena_free(&a);
    return rc;
}
