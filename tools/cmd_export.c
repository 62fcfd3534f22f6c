/*
 * export, unexport: a volume served over NBD (pool_export).  The command
 * records where; the daemon runs nbdkit on the volume's file while it
 * serves the pool (fs/exporter.c), so an export made offline is served
 * from the next start.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

#define WHAT_EXPORT	"export"
#define WHAT_UNEXPORT	"unexport"

enum { OPT_UNIX = 'u', OPT_TCP = 't', OPT_READ_ONLY = 'r', OPT_TLS_PSK = 'k' };

static const struct option options[] = {
	{ "unix", required_argument, NULL, OPT_UNIX },
	{ "tcp", required_argument, NULL, OPT_TCP },
	{ "read-only", no_argument, NULL, OPT_READ_ONLY },
	{ "tls-psk", required_argument, NULL, OPT_TLS_PSK },
	{ 0 }
};

static const char *const path_options[] = { "--unix", "--tls-psk", NULL };

/* Parses the options into @e (its address empty: the default socket). */
static int parse(struct cmd_ctx *ctx, int argc, char **argv, struct export_rec *e)
{
	bool unix_given = false, tcp_given = false;
	int c;

	for (int first = 1; (c = cmd_next_option(ctx, WHAT_EXPORT, argc, argv, options, first)) != -1;
	     first = 0) {
		switch (c) {
		case OPT_UNIX:
		case OPT_TCP:
			if (unix_given || tcp_given)
				return cmd_usage_error(ctx, WHAT_EXPORT,
						       "give one of --unix and --tcp, once");
			unix_given = c == OPT_UNIX;
			tcp_given = c == OPT_TCP;
			e->transport = tcp_given ? EXPORT_TCP : EXPORT_UNIX;
			if (snprintf(e->address, sizeof(e->address), "%s", optarg) >=
			    (int)sizeof(e->address))
				return cmd_error(ctx, WHAT_EXPORT, "address '%.64s...' is too long",
						 optarg);
			break;
		case OPT_READ_ONLY:
			e->read_only = true;
			break;
		case OPT_TLS_PSK:
			if (snprintf(e->tls_psk, sizeof(e->tls_psk), "%s", optarg) >=
			    (int)sizeof(e->tls_psk))
				return cmd_error(ctx, WHAT_EXPORT, "key file path '%.64s...' is too long",
						 optarg);
			break;
		default:
			return CMD_USAGE;
		}
	}
	return cmd_args(ctx, WHAT_EXPORT, argc, argv, 1, 1, "the volume NAME");
}

static int export_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct export_rec e = { .transport = EXPORT_UNIX };
	char uri[POOL_EXPORT_URI_MAX];
	struct pool_error err;
	const char *name;
	int r;

	r = parse(ctx, argc, argv, &e);
	if (r)
		return r;
	name = argv[ctx->optind];
	if (!e.address[0]) {		/* POOL/nbd-NAME.sock; POOL may be relative offline */
		char *pool_dir = cmd_absolute(ctx->pool_dir, &err);

		if (!pool_dir)
			return cmd_fail(ctx, WHAT_EXPORT, &err);
		snprintf(e.address, sizeof(e.address), "%s/nbd-%.64s.sock", pool_dir, name);
		free(pool_dir);
	}
	if (pool_export(ctx->pool, name, &e, &err))
		return cmd_fail(ctx, WHAT_EXPORT, &err);
	pool_export_uri(&e, uri, sizeof(uri));
	fprintf(ctx->out, "exported volume '%s' on %s%s%s%s\n", name, uri,
		e.read_only ? ", read-only" : "", e.tls_psk[0] ? ", TLS required" : "",
		ctx->host ? "" : " (served once a daemon serves the pool)");
	return CMD_OK;
}

static int unexport_run(struct cmd_ctx *ctx, int argc, char **argv)
{
	struct pool_error err;
	int r;

	if (cmd_next_option(ctx, WHAT_UNEXPORT, argc, argv, NULL, 1) != -1)
		return CMD_USAGE;
	r = cmd_args(ctx, WHAT_UNEXPORT, argc, argv, 1, 1, "the volume NAME");
	if (r)
		return r;
	if (pool_unexport(ctx->pool, argv[ctx->optind], &err))
		return cmd_fail(ctx, WHAT_UNEXPORT, &err);
	fprintf(ctx->out, "volume '%s' is no longer exported\n", argv[ctx->optind]);
	return CMD_OK;
}

const struct cmd cmd_export = {
	.name = "export",
	.usage =
		"export NAME [--unix PATH | --tcp ADDR:PORT] [--read-only] [--tls-psk FILE]\n"
		"\n"
		"Serves the volume NAME over NBD while a daemon serves the pool: the\n"
		"daemon runs nbdkit on the volume's file, with holes reported\n"
		"(base:allocation), trim, zero and flush passed to the volume, and\n"
		"multi-conn.  The export is recorded, so it is served again after a\n"
		"restart; an export made with no daemon running is served from the\n"
		"next start.  status and list show it (address, state, nbdkit's pid).\n"
		"While exported, the volume cannot be removed, renamed or\n"
		"deactivated: unexport it first.\n"
		"\n"
		"  --unix PATH       listen on a Unix socket made at PATH, mode 0600 (it\n"
		"                    must not exist); the default is POOL/nbd-NAME.sock\n"
		"  --tcp ADDR:PORT   listen on TCP there only: ADDR a numeric IPv4\n"
		"                    address or [IPv6] (no names), PORT 1-65535\n"
		"  --read-only       clients can only read\n"
		"  --tls-psk FILE    require TLS, with the pre-shared keys in FILE (lines\n"
		"                    IDENTITY:HEXKEY, as psktool writes; owned by you,\n"
		"                    mode 0600): only a client with a key connects\n"
		"\n"
		"Clients: nbd+unix:///?socket=PATH or nbd://ADDR:PORT (qemu-img,\n"
		"qemu-io, nbdinfo, nbdcopy, nbd-client); with TLS,\n"
		"nbds://IDENTITY@ADDR:PORT/?tls-psk-file=FILE (libnbd), or qemu's\n"
		"--object tls-creds-psk.  A TCP export without TLS is open to anyone\n"
		"who can reach the address.\n",
	.run = export_run,
	.options = options,
	.needs_pool = 1,
	.path_options = path_options,
};

const struct cmd cmd_unexport = {
	.name = "unexport",
	.usage =
		"unexport NAME\n"
		"\n"
		"Stops serving the volume NAME over NBD: the daemon stops its nbdkit\n"
		"(clients connected are cut off) and removes its Unix socket.\n",
	.run = unexport_run,
	.needs_pool = 1,
};
