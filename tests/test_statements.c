/* statements.c: named people and statements (SPEC 3.1), what they store
 * and every input error, with its exact field and message. */
#include "check.h"
#include "constraints.h"

/* gender, degree -> disease; 8 records in buckets g1-g3. Tuples:
 * (female, college) 2 records (g1, g2), (female, junior) 1 (g1),
 * (male, college) 2 (g1, g2), (male, junior) 2 (g2, g3), (male,
 * graduate) 1 (g3): no female graduate. */
static struct dataset *make_dataset(void)
{
	static const char *const attrs[] = {"gender", "degree"};
	static const char *const rows[][4] = {
	    {"female", "college", "g1", "Flu"}, {"female", "junior", "g1", "Breast Cancer"},
	    {"male", "college", "g1", "HIV"},	{"male", "college", "g2", "Flu"},
	    {"male", "junior", "g2", "HIV"},	{"female", "college", "g2", "Cold"},
	    {"male", "junior", "g3", "Flu"},	{"male", "graduate", "g3", "Cold"},
	};
	struct pm_error err = {0};
	struct dataset_builder *b = dataset_builder_create("s", attrs, 2, "disease", &err);
	struct dataset *ds = NULL;

	CHECK(b != NULL);
	if (!b)
		return NULL;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		CHECK(dataset_builder_add_record(b, rows[i], rows[i][2], rows[i][3], &err) ==
		      PM_OK);
	CHECK(dataset_builder_finish(b, &ds, &err) == PM_OK);
	dataset_builder_destroy(b);
	return ds;
}

static void check_error(enum pm_status st, const struct pm_error *err, const char *field,
			const char *message)
{
	CHECK(st == PM_ERR_INPUT);
	CHECK(err->status == PM_ERR_INPUT);
	CHECK_STR(err->field, field);
	CHECK_STR(err->message, message);
}

/* Adds a person as individuals[k->n_people]. */
static enum pm_status person(struct knowledge *k, const struct dataset *ds, const char *name,
			     const char *gender, const char *degree, const char *group,
			     struct pm_error *err)
{
	const char *qi[2] = {gender, degree};
	char field[32];

	snprintf(field, sizeof field, "individuals[%zu]", k->n_people);
	memset(err, 0, sizeof *err);
	return statements_add_individual(k, ds, name, qi, 2, group, field, err);
}

/* alice (female, college), bob (male, college, g2), carol (male, junior). */
static void add_people(struct knowledge *k, const struct dataset *ds)
{
	struct pm_error err;

	CHECK(person(k, ds, "alice", "female", "college", NULL, &err) == PM_OK);
	CHECK(person(k, ds, "bob", "male", "college", "g2", &err) == PM_OK);
	CHECK(person(k, ds, "carol", "male", "junior", NULL, &err) == PM_OK);
}

