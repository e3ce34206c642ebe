/* load.c — HTTP upload load generator for bench/ingest: C threads each POST
 * archives (round robin over the files given) to URL/bundles until the duration
 * ends, and the tool prints one JSON line: requests, statuses, bytes, latency
 * percentiles. Loopback only (the caller passes a 127.0.0.1 URL).
 *
 * usage: bench_ingest_load URL TOKEN CONCURRENCY SECONDS FILE...
 *   each FILE is a .tar.zst; FILE.sig (base64 signature/1 JSON) is sent as the
 *   Candle-Graph-Signature header when present. SECONDS = 0 sends every file
 *   exactly once (fresh ingest) instead of cycling until the time is up. */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct file_t {
    char *data;
    size_t len;
    char *sig;
} file_t;

static file_t *files;
static size_t n_files;
static const char *url, *token;
static double deadline;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static size_t next_file;
static double *lat;
static size_t n_lat, cap_lat;
static unsigned long long bytes_sent, status_2xx, status_201, status_other, failures;
static int once;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static char *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *p = malloc((size_t)n + 1);
    if (!p || fread(p, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(p);
        return NULL;
    }
    p[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return p;
}

static size_t sink(char *p, size_t s, size_t n, void *u) {
    (void)p;
    (void)u;
    return s * n;
}

static void *worker(void *arg) {
    (void)arg;
    CURL *c = curl_easy_init();
    char target[2048], auth[1024];
    snprintf(target, sizeof target, "%s/bundles", url);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    while (once || now_s() < deadline) {
        pthread_mutex_lock(&mu);
        if (once && next_file >= n_files) {
            pthread_mutex_unlock(&mu);
            break;
        }
        file_t *f = &files[next_file++ % n_files];
        pthread_mutex_unlock(&mu);
        struct curl_slist *h = NULL;
        h = curl_slist_append(h, auth);
        h = curl_slist_append(h, "Content-Type: application/zstd");
        h = curl_slist_append(h, "Expect:");
        char *sighdr = NULL;
        if (f->sig) {
            size_t n = strlen(f->sig) + 64;
            sighdr = malloc(n);
            snprintf(sighdr, n, "Candle-Graph-Signature: %s", f->sig);
            h = curl_slist_append(h, sighdr);
        }
        curl_easy_reset(c);
        curl_easy_setopt(c, CURLOPT_URL, target);
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, f->data);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)f->len);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
        curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
        double t0 = now_s();
        CURLcode rc = curl_easy_perform(c);
        double dt = now_s() - t0;
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        curl_slist_free_all(h);
        free(sighdr);
        pthread_mutex_lock(&mu);
        if (rc != CURLE_OK) failures++;
        else if (code >= 200 && code < 300) {
            status_2xx++;
            if (code == 201) status_201++;
        }
        else status_other++;
        bytes_sent += f->len;
        if (n_lat == cap_lat) {
            cap_lat = cap_lat ? cap_lat * 2 : 1024;
            lat = realloc(lat, cap_lat * sizeof *lat);
        }
        lat[n_lat++] = dt;
        pthread_mutex_unlock(&mu);
    }
    curl_easy_cleanup(c);
    return NULL;
}

static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double pct(double q) {
    if (!n_lat) return 0;
    double pos = q * (double)(n_lat - 1);
    size_t lo = (size_t)pos, hi = lo + 1 < n_lat ? lo + 1 : lo;
    return lat[lo] + (lat[hi] - lat[lo]) * (pos - (double)lo);
}

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: bench_ingest_load URL TOKEN CONCURRENCY SECONDS FILE...\n");
        return 2;
    }
    url = argv[1];
    token = argv[2];
    int conc = (int)strtol(argv[3], NULL, 10);
    double secs = strtod(argv[4], NULL);
    if (conc < 1 || conc > 256 || secs < 0) return 2;
    once = secs == 0;
    n_files = (size_t)(argc - 5);
    files = calloc(n_files, sizeof *files);
    for (size_t i = 0; i < n_files; i++) {
        files[i].data = slurp(argv[5 + i], &files[i].len);
        if (!files[i].data) {
            fprintf(stderr, "bench_ingest_load: cannot read %s\n", argv[5 + i]);
            return 1;
        }
        char sp[4096];
        snprintf(sp, sizeof sp, "%s.sig", argv[5 + i]);
        size_t sl;
        files[i].sig = slurp(sp, &sl);
        if (files[i].sig)
            while (sl && (files[i].sig[sl - 1] == '\n' || files[i].sig[sl - 1] == '\r')) files[i].sig[--sl] = 0;
    }
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double t0 = now_s();
    deadline = t0 + secs;
    pthread_t *th = calloc((size_t)conc, sizeof *th);
    for (int i = 0; i < conc; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < conc; i++) pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    qsort(lat, n_lat, sizeof *lat, cmpd);
    printf("{\"requests\":%zu,\"ok\":%llu,\"created\":%llu,\"other_status\":%llu,\"failures\":%llu,\"bytes\":%llu,\"wall_s\":%.3f,"
           "\"p50_ms\":%.2f,\"p99_ms\":%.2f}\n",
           n_lat, status_2xx, status_201, status_other, failures, bytes_sent, wall, pct(0.5) * 1000, pct(0.99) * 1000);
    curl_global_cleanup();
    return 0;
}
