/*
 * A solve in a process of its own (issue 36), so that whatever goes wrong
 * in one (a crash, an abort in a library, running out of memory) ends that
 * process alone, as a PostgreSQL backend or an nginx worker does: a child
 * forked for one body (isolate_run: a synchronous solve), or a worker kept
 * across jobs (isolate_worker, below: analyses and sweeps).
 *
 * A child is forked from a threaded process and shares its memory
 * copy-on-write: a body reads what the parent gave it where it lies, and
 * nothing is copied. The child touches nothing the parent's other
 * threads may hold a lock on (the store, the HTTP daemon): it runs the
 * body, which computes on memory it was given, and reports through one
 * socket: progress, sweep points, then the result text or the error. Its
 * other file descriptors are closed, its signals are the defaults, it
 * dies with the thread that forked it (PR_SET_PDEATHSIG), and its data
 * segment is capped (RLIMIT_DATA) at what it inherited plus the worker's
 * memory. The parent reads the socket, relays what it reads, kills the
 * child on a cancel or past the deadline, and names how it died.
 */
#define _GNU_SOURCE /* close_range, sigabbrev_np */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "isolate.h"
#include "server.h"

/* The messages between them: a type byte, a 64-bit length, the payload. */
enum msg { MSG_PROGRESS = 1, MSG_POINT, MSG_SUMMARY, MSG_RESULT, MSG_ERROR, MSG_JOB };

/* How often the parent looks at its cancel flag and the deadline. */
#define POLL_MS 20

struct isolate_child {
	int fd;
	struct solver_progress last; /* the last progress sent */
	/* in a sanitizer build (IN_PROCESS): the parent's options, called
	 * directly from the calling thread */
	const struct isolate_options *direct;
};

/*
 * Under AddressSanitizer no process is forked: the sanitizer's allocator
 * (GCC 12's libasan) is not locked across fork(), so a child forked while
 * another thread of the service allocates can wait forever on a lock
 * held by a thread it does not have. A sanitizer build runs each body in
 * the calling thread instead (IN_PROCESS), with the same callbacks, the
 * cancel reaching the solver through its progress callback; it enforces
 * no memory limit (the shadow memory would count as data anyway), and a
 * crash in it is the whole process's. The normal build is the one that
 * isolates, and its tests are the isolation's.
 */
#if defined(__SANITIZE_ADDRESS__)
#define IN_PROCESS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define IN_PROCESS 1
#endif
#endif
#ifndef IN_PROCESS
#define IN_PROCESS 0
#endif
#define MEMORY_LIMITED (!IN_PROCESS)

int isolate_memory_limited(void)
{
	return MEMORY_LIMITED;
}

int isolate_forks(void)
{
	return !IN_PROCESS;
}

size_t isolate_default_memory(size_t workers)
{
	long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
	size_t total = pages > 0 && size > 0 ? (size_t)pages * (size_t)size : (size_t)4 << 30;
	size_t share = total / 4 * 3 / (workers ? workers : 1);

	return share < ((size_t)1 << 30) ? (size_t)1 << 30 : share;
}

/* ---- the child's side ------------------------------------------------------ */

/* Writes n bytes to the socket; -1 when the other end is gone (no
 * SIGPIPE: the writer sees the error and stops). */
static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* One message of two parts (b may be NULL). */
static int send_msg(int fd, enum msg type, const void *a, size_t an, const void *b, size_t bn)
{
	unsigned char head[9];
	uint64_t len = an + bn;

	head[0] = (unsigned char)type;
	memcpy(head + 1, &len, sizeof len);
	if (write_all(fd, head, sizeof head) || write_all(fd, a, an))
		return -1;
	return b ? write_all(fd, b, bn) : 0;
}

int isolate_progress(void *ctx, const struct solver_progress *p)
{
	struct isolate_child *c = ctx;
	const struct isolate_options *d = c->direct;

	if (d) /* in process: the cancel is this callback's answer */
		return (d->progress && d->progress(d->ctx, p)) ||
		       (d->cancelled && d->cancelled(d->ctx));
	/* the solver also calls between iterations, to poll for a cancel,
	 * which the parent delivers by killing this process */
	if (p->phase == c->last.phase && p->iterations == c->last.iterations)
		return 0;
	c->last = *p;
	/* a parent that is gone killed this process already (PDEATHSIG) */
	return send_msg(c->fd, MSG_PROGRESS, p, sizeof *p, NULL, 0) ? 1 : 0;
}

