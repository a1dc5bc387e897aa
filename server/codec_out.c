/*
 * JSON codec, the way out (SPEC section 4): rules, statements, named
 * people, knowledge documents, records-form datasets and results.
 * codec.c and codec_knowledge.c read the inputs; what is written here
 * reads back as knowledge.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

/* ---- output helpers ----------------------------------------------------- */

/*
 * A JSON string for s. Values from CSV files are not checked for UTF-8, and
 * jansson refuses invalid UTF-8, so invalid bytes become U+FFFD rather than
 * losing the whole document.
 */
static json_t *jstr(const char *s)
{
	json_t *j = json_string(s);
	size_t n = strlen(s), o = 0;
	char *buf;

	if (j || !(buf = malloc(3 * n + 1)))
		return j;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c < 0x80) {
			buf[o++] = (char)c;
		} else {
			memcpy(buf + o, "\xEF\xBF\xBD", 3);
			o += 3;
		}
	}
	buf[o] = '\0';
	j = json_string(buf);
	free(buf);
	return j;
}

/* obj[key] = v with key made valid UTF-8 like jstr; consumes v. 0 on success. */
static int put_key(json_t *obj, const char *key, json_t *v)
{
	json_t *k = jstr(key);
	int rc = 1;

	if (k)
		rc = json_object_set_new(obj, json_string_value(k), v) != 0;
	else
		json_decref(v);
	json_decref(k);
	return rc;
}

static int put(json_t *obj, const char *key, json_t *v)
{
	return json_object_set_new(obj, key, v) != 0;
}

/* Non-finite reals have no JSON form; they become null. */
static json_t *jreal(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* Group labels that are canonical decimal integers go out as integers, so
 * that a dataset read with "group": 7 is written back the same way. */
static json_t *jgroup(const char *label)
{
	const char *d = label + (label[0] == '-');
	size_t n = strspn(d, "0123456789");

	if (n == 0 || n > 18 || d[n] != '\0' || (d[0] == '0' && (n > 1 || d != label)))
		return jstr(label);
	return json_integer(strtoll(label, NULL, 10));
}

/* Drops obj and returns NULL when anything failed while building it. */
static json_t *checked(json_t *obj, int bad)
{
	if (!bad)
		return obj;
	json_decref(obj);
	return NULL;
}

static json_t *string_array(const char *const *s, size_t n)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < n; i++)
		bad |= json_array_append_new(a, jstr(s[i]));
	return checked(a, bad);
}

static json_t *tuple_json(const struct dataset *ds, uint32_t q)
{
	const char *v[DATASET_MAX_ATTRS];

	for (size_t i = 0; i < ds->n_attrs; i++)
		v[i] = dataset_tuple_value(ds, q, i);
	return string_array(v, ds->n_attrs);
}

/* ---- rules and knowledge ------------------------------------------------ */

static const char *source_name(enum rule_source s)
{
	return s == RULE_POSITIVE ? "positive" : s == RULE_NEGATIVE ? "negative" : "user";
}

/* The antecedent of r: {"attribute": "value", ...}, {} for the whole
 * table. */
static json_t *if_json(const struct dataset *ds, const struct rule *r)
{
	json_t *c = json_object();
	int bad = !c;

	for (uint32_t t = 0; t < r->n_terms; t++) {
		const struct dict *d = &ds->attr_values[r->attr[t]];

		bad |= put_key(c, ds->attr_names[r->attr[t]], jstr(d->str[r->value[t]]));
	}
	return checked(c, bad);
}

/* "min", "max", "value" or null: the bound that holds a rule or a
 * statement at the solution (enum solver_binding). */
static json_t *binding_json(uint8_t b)
{
	static const char *const bound[] = {[SOLVER_BINDING_MIN] = "min",
					    [SOLVER_BINDING_MAX] = "max",
					    [SOLVER_BINDING_VALUE] = "value"};

	return b && b <= SOLVER_BINDING_VALUE ? json_string(bound[b]) : json_null();
}

