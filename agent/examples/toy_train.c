/* toy_train.c — demo workload for the capture API (lib/capture/capture.h).
 *
 * Trains a tiny MLP (32 → 64 → 8, ReLU, MSE loss, SGD with momentum) on
 * synthetic data on the CPU. Updates 1..N−1 run uninstrumented (warm-up); the
 * update selected with --step N is captured into a candle-graph/trace/10
 * trace: the measured region with forward / backward / optimizer step spans,
 * every op (with dense input/output bytes), tensors by category, tensor_stats
 * from the real buffers, paired logical memory alloc/free events for every
 * buffer the update allocates, data and call edges, and parameter gradients.
 * A CPU run has no device timing and no physical memory samples, and the
 * capture contract declares exactly that.
 *
 * usage: toy_train [--out PATH] [--step N] [--seed N] [--implementation ID]
 *                  [--pair ID] [--slow] [--production] [--contract] [--fail]
 * Exit status 0 when the trace was written (a --fail run writes a failed
 * capture and still exits 0), 1 on a capture or I/O error, 2 on bad usage. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/capture.h"

#define BATCH 16
#define IN 32
#define HID 64
#define OUT 8
#define LR 0.05f
#define MOMENTUM 0.9f
#define SLOW_REPEAT 24
#define ENTRYPOINT "toy::train::update"
#define DEVICE "cpu"

typedef struct opts {
    const char *out;
    uint64_t step, seed;
    const char *implementation, *pair;
    bool slow, production, contract, fail;
} opts;

typedef struct tensor {
    const char *id;    /* backend identity, e.g. "tensor-w1" */
    const char *label; /* observation label, e.g. "toy/fc1.weight" */
    float *data;
    uint64_t shape[2];
    size_t rank;
    cg_category category;
    bool requires_grad;
} tensor;

typedef struct model {
    tensor w1, b1, w2, b2;     /* parameters */
    tensor vw1, vb1, vw2, vb2; /* momentum buffers (optimizer state) */
} model;

/* ---- capture plumbing: every helper is a no-op when g_s is NULL ---- */

static cg_session *g_s;
static cg_error g_err;

static void die_capture(const char *what) {
    fprintf(stderr, "toy_train: %s: %s\n", what, g_err.msg);
    exit(1);
}