int isolate_point(struct isolate_child *c, size_t at, const json_t *point)
{
	uint64_t at64 = at;
	char *text = json_dumps(point, JSON_COMPACT | JSON_REAL_PRECISION(17));
	int rc = !text;

	if (!rc && c->direct && c->direct->point)
		rc = c->direct->point(c->direct->ctx, at, text, strlen(text));
	else if (!rc && !c->direct)
		rc = send_msg(c->fd, MSG_POINT, &at64, sizeof at64, text, strlen(text));
	free(text);
	return rc;
}

/* The result without the keys of drop (NULL-terminated), as a message. */
static int send_summary(int fd, const json_t *out, const char *const *drop)
{
	json_t *sum = json_copy((json_t *)out);
	char *text;
	int rc;

	for (size_t i = 0; sum && drop[i]; i++)
		json_object_del(sum, drop[i]);
	text = sum ? json_dumps(sum, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
	rc = !text || send_msg(fd, MSG_SUMMARY, text, strlen(text), NULL, 0);
	/* a summary cut off by a failed write is never read: the socket ends */
	json_decref(sum);
	free(text);
	return rc;
}

/* The end of a body: its result text (and summary) or its error. Out of
 * memory writing the text is the body's error too. -1 when the parent
 * is gone. */
static int child_answer(struct isolate_child *c, enum pm_status st, json_t *out,
			struct pm_error *err, const char *const *drop)
{
	char *text = NULL;
	double seconds;
	int32_t s;
	int rc = 0;

	if (st == PM_OK && drop && json_is_object(out) && send_summary(c->fd, out, drop))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory writing the result");
	if (st == PM_OK && !(text = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(17))))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory writing the result");
	s = st;
	seconds = json_number_value(json_object_get(out, "seconds"));
	if (st != PM_OK)
		rc = send_msg(c->fd, MSG_ERROR, &s, sizeof s, err, sizeof *err);
	else
		rc = send_msg(c->fd, MSG_RESULT, &seconds, sizeof seconds, text, strlen(text));
	free(text);
	return rc;
}

/* What the child inherits and must not keep: the parent's descriptors
 * (sockets, the database), signal handlers and mask; and no more data
 * than its limit. fd is the child's end of the socket, which becomes 3. */
static void child_setup(int fd, size_t memory, int *out_fd)
{
	sigset_t all;
	struct rlimit rl;
	static const int sigs[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2};

	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&all);
	pthread_sigmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (fd != 3 && dup2(fd, 3) < 0)
		_exit(5);
	if (close_range(4, ~0U, 0)) { /* a kernel before 5.9 */
		long max = sysconf(_SC_OPEN_MAX);

		for (int i = 4; i < (max > 0 && max < 65536 ? max : 65536); i++)
			close(i);
	}
	*out_fd = 3;
	if (MEMORY_LIMITED && memory && !getrlimit(RLIMIT_DATA, &rl)) {
		size_t have = 0;
		FILE *f = fopen("/proc/self/statm", "r");
		unsigned long vsz, rss, shared, text, lib, data;

		if (f && fscanf(f, "%lu %lu %lu %lu %lu %lu", &vsz, &rss, &shared, &text, &lib,
				&data) == 6)
			have = (size_t)data * (size_t)sysconf(_SC_PAGESIZE);
		if (f)
			fclose(f);
		rl.rlim_cur = (rlim_t)(have + memory);
		if (rl.rlim_max != RLIM_INFINITY && rl.rlim_cur > rl.rlim_max)
			rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_DATA, &rl);
	}
}

static void child_main(int fd, const struct isolate_options *o, isolate_body body, void *arg)
{
	struct isolate_child c = {.fd = -1, .last = {SOLVER_PHASE_SETUP, 0, 0}};
	struct pm_error err = {0};
	json_t *out = NULL;
	enum pm_status st;

	child_setup(fd, o->memory, &c.fd);
	if (o->test_signal) {
		/* as the signal itself would end it, not a sanitizer's handler */
		signal(o->test_signal, SIG_DFL);
		raise(o->test_signal);
	}
	st = body(arg, &c, &out, &err);
	_exit(child_answer(&c, st, out, &err, o->summary_drop) ? 4 : 0);
}

