/* cupti_stub.h — control interface of the stand-in libcupti (fake_cupti.c)
 * and libcuda (fake_cuda.c) used by the collector tests. They export the CUPTI
 * and CUDA driver entry points the collector resolves with dlsym, with the same
 * signatures, and synthesize what the real ones deliver: API callbacks on the
 * launching thread with a fresh correlation id, NVTX callbacks, activity
 * records in buffers obtained from the collector's buffer_requested callback,
 * buffer completion on flush (in reverse order of filling, so consumers see
 * out-of-order buffers), and a dropped-record counter.
 * Tests reach these functions with dlsym on the stub's handle. */
#ifndef CG_CUPTI_STUB_H
#define CG_CUPTI_STUB_H

#include <stddef.h>
#include <stdint.h>

/* "Launches" an interval kind on the calling thread: runtime-API ENTER/EXIT
 * callbacks, then a record of `kind` (CONCURRENT_KERNEL, MEMCPY, MEMSET, ...)
 * with [start, end) appended to the current buffer. name may be NULL.
 * Returns the correlation id. */
typedef uint32_t (*cupti_stub_launch_fn)(uint32_t kind, uint32_t device, uint32_t stream,
                                         uint64_t start, uint64_t end, const char *name);
/* Appends `len` raw bytes as one record (any kind value, e.g. unknown ones). */
typedef void (*cupti_stub_raw_fn)(const void *bytes, size_t len);
/* Starts a new buffer (records go to separate buffers, completed out of order). */
typedef void (*cupti_stub_new_buffer_fn)(void);
/* Adds n to the dropped-record counter reported by GetNumDroppedRecords. */
typedef void (*cupti_stub_drop_fn)(size_t n);
/* nvtxRangePushA / nvtxRangePop through the NVTX callback domain. */
typedef void (*cupti_stub_nvtx_push_fn)(const char *name);
typedef void (*cupti_stub_nvtx_pop_fn)(void);
/* cudaDeviceReset: runtime ENTER callback, then every undelivered record is
 * lost (buffers handed back empty), as when the contexts are destroyed. */
typedef void (*cupti_stub_device_reset_fn)(void);
/* Number of buffers completed so far. */
typedef size_t (*cupti_stub_completed_fn)(void);

/* The stand-in's definitions of the entry points above (looked up with dlsym). */
uint32_t cupti_stub_launch(uint32_t kind, uint32_t device, uint32_t stream, uint64_t start, uint64_t end,
                           const char *name);
void cupti_stub_raw(const void *bytes, size_t len);
void cupti_stub_new_buffer(void);
void cupti_stub_drop(size_t n);
void cupti_stub_nvtx_push(const char *name);
void cupti_stub_nvtx_pop(void);
void cupti_stub_device_reset(void);
size_t cupti_stub_completed(void);

#endif
