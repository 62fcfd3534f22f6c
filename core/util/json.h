/*
 * tools/json.h: a tiny streaming writer for --json output.
 *
 * Values are written as they are given, straight to a FILE *, so a
 * command builds its output in the order it reads the store and the
 * daemon can add members to an object it did not open (live_ops
 * volume_status).  Each call takes the member's key, or NULL for an
 * element of an array or the top-level value.
 *
 * The same calls render three ways: JSON pretty printed (what --json
 * prints), compact JSON, or JSON_TEXT, an indented "key: value" form for
 * people in which json_size() prints "1.00 GiB" instead of bytes.  So a
 * command describes its output once.
 *
 * Nothing is checked: keys and nesting are the caller's job, and write
 * errors show in ferror(f).
 */
#ifndef MAPPERFS_JSON_H
#define MAPPERFS_JSON_H

#include <stdint.h>
#include <stdio.h>

#define JSON_DEPTH_MAX	16

enum json_style {
	JSON_PRETTY,
	JSON_COMPACT,
	JSON_TEXT,
};

struct json {
	FILE *f;
	enum json_style style;
	unsigned int depth;			/* containers open */
	unsigned int nr[JSON_DEPTH_MAX];	/* members written, per depth */
	unsigned int indent[JSON_DEPTH_MAX];	/* JSON_TEXT: column of members */
	unsigned char array[JSON_DEPTH_MAX];	/* container is an array */
	unsigned int header_open : 1;		/* JSON_TEXT: "key:" awaits a child */
	unsigned int dash_pending : 1;		/* JSON_TEXT: next member starts "- " */
};

void json_init(struct json *j, FILE *f, enum json_style style);

void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);

void json_string(struct json *j, const char *key, const char *value);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_bool(struct json *j, const char *key, int value);
/* @part of @whole as a percentage with two decimals (12.34), as lvs shows it. */
void json_percent(struct json *j, const char *key, uint64_t part, uint64_t whole);
/* Bytes: a number in JSON, "1.00 GiB" in JSON_TEXT. */
void json_size(struct json *j, const char *key, uint64_t bytes);

/* Seconds since the epoch, as "2025-01-31T12:00:00Z" (UTC) in every style. */
void json_time(struct json *j, const char *key, int64_t seconds);

#endif
