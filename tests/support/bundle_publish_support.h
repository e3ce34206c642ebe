/* bundle_publish_support.h — helpers shared by the publish/publication unit
 * tests (tests/unit/test_bundle_publish.c, test_bundle_publication.c):
 * whole-directory listings, counting published bundles, and killing the
 * process at a chosen publish step (crash-safety tests, in a forked child).
 * Unexpected I/O failures abort the test program (a failed test). */
#ifndef CG_TEST_BUNDLE_PUBLISH_SUPPORT_H
#define CG_TEST_BUNDLE_PUBLISH_SUPPORT_H

#include <stdbool.h>

/* The names in dir (without "." and ".."; also without every name starting
 * with '.' when skip_hidden), sorted, each followed by '\n'; "" when empty.
 * At most 64 names. The result is malloc'd (caller frees). */
char *tbs_listing(const char *dir, bool skip_hidden);
/* How many directories directly below parent hold a bundle.json. */
int tbs_count_bundles(const char *parent);
/* Installs a publish hook (cg_publish_set_hook) that raises SIGKILL when the
 * publish reaches step (a cg_publish_step value). */
void tbs_kill_at_publish_step(int step);

#endif
