/* store.c on SQLite alone: kill -9 in the middle of writes (nothing
 * half-written is ever visible), a restart with an analysis running at
 * the kill, bad database files and data directories, one store per data
 * directory (its lock), private files, and a version 1 database migrated
 * at open. The suite of every back end is in test_store.c. */
#include <signal.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "store.h"
#include "store_fixture.h"

/* ---- crashes --------------------------------------------------------------- */

#define CRASH_BODY (100 * 1024)

/* The body written for row i: long, and different per row, so that a torn
 * write or a mixed-up row cannot pass the comparison. */
static char *crash_text(int i, char tag)
{
	size_t len = CRASH_BODY + (size_t)(i % 97);
	char *t = malloc(len + 1);

	for (size_t j = 0; j < len; j++)
		t[j] = (char)('a' + (size_t)(i * 7 + tag + j) % 26);
	t[0] = tag;
	t[len] = '\0';
	return t;
}

/* The child: writes datasets and analyses with results until killed,
 * reporting each commit on fd. */
static void crash_child(const char *dir, int fd)
{
	struct pm_error err = {0};
	struct store *s = open_or_die(dir);
	char id[32], an[32], summary[64];

	for (int i = 0;; i++) {
		char *body = crash_text(i, 'D'), *result = crash_text(i, 'R');

		snprintf(id, sizeof id, "ds_%d", i);
		snprintf(an, sizeof an, "an_%d", i);
		snprintf(summary, sizeof summary, "{\"i\":%d}", i);
		if (store_dataset_insert(s, id, "crash", summary, body, &err) ||
		    store_analysis_insert(s, an, "crash", id, summary, &err) ||
		    store_analysis_transition(s, an, "queued", "running", NULL, &err) ||
		    store_analysis_transition(s, an, "running", "succeeded", result, &err)) {
			fprintf(stderr, "crash child: %s\n", err.message);
			_exit(1);
		}
		free(body);
		free(result);
		if (write(fd, "x", 1) != 1)
			_exit(1);
	}
}

static void check_crash_dataset(struct store *s, const struct store_row *row, int i)
{
	struct pm_error err = {0};
	struct store_row r;
	char id[32], summary[64];
	char *body = crash_text(i, 'D');

	snprintf(id, sizeof id, "ds_%d", i);
	snprintf(summary, sizeof summary, "{\"i\":%d}", i);
	CHECK_STR(row->id, id);
	CHECK_STR(row->summary, summary);
	CHECK(store_dataset_get(s, id, "crash", 1, &r, &err) == PM_OK);
	CHECK(r.body && strcmp(r.body, body) == 0);
	store_row_finish(&r);
	free(body);
}

/* A visible analysis is queued, running or succeeded with its whole result. */
static void check_crash_analysis(struct store *s, int i, int *unfinished)
{
	struct pm_error err = {0};
	struct store_row r;
	char an[32];
	char *result = crash_text(i, 'R');

	snprintf(an, sizeof an, "an_%d", i);
	if (store_analysis_get(s, an, "crash", &r, &err) == PM_OK) {
		if (!strcmp(r.status, "succeeded")) {
			CHECK(r.attempts == 1 && r.result && strcmp(r.result, result) == 0);
		} else {
			CHECK(r.result == NULL);
			CHECK((!strcmp(r.status, "queued") && r.attempts == 0) ||
			      (!strcmp(r.status, "running") && r.attempts == 1));
			(*unfinished)++;
		}
	}
	store_row_finish(&r);
	free(result);
}

