/*
 * constraints: the dataset model, the Privacy-MaxEnt constraint system
 * (QI-, SA- and zero-invariants, knowledge rows) and Top-(K+,K-) rule mining.
 *
 * Plain C, no I/O beyond what callers hand in. Every function that can fail
 * returns an enum pm_status (PM_OK = 0) and fills a caller-owned struct
 * pm_error with the offending field and a message.
 *
 * Notation follows Du, Teng, Zhu, "Privacy-MaxEnt", SIGMOD 2008: N records,
 * bucket (group) b, full QI tuple q, sensitive value s, n(.) counts.
 */
#ifndef PMAXENT_CONSTRAINTS_H
#define PMAXENT_CONSTRAINTS_H

#include <stddef.h>
#include <stdint.h>

/* ---- error.c ------------------------------------------------------------ */

enum pm_status {
	PM_OK = 0,
	PM_ERR_INPUT = 2,	 /* bad input: CLI exit 2, HTTP 400/422 */
	PM_ERR_INCONSISTENT = 3, /* knowledge admits no distribution: exit 3, HTTP 422 */
	PM_ERR_NOMEM = 4,
	PM_ERR_IO = 5,
	PM_ERR_CANCELLED = 6, /* a progress callback asked to stop */
	PM_ERR_INTERNAL = 7,
	PM_ERR_NOT_FOUND = 8, /* no such id (or another tenant's): HTTP 404 */
	PM_ERR_CONFLICT = 9,  /* the resource is not in a state that allows it */
	PM_ERR_BUSY = 10,     /* queue full: HTTP 503 with Retry-After */
	PM_ERR_TOO_LARGE = 11 /* over a size limit: HTTP 413 */
};

struct pm_error {
	enum pm_status status;
	char field[256];    /* e.g. "records[17].qi"; "" when no single field */
	char message[1024]; /* human-readable problem, without the field */
};

