/*
 * alone: a bucket that no open row couples, solved by itself (alone.c):
 * peeling where its zeros allow, else matrix scaling. Internal to
 * solver/.
 */
#ifndef PMAXENT_ALONE_H
#define PMAXENT_ALONE_H

#include "constraints.h"

/* ---- alone.c ------------------------------------------------------------ */

/* Scratch of alone_solve for buckets up to g_max x h_max, and the shapes
 * it has solved; caller frees *out with alone_work_destroy (also after a
 * failure). */
struct alone_work;
enum pm_status alone_work_create(size_t g_max, size_t h_max, struct alone_work **out);
void alone_work_destroy(struct alone_work *w);
/*
 * The maximum-entropy estimate of bucket b alone with its forced zeros
 * (zero: n_cells flags), written to its cells of y: exactly by peeling
 * where the zeros allow, else by matrix scaling. PM_ERR_INTERNAL when the
 * scaling misses its target (the bucket then needs the dual).
 */
enum pm_status alone_solve(const struct dataset *ds, const struct invariants *inv, size_t b,
			   const uint8_t *zero, double *y, struct alone_work *w);
/*
 * Bucket b's cells of y scaled to its counts with themselves as the
 * kernel (a cell at 0 stays 0): the iterate of a solve the time limit
 * stopped, made to hold the bucket's invariants. PM_ERR_INTERNAL when the
 * scaling misses its target (the cells are then its last fill).
 */
enum pm_status alone_rescale(const struct dataset *ds, const struct invariants *inv, size_t b,
			     double *y, struct alone_work *w);

#endif
