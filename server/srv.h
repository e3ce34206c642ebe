/* srv.h — internal interfaces of candle-graph-server (one section per module).
 *
 * Ownership: a srv_req owns its arena (freed when MHD reports the request
 * complete); every cg_jv a handler builds lives in that arena. A PGconn taken
 * from the pool must be returned with srv_pool_put on every path. Errors are
 * reported with cg_error; HTTP answers always go through srv_reply_* so each
 * request queues exactly one response. */
#ifndef SRV_H
#define SRV_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include <libpq-fe.h>
#include <microhttpd.h>

#include "base/arena.h"
#include "base/buf.h"
#include "base/error.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/sha256.h"
#include "fault.h" /* CG_FAULT wrappers for I/O and libpq calls */

#ifndef PATH_MAX
#define PATH_MAX 4096
#endif

/* ------------------------------------------------------------ config.c */

typedef enum srv_blob_kind { SRV_BLOB_FS = 0, SRV_BLOB_PG } srv_blob_kind;

/* Every limit lives here, with safe defaults (srv_config_defaults). */
typedef struct srv_config {
    char data_dir[PATH_MAX];
    char listen_host[256];
    unsigned listen_port;
    char *database_url;          /* malloc'd; NULL = embedded cluster */
    srv_blob_kind blob_kind;
    bool public_read;
    bool require_signature;
    char pg_user[64];            /* user the embedded cluster runs as when we are root */
    char pg_bindir[PATH_MAX];    /* "" = search /usr/lib/postgresql/<n>/bin */
    /* limits */
    uint64_t max_body_bytes;     /* compressed/raw upload body */
    uint64_t max_decoded_bytes;  /* unpacked bundle size */
    uint64_t max_files;          /* files per bundle */
    uint64_t max_json_body;      /* admin JSON bodies */
    uint64_t min_free_bytes;     /* refuse uploads (507) below this free space */
    uint64_t resident_budget;    /* resident set the spill governor keeps under (0 = no spilling) */
    uint64_t spill_min_bytes;    /* blocks of this size or more live in spill files */
    unsigned conn_limit;         /* MHD threads (thread per connection) */
    unsigned per_ip_limit;
    unsigned idle_timeout_s;     /* MHD inactivity timeout */
    unsigned request_timeout_s;  /* whole-request deadline for uploads */
    unsigned pool_size;
    unsigned pool_wait_ms;
    unsigned max_uploads;        /* concurrent ingests */
    unsigned upload_wait_ms;     /* wait for an ingest slot before 429 */
    unsigned janitor_interval_s;
    unsigned janitor_grace_s;
    unsigned shutdown_grace_s;
    unsigned statement_timeout_ms;
    /* slow clients (http_guard.c) */
    unsigned header_timeout_s;   /* deadline for a complete request head (each request) */
    unsigned body_timeout_s;     /* body grace period before the minimum rate applies */
    unsigned min_body_rate;      /* bytes/s a body must keep after the grace period */
    unsigned max_query_params;   /* more → 431 too_many_parameters */
    unsigned max_uri_bytes;      /* longer request target → 414 uri_too_long */
    unsigned max_decode_ratio;   /* decoded/compressed bytes of a zstd upload (0 = off) */
} srv_config;

void srv_config_defaults(srv_config *c);
/* Parses the flags shared by serve/admin/fsck/migrate starting at argv[*i].
 * Returns 1 when consumed, 0 when not a known flag, -1 on a bad value (printed). */
int srv_config_flag(srv_config *c, int argc, char **argv, int *i);
void srv_config_free(srv_config *c);

/* ------------------------------------------------------------ log.c */

/* One JSON object per line on stderr. kv pairs: key, value (strings), NULL-terminated.
 * Values are JSON-escaped (no CR/LF injection). Never pass secrets. */
void srv_log(const char *level, const char *msg, ...);
void srv_log_request(const char *req_id, const char *method, const char *path, int status,
                     const char *code, double ms, uint64_t bytes_in, const char *extra);
