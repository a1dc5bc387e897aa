/*
 * Private to the codec's way in (codec.c, codec_knowledge.c): the input
 * helpers both readers use, so that every document gets the same types,
 * messages and strictness. Not part of the public API (server.h).
 */
#ifndef PMAXENT_CODEC_INTERNAL_H
#define PMAXENT_CODEC_INTERNAL_H

#include "server.h"

/* Room for the text of a JSON number ("%lld" or "%.17g"), a field name,
 * and the name of a row or an element ("statements[12].terms[3]"). */
#define CODEC_NUM_LEN	32
#define CODEC_FIELD_LEN 256
#define CODEC_WHERE_LEN 48

/* "an object", "a string", ... ("nothing" for NULL); static storage. */
const char *codec_type_name(const json_t *j);
/* The text a JSON value stands for as a data value: strings as they are,
 * numbers as their JSON text (so 39 and "39" are the same value); NULL
 * for any other type. buf holds CODEC_NUM_LEN bytes; the result is
 * borrowed from v or buf. */
const char *codec_value_text(const json_t *v, char *buf);
/* Wrong type or missing: "is missing; it must be X" / "must be X, got Y"
 * under field; returns PM_ERR_INPUT. */
enum pm_status codec_bad_value(struct pm_error *err, const char *field, const char *want,
			       const json_t *v);
/* Refuses the first key of obj that is not in known (NULL-terminated), as
 * where.key (key alone at the top of a document), with a "did you mean"
 * when one is close (error_suggest), else the list of the keys that are. */
enum pm_status codec_check_keys(const json_t *obj, const char *where, const char *const *known,
				struct pm_error *err);
/* row must be an object: "must be an object, got X" under where. */
enum pm_status codec_check_row(const json_t *row, const char *where, struct pm_error *err);
/* obj[key] as a data value (string or number) into *out (borrowed, see
 * codec_value_text), reported as where.key. */
enum pm_status codec_get_value(const json_t *obj, const char *where, const char *key, char *buf,
			       const char **out, struct pm_error *err);
/* obj["group"], an integer or a string, as text into *out (borrowed),
 * reported as where.group. */
enum pm_status codec_get_group(const json_t *obj, const char *where, char *buf, const char **out,
			       struct pm_error *err);
/* Every element of array arr as a data value: out[i] (borrowed from arr
 * or num[i]); the caller has room for json_array_size(arr) of each. An
 * element of another type is an error under field[i]. */
enum pm_status codec_get_values(const json_t *arr, const char *field, const char **out,
				char (*num)[CODEC_NUM_LEN], struct pm_error *err);

#endif
