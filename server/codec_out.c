/*
 * JSON codec, the way out (SPEC section 4): rules, knowledge documents,
 * records-form datasets and results. codec.c reads the inputs.
 */
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

json_t *codec_rule(const struct dataset *ds, const struct rule *r)
{
	json_t *o = json_object(), *c = json_object();
	int bad = !o;

	for (uint32_t t = 0; t < r->n_terms; t++) {
		const struct dict *d = &ds->attr_values[r->attr[t]];

		bad |= put_key(c, ds->attr_names[r->attr[t]], jstr(d->str[r->value[t]]));
	}
	bad |= put(o, "if", c) | put(o, "then", jstr(ds->sa_values.str[r->sa]));
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
	static const char *const bound[] = {[SOLVER_BINDING_MIN] = "min",
					    [SOLVER_BINDING_MAX] = "max",
					    [SOLVER_BINDING_VALUE] = "value"};
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; k && i < k->n; i++) {
		json_t *o = codec_rule(ds, &k->rules[i]);

		if (o && r && r->achieved)
			bad |= put(o, "achieved", jreal(r->achieved[i])) |
			       put(o, "binding",
				   r->binding[i] ? json_string(bound[r->binding[i]]) : json_null());
		bad |= json_array_append_new(a, o);
	}
	return checked(a, bad);
}

json_t *codec_knowledge_json(const struct dataset *ds, const struct knowledge *k)
{
	json_t *o = json_object();

	return checked(o, put(o, "rules", rules_json(ds, k, NULL)));
}

/* ---- datasets out ------------------------------------------------------- */

/* Records form: one row per original record; QIT rows when there is no
 * ground truth. */
static json_t *rows_json(const struct dataset *ds)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t i = 0; i < ds->n_records; i++) {
		json_t *row = json_object();

		bad |= put(row, "qi", tuple_json(ds, ds->rec_tuple[i])) |
		       put(row, "group", jgroup(ds->group_labels[ds->rec_group[i]]));
		if (ds->has_ground_truth)
			bad |= put(row, "sa", jstr(ds->sa_values.str[ds->rec_sa[i]]));
		bad |= json_array_append_new(a, row);
	}
	return checked(a, bad);
}

/* The ST of the published form: (group, sa, count) per bucket and value. */
static json_t *st_json(const struct dataset *ds)
{
	json_t *a = json_array();
	int bad = !a;

	for (size_t b = 0; b < ds->n_groups; b++) {
		for (size_t i = ds->bs_off[b]; i < ds->bs_off[b + 1]; i++) {
			json_t *row = json_object();

			bad |= put(row, "group", jgroup(ds->group_labels[b])) |
			       put(row, "sa", jstr(ds->sa_values.str[ds->bs_value[i]])) |
			       put(row, "count", json_integer(ds->bs_count[i]));
			bad |= json_array_append_new(a, row);
		}
	}
	return checked(a, bad);
}

json_t *codec_dataset_json(const struct dataset *ds)
{
	json_t *o = json_object();
	int bad = !o;

	if (ds->name)
		bad |= put(o, "name", jstr(ds->name));
	bad |= put(o, "qi_attributes",
		   string_array((const char *const *)ds->attr_names, ds->n_attrs)) |
	       put(o, "sa_attribute", jstr(ds->sa_name));
	if (ds->has_ground_truth)
		bad |= put(o, "records", rows_json(ds));
	else
		bad |= put(o, "qit", rows_json(ds)) | put(o, "st", st_json(ds));
	return checked(o, bad);
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
	double rest = r->seconds - r->zeros_seconds - r->metrics_seconds;
	int bad = !o;

	bad |= put(o, "forced_zeros", jreal(r->zeros_seconds)) |
	       put(o, "iterate", jreal(rest > 0 ? rest : 0)) |
	       put(o, "metrics", jreal(r->metrics_seconds));
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
	       put(o, "rules", rules_json(ds, k, r));
	if (mined)
		bad |= put(o, "mined", mined_json(mined));
	bad |= put_accuracy(o, "estimation_accuracy", r->has_accuracy, r->estimation_accuracy,
			    r->estimation_infinite) |
	       put_accuracy(o, "baseline_accuracy", r->has_accuracy, r->baseline_accuracy,
			    r->baseline_infinite);
	bad |= put(o, "posterior", posterior_json(ds, r));
	return checked(o, bad);
}
