/* The constraint system of Section 5 on the Figure 1 table: cell layout,
 * QI/SA rows with one SA row dropped per bucket, knowledge rows and their
 * right-hand sides, the bucket index, and counts. */
#include <stdint.h>

#include "check.h"
#include "constraints.h"
#include "random_table.h"

/* Figure 1 (tests/data/figure1.csv) built in code: group, gender, degree,
 * disease. */
static const char *const rows[8][4] = {
    {"1", "male", "college", "Flu"},
    {"1", "male", "college", "HIV"},
    {"1", "female", "junior", "Breast Cancer"},
    {"1", "female", "college", "Breast Cancer"},
    {"2", "male", "college", "Lung Cancer"},
    {"2", "female", "college", "Flu"},
    {"3", "male", "graduate", "Flu"},
    {"3", "female", "graduate", "Breast Cancer"},
};

static struct dataset *figure1(void)
{
	static const char *const attrs[] = {"gender", "degree"};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create("fig1", attrs, 2, "disease", &err);
	struct dataset *ds = NULL;

	for (int r = 0; r < 8; r++)
		CHECK(dataset_builder_add_record(b, &rows[r][1], rows[r][0], rows[r][3], &err) ==
		      PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

/* Sum of rhs over rows of a kind. */
/* The knowledge rows through bucket b, each once, ascending, into out
 * (n_rows flags of scratch in seen, left clear); returns how many. */
static size_t bucket_rows(const struct invariants *inv, size_t b, uint8_t *seen, uint32_t *out)
{
	size_t m = 0;

	for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++) {
		size_t n;
		const uint32_t *rows = invariants_cell_rows(inv, c, &n);

		for (size_t e = 0; e < n; e++)
			seen[rows[e]] = 1;
	}
	for (size_t r = inv->n_qi_rows + inv->n_sa_rows; r < inv->n_rows; r++)
		if (seen[r]) {
			seen[r] = 0;
			out[m++] = (uint32_t)r;
		}
	return m;
}

/* Every cell's rows (its slot's) against the rows' cells: a knowledge
 * row holds cell c exactly when it is among c's, and a bucket is
 * touched exactly when one of its cells has a row. */
static void check_cell_rows(const struct invariants *inv)
{
	size_t first = inv->n_qi_rows + inv->n_sa_rows, entries = 0, through = 0;
	int ok = 1;

	for (size_t r = first; r < inv->n_rows; r++)
		for (size_t e = inv->row_off[r]; e < inv->row_off[r + 1]; e++) {
			size_t n, hit = 0;
			const uint32_t *rows = invariants_cell_rows(inv, inv->row_cell[e], &n);

			for (size_t x = 0; x < n; x++)
				hit += rows[x] == r && (x == 0 || rows[x - 1] < rows[x]);
			ok &= hit == 1;
			entries++;
		}
	for (size_t c = 0; c < inv->n_cells; c++) {
		size_t n;

		invariants_cell_rows(inv, c, &n);
		through += n;
	}
	CHECK(ok);
	CHECK(entries == through); /* and no row through a cell it misses */
	for (size_t b = 0, t = 0; b < inv->n_groups; b++) {
		int any = 0;

		for (size_t c = inv->cell_off[b]; c < inv->cell_off[b + 1]; c++) {
			size_t n;

			invariants_cell_rows(inv, c, &n);
			any |= n > 0;
		}
		CHECK(invariants_touched(inv, b) == any);
		if (any)
			CHECK(t < inv->n_touched && inv->touched[t++] == b);
	}
}

static double rhs_sum(const struct invariants *inv, enum row_kind kind)
{
	double s = 0;

	for (size_t i = 0; i < inv->n_rows; i++)
		if (inv->row_kind[i] == kind)
			s += inv->rhs[i];
	return s;
}

static void test_layout(const struct dataset *ds)
{
	struct invariants inv;
	struct pm_error err = {0};

	CHECK(invariants_build(ds, NULL, &inv, &err) == PM_OK);
	CHECK(inv.n_groups == 3);
	/* bucket 1: 3 q x 3 s; buckets 2, 3: 2 x 2 */
	CHECK(inv.n_cells == 17);
	CHECK(inv.cell_off[0] == 0 && inv.cell_off[1] == 9 && inv.cell_off[2] == 13);
	CHECK(inv.cell_off[3] == 17);
	/* q-major: cells 0..2 share the first q of bucket 1 */
	CHECK(inv.cell_tuple[0] == inv.cell_tuple[2] && inv.cell_tuple[2] != inv.cell_tuple[3]);
	CHECK(inv.cell_sa[0] == inv.cell_sa[3]);
	CHECK(inv.n_qi_rows == 7);
	CHECK(inv.n_sa_rows == 2 + 1 + 1); /* h_b - 1 per bucket */
	CHECK(inv.n_knowledge_rows == 0);
	CHECK(inv.n_rows == 11);
	CHECK_NEAR(rhs_sum(&inv, ROW_QI), 8, 0);
	/* kept SA rows: bucket 1 drops one of its values */
	CHECK(rhs_sum(&inv, ROW_SA) < 8);
	for (size_t i = 0; i < inv.n_qi_rows; i++)
		CHECK(inv.row_kind[i] == ROW_QI);
	/* every cell in exactly one QI row */
	{
		int seen[17] = {0}, ok = 1;

		for (size_t i = 0; i < inv.n_qi_rows; i++)
			for (size_t e = inv.row_off[i]; e < inv.row_off[i + 1]; e++)
				seen[inv.row_cell[e]]++;
		for (int c = 0; c < 17; c++)
			ok &= seen[c] == 1;
		CHECK(ok);
	}
	check_cell_rows(&inv); /* no knowledge touches any bucket */
	CHECK(inv.n_touched == 0);
	/* |Q| |S| |B| - cells = 5 * 4 * 3 - 17 */
	CHECK(inv.zero_invariants == 43);
	invariants_finish(&inv);
}

static void test_knowledge_rows(const struct dataset *ds)
{
	const char *attr[] = {"gender"}, *male[] = {"male"}, *deg[] = {"degree"};
	const char *college[] = {"college"};
	struct knowledge k;
	struct invariants inv;
	struct pm_error err = {0};
	struct rule mined = {0};
	size_t first;

	knowledge_init(&k);
	/* P(Breast Cancer | male) = 0: male cells with BC exist in bucket 1
	 * (male college) and bucket 3 (male graduate) */
	CHECK(knowledge_add_user(&k, ds, attr, male, 1, "Breast Cancer", 1, 0, 0, 0, 0, 0, "rules",
				 &err) == PM_OK);
	/* P(Flu | college) = 0.4: n(college) = 5, rhs 2 records */
	CHECK(knowledge_add_user(&k, ds, deg, college, 1, "Flu", 1, 0.4, 0, 0, 0, 0, "rules",
				 &err) == PM_OK);
	/* a mined rule carries its exact count: rhs = n_qv_s, not lo * n_qv */
	mined = k.rules[1];
	mined.source = RULE_POSITIVE;
	mined.n_qv = 5;
	mined.n_qv_s = 2;
	mined.lo = mined.hi = 2.0 / 5;
	CHECK(knowledge_append(&k, &mined, &err) == PM_OK);
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	first = inv.n_qi_rows + inv.n_sa_rows;
	CHECK(inv.n_knowledge_rows == 3);
	CHECK(inv.row_kind[first] == ROW_KNOWLEDGE && inv.row_ref[first + 1] == 1);
	CHECK(inv.row_off[first + 1] - inv.row_off[first] == 2);
	CHECK_NEAR(inv.rhs[first], 0, 0);
	/* Flu cells of college tuples: (male, college) in buckets 1 and 2,
	 * (female, college) in bucket 1 and 2 */
	CHECK(inv.row_off[first + 2] - inv.row_off[first + 1] == 4);
	CHECK_NEAR(inv.rhs[first + 1], 2, 1e-12);
	CHECK(inv.rhs[first + 2] == 2);
	/* rows through the buckets: bucket 1 has all three rows, bucket 2
	 * the college ones, bucket 3 only the BC rule */
	{
		uint8_t seen[64] = {0};
		uint32_t rows[64];

		CHECK(inv.n_rows <= 64);
		CHECK(bucket_rows(&inv, 0, seen, rows) == 3);
		CHECK(bucket_rows(&inv, 1, seen, rows) == 2);
		CHECK(bucket_rows(&inv, 2, seen, rows) == 1 && rows[0] == first);
	}
	check_cell_rows(&inv);
	CHECK(inv.n_touched == 3 && inv.touched[0] == 0 && inv.touched[1] == 1 &&
	      inv.touched[2] == 2);
	invariants_finish(&inv);

	/* an interval rule: rhs its lower bound, hi its upper one, in
	 * records; every other row has hi = rhs */
	k.rules[0].hi = k.rules[0].lo + 0.5;
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	CHECK(k.rules[0].n_qv > 0 &&
	      inv.hi[first] == inv.rhs[first] + 0.5 * (double)k.rules[0].n_qv);
	for (size_t r = 0; r < inv.n_rows; r++)
		CHECK(r == first || inv.hi[r] == inv.rhs[r]);
	invariants_finish(&inv);
	knowledge_finish(&k);
}

/* Knowledge rows on random tables and random rules (0 to all terms) equal
 * the definition scanned cell by cell: every cell (q, s, b) with q
 * matching the rule, ascending, and rhs = lo * n(Qv). Large tables give
 * rows of 48 cells and more, sorted by radix rather than by insertion;
 * returns how many such rows there were. */
static size_t test_random_rows(uint64_t seed, int large)
{
	static const struct random_shape big = {.attrs = {2, 3},
						.values = {2, 4},
						.sa = {2, 6},
						.records = {300, 900},
						.bucket = {2, 6}};
	uint64_t rng = seed;
	struct dataset *ds = large ? random_dataset_shaped(&rng, &big) : random_dataset(&rng);
	size_t long_rows = 0;
	struct knowledge k;
	struct invariants inv;
	struct pm_error err = {0};

	knowledge_init(&k);
	for (size_t i = 0; i < 6; i++) {
		struct rule r = {.sa = (uint32_t)rng_in(&rng, 0, ds->sa_values.n - 1)};

		for (uint32_t a = 0; a < ds->n_attrs; a++)
			if (rng_in(&rng, 0, 1)) {
				r.attr[r.n_terms] = a;
				r.value[r.n_terms++] =
				    (uint32_t)rng_in(&rng, 0, ds->attr_values[a].n - 1);
			}
		r.lo = r.hi = 0.25 * (double)rng_in(&rng, 0, 4);
		r.n_qv = knowledge_count_qv(ds, &r);
		CHECK(knowledge_append(&k, &r, &err) == PM_OK);
	}
	CHECK(invariants_build(ds, &k, &inv, &err) == PM_OK);
	/* the bucket accessors: n(q, b) and n(s, b), the dropped last s too */
	for (size_t b = 0; b < ds->n_groups; b++) {
		CHECK(invariants_bucket_g(&inv, b) == ds->bq_off[b + 1] - ds->bq_off[b]);
		for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++)
			CHECK(invariants_qi_count(&inv, b, i - ds->bq_off[b]) == ds->bq_count[i]);
		for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
			CHECK(invariants_sa_count(&inv, b, j - ds->bs_off[b]) == ds->bs_count[j]);
	}
	for (size_t i = 0; i < k.n; i++) {
		size_t row = inv.n_qi_rows + inv.n_sa_rows + i, e = inv.row_off[row];
		uint64_t n_qv = 0;

		for (uint32_t q = 0; q < ds->n_tuples; q++)
			if (knowledge_matches(ds, &k.rules[i], q))
				n_qv += ds->tuple_count[q];
		/* the row's cells: every (q ~ Qv, s, b), ascending */
		for (size_t c = 0; c < inv.n_cells; c++)
			if (inv.cell_sa[c] == k.rules[i].sa &&
			    knowledge_matches(ds, &k.rules[i], inv.cell_tuple[c]))
				CHECK(e < inv.row_off[row + 1] && inv.row_cell[e++] == c);
		CHECK(e == inv.row_off[row + 1]);
		CHECK_NEAR(inv.rhs[row], k.rules[i].lo * (double)n_qv, 1e-12);
		long_rows += inv.row_off[row + 1] - inv.row_off[row] >= 48;
	}
	check_cell_rows(&inv);
	invariants_finish(&inv);
	knowledge_finish(&k);
	dataset_destroy(ds);
	return long_rows;
}

