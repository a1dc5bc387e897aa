/* libFuzzer: CSV text -> table -> dataset (records form, "sa"/"group"
 * taken from the last two columns) -> anatomy with l = 2; the same text
 * through the incremental loader in three pieces (cut where the input's
 * first bytes say) must give the same dataset or the same error; the
 * dataset packed and unpacked must come back byte for byte; and the raw
 * input read as a packed blob must fail cleanly or give a dataset. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "constraints.h"

static unsigned char *pack(const struct dataset *ds, size_t *len)
{
	struct pm_error err = {0};
	unsigned char *blob = NULL;

	*len = 0;
	if (ds && dataset_pack(ds, &blob, len, &err))
		abort();
	return blob;
}

/* The loader on the text in three pieces against csv_parse + csv_dataset. */
static void streamed(const char *text, size_t size, enum pm_status want_st,
		     const struct pm_error *want, const struct dataset *want_ds, const char *sa,
		     const char *group)
{
	struct csv_loader *l = csv_loader_create(sa, group, NULL);
	struct pm_error err = {0};
	struct dataset *ds = NULL;
	size_t a = size ? (unsigned char)text[0] % (size + 1) : 0;
	size_t b = size > 1 ? a + (unsigned char)text[1] % (size - a + 1) : a;
	size_t la, lb;
	unsigned char *pa, *pb;
	int malformed;

	if (!l)
		return;
	csv_loader_feed(l, text, a);
	csv_loader_feed(l, text + a, b - a);
	csv_loader_feed(l, text + b, size - b);
	if (csv_loader_finish(l, &ds, &malformed, &err) != want_st)
		abort();
	if (want_st && (strcmp(err.field, want->field) || strcmp(err.message, want->message)))
		abort();
	pa = pack(want_ds, &la);
	pb = pack(ds, &lb);
	if (la != lb || (la && memcmp(pa, pb, la)))
		abort();
	free(pa);
	free(pb);
	dataset_destroy(ds);
	csv_loader_destroy(l);
}

static void round_trip(const struct dataset *ds)
{
	struct pm_error err = {0};
	struct dataset *back = NULL;
	size_t la, lb;
	unsigned char *a = pack(ds, &la), *b;

	if (!ds)
		return;
	if (dataset_unpack(a, la, &back, &err))
		abort();
	b = pack(back, &lb);
	if (la != lb || memcmp(a, b, la))
		abort();
	free(a);
	free(b);
	dataset_destroy(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct csv_table t = {0};
	struct pm_error err = {0};
	struct dataset *ds = NULL, *an = NULL, *raw = NULL;
	struct anatomy_options o = {2, 1, 1};
	enum pm_status st;
	size_t aside;

	if (csv_parse((const char *)data, size, &t, &err) == PM_OK && t.n_cols >= 3) {
		const char *qi[1] = {t.header[0]};
		const char *sa = t.header[t.n_cols - 1], *group = t.header[t.n_cols - 2];

		st = csv_dataset(&t, sa, group, NULL, &ds, &err);
		streamed((const char *)data, size, st, &err, ds, sa, group);
		round_trip(ds);
		anatomy_run(&t, t.header[t.n_cols - 1], qi, 1, &o, &an, &aside, &err);
	}
	dataset_unpack(data, size, &raw, &err);
	dataset_destroy(raw);
	dataset_destroy(ds);
	dataset_destroy(an);
	csv_table_finish(&t);
	return 0;
}