json_t *codec_rule(const struct dataset *ds, const struct rule *r)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "if", if_json(ds, r)) | put(o, "then", jstr(ds->sa_values.str[r->sa]));
	if (r->lo == r->hi)
		bad |= put(o, "probability", jreal(r->lo));
	else
		bad |= put(o, "min", jreal(r->lo)) | put(o, "max", jreal(r->hi));
	bad |= put(o, "source", json_string(source_name(r->source)));
	if (r->source != RULE_USER && r->n_qv > 0) {
		double conf = (double)r->n_qv_s / (double)r->n_qv;

		if (r->source == RULE_NEGATIVE)
			conf = (double)(r->n_qv - r->n_qv_s) / (double)r->n_qv;
		bad |= put(o, "support", json_integer((json_int_t)r->support)) |
		       put(o, "confidence", jreal(conf));
	}
	return checked(o, bad);
}

/* The rules, each with its achieved value and binding bound when the
 * result has them (r may be NULL: the knowledge alone). */
static json_t *rules_json(const struct dataset *ds, const struct knowledge *k,
			  const struct solver_result *r)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; k && i < k->n; i++) {
		json_t *o = codec_rule(ds, &k->rules[i]);

		if (o && r && r->achieved)
			bad |= put(o, "achieved", jreal(r->achieved[i])) |
			       put(o, "binding", binding_json(r->binding[i]));
		bad |= json_array_append_new(a, o);
	}
	return checked(a, bad);
}

/* ---- statements and named people ---------------------------------------- */

/* A term's then: one value as a string, more as an array (SPEC 3.1). */
static json_t *then_json(const struct dataset *ds, const struct statement_term *t)
{
	json_t *a;
	int bad;

	if (t->n_then == 1)
		return jstr(ds->sa_values.str[t->then[0]]);
	a = json_array();
	bad = !a;
	for (size_t i = 0; i < t->n_then; i++)
		bad |= json_array_append_new(a, jstr(ds->sa_values.str[t->then[i]]));
	return checked(a, bad);
}

static json_t *term_json(const struct dataset *ds, const struct knowledge *k,
			 const struct statement_term *t)
{
	json_t *o = json_object();
	int bad = !o;

	if (t->person >= 0)
		bad |= put(o, "person", jstr(k->people[t->person].name));
	else
		bad |= put(o, "if", if_json(ds, &t->cond));
	bad |= put(o, "then", then_json(ds, t));
	if (t->coef != 1)
		bad |= put(o, "coef", jreal(t->coef));
	return checked(o, bad);
}

/* A statement as given: its name, terms and bounds (a missing bound is
 * infinite, and left out). */
static json_t *statement_json(const struct dataset *ds, const struct knowledge *k,
			      const struct statement *s)
{
	json_t *o = json_object(), *terms = json_array();
	int bad = !o || !terms;

	if (s->name)
		bad |= put(o, "name", jstr(s->name));
	for (size_t t = 0; t < s->n_terms; t++)
		bad |= json_array_append_new(terms, term_json(ds, k, &s->terms[t]));
	bad |= put(o, "terms", terms);
	if (s->equality)
		bad |= put(o, "value", jreal(s->lo));
	if (!s->equality && isfinite(s->lo))
		bad |= put(o, "min", jreal(s->lo));
	if (!s->equality && isfinite(s->hi))
		bad |= put(o, "max", jreal(s->hi));
	return checked(o, bad);
}

/* The statements, each with its achieved value and binding bound when the
 * result has them (r may be NULL: the knowledge alone). */
static json_t *statements_json(const struct dataset *ds, const struct knowledge *k,
			       const struct solver_result *r)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < k->n_statements; i++) {
		json_t *o = statement_json(ds, k, &k->statements[i]);

		if (o && r && r->st_achieved)
			bad |= put(o, "achieved", jreal(r->st_achieved[i]));
		if (o && r && r->st_binding)
			bad |= put(o, "binding", binding_json(r->st_binding[i]));
		bad |= json_array_append_new(a, o);
	}
	return checked(a, bad);
}

