/* store_jobs.c, on either back end: claims take the oldest queued job and
 * count an attempt; a job that crashed a node before is taken only when
 * asked for; heartbeats renew only the owning attempt's lease; a result
 * (and a sweep's points so far) is accepted only from the attempt that owns
 * the job; expired leases go back to the queue with a crash counted, and
 * fail at max; and (PostgreSQL, where several nodes share the store) four
 * connections claiming at once never take one job twice. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "store.h"

static char root[] = "/tmp/pmaxent_jobs_XXXXXX";

static struct store *open_store(const char *where)
{
	struct store *s = NULL;
	struct pm_error err = {0};

	if (store_open(where, &s, &err))
		fprintf(stderr, "store_open(%s): %s\n", where, err.message);
	CHECK(s != NULL);
	return s;
}

/* n analyses an_<prefix>_<i> of dataset ds_<prefix>, queued in order. */
static void queue_n(struct store *s, const char *prefix, int n)
{
	struct pm_error err = {0};
	char ds[32], an[48];

	snprintf(ds, sizeof ds, "ds_%s", prefix);
	CHECK(store_dataset_insert(s, ds, "t", "{}", "{}", &err) == PM_OK);
	for (int i = 0; i < n; i++) {
		snprintf(an, sizeof an, "an_%s_%03d", prefix, i);
		CHECK(store_analysis_insert(s, an, "t", ds, "{}", &err) == PM_OK);
	}
}

static void status_is(struct store *s, const char *id, const char *status, int crashes)
{
	struct store_row r = {0};
	struct pm_error err = {0};

	CHECK(store_analysis_get(s, id, NULL, &r, &err) == PM_OK);
	CHECK_STR(r.status ? r.status : "", status);
	CHECK(r.crashes == crashes);
	store_row_finish(&r);
}

static void progress_is(struct store *s, const char *id, const char *want)
{
	struct store_row r = {0};
	struct pm_error err = {0};

	CHECK(store_analysis_get(s, id, NULL, &r, &err) == PM_OK);
	CHECK_STR(r.progress ? r.progress : "(null)", want);
	store_row_finish(&r);
}

static void test_claims(struct store *s)
{
	struct store_claim c, d;
	struct pm_error err = {0};
	int found, owned;
	int64_t queued;

	queue_n(s, "a", 3);
	CHECK(store_job_queued(s, &queued, &err) == PM_OK && queued == 3);
	CHECK(store_job_claim(s, 0, "node1", 60000, 0, &c, &found, &err) == PM_OK && found);
	CHECK_STR(c.id, "an_a_000");
	CHECK(c.attempt == 1 && c.crashes == 0);
	status_is(s, "an_a_000", "running", 0);
	CHECK(store_job_heartbeat(s, c.id, "node1", 1, 60000, "{\"iterations\":3}", &owned, &err) ==
		  PM_OK &&
	      owned);
	progress_is(s, c.id, "{\"iterations\":3}");
	CHECK(store_job_heartbeat(s, c.id, "node2", 1, 60000, NULL, &owned, &err) == PM_OK &&
	      !owned);
	CHECK(store_job_heartbeat(s, c.id, "node1", 2, 60000, NULL, &owned, &err) == PM_OK &&
	      !owned);
	/* a cancel ends ownership: the heartbeat tells the node */
	CHECK(store_job_claim(s, 0, "node2", 60000, 0, &d, &found, &err) == PM_OK && found);
	CHECK_STR(d.id, "an_a_001");
	CHECK(store_analysis_transition(s, d.id, "queued|running", "cancelled", NULL, &err) ==
	      PM_OK);
	CHECK(store_job_heartbeat(s, d.id, "node2", 1, 60000, NULL, &owned, &err) == PM_OK &&
	      !owned);
	CHECK(store_job_finish(s, d.id, "node2", 1, "succeeded", "{}", &err) == PM_ERR_CONFLICT);
	status_is(s, d.id, "cancelled", 0);
	/* the owner's result is taken */
	CHECK(store_job_finish(s, c.id, "node1", 1, "succeeded", "{\"r\":1}", &err) == PM_OK);
	status_is(s, c.id, "succeeded", 0);
	progress_is(s, c.id, "(null)");
	CHECK(store_job_finish(s, c.id, "node1", 1, "failed", "{}", &err) == PM_ERR_CONFLICT);
	CHECK(store_job_queued(s, &queued, &err) == PM_OK && queued == 1);
	/* no sweep queued */
	CHECK(store_job_claim(s, 1, "node1", 60000, 1, &d, &found, &err) == PM_OK && !found);
}

/* A lease that ran out: back in the queue with a crash; a job that
 * crashed is claimed only with with_crashed; the dead attempt's result
 * is refused; at max crashes it fails with the problem. */
