/* miner.c: hand-computed Top-(K+,K-) lists on tests/data/miner_small.csv,
 * input errors, a brute-force cross-check on random tables, and the time to
 * mine the Adult table. */
#include <time.h>

#include "check.h"
#include "constraints.h"

/* ---- a tiny CSV reader (no quoting), independent of csv.c --------------- */

struct table {
	size_t n_cols, n_rows;
	char *text;
	char **cell; /* (n_rows + 1) * n_cols, header first */
};

static void table_free(struct table *t)
{
	free(t->text);
	free(t->cell);
}

static int table_read(const char *path, struct table *t)
{
	FILE *f = fopen(path, "rb");
	size_t len, cap = 1024, n = 0;
	char *p;

	memset(t, 0, sizeof *t);
	if (!f)
		return -1;
	fseek(f, 0, SEEK_END);
	len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	t->text = malloc(len + 1);
	t->cell = malloc(cap * sizeof *t->cell);
	if (fread(t->text, 1, len, f) != len)
		len = 0;
	fclose(f);
	t->text[len] = '\0';
	for (p = t->text; *p;) {
		char *eol = strchr(p, '\n'), *next = eol ? eol + 1 : p + strlen(p);
		size_t cols = 0;

		if (eol)
			*eol = '\0';
		if (eol && eol > p && eol[-1] == '\r')
			eol[-1] = '\0';
		for (char *c = p; c; cols++) {
			char *comma = strchr(c, ',');

			if (n == cap)
				t->cell = realloc(t->cell, (cap *= 2) * sizeof *t->cell);
			if (comma)
				*comma = '\0';
			t->cell[n++] = c;
			c = comma ? comma + 1 : NULL;
		}
		if (!t->n_cols)
			t->n_cols = cols;
		p = next;
	}
	if (!t->n_cols)
		return -1;
	t->n_rows = n / t->n_cols - 1;
	return 0;
}

static long table_col(const struct table *t, const char *name)
{
	for (size_t c = 0; c < t->n_cols; c++)
		if (strcmp(t->cell[c], name) == 0)
			return (long)c;
	return -1;
}

/* Records-form dataset from columns of t; group_col NULL puts rows in
 * buckets of 5 (mining ignores buckets). */
static struct dataset *table_dataset(const struct table *t, const char *const *qi, size_t n_qi,
				     const char *sa, const char *group_col)
{
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, qi, n_qi, sa, &err);
	struct dataset *ds = NULL;
	long cols[DATASET_MAX_ATTRS], sc = table_col(t, sa);
	long gc = group_col ? table_col(t, group_col) : -1;
	const char *vals[DATASET_MAX_ATTRS];
	char group[32];

	for (size_t a = 0; a < n_qi; a++)
		cols[a] = table_col(t, qi[a]);
	for (size_t i = 0; b && i < t->n_rows; i++) {
		char **row = t->cell + (i + 1) * t->n_cols;

		for (size_t a = 0; a < n_qi; a++)
			vals[a] = row[cols[a]];
		snprintf(group, sizeof group, "%zu", i / 5);
		if (dataset_builder_add_record(b, vals, gc >= 0 ? row[gc] : group, row[sc], &err))
			fprintf(stderr, "row %zu: %s: %s\n", i, err.field, err.message);
	}
	if (!b || dataset_builder_finish(b, &ds, &err))
		fprintf(stderr, "dataset: %s: %s\n", err.field, err.message);
	dataset_builder_destroy(b);
	return ds;
}

/* ---- hand-computed lists ------------------------------------------------- */

/* "A=p,B=a => !y 0/3 s3": antecedent, s (negated for negative rules),
 * n(Qv,s)/n(Qv), support. */
static void rule_text(const struct dataset *ds, const struct rule *r, char *buf, size_t len)
{
	size_t pos = 0;

	buf[0] = '\0';
	for (uint32_t i = 0; i < r->n_terms; i++)
		pos += (size_t)snprintf(buf + pos, len - pos, "%s%s=%s", i ? "," : "",
					ds->attr_names[r->attr[i]],
					ds->attr_values[r->attr[i]].str[r->value[i]]);
	snprintf(buf + pos, len - pos, " => %s%s %llu/%llu s%llu",
		 r->source == RULE_NEGATIVE ? "!" : "", ds->sa_values.str[r->sa],
		 (unsigned long long)r->n_qv_s, (unsigned long long)r->n_qv,
		 (unsigned long long)r->support);
}

