/* candle-graph — command dispatcher. Commands register themselves by file name
 * (agent/cli/cmd_<name>.c, see agent/CMakeLists.txt). */
#include <stdio.h>
#include <string.h>

#include "cmd_table.h"

static void usage(FILE *f) {
    fprintf(f,
            "candle-graph %s — trustworthy performance evidence for ML runs\n\n"
            "usage: candle-graph <command> [args…]\n"
            "       candle-graph <command> --help\n\ncommands:\n",
            CG_VERSION);
    for (const struct cg_cmd *c = cg_cmds; c->name; c++) {
        const char *h = c->help;
        const char *nl = strchr(h, '\n');
        /* first line of the help text is "usage: …"; the second is the summary */
        const char *summary = nl ? nl + 1 : h;
        const char *end = strchr(summary, '\n');
        int n = end ? (int)(end - summary) : (int)strlen(summary);
        fprintf(f, "  %-18s %.*s\n", c->name, n, summary);
    }
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    if (!strcmp(name, "--help") || !strcmp(name, "-h") || !strcmp(name, "help")) {
        if (argc > 2) {
            for (const struct cg_cmd *c = cg_cmds; c->name; c++)
                if (!strcmp(c->name, argv[2])) {
                    fputs(c->help, stdout);
                    return 0;
                }
        }
        usage(stdout);
        return 0;
    }
    if (!strcmp(name, "--version") || !strcmp(name, "-V")) {
        printf("candle-graph %s\n", CG_VERSION);
        return 0;
    }
    for (const struct cg_cmd *c = cg_cmds; c->name; c++) {
        if (!strcmp(c->name, name)) {
            for (int i = 2; i < argc; i++) {
                if (!strcmp(argv[i], "--")) break;
                if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                    fputs(c->help, stdout);
                    return 0;
                }
            }
            return c->run(argc - 1, argv + 1);
        }
    }
    /* clap's words for an unknown subcommand */
    fprintf(stderr, "error: The subcommand '%s' wasn't recognized\n\nUsage: candle-graph <COMMAND>\n\n"
                    "For more information try '--help'\n", name);
    return 2;
}