static void test_individuals(const struct dataset *ds)
{
	struct knowledge k;
	struct pm_error err;
	enum pm_status st;
	const char *one[1] = {"female"};
	char big[300];

	knowledge_init(&k);
	add_people(&k, ds);
	CHECK(k.n_people == 3);
	if (k.n_people != 3)
		goto out;
	CHECK_STR(k.people[0].name, "alice");
	CHECK_STR(dataset_tuple_value(ds, k.people[0].tuple, 0), "female");
	CHECK_STR(dataset_tuple_value(ds, k.people[0].tuple, 1), "college");
	CHECK(k.people[0].group == -1);
	CHECK_STR(ds->group_labels[k.people[1].group], "g2");
	CHECK_STR(dataset_tuple_value(ds, k.people[2].tuple, 1), "junior");
	CHECK(statements_person(&k, "bob") == 1);
	CHECK(statements_person(&k, "Bob") == -1);

	st = person(&k, ds, NULL, "female", "college", NULL, &err);
	check_error(st, &err, "individuals[3].name", "is missing");
	st = person(&k, ds, "", "female", "college", NULL, &err);
	check_error(st, &err, "individuals[3].name", "is empty");
	memset(big, 'n', 257);
	big[257] = '\0';
	st = person(&k, ds, big, "female", "college", NULL, &err);
	check_error(st, &err, "individuals[3].name",
		    "is 257 bytes long; a name may have at most 256 bytes");
	st = person(&k, ds, "bob", "female", "college", NULL, &err);
	check_error(st, &err, "individuals[3].name", "repeats the name \"bob\" of individuals[1]");
	memset(&err, 0, sizeof err);
	st = statements_add_individual(&k, ds, "dave", one, 1, NULL, "individuals[3]", &err);
	check_error(st, &err, "individuals[3].qi",
		    "must have 2 values (one per QI attribute), got 1");
	st = person(&k, ds, "dave", "female", "collage", NULL, &err);
	check_error(st, &err, "individuals[3].qi[1]",
		    "value \"collage\" does not occur in the data; did you mean \"college\"?");
	st = person(&k, ds, "dave", NULL, "college", NULL, &err);
	check_error(st, &err, "individuals[3].qi[0]", "is missing");
	st = person(&k, ds, "dave", "female", "graduate", NULL, &err);
	check_error(st, &err, "individuals[3].qi", "no record of the table has these QI values");
	st = person(&k, ds, "dave", "female", "college", "gg2", &err);
	check_error(st, &err, "individuals[3].group",
		    "unknown group \"gg2\"; did you mean \"g2\"?");
	st = person(&k, ds, "dave", "female", "junior", "g2", &err);
	check_error(st, &err, "individuals[3].group",
		    "group \"g2\" has no record with these QI values");
	/* the one (female, junior) record, then a second person there */
	CHECK(person(&k, ds, "dave", "female", "junior", "g1", &err) == PM_OK);
	st = person(&k, ds, "eve", "female", "junior", NULL, &err);
	check_error(st, &err, "individuals[4].qi",
		    "more people are named with these QI values than the table has records "
		    "with them (1)");
	/* (male, college) has 2 records, one in g2, which bob is */
	st = person(&k, ds, "eve", "male", "college", "g2", &err);
	check_error(st, &err, "individuals[4].group",
		    "more people are named with these QI values in group \"g2\" than it has "
		    "records with them (1)");
	CHECK(person(&k, ds, "eve", "male", "college", NULL, &err) == PM_OK);
	st = person(&k, ds, "frank", "male", "college", "g1", &err);
	check_error(st, &err, "individuals[5].qi",
		    "more people are named with these QI values than the table has records "
		    "with them (2)");
	/* failed people took neither a name nor a record */
	CHECK(k.n_people == 5);
	CHECK(statements_person(&k, "frank") == -1);
	CHECK(person(&k, ds, "frank", "female", "college", "g2", &err) == PM_OK);
out:
	knowledge_finish(&k);
	CHECK(k.index == NULL && k.people == NULL && k.n_people == 0);
}

/* A distribution term over at most two conditions, or a person term. */
struct term {
	const char *attrs[2], *values[2];
	struct statement_term_in in;
};

static void dist(struct term *t, const char *a1, const char *v1, const char *a2, const char *v2,
		 const char *const *then, size_t n_then)
{
	memset(t, 0, sizeof *t);
	t->attrs[0] = a1;
	t->values[0] = v1;
	t->attrs[1] = a2;
	t->values[1] = v2;
	t->in.has_if = 1;
	t->in.attrs = t->attrs;
	t->in.values = t->values;
	t->in.n_cond = a2 ? 2 : a1 ? 1 : 0;
	t->in.then = then;
	t->in.n_then = n_then;
	t->in.then_list = n_then != 1;
}

static void pers(struct term *t, const char *name, const char *const *then, size_t n_then)
{
	memset(t, 0, sizeof *t);
	t->in.person = name;
	t->in.then = then;
	t->in.n_then = n_then;
	t->in.then_list = n_then != 1;
}

/* Bounds of a statement: value, or min and/or max (NAN: absent). */
struct bounds {
	double value, min, max;
};

/* Adds a statement of terms t[0 .. n) as statements[k->n_statements]. */
static enum pm_status stmt(struct knowledge *k, const struct dataset *ds, const char *name,
			   struct term *t, size_t n, struct bounds b, struct pm_error *err)
{
	struct statement_term_in in[4];
	char field[32];

