/* session.c — TraceSession: validated, thread-safe JSONL trace writing.
 *
 * Every public call validates its arguments first, then takes the session
 * mutex, checks the session state and the span table, and only then renders
 * its record(s) with the trace event builders (one compact JSON line each)
 * into the pending buffer. The buffer goes to the file when it grows past
 * FLUSH_BYTES, on cg_session_flush and at finish. A refused call never
 * touches the buffer. */
#include "capture/capture.h"

#include "base/alloc.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"

#define FLUSH_BYTES (64u * 1024u)

typedef struct span_info {
    cg_span_id parent;   /* 0 for the root */
    uint64_t start_ns;
    uint64_t duration_ns;
    uint64_t thread;     /* serial of the opening thread; 0 for completed spans */
    bool closed;
} span_info;

typedef struct thread_stack {
    uint64_t thread;
    cg_span_id *ids;
    size_t n, cap;
} thread_stack;

struct cg_session {
    pthread_mutex_t mu;
    char *path;
    int fd;
    uint64_t start_mono_ns;
    cg_buf out;
    cg_arena scratch;
    bool finished;
    bool write_failed;
    char write_error[512];
    span_info *spans; /* spans[id-1] */
    size_t n_spans, cap_spans;
    thread_stack *stacks; /* only threads with at least one open span */
    size_t n_stacks, cap_stacks;
    uint64_t n_gradients;
    cg_span_id measured; /* 0 = none yet */
};

/* ---- per-thread identity: a serial that is never reused ---- */

static atomic_uint_fast64_t g_thread_serial;
static _Thread_local uint64_t tl_thread_serial;

static uint64_t thread_serial(void) {
    if (!tl_thread_serial) tl_thread_serial = (uint64_t)atomic_fetch_add(&g_thread_serial, 1) + 1;
    return tl_thread_serial;
}

/* ---- small helpers ---- */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(const cg_session *s) {
    uint64_t m = mono_ns();
    return m > s->start_mono_ns ? m - s->start_mono_ns : 0;
}

void cg_span_wire_id(cg_span_id id, char out[24]) {
    snprintf(out, 24, "s%llu", (unsigned long long)id);
}

static const char *wire(cg_arena *a, cg_span_id id) {
    return cg_arena_printf(a, "s%llu", (unsigned long long)id);
}

static bool nonempty(const char *s) { return s && s[0] != '\0'; }
static bool nonblank(const char *s) { return s && !cg_str_blank(s); }

static int shape_copy(cg_arena *a, const uint64_t *dims, size_t rank, cg_shape *out,
                      cg_error *err) {
    out->n = 0;
    out->dims = NULL;
    if (rank == 0) return 0;
    if (!dims) return cg_err_set(err, CG_EINVAL, "shape has rank %zu but no dimensions", rank);
    if (rank > UINT32_MAX) return cg_err_set(err, CG_EINVAL, "shape has rank %zu, over the model's limit", rank);
    out->n = (uint32_t)rank;
    out->dims = cg_arena_alloc(a, rank * sizeof *out->dims);
    memcpy(out->dims, dims, rank * sizeof *out->dims);
    return 0;
}

static bool category_valid(cg_category c) { return (unsigned)c < CG_CAT_COUNT; }

/* ---- writer ---- */

static void fail_writer(cg_session *s, const char *what) {
    s->write_failed = true;
    snprintf(s->write_error, sizeof s->write_error, "%s trace file %s: %s", what, s->path,
             strerror(errno));
}

/* Writes the pending buffer. On failure the session fails for good. */
static int flush_locked(cg_session *s, cg_error *err) {
    size_t off = 0;
    while (off < s->out.len) {
        ssize_t w = write(s->fd, s->out.data + off, s->out.len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            fail_writer(s, "write");
            cg_buf_reset(&s->out);
            return cg_err_set(err, CG_EIO, "%s", s->write_error);
        }
        off += (size_t)w;
    }
    cg_buf_reset(&s->out);
    return 0;
}

/* Appends one record line (rendered from the scratch arena, then reset). */
static void put_event(cg_session *s, const cg_jv *v) {
    cg_json_write(&s->out, v, false);
    cg_buf_putc(&s->out, '\n');
}

static int end_call(cg_session *s, cg_error *err) {
    cg_arena_reset(&s->scratch);
    if (s->out.len >= FLUSH_BYTES) return flush_locked(s, err);
    return 0;
}

