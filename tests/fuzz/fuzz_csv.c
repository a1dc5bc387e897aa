/* libFuzzer: CSV text -> table -> dataset (records form, "sa"/"group"
 * taken from the last two columns) -> anatomy with l = 2. */
#include <stdint.h>
#include <stdlib.h>
#include "constraints.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct csv_table t = {0};
	struct pm_error err = {0};
	struct dataset *ds = NULL, *an = NULL;
	struct anatomy_options o = {2, 1, 1};
	size_t aside;

	if (csv_parse((const char *)data, size, &t, &err) == PM_OK && t.n_cols >= 3) {
		const char *qi[1] = {t.header[0]};

		csv_dataset(&t, t.header[t.n_cols - 1], t.header[t.n_cols - 2], NULL, &ds, &err);
		anatomy_run(&t, t.header[t.n_cols - 1], qi, 1, &o, &an, &aside, &err);
	}
	dataset_destroy(ds);
	dataset_destroy(an);
	csv_table_finish(&t);
	return 0;
}
