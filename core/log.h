/*
 * core/log.h: one-line messages for people.
 *
 * Messages go to stderr until log_to_file() points them at a file (the
 * daemon does this when it detaches).  Each line is prefixed with the
 * program name and the level.  Thread-safe: one fprintf per line.
 */
#ifndef MAPPERFS_LOG_H
#define MAPPERFS_LOG_H

#include <stdio.h>

void log_init(const char *program);		/* name used as prefix */
int log_to_file(const char *path);		/* mode 0600; 0 or -errno */

void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