/* Locks and checks that the session accepts records. On failure returns -1
 * with the mutex released. */
static int lock_open(cg_session *s, cg_error *err) {
    pthread_mutex_lock(&s->mu);
    if (s->write_failed) {
        int rc = cg_err_set(err, CG_EIO, "trace writer failed earlier: %s", s->write_error);
        pthread_mutex_unlock(&s->mu);
        return rc;
    }
    if (s->finished) {
        pthread_mutex_unlock(&s->mu);
        return cg_err_set(err, CG_ESTATE, "trace session is already finished");
    }
    return 0;
}

static int unlock_ret(cg_session *s, int rc) {
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* ---- span table and per-thread stacks (mutex held) ---- */

static span_info *span_get(cg_session *s, cg_span_id id) {
    return (id >= 1 && id <= s->n_spans) ? &s->spans[id - 1] : NULL;
}

static cg_span_id span_add(cg_session *s, span_info info) {
    if (s->n_spans == s->cap_spans) {
        s->cap_spans = s->cap_spans ? s->cap_spans * 2 : 64;
        s->spans = cg_xrealloc(s->spans, s->cap_spans, sizeof *s->spans);
    }
    s->spans[s->n_spans++] = info;
    return (cg_span_id)s->n_spans;
}

static thread_stack *stack_find(cg_session *s, uint64_t thread) {
    for (size_t i = 0; i < s->n_stacks; i++)
        if (s->stacks[i].thread == thread) return &s->stacks[i];
    return NULL;
}

static void stack_push(cg_session *s, uint64_t thread, cg_span_id id) {
    thread_stack *t = stack_find(s, thread);
    if (!t) {
        if (s->n_stacks == s->cap_stacks) {
            s->cap_stacks = s->cap_stacks ? s->cap_stacks * 2 : 8;
            s->stacks = cg_xrealloc(s->stacks, s->cap_stacks, sizeof *s->stacks);
        }
        t = &s->stacks[s->n_stacks++];
        memset(t, 0, sizeof *t);
        t->thread = thread;
    }
    if (t->n == t->cap) t->ids = cg_xgrow(t->ids, &t->cap, t->n + 1, sizeof *t->ids);
    t->ids[t->n++] = id;
}

/* Pops the top of t; drops the entry when it becomes empty. */
static void stack_pop(cg_session *s, thread_stack *t) {
    if (--t->n > 0) return;
    cg_free(t->ids);
    size_t i = (size_t)(t - s->stacks);
    s->stacks[i] = s->stacks[--s->n_stacks];
}

/* ---- open / free ---- */

static void utc_timestamp(char out[64], uint64_t *unix_ns) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    *unix_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    struct tm tm;
    time_t secs = ts.tv_sec;
    gmtime_r(&secs, &tm);
    snprintf(out, 64, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (long)(ts.tv_nsec / 1000000));
}

