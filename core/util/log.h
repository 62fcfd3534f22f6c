/*
 * core/util/log.h: one-line messages for people.
 *
 * Messages go to stderr until log_to_file() points them at a file (the
 * daemon does this when it detaches).  A line on stderr is prefixed with
 * the program name and the level ("mapperfs: warning: ..."; none for
 * info); a line in the file with the UTC time to the millisecond and the
 * level ("2026-12-01T03:15:10.123Z warning: ...", "... info: ...").
 * Thread-safe: one fprintf per line.  Lines
 * may also go to syslog (log_to_syslog), and to stderr with the "<N>"
 * priority prefixes the systemd journal reads (log_to_journal).
 */
#ifndef MAPPERFS_LOG_H
#define MAPPERFS_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum log_level {
	LOG_LEVEL_ERROR,
	LOG_LEVEL_WARN,
	LOG_LEVEL_INFO,
	LOG_LEVEL_DEBUG,
};

void log_init(const char *program);		/* name used as prefix */
/* Lines above @level are dropped (mapperctl: warnings and errors only). */
void log_set_level(enum log_level level);
/* "error", "warning", "info" or "debug" in *out; -EINVAL for anything else. */
int log_parse_level(const char *name, enum log_level *out);
/*
 * Mode 0600.  @path is opened as regfile.h says: a link, a FIFO or a hard
 * link there is refused (its -errno), and never blocks.  0 or -errno.
 */
int log_to_file(const char *path);
/* Every line also to syslog (facility daemon), from now on. */
void log_to_syslog(const char *ident);
/*
 * Every line also to stderr, prefixed "<3>" (error) to "<7>" (debug) as
 * sd-daemon(3) says, for the journal of a service; stays on.
 */
void log_to_journal(void);
/* While logging to a file, copy warnings and errors to stderr too. */
void log_also_stderr(bool on);
/*
 * Opens the file of log_to_file() again, by its path: after logrotate
 * renamed it, the next line starts a new file, refused as by
 * log_to_file() if it is not a regular file.  Safe while other threads
 * log.  0, -ENOENT when logging to stderr, or -errno (the old file stays).
 */
int log_reopen(void);

void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* At a level the caller chooses (an event's, say). */
void log_at(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * A call site's budget: LOG_LIMIT_BURST lines per LOG_LIMIT_PERIOD_S, a
 * line that repeats the one before it once per period, then one line
 * counting what was left out.  Static, zeroed.
 */
#define LOG_LIMIT_BURST		10
#define LOG_LIMIT_PERIOD_S	60

struct log_limit {
	uint64_t start;			/* seconds (CLOCK_MONOTONIC) */
	unsigned int lines;		/* printed in this period */
	uint64_t left_out;		/* dropped in this period */
	uint64_t last;			/* hash of the last line printed, this period */
};

void log_error_limited(struct log_limit *l, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif
