/* cmd_gate.c — `candle-graph gate`: the CI question "is this change slower than
 * its merge-base?" answered by the server's comparison/6 (CLI.md, docs/ci.md).
 *
 * Baseline: --baseline SELECTOR, or --git: the merge-base of HEAD and the base
 * branch, then its ancestors (git rev-list, newest first, at most --max-walk)
 * until one has a cohort on the server (GET /bundles?commit=…). Then GET
 * /compare, /compare/advice, /compare/spans and /alerts (open alerts of the
 * series), a Markdown summary (to --markdown FILE, or stdout without -o) and
 * the JSON {comparison, advice, baseline_commit, candidate_commit,
 * dashboard_url} (-o FILE). Exit: 0 not slower, 1 slower by more than
 * --fail-above percent (default 0), 2 ineligible or inconclusive (also: no
 * baseline cohort found), 3 usage or server error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "capture/revision.h"
#include "cli_http.h"
#include "cli_util.h"

const char cg_cmd_gate_help[] =
    "usage: candle-graph gate --server URL --token T (--git [--base-branch B] | --baseline SELECTOR)\n"
    "       --candidate SELECTOR [--fail-above PCT] [--min-effect PCT] [--markdown FILE] [-o FILE]\n"
    "       [--filter KEY=VALUE]... [--max-walk N] [--repo DIR]\n"
    "Compares a candidate cohort with a baseline on a candle-graph-server and exits 0 (not slower),\n"
    "1 (slower by more than --fail-above), 2 (ineligible or inconclusive) or 3 (usage or server error).\n"
    "  --server URL        server base URL\n"
    "  --token T           read token (or env CANDLE_GRAPH_TOKEN)\n"
    "  --git               baseline = nearest ancestor of merge-base(HEAD, base branch) with a cohort\n"
    "  --base-branch B     base branch for --git (default main)\n"
    "  --baseline SEL      baseline selector: ids, commit:<sha>, branch:<name>, campaign:, implementation:\n"
    "  --candidate SEL     candidate selector (e.g. commit:$(git rev-parse HEAD))\n"
    "  --fail-above PCT    slowdown (median delta %) tolerated before exit 1 (default 0)\n"
    "  --min-effect PCT    effect the run-k-more advice must resolve (default 1)\n"
    "  --markdown FILE     write the Markdown summary here (default stdout when no -o)\n"
    "  -o FILE             write {comparison, advice, baseline_commit, candidate_commit, dashboard_url}\n"
    "  --filter KEY=VALUE  series filter sent with every query (workload_id=…, entrypoint=…; repeatable)\n"
    "  --max-walk N        ancestors of the merge-base tried with --git (default 200)\n"
    "  --repo DIR          git working copy for --git (default .)\n";

#define EXIT_SERVER 3

typedef struct gate {
    const char *server, *token, *base_branch, *baseline, *candidate, *markdown, *out, *repo;
    const char *filters[16];
    size_t n_filters;
    bool git;
    double fail_above, min_effect;
    long max_walk;
    char baseline_sel[96], baseline_commit[65];
    cg_arena a;
} gate;

static int parse_pct(const char *s, double *out) {
    char *e;
    *out = strtod(s, &e);
    return *s && !*e && isfinite(*out) && *out >= 0.0;
}

static int parse(int argc, char **argv, gate *g) {
    const char *fa = NULL, *me = NULL, *mw = NULL, *flt = NULL;
    for (int i = 1; i < argc; i++) {
        int r;
        if ((r = cli_take_value(argc, argv, &i, "--server", NULL, &g->server)) ||
            (r = cli_take_value(argc, argv, &i, "--token", NULL, &g->token)) ||
            (r = cli_take_value(argc, argv, &i, "--base-branch", NULL, &g->base_branch)) ||
            (r = cli_take_value(argc, argv, &i, "--baseline", NULL, &g->baseline)) ||
            (r = cli_take_value(argc, argv, &i, "--candidate", NULL, &g->candidate)) ||
            (r = cli_take_value(argc, argv, &i, "--fail-above", NULL, &fa)) ||
            (r = cli_take_value(argc, argv, &i, "--min-effect", NULL, &me)) ||
            (r = cli_take_value(argc, argv, &i, "--markdown", NULL, &g->markdown)) ||
            (r = cli_take_value(argc, argv, &i, "-o", "--output", &g->out)) ||
            (r = cli_take_value(argc, argv, &i, "--max-walk", NULL, &mw)) ||
            (r = cli_take_value(argc, argv, &i, "--repo", NULL, &g->repo))) {
            if (r < 0) return 0;
            continue;
        }
        if ((r = cli_take_value(argc, argv, &i, "--filter", NULL, &flt))) {
            if (r < 0 || !strchr(flt, '=') || flt[0] == '=' || g->n_filters == 16) {
                if (r > 0) cli_usage_error("gate", "--filter needs KEY=VALUE (at most 16)");
                return 0;
            }
            g->filters[g->n_filters++] = flt;
        } else if (cli_is_flag(argv[i], "--git", NULL)) {
            g->git = true;
        } else {
            cli_usage_unexpected("gate", argv[i]);
            return 0;
        }
    }
    if (!g->token) g->token = getenv("CANDLE_GRAPH_TOKEN");
    if (!g->server || !g->token || !g->candidate || g->git == (g->baseline != NULL)) {
        cli_usage_error("gate", "--server, --token, --candidate and one of --git / --baseline are required");
        return 0;
    }
    if (!g->base_branch) g->base_branch = "main";
    if ((fa && !parse_pct(fa, &g->fail_above)) || (me && (!parse_pct(me, &g->min_effect) || g->min_effect == 0.0))) {
        cli_usage_error("gate", "--fail-above and --min-effect take a non-negative percentage");
        return 0;
    }
    if (!me) g->min_effect = 1.0;
    g->max_walk = 200;
    if (mw) {
        char *e;
        g->max_walk = strtol(mw, &e, 10);
        if (!*mw || *e || g->max_walk < 1 || g->max_walk > 100000) {
            cli_usage_error("gate", "--max-walk takes 1 to 100000");
            return 0;
        }
    }
    return 1;
}

/* ------------------------------------------------------------ server calls */

/* server + path + "?" + query (already encoded) + the --filter pairs. */
static char *url_of(gate *g, const char *path, const cg_buf *query) {
    cg_buf u = CG_BUF_INIT;
    size_t sl = strlen(g->server);
    cg_buf_append(&u, g->server, sl && g->server[sl - 1] == '/' ? sl - 1 : sl);
    cg_buf_puts(&u, path);
    cg_buf_putc(&u, '?');
    if (query && query->len) cg_buf_append(&u, query->data, query->len);
    for (size_t i = 0; i < g->n_filters; i++) {
        const char *eq = strchr(g->filters[i], '=');
        char *k = cg_arena_strndup(&g->a, g->filters[i], (size_t)(eq - g->filters[i]));
        cg_buf_putc(&u, '&');
        cli_http_escape(&u, k);
        cg_buf_putc(&u, '=');
        cli_http_escape(&u, eq + 1);
    }
    char *s = cg_arena_strndup(&g->a, u.data, u.len);
    cg_buf_free(&u);
    return s;
}

/* GET → parsed JSON in g->a; NULL after printing (server error or no answer). */
static cg_jv *get_json(gate *g, const char *path, const cg_buf *query, long *status_out) {
    char *url = url_of(g, path, query), *body = NULL;
    size_t len = 0;
    long status = 0;
    cg_error err = {0};
    if (cli_http_get(url, g->token, &status, &body, &len, &err) < 0) {
        fprintf(stderr, "candle-graph gate: %s\n", err.msg);
        return NULL;
    }
    if (status_out) *status_out = status;
    cg_json_limits lim;
    cg_json_limits_default(&lim);
    cg_jv *v = cg_json_parse(&g->a, body, len, &lim, &err);
    if (status != 200 || !v) {
        fprintf(stderr, "candle-graph gate: GET %s → HTTP %ld\n%.*s\n", path, status, (int)(len > 4000 ? 4000 : len),
                body ? body : "");
        cg_free(body);
        return NULL;
    }
    cg_free(body);
    return v;
}

