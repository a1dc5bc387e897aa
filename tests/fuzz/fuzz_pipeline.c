/* libFuzzer: one input = a JSON array [dataset, knowledge, solver] run
 * through the whole pipeline; must never crash or leak. */
#include <stdint.h>
#include <stdlib.h>
#include "server.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_error_t e;
	json_t *j = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &e), *out = NULL;
	struct pm_error err = {0};

	if (!j)
		return 0;
	if (json_is_array(j))
		pipeline_run(json_array_get(j, 0), json_array_get(j, 1), json_array_get(j, 2), 0,
			     &out, &err);
	json_decref(out);
	json_decref(j);
	return 0;
}
