/*
 * A small primal-dual interior point method (Mehrotra predictor-corrector)
 * for the relaxations of zeros_relax.c:
 *
 *     find x with 0 <= x_j <= u_j, sum over group g of x_j = d_g,
 *     and for every row r: sum over j in r of x_j = c_r.
 *
 * With a zero objective the iterates converge to the relative interior of
 * the feasible set (a strictly complementary pair), so a variable that
 * every solution holds at a bound ends up within rounding of it while the
 * others stay well inside. That is only a classification: the caller
 * proves every claim with a linear program before using it.
 *
 * The groups are disjoint, so the normal equations reduce to a dense
 * Schur complement over the rows, factored as L D L^T (schur.c); rows
 * that depend on others show up as vanishing pivots and are dropped
 * (their equations still count in the residuals).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "zeros.h"

#define IPM_MAX_ITER 80

struct ipm {
	const struct relax_problem *p;
	size_t n, m, ng; /* variables, rows, groups */
	double *x, *z, *w, *yg, *yr;
	double *theta, *rho, *dx, *dz, *dw, *dyg, *dyr, *rg, *rr, *rc;
	double *ax, *az, *aw; /* affine (predictor) directions */
	double *M, *dg, *v;   /* Schur complement, group sums of theta, scratch */
	double *work;	      /* the factorization's */
	uint8_t *dead;	      /* rows dropped as dependent */
	uint8_t *seen;	      /* rows in touched (schur_form) */
	size_t *touched;
};

static void ipm_free(struct ipm *s)
{
	double *all[] = {s->x,	s->z,  s->w,  s->yg,  s->yr,  s->theta, s->rho,
			 s->dx, s->dz, s->dw, s->dyg, s->dyr, s->rg,	s->rr,
			 s->rc, s->ax, s->az, s->aw,  s->M,   s->dg,	s->v};

	for (size_t i = 0; i < sizeof all / sizeof *all; i++)
		free(all[i]);
	free(s->dead);
	free(s->work);
	free(s->seen);
	free(s->touched);
}

static int ipm_alloc(struct ipm *s)
{
	size_t n = s->n + 1, m = s->m + 1, g = s->ng + 1;
	double **vn[] = {&s->x,	 &s->z,	 &s->w,	 &s->theta, &s->rho, &s->dx,
			 &s->dz, &s->dw, &s->rc, &s->ax,    &s->az,  &s->aw};
	double **vm[] = {&s->yr, &s->dyr, &s->rr, &s->v};
	double **vg[] = {&s->yg, &s->dyg, &s->rg, &s->dg};
	int ok = 1;

	for (size_t i = 0; i < sizeof vn / sizeof *vn; i++)
		ok &= (*vn[i] = calloc(n, sizeof(double))) != NULL;
	for (size_t i = 0; i < sizeof vm / sizeof *vm; i++)
		ok &= (*vm[i] = calloc(m, sizeof(double))) != NULL;
	for (size_t i = 0; i < sizeof vg / sizeof *vg; i++)
		ok &= (*vg[i] = calloc(g, sizeof(double))) != NULL;
	s->M = calloc(m * m, sizeof(double));
	s->work = malloc(schur_dense_work(m) * sizeof(double));
	s->dead = calloc(m, 1);
	s->seen = calloc(m, 1);
	s->touched = calloc(m, sizeof(size_t));
	return ok && s->M && s->work && s->dead && s->seen && s->touched;
}

/* Residuals rg = d - B x, rr = c - K x, rc = -(A^T y + z - w); returns
 * the largest primal one. */
static double residuals(struct ipm *s)
{
	const struct relax_problem *p = s->p;
	double worst = 0;

	memcpy(s->rg, p->d, s->ng * sizeof(double));
	memcpy(s->rr, p->c, s->m * sizeof(double));
	for (size_t j = 0; j < s->n; j++) {
		double aty = s->yg[p->group[j]];

		s->rg[p->group[j]] -= s->x[j];
		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++) {
			s->rr[p->var_row[e]] -= s->x[j];
			aty += s->yr[p->var_row[e]];
		}
		s->rc[j] = -(aty + s->z[j] - s->w[j]);
	}
	for (size_t g = 0; g < s->ng; g++)
		worst = fmax(worst, fabs(s->rg[g]));
	for (size_t r = 0; r < s->m; r++)
		worst = fmax(worst, fabs(s->rr[r]));
	return worst;
}

