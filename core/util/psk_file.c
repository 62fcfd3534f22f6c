#include "psk_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool identity_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == '_' || c == '-';
}

static bool hex_char(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Checks line @n (@len bytes at @s) "IDENTITY:HEXKEY"; -EINVAL with @why. */
static int check_line(const char *s, size_t len, unsigned int n, char *why, size_t why_len)
{
	const char *colon = memchr(s, ':', len);
	size_t id_len = colon ? (size_t)(colon - s) : 0, key_len = colon ? len - id_len - 1 : 0;

	if (!colon || !id_len || id_len > PSK_IDENTITY_MAX) {
		snprintf(why, why_len, "line %u is not IDENTITY:HEXKEY (an identity of 1 to %d "
			 "characters)", n, PSK_IDENTITY_MAX);
		return -EINVAL;
	}
	for (size_t i = 0; i < id_len; i++)
		if (!identity_char(s[i])) {
			snprintf(why, why_len, "line %u: the identity may hold letters, digits, "
				 "'.', '_' and '-' only", n);
			return -EINVAL;
		}
	for (size_t i = 0; i < key_len; i++)
		if (!hex_char(colon[1 + i])) {
			snprintf(why, why_len, "line %u: the key is not hexadecimal", n);
			return -EINVAL;
		}
	if (key_len % 2 || key_len < 2 * PSK_KEY_MIN_BYTES) {
		snprintf(why, why_len, "line %u: the key must be at least %d bytes, in hex "
			 "(psktool -u NAME -p FILE makes one)", n, PSK_KEY_MIN_BYTES);
		return -EINVAL;
	}
	return 0;
}

/* Reads and checks the whole file at @fd; the first identity in @identity. */
static int check_content(int fd, char *identity, char *why, size_t why_len)
{
	char *buf = malloc(PSK_FILE_MAX + 1);
	ssize_t got = buf ? pread(fd, buf, PSK_FILE_MAX + 1, 0) : -1;
	unsigned int n = 0, lines = 0;
	int r = 0;

	if (got < 0) {
		r = buf ? -errno : -ENOMEM;
		snprintf(why, why_len, "cannot be read: %s", strerror(-r));
	} else if (got > PSK_FILE_MAX) {
		r = -EFBIG;
		snprintf(why, why_len, "is larger than %d bytes", PSK_FILE_MAX);
	}
	for (size_t at = 0; !r && at < (size_t)got;) {
		char *nl = memchr(buf + at, '\n', (size_t)got - at);
		size_t len = (nl ? (size_t)(nl - buf) : (size_t)got) - at;

		n++;
		if (len && !(r = check_line(buf + at, len, n, why, why_len)) && !lines++)
			snprintf(identity, PSK_IDENTITY_MAX + 1, "%.*s",
				 (int)((char *)memchr(buf + at, ':', len) - (buf + at)), buf + at);
		at += len + 1;
	}
	if (!r && !lines) {
		r = -EINVAL;
		snprintf(why, why_len, "holds no key (lines IDENTITY:HEXKEY)");
	}
	free(buf);
	return r;
}

int psk_file_open(const char *path, uid_t owner, char *identity, char *why, size_t why_len)
{
	struct stat st;
	int fd, r = 0;

	if (path[0] != '/') {
		snprintf(why, why_len, "is not an absolute path");
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		snprintf(why, why_len, "cannot be opened: %s", r == -ELOOP ?
			 "it is a symbolic link" : strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, why_len, "cannot be looked at: %s", strerror(-r));
	} else if (!S_ISREG(st.st_mode)) {
		r = -EINVAL;
		snprintf(why, why_len, "is not a regular file");
	} else if (st.st_uid != owner && st.st_uid != 0) {
		r = -EPERM;
		snprintf(why, why_len, "belongs to uid %u, neither the pool's owner (%u) nor root",
			 (unsigned int)st.st_uid, (unsigned int)owner);
	} else if (st.st_mode & 077) {
		r = -EPERM;
		snprintf(why, why_len, "may be read or written by others (mode %04o): chmod 600 it",
			 (unsigned int)(st.st_mode & 07777));
	} else {
		r = check_content(fd, identity, why, why_len);
	}
	if (r) {
		close(fd);
		return r;
	}
	fcntl(fd, F_SETFL, 0);		/* O_NONBLOCK was for the open only (a FIFO) */
	return fd;
}