static void q_put(cg_buf *q, const char *key, const char *value) {
    if (q->len) cg_buf_putc(q, '&');
    cg_buf_puts(q, key);
    cg_buf_putc(q, '=');
    cli_http_escape(q, value);
}

/* --git: nearest ancestor of the merge-base with a cohort. 1 found, 0 none,
 * -1 error (printed). */
static int find_baseline(gate *g) {
    char mb[65];
    cg_error err = {0};
    const char *mbargs[] = {"merge-base", "HEAD", g->base_branch, NULL};
    if (cg_git_output(g->repo, mbargs, mb, sizeof mb, &err) < 0) {
        fprintf(stderr, "candle-graph gate: --git: %s\n", err.msg);
        return -1;
    }
    char maxc[32];
    snprintf(maxc, sizeof maxc, "--max-count=%ld", g->max_walk);
    const char *rl[] = {"rev-list", maxc, mb, NULL};
    size_t lsz = (size_t)g->max_walk * 66 + 1;
    char *list = cg_arena_alloc(&g->a, lsz);
    if (cg_git_output(g->repo, rl, list, lsz, &err) < 0) {
        fprintf(stderr, "candle-graph gate: --git: %s\n", err.msg);
        return -1;
    }
    for (char *line = list, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        cg_buf q = CG_BUF_INIT;
        q_put(&q, "commit", line);
        cg_buf_puts(&q, "&limit=1");
        cg_jv *v = get_json(g, "/bundles", &q, NULL);
        cg_buf_free(&q);
        if (!v) return -1;
        if (cg_jv_len(cg_jv_get(v, "items")) > 0) {
            snprintf(g->baseline_commit, sizeof g->baseline_commit, "%.64s", line);
            snprintf(g->baseline_sel, sizeof g->baseline_sel, "commit:%.64s", line);
            g->baseline = g->baseline_sel;
            return 1;
        }
    }
    fprintf(stderr, "candle-graph gate: no ancestor of merge-base %s (%ld tried) has a cohort on the server\n", mb,
            g->max_walk);
    return 0;
}

/* ------------------------------------------------------------ summary */

static double num(const cg_jv *v, bool *has) {
    double d = 0.0;
    bool ok = v && cg_jv_as_f64(v, &d);
    if (has) *has = ok;
    return d;
}

static const char *short_sel(gate *g, const char *sel) {
    if (!strncmp(sel, "commit:", 7) && strlen(sel) > 19) return cg_arena_printf(&g->a, "commit:%.12s", sel + 7);
    return sel;
}

static void md_stats(gate *g, cg_buf *m, const cg_jv *cmp) {
    const cg_jv *b = cg_jv_get(cmp, "baseline"), *c = cg_jv_get(cmp, "candidate");
    cg_buf_printf(m, "| | baseline | candidate |\n|---|---|---|\n| cohort | `%s` | `%s` |\n",
                  short_sel(g, g->baseline), short_sel(g, g->candidate));
    cg_buf_printf(m, "| runs | %zu | %zu |\n", cg_jv_len(cg_jv_get(b, "samples_ns")), cg_jv_len(cg_jv_get(c, "samples_ns")));
    cg_buf_printf(m, "| median | %.0f ns | %.0f ns |\n\n", num(cg_jv_get(b, "median_ns"), NULL),
                  num(cg_jv_get(c, "median_ns"), NULL));
    bool hp;
    double pct = num(cg_jv_get(cmp, "median_delta_percent"), &hp);
    double dns = num(cg_jv_get(cmp, "median_delta_ns"), NULL);
    const cg_jv *ci = cg_jv_get(cmp, "confidence_interval");
    cg_buf_puts(m, "**Median delta:** ");
    if (hp) cg_buf_printf(m, "%+.2f %% ", pct);
    cg_buf_printf(m, "(%+.0f ns)", dns);
    if (ci && ci->type == CG_JOBJ)
        cg_buf_printf(m, "; 95 %% interval [%+.0f, %+.0f] ns", num(cg_jv_get(ci, "lower_delta_ns"), NULL),
                      num(cg_jv_get(ci, "upper_delta_ns"), NULL));
    cg_buf_puts(m, ".\n\n");
    const cg_jv *rs = cg_jv_get(cmp, "reasons");
    if (rs && cg_jv_len(rs)) {
        cg_buf_puts(m, "**Not comparable:**");
        for (size_t i = 0; i < cg_jv_len(rs); i++) {
            const char *code = cg_jv_as_str(cg_jv_get(cg_jv_at(rs, i), "code"));
            const char *msg = cg_jv_as_str(cg_jv_get(cg_jv_at(rs, i), "message"));
            cg_buf_printf(m, "\n- `%s`: %s", code ? code : "?", msg ? msg : "");
        }
        cg_buf_puts(m, "\n\n");
    }
}

