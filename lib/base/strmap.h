/* strmap.h — open-addressing hash map from strings to size_t values.
 * Keys are NOT copied: they must outlive the map (arena strings, literals).
 * The map owns only its slot array (cg_strmap_free). Allocation failure follows the
 * cg_x* policy of base/alloc.h. */
#ifndef CG_BASE_STRMAP_H
#define CG_BASE_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cg_strmap_slot {
    const char *key;
    size_t len;
    uint64_t hash;
    size_t value;
} cg_strmap_slot;

typedef struct cg_strmap {
    cg_strmap_slot *slots;
    size_t cap, n;
} cg_strmap;

uint64_t cg_hash_bytes(const void *p, size_t n);
void cg_strmap_init(cg_strmap *m);
void cg_strmap_free(cg_strmap *m);
/* Returns a pointer to the value for key; NULL if absent. */
size_t *cg_strmap_get(const cg_strmap *m, const char *key);
size_t *cg_strmap_getn(const cg_strmap *m, const char *key, size_t len);
/* Inserts key with value if absent. Returns true if inserted, false if it was present
 * (then *existing, if given, points to the stored value). */
bool cg_strmap_put(cg_strmap *m, const char *key, size_t value, size_t **existing);
bool cg_strmap_putn(cg_strmap *m, const char *key, size_t len, size_t value, size_t **existing);

#endif