cg_session *cg_session_open(const char *path, const cg_profile_run *run, cg_error *err) {
    if (!nonempty(path)) {
        cg_err_set(err, CG_EINVAL, "trace path must not be empty");
        return NULL;
    }
    const cg_run_meta *pm = cg_profile_run_meta(run);
    if (!pm) {
        cg_err_set(err, CG_EINVAL, "profile run is NULL");
        return NULL;
    }
    if (pm->capture_step == 0) {
        cg_err_set(err, CG_EINVAL, "capture_step must be one-based (got 0)");
        return NULL;
    }
    if (cg_capture_contract_validate(&pm->contract, err)) {
        cg_err_context(err, "invalid capture contract");
        return NULL;
    }
    cg_run_meta meta = *pm;
    char stamp[64];
    uint64_t unix_ns;
    utc_timestamp(stamp, &unix_ns);
    char run_id[64];
    snprintf(run_id, sizeof run_id, "run-%ld-%llu", (long)getpid(), (unsigned long long)unix_ns);
    if (!meta.run_id) meta.run_id = run_id;
    meta.timestamp = stamp;
    if (cg_run_meta_validate(&meta, err)) {
        cg_err_context(err, "invalid run metadata");
        return NULL;
    }

    char parent[4096];
    cg_path_parent(path, parent, sizeof parent);
    if (cg_mkdir_p(parent, err)) {
        cg_err_context(err, "create trace directory %s", parent);
        return NULL;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        cg_err_set(err, CG_EIO, "create trace file %s: %s", path, strerror(errno));
        return NULL;
    }

    cg_session *s = cg_try_zalloc(1, sizeof *s);
    char *spath = cg_try_strndup(path, strlen(path));
    if (!s || !spath) {
        cg_free(s);
        cg_free(spath);
        close(fd);
        cg_err_set(err, CG_ENOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&s->mu, NULL);
    s->fd = fd;
    s->path = spath;
    cg_arena_init(&s->scratch, 16384);
    s->start_mono_ns = mono_ns();

    put_event(s, cg_event_meta_json(&s->scratch, CG_TRACE_SCHEMA, &meta));
    cg_span_id root = span_add(s, (span_info){.parent = 0, .start_ns = 0});
    cg_span root_rec = {.id = wire(&s->scratch, root), .name = meta.entrypoint,
                        .kind = CG_SPAN_FUNCTION, .start_ns = 0};
    put_event(s, cg_event_span_start_json(&s->scratch, &root_rec));
    cg_arena_reset(&s->scratch);
    if (flush_locked(s, err)) {
        cg_session_free(s);
        return NULL;
    }
    return s;
}

void cg_session_free(cg_session *s) {
    if (!s) return;
    if (s->fd >= 0) {
        if (!s->write_failed) flush_locked(s, NULL);
        close(s->fd);
    }
    for (size_t i = 0; i < s->n_stacks; i++) cg_free(s->stacks[i].ids);
    cg_free(s->stacks);
    cg_free(s->spans);
    cg_buf_free(&s->out);
    cg_arena_free(&s->scratch);
    pthread_mutex_destroy(&s->mu);
    cg_free(s->path);
    cg_free(s);
}

const char *cg_session_path(const cg_session *s) { return s ? s->path : NULL; }

uint64_t cg_session_host_now_ns(const cg_session *s) { return s ? now_ns(s) : 0; }

int cg_session_host_timestamp_ns(const cg_session *s, const struct timespec *monotonic,
                                 uint64_t *out_ns, cg_error *err) {
    if (!s || !monotonic || !out_ns) return cg_err_set(err, CG_EINVAL, "NULL argument");
    uint64_t t = (uint64_t)monotonic->tv_sec * 1000000000u + (uint64_t)monotonic->tv_nsec;
    if (monotonic->tv_sec < 0 || t < s->start_mono_ns)
        return cg_err_set(err, CG_EINVAL, "host instant precedes the trace session start");
    *out_ns = t - s->start_mono_ns;
    return 0;
}

/* ---- spans ---- */

static int begin_common(cg_session *s, const char *name, cg_span_kind kind, bool measured,
                        cg_step step, cg_span_id *out, cg_error *err) {
    if (!s || !out) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonblank(name)) return cg_err_set(err, CG_EINVAL, "span name must not be blank");
    if ((unsigned)kind > CG_SPAN_MODULE)
        return cg_err_set(err, CG_EINVAL, "invalid span kind %d", (int)kind);
    if (lock_open(s, err)) return -1;
    if (measured && s->measured)
        return unlock_ret(s, cg_err_set(err, CG_ESTATE,
                                        "the session already has a measured region (s%llu)",
                                        (unsigned long long)s->measured));
    uint64_t thread = thread_serial();
    thread_stack *t = stack_find(s, thread);
    cg_span_id parent = t ? t->ids[t->n - 1] : CG_SPAN_ROOT;
    uint64_t start = now_ns(s);
    cg_span_id id = span_add(s, (span_info){.parent = parent, .start_ns = start, .thread = thread});
    stack_push(s, thread, id);
    if (measured) s->measured = id;
    cg_span rec = {.id = wire(&s->scratch, id), .parent_id = wire(&s->scratch, parent),
                   .name = name, .kind = kind, .measured = measured, .start_ns = start,
                   .step = step};
    put_event(s, cg_event_span_start_json(&s->scratch, &rec));
    *out = id;
    return unlock_ret(s, end_call(s, err));
}

int cg_session_begin_span(cg_session *s, const char *name, cg_span_kind kind, cg_span_id *out,
                          cg_error *err) {
    return begin_common(s, name, kind, false, CG_STEP_NONE, out, err);
}

int cg_session_begin_measurement(cg_session *s, const char *name, cg_span_id *out,
                                 cg_error *err) {
    return begin_common(s, name, CG_SPAN_FUNCTION, true, CG_STEP_NONE, out, err);
}

