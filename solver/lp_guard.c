/*
 * GLPK's fatal errors, caught. GLPK ends the process (abort) on a failed
 * assertion or a bad argument, after calling its error hook: the hook
 * here jumps back to the innermost guard of the thread instead, where
 * GLPK's environment (every program of the thread with it: GLPK's state
 * after such an error is undefined) is freed and the solve fails with
 * PM_ERR_INTERNAL. GLPK's environment and hooks are per thread, and so
 * is the guard. What GLPK does not own is not freed: the GMP numbers of
 * an exact simplex cut short, the caller's own memory (zeros.h). The
 * input limits (constraints/limits.c) keep from GLPK the numbers that
 * make it fail so; this is the net under them.
 */
#include <glpk.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include "zeros.h"

/* GLPK's message, which it prints before calling the hook */
#define GUARD_TEXT 512

struct guard {
	jmp_buf jump;
	struct guard *outer; /* the guard this one is nested in, or NULL */
};

static _Thread_local struct guard *guard_top;
/* What GLPK printed since the innermost guard began: outside the guard's
 * frame, as a local changed between setjmp and longjmp would be
 * indeterminate after the jump. */
static _Thread_local char guard_buf[GUARD_TEXT];
static _Thread_local size_t guard_len;

/* GLPK's terminal output, off but for its fatal errors (GLPK turns it on
 * to report them): kept for the message, never printed, as stdout may
 * carry a result. */
static int guard_text(void *info, const char *s)
{
	size_t n = strlen(s);

	(void)info;
	if (guard_len + n >= GUARD_TEXT)
		n = GUARD_TEXT - 1 - guard_len;
	memcpy(guard_buf + guard_len, s, n);
	guard_len += n;
	guard_buf[guard_len] = 0;
	return 1;
}

static void guard_jump(void *info)
{
	struct guard *g = info;

	longjmp(g->jump, 1);
}

/* GLPK's lines as one, into out (GUARD_TEXT bytes): "glp_add_rows: ...;
 * Error detected in file ...". */
static void guard_message(const char *text, char *out)
{
	size_t n = 0;

	for (const char *c = text; *c && n + 3 < GUARD_TEXT; c++) {
		if (*c != '\n')
			out[n++] = *c;
		else if (c[1])
			out[n++] = ';', out[n++] = ' ';
	}
	out[n] = 0;
}

/* The hooks of g, or of no guard: GLPK keeps them in its environment,
 * made here if there is none yet. */
static void guard_hooks(struct guard *g)
{
	glp_error_hook(g ? guard_jump : NULL, g);
	glp_term_hook(g ? guard_text : NULL, g);
}

enum pm_status lp_guard_run(enum pm_status (*fn)(void *ctx), void *ctx, struct pm_error *err)
{
	struct guard g = {.outer = guard_top};
	char line[GUARD_TEXT];
	enum pm_status st;

	guard_len = 0;
	guard_buf[0] = 0;
	guard_top = &g;
	guard_hooks(&g);
	if (setjmp(g.jump) == 0) {
		st = fn(ctx);
		guard_top = g.outer;
		guard_hooks(g.outer);
		return st;
	}
	/* GLPK's state is undefined past a fatal error: all of it goes; the
	 * next call makes a new environment (an outer guard's hooks with it) */
	guard_top = g.outer;
	glp_free_env();
	if (g.outer)
		guard_hooks(g.outer);
	guard_message(guard_buf, line);
	return error_set(err, PM_ERR_INTERNAL, "", "the LP solver failed: %s",
			 line[0] ? line : "a fatal error in GLPK");
}