static void mine_expect(const struct dataset *ds, size_t kp, size_t kn, uint64_t ms, size_t t,
			const char *const *want, size_t n_want)
{
	struct miner_options o;
	struct knowledge k;
	struct pm_error err = {0};
	char buf[256];

	miner_options_init(&o);
	o.positive = kp;
	o.negative = kn;
	o.min_support = ms;
	o.qi_attributes = t;
	knowledge_init(&k);
	CHECK(miner_run(ds, &o, &k, &err) == PM_OK);
	CHECK(k.n == n_want);
	if (k.n != n_want)
		fprintf(stderr, "  K+=%zu K-=%zu ms=%llu T=%zu: got %zu rules, expected %zu\n", kp,
			kn, (unsigned long long)ms, t, k.n, n_want);
	for (size_t i = 0; i < k.n && i < n_want; i++) {
		const struct rule *r = &k.rules[i];

		rule_text(ds, r, buf, sizeof buf);
		CHECK_STR(buf, want[i]);
		CHECK(r->lo == r->hi && r->lo == (double)r->n_qv_s / (double)r->n_qv);
		CHECK(r->source == (strstr(want[i], "!") ? RULE_NEGATIVE : RULE_POSITIVE));
		CHECK(r->n_qv == knowledge_count_qv(ds, r));
	}
	knowledge_finish(&k);
}

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* Every candidate with single-attribute antecedents, min_support 2. Ties:
 * A=p/B=a (attribute index before value: "a" < "p"), C=k !z before A=p !y
 * (support), A=p !z before A=q !x (antecedent before s), A=p !y before
 * A=p !z (s). */
static void test_single_attribute(const struct dataset *ds)
{
	static const char *const want[] = {
	    "A=p => x 3/3 s3",	"B=a => x 3/3 s3",  "B=v => y 2/2 s2",	"A=q => y 2/3 s2",
	    "C=k => x 3/5 s3",	"C=k => y 2/5 s2",  "C=k => !z 0/5 s5", "A=p => !y 0/3 s3",
	    "A=p => !z 0/3 s3", "A=q => !x 0/3 s3", "B=a => !y 0/3 s3", "B=a => !z 0/3 s3",
	    "A=r => !z 0/2 s2", "B=v => !x 0/2 s2", "B=v => !z 0/2 s2", "A=q => !z 1/3 s2",
	    "B=w => !x 1/3 s2", "B=w => !y 1/3 s2", "B=w => !z 1/3 s2", "C=m => !x 1/3 s2",
	    "C=m => !y 1/3 s2", "C=m => !z 1/3 s2", "C=k => !y 2/5 s3", "C=k => !x 3/5 s2",
	};
	static const char *const top[] = {
	    "A=p => x 3/3 s3",	"B=a => x 3/3 s3",  "C=k => !z 0/5 s5",
	    "A=p => !y 0/3 s3", "A=p => !z 0/3 s3", "A=q => !x 0/3 s3",
	};

	mine_expect(ds, 100, 100, 2, 1, want, N_OF(want));
	mine_expect(ds, 2, 4, 2, 1, top, N_OF(top));
}

/* All subsets, min_support 3: the proper prefix A=p sorts before A=p,B=a,
 * and A=p,B=a before B=a (attribute index of the first pair). */
static void test_all_subsets(const struct dataset *ds)
{
	static const char *const want[] = {
	    "A=p => x 3/3 s3",	"A=p,B=a => x 3/3 s3",	"B=a => x 3/3 s3",
	    "C=k => x 3/5 s3",	"C=k => !z 0/5 s5",	"A=p => !y 0/3 s3",
	    "A=p => !z 0/3 s3", "A=p,B=a => !y 0/3 s3", "A=p,B=a => !z 0/3 s3",
	    "A=q => !x 0/3 s3", "B=a => !y 0/3 s3",	"B=a => !z 0/3 s3",
	    "C=k => !y 2/5 s3",
	};
	static const char *const top5[] = {
	    "A=p => x 3/3 s3",	"A=p,B=a => x 3/3 s3",	"B=a => x 3/3 s3",
	    "C=k => x 3/5 s3",	"C=k => !z 0/5 s5",	"A=p => !y 0/3 s3",
	    "A=p => !z 0/3 s3", "A=p,B=a => !y 0/3 s3", "A=p,B=a => !z 0/3 s3",
	};
	static const char *const ms4[] = {"C=k => !z 0/5 s5"};

	/* K larger than the number of candidates: all of them */
	mine_expect(ds, 10, 100, 3, 0, want, N_OF(want));
	mine_expect(ds, 10, 5, 3, 0, top5, N_OF(top5));
	/* min_support filtering */
	mine_expect(ds, 10, 10, 4, 0, ms4, N_OF(ms4));
	mine_expect(ds, 10, 10, 6, 0, NULL, 0);
}

