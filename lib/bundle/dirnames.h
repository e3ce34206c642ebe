/* dirnames.h — the entry names of one directory, sorted by strcmp, as the
 * bundle code walks directories (verify, pack, publish's Nsight copy) so that
 * results never depend on readdir order. "." and ".." are left out.
 *
 * Ownership: *names and every string in it are malloc'd; free them with
 * cg_dir_names_free (also safe after a failure, which leaves *names NULL).
 * Errors: -1 with err: CG_ENOMEM "out of memory", or CG_EIO
 * "read <what> directory <dir>: <strerror>" when opendir/readdir fails.
 * No limit on the number of entries. */
#ifndef CG_BUNDLE_DIRNAMES_H
#define CG_BUNDLE_DIRNAMES_H

#include <stddef.h>

#include "base/error.h"

int cg_dir_names_sorted(const char *dir, const char *what, char ***names, size_t *n, cg_error *err);
/* The same for an open directory descriptor (not closed; dir names it in
 * messages). */
int cg_dir_names_sorted_fd(int fd, const char *dir, const char *what, char ***names, size_t *n, cg_error *err);
void cg_dir_names_free(char **names, size_t n);
/* qsort/bsearch comparator over an array of char * (strcmp order). */
int cg_dir_name_cmp(const void *x, const void *y);

#endif