/* obj[key] += v, key made valid UTF-8 as put_key does. 0 on success. */
static int add_key(json_t *obj, const char *key, double v)
{
	json_t *name = jstr(key);
	int rc = 1;

	if (name) {
		const char *s = json_string_value(name);

		rc = json_object_set_new(obj, s,
					 jreal(v + json_real_value(json_object_get(obj, s))));
	}
	json_decref(name);
	return rc != 0;
}

/* Person i's "p" (P*(s): the sum of their cells of value s) and "groups"
 * (the probability that bucket b holds them), nonzero ones only. */
static int put_person_cells(json_t *o, const struct dataset *ds, const struct solver_result *r,
			    size_t i)
{
	json_t *p = json_object(), *g = json_object();
	int bad = !p || !g;

	for (size_t e = r->person_off[i]; !bad && e < r->person_off[i + 1]; e++) {
		if (!(r->person_p[e] > 0))
			continue;
		bad |= add_key(p, ds->sa_values.str[r->person_sa[e]], r->person_p[e]) |
		       add_key(g, ds->group_labels[r->person_group[e]], r->person_p[e]);
	}
	return bad | put(o, "p", p) | put(o, "groups", g);
}

/* The named people as given (name, QI values, group when known), each
 * with their cells' sums when the result has them (r may be NULL). */
static json_t *people_json(const struct dataset *ds, const struct knowledge *k,
			   const struct solver_result *r)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < k->n_people; i++) {
		const struct individual *p = &k->people[i];
		json_t *o = json_object();

		bad |= !o || put(o, "name", jstr(p->name)) | put(o, "qi", tuple_json(ds, p->tuple));
		if (o && p->group >= 0)
			bad |= put(o, "group", jgroup(ds->group_labels[p->group]));
		if (o && r && r->person_off)
			bad |= put_person_cells(o, ds, r, i);
		bad |= json_array_append_new(a, o);
	}
	return checked(a, bad);
}

/* "statements" and "individuals" into o when k has any (r may be NULL). */
static int put_statements(json_t *o, const struct dataset *ds, const struct knowledge *k,
			  const struct solver_result *r)
{
	int bad = 0;

	if (k && k->n_statements > 0)
		bad |= put(o, "statements", statements_json(ds, k, r));
	if (k && k->n_people > 0)
		bad |= put(o, "individuals", people_json(ds, k, r));
	return bad;
}

json_t *codec_knowledge_json(const struct dataset *ds, const struct knowledge *k)
{
	json_t *o = json_object();

	return checked(o, !o || put(o, "rules", rules_json(ds, k, NULL)) |
				    put_statements(o, ds, k, NULL));
}

/* ---- datasets out ------------------------------------------------------- */

/* Record i: its QI, group and (with ground truth) SA; a QIT row without. */
static json_t *row_json(const struct dataset *ds, size_t i)
{
	json_t *row = json_object();
	int bad = !row;

	bad |= put(row, "qi", tuple_json(ds, ds->rec_tuple[i])) |
	       put(row, "group", jgroup(ds->group_labels[ds->rec_group[i]]));
	if (ds->has_ground_truth)
		bad |= put(row, "sa", jstr(ds->sa_values.str[ds->rec_sa[i]]));
	return checked(row, bad);
}

/* ST row i of bucket b: (group, sa, count). */
static json_t *st_row_json(const struct dataset *ds, size_t b, size_t i)
{
	json_t *row = json_object();

	return checked(row, !row || put(row, "group", jgroup(ds->group_labels[b])) |
					put(row, "sa", jstr(ds->sa_values.str[ds->bs_value[i]])) |
					put(row, "count", json_integer(ds->bs_count[i])));
}

/* Records form: one row per original record; QIT rows when there is no
 * ground truth. */
