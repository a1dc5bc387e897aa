/* Tiny shared assertions for the unit tests: each failed CHECK prints where
 * and why and counts; check_done() prints "N passed, N failed" and gives
 * the exit status. */
#ifndef PMAXENT_CHECK_H
#define PMAXENT_CHECK_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int check_passed, check_failed;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (cond) {                                                                        \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
		}                                                                                  \
	} while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
	do {                                                                                       \
		double check_a_ = (a), check_b_ = (b);                                             \
		if (fabs(check_a_ - check_b_) <= (tol)) {                                          \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: %s = %.17g, expected %s = %.17g (tol %g)\n",       \
				__FILE__, __LINE__, #a, check_a_, #b, check_b_, (double)(tol));    \
		}                                                                                  \
	} while (0)

#define CHECK_STR(a, b)                                                                            \
	do {                                                                                       \
		const char *check_a_ = (a), *check_b_ = (b);                                       \
		if (check_a_ && check_b_ && strcmp(check_a_, check_b_) == 0) {                     \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: %s = \"%s\", expected \"%s\"\n", __FILE__,         \
				__LINE__, #a, check_a_ ? check_a_ : "(null)",                      \
				check_b_ ? check_b_ : "(null)");                                   \
		}                                                                                  \
	} while (0)

/* Substring check, for error messages. */
#define CHECK_CONTAINS(hay, needle)                                                                \
	do {                                                                                       \
		const char *check_h_ = (hay), *check_n_ = (needle);                                \
		if (check_h_ && strstr(check_h_, check_n_)) {                                      \
			check_passed++;                                                            \
		} else {                                                                           \
			check_failed++;                                                            \
			fprintf(stderr, "%s:%d: \"%s\" does not contain \"%s\"\n", __FILE__,       \
				__LINE__, check_h_ ? check_h_ : "(null)", check_n_);               \
		}                                                                                  \
	} while (0)

static inline int check_done(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
