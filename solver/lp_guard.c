/*
 * GLPK's fatal errors, caught. GLPK ends the process (abort) on a failed
 * assertion or a bad argument, after calling its error hook: the hook
 * here jumps back to the innermost guard of the thread instead, where
 * GLPK's environment (every program of the thread with it: GLPK's state
 * after such an error is undefined) is freed and the solve fails with
 * PM_ERR_INTERNAL. GLPK's environment and hooks are per thread, and so
 * is the guard.
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
	char text[GUARD_TEXT];
	size_t len;
};

static _Thread_local struct guard *guard_top;

/* GLPK's terminal output, off but for its fatal errors (GLPK turns it on
 * to report them): kept for the message, never printed, as stdout may
 * carry a result. */
static int guard_text(void *info, const char *s)
{
	struct guard *g = info;
	size_t n = strlen(s);

	if (g->len + n >= sizeof g->text)
		n = sizeof g->text - 1 - g->len;
	memcpy(g->text + g->len, s, n);
	g->len += n;
	g->text[g->len] = 0;
	return 1;
}

static void guard_jump(void *info)
{
	struct guard *g = info;

	longjmp(g->jump, 1);
}

/* GLPK's lines as one: "Assertion failed: ...; Error detected in ...". */
static void guard_message(char *text)
{
	size_t n = strlen(text);

	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = 0;
	for (char *c = text; (c = strchr(c, '\n'));)
		*c = ';';
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
	/* volatile: read after the jump back */
	struct guard g = {.outer = guard_top, .len = 0};
	enum pm_status st;

	g.text[0] = 0;
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
	guard_message(g.text);
	return error_set(err, PM_ERR_INTERNAL, "", "the LP solver failed: %s",
			 g.text[0] ? g.text : "a fatal error in GLPK");
}