int cg_session_begin_step_span(cg_session *s, const char *name, cg_step step, cg_span_kind kind,
                               cg_span_id *out, cg_error *err) {
    if (step != CG_STEP_FORWARD && step != CG_STEP_BACKWARD && step != CG_STEP_OPTIMIZER)
        return cg_err_set(err, CG_EINVAL, "step span needs forward, backward or optimizer");
    return begin_common(s, name, kind, false, step, out, err);
}

int cg_session_end_span(cg_session *s, cg_span_id id, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (lock_open(s, err)) return -1;
    span_info *sp = span_get(s, id);
    if (!sp)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL, "unknown span s%llu",
                                        (unsigned long long)id));
    if (id == CG_SPAN_ROOT)
        return unlock_ret(s, cg_err_set(err, CG_ESTATE,
                                        "the root span s1 is closed by finish, not end_span"));
    if (sp->closed)
        return unlock_ret(s, cg_err_set(err, CG_ESTATE, "span s%llu is already closed",
                                        (unsigned long long)id));
    uint64_t thread = thread_serial();
    if (sp->thread != thread)
        return unlock_ret(s, cg_err_set(err, CG_ESTATE,
                                        "span s%llu was opened on another thread",
                                        (unsigned long long)id));
    thread_stack *t = stack_find(s, thread);
    cg_span_id top = t ? t->ids[t->n - 1] : 0;
    if (top != id)
        return unlock_ret(s, cg_err_set(err, CG_ESTATE,
                                        "span s%llu closed out of order: the innermost open span "
                                        "on this thread is s%llu",
                                        (unsigned long long)id, (unsigned long long)top));
    uint64_t now = now_ns(s);
    sp->duration_ns = now - sp->start_ns;
    sp->closed = true;
    stack_pop(s, t);
    cg_span rec = {.id = wire(&s->scratch, id), .closed = true, .duration_ns = sp->duration_ns};
    put_event(s, cg_event_span_end_json(&s->scratch, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_completed_host_span(cg_session *s, const char *name, cg_span_kind kind,
                                          uint64_t start_ns, uint64_t duration_ns,
                                          cg_span_id *out, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonblank(name)) return cg_err_set(err, CG_EINVAL, "span name must not be blank");
    if ((unsigned)kind > CG_SPAN_MODULE)
        return cg_err_set(err, CG_EINVAL, "invalid span kind %d", (int)kind);
    if (duration_ns == 0)
        return cg_err_set(err, CG_EINVAL, "completed host span duration must be positive");
    if (start_ns > UINT64_MAX - duration_ns)
        return cg_err_set(err, CG_EINVAL, "completed host span end overflows u64");
    if (lock_open(s, err)) return -1;
    uint64_t now = now_ns(s);
    if (start_ns + duration_ns > now)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "completed host span ends at %llu ns, after the current "
                                        "session time %llu ns",
                                        (unsigned long long)(start_ns + duration_ns),
                                        (unsigned long long)now));
    cg_span_id id = span_add(s, (span_info){.parent = CG_SPAN_ROOT, .start_ns = start_ns,
                                            .duration_ns = duration_ns, .closed = true});
    cg_span rec = {.id = wire(&s->scratch, id), .parent_id = wire(&s->scratch, CG_SPAN_ROOT),
                   .name = name, .kind = kind, .start_ns = start_ns, .closed = true,
                   .duration_ns = duration_ns};
    put_event(s, cg_event_span_start_json(&s->scratch, &rec));
    put_event(s, cg_event_span_end_json(&s->scratch, &rec));
    if (out) *out = id;
    return unlock_ret(s, end_call(s, err));
}

cg_span_id cg_session_current_span(cg_session *s) {
    if (!s) return 0;
    pthread_mutex_lock(&s->mu);
    cg_span_id id = 0;
    if (!s->finished) {
        thread_stack *t = stack_find(s, thread_serial());
        id = t ? t->ids[t->n - 1] : CG_SPAN_ROOT;
    }
    pthread_mutex_unlock(&s->mu);
    return id;
}

int cg_session_span_duration_ns(cg_session *s, cg_span_id id, uint64_t *out, cg_error *err) {
    if (!s || !out) return cg_err_set(err, CG_EINVAL, "NULL argument");
    pthread_mutex_lock(&s->mu);
    span_info *sp = span_get(s, id);
    int rc = 0;
    if (!sp) rc = cg_err_set(err, CG_EINVAL, "unknown span s%llu", (unsigned long long)id);
    else if (!sp->closed)
        rc = cg_err_set(err, CG_ESTATE, "span s%llu is still open", (unsigned long long)id);
    else *out = sp->duration_ns;
    return unlock_ret(s, rc);
}