struct srv_ingest_stages;
/* The "ingest stages" line of a successful upload: milliseconds, resident
 * MiB and the process's peak resident MiB after each stage, and the total. */
void srv_log_ingest_stages(const char *req_id, const char *id, const struct srv_ingest_stages *st, double total_s);

/* ------------------------------------------------------------ pgembed.c */

typedef struct srv_pgembed {
    char pgdata[PATH_MAX];
    char sockdir[PATH_MAX];
    char bindir[PATH_MAX];
    char logfile[PATH_MAX];
    char user[64];       /* OS user running the cluster ("" = ourselves) */
    bool started_by_us;
} srv_pgembed;

/* Creates (initdb) the private cluster under data_dir/pg if needed and starts it
 * (pg_ctl) on a Unix socket in data_dir/pg-run with listen_addresses=''. When it is
 * already running (e.g. the server runs and admin is called), it is reused.
 * Writes the libpq conninfo into conninfo. */
int srv_pgembed_start(srv_pgembed *pg, const srv_config *cfg, char *conninfo, size_t cisz, cg_error *err);
/* Stops the cluster when this process started it. */
void srv_pgembed_stop(srv_pgembed *pg);

/* ------------------------------------------------------------ pool.c */

typedef struct srv_pool srv_pool;

srv_pool *srv_pool_new(const char *conninfo, unsigned size, unsigned wait_ms, unsigned stmt_timeout_ms);
void srv_pool_free(srv_pool *p);
/* Checks out a healthy connection (connecting lazily); NULL when the database is
 * unreachable or the pool stays exhausted for wait_ms (→ 503). */
PGconn *srv_pool_get(srv_pool *p, cg_error *err);
/* Returns a connection: rolls back an open transaction, drops a broken one. */
void srv_pool_put(srv_pool *p, PGconn *c);
void srv_pool_stats(srv_pool *p, unsigned *size, unsigned *in_use, unsigned *open);
/* Connections the calling thread holds now (checked out, not yet put back);
 * srv_pool_get/put adjust it by +1/-1. */
int srv_pool_held_here(void);
void srv_pool_held_adjust(int delta);
/* Called for every answer queued (http.c): counts the answers queued while the
 * request's thread still held a pooled connection — the store layer returns
 * them before any CPU work, so this stays 0 (/metrics
 * cg_db_pool_held_at_reply_total, asserted by the store-layer test). */
void srv_pool_note_reply(void);
unsigned long srv_pool_held_at_reply(void);
/* Called where a thread starts CPU work that must not hold a connection (the
 * change-point sweep's steps, a confirmation): counts the sections and those
 * entered while the thread held one (cg_db_pool_held_while_computing_total). */
void srv_pool_note_compute(void);
/* /metrics: the counters above. */
void srv_pool_metrics(cg_buf *b);
/* One connection outside the pool (admin CLI, migrations). */
PGconn *srv_db_connect(const char *conninfo, unsigned stmt_timeout_ms, cg_error *err);

/* Parameterized query helpers (text params; a param may be NULL = SQL NULL).
 * bin_lens: when non-NULL, params with bin_lens[i] > 0 are sent binary with that
 * length (bytea). Returns the result on PGRES_COMMAND_OK / TUPLES_OK, else NULL
 * with err set ("database: <message>") and *sqlstate copied (6 bytes) if given. */
PGresult *srv_q(PGconn *c, const char *sql, int n, const char *const *params, const int *bin_lens,
                char sqlstate[6], cg_error *err);
/* A failed statement or COPY: err ("database: <message>", libpq's connection
 * message when r is NULL) and *sqlstate ("08006" when r has none) if given;
 * r is cleared. Returns -1. */
int srv_pg_fail(PGconn *c, PGresult *r, char sqlstate[6], cg_error *err);
/* One column of a result row as JSON (pg_row.c): text or null, an unsigned
 * integer or null, a float (0 for NULL), a boolean ('t'), parsed JSON (null
 * when NULL or unparsable). */
