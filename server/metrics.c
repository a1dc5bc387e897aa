/*
 * What the service tells its operators: GET /metrics in the Prometheus text
 * format (requests by route, method and status; latency histograms per
 * route; analyses by state; the worker pool; solve seconds) and the
 * structured access log, one JSON line per request on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "http_internal.h"
#include "jobs.h"

static const char *const methods[] = {"GET", "HEAD", "POST", "DELETE", "other"};
#define N_METHODS (sizeof methods / sizeof methods[0])

/* Status codes the service answers with; anything else counts as "other". */
static const unsigned statuses[] = {200, 201, 202, 204, 304, 400, 401, 403, 404, 405, 408, 409,
				    411, 413, 414, 415, 422, 429, 431, 500, 503, 505, 0};
#define N_STATUSES (sizeof statuses / sizeof statuses[0])

/* Upper bounds (seconds) of the latency histogram buckets; +Inf implied. */
static const double bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				0.25,  0.5,    1,     2.5,  5,	   10};
#define N_BOUNDS (sizeof bounds / sizeof bounds[0])

struct metrics {
	pthread_mutex_t mu;
	uint64_t requests[N_ROUTES][N_METHODS][N_STATUSES];
	uint64_t latency[N_ROUTES][N_BOUNDS + 1]; /* not cumulative; last: above all */
	double latency_sum[N_ROUTES];
	uint64_t sync_solves, sync_cancelled;
	double sync_solve_seconds;
};

struct metrics *metrics_create(void)
{
	struct metrics *m = calloc(1, sizeof *m);

	if (m)
		pthread_mutex_init(&m->mu, NULL);
	return m;
}

void metrics_destroy(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_destroy(&m->mu);
	free(m);
}

const char *metrics_route_name(enum http_route route)
{
	static const char *const names[N_ROUTES] = {
	    [ROUTE_DATASETS] = "/v1/datasets",
	    [ROUTE_DATASET] = "/v1/datasets/{id}",
	    [ROUTE_DATASET_ANALYSES] = "/v1/datasets/{id}/analyses",
	    [ROUTE_ANALYSIS] = "/v1/analyses/{id}",
	    [ROUTE_POSTERIOR] = "/v1/analyses/{id}/posterior",
	    [ROUTE_RISK] = "/v1/analyses/{id}/risk",
	    [ROUTE_REPORT] = "/v1/analyses/{id}/report",
	    [ROUTE_DASHBOARD] = "/",
	    [ROUTE_DATASET_SWEEPS] = "/v1/datasets/{id}/sweeps",
	    [ROUTE_SWEEP] = "/v1/sweeps/{id}",
	    [ROUTE_SWEEP_CHART] = "/v1/sweeps/{id}/chart.svg",
	    [ROUTE_SOLVE] = "/v1/solve",
	    [ROUTE_OPENAPI] = "/v1/openapi.yaml",
	    [ROUTE_HEALTHZ] = "/healthz",
	    [ROUTE_READYZ] = "/readyz",
	    [ROUTE_METRICS] = "/metrics",
	    [ROUTE_NONE] = "none",
	};

	return route < N_ROUTES ? names[route] : "none";
}

void metrics_record(struct metrics *m, enum http_route route, const char *method, unsigned status,
		    double seconds)
{
	size_t mi = 0, si = 0, b = 0;

	if (!m)
		return;
	if (route >= N_ROUTES)
		route = ROUTE_NONE;
	while (mi + 1 < N_METHODS && strcmp(methods[mi], method))
		mi++;
	while (si + 1 < N_STATUSES && statuses[si] != status)
		si++;
	while (b < N_BOUNDS && seconds > bounds[b])
		b++;
	pthread_mutex_lock(&m->mu);
	m->requests[route][mi][si]++;
	m->latency[route][b]++;
	m->latency_sum[route] += seconds;
	pthread_mutex_unlock(&m->mu);
}

void metrics_solve(struct metrics *m, double seconds)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->sync_solves++;
	m->sync_solve_seconds += seconds;
	pthread_mutex_unlock(&m->mu);
}

void metrics_sync_cancelled(struct metrics *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->mu);
	m->sync_cancelled++;
	pthread_mutex_unlock(&m->mu);
}

/* ---- exposition ------------------------------------------------------------ */

