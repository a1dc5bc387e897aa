/*
 * The data directory of a store: created private (0700, the database holds
 * every tenant's data), locked for one server at a time, and the files in
 * it made private. The store (store.c) and, later, other back ends use it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "datadir.h"

/* mkdir -p with mode 0700: the database holds every tenant's data. */
static int make_dirs(const char *dir)
{
	char *p, c, *buf = strdup(dir);
	int ret = 0;

	if (!buf)
		return ENOMEM;
	for (p = buf + 1; !ret; p++) {
		if (*p && *p != '/')
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(buf, 0700) && errno != EEXIST)
			ret = errno;
		if (!c)
			break;
		*p = c;
	}
	free(buf);
	return ret;
}

/*
 * One server per store: an exclusive flock on DIR/pmaxent.lock, held
 * until *lock_fd is closed, with the holder's pid in the file for the
 * message. Two servers on one database would both run its queued
 * analyses.
 */
static enum pm_status lock_dir(const char *dir, int *lock_fd, struct pm_error *err)
{
	char path[4096 + 16], pid[32] = "";
	ssize_t n;

	snprintf(path, sizeof path, "%s/pmaxent.lock", dir);
	*lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (*lock_fd < 0)
		return error_set(err, PM_ERR_IO, "data_dir", "cannot open %s: %s", path,
				 strerror(errno));
	if (flock(*lock_fd, LOCK_EX | LOCK_NB)) {
		int e = errno;

		n = pread(*lock_fd, pid, sizeof pid - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		if (e != EWOULDBLOCK)
			return error_set(err, PM_ERR_IO, "data_dir", "cannot lock %s: %s", path,
					 strerror(e));
		return error_set(err, PM_ERR_IO, "data_dir",
				 "data directory %s is in use by pid %s", dir,
				 pid[0] ? pid : "(unknown)");
	}
	n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
	if (ftruncate(*lock_fd, 0) || pwrite(*lock_fd, pid, (size_t)n, 0) != n)
		return error_set(err, PM_ERR_IO, "data_dir", "cannot write %s: %s", path,
				 strerror(errno));
	return PM_OK;
}

enum pm_status datadir_open(const char *dir, int *lock_fd, struct pm_error *err)
{
	int e = make_dirs(dir);
	enum pm_status st;

	*lock_fd = -1;
	if (e)
		return error_set(err, PM_ERR_IO, "", "cannot create data directory \"%s\": %s", dir,
				 strerror(e));
	st = lock_dir(dir, lock_fd, err);
	if (st && *lock_fd >= 0) {
		close(*lock_fd);
		*lock_fd = -1;
	}
	return st;
}

enum pm_status datadir_private(const char *path, struct pm_error *err)
{
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	struct stat st;
	int bad;

	if (fd < 0)
		return error_set(err, PM_ERR_IO, "", "database %s: %s", path, strerror(errno));
	bad = fstat(fd, &st) || ((st.st_mode & 077) && fchmod(fd, 0600));
	close(fd);
	if (bad)
		return error_set(err, PM_ERR_IO, "", "database %s: cannot make it private: %s",
				 path, strerror(errno));
	return PM_OK;
}