/* Records status, field and a printf-style message; returns status. */
enum pm_status error_set(struct pm_error *err, enum pm_status status, const char *field,
			 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Puts "prefix" in front of err->field ("records[3]" + ".qi"). */
void error_prefix(struct pm_error *err, const char *prefix);
/* Human-readable name of a status ("bad input", ...); static storage. */
const char *error_status_name(enum pm_status status);

/* Messages quote user text through error_clip: a 64 MiB value must not come
 * back in an error. ERROR_CLIP_SIZE is the buffer it needs ("..." + NUL). */
#define ERROR_CLIP_MAX	64
#define ERROR_CLIP_SIZE (ERROR_CLIP_MAX + 4)
/* s cut to at most ERROR_CLIP_MAX bytes at a UTF-8 character boundary, with
 * "..." when cut, written to buf (ERROR_CLIP_SIZE bytes); returns buf. */
const char *error_clip(const char *s, char *buf);
/*
 * The entry of known[0 .. n) that word most likely misspells, or NULL: the
 * closest by optimal string alignment distance (insertions, deletions,
 * substitutions, swaps of neighbours; case and '-' / '_' ignored), if at
 * most 2 edits and at most half the longer of the two. Words without a
 * letter (numbers) and words over 256 bytes get none. Returns a pointer
 * into known (borrowed). The one helper behind every "did you mean".
 */
const char *error_suggest(const char *word, const char *const *known, size_t n);
/* "; did you mean \"x\"?" when error_suggest finds x among known[0 .. n),
 * else "": the tail of an "unknown ..." message. Written to buf
 * (ERROR_HINT_SIZE bytes), returned. */
#define ERROR_HINT_SIZE (ERROR_CLIP_SIZE + 20)
const char *error_hint(const char *word, const char *const *known, size_t n, char *buf);
/* prefix + "." + a + b into buf ("rules[3]" + "if." + "sex"): the field of
 * a part of what prefix names; an empty or NULL prefix gives no dot, a
 * NULL b nothing. Returns buf. */
const char *error_field(char *buf, size_t len, const char *prefix, const char *a, const char *b);

/* ---- limits.c ----------------------------------------------------------- */

/* Room for a number as limits_format writes it. */
#define LIMITS_TEXT_SIZE 32
/* v as the shortest decimal text that reads back as v, the exponent
 * without "+" or leading zeros ("1e308", "1e-320"), into buf. */
void limits_format(double v, char *buf, size_t len);
/*
 * *v checked for the model (docs/operations.md, "Input limits"): finite,
 * not subnormal (0 < |v| < DBL_MIN), within [lo, hi]; -0 becomes 0. The
 * error (PM_ERR_INPUT under field) names the number and the limit:
 * "1e308 is outside the limit [-1e9, 1e9]".
 */
enum pm_status limits_check(double *v, double lo, double hi, const char *field,
			    struct pm_error *err);

/* ---- dict.c ------------------------------------------------------------- */

/* A value dictionary: code -> string, codes in bytewise (strcmp) order once
 * sorted, so that comparing codes compares values bytewise. */
struct dict {
	size_t n;
	char **str; /* owned */
};

/* Code of s, or -1 if absent (binary search; dict must be sorted). */
long dict_find(const struct dict *d, const char *s);
void dict_finish(struct dict *d);

/* ---- dataset.c ---------------------------------------------------------- */

#define DATASET_MAX_ATTRS 32
#define DATASET_NO_SA	  UINT32_MAX

/* Length limits in bytes, checked by the builder so that JSON and CSV input
 * get the same ones (docs/operations.md, "Document limits"). A value is a
 * QI or SA value; numbers count as their text. */
#define DATASET_MAX_NAME      256  /* the dataset's name */
#define DATASET_MAX_ATTR_NAME 256  /* a QI or SA attribute name */
#define DATASET_MAX_VALUE     1024 /* a QI or SA value */
#define DATASET_MAX_GROUP     256  /* a group label */

/* The tuples that hold each (attribute, value): key k = key0[a] + the
 * value's code, its tuples with[key_off[k] .. key_off[k + 1]), ascending. */
struct postings {
	size_t *key0;
	size_t *key_off;
	uint32_t *with;
};

/*
 * A bucketized table, dictionary-encoded, buckets as flat CSR arrays.
 * Built only through struct dataset_builder; immutable afterwards.
 *
 * "Records" are the rows of the original table (records form; ground truth
 * known) or the rows of the QIT (published form; rec_sa[i] = DATASET_NO_SA).
 */
struct dataset {
	char *name; /* may be NULL */
	size_t n_attrs;
	char **attr_names; /* n_attrs QI attribute names */
	char *sa_name;
	struct dict *attr_values; /* n_attrs dictionaries, sorted */
	struct dict sa_values;	  /* SA domain, sorted */
	int has_ground_truth;	  /* records form */

	size_t n_records; /* N */
	uint32_t *rec_tuple, *rec_group, *rec_sa;

	size_t n_tuples;       /* |Q|, distinct QI tuples, in order of first appearance */
	uint32_t *tuples;      /* n_tuples * n_attrs value codes */
	uint32_t *tuple_count; /* n(q) */

	size_t n_groups; /* |B|, in order of first appearance */
	char **group_labels;
	uint32_t *group_size; /* n(b) */
	/* distinct q of bucket b: bq_tuple[bq_off[b] .. bq_off[b+1]), ascending,
	 * with n(q,b) in bq_count */
	size_t *bq_off;
	uint32_t *bq_tuple, *bq_count;
	/* distinct s of bucket b, ascending code, with n(s,b) */
	size_t *bs_off;
	uint32_t *bs_value, *bs_count;
	struct postings by_value; /* the tuples of each (attribute, value) */
};

struct dataset_builder;

/* Starts a dataset with the given QI attribute names and SA name; name may
 * be NULL. Caller frees with dataset_builder_destroy. Returns NULL on error
 * (duplicate or empty attribute names, too many attributes, a name over its
 * DATASET_MAX_* length, no memory). */
struct dataset_builder *dataset_builder_create(const char *name, const char *const *attr_names,
					       size_t n_attrs, const char *sa_name,
					       struct pm_error *err);
void dataset_builder_destroy(struct dataset_builder *b);
/* Records form: one original record. qi has n_attrs values. Errors name
 * the row's part ("qi[1]", "group", "sa"): missing, or over its length
 * limit (DATASET_MAX_VALUE, DATASET_MAX_GROUP); the same for the two below. */
enum pm_status dataset_builder_add_record(struct dataset_builder *b, const char *const *qi,
					  const char *group, const char *sa, struct pm_error *err);
/* Published form: one QIT row, and one ST row (count >= 1). */
enum pm_status dataset_builder_add_qit(struct dataset_builder *b, const char *const *qi,
				       const char *group, struct pm_error *err);
enum pm_status dataset_builder_add_st(struct dataset_builder *b, const char *group, const char *sa,
				      long long count, struct pm_error *err);
/* Validates and encodes. On success *out is set; caller frees with
 * dataset_destroy. The builder is left empty either way and must still be
 * destroyed. */
enum pm_status dataset_builder_finish(struct dataset_builder *b, struct dataset **out,
				      struct pm_error *err);
void dataset_destroy(struct dataset *ds);

/* Value text of attribute a in tuple q; borrowed, valid while ds lives. */
const char *dataset_tuple_value(const struct dataset *ds, uint32_t q, size_t a);
/* Index of attribute name, or -1. */
long dataset_attr_index(const struct dataset *ds, const char *name);
/* For the ways of making a dataset (the builder, dataset_unpack): its
 * distinct QI tuples in order of first appearance (tuples, tuple_count,
 * n_tuples, rec_tuple, allocated here) from n records of na codes each,
 * record r's written by row_at into row. PM_ERR_NOMEM, or PM_OK. */
enum pm_status dataset_intern_tuples(struct dataset *ds, size_t n, size_t na,
				     void (*row_at)(const void *ctx, size_t r, uint32_t *row),
				     const void *ctx);

/* ---- dataset_pack.c ----------------------------------------------------- */

/*
 * The packed (binary) form of a dataset, as the store keeps it: attribute
 * names, per-column dictionaries and each record's codes at the smallest
 * width, the groups and the SA (or, published form, the ST). Everything
 * the dataset holds round-trips: dataset_unpack(dataset_pack(ds)) is the
 * same dataset, value for value and in the same order. *out (len bytes)
 * is malloc'd, the caller's to free.
 */
enum pm_status dataset_pack(const struct dataset *ds, unsigned char **out, size_t *len,
			    struct pm_error *err);
/* The dataset of a packed blob; caller frees with dataset_destroy. A
 * truncated or damaged blob is PM_ERR_INPUT ("the packed dataset is
 * damaged: ..."), never a crash. */
enum pm_status dataset_unpack(const unsigned char *blob, size_t len, struct dataset **out,
			      struct pm_error *err);

/* ---- csv.c -------------------------------------------------------------- */

/* A parsed CSV table (RFC 4180 quoting, CRLF or LF, header row). */
struct csv_table {
	size_t n_cols, n_rows;
	char **header; /* n_cols */
	char **cells;  /* n_rows * n_cols, row-major */
	/* physical lines (1-based) of the header and where each row starts, for
	 * messages; row_line may be NULL in a table not made by csv_parse */
	size_t header_line, *row_line;
};

/*
 * The incremental parser behind csv_parse: text fed in pieces cut
 * anywhere. Each complete row goes to on_row (header 1 for the header row,
 * checked first: non-empty, distinct names), with its fields (borrowed:
 * valid during the call) and the physical line where it starts; every
 * later row has as many fields as the header. The first error, the
 * parser's (named "line N") or the callback's, stops it: feed and end
 * return it again. A header must have come by csv_stream_end.
 */
typedef enum pm_status (*csv_row_fn)(void *ctx, const char *const *fields, size_t n, size_t line,
				     int header, struct pm_error *err);
struct csv_stream;
/* NULL when out of memory; free with csv_stream_destroy (NULL: no-op). */
struct csv_stream *csv_stream_create(csv_row_fn on_row, void *ctx);
enum pm_status csv_stream_feed(struct csv_stream *cs, const char *data, size_t n,
			       struct pm_error *err);
enum pm_status csv_stream_end(struct csv_stream *cs, struct pm_error *err);
void csv_stream_destroy(struct csv_stream *cs);

/* Parses text[0..len). Caller frees with csv_table_finish. Errors name
 * "line N" in the field. */
enum pm_status csv_parse(const char *text, size_t len, struct csv_table *t, struct pm_error *err);
void csv_table_finish(struct csv_table *t);

/* ---- csv_dataset.c ------------------------------------------------------ */

/* Records-form dataset from a table: column sa_col is the SA, group_col the
 * group, every other column a QI attribute in header order. */
enum pm_status csv_dataset(const struct csv_table *t, const char *sa_col, const char *group_col,
			   const char *name, struct dataset **out, struct pm_error *err);

/*
 * The same from CSV text fed in pieces (an upload as it arrives): the
 * rows go to the dataset builder as they are read, so what is held is the
 * builder's codes, not the text. Errors are those of csv_parse and
 * csv_dataset on the whole text, the first in the same order: the
 * parser's (*malformed set) win over the dataset's, which are kept while
 * the rest is still parsed. create: NULL when out of memory; free with
 * csv_loader_destroy (NULL: no-op).
 */
struct csv_loader;
struct csv_loader *csv_loader_create(const char *sa_col, const char *group_col, const char *name);
/* A parse error stops reading (the rest is ignored); finish reports it. */
void csv_loader_feed(struct csv_loader *l, const char *data, size_t n);
/* The end of the text: *out (caller's, dataset_destroy) or the first
 * error, *malformed 1 when it is the parser's. */
enum pm_status csv_loader_finish(struct csv_loader *l, struct dataset **out, int *malformed,
				 struct pm_error *err);
void csv_loader_destroy(struct csv_loader *l);

/* ---- knowledge.c -------------------------------------------------------- */

enum rule_source { RULE_USER = 0, RULE_POSITIVE = 1, RULE_NEGATIVE = 2 };

/* Knowledge P(s | Qv) in [lo, hi]; an equality has lo == hi.
 * Qv = conjunction attr[i] = value[i], attr ascending, codes of ds. */
struct rule {
	uint32_t n_terms;
	uint32_t attr[DATASET_MAX_ATTRS];
	uint32_t value[DATASET_MAX_ATTRS];
	uint32_t sa;
	double lo, hi;
	enum rule_source source;
	/* mined rules: support and confidence numerator/denominator from the
	 * records: n_qv = n(Qv), n_qv_s = n(Qv and s); support = n_qv_s for a
	 * positive rule, n_qv - n_qv_s for a negative one. */
	uint64_t support, n_qv, n_qv_s;
};

/* A term of a statement (SPEC 3.1): coef * P_t, P_t = P(SA in then | if)
 * (a distribution term, person < 0) or P(person's SA in then). */
struct statement_term {
	double coef;
	long person; /* index into knowledge.people; -1: a distribution term */
	/* a distribution term's antecedent, as a rule's (n_terms 0: the
	 * whole table; cond.sa, lo, hi unused), and n(if) over the records
	 * (>= 1: an if that matches no record is an error); 1 for a person */
	struct rule cond;
	uint64_t n_qv;
	size_t n_then;
	uint32_t *then; /* SA codes, ascending and distinct; owned */
};

/* lo <= sum_t coef_t P_t <= hi; a missing bound is -INFINITY / INFINITY;
 * "value" v is lo = hi = v with equality set. */
struct statement {
	char *name; /* owned; NULL when not named */
	size_t n_terms;
	struct statement_term *terms; /* owned */
	double lo, hi;
	int equality;
};

/* A named person (Section 6 of the paper): one record of the table with
 * tuple `tuple`, in bucket `group` when known (else -1). */
struct individual {
	char *name; /* owned */
	uint32_t tuple;
	long group;
};

struct statements_index;

struct knowledge {
	size_t n, cap;
	struct rule *rules; /* owned */
	size_t n_statements, statements_cap;
	struct statement *statements; /* owned */
	size_t n_people, people_cap;
	struct individual *people; /* owned */
	/* statements.c's lookups (people and statements by name, named
	 * people per tuple), so that adding n of them is not O(n^2); owned,
	 * NULL until the first is added. It borrows the dataset's group
	 * labels and counts its tuples: all people and statements of one k
	 * are added against one dataset. */
	struct statements_index *index;
};

void knowledge_init(struct knowledge *k);
void knowledge_finish(struct knowledge *k);
enum pm_status knowledge_append(struct knowledge *k, const struct rule *r, struct pm_error *err);
/*
 * A user rule {"if": {attrs[i]: values[i]}, "then": sa, "probability": p}
 * (has_min/has_max for "min"/"max"). Names and values are resolved against
 * ds; errors are reported under field (e.g. "rules[3]"): those of
 * knowledge_resolve_if (unknown attribute, attribute repeated, value
 * absent from the data, an if that matches no record), unknown SA value
 * (with a "did you mean" when error_suggest finds one), a bound outside
 * [0, 1], no bound, "probability" with "min"/"max", min above max.
 * Without "probability" the rule is the interval min (default 0) to max
 * (default 1).
 */
enum pm_status knowledge_add_user(struct knowledge *k, const struct dataset *ds,
				  const char *const *attrs, const char *const *values,
				  size_t n_terms, const char *sa, int has_p, double p, int has_min,
				  double min, int has_max, double max, const char *field,
				  struct pm_error *err);
/*
 * The antecedent {attrs[i]: values[i]} (i < n) of a rule or of a
 * statement's term into out->attr/value (ascending attribute),
 * out->n_terms and out->n_qv = n(if) (N for n = 0: the whole table); the
 * other fields of out are left alone. Errors under field + ".if" (and
 * ".if.sex"): more conditions than attributes, an unknown attribute, one
 * given twice, a value absent from its attribute (these two with a "did
 * you mean"), and an if that matches no record (SPEC 3.1: nothing is
 * conditioned on it).
 */
enum pm_status knowledge_resolve_if(const struct dataset *ds, const char *const *attrs,
				    const char *const *values, size_t n, struct rule *out,
				    const char *field, struct pm_error *err);
/* The code of value in QI attribute a's dictionary into *out; else an
 * error under field: the value does not occur (with a "did you mean"). */
enum pm_status knowledge_resolve_value(const struct dataset *ds, size_t a, const char *value,
				       const char *field, uint32_t *out, struct pm_error *err);
/* The code of SA value sa into *out; else an error under field: unknown
 * sensitive value (with a "did you mean"). */
enum pm_status knowledge_resolve_sa(const struct dataset *ds, const char *sa, const char *field,
				    uint32_t *out, struct pm_error *err);
/* Writes "P(s | a=v, b=w) = 0.25" into buf. */
void knowledge_describe(const struct dataset *ds, const struct rule *r, char *buf, size_t len);
/* Does tuple q satisfy the antecedent of r? */
int knowledge_matches(const struct dataset *ds, const struct rule *r, uint32_t q);
/* n(Qv) over the dataset's records (published QI values). */
uint64_t knowledge_count_qv(const struct dataset *ds, const struct rule *r);

/* ---- statements.c ------------------------------------------------------- */

/* The longest name of a person or a statement, in bytes: names come back
 * in messages and conflict reports. */
#define STATEMENTS_MAX_NAME 256
/*
 * Limits of a statement's numbers (docs/operations.md, "Input limits").
 * A nonzero coef's magnitude is within [STATEMENTS_MIN_COEF,
 * STATEMENTS_MAX_COEF]: the LP and the solver hold each row to absolute
 * tolerances near 1e-9, so a smaller weight makes a row that reads as
 * 0 = 0, and the ratio of the two keeps a row's scaling within what
 * doubles resolve. Each term is a probability in [0, 1], so with at most
 * STATEMENTS_MAX_TERMS terms no sum leaves [-STATEMENTS_MAX_BOUND,
 * STATEMENTS_MAX_BOUND], and value, min and max are held there: a bound
 * beyond it says nothing a smaller one would not.
 */
#define STATEMENTS_MAX_TERMS 10000
#define STATEMENTS_MIN_COEF  1e-6
#define STATEMENTS_MAX_COEF  1e5
#define STATEMENTS_MAX_BOUND ((double)STATEMENTS_MAX_TERMS * STATEMENTS_MAX_COEF)

/*
 * A named person {"name": name, "qi": qi[0 .. n_qi), "group": group}
 * (group NULL: not known), appended to k->people with the tuple's index
 * and the group's bucket. Errors under field ("individuals[2]" + ".name",
 * ".qi", ".qi[1]", ".group"): a missing, empty, over-long
 * (STATEMENTS_MAX_NAME) or repeated name ("individuals[j]" names the
 * first: the people are taken to be numbered as k->people); qi not of
 * n_attrs values; a value absent from its attribute (with a "did you
 * mean"); a tuple not in the table; an unknown group (with a "did you
 * mean"), or one without the tuple; more named people of the tuple (or
 * of the tuple in that group) than the table has records for (SPEC 3.1).
 */
enum pm_status statements_add_individual(struct knowledge *k, const struct dataset *ds,
					 const char *name, const char *const *qi, size_t n_qi,
					 const char *group, const char *field,
					 struct pm_error *err);

/* One term of a statement as read: exactly one of has_if (its conditions
 * attrs/values[0 .. n_cond)) and person (NULL: none); then[0 .. n_then),
 * given as a list when then_list is set (errors name "then[1]"), else as
 * one value ("then"); coef (has_coef 0: 1). */
struct statement_term_in {
	int has_if;
	const char *const *attrs, *const *values;
	size_t n_cond;
	const char *person;
	const char *const *then;
	size_t n_then;
	int then_list;
	int has_coef;
	double coef;
};

/*
 * A statement min <= sum coef_t P_t <= max, or = value, appended to
 * k->statements; persons are looked up in k->people (add them first).
 * name may be NULL. A missing bound is -INFINITY / INFINITY; a term's
 * then is stored ascending, its n_qv is n(if) (1 for a person). Errors
 * under field ("statements[1]", then ".name", ".terms", ".terms[0]",
 * ".terms[0].if.age", ".terms[0].then[1]", ".terms[2].person", ".min",
 * ...): an empty, over-long or repeated name ("statements[j]" names the
 * first); no terms; a term with both or neither of if and person; those
 * of knowledge_resolve_if (an unknown attribute or value, an attribute
 * repeated, an if that matches no record); an unknown SA value or person
 * (with a "did you mean"); an empty then, or one with a value twice; a
 * coef, min, max or value that is not finite; value with min or max;
 * none of them; min above max. Nothing is appended on error.
 */
enum pm_status statements_add(struct knowledge *k, const struct dataset *ds, const char *name,
			      const struct statement_term_in *terms, size_t n_terms, int has_value,
			      double value, int has_min, double min, int has_max, double max,
			      const char *field, struct pm_error *err);
/* Frees k's statements, people and their index (knowledge_finish calls
 * it). */
void statements_clear(struct knowledge *k);
/* The name a conflict report gives statement i: "statements[i]", and
 * its "name" quoted after it when it has one; into buf (cut to len). */
void statements_describe(const struct knowledge *k, size_t i, char *buf, size_t len);
/* Index of the person called name in k->people, or -1. */
long statements_person(const struct knowledge *k, const char *name);

/* ---- miner.c ------------------------------------------------------------ */

struct miner_options {
	size_t positive;      /* K+ */
	size_t negative;      /* K- */
	uint64_t min_support; /* records, default 3 */
	size_t qi_attributes; /* T; 0 = every antecedent size 1..n_attrs */
	/* e >= 0: each mined rule P = c becomes the interval max(0, c - e)
	 * <= P <= min(1, c + e) (SPEC 3.1); 0: equalities */
	double vagueness;
	/* Polled between attribute sets (every antecedent size makes their
	 * number exponential in the attributes): a nonzero return stops the
	 * run with PM_ERR_CANCELLED. NULL: never. */
	int (*stop)(void *ctx);
	void *stop_ctx;
};

/* The most rules of each kind (K+, K-) a mine block may ask for: each mined
 * rule is a knowledge row of about 300 bytes plus its constraint row. The
 * codec checks it (docs/operations.md, "Document limits"). */
#define MINER_MAX_K 100000

/* How many rules of each kind a run found: K, or fewer when fewer rules
 * reach min_support (SPEC section 2 takes the top K of those that exist). */
struct miner_found {
	size_t positive, negative;
};

void miner_options_init(struct miner_options *o);
/* Appends the top K+ positive rules (best first) then the top K- negative
 * rules to out, as SPEC section 2 ranks them. Needs ground truth. */
enum pm_status miner_run(const struct dataset *ds, const struct miner_options *o,
			 struct knowledge *out, struct pm_error *err);
/* miner_run that also reports how many rules of each kind it appended in
 * *found (may be NULL; zeros when it fails). */
enum pm_status miner_run_counted(const struct dataset *ds, const struct miner_options *o,
				 struct knowledge *out, struct miner_found *found,
				 struct pm_error *err);

/* ---- postings.c --------------------------------------------------------- */

/* The lists of ds (dataset_builder_finish builds ds->by_value). */
enum pm_status postings_init(const struct dataset *ds, struct postings *o);
/* Frees the lists; NULL is a no-op. */
void postings_finish(struct postings *o);
/* The tuples that may match rule r: with[*lo .. *hi) of the returned list
 * (ds->by_value's shortest among r's terms), or, for NULL, every tuple
 * *lo .. *hi. Borrowed from ds. */
struct rule;
const uint32_t *postings_candidates(const struct dataset *ds, const struct rule *r, size_t *lo,
				    size_t *hi);

/* ---- invariants.c ------------------------------------------------------- */

enum row_kind { ROW_QI = 0, ROW_SA = 1, ROW_KNOWLEDGE = 2 };

/*
 * The linear system A y = c of Section 5, in records (y = N * P(q,s,b)).
 * Zero-invariants are applied by construction: cells exist only for q and s
 * present in b. Cells of bucket b are cell_off[b] .. cell_off[b+1], q-major:
 * cell_off[b] + i * h_b + j for the i-th q and j-th s of b (bq_*, bs_*).
 * Rows are CSR over cells, all coefficients 1: first every QI-invariant,
 * then every SA-invariant but the last of each bucket (the redundant one),
 * then one row per knowledge rule (possibly empty). row_ref is the bucket
 * for QI/SA rows, the rule index for knowledge rows.
 */
struct invariants {
	size_t n_groups; /* buckets, as in the dataset */
	size_t n_cells;
	size_t *cell_off; /* n_groups + 1 */
	uint32_t *cell_tuple, *cell_sa, *cell_group;
	size_t n_rows, n_qi_rows, n_sa_rows, n_knowledge_rows;
	size_t *row_off;    /* n_rows + 1 */
	uint32_t *row_cell; /* a row's cells, ascending */
	double *rhs;	    /* records */
	/* records: a row's upper bound, rhs itself but for a knowledge row
	 * of an interval rule (lo <= P <= hi), whose rhs is its lower bound */
	double *hi;
	uint8_t *row_kind;
	uint32_t *row_ref;
	/* the buckets a knowledge row touches, ascending: touched[0 ..
	 * n_touched), and a flag per bucket (bucket_touched) */
	uint32_t *touched;
	uint8_t *bucket_touched;
	size_t n_touched;
	uint64_t zero_invariants; /* |Q| * |S| * |B| - n_cells */
	/* Per bucket b: h_b (its distinct s), its first QI row (g_b of them:
	 * g_b = qi_row0[b + 1] - qi_row0[b]) and first SA row (h_b - 1), n(b);
	 * qi_row0 and sa_row0 have n_groups + 1 entries. */
	uint32_t *bucket_h;
	size_t *qi_row0, *sa_row0;
	double *bucket_n;
	double *sa_last; /* n(s, b) of b's last s, whose SA row is dropped */
	/*
	 * Per tuple q, for the posterior: its rows in the buckets it occurs
	 * in, ascending bucket (row o in occ_off[q] .. occ_off[q+1] is the
	 * h_b cells from occ_cell[o] of bucket occ_bucket[o], n(q,b) =
	 * occ_count[o] records), and its values, the distinct s of those
	 * rows ascending ("slots": slot_sa[slot_off[q] .. slot_off[q+1]));
	 * cell c is in slot cell_slot[c]. The slots with records (none in
	 * the published form): rec_slot[rec_off[q] .. rec_off[q+1])
	 * ascending, holding n(q,s) = rec_count[] records.
	 */
	size_t *occ_off, *slot_off, *rec_off, n_slots;
	uint32_t *occ_bucket, *occ_cell, *occ_count;
	uint32_t *slot_sa, *cell_slot, *rec_slot, *rec_count;
	/*
	 * A knowledge row takes each slot's cells whole (a rule matches
	 * tuples: every cell of (q, s) or none), so the knowledge rows
	 * through a cell are its slot's: slot_row[slot_row_off[t] ..
	 * slot_row_off[t + 1]) for slot t, ascending. The rows through a
	 * bucket are its cells' slots' (invariants_cell_rows, cell by cell).
	 * The other way, knowledge row r's slots in the order of its tuples:
	 * row_slot[row_slot_off[k] .. row_slot_off[k + 1]) for k = r minus
	 * the first knowledge row (invariants_row_slots).
	 */
	size_t *slot_row_off, *row_slot_off;
	uint32_t *slot_row, *row_slot;
};

/* Builds the system for ds and the equality rules of k (k may be NULL).
 * Caller frees with invariants_finish. */
enum pm_status invariants_build(const struct dataset *ds, const struct knowledge *k,
				struct invariants *inv, struct pm_error *err);
void invariants_finish(struct invariants *inv);

/* Is row r an interval (lo <= a.y <= hi with lo < hi: rhs is lo)? */
static inline int invariants_interval(const struct invariants *inv, size_t r)
{
	return inv->hi[r] > inv->rhs[r];
}

/* The first interval row, or inv->n_rows if none. */
static inline size_t invariants_first_interval(const struct invariants *inv)
{
	size_t r = 0;

	while (r < inv->n_rows && !invariants_interval(inv, r))
		r++;
	return r;
}

/* Does some knowledge row touch bucket b? Without one its maximum is the
 * closed form, whatever else the rows force. */
static inline int invariants_touched(const struct invariants *inv, size_t b)
{
	return inv->bucket_touched[b];
}

/* Knowledge row r's slots, *n of them. */
static inline const uint32_t *invariants_row_slots(const struct invariants *inv, size_t r,
						   size_t *n)
{
	size_t k = r - inv->n_qi_rows - inv->n_sa_rows;

	*n = inv->row_slot_off[k + 1] - inv->row_slot_off[k];
	return inv->row_slot + inv->row_slot_off[k];
}

/* The knowledge rows through cell c, *n of them (its slot's). */
static inline const uint32_t *invariants_cell_rows(const struct invariants *inv, size_t c,
						   size_t *n)
{
	uint32_t t = inv->cell_slot[c];

	*n = inv->slot_row_off[t + 1] - inv->slot_row_off[t];
	return inv->slot_row + inv->slot_row_off[t];
}

/* Bucket b's distinct q (g_b), n(q_i, b) and n(s_j, b) for its i-th q and
 * j-th s (the last s has no row: sa_last). */
static inline size_t invariants_bucket_g(const struct invariants *inv, size_t b)
{
	return inv->qi_row0[b + 1] - inv->qi_row0[b];
}

static inline double invariants_qi_count(const struct invariants *inv, size_t b, size_t i)
{
	return inv->rhs[inv->qi_row0[b] + i];
}

static inline double invariants_sa_count(const struct invariants *inv, size_t b, size_t j)
{
	return j + 1 < inv->bucket_h[b] ? inv->rhs[inv->sa_row0[b] + j] : inv->sa_last[b];
}

/* ---- lifted.c ----------------------------------------------------------- */

/*
 * The pseudonym model of SPEC 3.1 (Section 6 of the paper), for knowledge
 * with statements or named people. Its cells are the system's cells of
 * inv (0 .. inv->n_cells: the unnamed people of each (q, s, b)), then
 * each named person's cells x[i, s, b], one per bucket b that may hold
 * them and value s of b (person i's: person_off[i] .. person_off[i + 1]).
 * Unnamed people of one tuple are interchangeable, so they stay
 * aggregated: the model grows with the named people, not with N.
 *
 * Its rows, CSR over cells with coefficients (records): every row of inv
 * (a QI row also sums the named people of its tuple in its bucket, an SA
 * or rule row the person cells of its value and tuples), then one row per
 * named person (their cells sum to 1 record), then one per statement,
 * sum_t coef_t P_t scaled by scale[i] records (the smallest n(if) among
 * its terms, 1 with a person term). Every row is lo <= a.y <= hi: a
 * missing statement bound becomes the value the row cannot pass (each
 * P_t is in [0, 1]) widened by one scale, so that it never binds.
 */
struct lifted {
	const struct invariants *inv; /* borrowed */
	size_t n_cells, n_people;
	size_t *person_off; /* n_people + 1, cell numbers (from inv->n_cells) */
	/* per person cell (index - inv->n_cells): the system cell of its
	 * (q, s, b), into which it aggregates */
	uint32_t *agg;
	/* the person cells of bucket b: pb_cell[pb_off[b] .. pb_off[b + 1]) */
	size_t *pb_off;
	uint32_t *pb_cell;
	size_t n_rows, person_row0, statement_row0, n_statements;
	size_t *row_off;
	uint32_t *row_cell;
	double *row_coef;
	double *lo, *hi;
	double *scale; /* per statement: records per unit of its sum */
};

/* Builds the model of ds, k (its rules built into inv by
 * invariants_build, its people and statements) into m; caller frees with
 * lifted_finish, also after a failure. */
enum pm_status lifted_build(const struct dataset *ds, const struct knowledge *k,
			    const struct invariants *inv, struct lifted *m, struct pm_error *err);
void lifted_finish(struct lifted *m);
/* Does k need the pseudonym model (statements or named people)? */
static inline int lifted_needed(const struct knowledge *k)
{
	return k && (k->n_statements > 0 || k->n_people > 0);
}

/* ---- anatomy.c ---------------------------------------------------------- */

struct anatomy_options {
	size_t l;      /* diversity, >= 2 */
	uint64_t seed; /* RNG seed */
	int set_aside; /* drop most frequent SA values until l-eligible */
};

/*
 * Anatomy (Xiao & Tao, VLDB 2006): groups the rows of t into buckets of l
 * distinct SA values (the residue joins groups lacking its value). qi_cols
 * names the QI columns. Produces a records-form dataset with group labels
 * "1", "2", ...; *n_set_aside (may be NULL) receives the number of records
 * set aside. Caller frees *out with dataset_destroy.
 */
enum pm_status anatomy_run(const struct csv_table *t, const char *sa_col,
			   const char *const *qi_cols, size_t n_qi, const struct anatomy_options *o,
			   struct dataset **out, size_t *n_set_aside, struct pm_error *err);

#endif