	for (size_t i = 0; i < n; i++)
		in[i] = t[i].in;
	snprintf(field, sizeof field, "statements[%zu]", k->n_statements);
	memset(err, 0, sizeof *err);
	return statements_add(k, ds, name, in, n, !isnan(b.value), b.value, !isnan(b.min), b.min,
			      !isnan(b.max), b.max, field, err);
}

static const struct bounds MIN0 = {NAN, 0, NAN};

/* The statements of SPEC section 3, and what they store. */
static void test_statements_stored(const struct dataset *ds)
{
	static const char *const flu[] = {"Flu"}, *const hiv[] = {"HIV"};
	static const char *const bc_hiv[] = {"HIV", "Breast Cancer"};
	struct knowledge k;
	struct pm_error err;
	struct term t[3];
	const struct statement *s;

	knowledge_init(&k);
	add_people(&k, ds);
	dist(&t[0], "degree", "college", NULL, NULL, flu, 1);
	dist(&t[1], "degree", "college", NULL, NULL, hiv, 1);
	t[1].in.has_coef = 1;
	t[1].in.coef = -1;
	CHECK(stmt(&k, ds, "flu-over-hiv", t, 2, MIN0, &err) == PM_OK);
	pers(&t[0], "alice", bc_hiv, 2);
	CHECK(stmt(&k, ds, NULL, t, 1, (struct bounds){1, NAN, NAN}, &err) == PM_OK);
	pers(&t[0], "alice", hiv, 1);
	pers(&t[1], "bob", hiv, 1);
	pers(&t[2], "carol", hiv, 1);
	CHECK(stmt(&k, ds, NULL, t, 3, (struct bounds){NAN, 2, NAN}, &err) == PM_OK);
	dist(&t[0], NULL, NULL, NULL, NULL, flu, 1);
	CHECK(stmt(&k, ds, NULL, t, 1, (struct bounds){NAN, NAN, 0.5}, &err) == PM_OK);
	CHECK(k.n_statements == 4);
	if (k.n_statements != 4)
		goto out;
	s = &k.statements[0];
	CHECK_STR(s->name, "flu-over-hiv");
	CHECK(s->n_terms == 2 && s->lo == 0 && s->hi == INFINITY && !s->equality);
	CHECK(s->terms[0].person == -1 && s->terms[0].coef == 1 && s->terms[1].coef == -1);
	CHECK(s->terms[0].n_qv == 4 && s->terms[0].cond.n_terms == 1);
	CHECK_STR(ds->attr_values[1].str[s->terms[0].cond.value[0]], "college");
	CHECK(s->terms[1].n_then == 1);
	CHECK_STR(ds->sa_values.str[s->terms[1].then[0]], "HIV");
	s = &k.statements[1];
	CHECK(s->name == NULL && s->equality && s->lo == 1 && s->hi == 1);
	CHECK(s->terms[0].person == 0 && s->terms[0].n_qv == 1 && s->terms[0].n_then == 2);
	CHECK_STR(ds->sa_values.str[s->terms[0].then[0]], "Breast Cancer"); /* ascending */
	CHECK_STR(ds->sa_values.str[s->terms[0].then[1]], "HIV");
	s = &k.statements[2];
	CHECK(s->lo == 2 && s->hi == INFINITY && s->terms[2].person == 2);
	s = &k.statements[3]; /* an empty if: the whole table */
	CHECK(s->terms[0].n_qv == 8 && s->terms[0].cond.n_terms == 0);
	CHECK(s->lo == -INFINITY && s->hi == 0.5);
out:
	knowledge_finish(&k);
}

