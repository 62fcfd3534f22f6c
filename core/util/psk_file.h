/*
 * core/util/psk_file.h: a TLS pre-shared key file, as nbdkit --tls-psk and
 * gnutls's psktool keep them: lines "IDENTITY:HEXKEY".
 *
 * A key file is a secret that a root daemon hands to nbdkit on a pool
 * owner's behalf, so it is taken only as ssh takes a private key: a
 * regular file reached without following a symbolic link at its end,
 * owned by the pool's owner (or root), that nobody else may read or
 * write (mode 0600 or 0400), and that parses: at least one line, each an
 * identity of letters, digits, '.', '_' or '-', and a key of at least 16
 * bytes in hex.  Then the same open descriptor is what nbdkit reads
 * (/dev/fd/N), never the path again, so a file swapped after the check
 * is not what is served.
 */
#ifndef MAPPERFS_PSK_FILE_H
#define MAPPERFS_PSK_FILE_H

#include <stddef.h>
#include <sys/types.h>

#define PSK_IDENTITY_MAX	64
#define PSK_KEY_MIN_BYTES	16
#define PSK_FILE_MAX		65536	/* bytes */

/*
 * Opens key file @path (absolute) for reading, checks it as above for
 * owner @owner, and puts its first identity in @identity (at least
 * PSK_IDENTITY_MAX + 1 bytes): the name a client connects as.  Returns
 * the descriptor (O_CLOEXEC, at offset 0), or -errno with a phrase in
 * @why ("is readable by others (mode 0644): chmod 600 it").  Blocks on
 * the file system.
 */
int psk_file_open(const char *path, uid_t owner, char *identity, char *why, size_t why_len);

#endif
