/* selector.c — CaptureSelector: pick the one-based invocation to capture. */
#include "capture/capture.h"

int cg_capture_selector_new(uint64_t n, cg_capture_selector *out, cg_error *err) {
    if (!out) return cg_err_set(err, CG_EINVAL, "capture selector output is NULL");
    if (n == 0)
        return cg_err_set(err, CG_EINVAL, "capture selector invocation must be one-based");
    out->selected = n;
    return 0;
}

bool cg_capture_selector_is_selected(const cg_capture_selector *sel, uint64_t invocation) {
    return sel && sel->selected != 0 && invocation == sel->selected;
}

uint64_t cg_capture_selector_selected_invocation(const cg_capture_selector *sel) {
    return sel ? sel->selected : 0;
}