static void check_integrity(const char *dir)
{
	char path[4200];
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
	CHECK(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_ROW);
	CHECK_STR((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	/* no analysis outlived its dataset */
	CHECK(sqlite3_prepare_v2(db, "PRAGMA foreign_key_check", -1, &st, NULL) == SQLITE_OK);
	CHECK(sqlite3_step(st) == SQLITE_DONE);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Kills the writer after `acks` commits plus `delay_us`, then checks. */
static void crash_round(const char *dir, int acks, int delay_us)
{
	struct pm_error err = {0};
	struct store_row *rows;
	struct store *s;
	int fds[2], got = 0, status, unfinished = 0;
	size_t n;
	char c;
	pid_t pid;

	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(fds[0]);
		crash_child(dir, fds[1]);
	}
	close(fds[1]);
	while (got < acks && read(fds[0], &c, 1) == 1)
		got++;
	usleep((useconds_t)delay_us);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(fds[0]);
	CHECK(got == acks);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);

	s = open_or_die(dir);
	CHECK(store_dataset_list(s, "crash", 0, 100000, &rows, &n, &err) == PM_OK);
	printf("crash round: %d acknowledged, %zu datasets visible after kill -9\n", acks, n);
	CHECK(n >= (size_t)acks); /* everything committed survives */
	for (size_t i = 0; i < n; i++) {
		check_crash_dataset(s, &rows[i], (int)i); /* and no gap or torn row */
		check_crash_analysis(s, (int)i, &unfinished);
	}
	CHECK(unfinished <= 1); /* at most the one being written */
	store_rows_free(rows, n);
	store_close(s);
	check_integrity(dir);
}

static void test_crash(void)
{
	static const int acks[] = {3, 10, 25, 40}, delays[] = {0, 700, 2000, 5000};
	char dir[4096];

	for (int k = 0; k < 4; k++) {
		snprintf(dir, sizeof dir, "%s/crash%d", root, k);
		crash_round(dir, acks[k], delays[k]);
	}
}

/* A restart with an analysis running at the kill: it is still "running"
 * with one attempt, listed as unfinished, and can be started again. */
static void test_restart(const char *dir)
{
	struct pm_error err = {0};
	struct store *s = open_or_die(dir);
	int fds[2], status;
	pid_t pid;
	char c;

	CHECK(store_dataset_insert(s, "ds_r", "", "{}", "{\"records\":[]}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_r1", "", "ds_r", "{}", &err) == PM_OK);
	CHECK(store_analysis_insert(s, "an_r2", "", "ds_r", "{}", &err) == PM_OK);
	store_close(s);
	CHECK(pipe(fds) == 0);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		s = open_or_die(dir);
		if (store_analysis_transition(s, "an_r1", "queued", "running", NULL, &err) ||
		    write(fds[1], "x", 1) != 1)
			_exit(1);
		pause(); /* "solving" with the store open, until killed */
		_exit(1);
	}
	CHECK(read(fds[0], &c, 1) == 1);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	close(fds[0]);
	close(fds[1]);
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	s = open_or_die(dir);
	check_unfinished(s, "an_r1,an_r2");
	check_analysis(s, "an_r1", "running", 1, NULL, NULL);
	CHECK(store_analysis_transition(s, "an_r1", "queued|running", "running", NULL, &err) ==
	      PM_OK);
	CHECK(store_analysis_transition(s, "an_r1", "running", "succeeded", "{}", &err) == PM_OK);
	check_analysis(s, "an_r1", "succeeded", 2, "{}", NULL);
	check_unfinished(s, "an_r2");
	store_close(s);
}

/* ---- bad files ------------------------------------------------------------- */

static void test_bad_files(void)
{
	struct pm_error err = {0};
	struct store *s = (struct store *)1;
	char dir[2048], path[2200];
	sqlite3 *db;
	FILE *f;

	store_close(NULL);
	CHECK(store_open("", &s, &err) == PM_ERR_INPUT);
	CHECK_STR(err.field, "data_dir");
	CHECK_STR(err.message, "is empty; name a data directory");
	CHECK(s == NULL);
	/* a corrupt database file: PM_ERR_IO with SQLite's words, no abort */
	subdir(dir, sizeof dir, "corrupt");
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	f = fopen(path, "w");
	for (int i = 0; i < 1000; i++)
		fputs("this is not an SQLite database at all. ", f);
	fclose(f);
	CHECK(store_open(dir, &s, &err) == PM_ERR_IO);
	CHECK(s == NULL);
	CHECK_CONTAINS(err.message, "the database: file is not a database");
	CHECK(!strstr(err.message, dir)); /* the path goes to the log only */

	/* a database from a newer pmaxent is refused, not misread */
	subdir(dir, sizeof dir, "newer");
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA user_version = 99", NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	CHECK(store_open(dir, &s, &err) == PM_ERR_IO);
	CHECK_CONTAINS(err.message, "has schema version 99; this pmaxent knows ");

	/* a data directory that cannot be created */
	snprintf(path, sizeof path, "%s/corrupt/pmaxent.db/sub", root);
	CHECK(store_open(path, &s, &err) == PM_ERR_IO);
	CHECK_CONTAINS(err.message, "cannot create data directory");
	CHECK_CONTAINS(err.message, "Not a directory");
}

/* The mode bits of path, or -1. */
static int mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? -1 : (int)(st.st_mode & 07777);
}

/*
 * One store per data directory (a lock file with the holder's pid), its
 * files private, and a version 1 database (before the crash count)
 * migrated at open with its rows intact.
 */
