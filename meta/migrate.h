/*
 * meta/migrate.h: brings a pool database's schema up to date.
 */
#ifndef MAPPERFS_MIGRATE_H
#define MAPPERFS_MIGRATE_H

struct store;

/* The schema version this build writes (PRAGMA user_version). */
int migrate_latest(void);

/*
 * Runs every step from the database's version to migrate_latest(), each in
 * its own BEGIN IMMEDIATE transaction that also sets user_version, so a
 * failed or interrupted upgrade leaves the last complete version.  Two
 * processes may race: a step already done by the other is skipped.
 * Returns 0 or -errno; -EPROTONOSUPPORT if the database is newer.
 */
int migrate_run(struct store *s);

#endif
