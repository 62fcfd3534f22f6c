/*
 * core/util/log.c: one-line messages.  Errors that a failing device repeats on
 * every request are rate-limited per call site (log_error_limited): a
 * disk that fails for an hour writes a few lines a minute, not one per
 * request, and says how many it left out; a line the same as the one
 * before it at that site is printed once a period, however often it
 * comes (a database that fails every retried commit alike).
 */
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "regfile.h"

static const char *log_program = "mapperfs";
static FILE *log_stream;
static enum log_level log_max = LOG_LEVEL_INFO;
static bool log_stderr_too;
static bool log_syslog;			/* log_to_syslog() */
static bool log_journal;		/* log_to_journal() */
static char *log_path;			/* what log_reopen() opens again */
static const char *const level_names[] = { "error", "warning", "info", "debug" };

void log_init(const char *program)
{
	log_program = program;
}

void log_set_level(enum log_level level)
{
	log_max = level;
}

int log_parse_level(const char *name, enum log_level *out)
{
	for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
		if (!strcmp(name, level_names[i])) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

void log_to_syslog(const char *ident)
{
	openlog(ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
	log_syslog = true;
}

void log_to_journal(void)
{
	log_journal = true;
}

void log_also_stderr(bool on)
{
	log_stderr_too = on;
}

/* The log is a file of the pool: neither a link nor a FIFO (regfile.h). */
static int open_log(const char *path, int *fd)
{
	return regfile_open(path, O_WRONLY | O_APPEND | O_CREAT, 0600, fd);
}

int log_to_file(const char *path)
{
	char *copy = strdup(path);
	FILE *f = NULL;
	int fd = -1, r;

	r = copy ? open_log(path, &fd) : -ENOMEM;
	if (!r && !(f = fdopen(fd, "a")))
		r = -errno;
	if (r) {
		if (fd >= 0)
			close(fd);
		free(copy);
		return r;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	free(log_path);
	log_path = copy;
	log_stream = f;
	return 0;
}

/*
 * Other threads may be writing through log_stream at this moment, so the
 * stream stays; only the descriptor under it changes, and dup2() swaps it
 * in one step: each line lands whole in the old file or in the new one.
 */
int log_reopen(void)
{
	int fd, r = 0;

	if (!log_path)
		return -ENOENT;
	r = open_log(log_path, &fd);
	if (r)
		return r;
	if (dup3(fd, fileno(log_stream), O_CLOEXEC) < 0)
		r = -errno;
	close(fd);
	return r;
}

/* "2026-12-01T03:15:10.123Z": now in UTC, to the millisecond. */
static void format_time(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

static void log_line(enum log_level lv, const char *fmt, va_list ap)
{
	static const char *const prefix[] = { "error: ", "warning: ", "", "debug: " };
	static const int syslog_prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	const char *level = prefix[lv];
	char line[1024], now[32];

	if (lv > log_max)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	if (log_stream) {
		format_time(now, sizeof(now));
		fprintf(log_stream, "%s %s: %s\n", now, level_names[lv], line);
	} else if (!log_journal) {
		fprintf(stderr, "%s: %s%s\n", log_program, level, line);
	}
	if (log_journal)
		fprintf(stderr, "<%d>%s%s\n", syslog_prio[lv], level, line);
	else if (log_stderr_too && log_stream && lv <= LOG_LEVEL_WARN)
		fprintf(stderr, "%s: %s%s\n", log_program, level, line);
	if (log_syslog)
		syslog(syslog_prio[lv], "%s%s", level, line);
}

#define LOG_FN(fn, level)				\
	void fn(const char *fmt, ...)			\
	{						\
		va_list ap;				\
		va_start(ap, fmt);			\
		log_line(level, fmt, ap);		\
		va_end(ap);				\
	}

LOG_FN(log_error, LOG_LEVEL_ERROR)
LOG_FN(log_warn, LOG_LEVEL_WARN)
LOG_FN(log_info, LOG_LEVEL_INFO)
LOG_FN(log_debug, LOG_LEVEL_DEBUG)

void log_at(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_line(level, fmt, ap);
	va_end(ap);
}

static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

/* FNV-1a: tells a repeated line from a new one without keeping it. */
static uint64_t line_hash(const char *line)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *line; line++)
		h = (h ^ (unsigned char)*line) * 0x100000001b3ull;
	return h;
}

void log_error_limited(struct log_limit *l, const char *fmt, ...)
{
	uint64_t now = now_s(), left_out = 0, h;
	char line[1024];
	bool print;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	h = line_hash(line);
	pthread_mutex_lock(&limit_lock);
	if (now - l->start >= LOG_LIMIT_PERIOD_S) {
		left_out = l->left_out;
		l->start = now;
		l->lines = 0;
		l->left_out = 0;
		l->last = 0;
	}
	print = l->lines < LOG_LIMIT_BURST && h != l->last;
	if (print) {
		l->lines++;
		l->last = h;
	} else {
		l->left_out++;
	}
	pthread_mutex_unlock(&limit_lock);
	if (left_out)
		log_error("... and %llu more like the above in %u s", (unsigned long long)left_out,
			  LOG_LIMIT_PERIOD_S);
	if (print)
		log_error("%s", line);
}
