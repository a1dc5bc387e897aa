/* store_tenants.c, on either back end (issue 36): claims go round robin
 * by tenant, not to the globally oldest job; a tenant over its share of
 * the queue, its dataset count or its bytes is refused with the limit
 * named, and others are not; the cursor key is made once and is the same
 * for every connection to the store and after a restart. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "store.h"

static char root[] = "/tmp/pmaxent_tenants_XXXXXX";

static struct store *open_store(const char *where)
{
	struct store *s = NULL;
	struct pm_error err = {0};

	if (store_open(where, &s, &err))
		fprintf(stderr, "store_open(%s): %s\n", where, err.message);
	CHECK(s != NULL);
	return s;
}

/* A dataset ds_<tenant> (the first call per tenant), then n analyses
 * an_<tenant>_<i> from i = from on, queued in order. */
static void queue_n(struct store *s, const char *tenant, int from, int n)
{
	struct pm_error err = {0};
	char ds[32], an[48];

	snprintf(ds, sizeof ds, "ds_%s", tenant);
	if (from == 0)
		CHECK(store_dataset_insert(s, ds, tenant, "{}", "{}", &err) == PM_OK);
	for (int i = from; i < from + n; i++) {
		snprintf(an, sizeof an, "an_%s_%03d", tenant, i);
		CHECK(store_analysis_insert(s, an, tenant, ds, "{}", &err) == PM_OK);
	}
}

/* Claims every queued analysis, writing the tenant of each claim (the
 * letter after "an_") into order. */
static void claim_all(struct store *s, char *order, size_t size)
{
	struct store_claim c;
	struct pm_error err = {0};
	size_t n = 0;
	int found = 1;

	while (n + 1 < size && found) {
		CHECK(store_job_claim(s, 0, "node", 60000, 0, &c, &found, &err) == PM_OK);
		if (found)
			order[n++] = c.id[3];
	}
	order[n] = '\0';
}

/* A queues six, then B two, then C one: each claim is the next tenant's
 * turn while more than one has work. The old claim took A's six first. */
static void test_round_robin(struct store *s)
{
	char order[32];

	queue_n(s, "A", 0, 6);
	queue_n(s, "B", 0, 2);
	queue_n(s, "C", 0, 1);
	claim_all(s, order, sizeof order);
	CHECK_STR(order, "ABCABAAAA");
	/* turns persist: A just had many, so B's next job goes first */
	queue_n(s, "A", 6, 2);
	queue_n(s, "B", 2, 1);
	claim_all(s, order, sizeof order);
	CHECK_STR(order, "BAA");
}

/* At most three queued per tenant; a claim frees a place. */
static void test_queue_share(struct store *s)
{
	struct store_limits l = {.queued = 3};
	struct pm_error err = {0};
	char order[8];

	store_set_limits(s, &l);
	queue_n(s, "D", 0, 3);
	CHECK(store_analysis_insert(s, "an_D_003", "D", "ds_D", "{}", &err) == PM_ERR_BUSY);
	CHECK_STR(err.field, "queue_per_tenant");
	CHECK_CONTAINS(err.message, "--queue-per-tenant 3");
	CHECK(store_sweep_insert(s, "sw_D_000", "D", "ds_D", "{}", &err) == PM_ERR_BUSY);
	queue_n(s, "E", 0, 3); /* another tenant is not held back */
	claim_all(s, order, 2);
	CHECK_STR(order, "D");
	CHECK(store_analysis_insert(s, "an_D_003", "D", "ds_D", "{}", &err) == PM_OK);
	claim_all(s, order, sizeof order);
	CHECK_STR(order, "EDEDED");
	l.queued = 0;
	store_set_limits(s, &l);
}

/* At most three datasets, then at most 1000 bytes, per tenant. */
static void test_quotas(struct store *s)
{
	struct store_limits l = {.datasets = 3};
	struct pm_error err = {0};
	char body[700], id[32];

	store_set_limits(s, &l);
	for (int i = 0; i < 3; i++) {
		snprintf(id, sizeof id, "ds_q%d", i);
		CHECK(store_dataset_insert(s, id, "Q", "{}", "{}", &err) == PM_OK);
	}
	CHECK(store_dataset_insert(s, "ds_q3", "Q", "{}", "{}", &err) == PM_ERR_TOO_LARGE);
	CHECK_STR(err.field, "tenant_max_datasets");
	CHECK_CONTAINS(err.message, "--tenant-max-datasets 3");
	CHECK(store_dataset_insert(s, "ds_r0", "R", "{}", "{}", &err) == PM_OK);
	CHECK(store_dataset_delete(s, "ds_q0", "Q", &err) == PM_OK);
	CHECK(store_dataset_insert(s, "ds_q3", "Q", "{}", "{}", &err) == PM_OK);

	l = (struct store_limits){.bytes = 1000};
	store_set_limits(s, &l);
	memset(body, 'x', 600);
	body[600] = '\0';
	CHECK(store_dataset_insert(s, "ds_b0", "B2", "{}", body, &err) == PM_OK);
	CHECK(store_dataset_insert(s, "ds_b1", "B2", "{}", body, &err) == PM_ERR_TOO_LARGE);
	CHECK_STR(err.field, "tenant_max_bytes");
	CHECK_CONTAINS(err.message, "--tenant-max-bytes");
	body[300] = '\0';
	CHECK(store_dataset_insert(s, "ds_b1", "B2", "{}", body, &err) == PM_OK);
	l.bytes = 0;
	store_set_limits(s, &l);
}

/* One key per store: the same from a second connection and after a
 * restart, and not all zero. */
static void test_key(struct store **sp, const char *where)
{
	unsigned char key[STORE_KEY_BYTES], zero[STORE_KEY_BYTES] = {0};
	struct store *other;

	memcpy(key, store_cursor_key(*sp), sizeof key);
	CHECK(memcmp(key, zero, sizeof key) != 0);
	if (!strncmp(where, "postgres", 8)) { /* a second node at once */
		other = open_store(where);
		CHECK(other && !memcmp(store_cursor_key(other), key, sizeof key));
		store_close(other);
	}
	store_close(*sp);
	*sp = open_store(where);
	CHECK(*sp && !memcmp(store_cursor_key(*sp), key, sizeof key));
}

int main(int argc, char **argv)
{
	const char *where = argc > 1 ? argv[1] : NULL;
	struct store *s;

	if (!where && !(where = mkdtemp(root))) {
		perror("mkdtemp");
		return 1;
	}
	s = open_store(where);
	if (!s)
		return check_done();
	test_round_robin(s);
	test_queue_share(s);
	test_quotas(s);
	test_key(&s, where);
	store_close(s);
	if (argc < 2) {
		char cmd[sizeof root + 16];

		snprintf(cmd, sizeof cmd, "rm -rf %s", root);
		CHECK(system(cmd) == 0);
	}
	return check_done();
}