/* The errors of a term, each under its own field. */
static void test_term_errors(const struct dataset *ds)
{
	static const char *const flu[] = {"Flu"}, *const bad_list[] = {"Flu", "HIV+"};
	static const char *const twice[] = {"Flu", "HIV", "Flu", "HIV"}, *const bad[] = {"flux"};
	struct knowledge k;
	struct pm_error err;
	struct term t[2];
	enum pm_status st;

	knowledge_init(&k);
	pers(&t[0], "alice", flu, 1);
	st = stmt(&k, ds, NULL, t, 1, MIN0, &err);
	check_error(st, &err, "statements[0].terms[0].person",
		    "unknown person \"alice\"; no one is named (people are named in "
		    "\"individuals\")");
	add_people(&k, ds);
	st = stmt(&k, ds, NULL, t, 0, MIN0, &err);
	check_error(st, &err, "statements[0].terms",
		    "is empty; a statement needs at least one term");
	dist(&t[0], "gender", "male", NULL, NULL, flu, 1);
	t[0].in.person = "alice";
	st = stmt(&k, ds, NULL, t, 1, MIN0, &err);
	check_error(st, &err, "statements[0].terms[0]",
		    "has both \"if\" and \"person\"; a term is either a distribution term (if) or "
		    "a person term (person)");
	pers(&t[1], NULL, flu, 1);
	st = stmt(&k, ds, NULL, t + 1, 1, MIN0, &err);
	check_error(st, &err, "statements[0].terms[0]",
		    "has neither \"if\" nor \"person\"; a term is either a distribution term (if) "
		    "or a person term (person)");
	dist(&t[0], "gender", "male", NULL, NULL, flu, 1);
	dist(&t[1], "gendr", "male", NULL, NULL, flu, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].if.gendr",
		    "unknown QI attribute \"gendr\"; did you mean \"gender\"?");
	dist(&t[1], "degree", "collage", NULL, NULL, flu, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].if.degree",
		    "value \"collage\" does not occur in the data; did you mean \"college\"?");
	dist(&t[1], "degree", "junior", "degree", "college", flu, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].if.degree",
		    "attribute \"degree\" is given more than once");
	dist(&t[1], "gender", "female", "degree", "graduate", flu, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].if",
		    "matches no record of the data (no record has all these values together), so "
		    "no probability is defined given it");
	pers(&t[1], "alcie", flu, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].person",
		    "unknown person \"alcie\"; did you mean \"alice\"?");
	pers(&t[1], "zed", flu, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].person", "unknown person \"zed\"");
	pers(&t[1], "bob", bad, 1);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].then",
		    "unknown sensitive value \"flux\"; did you mean \"Flu\"?");
	pers(&t[1], "bob", bad_list, 2);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].then[1]",
		    "unknown sensitive value \"HIV+\"; did you mean \"HIV\"?");
	pers(&t[1], "bob", flu, 0);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].then",
		    "is empty; give a sensitive value or a list of them");
	dist(&t[1], NULL, NULL, NULL, NULL, twice, 4);
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].then[2]", "repeats \"Flu\" (then[0])");
	pers(&t[1], "bob", flu, 1);
	t[1].in.has_coef = 1;
	t[1].in.coef = NAN;
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].coef",
		    "must be a finite number within [-1e5, 1e5], got nan");
	t[1].in.coef = -INFINITY;
	st = stmt(&k, ds, NULL, t, 2, MIN0, &err);
	check_error(st, &err, "statements[0].terms[1].coef",
		    "must be a finite number within [-1e5, 1e5], got -inf");
	CHECK(k.n_statements == 0);
	knowledge_finish(&k);
}

