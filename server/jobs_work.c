/*
 * What a job's kept worker process runs (jobs.c, isolate_worker): the job
 * travels as bytes, a head, the packed dataset when the worker does not
 * hold it already, and the stored request's text. The worker keeps the
 * last dataset it was sent, so that the analyses of one table (the usual
 * run of a dashboard or a sweep) send it once.
 */
#include <stdlib.h>
#include <string.h>

#include "isolate.h"
#include "jobs.h"
#include "server.h"

struct head {
	int32_t kind;	     /* JOBS_ANALYSIS or JOBS_SWEEP */
	char dataset[64];    /* its id */
	uint64_t packed_len; /* 0: the dataset the worker holds */
	uint64_t request_len;
	double time_limit, stall;
};

const char *const jobs_summary_drop[] = {"posterior", "rules", "statements", "risk", NULL};

void jobs_work_held_finish(struct jobs_work_held *h)
{
	if (!h)
		return;
	dataset_destroy(h->ds);
	memset(h, 0, sizeof *h);
}

enum pm_status jobs_work_make(enum jobs_kind kind, const char *dataset_id, const struct dataset *ds,
			      const char *request, double time_limit, double stall, char **out,
			      size_t *len, struct pm_error *err)
{
	struct head h = {kind, "", 0, strlen(request), time_limit, stall};
	unsigned char *packed = NULL;
	size_t n = 0;
	enum pm_status st = ds ? dataset_pack(ds, &packed, &n, err) : PM_OK;

	*out = NULL;
	if (st)
		return st;
	snprintf(h.dataset, sizeof h.dataset, "%s", dataset_id);
	h.packed_len = n;
	*len = sizeof h + n + h.request_len;
	if (!(*out = malloc(*len))) {
		free(packed);
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	}
	memcpy(*out, &h, sizeof h);
	if (n)
		memcpy(*out + sizeof h, packed, n);
	memcpy(*out + sizeof h + n, request, h.request_len);
	free(packed);
	return PM_OK;
}

/* The dataset of the job: unpacked from it, or the one held. */
static enum pm_status job_dataset(struct jobs_work_held *held, const struct head *h,
				  const char *packed, struct pm_error *err)
{
	struct dataset *ds = NULL;
	enum pm_status st;

	if (!h->packed_len) {
		if (held->ds && !strcmp(held->id, h->dataset))
			return PM_OK;
		return error_set(err, PM_ERR_INTERNAL, "", "the worker does not hold dataset %.64s",
				 h->dataset);
	}
	dataset_destroy(held->ds);
	held->ds = NULL;
	held->id[0] = 0;
	if ((st = dataset_unpack((const unsigned char *)packed, h->packed_len, &ds, err)))
		return st;
	held->ds = ds;
	memcpy(held->id, h->dataset, sizeof held->id);
	return PM_OK;
}

static int child_point(void *ctx, size_t at, const json_t *point)
{
	return isolate_point(ctx, at, point);
}

/* A sweep's points (SPEC 4.2), each sent up as it is solved. */
static enum pm_status run_sweep(const struct dataset *ds, const json_t *req,
				struct solver_options *o, struct isolate_child *c, json_t **out,
				struct pm_error *err)
{
	struct sweep_request q = {0};
	struct sweep_hooks hooks = {child_point, c};
	json_t *doc = NULL;
	enum pm_status st;

	if (!(st = codec_sweep_request(req, ds, &q, err)) &&
	    !(st = codec_solver_options(json_object_get(req, "solver"), o, err)) &&
	    !(st = codec_report_options(json_object_get(req, "report"), &o->privacy, err)))
		st = sweep_run(ds, &q, o, &hooks, &doc, err);
	if (!st)
		*out = json_incref(json_object_get(doc, "points"));
	json_decref(doc);
	sweep_request_finish(&q);
	return st;
}

enum pm_status jobs_work_serve(void *state, const char *job, size_t len, struct isolate_child *c,
			       json_t **out, struct pm_error *err)
{
	struct jobs_work_held *held = state;
	struct head h;
	struct solver_options o;
	json_t *req;
	enum pm_status st;

	if (len < sizeof h)
		return error_set(err, PM_ERR_INTERNAL, "", "a job cut short");
	memcpy(&h, job, sizeof h);
	h.dataset[sizeof h.dataset - 1] = 0;
	if (h.packed_len > len - sizeof h || h.request_len != len - sizeof h - h.packed_len)
		return error_set(err, PM_ERR_INTERNAL, "", "a job of the wrong length");
	if ((st = job_dataset(held, &h, job + sizeof h, err)))
		return st;
	if (!(req = json_loadb(job + sizeof h + h.packed_len, h.request_len, 0, NULL)))
		return error_set(err, PM_ERR_INTERNAL, "", "stored JSON is unreadable");
	solver_options_init(&o);
	o.time_limit = h.time_limit;
	o.stall = h.stall;
	o.progress = isolate_progress;
	o.progress_ctx = c;
	if (h.kind == JOBS_SWEEP)
		st = run_sweep(held->ds, req, &o, c, out, err);
	else
		st = pipeline_run_dataset(held->ds, json_object_get(req, "knowledge"),
					  json_object_get(req, "solver"), &o, 0, out, err);
	json_decref(req);
	return st;
}