/* ---- in process (sanitizer builds) --------------------------------------------- */

/* The text of a document (*len bytes), or NULL when out of memory. */
static char *dump(const json_t *j, size_t *len)
{
	char *t = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17));

	*len = t ? strlen(t) : 0;
	return t;
}

/* The answer of a body run in the calling thread, as a child's would be. */
static enum pm_status direct_answer(enum pm_status st, json_t *out, const struct isolate_options *o,
				    struct isolate_answer *a, struct pm_error *err)
{
	size_t n;

	if (st == PM_OK && o->summary_drop && json_is_object(out)) {
		json_t *sum = json_copy(out);

		for (size_t i = 0; sum && o->summary_drop[i]; i++)
			json_object_del(sum, o->summary_drop[i]);
		a->summary = sum ? dump(sum, &n) : NULL;
		json_decref(sum);
		if (!a->summary)
			st = error_set(err, PM_ERR_NOMEM, "", "out of memory writing the result");
	}
	if (st == PM_OK && !(a->text = dump(out, &a->len)))
		st = error_set(err, PM_ERR_NOMEM, "", "out of memory writing the result");
	a->seconds = json_number_value(json_object_get(out, "seconds"));
	json_decref(out);
	if (st)
		isolate_answer_finish(a);
	return st;
}

/* ---- the parent's side ------------------------------------------------------ */

/* The socket pair between the service and a child, with room for 1 MiB
 * each way (a large result in fewer turns between the two). */
static enum pm_status channel(int fds[2], struct pm_error *err)
{
	int size = 1 << 20;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds))
		return error_set(err, PM_ERR_BUSY, "", "cannot make a socket pair: %s",
				 strerror(errno));
	for (int i = 0; i < 2; i++) {
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUF, &size, sizeof size);
		setsockopt(fds[i], SOL_SOCKET, SO_SNDBUF, &size, sizeof size);
	}
	return PM_OK;
}

/* What the parent has read of the socket so far. */
struct reader {
	char *buf;
	size_t len, cap;
	int oom;
	/* the end the child reported */
	int done;
	enum pm_status st;
	struct pm_error err;
	struct isolate_answer a; /* the result, taken out of buf */
};

/* Room for the message begun at the buffer's start, whole (its length
 * is in its head), or for another 64 KiB: one allocation for a large
 * result, not a copy per doubling. */
static int reader_room(struct reader *r)
{
	size_t cap = r->cap ? r->cap : 1 << 17;
	uint64_t len;
	char *b;

	if (r->len >= 9) {
		memcpy(&len, r->buf + 1, sizeof len);
		if (len < SIZE_MAX - 65536 && cap < 9 + len + 1)
			cap = 9 + (size_t)len + 1;
	}
	while (cap - r->len < 65536)
		cap *= 2;
	if (cap == r->cap)
		return 0;
	if (!(b = realloc(r->buf, cap))) {
		r->oom = 1;
		return -1;
	}
	r->buf = b;
	r->cap = cap;
	return 0;
}