static void test_lock_and_files(void)
{
	struct pm_error err = {0};
	struct store *s, *t = NULL;
	struct store_row r = {0};
	struct store_result m = {0};
	char dir[2048], path[2200], want[2300];
	sqlite3 *db;

	subdir(dir, sizeof dir, "locked");
	s = open_or_die(dir);
	CHECK(store_open(dir, &t, &err) == PM_ERR_IO && t == NULL);
	snprintf(want, sizeof want, "data directory %s is in use by pid %ld", dir, (long)getpid());
	CHECK_STR(err.message, want);
	CHECK_STR(err.field, "data_dir");
	snprintf(path, sizeof path, "%s/pmaxent.lock", dir);
	CHECK(mode_of(path) == 0600);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(mode_of(path) == 0600);
	CHECK(store_dataset_insert(s, "ds_1", "", "{}", "{}", &err) == PM_OK);
	snprintf(path, sizeof path, "%s/pmaxent.db-wal", dir);
	CHECK(mode_of(path) == 0600);
	store_close(s);
	/* released with the store; files an older version left readable are
	 * made private */
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(chmod(path, 0644) == 0);
	s = open_or_die(dir);
	CHECK(mode_of(path) == 0600);
	store_close(s);

	/* schema version 1 (no crash count), with a row in it */
	subdir(dir, sizeof dir, "v1");
	CHECK(mkdir(dir, 0700) == 0);
	snprintf(path, sizeof path, "%s/pmaxent.db", dir);
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(
		  db,
		  "CREATE TABLE datasets(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT "
		  "UNIQUE NOT NULL, tenant TEXT NOT NULL, summary TEXT NOT NULL, body TEXT "
		  "NOT NULL, created INTEGER NOT NULL, updated INTEGER NOT NULL);"
		  "CREATE TABLE analyses(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT "
		  "UNIQUE NOT NULL, tenant TEXT NOT NULL, dataset_id TEXT NOT NULL "
		  "REFERENCES datasets(id) ON DELETE CASCADE, status TEXT NOT NULL, request "
		  "TEXT, result TEXT, problem TEXT, attempts INTEGER NOT NULL DEFAULT 0, "
		  "created INTEGER NOT NULL, updated INTEGER NOT NULL);"
		  "INSERT INTO datasets VALUES(1, 'ds_old', '', '{}', '{}', 1, 1);"
		  "INSERT INTO analyses VALUES(1, 'an_old', '', 'ds_old', 'running', '{}', "
		  "NULL, NULL, 1, 1, 1);"
		  "INSERT INTO analyses VALUES(2, 'an_done', '', 'ds_old', 'succeeded', '{}', "
		  "'{\"x\":1}', NULL, 1, 1, 1);"
		  "PRAGMA user_version = 1",
		  NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	s = open_or_die(dir);
	CHECK(store_analysis_get(s, "an_old", NULL, &r, &err) == PM_OK);
	CHECK(r.crashes == 0 && r.attempts == 1 && !strcmp(r.status, "running"));
	store_row_finish(&r);
	CHECK(store_analysis_interrupted(s, "an_old", 2, "{\"p\": 1}", &(int){0}, &err) == PM_OK);
	CHECK(store_analysis_get(s, "an_old", NULL, &r, &err) == PM_OK);
	CHECK(r.crashes == 1 && !strcmp(r.status, "queued") && !r.problem);
	store_row_finish(&r);
	CHECK(store_analysis_transition(s, "an_old", "queued", "running", NULL, &err) == PM_OK);
	CHECK(store_analysis_interrupted(s, "an_old", 2, "{\"p\": 1}", &(int){0}, &err) == PM_OK);
	CHECK(store_analysis_get(s, "an_old", NULL, &r, &err) == PM_OK);
	CHECK(r.crashes == 2 && !strcmp(r.status, "failed") && r.problem);
	store_row_finish(&r);
	/* a result stored in the row reads as before */
	CHECK(store_analysis_get(s, "an_done", NULL, &r, &err) == PM_OK);
	CHECK_STR(r.result, "{\"x\":1}");
	store_row_finish(&r);
	CHECK(store_analysis_head(s, "an_done", "", 0, &r, &m, &err) == PM_OK);
	CHECK(m.legacy && m.len == -1 && m.request_len == -1 && !m.summary && !r.result);
	store_row_finish(&r);
	store_result_finish(&m);
	store_close(s);
}

int main(void)
{
	char dir[4096];

	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	subdir(dir, sizeof dir, "restart");
	test_restart(dir);
	test_crash();
	test_bad_files();
	test_lock_and_files();
	rm_tree(root);
	return check_done();
}