/* The errors of a statement's bounds and name. */
static void test_statement_errors(const struct dataset *ds)
{
	static const char *const flu[] = {"Flu"};
	struct knowledge k;
	struct pm_error err;
	struct term t[1];
	enum pm_status st;
	char big[300];

	knowledge_init(&k);
	dist(&t[0], "gender", "male", NULL, NULL, flu, 1);
	st = stmt(&k, ds, NULL, t, 1, (struct bounds){NAN, INFINITY, NAN}, &err);
	check_error(st, &err, "statements[0].min",
		    "must be a finite number within [-1e9, 1e9], got inf");
	st = stmt(&k, ds, NULL, t, 1, (struct bounds){NAN, NAN, NAN}, &err);
	check_error(st, &err, "statements[0]", "needs \"value\" (or \"min\" and/or \"max\")");
	st = stmt(&k, ds, NULL, t, 1, (struct bounds){0.5, 0.1, NAN}, &err);
	check_error(st, &err, "statements[0].min",
		    "cannot go with \"value\": give the value, or \"min\" and/or \"max\"");
	st = stmt(&k, ds, NULL, t, 1, (struct bounds){0.5, NAN, 1}, &err);
	check_error(st, &err, "statements[0].max",
		    "cannot go with \"value\": give the value, or \"min\" and/or \"max\"");
	st = stmt(&k, ds, NULL, t, 1, (struct bounds){NAN, 0.5, 0.25}, &err);
	check_error(st, &err, "statements[0]", "\"min\" (0.5) is above \"max\" (0.25)");
	st = stmt(&k, ds, "", t, 1, MIN0, &err);
	check_error(st, &err, "statements[0].name", "is empty");
	memset(big, 's', 257);
	big[257] = '\0';
	st = stmt(&k, ds, big, t, 1, MIN0, &err);
	check_error(st, &err, "statements[0].name",
		    "is 257 bytes long; a name may have at most 256 bytes");
	CHECK(k.n_statements == 0);
	/* a bound may be any number within the limit: a statement is no
	 * probability */
	CHECK(stmt(&k, ds, "first", t, 1, (struct bounds){NAN, -3, 7}, &err) == PM_OK);
	CHECK(stmt(&k, ds, NULL, t, 1, (struct bounds){NAN, 0.5, 0.5}, &err) == PM_OK);
	st = stmt(&k, ds, "first", t, 1, MIN0, &err);
	check_error(st, &err, "statements[2].name", "repeats the name \"first\" of statements[0]");
	CHECK(k.n_statements == 2 && k.statements[1].lo == 0.5 && !k.statements[1].equality);
	knowledge_finish(&k);
}

/* Conflict reports name a statement by its name, else its place. */
static void test_describe(const struct dataset *ds)
{
	static const char *const flu[] = {"Flu"};
	struct knowledge k;
	struct pm_error err;
	struct term t[1];
	char buf[64], small[8];

	knowledge_init(&k);
	CHECK(statements_person(&k, "alice") == -1); /* nothing added yet */
	dist(&t[0], NULL, NULL, NULL, NULL, flu, 1);
	CHECK(stmt(&k, ds, "flu-over-hiv", t, 1, MIN0, &err) == PM_OK);
	CHECK(stmt(&k, ds, NULL, t, 1, MIN0, &err) == PM_OK);
	if (k.n_statements == 2) {
		statements_describe(&k, 0, buf, sizeof buf);
		CHECK_STR(buf, "statements[0] \"flu-over-hiv\"");
		statements_describe(&k, 1, buf, sizeof buf);
		CHECK_STR(buf, "statements[1]");
		statements_describe(&k, 0, small, sizeof small);
		CHECK_STR(small, "stateme");
	}
	knowledge_finish(&k);
}

/* Many named statements: names are found by hash, repeats still caught
 * after the tables grew. */
static void test_many_names(const struct dataset *ds)
{
	static const char *const flu[] = {"Flu"};
	struct knowledge k;
	struct pm_error err;
	struct term t[1];
	char name[32];
	int ok = 1;

	knowledge_init(&k);
	dist(&t[0], "gender", "male", NULL, NULL, flu, 1);
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof name, "s%d", i);
		ok &= stmt(&k, ds, name, t, 1, MIN0, &err) == PM_OK;
	}
	CHECK(ok);
	CHECK(stmt(&k, ds, "s12345", t, 1, MIN0, &err) == PM_ERR_INPUT);
	CHECK_STR(err.message, "repeats the name \"s12345\" of statements[12345]");
	CHECK(k.n_statements == 20000);
	knowledge_finish(&k);
}

int main(void)
{
	struct dataset *ds = make_dataset();

	if (ds) {
		test_individuals(ds);
		test_statements_stored(ds);
		test_term_errors(ds);
		test_statement_errors(ds);
		test_describe(ds);
		test_many_names(ds);
	}
	dataset_destroy(ds);
	return check_done();
}
