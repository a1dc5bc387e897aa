/*
 * Statements and named people (SPEC 3.1): linear combinations of
 * probabilities bounded by min/max/value, and the people their person
 * terms name, resolved against a dataset.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "constraints.h"

void statements_clear(struct knowledge *k)
{
	for (size_t i = 0; i < k->n_statements; i++) {
		for (size_t t = 0; t < k->statements[i].n_terms; t++)
			free(k->statements[i].terms[t].then);
		free(k->statements[i].terms);
		free(k->statements[i].name);
	}
	for (size_t i = 0; i < k->n_people; i++)
		free(k->people[i].name);
	free(k->statements);
	free(k->people);
	k->statements = NULL;
	k->people = NULL;
	k->n_statements = k->statements_cap = k->n_people = k->people_cap = 0;
}

void statements_describe(const struct knowledge *k, size_t i, char *buf, size_t len)
{
	if (k->statements[i].name)
		snprintf(buf, len, "statements[%zu] \"%s\"", i, k->statements[i].name);
	else
		snprintf(buf, len, "statements[%zu]", i);
}