static json_t *rows_json(const struct dataset *ds)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < ds->n_records; i++)
		bad |= json_array_append_new(a, row_json(ds, i));
	return checked(a, bad);
}

/* The ST of the published form: (group, sa, count) per bucket and value. */
static json_t *st_json(const struct dataset *ds)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t b = 0; b < ds->n_groups; b++)
		for (size_t i = ds->bs_off[b]; i < ds->bs_off[b + 1]; i++)
			bad |= json_array_append_new(a, st_row_json(ds, b, i));
	return checked(a, bad);
}

/* The document without its rows: name, attributes. */
static json_t *dataset_head_json(const struct dataset *ds)
{
	json_t *o = json_object();
	int bad = !o;

	if (ds->name)
		bad |= put(o, "name", jstr(ds->name));
	bad |= put(o, "qi_attributes",
		   string_array((const char *const *)ds->attr_names, ds->n_attrs)) |
	       put(o, "sa_attribute", jstr(ds->sa_name));
	return checked(o, bad);
}

json_t *codec_dataset_json(const struct dataset *ds)
{
	json_t *o = dataset_head_json(ds);
	int bad = !o;

	if (o && ds->has_ground_truth)
		bad |= put(o, "records", rows_json(ds));
	else if (o)
		bad |= put(o, "qit", rows_json(ds)) | put(o, "st", st_json(ds));
	return checked(o, bad);
}

/* text dumped as JSON_INDENT(2) at depth 0, written as at depth 2 (every
 * line after the first 4 spaces further in); nonzero if it could not be */
static int put_nested(FILE *f, json_t *j)
{
	char *text = j ? json_dumps(j, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	const char *p = text;
	int bad = !text;

	while (!bad) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) + 1 : strlen(p);

		bad = fwrite(p, 1, len, f) != len || (nl && fputs("    ", f) == EOF);
		if (!nl)
			break;
		p = nl + 1;
	}
	free(text);
	json_decref(j);
	return bad;
}

/* ",\n  \"key\": [" and the rows of one array, each made and freed in turn. */
static int put_rows(FILE *f, const struct dataset *ds, const char *key, int st)
{
	size_t n = 0;
	int bad = fprintf(f, ",\n  \"%s\": [", key) < 0;

	for (size_t b = 0; st && !bad && b < ds->n_groups; b++)
		for (size_t i = ds->bs_off[b]; !bad && i < ds->bs_off[b + 1]; i++)
			bad = fputs(n++ ? ",\n    " : "\n    ", f) == EOF ||
			      put_nested(f, st_row_json(ds, b, i));
	for (size_t i = 0; !st && !bad && i < ds->n_records; i++)
		bad = fputs(n++ ? ",\n    " : "\n    ", f) == EOF || put_nested(f, row_json(ds, i));
	return bad || fputs(n ? "\n  ]" : "]", f) == EOF;
}

enum pm_status codec_dataset_print(const struct dataset *ds, FILE *f, struct pm_error *err)
{
	json_t *head = dataset_head_json(ds);
	char *text = head ? json_dumps(head, JSON_INDENT(2) | JSON_REAL_PRECISION(17)) : NULL;
	size_t n = text ? strlen(text) : 0;
	int bad;

	json_decref(head);
	if (!text || n < 2) {
		free(text);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory writing a dataset");
	}
	/* the head without its closing "\n}", the arrays after it */
	bad = fwrite(text, 1, n - 2, f) != n - 2;
	free(text);
	if (ds->has_ground_truth)
		bad = bad || put_rows(f, ds, "records", 0);
	else
		bad = bad || put_rows(f, ds, "qit", 0) || put_rows(f, ds, "st", 1);
	if (bad || fputs("\n}\n", f) == EOF || fflush(f))
		return error_set(err, PM_ERR_IO, "", "cannot write the output: %s",
				 strerror(errno));
	return PM_OK;
}

/* ---- results ------------------------------------------------------------ */