cg_jv *srv_col_str(cg_arena *a, PGresult *x, int row, int col);
cg_jv *srv_col_u64(cg_arena *a, PGresult *x, int row, int col);
cg_jv *srv_col_f64(cg_arena *a, PGresult *x, int row, int col);
cg_jv *srv_col_bool(cg_arena *a, PGresult *x, int row, int col);
cg_jv *srv_col_json(cg_arena *a, PGresult *x, int row, int col);
/* Runs a statement without result rows (BEGIN/COMMIT…). */
int srv_exec(PGconn *c, const char *sql, cg_error *err);
/* true when the SQLSTATE class means "database unreachable/overloaded" (→ 503). */
bool srv_sqlstate_unavailable(const char *sqlstate, PGconn *c);

/* ------------------------------------------------------------ migrate.c */

/* Applies embedded migrations under pg_advisory_lock; refuses when the database
 * has a newer schema than this binary or a recorded checksum differs. */
int srv_migrate(PGconn *c, bool verbose, cg_error *err);
int srv_schema_version_known(void); /* highest migration number embedded */

/* ------------------------------------------------------------ embedded files */

const char *srv_embedded_file(const char *path, size_t *len);
const char *srv_embedded_at(size_t k, const char **data, size_t *len);

/* ------------------------------------------------------------ blobstore.c */

typedef struct srv_blobstore {
    srv_blob_kind kind;
    char root[PATH_MAX]; /* fs: <data>/blobs (sha256/ab/<hex>, tmp/) */
} srv_blobstore;

int srv_blob_init(srv_blobstore *b, srv_blob_kind kind, const char *data_dir, cg_error *err);
/* Stores the file at src under its (already verified) digest. fs: temp → fsync →
 * rename → fsync dir; an existing blob of the right size is kept (dedup) and its
 * mtime refreshed so the janitor's grace period restarts. pg: inserted through
 * conn inside the caller's transaction. *enospc is set when the disk is full. */
int srv_blob_put(srv_blobstore *b, PGconn *conn, const char *src, const char *hex, uint64_t size,
                 bool *enospc, cg_error *err);
/* The same from a descriptor the caller opened (read from offset 0, not
 * closed); src only names it in messages. Ingest puts the staged files it
 * opened beneath the bundle's directory descriptor. */
int srv_blob_put_fd(srv_blobstore *b, PGconn *conn, int src_fd, const char *src, const char *hex, uint64_t size,
                    bool *enospc, cg_error *err);
/* fs: the blob's path (caller checks existence). */
void srv_blob_path(const srv_blobstore *b, const char *hex, char *out, size_t outsz);
/* Opens a blob for reading into a fresh unlinked temp fd (pg) or the file (fs).
 * Returns fd (blocking, caller/MHD closes) or -1 (missing: *missing = true). */
int srv_blob_open(srv_blobstore *b, PGconn *conn, const char *hex, uint64_t *size, bool *missing, cg_error *err);
/* Parses the trace.jsonl blob hex opened as fd (srv_blob_open; taken and
 * closed) with the library's streaming reader, never holding its bytes whole,
 * and without a database connection (blob_trace.c). Plain size > max is
 * CG_ELIMIT. NULL on failure: *store_error when the blob is damaged, unreadable
 * or too large, otherwise err holds the reader's message. */
struct cg_trace;
struct cg_trace_limits;
struct cg_trace *srv_blob_trace_fd(srv_blobstore *b, int fd, const char *hex, uint64_t max,
                                   const struct cg_trace_limits *lim, bool *store_error, cg_error *err);
/* Reads a whole blob into memory (bounded by max). */
char *srv_blob_read(srv_blobstore *b, PGconn *conn, const char *hex, size_t max, size_t *len, cg_error *err);
/* Decompresses and hashes a stored blob (fsck): got = hex SHA-256 of its plain
 * bytes, *plain their count, *form its at-rest form. -1 only when it cannot be
 * opened (*missing when it does not exist); damage shows as a wrong digest. */
