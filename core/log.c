#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <stdarg.h>
#include <stdio.h>

static const char *log_program = "mapperfs";
static FILE *log_stream;

void log_init(const char *program)
{
	log_program = program;
}

int log_to_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;

	if (!f) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	log_stream = f;
	return 0;
}

static void log_line(const char *level, const char *fmt, va_list ap)
{
	FILE *out = log_stream ? log_stream : stderr;
	char line[1024];

	vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(out, "%s: %s%s\n", log_program, level, line);
}

#define LOG_FN(fn, level)				\
	void fn(const char *fmt, ...)			\
	{						\
		va_list ap;				\
		va_start(ap, fmt);			\
		log_line(level, fmt, ap);		\
		va_end(ap);				\
	}

LOG_FN(log_error, "error: ")
LOG_FN(log_warn, "warning: ")
LOG_FN(log_info, "")
