/*
 * tools/cmd_path.c: mapperctl makes the paths on its command line absolute
 * before the line leaves for the daemon, whose working directory is not the
 * user's.  Which options carry paths is the command's own table
 * (path_options, path_or_name_options, path_positional); "-" for standard
 * input or output, and a URI (nbd://..., a raw device over NBD), stay as
 * they are.
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nbd_uri.h"

/*
 * @uri with its parameter @name's path made absolute, if it has one
 * that is not (a copy), or NULL on ENOMEM.
 */
static char *param_absolute(const char *uri, const char *name, const char *cwd)
{
	const char *v = nbd_uri_param_at(uri, name);
	char path[PATH_MAX], *abs;

	if (!v || !nbd_uri_param(uri, name, path, sizeof(path)) || path[0] == '/')
		return strdup(uri);
	if (asprintf(&abs, "%.*s%s/%s", (int)(v - uri), uri, cwd, v) < 0)
		return NULL;
	return abs;
}

/*
 * @uri with the socket= path of an nbd+unix URI and the tls-psk-file=
 * path made absolute (a copy), the daemon's working directory not being
 * the user's.
 */
static char *uri_absolute(const char *uri, const char *cwd)
{
	char *sock = nbd_uri_is_unix(uri) ? param_absolute(uri, "socket", cwd)
					  : strdup(uri);
	char *abs = sock ? param_absolute(sock, "tls-psk-file", cwd) : NULL;

	free(sock);
	return abs;
}

char *cmd_absolute(const char *path, struct pool_error *err)
{
	char cwd[PATH_MAX], *abs;

	if (nbd_uri_has_scheme(path)) {
		abs = getcwd(cwd, sizeof(cwd)) ? uri_absolute(path, cwd) : strdup(path);
		if (!abs)
			pool_fail(err, -ENOMEM, "out of memory");
		return abs;
	}
	if (path[0] == '/') {
		abs = strdup(path);
		if (!abs)
			pool_fail(err, -ENOMEM, "out of memory");
		return abs;
	}
	if (!getcwd(cwd, sizeof(cwd))) {
		pool_fail(err, -errno, "cannot find the current directory: %s", strerror(errno));
		return NULL;
	}
	if (asprintf(&abs, "%s/%s", cwd, path) < 0) {
		pool_fail(err, -ENOMEM, "out of memory");
		return NULL;
	}
	return abs;
}

static int named(const char *const *list, const char *name)
{
	for (const char *const *p = list; p && *p; p++)
		if (!strcmp(*p + 2, name))		/* "--file" names "file" */
			return 1;
	return 0;
}

/* Standard input or output, as the value of the input or output option. */
static int is_std_stream(const struct cmd *c, const char *name, const char *value)
{
	return ((c->input_option && !strcmp(name, c->input_option)) ||
		(c->output_option && !strcmp(name, c->output_option))) && !strcmp(value, "-");
}

/* Is @value of option @name a path to make absolute? */
static int is_path(const struct cmd *c, const char *name, const char *value)
{
	if (is_std_stream(c, name, value))
		return 0;
	if (named(c->path_options, name))
		return 1;
	return named(c->path_or_name_options, name) &&
	       (strchr(value, '/') || !access(value, F_OK));
}

/* Puts @abs where @old was in @argv (the parse permuted only a copy). */
static void replace(int argc, char **argv, const char *old, char *abs)
{
	for (int i = 0; i < argc; i++)
		if (argv[i] == old)
			argv[i] = abs;
}

int cmd_absolute_paths(const struct cmd *c, int argc, char **argv,
		       struct pool_error *err)
{
	static const struct option none[] = { { 0 } };
	const struct option *options = c->options ? c->options : none;
	char **copy = calloc((size_t)argc + 1, sizeof(*copy));
	int ch, index, r = 0;

	if (!copy)
		return pool_fail(err, -ENOMEM, "out of memory");
	memcpy(copy, argv, (size_t)argc * sizeof(*copy));
	optind = 0;
	opterr = 0;
	while (!r && (ch = getopt_long(argc, copy, c->short_options ? c->short_options : ":",
				       options, &index)) != -1) {
		const char *slot = copy[optind - 1];
		char *abs;

		if (ch != '?' && ch != ':' && ch != 0 && strchr(c->short_options ? c->short_options : "", ch))
			for (index = 0; options[index].name && options[index].val != ch; index++)
				;
		if (ch != '?' && ch != ':' && !options[index].name)
			continue;

		if (ch == '?' || ch == ':' || !options[index].has_arg ||
		    !is_path(c, options[index].name, optarg))
			continue;
		abs = cmd_absolute(optarg, err);
		if (abs && optarg != slot) {		/* --file=F */
			char *opt;

			if (asprintf(&opt, "--%s=%s", options[index].name, abs) < 0) {
				opt = NULL;
				pool_fail(err, -ENOMEM, "out of memory");
			}
			free(abs);
			abs = opt;
		}
		if (abs)
			replace(argc, argv, slot, abs);
		else
			r = -ENOMEM;
	}
	if (!r && c->path_positional && optind + (int)c->path_positional - 1 < argc) {
		const char *slot = copy[optind + c->path_positional - 1];
		char *abs = cmd_absolute(slot, err);

		if (abs)
			replace(argc, argv, slot, abs);
		else
			r = -ENOMEM;
	}
	free(copy);
	return r;
}