int srv_blob_hash(srv_blobstore *b, PGconn *conn, const char *hex, char got[65], uint64_t *plain,
                  const char **form, bool *missing, cg_error *err);
/* Writes the plain bytes of blob hex, open as fd (srv_blob_open; taken and
 * closed), to a new file dst (0600): a hard link for a plain fs blob, a streamed
 * decompression otherwise. */
int srv_blob_place(srv_blobstore *b, int fd, const char *hex, const char *dst, cg_error *err);
/* Totals of the store for /metrics: stored (on disk: headers, frames, index)
 * and plain bytes and blob files by form. fs: a walk of sha256/, cached for
 * 30 s; pg: from pg_blobs and the chunks' lengths and first bytes (blobs of
 * older servers are plain). -1 when unknown. */
typedef struct srv_blob_totals {
    int64_t stored, plain, n_zstd, n_raw, n_plain;
} srv_blob_totals;
void srv_blob_totals_get(srv_blobstore *b, PGconn *conn, srv_blob_totals *t);
/* Reachability check for readyz: fs root writable / pg table readable. */
int srv_blob_ready(srv_blobstore *b, PGconn *conn, cg_error *err);
/* Free bytes on the data filesystem (UINT64_MAX when unknown). */
uint64_t srv_free_bytes(const char *path);

/* ------------------------------------------------------------ blobfmt.c */

/* The at-rest form of a blob file (blobfmt.c has the layout): plain (the bytes
 * alone: incompressible blobs, and every blob of older servers), raw (header +
 * plain bytes: plain content that would read as a header) or zstd (header +
 * independent zstd frames of SRV_BLOB_FRAME plain bytes + frame index). */
#define SRV_BLOB_FRAME (256u << 10)
#define SRV_BLOB_HDR 64u
typedef enum srv_blob_form { SRV_BLOBF_PLAIN = 0, SRV_BLOBF_RAW = 1, SRV_BLOBF_ZSTD = 2 } srv_blob_form;
typedef struct srv_blob_view {
    int fd; /* not owned */
    srv_blob_form form;
    uint64_t plain_size, stored_size;
    uint32_t frame_size, n_frames;
    uint64_t index_off;
} srv_blob_view;
/* Reads the header of the blob file fd; a file without a valid header is plain. */
int srv_blob_view_open(int fd, srv_blob_view *v, cg_error *err);
/* Writes the blob form of exactly size plain bytes read from in to out (at its
 * offset 0): zstd when flags has SRV_BLOB_ENC_COMPRESS and the first frame
 * shrinks by 1/16 or more, else the plain bytes alone, or raw when those would
 * read as a blob header or flags has SRV_BLOB_ENC_FRAMED (the pg store: every
 * blob it writes starts with a header). *stored receives the file's length.
 * Memory: two frames. */
#define SRV_BLOB_ENC_COMPRESS 1u
#define SRV_BLOB_ENC_FRAMED 2u
int srv_blob_encode(int in, int out, uint64_t size, unsigned flags, uint64_t *stored, bool *enospc, cg_error *err);
/* Whether the n bytes at p start with a raw or zstd blob header (magic,
 * version, digest) of plain size plain: how the pg store tells its framed
 * blobs from the plain chunks of older servers. */
bool srv_blob_header_claims(const void *p, size_t n, uint64_t plain);
/* Makes fd, holding SRV_BLOB_HDR bytes of any content then plain bytes plain
 * bytes long, a raw blob file (writes the header at offset 0). */
int srv_blob_raw_seal(int fd, uint64_t plain, cg_error *err);
/* A reader of plain bytes (one frame buffered; frame size + its zstd bound of
 * memory). srv_blob_pread returns up to n bytes at plain offset off (fewer at a
 * frame's end), 0 at the end, -1 when the blob is damaged or unreadable. */
typedef struct srv_blob_cursor srv_blob_cursor;
srv_blob_cursor *srv_blob_cursor_new(const srv_blob_view *v);
ssize_t srv_blob_pread(srv_blob_cursor *c, void *buf, size_t n, uint64_t off, cg_error *err);
void srv_blob_cursor_free(srv_blob_cursor *c);
/* The body of plain bytes [off, off+len) of the file fd in any form (sendfile
 * for plain and raw, frame-wise decompression for zstd). Takes fd on success;
 * NULL (fd still the caller's) on failure. */