/* The per-bucket layout, the tuples' rows and slots on random tables,
 * against their definitions: rows of bucket b are its QI rows then SA
 * rows; a tuple's rows are every bucket holding it, ascending; its slots
 * the distinct values of those buckets, ascending; a cell's slot is its
 * tuple's slot of its value; the slots with records, and their counts. */
static void test_random_index(uint64_t seed)
{
	uint64_t rng = seed;
	struct dataset *ds = random_dataset(&rng);
	struct invariants inv;
	struct pm_error err = {0};

	CHECK(invariants_build(ds, NULL, &inv, &err) == PM_OK);
	for (size_t b = 0; b < ds->n_groups; b++) {
		size_t g = inv.qi_row0[b + 1] - inv.qi_row0[b], h = inv.bucket_h[b];

		CHECK(g == ds->bq_off[b + 1] - ds->bq_off[b] &&
		      g * h == inv.cell_off[b + 1] - inv.cell_off[b]);
		CHECK(inv.sa_row0[b + 1] - inv.sa_row0[b] == h - 1);
		CHECK(inv.row_ref[inv.qi_row0[b]] == b && inv.row_kind[inv.qi_row0[b]] == ROW_QI);
		CHECK(h < 2 ||
		      (inv.row_ref[inv.sa_row0[b]] == b && inv.row_kind[inv.sa_row0[b]] == ROW_SA));
		CHECK(inv.bucket_n[b] == ds->group_size[b]);
	}
	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		size_t o = inv.occ_off[q], s0 = inv.slot_off[q], e = inv.rec_off[q];
		uint8_t has[8] = {0};

		for (size_t b = 0; b < ds->n_groups; b++)
			for (size_t i = ds->bq_off[b]; i < ds->bq_off[b + 1]; i++) {
				if (ds->bq_tuple[i] != q)
					continue;
				CHECK(o < inv.occ_off[q + 1] && inv.occ_bucket[o] == b);
				CHECK(inv.occ_count[o] == ds->bq_count[i]);
				CHECK(inv.occ_cell[o++] ==
				      inv.cell_off[b] + (i - ds->bq_off[b]) * inv.bucket_h[b]);
				for (size_t j = ds->bs_off[b]; j < ds->bs_off[b + 1]; j++)
					has[ds->bs_value[j]] = 1;
			}
		CHECK(o == inv.occ_off[q + 1]);
		for (uint32_t s = 0; s < ds->sa_values.n; s++) {
			uint32_t n = 0;

			if (!has[s])
				continue;
			CHECK(s0 < inv.slot_off[q + 1] && inv.slot_sa[s0] == s);
			for (size_t r = 0; r < ds->n_records; r++)
				n += ds->rec_tuple[r] == q && ds->rec_sa[r] == s;
			CHECK(n == 0 || (e < inv.rec_off[q + 1] && inv.rec_slot[e] == s0 &&
					 inv.rec_count[e++] == n));
			s0++;
		}
		CHECK(s0 == inv.slot_off[q + 1] && e == inv.rec_off[q + 1]);
	}
	for (size_t c = 0; c < inv.n_cells; c++)
		CHECK(inv.slot_sa[inv.cell_slot[c]] == inv.cell_sa[c] &&
		      inv.cell_slot[c] >= inv.slot_off[inv.cell_tuple[c]] &&
		      inv.cell_slot[c] < inv.slot_off[inv.cell_tuple[c] + 1]);
	invariants_finish(&inv);
	dataset_destroy(ds);
}

int main(void)
{
	struct dataset *ds = figure1();

	test_layout(ds);
	test_knowledge_rows(ds);
	dataset_destroy(ds);
	size_t long_rows = 0;

	for (uint64_t seed = 1; seed <= 300; seed++)
		test_random_rows(0x1a7e0000 + seed, 0);
	for (uint64_t seed = 1; seed <= 20; seed++)
		long_rows += test_random_rows(0x1a7f0000 + seed, 1);
	CHECK(long_rows > 20);
	for (uint64_t seed = 1; seed <= 200; seed++)
		test_random_index(0x1d700000 + seed);
	return check_done();
}
