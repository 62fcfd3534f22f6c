/*
 * core/util/names.h: what a device or volume may be called.
 *
 * A name becomes a file name under the mount point, so it must be one
 * path component that no shell or option parser mistakes for something
 * else: 1 to POOL_NAME_MAX characters of [A-Za-z0-9._+-], not starting
 * with '.' (no ".", "..", hidden files) or '-' (not an option).
 */
#ifndef MAPPERFS_NAMES_H
#define MAPPERFS_NAMES_H

/* Completes "invalid name 'x': " in error messages. */
#define NAME_RULES \
	"use letters, digits and . _ + - (at most 64, not starting with . or -)"

/* 1 if @name is a valid device or volume name, else 0. */
int name_valid(const char *name);

#endif