static void md_advice(cg_buf *m, const cg_jv *adv) {
    uint64_t k = 0;
    const cg_jv *runs = cg_jv_get(adv, "additional_runs_per_side");
    double target = num(cg_jv_get(adv, "target_effect_percent"), NULL);
    if (runs && cg_jv_as_u64(runs, &k) && k > 0)
        cg_buf_printf(m, "**Run more:** about %llu more runs per side would resolve a %.2f %% effect.\n\n",
                      (unsigned long long)k, target);
    else if (runs && runs->type == CG_JNULL)
        cg_buf_puts(m, "**Run more:** more runs cannot resolve this comparison (see the reasons above).\n\n");
}

static void md_spans(cg_buf *m, const cg_jv *spans) {
    const cg_jv *rows = cg_jv_get(spans, "rows");
    if (!rows || !cg_jv_len(rows)) return;
    cg_buf_puts(m, "#### Largest span/op/device differences\n\n| kind | path | baseline | candidate | delta |\n"
                   "|---|---|---|---|---|\n");
    for (size_t i = 0; i < cg_jv_len(rows) && i < 5; i++) {
        const cg_jv *r = cg_jv_at(rows, i);
        bool hp;
        double pct = num(cg_jv_get(r, "delta_percent"), &hp);
        cg_buf_printf(m, "| %s | `%s` | %.0f ns | %.0f ns | %+.0f ns", cg_jv_as_str(cg_jv_get(r, "kind")),
                      cg_jv_as_str(cg_jv_get(r, "path")), num(cg_jv_get(r, "a_median_ns"), NULL),
                      num(cg_jv_get(r, "b_median_ns"), NULL), num(cg_jv_get(r, "delta_ns"), NULL));
        if (hp) cg_buf_printf(m, " (%+.2f %%)", pct);
        cg_buf_puts(m, " |\n");
    }
    cg_buf_puts(m, "\n");
}

static void md_alerts(cg_buf *m, const cg_jv *alerts) {
    const cg_jv *items = alerts ? cg_jv_get(alerts, "items") : NULL;
    cg_buf_puts(m, "#### Open alerts on this series\n\n");
    if (!items || !cg_jv_len(items)) {
        cg_buf_puts(m, "None.\n\n");
        return;
    }
    for (size_t i = 0; i < cg_jv_len(items); i++) {
        const cg_jv *x = cg_jv_at(items, i);
        const char *bc = cg_jv_as_str(cg_jv_get(x, "before_commit")), *ac = cg_jv_as_str(cg_jv_get(x, "after_commit"));
        cg_buf_printf(m, "- alert %.0f: `%.12s` → `%.12s`, %+.2f %% (%s)\n", num(cg_jv_get(x, "id"), NULL),
                      bc ? bc : "", ac ? ac : "", num(cg_jv_get(x, "relative_change"), NULL) * 100.0,
                      cg_jv_as_str(cg_jv_get(x, "state")));
    }
    cg_buf_puts(m, "\n");
}

static int verdict_exit(const gate *g, const cg_jv *cmp, const char **word) {
    const char *v = cg_jv_as_str(cg_jv_get(cmp, "verdict"));
    double pct = num(cg_jv_get(cmp, "median_delta_percent"), NULL);
    if (v && !strcmp(v, "candidate_slower")) {
        *word = pct > g->fail_above ? "slower" : "slower, within --fail-above";
        return pct > g->fail_above ? 1 : 0;
    }
    if (v && !strcmp(v, "candidate_faster")) return *word = "faster", 0;
    *word = v && !strcmp(v, "inconclusive") ? "inconclusive" : "ineligible";
    return 2;
}