struct MHD_Response *srv_blob_response(int fd, uint64_t off, uint64_t len);

/* ------------------------------------------------------------ metrics.c */

void srv_metrics_request(int route, int status);
void srv_metrics_ingest(const char *outcome, uint64_t bytes, double seconds);
void srv_metrics_render(cg_buf *out, unsigned pool_size, unsigned pool_in_use, unsigned pool_open,
                        int64_t blob_bytes, int64_t blob_count, const srv_blob_totals *blob_totals);

/* The stages of a published upload, in pipeline order (ingest.c): where its
 * time goes and how much memory the process holds after each. */
typedef enum srv_ingest_stage {
    SRV_STAGE_UNPACK,    /* archive into staging */
    SRV_STAGE_BUNDLE,    /* bundle/1 verification and the ingest rules */
    SRV_STAGE_GATE,      /* waiting for the heavy-build gate (one large parse at a time) */
    SRV_STAGE_SEMANTIC,  /* trace parse, rederivation, evidence comparison, view index */
    SRV_STAGE_VIEWS,     /* the view index's span and op rows */
    SRV_STAGE_SIGNATURE, /* detached signature */
    SRV_STAGE_BLOBS,     /* blob store writes (fs store; a pg store writes in the commit) */
    SRV_STAGE_FACTS,     /* index row and comparison facts */
    SRV_STAGE_COMMIT,    /* the one transaction */
    SRV_STAGE_TIMELINE,  /* the Timeline index */
    SRV_STAGE_COUNT
} srv_ingest_stage;

/* The stage names of metrics and logs ("unpack", …), SRV_STAGE_COUNT of them. */
extern const char *const srv_ingest_stage_names[SRV_STAGE_COUNT];

typedef struct srv_ingest_stages {
    double seconds[SRV_STAGE_COUNT];
    uint64_t rss_bytes[SRV_STAGE_COUNT];  /* resident set at the stage's end (0: unknown) */
    uint64_t peak_bytes[SRV_STAGE_COUNT]; /* the process's peak resident set at the stage's end */
} srv_ingest_stages;

/* Adds one successful upload's stage times to cg_ingest_stage_seconds_total. */
void srv_metrics_ingest_stages(const srv_ingest_stages *st);
/* The process's resident set and its peak so far, in bytes (Linux
 * /proc/self/status VmRSS, VmHWM; 0 where unknown). */
void srv_process_memory(uint64_t *rss, uint64_t *peak);

/* ------------------------------------------------------------ server state */

typedef struct srv_guard srv_guard;

typedef struct srv_server {
    srv_config cfg;
    srv_guard *guard;      /* slow-client watchdog (http_guard.c) */
    char conninfo[1024];
    srv_pool *pool;
    srv_blobstore blobs;
    struct MHD_Daemon *mhd;
    atomic_bool stopping;
    atomic_uint uploads_active;
    pthread_mutex_t upload_mu;
    pthread_cond_t upload_cv;
    unsigned upload_slots; /* free ingest slots (guarded by upload_mu) */
    _Atomic(struct srv_timeline *) timeline; /* Timeline index cache (timeline_index.c), made on first use */
    _Atomic(struct srv_views *) views;       /* dashboard view cache (view_index.c), made on first use */
} srv_server;

/* ------------------------------------------------------------ router.c */

enum { SRV_SCOPE_NONE = 0, SRV_SCOPE_READ = 1, SRV_SCOPE_UPLOAD = 2, SRV_SCOPE_ADMIN = 4 };
enum srv_body { SRV_BODY_NONE = 0, SRV_BODY_JSON, SRV_BODY_STREAM };

typedef struct srv_req srv_req;
typedef enum MHD_Result (*srv_handler)(srv_req *r);