static json_t *posterior_json(const struct dataset *ds, const struct solver_result *r)
{
	json_t *a = json_array();
	int bad = !a;

	for (uint32_t q = 0; q < ds->n_tuples; q++) {
		json_t *e = json_object(), *p = json_object();

		if (r->post_off)
			for (size_t i = r->post_off[q]; i < r->post_off[q + 1]; i++)
				bad |= put_key(p, ds->sa_values.str[r->post_sa[i]],
					       jreal(r->post_p[i]));
		bad |= put(e, "qi", tuple_json(ds, q)) |
		       put(e, "count", json_integer(ds->tuple_count[q])) | put(e, "p", p);
		bad |= json_array_append_new(a, e);
	}
	return checked(a, bad);
}

static json_t *constraints_json(const struct solver_result *r)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "variables", json_integer((json_int_t)r->variables)) |
	       put(o, "qi_invariants", json_integer((json_int_t)r->qi_invariants)) |
	       put(o, "sa_invariants", json_integer((json_int_t)r->sa_invariants)) |
	       put(o, "zero_invariants", json_integer((json_int_t)r->zero_invariants)) |
	       put(o, "knowledge", json_integer((json_int_t)r->knowledge)) |
	       put(o, "forced_zeros", json_integer((json_int_t)r->forced_zeros));
	return checked(o, bad);
}

static json_t *timings_json(const struct codec_timings *t)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "load", jreal(t ? t->load : 0)) | put(o, "mine", jreal(t ? t->mine : 0)) |
	       put(o, "build", jreal(t ? t->build : 0)) | put(o, "solve", jreal(t ? t->solve : 0));
	return checked(o, bad);
}

/* Where the solve step's seconds went: the search for forced zeros, the
 * metrics, and the rest (buckets solved alone, the iterative solve). */
static json_t *phases_json(const struct solver_result *r)
{
	json_t *o = json_object();
	double rest = r->seconds - r->zeros_seconds - r->metrics_seconds - r->privacy_seconds;
	int bad = !o;

	bad |= put(o, "forced_zeros", jreal(r->zeros_seconds)) |
	       put(o, "iterate", jreal(rest > 0 ? rest : 0)) |
	       put(o, "metrics", jreal(r->metrics_seconds)) |
	       put(o, "privacy", jreal(r->privacy_seconds));
	return checked(o, bad);
}

/* One source's SPEC 4.1 metrics. */
static json_t *privacy_metrics(const struct dataset *ds, const struct privacy_report *p)
{
	json_t *o = json_object(), *m = json_object();
	int bad = !o || !m;

	bad |= put(m, "p", jreal(p->max_p)) |
	       put(m, "qi", ds->n_tuples ? tuple_json(ds, p->max_q) : json_array()) |
	       put(m, "sa", ds->n_tuples ? jstr(ds->sa_values.str[p->max_s]) : json_null()) |
	       put(m, "count", json_integer(p->max_count));
	bad |= put(o, "max_disclosure", m) |
	       put(o, "records_at_risk", json_integer((json_int_t)p->at_risk)) |
	       put(o, "records_at_risk_fraction", jreal(p->at_risk_fraction)) |
	       put(o, "min_entropy_l", jreal(p->min_entropy_l)) |
	       put(o, "recursive_cl", json_integer(p->recursive_cl)) |
	       put(o, "t_closeness", jreal(p->t_closeness)) |
	       put(o, "delta_disclosure", jreal(p->delta_disclosure));
	return checked(o, bad);
}

/* privacy.top: the tuples most at risk, ranked (privacy_top.c). */
static json_t *top_json(const struct dataset *ds, const struct solver_result *r)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; !bad && i < r->n_top; i++) {
		const struct privacy_top *t = &r->top[i];

		bad |= json_array_append_new(
		    a, json_pack("{s:o, s:I, s:o, s:o, s:o, s:o}", "qi", tuple_json(ds, t->q),
				 "count", (json_int_t)ds->tuple_count[t->q], "sa",
				 jstr(ds->sa_values.str[t->s]), "p", jreal(t->p), "l", jreal(t->l),
				 "baseline_p", jreal(t->baseline_p)));
	}
	return checked(a, bad);
}

