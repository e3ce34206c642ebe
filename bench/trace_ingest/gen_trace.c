/* gen_trace — writes a synthetic, valid and complete candle-graph/trace/10
 * document with exactly N records (default 1,000,000; ~200 bytes a record).
 *
 * Layout: meta, root span s1, measured span s2, then blocks of 25 records, one
 * block per child span of s2: span_start, 4 ops, 4 tensors, 4 memory allocs and
 * 4 frees, a device interval, a device_memory sample, a tensor_stats record, a
 * gradient, 2 data edges, span_end and the s2 -> child call edge. Steps cycle
 * forward/backward/optimizer; every id is unique, so the health pass reports
 * no issue. Remaining records are device_memory samples; s2/s1 ends, the
 * s1 -> s2 call edge and terminal close the document.
 *
 * usage: gen_trace [--records N] [--out FILE]   (FILE defaults to stdout) */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BLOCK 25
#define FIXED 7

static const char *const OPS[4] = {"matmul", "add", "relu", "softmax"};
static const char *const STEPS[3] = {"forward", "backward", "optimizer"};

static int usage(void) {
    fprintf(stderr, "usage: gen_trace [--records N] [--out FILE] [--run-id ID]\n");
    return 2;
}

int main(int argc, char **argv) {
    uint64_t records = 1000000;
    const char *out = NULL;
    const char *run_id = "bench-run-1";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--records") && i + 1 < argc) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(argv[++i], &end, 10);
            if (errno || *end || v < FIXED) {
                fprintf(stderr, "gen_trace: --records needs an integer >= %d\n", FIXED);
                return 2;
            }
            records = v;
        } else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
            out = argv[++i];
        } else if (!strcmp(argv[i], "--run-id") && i + 1 < argc) {
            run_id = argv[++i];
            for (const char *c = run_id; *c; c++)
                if (*c == '"' || *c == '\\' || (unsigned char)*c < 0x20) {
                    fprintf(stderr, "gen_trace: --run-id must not need JSON escaping\n");
                    return 2;
                }
        } else {
            return usage();
        }
    }
    FILE *f = out ? fopen(out, "w") : stdout;
    if (!f) {
        fprintf(stderr, "gen_trace: %s: %s\n", out, strerror(errno));
        return 1;
    }
    static char iobuf[1 << 20];
    setvbuf(f, iobuf, _IOFBF, sizeof iobuf);

    uint64_t blocks = (records - FIXED) / BLOCK;
    uint64_t pad = records - FIXED - blocks * BLOCK;
    uint64_t end = 1000 + blocks * 1000; /* s2 ends here */

    fprintf(f,
            "{\"kind\":\"meta\",\"schema\":\"candle-graph/trace/10\",\"run_id\":\"%s\","
            "\"correlation_id\":\"bench::train::update/update-1\",\"entrypoint\":\"bench::train::update\","
            "\"phase\":\"train\",\"timestamp\":\"2026-11-30T00:00:00.000Z\",\"capture_step\":1,\"warmup_steps\":0,"
            "\"device\":\"cuda:0\",\"measured_region_device_synchronized\":true,\"timing_mode\":\"host\","
            "\"capture_contract\":{\"measurement_scope\":\"profiled_work\",\"operations\":\"partial\","
            "\"tensors\":\"partial\",\"gradients\":\"partial\",\"logical_memory\":\"partial\","
            "\"physical_memory\":\"partial\",\"device_timing\":\"partial\","
            "\"required_semantic_labels\":[\"bench/block-000000\"]},"
            "\"tags\":{\"generator\":\"bench/trace_ingest/gen_trace\"}}\n",
            run_id);
    fprintf(f, "{\"kind\":\"span_start\",\"id\":\"s1\",\"name\":\"bench::train::update\",\"start_ns\":0,"
               "\"span_kind\":\"function\",\"measured\":false}\n");
    fprintf(f, "{\"kind\":\"span_start\",\"id\":\"s2\",\"parent_id\":\"s1\",\"name\":\"bench/update-1\","
               "\"start_ns\":100,\"span_kind\":\"function\",\"measured\":true}\n");

    uint64_t tensor = 1, storage = 0x7f0000000000ULL;
    for (uint64_t b = 0; b < blocks; b++) {
        uint64_t base = 1000 + b * 1000, sid = b + 3;
        fprintf(f,
                "{\"kind\":\"span_start\",\"id\":\"s%" PRIu64 "\",\"parent_id\":\"s2\",\"name\":\"bench/block-%06" PRIu64
                "\",\"start_ns\":%" PRIu64 ",\"span_kind\":\"module\",\"measured\":false,\"step\":\"%s\"}\n",
                sid, b, base, STEPS[b % 3]);
        uint64_t outs[4];
        for (int i = 0; i < 4; i++) {
            uint64_t in1 = tensor++, in2 = tensor++;
            outs[i] = tensor++;
            fprintf(f,
                    "{\"kind\":\"op\",\"span_id\":\"s%" PRIu64 "\",\"op_name\":\"%s\",\"inputs\":[\"TensorId(%" PRIu64
                    ")\",\"TensorId(%" PRIu64 ")\"],\"output\":\"TensorId(%" PRIu64
                    ")\",\"shape\":[16,64],\"dtype\":\"f32\",\"device\":\"cuda:0\",\"duration_ns\":150,"
                    "\"timestamp_ns\":%" PRIu64 ",\"output_dense_bytes\":4096,\"input_dense_bytes\":8192}\n",
                    sid, OPS[i], in1, in2, outs[i], base + 10 + (uint64_t)i * 200);
        }
        for (int i = 0; i < 4; i++)
            fprintf(f,
                    "{\"kind\":\"tensor\",\"span_id\":\"s%" PRIu64 "\",\"tensor_id\":\"TensorId(%" PRIu64
                    ")\",\"label\":\"bench/b%06" PRIu64 "/t%d\",\"shape\":[16,64],\"dtype\":\"f32\",\"device\":\"cuda:0\","
                    "\"requires_grad\":false,\"dense_bytes\":4096,\"category\":\"activation\"}\n",
                    sid, outs[i], b, i);
        for (int i = 0; i < 8; i++) {
            int k = i % 4;
            int is_free = i >= 4;
            uint64_t ts = is_free ? base + 850 + (uint64_t)k * 10 : base + 20 + (uint64_t)k * 200;
            fprintf(f,
                    "{\"kind\":\"memory\",\"timestamp_ns\":%" PRIu64 ",\"storage_id\":\"storage:0x%" PRIx64
                    "\",\"tensor_id\":\"TensorId(%" PRIu64 ")\",\"span_id\":\"s%" PRIu64
                    "\",\"op_name\":\"%s\",\"device\":\"cuda:0\",\"bytes\":4096,\"action\":\"%s\","
                    "\"shape\":[16,64],\"dtype\":\"f32\",\"category\":\"activation\"}\n",
                    ts, storage + (uint64_t)k, outs[k], sid, OPS[k], is_free ? "free" : "alloc");
        }
        storage += 4;
        fprintf(f,
                "{\"kind\":\"device_interval\",\"span_id\":\"s%" PRIu64 "\",\"device\":\"cuda:0\",\"stream_id\":\"7\","
                "\"clock_id\":\"cuda-event-0\",\"backend\":\"cuda-event\",\"start_ns\":%" PRIu64
                ",\"duration_ns\":700}\n",
                sid, 5000000 + b * 2000);
        fprintf(f,
                "{\"kind\":\"device_memory\",\"timestamp_ns\":%" PRIu64 ",\"device\":\"cuda:0\",\"used_bytes\":%" PRIu64
                ",\"reserved_bytes\":2147483648,\"capacity_bytes\":85899345920}\n",
                base + 500, 1073741824 + (b % 64) * 4096);
        fprintf(f,
                "{\"kind\":\"tensor_stats\",\"span_id\":\"s%" PRIu64 "\",\"label\":\"bench/b%06" PRIu64
                "/act\",\"shape\":[16,64],\"dtype\":\"f32\",\"elements\":1024,\"non_finite\":0,\"rms\":0.71,"
                "\"abs_max\":2.5,\"mean\":0.02}\n",
                sid, b);
        fprintf(f,
                "{\"kind\":\"gradient\",\"event_id\":\"gradient-%" PRIu64 "\",\"root\":\"parameters\",\"key\":\"layer%06" PRIu64
                ".weight\",\"state\":\"present\",\"norm\":0.125}\n",
                b + 1, b);
        for (int i = 0; i < 2; i++)
            fprintf(f,
                    "{\"kind\":\"edge\",\"edge_kind\":\"data\",\"from_tensor\":\"TensorId(%" PRIu64
                    ")\",\"to_tensor\":\"TensorId(%" PRIu64 ")\"}\n",
                    outs[i], outs[i + 1]);
        fprintf(f, "{\"kind\":\"span_end\",\"id\":\"s%" PRIu64 "\",\"duration_ns\":900}\n", sid);
        fprintf(f,
                "{\"kind\":\"edge\",\"edge_kind\":\"call\",\"from_span\":\"s2\",\"to_span\":\"s%" PRIu64
                "\",\"host_duration_ns\":900}\n",
                sid);
    }
    for (uint64_t i = 0; i < pad; i++)
        fprintf(f, "{\"kind\":\"device_memory\",\"timestamp_ns\":%" PRIu64 ",\"device\":\"cuda:0\",\"free_bytes\":%" PRIu64 "}\n",
                end - 1, 1000000 + i);
    fprintf(f, "{\"kind\":\"span_end\",\"id\":\"s2\",\"duration_ns\":%" PRIu64 "}\n", end - 100);
    fprintf(f, "{\"kind\":\"span_end\",\"id\":\"s1\",\"duration_ns\":%" PRIu64 "}\n", end + 100);
    fprintf(f,
            "{\"kind\":\"edge\",\"edge_kind\":\"call\",\"from_span\":\"s1\",\"to_span\":\"s2\",\"host_duration_ns\":%" PRIu64
            "}\n",
            end - 100);
    fprintf(f, "{\"kind\":\"terminal\",\"outcome\":\"complete\",\"timestamp_ns\":%" PRIu64 "}\n", end + 100);
    if (fflush(f) != 0 || ferror(f) || (out && fclose(f) != 0)) {
        fprintf(stderr, "gen_trace: write failed: %s\n", strerror(errno));
        return 1;
    }
    return 0;
}