/* M = K T K^T - sum_g (K T b_g)(K T b_g)^T / (b_g^T T b_g), T = diag(theta). */
static void schur_form(struct ipm *s)
{
	const struct relax_problem *p = s->p;
	size_t m = s->m;

	memset(s->M, 0, m * m * sizeof(double));
	memset(s->dg, 0, s->ng * sizeof(double));
	for (size_t j = 0; j < s->n; j++) {
		s->dg[p->group[j]] += s->theta[j];
		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			for (size_t f = p->var_off[j]; f < p->var_off[j + 1]; f++)
				s->M[p->var_row[e] * m + p->var_row[f]] += s->theta[j];
	}
	/* variables of a group are contiguous (relax_problem contract) */
	for (size_t j = 0; j < s->n;) {
		size_t g = p->group[j], nt = 0;

		for (; j < s->n && p->group[j] == g; j++)
			for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++) {
				size_t r = p->var_row[e];

				/* a flag, not v[r] == 0: theta may be 0, and a row
				 * listed twice overran touched */
				if (!s->seen[r]) {
					s->seen[r] = 1;
					s->touched[nt++] = r;
				}
				s->v[r] += s->theta[j];
			}
		for (size_t a = 0; a < nt; a++)
			for (size_t b = 0; b < nt; b++)
				s->M[s->touched[a] * m + s->touched[b]] -=
				    s->v[s->touched[a]] * s->v[s->touched[b]] / s->dg[g];
		for (size_t a = 0; a < nt; a++) {
			s->v[s->touched[a]] = 0;
			s->seen[s->touched[a]] = 0;
		}
	}
}

/* M factored as L D L^T (schur.c), the rows found dependent at the first
 * factorization (dead: pivots up to SCHUR_DEPENDENT of the diagonal)
 * dropped ever after, as zero rows. */
static void factor(struct ipm *s, int first)
{
	size_t m = s->m;

	for (size_t k = 0; k < m; k++) {
		if (!s->dead[k])
			continue;
		memset(s->M + k * m, 0, (k + 1) * sizeof *s->M);
		for (size_t i = k + 1; i < m; i++)
			s->M[i * m + k] = 0;
	}
	schur_dense_factor(s->M, m, first ? SCHUR_DEPENDENT : SCHUR_PIVOT_EPS, s->work, NULL);
	for (size_t k = 0; first && k < m; k++)
		s->dead[k] = !(s->M[k * m + k] > 0);
}

/* Solves A T A^T dy = rhs (rg, rr parts given in dyg, dyr on entry). */
static void normal_solve(struct ipm *s)
{
	const struct relax_problem *p = s->p;

	/* eliminate the groups: rr -= K T B^T D^-1 rg */
	for (size_t j = 0; j < s->n; j++) {
		double t = s->theta[j] * s->dyg[p->group[j]] / s->dg[p->group[j]];

		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			s->dyr[p->var_row[e]] -= t;
	}
	schur_dense_solve(s->M, s->m, s->dyr);
	/* dyg = D^-1 (rg - B T K^T dyr) */
	for (size_t j = 0; j < s->n; j++) {
		double t = 0;

		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			t += s->dyr[p->var_row[e]];
		s->dyg[p->group[j]] -= s->theta[j] * t;
	}
	for (size_t g = 0; g < s->ng; g++)
		s->dyg[g] /= s->dg[g];
}

/*
 * One direction for complementarity targets t1 (x z) and t2 (s w), given
 * as per-variable values by the callback-free form: t1[j] = a + b1[j],
 * t2[j] = a + b2[j] (b NULL: 0). Writes dx, dz, dw, dyg, dyr.
 */