struct out {
	char *s;
	size_t len, cap;
	int oom;
};

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void emit(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;
	char *grown;

	for (int tries = 0; !o->oom && tries < 2; tries++) {
		va_start(ap, fmt);
		n = vsnprintf(o->s ? o->s + o->len : NULL, o->s ? o->cap - o->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->oom = 1;
		} else if (o->s && (size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		} else {
			size_t cap = o->cap ? o->cap : 8192;

			while (cap < o->len + (size_t)n + 1)
				cap *= 2;
			if (!(grown = realloc(o->s, cap)))
				o->oom = 1;
			o->s = grown ? grown : o->s;
			o->cap = grown ? cap : o->cap;
		}
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void render_requests(struct out *o, const struct metrics *m)
{
	family(o, "pmaxent_http_requests_total", "counter",
	       "HTTP requests by route template, method and status.");
	for (size_t r = 0; r < N_ROUTES; r++)
		for (size_t mi = 0; mi < N_METHODS; mi++)
			for (size_t si = 0; si < N_STATUSES; si++) {
				char status[16];

				if (!m->requests[r][mi][si])
					continue;
				if (statuses[si])
					snprintf(status, sizeof status, "%u", statuses[si]);
				else
					snprintf(status, sizeof status, "other");
				emit(o,
				     "pmaxent_http_requests_total{route=\"%s\",method=\"%s\","
				     "status=\"%s\"} %" PRIu64 "\n",
				     metrics_route_name((enum http_route)r), methods[mi], status,
				     m->requests[r][mi][si]);
			}
}

static void render_latency(struct out *o, const struct metrics *m)
{
	const char *name = "pmaxent_http_request_duration_seconds";

	family(o, name, "histogram", "Time to produce a response, by route template.");
	for (size_t r = 0; r < N_ROUTES; r++) {
		const char *route = metrics_route_name((enum http_route)r);
		uint64_t cum = 0;

		for (size_t b = 0; b <= N_BOUNDS; b++)
			cum += m->latency[r][b];
		if (!cum)
			continue;
		cum = 0;
		for (size_t b = 0; b < N_BOUNDS; b++) {
			cum += m->latency[r][b];
			emit(o, "%s_bucket{route=\"%s\",le=\"%g\"} %" PRIu64 "\n", name, route,
			     bounds[b], cum);
		}
		cum += m->latency[r][N_BOUNDS];
		emit(o, "%s_bucket{route=\"%s\",le=\"+Inf\"} %" PRIu64 "\n", name, route, cum);
		emit(o, "%s_sum{route=\"%s\"} %.9g\n", name, route, m->latency_sum[r]);
		emit(o, "%s_count{route=\"%s\"} %" PRIu64 "\n", name, route, cum);
	}
}

static void render_jobs(struct out *o, struct http_server *h)
{
	static const char *const states[] = {"queued", "running", "succeeded", "failed",
					     "cancelled"};
	struct pm_error err = {0};
	struct jobs_stats js;
	int64_t counts[5] = {0};
	int have = !store_analysis_counts(h->store, counts, &err);

	family(o, "pmaxent_jobs", "gauge", "Stored analyses by state.");
	for (size_t i = 0; have && i < 5; i++)
		emit(o, "pmaxent_jobs{state=\"%s\"} %" PRId64 "\n", states[i], counts[i]);
	have = !store_sweep_counts(h->store, counts, &err);
	family(o, "pmaxent_sweeps", "gauge", "Stored sweeps by state.");
	for (size_t i = 0; have && i < 5; i++)
		emit(o, "pmaxent_sweeps{state=\"%s\"} %" PRId64 "\n", states[i], counts[i]);
	jobs_stats(h->jobs, &js);
	family(o, "pmaxent_jobs_queue_length", "gauge", "Analyses waiting for a worker.");
	emit(o, "pmaxent_jobs_queue_length %zu\n", js.queued);
	family(o, "pmaxent_jobs_queue_capacity", "gauge", "Queued analyses before 503.");
	emit(o, "pmaxent_jobs_queue_capacity %zu\n", js.queue_capacity);
	family(o, "pmaxent_jobs_workers", "gauge", "Analysis worker threads.");
	emit(o, "pmaxent_jobs_workers %zu\n", js.workers);
	family(o, "pmaxent_jobs_running", "gauge", "Workers running an analysis.");
	emit(o, "pmaxent_jobs_running %zu\n", js.running);
	family(o, "pmaxent_jobs_finished_total", "counter",
	       "Analyses finished by this process, by outcome.");
	emit(o, "pmaxent_jobs_finished_total{outcome=\"succeeded\"} %" PRIu64 "\n", js.succeeded);
	emit(o, "pmaxent_jobs_finished_total{outcome=\"failed\"} %" PRIu64 "\n", js.failed);
	emit(o, "pmaxent_jobs_finished_total{outcome=\"cancelled\"} %" PRIu64 "\n", js.cancelled);
	family(o, "pmaxent_jobs_claims_total", "counter",
	       "Jobs (analyses and sweeps) this node claimed from the queue.");
	emit(o, "pmaxent_jobs_claims_total %" PRIu64 "\n", js.claims);
	family(o, "pmaxent_jobs_lease_expiries_total", "counter",
	       "Running jobs whose lease ran out (their node died), put back by this node.");
	emit(o, "pmaxent_jobs_lease_expiries_total %" PRIu64 "\n", js.expiries);
	family(o, "pmaxent_jobs_takeovers_total", "counter",
	       "Claims by this node of a job whose earlier attempt's lease ran out.");
	emit(o, "pmaxent_jobs_takeovers_total %" PRIu64 "\n", js.takeovers);
	family(o, "pmaxent_jobs_results_dropped_total", "counter",
	       "Outcomes this node computed for a job it no longer owned (never recorded).");
	emit(o, "pmaxent_jobs_results_dropped_total %" PRIu64 "\n", js.dropped);
	family(o, "pmaxent_solve_seconds", "summary",
	       "Seconds of the solve step (result \"seconds\"): analyses and POST /v1/solve.");
	emit(o, "pmaxent_solve_seconds_sum{mode=\"analysis\"} %.9g\n", js.solve_seconds_total);
	emit(o, "pmaxent_solve_seconds_count{mode=\"analysis\"} %" PRIu64 "\n", js.solves);
}

static void render_cache(struct out *o, struct http_server *h)
{
	struct store_cache_stats cs;

	store_cache_stats(h->store, &cs);
	family(o, "pmaxent_dataset_cache_lookups_total", "counter",
	       "Parsed datasets asked for, by whether the cache had them.");
	emit(o, "pmaxent_dataset_cache_lookups_total{result=\"hit\"} %" PRIu64 "\n", cs.hits);
	emit(o, "pmaxent_dataset_cache_lookups_total{result=\"miss\"} %" PRIu64 "\n", cs.misses);
	family(o, "pmaxent_dataset_cache_load_seconds_total", "counter",
	       "Seconds spent reading datasets from the store on cache misses.");
	emit(o, "pmaxent_dataset_cache_load_seconds_total %.6f\n", cs.load_seconds);
	family(o, "pmaxent_dataset_cache_bytes", "gauge",
	       "About the memory of the datasets the cache holds.");
	emit(o, "pmaxent_dataset_cache_bytes %zu\n", cs.bytes);
	family(o, "pmaxent_dataset_cache_entries", "gauge", "Datasets the cache holds parsed.");
	emit(o, "pmaxent_dataset_cache_entries %zu\n", cs.entries);
}

char *metrics_render(struct http_server *h, size_t *len)
{
	struct out o = {0};
	struct metrics *m = h->metrics;

	/* a consistent snapshot of the request counters */
	pthread_mutex_lock(&m->mu);
	render_requests(&o, m);
	render_latency(&o, m);
	pthread_mutex_unlock(&m->mu);
	render_jobs(&o, h);
	pthread_mutex_lock(&m->mu);
	emit(&o, "pmaxent_solve_seconds_sum{mode=\"sync\"} %.9g\n", m->sync_solve_seconds);
	emit(&o, "pmaxent_solve_seconds_count{mode=\"sync\"} %" PRIu64 "\n", m->sync_solves);
	family(&o, "pmaxent_sync_solves_cancelled_total", "counter",
	       "POST /v1/solve solves stopped because the client went away or the service "
	       "stopped.");
	emit(&o, "pmaxent_sync_solves_cancelled_total %" PRIu64 "\n", m->sync_cancelled);
	pthread_mutex_unlock(&m->mu);
	render_cache(&o, h);
	if (o.oom) {
		free(o.s);
		return NULL;
	}
	*len = o.len;
	return o.s;
}

/* ---- access log ------------------------------------------------------------ */

/* s as the inside of a JSON string, ASCII only, at most max bytes. */
static void log_escape(char *out, size_t size, const char *s, size_t max)
{
	size_t o = 0;

	for (size_t i = 0; s && s[i] && i < max && o + 7 < size; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			o += (size_t)snprintf(out + o, size - o, "\\%c", c);
		else if (c < 0x20 || c >= 0x7f)
			o += (size_t)snprintf(out + o, size - o, "\\u%04x", c);
		else
			out[o++] = (char)c;
	}
	out[o] = '\0';
}

/* One JSON line per request on stderr. The path without the query ("-"
 * when the request line was not readable); the tenant, never the token. */
void metrics_log(const char *method, const char *path, unsigned status, size_t bytes,
		 double seconds, const char *tenant)
{
	char when[48], m[64], p[1024], t[256];
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(when, 24, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(when + strlen(when), sizeof when - 24, ".%03dZ", (int)(ts.tv_nsec / 1000000));
	log_escape(m, sizeof m, method, 16);
	log_escape(p, sizeof p, path, 128);
	log_escape(t, sizeof t, tenant, 32);
	fprintf(stderr,
		"{\"time\":\"%s\",\"method\":\"%s\",\"path\":\"%s\",\"status\":%u,\"bytes\":%zu,"
		"\"ms\":%.3f,\"tenant\":%s%s%s}\n",
		when, m, p, status, bytes, seconds * 1e3, tenant ? "\"" : "", tenant ? t : "null",
		tenant ? "\"" : "");
}
