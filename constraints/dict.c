/* Sorted string dictionaries: codes compare like the values, bytewise. */
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

long dict_find(const struct dict *d, const char *s)
{
	size_t lo = 0, hi = d->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(d->str[mid], s);

		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

void dict_finish(struct dict *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++)
		free(d->str[i]);
	free(d->str);
	d->str = NULL;
	d->n = 0;
}