static void direction(struct ipm *s, double a, const double *b1, const double *b2)
{
	const struct relax_problem *p = s->p;

	for (size_t j = 0; j < s->n; j++) {
		double x = s->x[j], sl = p->u[j] - x;
		double t1 = a + (b1 ? b1[j] : 0), t2 = a + (b2 ? b2[j] : 0);

		s->rho[j] = s->rc[j] - (t1 - x * s->z[j]) / x + (t2 - sl * s->w[j]) / sl;
	}
	/* rhs: r + A T rho */
	memcpy(s->dyg, s->rg, s->ng * sizeof(double));
	memcpy(s->dyr, s->rr, s->m * sizeof(double));
	for (size_t j = 0; j < s->n; j++) {
		double t = s->theta[j] * s->rho[j];

		s->dyg[p->group[j]] += t;
		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			s->dyr[p->var_row[e]] += t;
	}
	normal_solve(s);
	for (size_t j = 0; j < s->n; j++) {
		double x = s->x[j], sl = p->u[j] - x, aty = s->dyg[p->group[j]];
		double t1 = a + (b1 ? b1[j] : 0), t2 = a + (b2 ? b2[j] : 0);

		for (size_t e = p->var_off[j]; e < p->var_off[j + 1]; e++)
			aty += s->dyr[p->var_row[e]];
		s->dx[j] = s->theta[j] * (aty - s->rho[j]);
		s->dz[j] = (t1 - x * s->z[j] - s->z[j] * s->dx[j]) / x;
		s->dw[j] = (t2 - sl * s->w[j] + s->w[j] * s->dx[j]) / sl;
	}
}

/* Largest steps keeping 0 < x < u and z, w > 0. */
static void max_steps(const struct ipm *s, double *ap, double *ad)
{
	*ap = *ad = 1;
	for (size_t j = 0; j < s->n; j++) {
		double x = s->x[j], sl = s->p->u[j] - x;

		if (s->dx[j] < 0)
			*ap = fmin(*ap, -x / s->dx[j]);
		if (s->dx[j] > 0)
			*ap = fmin(*ap, sl / s->dx[j]);
		if (s->dz[j] < 0)
			*ad = fmin(*ad, -s->z[j] / s->dz[j]);
		if (s->dw[j] < 0)
			*ad = fmin(*ad, -s->w[j] / s->dw[j]);
	}
}

static double mu_at(const struct ipm *s, double ap, double ad)
{
	double sum = 0;

	for (size_t j = 0; j < s->n; j++) {
		double x = s->x[j] + ap * s->dx[j], sl = s->p->u[j] - x;

		sum += x * (s->z[j] + ad * s->dz[j]) + sl * (s->w[j] + ad * s->dw[j]);
	}
	return sum / (2.0 * (double)s->n);
}

/* One predictor-corrector step; returns the new mu. */
static double ipm_step(struct ipm *s, int first)
{
	double ap, ad, mu = mu_at(s, 0, 0), mua, sigma;

	for (size_t j = 0; j < s->n; j++) {
		double sl = s->p->u[j] - s->x[j];

		s->theta[j] = 1 / (s->z[j] / s->x[j] + s->w[j] / sl);
	}
	schur_form(s);
	factor(s, first);
	direction(s, 0, NULL, NULL);
	max_steps(s, &ap, &ad);
	mua = mu_at(s, ap, ad);
	sigma = pow(mua / mu, 3);
	sigma = sigma > 1 ? 1 : sigma;
	/* second-order terms: x z gets -dx dz, s w gets +dx dw (ds = -dx) */
	for (size_t j = 0; j < s->n; j++) {
		s->ax[j] = -s->dx[j] * s->dz[j];
		s->aw[j] = s->dx[j] * s->dw[j];
	}
	direction(s, sigma * mu, s->ax, s->aw);
	max_steps(s, &ap, &ad);
	ap = fmin(1, 0.995 * ap);
	ad = fmin(1, 0.995 * ad);
	for (size_t j = 0; j < s->n; j++) {
		s->x[j] += ap * s->dx[j];
		s->z[j] += ad * s->dz[j];
		s->w[j] += ad * s->dw[j];
	}
	for (size_t g = 0; g < s->ng; g++)
		s->yg[g] += ad * s->dyg[g];
	for (size_t r = 0; r < s->m; r++)
		s->yr[r] += ad * s->dyr[r];
	return mu_at(s, 0, 0);
}

/*
 * The certificate of a claim (see solver_internal.h): with t = -A^T y for
 * the duals y of the last iterate, z = max(t, 0) and w = max(-t, 0) make
 * A^T y + z - w = 0 exactly, so every feasible x has
 *     Σ z_j x_j + Σ w_j (u_j - x_j) = -(d . yg + c . yr) + Σ w_j u_j = E,
 * each term >= 0: x_j <= E / z_j and u_j - x_j <= E / w_j. E and every t_j
 * are computed sums of large duals: E is taken at its largest and each
 * t_j at its least favourable by their rounding bounds (struct csum).
 * theta and dx are scratch once the iterations are over: t and its
 * bound.
 */
