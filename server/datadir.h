/*
 * datadir: the data directory of the SQLite store and its lock
 * (datadir.c). Internal to server/.
 */
#ifndef PMAXENT_DATADIR_H
#define PMAXENT_DATADIR_H

#include "constraints.h"

/* ---- datadir.c ---------------------------------------------------------- */

/* Creates the data directory dir (mkdir -p, 0700) and takes its lock
 * (DIR/pmaxent.lock, 0600, the holder's pid in it): "data directory D is
 * in use by pid P" (PM_ERR_IO, field data_dir) when another process
 * holds it. The lock lasts until *lock_fd is closed (-1 on failure). */
enum pm_status datadir_open(const char *dir, int *lock_fd, struct pm_error *err);
/* Creates path if missing, and makes it readable by its owner only
 * (0600), also if it existed with a wider mode. */
enum pm_status datadir_private(const char *path, struct pm_error *err);

#endif