static void test_leases(struct store *s)
{
	struct store_claim c, d;
	struct store_reaped r;
	struct pm_error err = {0};
	int found;

	CHECK(store_job_claim(s, 0, "dead", -1000, 0, &c, &found, &err) == PM_OK && found);
	CHECK_STR(c.id, "an_a_002");
	CHECK(store_job_reap(s, 2, "{\"p\":1}", 0, &r, &err) == PM_OK);
	CHECK(r.requeued == 1 && r.failed == 0);
	status_is(s, c.id, "queued", 1);
	CHECK(store_job_claim(s, 0, "node1", 60000, 0, &d, &found, &err) == PM_OK && !found);
	CHECK(store_job_claim(s, 0, "node1", -1000, 1, &d, &found, &err) == PM_OK && found);
	CHECK(!strcmp(d.id, c.id) && d.attempt == 2 && d.crashes == 1);
	CHECK(store_job_finish(s, c.id, "dead", 1, "succeeded", "{}", &err) == PM_ERR_CONFLICT);
	/* a live lease is left alone */
	queue_n(s, "b", 1);
	CHECK(store_job_claim(s, 0, "node3", 60000, 0, &c, &found, &err) == PM_OK && found);
	CHECK(store_job_reap(s, 2, "{\"p\":1}", 0, &r, &err) == PM_OK);
	CHECK(r.requeued == 0 && r.failed == 1 && r.failed_analyses == 1);
	status_is(s, d.id, "failed", 2);
	status_is(s, c.id, "running", 0);
	/* a node alone on its store, just started: every running job is dead */
	CHECK(store_job_reap(s, 5, "{}", 1, &r, &err) == PM_OK && r.requeued == 1);
	status_is(s, c.id, "queued", 1);
}

/* A sweep's points so far are written only by the attempt that owns it:
 * not by another node, nor by an attempt whose lease ran out and was
 * taken over. */
static void test_sweep_points(struct store *s)
{
	struct store_claim c, d;
	struct store_reaped r;
	struct store_row row = {0};
	struct pm_error err = {0};
	int found;

	CHECK(store_dataset_insert(s, "ds_sw", "t", "{}", "{}", &err) == PM_OK);
	CHECK(store_sweep_insert(s, "sw_1", "t", "ds_sw", "{}", &err) == PM_OK);
	CHECK(store_job_claim(s, 1, "slow", -1000, 0, &c, &found, &err) == PM_OK && found);
	CHECK_STR(c.id, "sw_1");
	CHECK(store_sweep_points(s, c.id, "slow", 1, "[1]", &err) == PM_OK);
	CHECK(store_sweep_points(s, c.id, "other", 1, "[2]", &err) == PM_ERR_CONFLICT);
	/* its lease ran out; another node takes it over */
	CHECK(store_job_reap(s, 5, "{}", 0, &r, &err) == PM_OK && r.requeued == 1);
	CHECK(store_job_claim(s, 1, "next", 60000, 1, &d, &found, &err) == PM_OK && found);
	CHECK(!strcmp(d.id, "sw_1") && d.attempt == 2);
	CHECK(store_sweep_points(s, c.id, "slow", 1, "[3]", &err) == PM_ERR_CONFLICT);
	CHECK(strstr(err.message, "not running as attempt 1 of slow") != NULL);
	CHECK(store_sweep_points(s, d.id, "next", 2, "[4]", &err) == PM_OK);
	CHECK(store_sweep_get(s, "sw_1", NULL, &row, &err) == PM_OK);
	CHECK_STR(row.result ? row.result : "(null)", "[4]");
	store_row_finish(&row);
	CHECK(store_job_finish(s, d.id, "next", 2, "succeeded", "[5]", &err) == PM_OK);
	CHECK(store_sweep_points(s, d.id, "next", 2, "[6]", &err) == PM_ERR_CONFLICT);
}

struct claimer {
	const char *where;
	char name[16];
	int claimed, errors;
	char (*seen)[64];
	pthread_mutex_t *mu;
	int *n_seen;
};

static void *claim_all(void *arg)
{
	struct claimer *c = arg;
	struct store *s = open_store(c->where);
	struct pm_error err = {0};
	struct store_claim cl;
	int found = 1;

	while (s && found) {
		if (store_job_claim(s, 0, c->name, 60000, 1, &cl, &found, &err)) {
			c->errors++;
			break;
		}
		if (!found)
			break;
		c->claimed++;
		c->errors += store_job_finish(s, cl.id, c->name, cl.attempt, "succeeded", "{}",
					      &err) != PM_OK;
		pthread_mutex_lock(c->mu);
		snprintf(c->seen[(*c->n_seen)++], 64, "%s", cl.id);
		pthread_mutex_unlock(c->mu);
	}
	store_close(s);
	return NULL;
}