json_t *codec_privacy(const struct dataset *ds, const struct solver_result *r)
{
	json_t *o;
	int bad;

	if (!r->privacy[PRIVACY_POSTERIOR].has)
		return NULL;
	o = privacy_metrics(ds, &r->privacy[PRIVACY_POSTERIOR]);
	bad = !o;
	bad |= put(o, "threshold", jreal(r->privacy_options.threshold)) |
	       put(o, "c", jreal(r->privacy_options.c)) |
	       put(o, "baseline", privacy_metrics(ds, &r->privacy[PRIVACY_BASELINE]));
	if (r->privacy[PRIVACY_TRUTH].has)
		bad |= put(o, "truth", privacy_metrics(ds, &r->privacy[PRIVACY_TRUTH]));
	bad |= put(o, "top", top_json(ds, r));
	return checked(o, bad);
}

static json_t *dataset_summary(const struct dataset *ds)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "name", ds->name ? jstr(ds->name) : json_null()) |
	       put(o, "records", json_integer((json_int_t)ds->n_records)) |
	       put(o, "groups", json_integer((json_int_t)ds->n_groups)) |
	       put(o, "tuples", json_integer((json_int_t)ds->n_tuples));
	return checked(o, bad);
}

/* "key": value, null when unknown (no ground truth) or infinite, with
 * "key_infinite" saying which. */
static int put_accuracy(json_t *o, const char *key, int known, double v, int infinite)
{
	char inf_key[64];

	snprintf(inf_key, sizeof inf_key, "%s_infinite", key);
	return put(o, key, known && !infinite ? jreal(v) : json_null()) |
	       put(o, inf_key, json_boolean(known && infinite));
}

static json_t *asked_found(size_t asked, size_t found)
{
	return json_pack("{s:I, s:I}", "asked", (json_int_t)asked, "found", (json_int_t)found);
}

/* {"positive": {"asked", "found"}, "negative": {...}}: a Top-(50, 50) bound
 * of which only 12 positive rules exist is a weaker adversary than asked. */
static json_t *mined_json(const struct codec_mined *m)
{
	json_t *o = json_object();
	int bad = !o;

	bad |= put(o, "positive", asked_found(m->asked.positive, m->found.positive)) |
	       put(o, "negative", asked_found(m->asked.negative, m->found.negative));
	return checked(o, bad);
}

json_t *codec_result(const struct dataset *ds, const struct knowledge *k,
		     const struct solver_result *r, const struct codec_timings *t,
		     const struct codec_mined *mined)
{
	json_t *o = json_object();
	int conv = r->status == SOLVER_CONVERGED, bad = !o;

	bad |= put(o, "status", json_string(conv ? "converged" : "not_converged"));
	if (!conv)
		bad |= put(o, "reason", jstr(r->reason));
	bad |= put(o, "iterations", json_integer(r->iterations)) |
	       put(o, "max_violation", jreal(r->max_violation)) |
	       put(o, "seconds", jreal(r->seconds)) | put(o, "solve_phases", phases_json(r)) |
	       put(o, "timings", timings_json(t)) | put(o, "entropy", jreal(r->entropy)) |
	       put(o, "dataset", dataset_summary(ds)) | put(o, "constraints", constraints_json(r)) |
	       put(o, "rules", rules_json(ds, k, r)) | put_statements(o, ds, k, r);
	if (mined)
		bad |= put(o, "mined", mined_json(mined));
	bad |= put_accuracy(o, "estimation_accuracy", r->has_accuracy, r->estimation_accuracy,
			    r->estimation_infinite) |
	       put_accuracy(o, "baseline_accuracy", r->has_accuracy, r->baseline_accuracy,
			    r->baseline_infinite);
	if (r->privacy[PRIVACY_POSTERIOR].has)
		bad |= put(o, "privacy", codec_privacy(ds, r));
	bad |= put(o, "posterior", posterior_json(ds, r));
	return checked(o, bad);
}

