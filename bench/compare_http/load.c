/* load.c — GET load generator for bench/compare_http: CONCURRENCY threads
 * (one keep-alive connection each) GET the same URL until SECONDS have passed;
 * prints one JSON line: requests, ok (2xx), other_status, failures, wall_s,
 * rps, p50_ms, p99_ms, max_ms, bytes of the last body. Loopback only.
 * With @FILE instead of URL, the requests go round robin over the URLs in FILE
 * (one a line), e.g. distinct cohort orders that no answer cache can serve.
 *
 * usage: bench_compare_http_load URL|@FILE TOKEN CONCURRENCY SECONDS */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *token;
static char **urls;
static size_t n_urls, next_url;
static double deadline;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double *lat;
static size_t n_lat, cap_lat;
static unsigned long long ok_2xx, other_status, failures;
static size_t last_bytes;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static size_t sink(char *p, size_t s, size_t n, void *u) {
    (void)p;
    *(size_t *)u += s * n;
    return s * n;
}

static void *worker(void *arg) {
    (void)arg;
    CURL *c = curl_easy_init();
    if (!c) return NULL;
    char auth[1024];
    snprintf(auth, sizeof auth, "Authorization: Bearer %s", token);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    size_t bytes = 0;
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &bytes);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    while (now_s() < deadline) {
        bytes = 0;
        pthread_mutex_lock(&mu);
        const char *u = urls[next_url++ % n_urls];
        pthread_mutex_unlock(&mu);
        curl_easy_setopt(c, CURLOPT_URL, u);
        double t0 = now_s();
        CURLcode rc = curl_easy_perform(c);
        double dt = now_s() - t0;
        long code = 0;
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
        pthread_mutex_lock(&mu);
        if (rc != CURLE_OK) failures++;
        else if (code >= 200 && code < 300) ok_2xx++;
        else other_status++;
        last_bytes = bytes;
        if (n_lat == cap_lat) {
            cap_lat = cap_lat ? cap_lat * 2 : 1024;
            double *nl = realloc(lat, cap_lat * sizeof *lat);
            if (!nl) abort();
            lat = nl;
        }
        lat[n_lat++] = dt;
        pthread_mutex_unlock(&mu);
    }
    curl_slist_free_all(h);
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
    if (argc != 5) {
        fprintf(stderr, "usage: bench_compare_http_load URL|@FILE TOKEN CONCURRENCY SECONDS\n");
        return 2;
    }
    if (argv[1][0] == '@') {
        FILE *f = fopen(argv[1] + 1, "r");
        if (!f) {
            fprintf(stderr, "bench_compare_http_load: cannot read %s\n", argv[1] + 1);
            return 1;
        }
        char *line = NULL;
        size_t cap = 0;
        ssize_t n;
        while ((n = getline(&line, &cap, f)) > 0) {
            while (n && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
            if (!n) continue;
            char **nu = realloc(urls, (n_urls + 1) * sizeof *urls);
            if (!nu) abort();
            urls = nu;
            urls[n_urls] = strdup(line);
            if (!urls[n_urls++]) abort();
        }
        free(line);
        fclose(f);
        if (!n_urls) return 2;
    } else {
        urls = malloc(sizeof *urls);
        if (!urls) abort();
        urls[0] = argv[1];
        n_urls = 1;
    }
    token = argv[2];
    long conc = strtol(argv[3], NULL, 10);
    double secs = strtod(argv[4], NULL);
    if (conc < 1 || conc > 256 || secs <= 0) return 2;
    curl_global_init(CURL_GLOBAL_DEFAULT);
    double t0 = now_s();
    deadline = t0 + secs;
    pthread_t *th = calloc((size_t)conc, sizeof *th);
    if (!th) return 1;
    for (long i = 0; i < conc; i++) pthread_create(&th[i], NULL, worker, NULL);
    for (long i = 0; i < conc; i++) pthread_join(th[i], NULL);
    double wall = now_s() - t0;
    qsort(lat, n_lat, sizeof *lat, cmpd);
    printf("{\"requests\":%zu,\"ok\":%llu,\"other_status\":%llu,\"failures\":%llu,\"wall_s\":%.3f,\"rps\":%.1f,"
           "\"p50_ms\":%.2f,\"p99_ms\":%.2f,\"max_ms\":%.2f,\"body_bytes\":%zu}\n",
           n_lat, ok_2xx, other_status, failures, wall, (double)n_lat / wall, pct(0.5) * 1000, pct(0.99) * 1000,
           n_lat ? lat[n_lat - 1] * 1000 : 0.0, last_bytes);
    free(th);
    free(lat);
    curl_global_cleanup();
    return 0;
}