typedef struct srv_route {
    const char *method;
    const char *pattern;   /* "/bundles/{id}/files/{path}"; a final {path} takes the rest */
    unsigned scope;        /* SRV_SCOPE_READ honours --public-read */
    enum srv_body body;
    srv_handler handler;
} srv_route;

extern const srv_route srv_routes[];
extern const size_t srv_n_routes;
/* Finds the route for method+path; params receive up to 4 decoded segments (arena).
 * Returns the index, -1 for no path match, -2 for a path match with another method
 * (allow receives "GET, POST"). */
int srv_route_match(cg_arena *a, const char *method, const char *path, const char **params,
                    char *allow, size_t allowsz);

/* ------------------------------------------------------------ http.c */

#define SRV_MAX_PARAMS 4

struct srv_req {
    srv_server *s;
    struct MHD_Connection *conn;
    cg_arena arena;
    char id[20];
    const char *method, *path;
    int route;
    const char *params[SRV_MAX_PARAMS];
    struct timespec t0;
    /* auth */
    const char *token_id;  /* arena; NULL = anonymous */
    unsigned scopes;
    /* body */
    enum srv_body body_kind;
    cg_buf body;           /* JSON bodies */
    int body_fd;           /* streamed uploads; -1 when none */
    char body_path[PATH_MAX];
    uint64_t body_len;
    bool body_too_large;
    bool body_timed_out;
    bool has_slot;         /* holds an ingest slot */
    bool started;          /* call 1 of the access handler ran */
    unsigned n_query;      /* query parameters counted before MHD parsed them */
    size_t uri_len;
    bool close_conn;       /* answer with Connection: close (framing errors) */
    /* outcome (for logs/metrics) */
    int status;
    cg_reason err_reason; /* of the error answered, CG_R_NONE when none */
    bool queued;
    char allow[64];        /* Allow header for 405 */
};

/* Starts MHD on cfg.listen_host:listen_port (port 0 = random; the bound port is
 * written back into cfg.listen_port). */
int srv_http_start(srv_server *s, cg_error *err);
/* Stops accepting, waits for in-flight requests up to grace seconds, stops. */
void srv_http_stop(srv_server *s, unsigned grace_s);

/* Responses (each queues exactly one response; return its MHD result). */
enum MHD_Result srv_reply_json(srv_req *r, unsigned status, const cg_jv *v);
enum MHD_Result srv_reply_bytes(srv_req *r, unsigned status, const char *ctype, const void *data, size_t len,
                                const char *const *headers);
/* Takes ownership of fd. Handles ETag/If-None-Match and a single Range; size is
 * the plain size and fd may be a stored blob in any form (srv_blob_response). */
enum MHD_Result srv_reply_fd(srv_req *r, int fd, uint64_t size, const char *ctype, const char *etag_hex,
                             bool immutable);
/* Error envelope {"error": {code, message, detail?}} of reason (its code and
 * its status from errors.c). detail may be NULL. */
enum MHD_Result srv_fail(srv_req *r, cg_reason reason, cg_jv *detail, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A failed dependency (database, blob store): 503 unavailable; err is logged. */
enum MHD_Result srv_fail_unavailable(srv_req *r, const cg_error *err);
/* A failed library call: answers srv_reason_of(err) — with err's message when
 * that is a 4xx, else logged and answered as srv_fail_unavailable does (507
 * for a full disk). detail may be NULL. */
enum MHD_Result srv_fail_error(srv_req *r, const cg_error *err, cg_jv *detail);
const char *srv_query(srv_req *r, const char *name); /* decoded query argument or NULL */
/* Single "bytes=a-b" / "bytes=a-" / "bytes=-n" range within size; false when absent,
 * multi-range or unsatisfiable (the caller then serves the whole body). */
bool srv_parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len);
const char *srv_header(srv_req *r, const char *name);

/* Offline viewer pages may run inline script but reach no network address. */
#define SRV_HTML_CSP \
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; connect-src 'none'"
/* Uploaded HTML (/viewer, any .html under /files): a sandboxed, opaque origin
 * that can run its own inline script but never reads the app's storage,
 * cookies or token, and cannot be framed. */