/* qi_attributes T: exactly T attributes. For T = 2, A=p,C=k beats
 * A=q,B=v on the value of the first pair although B comes before C. */
static void test_fixed_size(const struct dataset *ds)
{
	static const char *const t2[] = {
	    "A=p,B=a => x 3/3 s3",
	    "A=p,C=k => x 2/2 s2",
	    "A=q,B=v => y 2/2 s2",
	    "B=a,C=k => x 2/2 s2",
	};
	static const char *const t3[] = {
	    "A=p,B=a,C=k => x 2/2 s2",	"A=p,B=a,C=m => x 1/1 s1",  "A=p,B=a,C=k => !y 0/2 s2",
	    "A=p,B=a,C=k => !z 0/2 s2", "A=r,B=w,C=k => !z 0/2 s2",
	};

	mine_expect(ds, 100, 0, 2, 2, t2, N_OF(t2));
	mine_expect(ds, 2, 3, 1, 3, t3, N_OF(t3));
}

static void test_errors(const struct dataset *ds)
{
	static const char *const attrs[] = {"A"}, *const v[] = {"p"};
	struct miner_options o;
	struct knowledge k;
	struct pm_error err = {0};
	struct dataset_builder *b;
	struct dataset *pub = NULL;
	struct rule r = {0};

	miner_options_init(&o);
	CHECK(o.positive == 0 && o.negative == 0 && o.min_support == 3 && o.qi_attributes == 0);
	knowledge_init(&k);
	CHECK(knowledge_append(&k, &r, &err) == PM_OK);
	/* nothing asked: nothing mined, existing rows kept */
	CHECK(miner_run(ds, &o, &k, &err) == PM_OK && k.n == 1);
	o.positive = 5;
	o.qi_attributes = 4;
	CHECK(miner_run(ds, &o, &k, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "mine.qi_attributes");
	CHECK_STR(err.message, "is 4, but the dataset has only 3 QI attributes");
	o.qi_attributes = 3;
	o.min_support = 1;
	CHECK(miner_run(ds, &o, &k, &err) == PM_OK && k.n == 6); /* appended after row 0 */
	CHECK(k.rules[0].source == RULE_USER && k.rules[1].source == RULE_POSITIVE);

	b = dataset_builder_create(NULL, attrs, 1, "S", &err);
	CHECK(b && dataset_builder_add_qit(b, v, "1", &err) == PM_OK);
	CHECK(b && dataset_builder_add_st(b, "1", "x", 1, &err) == PM_OK);
	CHECK(b && dataset_builder_finish(b, &pub, &err) == PM_OK);
	dataset_builder_destroy(b);
	memset(&err, 0, sizeof err);
	if (pub) {
		CHECK(miner_run(pub, &o, &k, &err) == PM_ERR_INPUT);
		CHECK_STR(err.field, "mine");
		CHECK_STR(err.message, "mining needs the original records (records form); this "
				       "dataset is published form");
	}
	dataset_destroy(pub);
	knowledge_finish(&k);
}

/* miner_run_counted reports what it appended: K when that many rules
 * exist, all of them when fewer do. */
static void test_found(const struct dataset *ds)
{
	struct miner_options o;
	struct miner_found f = {7, 7};
	struct knowledge k;
	struct pm_error err = {0};
	size_t pos = 0;

	miner_options_init(&o);
	o.positive = o.negative = 2;
	o.min_support = 1;
	knowledge_init(&k);
	CHECK(miner_run_counted(ds, &o, &k, &f, &err) == PM_OK);
	CHECK(f.positive == 2 && f.negative == 2 && k.n == 4);
	knowledge_finish(&k);
	o.positive = o.negative = 100000;
	CHECK(miner_run_counted(ds, &o, &k, &f, &err) == PM_OK);
	for (size_t i = 0; i < k.n; i++)
		pos += k.rules[i].source == RULE_POSITIVE;
	CHECK(f.positive == pos && f.negative == k.n - pos);
	CHECK(f.positive > 2 && f.positive < 100000 && f.negative > 2 && f.negative < 100000);
	knowledge_finish(&k);
	/* nothing asked, or an error: zeros */
	o.positive = o.negative = 0;
	CHECK(miner_run_counted(ds, &o, &k, &f, &err) == PM_OK);
	CHECK(f.positive == 0 && f.negative == 0 && k.n == 0);
	o.positive = 3;
	o.qi_attributes = 9;
	f.positive = 7;
	CHECK(miner_run_counted(ds, &o, &k, &f, &err) == PM_ERR_INPUT);
	CHECK(f.positive == 0 && f.negative == 0);
	knowledge_finish(&k);
}

/* ---- brute force --------------------------------------------------------- */

/* A candidate over plain strings: antecedent = attributes of mask with the
 * values of record rec. */
struct bcand {
	unsigned mask;
	size_t rec;
	const char *s;
	uint64_t num, den;
};

struct btable {
	size_t n, na;
	const char *(*qi)[8]; /* n rows */
	const char **sa;
};

static const struct btable *bt; /* context of bcand_cmp (qsort has none) */

static int bcand_cmp(const void *pa, const void *pb)
{
	const struct bcand *a = pa, *b = pb;
	unsigned ma = a->mask, mb = b->mask;
	int c;

	/* a->num / a->den vs b->num / b->den, exactly */
	if (a->num * b->den != b->num * a->den)
		return a->num * b->den > b->num * a->den ? -1 : 1;
	if (a->num != b->num)
		return a->num > b->num ? -1 : 1;
	for (size_t i = 0; i < bt->na; i++) {
		int ia = (ma >> i) & 1, ib = (mb >> i) & 1;

		if (ia != ib) {
			/* the other one either has no pair left (a proper prefix,
			 * first) or its next pair has a larger index */
			unsigned rest = ia ? mb >> i : ma >> i;

			if (!rest)
				return ia ? 1 : -1;
			return ia ? -1 : 1;
		}
		if (ia && (c = strcmp(bt->qi[a->rec][i], bt->qi[b->rec][i])) != 0)
			return c;
	}
	return strcmp(a->s, b->s);
}

static int same_antecedent(const struct btable *t, unsigned mask, size_t i, size_t j)
{
	for (size_t a = 0; a < t->na; a++)
		if ((mask >> a & 1) && strcmp(t->qi[i][a], t->qi[j][a]) != 0)
			return 0;
	return 1;
}

/* Every candidate of one kind (neg 0/1), in SPEC order; returns the count. */
static size_t brute(const struct btable *t, const char *const *dom, size_t n_dom, uint64_t ms,
		    size_t tsize, int neg, struct bcand *out)
{
	size_t n_out = 0;

	for (unsigned mask = 1; mask < 1u << t->na; mask++) {
		if (tsize && (size_t)__builtin_popcount(mask) != tsize)
			continue;
		for (size_t i = 0; i < t->n; i++) {
			size_t j, n = 0;

			for (j = 0; j < i && !same_antecedent(t, mask, i, j); j++)
				;
			if (j < i)
				continue; /* antecedent seen at record j */
			for (j = 0; j < t->n; j++)
				n += (size_t)same_antecedent(t, mask, i, j);
			for (size_t s = 0; s < n_dom; s++) {
				uint64_t c = 0, num;

				for (j = 0; j < t->n; j++)
					c += same_antecedent(t, mask, i, j) &&
					     strcmp(t->sa[j], dom[s]) == 0;
				num = neg ? n - c : c;
				if (num >= ms)
					out[n_out++] = (struct bcand){mask, i, dom[s], num, n};
			}
		}
	}
	bt = t;
	qsort(out, n_out, sizeof *out, bcand_cmp);
	return n_out;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static size_t random_compared; /* rules checked by the brute force */

static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Compares miner output k.rules[first ..] with the brute-force list;
 * returns the number of mismatches (the first one is printed). */
static size_t compare(const struct dataset *ds, const struct btable *t, const struct knowledge *k,
		      size_t first, const struct bcand *want, size_t n_want)
{
	size_t bad = 0;

	for (size_t i = 0; i < n_want; i++) {
		const struct rule *r = &k->rules[first + i];
		const struct bcand *w = &want[i];
		unsigned mask = 0;
		int ok = w->den == r->n_qv && w->num == r->support &&
			 strcmp(w->s, ds->sa_values.str[r->sa]) == 0;

		for (uint32_t j = 0; j < r->n_terms; j++) {
			mask |= 1u << r->attr[j];
			ok &= strcmp(ds->attr_values[r->attr[j]].str[r->value[j]],
				     t->qi[w->rec][r->attr[j]]) == 0;
		}
		ok &= mask == w->mask;
		if (!ok && bad++ == 0) {
			char buf[256];

			rule_text(ds, r, buf, sizeof buf);
			fprintf(stderr,
				"  rank %zu: got %s, expected mask %x rec %zu s %s %llu/%llu\n", i,
				buf, w->mask, w->rec, w->s, (unsigned long long)w->num,
				(unsigned long long)w->den);
		}
	}
	return bad;
}

/* One random table: na attributes, n records, few values of varied length
 * and case (bytewise order matters). Returns mismatches. */
static size_t random_case(struct bcand *cands)
{
	static const char *const alpha[] = {"a", "ab", "b", "B", "a b", "ba"};
	static const char *const sdom[] = {"x", "y", "Z", "xx", "w"};
	static const char *const names[] = {"a0", "a1", "a2", "a3", "a4"};
	const char *qi[40][8], *sa[40], *dom[40], *groups[] = {"1", "2", "3"};
	struct btable t = {1 + rnd(40), 1 + rnd(5), qi, sa};
	unsigned nv = 1 + rnd(6), ns = 1 + rnd(5);
	struct miner_options o;
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, names, t.na, "S", &err);
	struct dataset *ds = NULL;
	struct knowledge k;
	size_t n_dom = 0, np, nn, bad = 0;

	for (size_t i = 0; i < t.n; i++) {
		for (size_t a = 0; a < t.na; a++)
			qi[i][a] = alpha[rnd(nv)];
		sa[i] = sdom[rnd(ns)];
		dataset_builder_add_record(b, qi[i], groups[rnd(3)], sa[i], &err);
	}
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	for (size_t i = 0; i < t.n; i++) {
		size_t j;

		for (j = 0; j < n_dom && strcmp(dom[j], sa[i]) != 0; j++)
			;
		if (j == n_dom)
			dom[n_dom++] = sa[i];
	}
	qsort(dom, n_dom, sizeof *dom, str_cmp);
	miner_options_init(&o);
	o.min_support = rnd(5);
	o.qi_attributes = rnd(4) == 0 ? 0 : rnd((unsigned)t.na + 1);
	o.positive = rnd(4) == 0 ? 100000 : rnd(40);
	o.negative = rnd(4) == 0 ? 100000 : rnd(40);
	knowledge_init(&k);
	if (ds && miner_run(ds, &o, &k, &err) == PM_OK) {
		np = brute(&t, dom, n_dom, o.min_support, o.qi_attributes, 0, cands);
		np = np < o.positive ? np : o.positive;
		bad += compare(ds, &t, &k, 0, cands, np);
		nn = brute(&t, dom, n_dom, o.min_support, o.qi_attributes, 1, cands);
		nn = nn < o.negative ? nn : o.negative;
		bad += k.n == np + nn ? compare(ds, &t, &k, np, cands, nn) : 1;
		random_compared += np + nn;
		if (bad)
			fprintf(stderr,
				"  n=%zu na=%zu ms=%llu T=%zu K+=%zu K-=%zu: %zu rules, %zu+%zu "
				"expected\n",
				t.n, t.na, (unsigned long long)o.min_support, o.qi_attributes,
				o.positive, o.negative, k.n, np, nn);
	} else {
		bad++;
	}
	knowledge_finish(&k);
	dataset_destroy(ds);
	return bad;
}

static void test_random(void)
{
	struct bcand *cands = malloc(31 * 40 * 5 * sizeof *cands);
	size_t failed = 0;

	for (int i = 0; i < 400; i++)
		failed += random_case(cands) != 0;
	CHECK(failed == 0);
	CHECK(random_compared > 10000);
	printf("random tables: %zu rules matched the brute force\n", random_compared);
	free(cands);
}

/* ---- Adult --------------------------------------------------------------- */

/* SPEC order on rules of one kind, through the value strings. */
static int rule_cmp(const struct dataset *ds, const struct rule *a, const struct rule *b)
{
	uint32_t i;
	int c;

	if (a->support * b->n_qv != b->support * a->n_qv)
		return a->support * b->n_qv > b->support * a->n_qv ? -1 : 1;
	if (a->support != b->support)
		return a->support > b->support ? -1 : 1;
	for (i = 0; i < a->n_terms && i < b->n_terms; i++) {
		if (a->attr[i] != b->attr[i])
			return a->attr[i] < b->attr[i] ? -1 : 1;
		c = strcmp(ds->attr_values[a->attr[i]].str[a->value[i]],
			   ds->attr_values[b->attr[i]].str[b->value[i]]);
		if (c)
			return c;
	}
	if (a->n_terms != b->n_terms)
		return a->n_terms < b->n_terms ? -1 : 1;
	return strcmp(ds->sa_values.str[a->sa], ds->sa_values.str[b->sa]);
}

/* Mined rules are in strict order and their counts are right. */
static void check_adult_rules(const struct dataset *ds, const struct knowledge *k, size_t kp)
{
	size_t bad_order = 0, bad_count = 0;

	for (size_t i = 0; i < k->n; i++) {
		const struct rule *r = &k->rules[i];
		uint64_t n = 0, c = 0;

		if (i > 0 && i != kp && rule_cmp(ds, &k->rules[i - 1], r) >= 0)
			bad_order++;
		for (size_t j = 0; j < ds->n_records; j++) {
			if (!knowledge_matches(ds, r, ds->rec_tuple[j]))
				continue;
			n++;
			c += ds->rec_sa[j] == r->sa;
		}
		bad_count += n != r->n_qv || c != r->n_qv_s || r->support != (i < kp ? c : n - c) ||
			     r->support < 3;
	}
	CHECK(bad_order == 0);
	CHECK(bad_count == 0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void mine_adult(const struct dataset *ds, size_t kk, size_t t, int verify)
{
	struct miner_options o;
	struct knowledge k;
	struct pm_error err = {0};
	double t0;

	miner_options_init(&o);
	o.positive = o.negative = kk;
	o.qi_attributes = t;
	knowledge_init(&k);
	t0 = now();
	CHECK(miner_run(ds, &o, &k, &err) == PM_OK);
	printf("adult: K+=K-=%zu T=%zu: %zu rules in %.3f s\n", kk, t, k.n, now() - t0);
	CHECK(k.n == 2 * kk);
	if (verify)
		check_adult_rules(ds, &k, kk);
	if (k.n > kk) {
		char buf[512];

		knowledge_describe(ds, &k.rules[0], buf, sizeof buf);
		printf("  best positive: %s\n", buf);
		knowledge_describe(ds, &k.rules[kk], buf, sizeof buf);
		printf("  best negative: %s\n", buf);
	}
	knowledge_finish(&k);
}

static void test_adult(const char *data_dir)
{
	static const char *const qi[] = {"age",	 "type_employer", "marital", "relationship",
					 "race", "sex",		  "country", "education"};
	const char *paths[] = {"../../../shared/data/adult/adult.csv",
			       "/work/shared/data/adult/adult.csv"};
	char path[4096];
	struct table t;
	struct dataset *ds;
	double t0;

	snprintf(path, sizeof path, "%s/%s", data_dir, paths[0]);
	if (table_read(path, &t) != 0 && table_read(paths[1], &t) != 0) {
		printf("adult.csv not found, skipping the timing\n");
		return;
	}
	t0 = now();
	ds = table_dataset(&t, qi, 8, "occupation", NULL);
	CHECK(ds != NULL);
	if (ds) {
		printf("adult: %zu records, %zu distinct tuples, %zu SA values (built in %.3f s)\n",
		       ds->n_records, ds->n_tuples, ds->sa_values.n, now() - t0);
		mine_adult(ds, 50, 0, 1);
		mine_adult(ds, 500, 0, 1);
		mine_adult(ds, 5000, 0, 0);
		mine_adult(ds, 500, 2, 1);
	}
	dataset_destroy(ds);
	table_free(&t);
}

/* Counts the polls; stops at the limit in ctx. */
static int stop_after(void *ctx)
{
	int *left = ctx;

	return --*left < 0;
}

/* A table of 8 QI attributes (255 attribute sets: polled 3 times). */
static struct dataset *eight(void)
{
	static const char *const names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create(NULL, names, 8, "s", &err);
	struct dataset *ds = NULL;
	char v[8][8], g[8];

	for (int i = 0; b && i < 40; i++) {
		const char *qi[8];

		for (int a = 0; a < 8; a++) {
			snprintf(v[a], sizeof v[a], "%d", (i * (a + 3)) % (a + 2));
			qi[a] = v[a];
		}
		snprintf(g, sizeof g, "%d", i / 4);
		CHECK(dataset_builder_add_record(b, qi, g, i % 3 ? "x" : "y", &err) == PM_OK);
	}
	CHECK(b && dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

/* A stop asked between attribute sets: PM_ERR_CANCELLED naming "mine",
 * nothing appended; one that never asks changes nothing. */
static void test_stop(void)
{
	struct dataset *ds = eight();
	struct miner_options o;
	struct knowledge k, want;
	struct pm_error err = {0};
	int left = 1;

	miner_options_init(&o);
	o.positive = o.negative = 5;
	o.min_support = 1;
	knowledge_init(&want);
	knowledge_init(&k);
	CHECK(ds && miner_run(ds, &o, &want, &err) == PM_OK && want.n == 10);
	o.stop = stop_after;
	o.stop_ctx = &left;
	CHECK(ds && miner_run(ds, &o, &k, &err) == PM_ERR_CANCELLED);
	CHECK(left < 0); /* polled twice: went on once, then stopped */
	CHECK_STR(err.field, "mine");
	CHECK(k.n == 0);
	left = 1 << 30;
	CHECK(ds && miner_run(ds, &o, &k, &err) == PM_OK && k.n == want.n);
	for (size_t i = 0; i < k.n && i < want.n; i++)
		CHECK(!memcmp(&k.rules[i], &want.rules[i], sizeof k.rules[i]));
	knowledge_finish(&k);
	knowledge_finish(&want);
	dataset_destroy(ds);
}

/* vagueness e turns each mined rule P = c into max(0, c - e) <= P <=
 * min(1, c + e), the same rules in the same order, clipped at 0 and 1 */
static void test_vagueness(const struct dataset *ds)
{
	struct miner_options o;
	struct knowledge exact, vague;
	struct pm_error err = {0};

	knowledge_init(&exact);
	knowledge_init(&vague);
	miner_options_init(&o);
	o.positive = o.negative = 100;
	o.min_support = 2;
	o.qi_attributes = 1;
	CHECK(miner_run(ds, &o, &exact, &err) == PM_OK);
	o.vagueness = 0.25;
	CHECK(miner_run(ds, &o, &vague, &err) == PM_OK);
	CHECK(exact.n == vague.n && exact.n > 0);
	for (size_t i = 0; i < exact.n && i < vague.n; i++) {
		double c = exact.rules[i].lo;

		CHECK(exact.rules[i].hi == c && vague.rules[i].sa == exact.rules[i].sa);
		CHECK(vague.rules[i].lo == fmax(0, c - 0.25) &&
		      vague.rules[i].hi == fmin(1, c + 0.25));
		CHECK(vague.rules[i].n_qv == exact.rules[i].n_qv);
	}
	knowledge_finish(&exact);
	knowledge_finish(&vague);
}

int main(void)
{
	const char *dir = getenv("PMAXENT_TEST_DATA");
	char path[4096];
	struct table t;
	struct dataset *ds = NULL;
	static const char *const qi[] = {"A", "B", "C"};

	if (!dir)
		dir = "tests/data";
	snprintf(path, sizeof path, "%s/miner_small.csv", dir);
	CHECK(table_read(path, &t) == 0);
	if (t.text)
		ds = table_dataset(&t, qi, 3, "S", "group");
	CHECK(ds != NULL);
	if (ds) {
		test_single_attribute(ds);
		test_all_subsets(ds);
		test_fixed_size(ds);
		test_errors(ds);
		test_found(ds);
		test_vagueness(ds);
	}
	dataset_destroy(ds);
	table_free(&t);
	test_random();
	test_stop();
	test_adult(dir);
	return check_done();
}
