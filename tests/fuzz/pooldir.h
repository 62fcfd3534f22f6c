/*
 * tests/fuzz/pooldir.h: a pool directory that holds the fuzzer's bytes as
 * its database, for the harnesses that open damaged pools.
 *
 * An input is the bytes of pool.db, optionally followed by POOLDIR_WAL
 * and the bytes of pool.db-wal: so one corpus covers a checkpointed pool
 * and one with committed changes still in its write-ahead log.
 *
 * The directory is made once per process under /dev/shm (tmpfs: fsync
 * is free), as POOLDIR_SEED_PATH with its last six characters random.
 * The seed pools were made at POOLDIR_SEED_PATH itself, so the paths of
 * their devices name it; pooldir_write() puts this directory's name in
 * their place (same length, so the SQLite file stays well formed).
 */
#ifndef MAPPERFS_FUZZ_POOLDIR_H
#define MAPPERFS_FUZZ_POOLDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define POOLDIR_WAL		"MPFSWAL!"
#define POOLDIR_SEED_PATH	"/dev/shm/mpfsfuzz.SEED00"
#define POOLDIR_DEVICE		"dev0"		/* the one file device */

/* Makes the directory (removed at exit) and returns its path. */
const char *pooldir_init(void);

/*
 * Writes @data as pool.db (and pool.db-wal), replacing the seed path by
 * the directory's when @rename.  Removes what the last input left.
 */
void pooldir_write(const uint8_t *data, size_t size, bool rename);

/*
 * Makes POOLDIR_DEVICE the device the database says it is, where it
 * registers one at that path: a sparse file of the recorded size (at
 * most 256 MiB) carrying the label of that pool and device.  Reads the
 * database with SQLite directly, read-only, and leaves no -shm behind;
 * so the open under test meets the files as written.
 */
void pooldir_make_device(void);

/* Removes every file of the directory but the lock. */
void pooldir_clear(void);

#endif