#define SRV_UPLOADED_HTML_CSP "sandbox allow-scripts; " SRV_HTML_CSP "; frame-ancestors 'none'"
/* Cache-Control for immutable content: "private" unless the route is public
 * (no token needed, or --public-read). */
const char *srv_cache_immutable(const srv_req *r);
/* First key found twice in one object anywhere in v (request bodies are
 * refused with 400 duplicate_key rather than letting the first one win). */
const char *srv_json_dup_key(const cg_jv *v);
enum MHD_Result srv_fail_dup_key(srv_req *r, const char *key);
/* {"parameter": name} for the detail of an invalid_parameter answer (arena). */
cg_jv *srv_detail_param(srv_req *r, const char *name);
/* query_params.c: a decimal integer 0..max (digits only, no sign, no overflow);
 * out may be NULL. */
bool srv_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* The bundle of path parameter r->params[0] (a full id or a unique prefix of
 * >= 12 lowercase hex) as its full id. Returns 1, or 0 with *res the answer
 * (400 invalid_parameter, 404 not_found, 503). */
int srv_bundle_id_param(srv_req *r, char id[65], enum MHD_Result *res);
/* Adds each bundle-list filter of the request (entrypoint, phase, device,
 * implementation_id, workload_id, campaign, capture_step, outcome, signer,
 * since, until, commit, branch, tag=k:v) to w (srv_store.h). Returns 1, or 0
 * with *res the 400 answer for a bad value. */
struct srv_where;
int srv_bundle_filters_add(srv_req *r, struct srv_where *w, enum MHD_Result *res);

/* ------------------------------------------------------------ http_guard.c */

/* Slow-client watchdog: tracks every TCP connection (MHD socket context) and
 * closes one whose request head is not complete within header_timeout_s, or
 * whose body falls below min_body_rate after body_timeout_s. Head-waiting
 * connections are capped at half the connection limit: a new connection over
 * the cap sheds the oldest one still sending its head, so such clients cannot
 * hold every slot. */
int srv_guard_start(srv_server *s);
void srv_guard_stop(srv_server *s);
void srv_guard_notify(void *cls, struct MHD_Connection *c, void **socket_ctx, enum MHD_ConnectionNotificationCode toe);
/* Phase changes of the connection serving r (called from http.c). */
void srv_guard_body_begin(srv_req *r);   /* head complete, body expected */
void srv_guard_body_bytes(srv_req *r, uint64_t n);
void srv_guard_busy(srv_req *r);         /* head (and body) complete */
void srv_guard_idle(srv_server *s, struct MHD_Connection *c); /* request over: waiting for the next head */
/* Why the guard closed this connection ("header deadline", "body rate"), or NULL. */
const char *srv_guard_reason(srv_server *s, struct MHD_Connection *c);

/* ------------------------------------------------------------ log.c (UTF-8) */

/* s with every invalid UTF-8 sequence replaced by U+FFFD (arena copy, or s
 * itself when already valid). */
const char *srv_utf8_clean(cg_arena *a, const char *s, size_t n, size_t *out_len);

/* ------------------------------------------------------------ errors.c */

/* The reasons are lib/base/reason.def (cg_reason: code, category, retryable);
 * errors.c maps each to its HTTP status, the only such mapping. */
unsigned srv_reason_status(cg_reason r); /* 500 for CG_R_NONE or out of range */
/* The reason to answer for a failed library or dependency call: the reason the
 * failure was detected with, else insufficient_storage (ENOSPC/EDQUOT) or
 * unavailable (any other local failure). */
cg_reason srv_reason_of(const cg_error *err);
/* The reason table as the Markdown of docs/api.md "Errors" (one row per
 * reason: code, status, category, retry, meaning), appended to out. */
void srv_reasons_markdown(cg_buf *out);
/* srv_store_sql22_param (srv_store.h) names the parameter of a class-22 error. */