#define TRY(call)                              \
    do {                                       \
        if ((call) != 0) die_capture(#call);   \
    } while (0)

static size_t numel(const tensor *t) {
    size_t n = 1;
    for (size_t i = 0; i < t->rank; i++) n *= (size_t)t->shape[i];
    return n;
}

static uint64_t dense(const tensor *t) { return (uint64_t)numel(t) * sizeof(float); }

static void rec_tensor(cg_span_id span, const tensor *t) {
    if (!g_s) return;
    cg_tensor_record r = {.tensor_id = t->id, .label = t->label, .shape = t->shape,
                          .rank = t->rank, .dtype = "f32", .device = DEVICE,
                          .requires_grad = t->requires_grad, .has_dense_bytes = true,
                          .dense_bytes = dense(t), .category = t->category};
    TRY(cg_session_record_tensor(g_s, span, &r, &g_err));
}

static cg_memory_record mem_rec(const tensor *t, char storage[40], const char *op) {
    snprintf(storage, 40, "storage:%p", (void *)t->data);
    return (cg_memory_record){.storage_id = storage, .tensor_id = t->id, .device = DEVICE,
                              .bytes = dense(t), .dtype = "f32", .category = t->category,
                              .op_name = op, .shape = t->shape, .rank = t->rank};
}

/* Allocates a buffer the update owns; records the alloc and the tensor. */
static void t_alloc(tensor *t, const char *id, const char *label, size_t rows, size_t cols,
                    cg_category cat, cg_span_id span, const char *op) {
    memset(t, 0, sizeof *t);
    t->id = id;
    t->label = label;
    t->shape[0] = rows;
    t->shape[1] = cols;
    t->rank = cols ? 2 : (rows ? 1 : 0);
    t->category = cat;
    size_t n = numel(t);
    t->data = calloc(n ? n : 1, sizeof(float));
    if (!t->data) {
        fprintf(stderr, "toy_train: out of memory\n");
        exit(1);
    }
    if (!g_s) return;
    char storage[40];
    cg_memory_record m = mem_rec(t, storage, op);
    TRY(cg_session_record_memory_alloc(g_s, span, &m, &g_err));
    rec_tensor(span, t);
}

static void t_free(tensor *t, cg_span_id span) {
    if (g_s) {
        char storage[40];
        cg_memory_record m = mem_rec(t, storage, NULL);
        TRY(cg_session_record_memory_free(g_s, span, &m, &g_err));
    }
    free(t->data);
    t->data = NULL;
}

static uint64_t op_begin(void) { return g_s ? cg_session_host_now_ns(g_s) : 0; }

/* Records op `name` (inputs → out) that started at t0, plus its data edges. */
static void op_end(cg_span_id span, const char *name, const tensor *const *in, size_t n_in,
                   const tensor *out, uint64_t t0) {
    if (!g_s) return;
    uint64_t t1 = cg_session_host_now_ns(g_s);
    const char *ids[4];
    uint64_t in_bytes = 0;
    for (size_t i = 0; i < n_in; i++) {
        ids[i] = in[i]->id;
        in_bytes += dense(in[i]);
    }
    cg_op_record r = {.op_name = name, .inputs = ids, .n_inputs = n_in, .output = out->id,
                      .shape = out->shape, .rank = out->rank, .dtype = "f32",
                      .device = DEVICE, .duration_ns = t1 - t0, .timestamp_ns = t0,
                      .has_output_dense_bytes = true, .output_dense_bytes = dense(out),
                      .input_dense_bytes = in_bytes};
    TRY(cg_session_record_op(g_s, span, &r, &g_err));
    for (size_t i = 0; i < n_in; i++)
        if (strcmp(in[i]->id, out->id) != 0)
            TRY(cg_session_record_data_edge(g_s, in[i]->id, out->id, &g_err));
}

static void stats(cg_span_id span, const tensor *t) {
    if (!g_s) return;
    char wire[24];
    cg_span_wire_id(span, wire);
    TRY(cg_session_record_tensor_stats_f32(g_s, wire, t->label, t->shape, t->rank, "f32",
                                           t->data, numel(t), &g_err));
}

/* ---- numerics ---- */

static uint64_t g_rng;

static float frand(void) { /* xorshift64*, uniform in [-1, 1) */
    g_rng ^= g_rng >> 12;
    g_rng ^= g_rng << 25;
    g_rng ^= g_rng >> 27;
    uint64_t r = g_rng * 2685821657736338717ull;
    return (float)((double)(r >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

static void fill(tensor *t, float scale) {
    for (size_t i = 0, n = numel(t); i < n; i++) t->data[i] = frand() * scale;
}

/* C[m×n] = A[m×k] · B[k×n] (+ bias[n] when non-NULL). --slow recomputes the
 * product SLOW_REPEAT times in a cache-hostile loop order. */
static void matmul(float *c, const float *a, const float *b, const float *bias, size_t m,
                   size_t k, size_t n, bool slow) {
    int reps = slow ? SLOW_REPEAT : 1;
    for (int r = 0; r < reps; r++) {
        for (size_t i = 0; i < m; i++)
            for (size_t j = 0; j < n; j++) c[i * n + j] = bias ? bias[j] : 0.0f;
        if (slow) {
            for (size_t j = 0; j < n; j++)
                for (size_t p = 0; p < k; p++)
                    for (size_t i = 0; i < m; i++) c[i * n + j] += a[i * k + p] * b[p * n + j];
        } else {
            for (size_t i = 0; i < m; i++)
                for (size_t p = 0; p < k; p++) {
                    float av = a[i * k + p];
                    for (size_t j = 0; j < n; j++) c[i * n + j] += av * b[p * n + j];
                }
        }
    }
}

/* C[k×n] = Aᵀ · B for A[m×k], B[m×n]. */
static void matmul_tn(float *c, const float *a, const float *b, size_t m, size_t k, size_t n) {
    memset(c, 0, k * n * sizeof *c);
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++)
            for (size_t j = 0; j < n; j++) c[p * n + j] += a[i * k + p] * b[i * n + j];
}

/* C[m×k] = A · Bᵀ for A[m×n], B[k×n]. */
static void matmul_nt(float *c, const float *a, const float *b, size_t m, size_t n, size_t k) {
    for (size_t i = 0; i < m; i++)
        for (size_t p = 0; p < k; p++) {
            float acc = 0.0f;
            for (size_t j = 0; j < n; j++) acc += a[i * n + j] * b[p * n + j];
            c[i * k + p] = acc;
        }
}

static void sum_rows(float *out, const float *a, size_t m, size_t n) {
    memset(out, 0, n * sizeof *out);
    for (size_t i = 0; i < m; i++)
        for (size_t j = 0; j < n; j++) out[j] += a[i * n + j];
}

static double l2(const tensor *t) {
    double s = 0.0;
    for (size_t i = 0, n = numel(t); i < n; i++) s += (double)t->data[i] * t->data[i];
    return sqrt(s);
}

static void param(tensor *t, const char *id, const char *label, size_t r, size_t c,
                  cg_category cat, bool grad) {
    t_alloc(t, id, label, r, c, cat, 0, NULL); /* before any session: not recorded */
    t->requires_grad = grad;
}

static void model_init(model *m) {
    param(&m->w1, "tensor-w1", "toy/fc1.weight", IN, HID, CG_CAT_PARAMETER, true);
    param(&m->b1, "tensor-b1", "toy/fc1.bias", HID, 0, CG_CAT_PARAMETER, true);
    param(&m->w2, "tensor-w2", "toy/fc2.weight", HID, OUT, CG_CAT_PARAMETER, true);
    param(&m->b2, "tensor-b2", "toy/fc2.bias", OUT, 0, CG_CAT_PARAMETER, true);
    fill(&m->w1, 0.25f);
    fill(&m->b1, 0.05f);
    fill(&m->w2, 0.25f);
    fill(&m->b2, 0.05f);
    param(&m->vw1, "tensor-vw1", "toy/fc1.weight.momentum", IN, HID, CG_CAT_OPTIMIZER, false);
    param(&m->vb1, "tensor-vb1", "toy/fc1.bias.momentum", HID, 0, CG_CAT_OPTIMIZER, false);
    param(&m->vw2, "tensor-vw2", "toy/fc2.weight.momentum", HID, OUT, CG_CAT_OPTIMIZER, false);
    param(&m->vb2, "tensor-vb2", "toy/fc2.bias.momentum", OUT, 0, CG_CAT_OPTIMIZER, false);
}

static void model_free(model *m) {
    tensor *all[] = {&m->w1, &m->b1, &m->w2, &m->b2, &m->vw1, &m->vb1, &m->vw2, &m->vb2};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]->data);
}

static cg_span_id begin_step(const char *region, const char *part, cg_step step) {
    if (!g_s) return 0;
    char name[160];
    snprintf(name, sizeof name, "%s/%s", region, part);
    cg_span_id id;
    TRY(cg_session_begin_step_span(g_s, name, step, CG_SPAN_FUNCTION, &id, &g_err));
    return id;
}

static void end_step(cg_span_id measured, cg_span_id id) {
    if (!g_s) return;
    uint64_t d;
    TRY(cg_session_end_span(g_s, id, &g_err));
    TRY(cg_session_span_duration_ns(g_s, id, &d, &g_err));
    TRY(cg_session_record_call_edge(g_s, measured, id, d, &g_err));
}

static void gradient(const char *key, const tensor *g) {
    if (!g_s) return;
    double n = l2(g);
    cg_grad_state st = !isfinite(n) ? CG_GRAD_NON_FINITE : n == 0.0 ? CG_GRAD_ZERO
                                                                   : CG_GRAD_PRESENT;
    TRY(cg_session_record_gradient(g_s, "parameters", key, st,
                                   st == CG_GRAD_NON_FINITE ? NULL : &n, &g_err));
}

static void sgd(cg_span_id span, tensor *p, tensor *v, const tensor *g) {
    uint64_t t0 = op_begin();
    for (size_t i = 0, n = numel(p); i < n; i++) {
        v->data[i] = MOMENTUM * v->data[i] + g->data[i];
        p->data[i] -= LR * v->data[i];
    }
    const tensor *in[] = {p, g, v};
    op_end(span, "sgd_momentum", in, 3, p, t0);
}

/* One training update. When g_s is set the update is instrumented; returns
 * false when --fail stopped it (the session then holds a failed capture). */
static bool update(model *m, uint64_t step, const opts *o) {
    char region[96];
    snprintf(region, sizeof region, "toy/update-%012" PRIu64, step);
    cg_span_id meas = 0, fwd, bwd, opt;
    if (g_s) TRY(cg_session_begin_measurement(g_s, region, &meas, &g_err));

    /* ---- forward ---- */
    fwd = begin_step(region, "forward", CG_STEP_FORWARD);
    rec_tensor(fwd, &m->w1);
    rec_tensor(fwd, &m->b1);
    rec_tensor(fwd, &m->w2);
    rec_tensor(fwd, &m->b2);
    tensor x, y, hpre, h, out, loss;
    t_alloc(&x, "tensor-x", "toy/input", BATCH, IN, CG_CAT_OTHER, fwd, "load_batch");
    t_alloc(&y, "tensor-y", "toy/target", BATCH, OUT, CG_CAT_OTHER, fwd, "load_batch");
    fill(&x, 1.0f);
    for (size_t i = 0; i < BATCH; i++)
        for (size_t j = 0; j < OUT; j++) y.data[i * OUT + j] = 0.5f * x.data[i * IN + j];

    t_alloc(&hpre, "tensor-hpre", "toy/fc1.out", BATCH, HID, CG_CAT_ACTIVATION, fwd, "linear");
    uint64_t t0 = op_begin();
    matmul(hpre.data, x.data, m->w1.data, m->b1.data, BATCH, IN, HID, o->slow);
    op_end(fwd, "linear", (const tensor *[]){&x, &m->w1, &m->b1}, 3, &hpre, t0);

    t_alloc(&h, "tensor-h", "toy/hidden", BATCH, HID, CG_CAT_ACTIVATION, fwd, "relu");
    t0 = op_begin();
    for (size_t i = 0; i < BATCH * HID; i++) h.data[i] = hpre.data[i] > 0.0f ? hpre.data[i] : 0.0f;
    op_end(fwd, "relu", (const tensor *[]){&hpre}, 1, &h, t0);
    stats(fwd, &h);

    t_alloc(&out, "tensor-out", "toy/prediction", BATCH, OUT, CG_CAT_ACTIVATION, fwd, "linear");
    t0 = op_begin();
    matmul(out.data, h.data, m->w2.data, m->b2.data, BATCH, HID, OUT, o->slow);
    op_end(fwd, "linear", (const tensor *[]){&h, &m->w2, &m->b2}, 3, &out, t0);
    stats(fwd, &out);

    t_alloc(&loss, "tensor-loss", "toy/loss", 0, 0, CG_CAT_ACTIVATION, fwd, "mse_loss");
    t0 = op_begin();
    double acc = 0.0;
    for (size_t i = 0; i < BATCH * OUT; i++) {
        double d = (double)out.data[i] - y.data[i];
        acc += d * d;
    }
    loss.data[0] = (float)(acc / (BATCH * OUT));
    op_end(fwd, "mse_loss", (const tensor *[]){&out, &y}, 2, &loss, t0);
    stats(fwd, &loss);
    end_step(meas, fwd);

    /* ---- backward ---- */
    bwd = begin_step(region, "backward", CG_STEP_BACKWARD);
    if (o->fail && g_s) {
        TRY(cg_session_finish_failed(g_s, "toy_train: failure injected with --fail during backward",
                                     &g_err));
        tensor *live[] = {&x, &y, &hpre, &h, &out, &loss};
        for (size_t i = 0; i < sizeof live / sizeof *live; i++) free(live[i]->data);
        return false;
    }
    tensor dout, gw2, gb2, dh, dhpre, gw1, gb1;
    t_alloc(&dout, "tensor-dout", "toy/prediction.grad", BATCH, OUT, CG_CAT_GRADIENT, bwd,
            "mse_loss_backward");
    t0 = op_begin();
    for (size_t i = 0; i < BATCH * OUT; i++)
        dout.data[i] = 2.0f * (out.data[i] - y.data[i]) / (float)(BATCH * OUT);
    op_end(bwd, "mse_loss_backward", (const tensor *[]){&out, &y}, 2, &dout, t0);
    t_free(&loss, bwd);
    t_free(&out, bwd);
    t_free(&y, bwd);

    t_alloc(&gw2, "tensor-gw2", "toy/fc2.weight.grad", HID, OUT, CG_CAT_GRADIENT, bwd, "matmul_tn");
    t0 = op_begin();
    matmul_tn(gw2.data, h.data, dout.data, BATCH, HID, OUT);
    op_end(bwd, "matmul_tn", (const tensor *[]){&h, &dout}, 2, &gw2, t0);
    t_alloc(&gb2, "tensor-gb2", "toy/fc2.bias.grad", OUT, 0, CG_CAT_GRADIENT, bwd, "sum_rows");
    t0 = op_begin();
    sum_rows(gb2.data, dout.data, BATCH, OUT);
    op_end(bwd, "sum_rows", (const tensor *[]){&dout}, 1, &gb2, t0);

    t_alloc(&dh, "tensor-dh", "toy/hidden.grad", BATCH, HID, CG_CAT_GRADIENT, bwd, "matmul_nt");
    t0 = op_begin();
    matmul_nt(dh.data, dout.data, m->w2.data, BATCH, OUT, HID);
    op_end(bwd, "matmul_nt", (const tensor *[]){&dout, &m->w2}, 2, &dh, t0);
    t_free(&dout, bwd);
    t_free(&h, bwd);

    t_alloc(&dhpre, "tensor-dhpre", "toy/fc1.out.grad", BATCH, HID, CG_CAT_GRADIENT, bwd,
            "relu_backward");
    t0 = op_begin();
    for (size_t i = 0; i < BATCH * HID; i++) dhpre.data[i] = hpre.data[i] > 0.0f ? dh.data[i] : 0.0f;
    op_end(bwd, "relu_backward", (const tensor *[]){&dh, &hpre}, 2, &dhpre, t0);
    t_free(&dh, bwd);
    t_free(&hpre, bwd);

    t_alloc(&gw1, "tensor-gw1", "toy/fc1.weight.grad", IN, HID, CG_CAT_GRADIENT, bwd, "matmul_tn");
    t0 = op_begin();
    matmul_tn(gw1.data, x.data, dhpre.data, BATCH, IN, HID);
    op_end(bwd, "matmul_tn", (const tensor *[]){&x, &dhpre}, 2, &gw1, t0);
    t_alloc(&gb1, "tensor-gb1", "toy/fc1.bias.grad", HID, 0, CG_CAT_GRADIENT, bwd, "sum_rows");
    t0 = op_begin();
    sum_rows(gb1.data, dhpre.data, BATCH, HID);
    op_end(bwd, "sum_rows", (const tensor *[]){&dhpre}, 1, &gb1, t0);
    t_free(&dhpre, bwd);
    t_free(&x, bwd);

    stats(bwd, &gw1);
    stats(bwd, &gw2);
    gradient("fc1.weight", &gw1);
    gradient("fc1.bias", &gb1);
    gradient("fc2.weight", &gw2);
    gradient("fc2.bias", &gb2);
    end_step(meas, bwd);

    /* ---- optimizer ---- */
    opt = begin_step(region, "optimizer", CG_STEP_OPTIMIZER);
    rec_tensor(opt, &m->vw1);
    rec_tensor(opt, &m->vb1);
    rec_tensor(opt, &m->vw2);
    rec_tensor(opt, &m->vb2);
    sgd(opt, &m->w1, &m->vw1, &gw1);
    sgd(opt, &m->b1, &m->vb1, &gb1);
    sgd(opt, &m->w2, &m->vw2, &gw2);
    sgd(opt, &m->b2, &m->vb2, &gb2);
    stats(opt, &m->w1);
    t_free(&gw1, opt);
    t_free(&gb1, opt);
    t_free(&gw2, opt);
    t_free(&gb2, opt);
    end_step(meas, opt);

    if (g_s) TRY(cg_session_end_span(g_s, meas, &g_err));
    return true;
}

/* ---- run description ---- */

static const char *const STEP_PARTS[] = {"forward", "backward", "optimizer"};

static cg_profile_run *make_run(const opts *o, char labels[3][128]) {
    cg_profile_run *run = cg_profile_run_training(ENTRYPOINT, o->step, DEVICE);
    if (!run) return NULL;
    const char *lp[3];
    for (int i = 0; i < 3; i++) {
        snprintf(labels[i], 128, "toy/update-%012" PRIu64 "/%s", o->step, STEP_PARTS[i]);
        lp[i] = labels[i];
    }
    cg_expected_gradient expected[] = {
        {"parameters", "fc1.weight", "fc1"},
        {"parameters", "fc1.bias", "fc1"},
        {"parameters", "fc2.weight", "fc2"},
        {"parameters", "fc2.bias", "fc2"},
    };
    cg_family_contract families[] = {{"fc1", CG_FAM_ACTIVE, 2}, {"fc2", CG_FAM_ACTIVE, 2}};
    cg_gradient_contract gc = {.expected = expected, .n_expected = 4,
                               .families = families, .n_families = 2};
    char digest[72];
    cg_gradient_manifest_digest(expected, 4, digest);
    gc.manifest_sha256 = digest;
    cg_capture_contract c = {
        .measurement_scope = o->production ? CG_SCOPE_PRODUCTION_EQUIVALENT : CG_SCOPE_PROFILED_WORK,
        .operations = CG_COV_COMPLETE,
        .tensors = CG_COV_COMPLETE,
        .gradients = o->contract ? CG_COV_COMPLETE : CG_COV_PARTIAL,
        .gradient_contract = o->contract ? &gc : NULL,
        .logical_memory = CG_COV_COMPLETE,
        .physical_memory = CG_COV_NONE, /* CPU: no device memory to sample */
        .device_timing = CG_COV_NONE,   /* CPU: no device clock */
        .required_semantic_labels = {lp, 3},
        .cpu_only_semantic_labels = {lp, 3}, /* nothing here runs on a GPU */
    };
    char seed[32], seed_policy[48];
    snprintf(seed, sizeof seed, "%" PRIu64, o->seed);
    snprintf(seed_policy, sizeof seed_policy, "fixed-%" PRIu64, o->seed);
    int rc = cg_profile_run_capture_contract(run, &c);
    rc |= cg_profile_run_tag(run, "example", "toy_train");
    rc |= cg_profile_run_tag(run, "seed", seed);
    rc |= cg_profile_run_tag(run, "variant", o->slow ? "slow" : "fast");
    rc |= cg_profile_run_tag(run, "physical_batch", "16");
    if (o->production || o->implementation || o->pair) {
        cg_comparison_identity id = {
            .implementation_id = o->implementation ? o->implementation
                                                   : (o->slow ? "toy-slow" : "toy-fast"),
            .workload_id = "toy-train",
            .model_id = "toy-mlp-32x64x8",
            .config_id = "sgd-momentum-lr0.05",
            .data_id = "synthetic-uniform-b16",
            .seed_policy = seed_policy,
            .physical_batch = BATCH,
            .accumulation_steps = 1,
            .precision = "f32",
            .device_state = "shared-cpu",
            .pair_id = o->pair,
        };
        rc |= cg_profile_run_comparison_identity(run, &id);
    }
    if (rc) {
        cg_profile_run_free(run);
        return NULL;
    }
    return run;
}

static int usage(const char *why) {
    if (why) fprintf(stderr, "toy_train: %s\n", why);
    fprintf(stderr,
            "usage: toy_train [--out PATH] [--step N] [--seed N] [--implementation ID]\n"
            "                 [--pair ID] [--slow] [--production] [--contract] [--fail]\n"
            "Trains a tiny MLP on the CPU and captures update N into a trace/10 file.\n"
            "  --out PATH           trace file (default toy_train.trace.jsonl)\n"
            "  --step N             one-based update to capture (default 3)\n"
            "  --seed N             data/weight seed (default 42)\n"
            "  --implementation ID  comparison identity implementation_id\n"
            "  --pair ID            comparison identity pair_id\n"
            "  --slow               do more work per matmul (a slower implementation)\n"
            "  --production         measurement_scope production_equivalent + identity\n"
            "  --contract           declare complete gradients with an exact gradient contract\n"
            "  --fail               abort the captured update: write a failed capture\n");
    return 2;
}

static bool parse_u64(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end) return false;
    *out = v;
    return true;
}