/* ---- evidence ---- */

/* With the mutex held: span must exist. */
static int need_span(cg_session *s, cg_span_id span, cg_error *err) {
    if (span_get(s, span)) return 0;
    return cg_err_set(err, CG_EINVAL, "unknown span s%llu", (unsigned long long)span);
}

int cg_session_record_op(cg_session *s, cg_span_id span, const cg_op_record *op, cg_error *err) {
    if (!s || !op) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonblank(op->op_name)) return cg_err_set(err, CG_EINVAL, "op name must not be blank");
    if (!nonempty(op->dtype) || !nonempty(op->device))
        return cg_err_set(err, CG_EINVAL, "op %s needs a dtype and a device", op->op_name);
    if (op->n_inputs && !op->inputs)
        return cg_err_set(err, CG_EINVAL, "op %s has %zu inputs but no input list", op->op_name,
                          op->n_inputs);
    for (size_t i = 0; i < op->n_inputs; i++)
        if (!nonempty(op->inputs[i]))
            return cg_err_set(err, CG_EINVAL, "op %s input %zu is an empty tensor id",
                              op->op_name, i);
    if (op->output && !nonempty(op->output))
        return cg_err_set(err, CG_EINVAL, "op %s output is an empty tensor id", op->op_name);
    if (op->rank && !op->shape)
        return cg_err_set(err, CG_EINVAL, "op %s shape has rank %zu but no dimensions",
                          op->op_name, op->rank);
    if (op->timestamp_ns > UINT64_MAX - op->duration_ns)
        return cg_err_set(err, CG_EINVAL, "op %s end overflows u64", op->op_name);
    if (lock_open(s, err)) return -1;
    if (need_span(s, span, err)) return unlock_ret(s, -1);
    uint64_t now = now_ns(s);
    uint64_t ts = op->timestamp_ns;
    if (ts == 0) ts = now > op->duration_ns ? now - op->duration_ns : 0;
    const span_info *sp = span_get(s, span);
    uint64_t end = ts + op->duration_ns;
    if (end > now)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "op %s ends at %llu ns, after the current session time "
                                        "%llu ns",
                                        op->op_name, (unsigned long long)end,
                                        (unsigned long long)now));
    if (ts < sp->start_ns || (sp->closed && end > sp->start_ns + sp->duration_ns))
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "op %s [%llu, %llu] lies outside span s%llu",
                                        op->op_name, (unsigned long long)ts,
                                        (unsigned long long)end, (unsigned long long)span));
    cg_arena *a = &s->scratch;
    cg_op rec = {.span_id = wire(a, span), .op_name = op->op_name, .output = op->output,
                 .dtype = op->dtype, .device = op->device, .duration_ns = op->duration_ns,
                 .timestamp_ns = ts, .has_output_dense_bytes = op->has_output_dense_bytes,
                 .output_dense_bytes = op->output_dense_bytes,
                 .input_dense_bytes = op->input_dense_bytes};
    rec.inputs.n = op->n_inputs;
    rec.inputs.items = op->n_inputs ? (const char **)cg_arena_alloc(a, op->n_inputs * sizeof(char *))
                                    : NULL;
    for (size_t i = 0; i < op->n_inputs; i++) rec.inputs.items[i] = op->inputs[i];
    shape_copy(a, op->shape, op->rank, &rec.shape, NULL);
    put_event(s, cg_event_op_json(a, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_tensor(cg_session *s, cg_span_id span, const cg_tensor_record *t,
                             cg_error *err) {
    if (!s || !t) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonempty(t->tensor_id)) return cg_err_set(err, CG_EINVAL, "tensor id must not be empty");
    if (t->label && !nonblank(t->label))
        return cg_err_set(err, CG_EINVAL, "tensor %s label must not be blank", t->tensor_id);
    if (!nonempty(t->dtype) || !nonempty(t->device))
        return cg_err_set(err, CG_EINVAL, "tensor %s needs a dtype and a device", t->tensor_id);
    if (!category_valid(t->category))
        return cg_err_set(err, CG_EINVAL, "tensor %s has an invalid category", t->tensor_id);
    if (t->rank && !t->shape)
        return cg_err_set(err, CG_EINVAL, "tensor %s shape has rank %zu but no dimensions",
                          t->tensor_id, t->rank);
    if (lock_open(s, err)) return -1;
    if (need_span(s, span, err)) return unlock_ret(s, -1);
    cg_arena *a = &s->scratch;
    cg_tensor rec = {.span_id = wire(a, span), .tensor_id = t->tensor_id, .label = t->label,
                     .dtype = t->dtype, .device = t->device, .requires_grad = t->requires_grad,
                     .has_dense_bytes = t->has_dense_bytes, .dense_bytes = t->dense_bytes,
                     .category = t->category};
    shape_copy(a, t->shape, t->rank, &rec.shape, NULL);
    put_event(s, cg_event_tensor_json(a, &rec));
    return unlock_ret(s, end_call(s, err));
}

static int record_memory(cg_session *s, cg_span_id span, const cg_memory_record *m, bool is_free,
                         cg_error *err) {
    const char *what = is_free ? "memory free" : "memory alloc";
    if (!s || !m) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonempty(m->storage_id) || !nonempty(m->tensor_id))
        return cg_err_set(err, CG_EINVAL, "%s needs a storage id and a tensor id", what);
    if (!nonempty(m->device) || !nonempty(m->dtype))
        return cg_err_set(err, CG_EINVAL, "%s of %s needs a device and a dtype", what,
                          m->storage_id);
    if (m->op_name && !nonblank(m->op_name))
        return cg_err_set(err, CG_EINVAL, "%s of %s: op name must not be blank", what,
                          m->storage_id);
    if (!category_valid(m->category))
        return cg_err_set(err, CG_EINVAL, "%s of %s has an invalid category", what,
                          m->storage_id);
    if (m->rank && !m->shape)
        return cg_err_set(err, CG_EINVAL, "%s of %s: shape has rank %zu but no dimensions",
                          what, m->storage_id, m->rank);
    if (lock_open(s, err)) return -1;
    if (need_span(s, span, err)) return unlock_ret(s, -1);
    uint64_t now = now_ns(s);
    uint64_t ts = m->has_timestamp ? m->timestamp_ns : now;
    if (ts > now)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "%s of %s at %llu ns is after the current session time "
                                        "%llu ns",
                                        what, m->storage_id, (unsigned long long)ts,
                                        (unsigned long long)now));
    cg_arena *a = &s->scratch;
    cg_memory rec = {.timestamp_ns = ts, .storage_id = m->storage_id, .tensor_id = m->tensor_id,
                     .span_id = wire(a, span), .op_name = m->op_name, .device = m->device,
                     .bytes = m->bytes, .is_free = is_free, .dtype = m->dtype,
                     .category = m->category};
    shape_copy(a, m->shape, m->rank, &rec.shape, NULL);
    put_event(s, cg_event_memory_json(a, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_memory_alloc(cg_session *s, cg_span_id span, const cg_memory_record *m,
                                   cg_error *err) {
    return record_memory(s, span, m, false, err);
}

int cg_session_record_memory_free(cg_session *s, cg_span_id span, const cg_memory_record *m,
                                  cg_error *err) {
    return record_memory(s, span, m, true, err);
}

int cg_session_record_device_memory(cg_session *s, const cg_device_memory_record *m,
                                    cg_error *err) {
    if (!s || !m) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonempty(m->device))
        return cg_err_set(err, CG_EINVAL, "device memory sample needs a device");
    if (!m->has_used && !m->has_free && !m->has_reserved && !m->has_capacity)
        return cg_err_set(err, CG_EINVAL,
                          "device memory sample for %s needs at least one of used, free, "
                          "reserved or capacity bytes",
                          m->device);
    if (lock_open(s, err)) return -1;
    uint64_t now = now_ns(s);
    uint64_t ts = m->has_timestamp ? m->timestamp_ns : now;
    if (ts > now)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "device memory sample at %llu ns is after the current "
                                        "session time %llu ns",
                                        (unsigned long long)ts, (unsigned long long)now));
    cg_device_memory rec = {.timestamp_ns = ts, .device = m->device, .has_used = m->has_used,
                            .has_free = m->has_free, .has_reserved = m->has_reserved,
                            .has_capacity = m->has_capacity, .used_bytes = m->used_bytes,
                            .free_bytes = m->free_bytes, .reserved_bytes = m->reserved_bytes,
                            .capacity_bytes = m->capacity_bytes};
    put_event(s, cg_event_device_memory_json(&s->scratch, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_device_interval(cg_session *s, cg_span_id span,
                                      const cg_device_interval_record *d, cg_error *err) {
    if (!s || !d) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonempty(d->device) || !nonempty(d->stream_id) || !nonempty(d->clock_id) ||
        !nonempty(d->backend))
        return cg_err_set(err, CG_EINVAL,
                          "device interval needs a device, stream id, clock id and backend");
    if (d->duration_ns == 0)
        return cg_err_set(err, CG_EINVAL, "device interval duration must be positive");
    if (d->start_ns > UINT64_MAX - d->duration_ns)
        return cg_err_set(err, CG_EINVAL, "device interval end overflows u64");
    if (lock_open(s, err)) return -1;
    if (need_span(s, span, err)) return unlock_ret(s, -1);
    cg_device_interval rec = {.span_id = wire(&s->scratch, span), .device = d->device,
                              .stream_id = d->stream_id, .clock_id = d->clock_id,
                              .backend = d->backend, .start_ns = d->start_ns,
                              .duration_ns = d->duration_ns};
    put_event(s, cg_event_device_interval_json(&s->scratch, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_call_edge(cg_session *s, cg_span_id from, cg_span_id to,
                                uint64_t host_duration_ns, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (lock_open(s, err)) return -1;
    if (need_span(s, from, err) || need_span(s, to, err)) return unlock_ret(s, -1);
    const span_info *target = span_get(s, to);
    if (target->parent != from)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "call edge s%llu -> s%llu: s%llu is not a child of s%llu",
                                        (unsigned long long)from, (unsigned long long)to,
                                        (unsigned long long)to, (unsigned long long)from));
    if (target->closed && target->duration_ns != host_duration_ns)
        return unlock_ret(s, cg_err_set(err, CG_EINVAL,
                                        "call edge s%llu -> s%llu: host duration %llu ns differs "
                                        "from the span's duration %llu ns",
                                        (unsigned long long)from, (unsigned long long)to,
                                        (unsigned long long)host_duration_ns,
                                        (unsigned long long)target->duration_ns));
    cg_edge rec = {.is_data = false, .from = wire(&s->scratch, from),
                   .to = wire(&s->scratch, to), .host_duration_ns = host_duration_ns};
    put_event(s, cg_event_edge_json(&s->scratch, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_data_edge(cg_session *s, const char *from_tensor, const char *to_tensor,
                                cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonempty(from_tensor) || !nonempty(to_tensor))
        return cg_err_set(err, CG_EINVAL, "data edge endpoints must be non-empty tensor ids");
    if (lock_open(s, err)) return -1;
    cg_edge rec = {.is_data = true, .from = from_tensor, .to = to_tensor};
    put_event(s, cg_event_edge_json(&s->scratch, &rec));
    return unlock_ret(s, end_call(s, err));
}

static bool gradient_consistent(cg_grad_state state, const double *norm) {
    switch (state) {
    case CG_GRAD_PRESENT: return norm && isfinite(*norm) && *norm > 0.0;
    case CG_GRAD_ZERO: return norm && *norm == 0.0 && !signbit(*norm);
    case CG_GRAD_MISSING:
    case CG_GRAD_NON_FINITE: return norm == NULL;
    }
    return false;
}

int cg_session_record_gradient(cg_session *s, const char *root, const char *key,
                               cg_grad_state state, const double *norm, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonblank(root)) return cg_err_set(err, CG_EINVAL, "gradient root must not be blank");
    if (!nonblank(key)) return cg_err_set(err, CG_EINVAL, "gradient key must not be blank");
    if ((unsigned)state > CG_GRAD_NON_FINITE)
        return cg_err_set(err, CG_EINVAL, "invalid gradient state %d", (int)state);
    if (!gradient_consistent(state, norm))
        return cg_err_set(err, CG_EINVAL,
                          "gradient %s/%s: state %s is inconsistent with its norm", root, key,
                          cg_grad_state_name(state));
    if (lock_open(s, err)) return -1;
    s->n_gradients++;
    cg_gradient rec = {.event_id = cg_arena_printf(&s->scratch, "gradient-%llu",
                                                   (unsigned long long)s->n_gradients),
                       .root = root, .key = key, .state = state, .has_norm = norm != NULL,
                       .norm = norm ? *norm : 0.0};
    put_event(s, cg_event_gradient_json(&s->scratch, &rec));
    return unlock_ret(s, end_call(s, err));
}

int cg_session_record_tensor_stats_f32(cg_session *s, const char *span_id, const char *label,
                                       const uint64_t *shape, size_t rank, const char *dtype,
                                       const float *data, size_t n, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonblank(span_id))
        return cg_err_set(err, CG_EINVAL, "tensor_stats span id must not be blank");
    if (!nonblank(label))
        return cg_err_set(err, CG_EINVAL, "tensor_stats label must not be blank");
    if (!nonempty(dtype)) return cg_err_set(err, CG_EINVAL, "tensor_stats %s needs a dtype", label);
    if (rank && !shape)
        return cg_err_set(err, CG_EINVAL, "tensor_stats %s shape has rank %zu but no dimensions",
                          label, rank);
    if (n && !data) return cg_err_set(err, CG_EINVAL, "tensor_stats %s has no data", label);
    uint64_t elements = 1;
    for (size_t i = 0; i < rank; i++) {
        if (shape[i] != 0 && elements > UINT64_MAX / shape[i])
            return cg_err_set(err, CG_EINVAL, "tensor_stats %s shape element count overflows",
                              label);
        elements *= shape[i];
    }
    if (elements != (uint64_t)n)
        return cg_err_set(err, CG_EINVAL,
                          "tensor_stats %s: shape has %llu elements but %zu values were given",
                          label, (unsigned long long)elements, n);
    cg_f32_stats st;
    cg_tensor_stats_f32(data, n, &st);
    if (lock_open(s, err)) return -1;
    cg_arena *a = &s->scratch;
    cg_tensor_stats rec = {.span_id = span_id, .label = label, .dtype = dtype,
                           .elements = st.elements, .non_finite = st.non_finite, .rms = st.rms,
                           .abs_max = st.abs_max, .mean = st.mean};
    shape_copy(a, shape, rank, &rec.shape, NULL);
    put_event(s, cg_event_tensor_stats_json(a, &rec));
    return unlock_ret(s, end_call(s, err));
}

/* ---- flush / finish ---- */

int cg_session_flush(cg_session *s, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (lock_open(s, err)) return -1;
    return unlock_ret(s, flush_locked(s, err));
}

/* Writes the terminal (and for a complete capture the root span_end), then
 * flushes, fsyncs and closes. Mutex held. */
static int finish_locked(cg_session *s, cg_outcome outcome, const char *reason, cg_error *err) {
    uint64_t now = now_ns(s);
    if (outcome == CG_OUTCOME_COMPLETE) {
        span_info *root = &s->spans[0];
        root->duration_ns = now;
        root->closed = true;
        cg_span rec = {.id = wire(&s->scratch, CG_SPAN_ROOT), .closed = true, .duration_ns = now};
        put_event(s, cg_event_span_end_json(&s->scratch, &rec));
    }
    cg_terminal term = {.outcome = outcome, .timestamp_ns = now, .reason = reason};
    put_event(s, cg_event_terminal_json(&s->scratch, &term));
    cg_arena_reset(&s->scratch);
    if (flush_locked(s, err)) return -1;
    if (fsync(s->fd) != 0) {
        fail_writer(s, "fsync");
        return cg_err_set(err, CG_EIO, "%s", s->write_error);
    }
    int rc = close(s->fd);
    s->fd = -1;
    if (rc != 0) {
        fail_writer(s, "close");
        return cg_err_set(err, CG_EIO, "%s", s->write_error);
    }
    s->finished = true;
    return 0;
}

int cg_session_finish(cg_session *s, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (lock_open(s, err)) return -1;
    for (size_t i = 0; i < s->n_stacks; i++) {
        const thread_stack *t = &s->stacks[i];
        if (t->n > 0)
            return unlock_ret(s, cg_err_set(err, CG_ESTATE,
                                            "span s%llu is still open: only the root span may "
                                            "remain open at finish",
                                            (unsigned long long)t->ids[t->n - 1]));
    }
    return unlock_ret(s, finish_locked(s, CG_OUTCOME_COMPLETE, NULL, err));
}

int cg_session_finish_failed(cg_session *s, const char *reason, cg_error *err) {
    if (!s) return cg_err_set(err, CG_EINVAL, "NULL argument");
    if (!nonblank(reason))
        return cg_err_set(err, CG_EINVAL, "a failed capture needs a non-blank reason");
    if (lock_open(s, err)) return -1;
    return unlock_ret(s, finish_locked(s, CG_OUTCOME_FAILED, reason, err));
}
