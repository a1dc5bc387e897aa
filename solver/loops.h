/*
 * What the solver's inner loops over buckets and cells share: kernels
 * compiled once per bucket width (BY_WIDTH), unrolling, min and max
 * without NaN handling, and four-double vectors. No functions of a file
 * of its own; internal to solver/.
 */
#ifndef PMAXENT_LOOPS_H
#define PMAXENT_LOOPS_H

/*
 * Calls fn(args..., h) with h a constant for the usual bucket widths, so
 * that the compiler unrolls the short loops over h (buckets of 5 records
 * under 5-diversity have h = 5): the same arithmetic in the same order as
 * the general case, only without its loop overhead.
 */
#define BY_WIDTH_CASE(k, fn, ...)                                                                  \
	case k:                                                                                    \
		fn(__VA_ARGS__, k);                                                                \
		break
#define BY_WIDTH(fn, h, ...)                                                                       \
	do {                                                                                       \
		switch (h) {                                                                       \
			BY_WIDTH_CASE(2, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(3, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(4, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(5, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(6, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(7, fn, __VA_ARGS__);                                         \
			BY_WIDTH_CASE(8, fn, __VA_ARGS__);                                         \
		default:                                                                           \
			fn(__VA_ARGS__, h);                                                        \
		}                                                                                  \
	} while (0)
/* For the functions BY_WIDTH specializes (inlined into each case), and
 * their loops over h (unrolled where h is a constant). */
#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 8")

/* fmin and fmax where no NaN is expected, without the call GCC makes for
 * those (minsd and maxsd do not treat NaN as they must): for the loops
 * over buckets and cells. As with fmin and fmax, a NaN b leaves a. */
static inline double num_min(double a, double b)
{
	return b < a ? b : a;
}

static inline double num_max(double a, double b)
{
	return b > a ? b : a;
}

/* Four doubles as one vector (two SSE2 registers, or one AVX2 register
 * in the clone VEC_CLONES makes, picked at load time: the same
 * arithmetic in the same order either way, so results do not depend on
 * the CPU). */
typedef double v4d __attribute__((vector_size(4 * sizeof(double))));
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define VEC_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VEC_CLONES
#endif

#endif