/* ---- a stored result, read in part ---------------------------------------- */

static size_t skip_space(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* The end of the string whose opening quote is at s[i] (past its closing
 * quote), or n + 1 if it has none. */
static size_t skip_string(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return n + 1;
}

/*
 * The end of the JSON value at s[i] (no space before it), or n + 1 when
 * the text ends first. Only brackets and strings are followed: the value
 * is parsed by jansson afterwards (or was written by it), which rejects
 * what this lets through.
 */
static size_t skip_value(const char *s, size_t n, size_t i)
{
	size_t depth = 0;

	if (i >= n)
		return n + 1;
	if (s[i] != '"' && s[i] != '[' && s[i] != '{') {
		while (i < n && !strchr(",]} \t\n\r", s[i]))
			i++;
		return i;
	}
	do {
		if (s[i] == '"') {
			i = skip_string(s, n, i);
			continue;
		}
		depth += s[i] == '[' || s[i] == '{';
		depth -= s[i] == ']' || s[i] == '}';
		i++;
	} while (i < n && depth > 0);
	return depth ? n + 1 : i;
}

/* Where the value of the top-level member `key` of the object in s
 * starts, or n + 1 if it has none (a key is matched as written: the
 * writer, codec_result, escapes none of its keys). */
static size_t member_at(const char *s, size_t n, const char *key)
{
	size_t i = skip_space(s, n, 0), q, len = strlen(key);

	if (i >= n || s[i] != '{')
		return n + 1;
	for (i = skip_space(s, n, i + 1); i < n && s[i] == '"';) {
		q = i;
		i = skip_space(s, n, skip_string(s, n, q));
		if (i >= n || s[i] != ':')
			return n + 1;
		i = skip_space(s, n, i + 1);
		if (i - q >= len + 2 && s[q + len + 1] == '"' && !memcmp(s + q + 1, key, len))
			return i;
		i = skip_space(s, n, skip_value(s, n, i));
		if (i >= n || s[i] != ',')
			return n + 1;
		i = skip_space(s, n, i + 1);
	}
	return n + 1;
}

/* Entry e of the array being paged: parsed into items when in the page. */
static enum pm_status page_entry(const char *s, size_t at, size_t end, size_t e, size_t from,
				 size_t limit, json_t *items)
{
	json_t *v;

	if (e < from || e - from >= limit)
		return PM_OK;
	v = json_loadb(s + at, end - at, 0, NULL);
	if (!v || json_array_append_new(items, v))
		return v ? PM_ERR_NOMEM : PM_ERR_INPUT;
	return PM_OK;
}

enum pm_status codec_result_posterior(const char *s, size_t n, size_t from, size_t limit,
				      json_t **items, size_t *total)
{
	size_t i = member_at(s, n, "posterior"), e = 0, end;
	enum pm_status st = PM_ERR_INPUT;

	*total = 0;
	*items = json_array();
	if (!*items)
		return PM_ERR_NOMEM;
	if (i >= n || s[i] != '[')
		goto out;
	i = skip_space(s, n, i + 1);
	if (i < n && s[i] == ']')
		st = PM_OK;
	while (i < n && s[i] != ']') {
		end = skip_value(s, n, i);
		if (end > n || page_entry(s, i, end, e++, from, limit, *items))
			goto out;
		i = skip_space(s, n, end);
		if (i < n && s[i] == ',')
			i = skip_space(s, n, i + 1);
		else if (i < n && s[i] == ']')
			st = PM_OK;
		else
			goto out;
	}
out:
	*total = e;
	if (st) {
		json_decref(*items);
		*items = NULL;
	}
	return st;
}
