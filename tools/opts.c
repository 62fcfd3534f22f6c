#include "opts.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "size.h"

#define VOLUME_ALIGN	4096u

int opts_size(const char *arg, uint64_t *out, struct pool_error *err)
{
	int r = parse_size(arg, out);

	if (r == -ERANGE)
		return pool_fail(err, r, "size '%s' is too large", arg);
	if (r == -EDOM)
		return pool_fail(err, -EINVAL, "size '%s' is not a whole number of bytes", arg);
	if (r && arg[0] == '-')
		return pool_fail(err, -EINVAL, "size '%s' is negative", arg);
	if (r)
		return pool_fail(err, -EINVAL, "invalid size '%s': use a number with an optional unit K, M, G, T, P, E (KB, KiB: 1024 bytes) or s (sectors)",
				 arg);
	return 0;
}

int opts_block_size(const char *arg, uint64_t *out, struct pool_error *err)
{
	int r = opts_size(arg, out, err);

	if (r)
		return r;
	if (!*out)
		return pool_fail(err, -EINVAL, "size '%s' must be larger than zero", arg);
	if (*out % VOLUME_ALIGN)
		return pool_fail(err, -EINVAL, "size '%s' is not a multiple of 4 KiB", arg);
	return 0;
}

/* Splits a strdup of @arg at its first @nr_parts - 1 colons. */
static int split(const char *arg, char **copy, char **parts, int nr_parts)
{
	char *p;

	*copy = strdup(arg);
	if (!*copy)
		return -ENOMEM;
	p = *copy;
	parts[0] = p;
	for (int i = 1; i < nr_parts; i++) {
		p = strchr(p, ':');
		if (!p)
			return -EINVAL;
		*p++ = '\0';
		parts[i] = p;
	}
	return 0;
}

int opts_segment(const char *arg, char **copy, struct pool_segment *out,
		 struct pool_error *err)
{
	char *parts[3];
	int r;

	r = split(arg, copy, parts, 3);
	if (r == -ENOMEM)
		return pool_fail(err, r, "out of memory");
	if (r)
		return pool_fail(err, r, "invalid segment '%s': use DEVICE:OFFSET:LENGTH", arg);
	out->arg = arg;
	out->device = parts[0];
	r = opts_size(parts[1], &out->offset, err);
	if (!r && out->offset % VOLUME_ALIGN)
		r = pool_fail(err, -EINVAL, "segment '%s': offset is not a multiple of 4 KiB",
			      arg);
	return r ? r : opts_block_size(parts[2], &out->length, err);
}

int opts_switch_path(const char *arg, char **copy, struct pool_switch_path *out,
		     struct pool_error *err)
{
	char *parts[2];
	int r;

	r = split(arg, copy, parts, 2);
	if (r == -ENOMEM)
		return pool_fail(err, r, "out of memory");
	out->arg = arg;
	out->device = parts[0];
	out->owned = r != 0;
	if (out->owned)
		return 0;
	r = opts_size(parts[1], &out->offset, err);
	if (!r && out->offset % VOLUME_ALIGN)
		r = pool_fail(err, -EINVAL, "path '%s': offset is not a multiple of 4 KiB", arg);
	return r;
}

int opts_when_full(const char *arg, struct thin_pool_rec *p, struct pool_error *err)
{
	char *end;

	if (!strcmp(arg, "error")) {
		p->wait = false;
		return 0;
	}
	if (!strncmp(arg, "wait:", 5)) {
		unsigned long v = strtoul(arg + 5, &end, 10);

		if (arg[5] >= '0' && arg[5] <= '9' && !*end && v > 0 && v <= 86400) {
			p->wait = true;
			p->wait_seconds = (uint32_t)v;
			return 0;
		}
	}
	return pool_fail(err, -EINVAL, "invalid --when-full '%s': use error or wait:SECONDS (1..86400)",
			 arg);
}

int opts_percent(const char *arg, const char *what, uint32_t min, uint32_t *out,
		 struct pool_error *err)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (arg[0] < '0' || arg[0] > '9' || *end || v < min || v > 100)
		return pool_fail(err, -EINVAL, "%s '%s' must be a percentage %u..100", what, arg, min);
	*out = (uint32_t)v;
	return 0;
}

int opts_number(const char *arg, const char *what, uint32_t min, uint32_t max, uint32_t *out,
		struct pool_error *err)
{
	char *end;
	unsigned long v = strtoul(arg, &end, 10);

	if (arg[0] < '0' || arg[0] > '9' || *end || v < min || v > max)
		return pool_fail(err, -EINVAL, "%s '%s' must be a number %u..%u", what, arg, min, max);
	*out = (uint32_t)v;
	return 0;
}