/* ------------------------------------------------------------ auth.c */

/* Token format: "cgt_" + 64 lowercase hex (32 random bytes). db: srv_store.h. */
struct srv_db;
int srv_token_create(struct srv_db db, const char *name, unsigned scopes, cg_arena *a, const char **id,
                     const char **token, cg_error *err);
/* 1 = valid (id/scopes filled), 0 = unknown/expired/revoked, -1 = database error. */
int srv_token_check(struct srv_db db, const char *token, cg_arena *a, const char **id, unsigned *scopes, cg_error *err);
unsigned srv_scopes_parse_list(const cg_jv *arr, bool *bad);
unsigned srv_scopes_parse_csv(const char *csv, bool *bad);
cg_jv *srv_scopes_json(cg_arena *a, unsigned scopes);
/* Public key from SubjectPublicKeyInfo PEM or base64 of the raw 32 bytes
 * (reason invalid_parameter when it is not a valid prime-order point). */
int srv_pubkey_parse(const char *text, unsigned char pk[32], cg_error *err);
void srv_key_id(const unsigned char pk[32], char out[33]);

/* ------------------------------------------------------------ handlers */

enum MHD_Result srv_h_healthz(srv_req *r);
enum MHD_Result srv_h_readyz(srv_req *r);
enum MHD_Result srv_h_metrics(srv_req *r);
enum MHD_Result srv_h_openapi(srv_req *r);
enum MHD_Result srv_h_tokens_create(srv_req *r);
enum MHD_Result srv_h_tokens_list(srv_req *r);
enum MHD_Result srv_h_tokens_delete(srv_req *r);
enum MHD_Result srv_h_keys_create(srv_req *r);
enum MHD_Result srv_h_keys_list(srv_req *r);
enum MHD_Result srv_h_keys_delete(srv_req *r);
enum MHD_Result srv_h_bundles_post(srv_req *r);
enum MHD_Result srv_h_bundles_list(srv_req *r);
enum MHD_Result srv_h_bundle_get(srv_req *r);
enum MHD_Result srv_h_bundle_manifest(srv_req *r);
enum MHD_Result srv_h_bundle_file(srv_req *r);
enum MHD_Result srv_h_bundle_archive(srv_req *r);
enum MHD_Result srv_h_bundle_signature(srv_req *r);
enum MHD_Result srv_h_bundle_evidence(srv_req *r);
enum MHD_Result srv_h_bundle_graph(srv_req *r);
enum MHD_Result srv_h_bundle_export(srv_req *r);
enum MHD_Result srv_h_bundle_viewer(srv_req *r);

/* ------------------------------------------------------------ janitor.c / fsck.c */

int srv_janitor_start(srv_server *s);
void srv_janitor_stop(void);
/* One sweep: stale temp/staging entries and unreferenced fs blobs older than grace. */
void srv_janitor_sweep(srv_server *s, PGconn *c);
/* Walks the fs blob store's sha256/<2 hex digits>/<blob> tree with base/fs.h's
 * cg_walk (fd-relative, no symlink followed): visit sees the entries of the
 * two-hex-digit directories only (depth 1). Returns cg_walk's result. */
int srv_blob_tree_walk(const srv_blobstore *b, cg_walk_fn visit, void *ctx, cg_error *err);

/* ------------------------------------------------------------ commands */

int srv_cmd_serve(int argc, char **argv);
int srv_cmd_admin(int argc, char **argv);
int srv_cmd_fsck(int argc, char **argv);
int srv_cmd_migrate(int argc, char **argv);
int srv_cmd_routes(int argc, char **argv);
int srv_cmd_errors(int argc, char **argv); /* prints srv_reasons_markdown */

/* Opens a database connection for offline commands (embedded cluster started
 * briefly when needed; *pg tells srv_offline_close whether to stop it). */
PGconn *srv_offline_open(srv_config *cfg, srv_pgembed *pg, char *conninfo, size_t cisz, cg_error *err);
void srv_offline_close(PGconn *c, srv_pgembed *pg);

#endif