int main(int argc, char **argv) {
    opts o = {.out = "toy_train.trace.jsonl", .step = 3, .seed = 42};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--out") && v) o.out = argv[++i];
        else if (!strcmp(a, "--step") && v) {
            if (!parse_u64(argv[++i], &o.step)) return usage("--step needs an integer");
        } else if (!strcmp(a, "--seed") && v) {
            if (!parse_u64(argv[++i], &o.seed)) return usage("--seed needs an integer");
        } else if (!strcmp(a, "--implementation") && v) o.implementation = argv[++i];
        else if (!strcmp(a, "--pair") && v) o.pair = argv[++i];
        else if (!strcmp(a, "--slow")) o.slow = true;
        else if (!strcmp(a, "--production")) o.production = true;
        else if (!strcmp(a, "--contract")) o.contract = true;
        else if (!strcmp(a, "--fail")) o.fail = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(NULL), 0;
        else {
            char why[256];
            snprintf(why, sizeof why, "unknown or incomplete argument %s", a);
            return usage(why);
        }
    }
    cg_capture_selector sel;
    if (cg_capture_selector_new(o.step, &sel, &g_err)) {
        fprintf(stderr, "toy_train: --step: %s\n", g_err.msg);
        return 2;
    }
    g_rng = o.seed * 0x9E3779B97F4A7C15ull + 1;
    model m;
    model_init(&m);
    int status = 0;
    for (uint64_t i = 1; i <= o.step; i++) {
        if (!cg_capture_selector_is_selected(&sel, i)) {
            update(&m, i, &o);
            continue;
        }
        char labels[3][128];
        cg_profile_run *run = make_run(&o, labels);
        if (!run) {
            fprintf(stderr, "toy_train: cannot describe the run\n");
            status = 1;
            break;
        }
        g_s = cg_session_open(o.out, run, &g_err);
        cg_profile_run_free(run);
        if (!g_s) die_capture("cg_session_open");
        bool ok = update(&m, i, &o);
        if (ok) TRY(cg_session_finish(g_s, &g_err));
        cg_session_free(g_s);
        g_s = NULL;
        fprintf(stderr, "toy_train: captured update %" PRIu64 " (%s) into %s\n", i,
                ok ? "complete" : "failed capture", o.out);
    }
    model_free(&m);
    return status;
}