static int reader_fill(struct reader *r, int fd)
{
	if (reader_room(r))
		return -1;
	for (;;) {
		ssize_t n = read(fd, r->buf + r->len, r->cap - r->len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			r->len += (size_t)n;
		return n > 0 ? 1 : n == 0 ? 0 : -1;
	}
}

/* Relays one whole message at the start of r's buffer; 0 when there is
 * none yet, 1 when one was taken, -1 when the relay asks to stop. */
static int reader_take(struct reader *r, const struct isolate_options *o)
{
	uint64_t len;
	const char *p;
	int stop = 0;

	if (r->len < 9)
		return 0;
	memcpy(&len, r->buf + 1, sizeof len);
	if (r->len - 9 < len)
		return 0;
	p = r->buf + 9;
	switch (r->buf[0]) {
	case MSG_PROGRESS:
		if (len == sizeof(struct solver_progress) && o->progress) {
			struct solver_progress sp;

			memcpy(&sp, p, sizeof sp);
			stop = o->progress(o->ctx, &sp);
		}
		break;
	case MSG_POINT:
		if (len >= 8 && o->point) {
			uint64_t at;

			memcpy(&at, p, sizeof at);
			stop = o->point(o->ctx, (size_t)at, p + 8, (size_t)len - 8);
		}
		break;
	case MSG_SUMMARY:
		free(r->a.summary);
		if ((r->a.summary = malloc(len + 1))) {
			memcpy(r->a.summary, p, len);
			r->a.summary[len] = 0;
		} else {
			r->oom = 1;
		}
		break;
	case MSG_RESULT:
		if (len < sizeof r->a.seconds)
			break;
		/* the last message: its text becomes the answer where it lies */
		memcpy(&r->a.seconds, p, sizeof r->a.seconds);
		r->a.len = (size_t)len - sizeof r->a.seconds;
		memmove(r->buf, p + sizeof r->a.seconds, r->a.len);
		r->buf[r->a.len] = 0; /* reader_room left a byte for it */
		r->a.text = r->buf;
		r->buf = NULL;
		r->len = r->cap = 0;
		r->done = 1;
		r->st = PM_OK;
		return 1;
	case MSG_ERROR:
		if (len == sizeof(int32_t) + sizeof r->err) {
			int32_t s;

			memcpy(&s, p, sizeof s);
			memcpy(&r->err, p + sizeof s, sizeof r->err);
			r->err.message[sizeof r->err.message - 1] = 0;
			r->err.field[sizeof r->err.field - 1] = 0;
			r->st = (enum pm_status)s;
			r->done = 1;
		}
		break;
	}
	memmove(r->buf, p + len, r->len - 9 - len);
	r->len -= 9 + len;
	return stop ? -1 : 1;
}

/* How a child that sent no end died, as a message naming the signal or
 * the limit. */
static void death_error(int status, int killed_for_time, const struct isolate_options *o,
			struct pm_error *err)
{
	if (killed_for_time) {
		error_set(
		    err, PM_ERR_INTERNAL, "",
		    "the solve's worker process was stopped after %.0f s, past its time limit",
		    o->deadline);
	} else if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *name = sigabbrev_np(sig);

		error_set(err, PM_ERR_INTERNAL, "",
			  "the solve's worker process died of signal %d (SIG%s)%s", sig,
			  name ? name : "?",
			  sig == SIGKILL ? ": killed, likely for memory (the kernel's OOM killer)"
					 : "");
	} else {
		error_set(err, PM_ERR_INTERNAL, "",
			  "the solve's worker process exited with status %d without an answer",
			  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
}

/* A child out of memory under its limit says so itself (the body's
 * PM_ERR_NOMEM); the message then names the limit. */
static void name_memory_limit(const struct isolate_options *o, struct pm_error *err)
{
	if (err->status != PM_ERR_NOMEM || !o->memory || !MEMORY_LIMITED)
		return;
	error_set(err, PM_ERR_NOMEM, "",
		  "the solve ran out of memory: its worker may use at most %zu MiB "
		  "(pmaxent serve --worker-memory)",
		  o->memory >> 20);
}

/* Reads the child's socket until it closes; *why: 1 cancelled, 2 past the
 * deadline, 3 out of memory here, 0 it ended by itself. */
static void parent_loop(int fd, pid_t pid, const struct isolate_options *o, struct reader *r,
			int *why)
{
	double t0 = solver_now();

	*why = 0;
	for (;;) {
		struct pollfd p = {fd, POLLIN, 0};
		int n = poll(&p, 1, POLL_MS), got = 0, t;

		if (n > 0) {
			got = reader_fill(r, fd);
			while ((t = reader_take(r, o)) > 0)
				;
			if (t < 0)
				*why = 1;
			if (r->oom)
				*why = 3;
		}
		if (!*why && o->cancelled && o->cancelled(o->ctx))
			*why = 1;
		if (!*why && o->deadline > 0 && solver_now() - t0 > o->deadline)
			*why = 2;
		if (*why) {
			kill(pid, SIGKILL);
			return;
		}
		if (r->done)
			return; /* the answer is in: the last message of a job */
		if (n > 0 && got <= 0 && !(got < 0 && errno == EAGAIN))
			return; /* EOF: the child exited (or closed the socket) */
	}
}

/* How a run ended, from what was read (r), why the parent stopped it
 * (parent_loop) and, when the child ended, its wait status. */
static enum pm_status outcome(struct reader *r, int why, int status,
			      const struct isolate_options *o, struct isolate_answer *out,
			      struct pm_error *err)
{
	if (why == 1)
		return error_set(err, PM_ERR_CANCELLED, "", "cancelled");
	if (why == 3)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory reading a worker's answer");
	if (r->done && r->st == PM_OK) {
		*out = r->a;
		memset(&r->a, 0, sizeof r->a);
		return PM_OK;
	}
	if (r->done) {
		*err = r->err;
		err->status = r->st;
		name_memory_limit(o, err);
		return err->status;
	}
	death_error(status, why == 2, o, err);
	return err->status;
}

void isolate_answer_finish(struct isolate_answer *a)
{
	if (!a)
		return;
	free(a->text);
	free(a->summary);
	memset(a, 0, sizeof *a);
}

enum pm_status isolate_run(isolate_body body, void *arg, const struct isolate_options *o,
			   struct isolate_answer *out, struct pm_error *err)
{
	struct reader r = {0};
	int fds[2], status = 0, why;
	enum pm_status st;
	pid_t pid;

	memset(out, 0, sizeof *out);
	if (IN_PROCESS) {
		struct isolate_child c = {.fd = -1, .direct = o};
		json_t *doc = NULL;

		st = body(arg, &c, &doc, err); /* before doc is read */
		return direct_answer(st, doc, o, out, err);
	}
	if ((st = channel(fds, err)))
		return st;
	if ((pid = fork()) < 0) {
		close(fds[0]);
		close(fds[1]);
		return error_set(err, PM_ERR_BUSY, "", "cannot start a worker process: %s",
				 strerror(errno));
	}
	if (pid == 0)
		child_main(fds[1], o, body, arg); /* does not return */
	close(fds[1]);
	parent_loop(fds[0], pid, o, &r, &why);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	st = outcome(&r, why, status, o, out, err);
	isolate_answer_finish(&r.a);
	free(r.buf);
	return st;
}

/* ---- a worker kept across jobs ---------------------------------------------- */

/*
 * A child that runs job after job, so that its heap is warm: a child
 * forked for one solve writes every page it uses for the first time, each
 * a page fault (copy-on-write with the service), a cost as large as a
 * small analysis itself; a kept worker pays it once. It is
 * forked at its first job, reads jobs from a socket (MSG_JOB: the tests'
 * signal, the summary's keys, the job's bytes), answers each as a forked
 * child does, and is forked again after one that killed it (a crash, the
 * memory limit, a cancel or the deadline). What it holds between jobs is
 * the serve function's (a dataset, say); generation tells the caller
 * whether the worker is the one it sent that to.
 */
struct isolate_worker {
	isolate_serve serve;
	void *state;
	size_t memory;
	pid_t pid; /* 0: none running */
	int fd;
	uint64_t generation;
};

/* Reads n bytes; -1 at the end or on an error. */
static int read_all(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t k = read(fd, c, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		n -= (size_t)k;
	}
	return 0;
}

/* The worker's loop: a job, its answer, until the socket ends. */
static void worker_main(int fd, const struct isolate_worker *w)
{
	struct isolate_child c = {.fd = -1};
	unsigned char head[9];

	child_setup(fd, w->memory, &c.fd);
	while (!read_all(c.fd, head, sizeof head) && head[0] == MSG_JOB) {
		struct {
			int32_t signal;
			const char *const *drop;
		} job;
		struct pm_error err = {0};
		json_t *out = NULL;
		uint64_t len;
		char *buf;
		enum pm_status st;

		memcpy(&len, head + 1, sizeof len);
		if (len < sizeof job || !(buf = malloc(len)) || read_all(c.fd, buf, len))
			_exit(5);
		memcpy(&job, buf, sizeof job);
		if (job.signal) {
			signal(job.signal, SIG_DFL);
			raise(job.signal);
		}
		c.last = (struct solver_progress){SOLVER_PHASE_SETUP, 0, 0};
		st = w->serve(w->state, buf + sizeof job, len - sizeof job, &c, &out, &err);
		free(buf);
		if (child_answer(&c, st, out, &err, job.drop))
			_exit(4);
		json_decref(out);
	}
	_exit(0);
}

enum pm_status isolate_worker_create(isolate_serve serve, void *state, size_t memory,
				     struct isolate_worker **out, struct pm_error *err)
{
	struct isolate_worker *w = calloc(1, sizeof *w);

	*out = w;
	if (!w)
		return error_set(err, PM_ERR_NOMEM, "", "out of memory");
	*w = (struct isolate_worker){serve, state, memory, 0, -1, 0};
	return PM_OK;
}

uint64_t isolate_worker_generation(const struct isolate_worker *w)
{
	return w->generation;
}

/* Ends the worker: its socket closed (it exits at its next read), or
 * killed; and waited for. *status its wait status. */
static void worker_stop(struct isolate_worker *w, int kill_it, int *status)
{
	int st = 0;

	if (!w->pid)
		return;
	if (kill_it)
		kill(w->pid, SIGKILL);
	close(w->fd);
	while (waitpid(w->pid, &st, 0) < 0 && errno == EINTR)
		;
	if (status)
		*status = st;
	w->pid = 0;
	w->fd = -1;
}

static enum pm_status worker_start(struct isolate_worker *w, struct pm_error *err)
{
	int fds[2];
	enum pm_status st = channel(fds, err);

	if (st)
		return st;
	if ((w->pid = fork()) < 0) {
		w->pid = 0;
		close(fds[0]);
		close(fds[1]);
		return error_set(err, PM_ERR_BUSY, "", "cannot start a worker process: %s",
				 strerror(errno));
	}
	if (w->pid == 0)
		worker_main(fds[1], w); /* does not return */
	close(fds[1]);
	w->fd = fds[0];
	w->generation++;
	return PM_OK;
}

/* Sends the job: MSG_JOB, the tests' signal and the summary's keys (a
 * pointer to static storage, the same in the forked worker), the bytes. */
static int worker_send(struct isolate_worker *w, const void *job, size_t len,
		       const struct isolate_options *o)
{
	struct {
		int32_t signal;
		const char *const *drop;
	} j = {o->test_signal, o->summary_drop};
	unsigned char head[9];
	uint64_t n = sizeof j + len;

	head[0] = MSG_JOB;
	memcpy(head + 1, &n, sizeof n);
	return send(w->fd, head, sizeof head, MSG_NOSIGNAL) != (ssize_t)sizeof head ||
	       send(w->fd, &j, sizeof j, MSG_NOSIGNAL) != (ssize_t)sizeof j ||
	       write_all(w->fd, job, len);
}

enum pm_status isolate_worker_run(struct isolate_worker *w, const void *job, size_t len,
				  const struct isolate_options *o, struct isolate_answer *out,
				  struct pm_error *err)
{
	struct reader r = {0};
	int status = 0, why = 0;
	enum pm_status st;

	memset(out, 0, sizeof *out);
	if (IN_PROCESS) {
		struct isolate_child c = {.fd = -1, .direct = o};
		json_t *doc = NULL;

		if (!w->generation)
			w->generation = 1; /* one "worker", the calling thread, never lost */
		st = w->serve(w->state, job, len, &c, &doc, err); /* before doc is read */
		return direct_answer(st, doc, o, out, err);
	}
	if (!w->pid && (st = worker_start(w, err)))
		return st;
	if (worker_send(w, job, len, o))
		why = 0; /* it died: its end is read below */
	else
		parent_loop(w->fd, w->pid, o, &r, &why);
	if (!r.done || why)
		worker_stop(w, why != 0, &status);
	st = outcome(&r, why, status, o, out, err);
	isolate_answer_finish(&r.a);
	free(r.buf);
	return st;
}

void isolate_worker_destroy(struct isolate_worker *w)
{
	if (!w)
		return;
	worker_stop(w, 0, NULL);
	free(w);
}
