#include "log.h"

#include <errno.h>
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
	FILE *f = fopen(path, "ae");

	if (!f)
		return -errno;
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