static void certificate(const struct ipm *s, double *lo_bound, double *up_bound)
{
	const struct relax_problem *p = s->p;
	struct csum sum = {0};
	double e;

	for (size_t g = 0; g < s->ng; g++)
		csum_mul(&sum, -p->d[g], s->yg[g]);
	for (size_t r = 0; r < s->m; r++)
		csum_mul(&sum, -p->c[r], s->yr[r]);
	e = csum_value(&sum) + csum_error(&sum);
	for (size_t j = 0; j < s->n; j++) {
		struct csum t = {0};

		csum_add(&t, -s->yg[p->group[j]]);
		for (size_t k = p->var_off[j]; k < p->var_off[j + 1]; k++)
			csum_add(&t, -s->yr[p->var_row[k]]);
		s->theta[j] = csum_value(&t);
		s->dx[j] = csum_error(&t);
		/* w_j at its largest: t_j at its smallest */
		e += fmax(s->dx[j] - s->theta[j], 0) * p->u[j];
	}
	e = fmax(e, 0);
	for (size_t j = 0; j < s->n; j++) {
		double lo = s->theta[j] - s->dx[j], up = -s->theta[j] - s->dx[j];

		lo_bound[j] = lo > 0 ? e / lo : INFINITY;
		up_bound[j] = up > 0 ? e / up : INFINITY;
	}
}

/* Does the certificate prove every claim of the iterate (RELAX_CLAIM)? */
static int claims_proved(const struct ipm *s, const double *lo_bound, const double *up_bound)
{
	const double *u = s->p->u;

	for (size_t j = 0; j < s->n; j++) {
		if (s->x[j] <= RELAX_CLAIM * u[j] && !(lo_bound[j] <= ZERO_RECORDS))
			return 0;
		if (u[j] - s->x[j] <= RELAX_CLAIM * u[j] && !(up_bound[j] <= ZERO_RECORDS))
			return 0;
	}
	return 1;
}

/*
 * Iterates until the duals prove every claim of the iterate (from mu at
 * rounding level, 1e-13 of the largest demand, on): the certificate
 * rests on the duals alone, so it holds whatever the primal residual. A
 * stopping test on the iterate alone (residuals 1e-10) stopped at the
 * first converged iterate, whose bounds (about n mu over the dual, 1e-8
 * records) a linear program then had to prove where a step or two more
 * prove them; and where dependent rows keep the primal residual at 1e-8
 * (17,764 variables, 143 rows), it never passed, and the method ran on
 * for 70 steps into NaN. So the iterations also end where the primal
 * residual has stopped falling (STALL_STEPS steps without halving)
 * once mu is at rounding level, and, once the iterate converged, where
 * mu stops falling: *converged says whether the claims are proved, or
 * the iterate converged.
 */
#define STALL_STEPS 4

enum pm_status zeros_ipm(const struct relax_problem *p, double *x, double *lo_bound,
			 double *up_bound, int *converged)
{
	struct ipm s = {.p = p, .n = p->n, .m = p->n_rows, .ng = p->n_groups};
	double scale = 1, mu = 1, viol = INFINITY, best = INFINITY;
	enum pm_status st = PM_ERR_NOMEM;
	int stalled = 0;

	*converged = 0;
	if (!ipm_alloc(&s))
		goto out;
	for (size_t g = 0; g < s.ng; g++)
		scale = fmax(scale, fabs(p->d[g]));
	for (size_t j = 0; j < s.n; j++) {
		s.x[j] = p->u[j] / 2;
		s.z[j] = s.w[j] = 1;
	}
	for (int it = 0; it < IPM_MAX_ITER; it++) {
		double next;

		viol = residuals(&s);
		stalled = viol <= 0.5 * best ? 0 : stalled + 1;
		best = fmin(best, viol);
		if (mu <= 1e-13 * scale) {
			int proved;

			certificate(&s, lo_bound, up_bound);
			proved = claims_proved(&s, lo_bound, up_bound);
			*converged = proved || viol <= 1e-10 * scale;
			if (proved || stalled >= STALL_STEPS)
				break;
		}
		if (solver_stop_asked(p->o)) {
			st = PM_ERR_CANCELLED;
			goto out;
		}
		next = ipm_step(&s, it == 0);
		if (!isfinite(next) || (*converged && !(next < mu)))
			break;
		mu = next;
	}
	memcpy(x, s.x, s.n * sizeof(double));
	st = PM_OK;
out:
	ipm_free(&s);
	return st;
}
