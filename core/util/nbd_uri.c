#include "nbd_uri.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool nbd_uri_has_scheme(const char *path)
{
	size_t n = strspn(path, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			  "0123456789+-.");

	return n && ((path[0] >= 'a' && path[0] <= 'z') || (path[0] >= 'A' && path[0] <= 'Z')) &&
	       !strncmp(path + n, "://", 3);
}

bool nbd_uri_is_unix(const char *uri)
{
	size_t n = strspn(uri, "abcdefghijklmnopqrstuvwxyz0123456789+-.");

	return n >= 5 && !strncmp(uri + n - 5, "+unix", 5) && !strncmp(uri + n, "://", 3);
}

const char *nbd_uri_param_at(const char *uri, const char *name)
{
	const char *end = uri + strcspn(uri, "#");
	size_t n = strlen(name);

	for (const char *p = strchr(uri, '?'); p && p < end; p = strchr(p + 1, '&'))
		if (!strncmp(p + 1, name, n) && p[1 + n] == '=')
			return p + 2 + n;
	return NULL;
}

bool nbd_uri_param(const char *uri, const char *name, char *out, size_t len)
{
	const char *v = nbd_uri_param_at(uri, name);
	size_t n = 0;

	if (!v || !len)
		return false;
	for (; *v && *v != '&' && *v != '#'; v++) {
		unsigned int c;

		if (n + 1 >= len)
			return false;
		if (*v == '%' && sscanf(v + 1, "%2x", &c) == 1) {
			out[n++] = (char)c;
			v += 2;
		} else {
			out[n++] = *v;
		}
	}
	out[n] = '\0';
	return n > 0;
}

const char *nbd_uri_socket_at(const char *uri)
{
	return nbd_uri_param_at(uri, "socket");
}

bool nbd_uri_socket(const char *uri, char *out, size_t len)
{
	return nbd_uri_param(uri, "socket", out, len);
}

bool nbd_uri_is_tls(const char *uri)
{
	return !strncmp(uri, "nbds://", 7) || !strncmp(uri, "nbds+", 5);
}

bool nbd_uri_without(const char *uri, const char *name, char *out, size_t len)
{
	const char *v = nbd_uri_param_at(uri, name), *start, *end;
	int n;

	if (!v) {
		n = snprintf(out, len, "%s", uri);
	} else {
		start = v - strlen(name) - 2;		/* its '?' or '&' */
		end = v + strcspn(v, "&#");
		if (*start == '?' && *end == '&')	/* the next parameter becomes the first */
			n = snprintf(out, len, "%.*s?%s", (int)(start - uri), uri, end + 1);
		else
			n = snprintf(out, len, "%.*s%s", (int)(start - uri), uri, end);
	}
	return n >= 0 && (size_t)n < len;
}

const char *nbd_uri_export(const char *uri, char *out, size_t len)
{
	const char *auth = strstr(uri, "://"), *slash, *end;

	slash = auth ? auth + 3 + strcspn(auth + 3, "/?#") : NULL;
	if (!slash || *slash != '/' || !slash[1] || slash[1] == '?' || slash[1] == '#')
		return NULL;
	end = slash + 1 + strcspn(slash + 1, "?#");
	if ((size_t)(end - slash - 1) >= len)
		return NULL;
	snprintf(out, len, "%.*s", (int)(end - slash - 1), slash + 1);
	return out;
}

/* A port number as a URI writes it: 1 to 5 digits, 1..65535. */
static bool port_valid(const char *port)
{
	size_t n = strspn(port, "0123456789");

	return n && n <= 5 && !port[n] && atoi(port) >= 1 && atoi(port) <= 65535;
}

bool nbd_uri_host(const char *uri, char *host, size_t hlen, char *port, size_t plen)
{
	const char *a = strstr(uri, "://"), *end, *colon, *user;

	if (!a)
		return false;
	a += 3;
	end = a + strcspn(a, "/?#");
	user = memrchr(a, '@', (size_t)(end - a));	/* userinfo (a TLS user name) */
	if (user)
		a = user + 1;
	if (*a == '[') {
		const char *close = memchr(a, ']', (size_t)(end - a));

		if (!close)
			return false;
		snprintf(host, hlen, "%.*s", (int)(close - a - 1), a + 1);
		colon = close + 1 < end && close[1] == ':' ? close + 1 : NULL;
	} else {
		colon = memchr(a, ':', (size_t)(end - a));
		snprintf(host, hlen, "%.*s", (int)((colon ? colon : end) - a), a);
	}
	if (colon)
		snprintf(port, plen, "%.*s", (int)(end - colon - 1), colon + 1);
	else
		snprintf(port, plen, "10809");
	return host[0] && port_valid(port);
}
