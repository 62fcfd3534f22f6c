/*
 * tests/powercut/wlog.h: reading a write log (core/io/writelog.h).
 */
#ifndef POWERCUT_WLOG_H
#define POWERCUT_WLOG_H

#include <stddef.h>
#include <stdint.h>

#include "writelog.h"

struct wlog {
	const struct writelog_rec *rec;	/* rec[i].seq == i, or type NONE */
	uint64_t nr;			/* positions in the log */
	size_t map_len;
	int data_fd;
};

/* Maps DIR/log, opens DIR/data, checks the header.  0 or -errno. */
int wlog_open(const char *dir, struct wlog *w);
void wlog_close(struct wlog *w);

/* Reads the payload of @r (r->len bytes) into @buf.  0 or -EIO. */
int wlog_payload(const struct wlog *w, const struct writelog_rec *r, void *buf);

/* The path a FILE or DELETE record names, malloc'ed; NULL on error. */
char *wlog_name(const struct wlog *w, const struct writelog_rec *r);

/* The path of file id @file (a FILE record's position); NULL if none. */
char *wlog_file_name(const struct wlog *w, uint64_t file);

/* FNV-1a 64, as the log's hash field. */
uint64_t wlog_hash(const void *buf, uint64_t len);

#endif