static int cmp_id(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void test_nodes(const char *where, struct store *s)
{
	static char seen[400][64];
	pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	struct claimer c[4];
	pthread_t t[4];
	int n_seen = 0, total = 0, dup = 0;

	queue_n(s, "n", 200);
	for (int i = 0; i < 4; i++) {
		c[i] = (struct claimer){.where = where, .seen = seen, .mu = &mu, .n_seen = &n_seen};
		snprintf(c[i].name, sizeof c[i].name, "node%d", i);
		CHECK(pthread_create(&t[i], NULL, claim_all, &c[i]) == 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		CHECK(c[i].errors == 0);
		total += c[i].claimed;
		printf("node%d claimed %d\n", i, c[i].claimed);
	}
	qsort(seen, (size_t)n_seen, sizeof seen[0], cmp_id);
	for (int i = 1; i < n_seen; i++)
		dup += !strcmp(seen[i], seen[i - 1]);
	/* the one left queued by test_leases, and the 200 */
	CHECK(total == 201 && n_seen == 201 && dup == 0);
}

/* A result stored in chunks (store_results.c): only by the attempt that
 * owns the job; its head (length, tag, summary) without the text; its
 * chunks, which make the whole text again (bytes, not characters:
 * UTF-8 in it); store_analysis_get's text; gone with the analysis. */
static void test_results(struct store *s)
{
	size_t n = 2 * STORE_RESULT_CHUNK + STORE_RESULT_CHUNK / 2 + 3, len, got = 0;
	char *text = malloc(n + 1), *part, tag[STORE_TAG_SIZE];
	struct store_claim c;
	struct store_row r = {0};
	struct store_result m = {0};
	struct pm_error err = {0};
	int found, k;

	for (size_t i = 0; i < n; i++)
		text[i] = "ab\xc3\xa9{}"[i % 6];
	text[n] = 0;
	queue_n(s, "res", 1);
	CHECK(store_job_claim(s, 0, "node1", 60000, 0, &c, &found, &err) == PM_OK && found);
	CHECK_STR(c.id, "an_res_000");
	CHECK(store_analysis_succeed(s, c.id, "node1", c.attempt + 1, text, n, "{}", &err) ==
	      PM_ERR_CONFLICT);
	CHECK(store_analysis_succeed(s, c.id, "node1", c.attempt, text, n, "{\"s\":1}", &err) ==
	      PM_OK);
	CHECK(store_analysis_head(s, c.id, "t", 1, &r, &m, &err) == PM_OK);
	/* the first chunks came with it */
	CHECK(m.first_len[0] == 2 && !strcmp(m.first[0], "{}"));
	CHECK(m.first_len[1] == STORE_RESULT_CHUNK &&
	      !memcmp(m.first[1], text, STORE_RESULT_CHUNK));
	store_text_tag(text, n, tag);
	CHECK(m.len == (int64_t)n && !strcmp(m.tag, tag) && !m.legacy && m.request_len == 2);
	CHECK(store_text_chunk(s, c.id, STORE_REQUEST, 0, &part, &len, &err) == PM_OK);
	CHECK_STR(part, "{}");
	free(part);
	CHECK_STR(m.summary, "{\"s\":1}");
	CHECK_STR(r.status, "succeeded");
	CHECK(!r.result && !r.request);
	store_row_finish(&r);
	store_result_finish(&m);
	CHECK(store_analysis_head(s, c.id, "other", 0, &r, &m, &err) == PM_ERR_NOT_FOUND);
	for (k = 0; store_text_chunk(s, c.id, STORE_RESULT, k, &part, &len, &err) == PM_OK; k++) {
		CHECK(len == (k < 2 ? STORE_RESULT_CHUNK : n - 2 * STORE_RESULT_CHUNK));
		CHECK(got + len <= n && !memcmp(part, text + got, len));
		got += len;
		free(part);
	}
	CHECK(k == 3 && got == n && err.status == PM_ERR_NOT_FOUND);
	CHECK(store_analysis_get(s, c.id, "t", &r, &err) == PM_OK);
	CHECK(r.result && strlen(r.result) == n && !strcmp(r.result, text));
	CHECK_STR(r.request, "{}");
	store_row_finish(&r);
	CHECK(store_dataset_delete(s, "ds_res", "t", &err) == PM_OK);
	CHECK(store_text_chunk(s, c.id, STORE_RESULT, 0, &part, &len, &err) == PM_ERR_NOT_FOUND);
	CHECK(store_text_chunk(s, c.id, STORE_REQUEST, 0, &part, &len, &err) == PM_ERR_NOT_FOUND);
	free(text);
}

int main(int argc, char **argv)
{
	char dir[4096];
	struct store *s;

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(dir, sizeof dir, "%s/var", root);
	s = open_store(argc > 1 ? argv[1] : dir);
	if (s) {
		test_claims(s);
		test_leases(s);
		test_sweep_points(s);
		/* several connections to one store: PostgreSQL's case */
		if (argc > 1)
			test_nodes(argv[1], s);
		test_results(s);
		store_close(s);
	}
	snprintf(dir, sizeof dir, "rm -rf '%s'", root);
	CHECK(system(dir) == 0);
	return check_done();
}