/* ------------------------------------------------------------ main */

static char *dashboard(gate *g) {
    cg_buf q = CG_BUF_INIT;
    q_put(&q, "a", g->baseline);
    q_put(&q, "b", g->candidate);
    size_t sl = strlen(g->server);
    char *s = cg_arena_printf(&g->a, "%.*s/#/compare?%s", (int)(sl && g->server[sl - 1] == '/' ? sl - 1 : sl),
                              g->server, q.data);
    cg_buf_free(&q);
    return s;
}

static int emit(gate *g, const cg_jv *cmp, const cg_jv *adv, const cg_jv *spans, const cg_jv *alerts) {
    const char *word;
    int code = verdict_exit(g, cmp, &word);
    cg_arena *a = &g->a;
    char *dash = dashboard(g);
    cg_buf m = CG_BUF_INIT;
    cg_buf_printf(&m, "### candle-graph gate: **%s**\n\n", word);
    md_stats(g, &m, cmp);
    md_advice(&m, adv);
    md_spans(&m, spans);
    md_alerts(&m, alerts);
    cg_buf_printf(&m, "[Open the comparison in the dashboard](%s)\n", dash);
    int rc = 0;
    if (g->markdown || !g->out) rc = cli_write_bytes(g->markdown, m.data, m.len);
    cg_buf_free(&m);
    if (g->out) {
        const char *cc = !strncmp(g->candidate, "commit:", 7) ? g->candidate + 7 : NULL;
        cg_jv *o = cg_jv_obj(a);
        cg_jv_obj_put(a, o, "comparison", cg_jv_clone(a, cmp));
        cg_jv_obj_put(a, o, "advice", cg_jv_clone(a, adv));
        cg_jv_obj_put(a, o, "baseline_commit",
                      g->baseline_commit[0] ? cg_jv_str(a, g->baseline_commit)
                      : !strncmp(g->baseline, "commit:", 7) ? cg_jv_str(a, g->baseline + 7) : cg_jv_null(a));
        cg_jv_obj_put(a, o, "candidate_commit", cc ? cg_jv_str(a, cc) : cg_jv_null(a));
        cg_jv_obj_put(a, o, "dashboard_url", cg_jv_str(a, dash));
        if (cli_write_json(g->out, o) != 0) rc = 1;
    }
    return rc ? EXIT_SERVER : code;
}

static int run(gate *g) {
    if (g->git) {
        int found = find_baseline(g);
        if (found <= 0) return found < 0 ? EXIT_SERVER : 2;
    }
    cg_buf q = CG_BUF_INIT;
    q_put(&q, "a", g->baseline);
    q_put(&q, "b", g->candidate);
    cg_jv *cmp = get_json(g, "/compare", &q, NULL), *spans = NULL, *adv = NULL, *alerts = NULL;
    char pct[32];
    snprintf(pct, sizeof pct, "%g", g->min_effect);
    if (cmp) spans = get_json(g, "/compare/spans", &q, NULL);
    q_put(&q, "min_effect_pct", pct);
    if (cmp && spans) adv = get_json(g, "/compare/advice", &q, NULL);
    cg_buf_free(&q);
    if (!cmp || !spans || !adv) return EXIT_SERVER;
    const char *wl = cg_jv_as_str(cg_jv_get(cg_jv_get(cmp, "identity"), "workload_id"));
    if (wl) {
        cg_buf qa = CG_BUF_INIT;
        q_put(&qa, "state", "open");
        q_put(&qa, "workload_id", wl);
        alerts = get_json(g, "/alerts", &qa, NULL);
        cg_buf_free(&qa);
        if (!alerts) return EXIT_SERVER;
    }
    return emit(g, cmp, adv, spans, alerts);
}

int cg_cmd_gate(int argc, char **argv) {
    gate g;
    memset(&g, 0, sizeof g);
    cg_arena_init(&g.a, 0);
    int rc = parse(argc, argv, &g) ? run(&g) : EXIT_SERVER;
    cg_arena_free(&g.a);
    return rc;
}
