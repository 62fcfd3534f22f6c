/*
 * tests/fuzz/fuzz.h: what the libFuzzer harnesses share.
 *
 * Each harness feeds one parser of outside input the bytes libFuzzer
 * makes, and checks the parser's contract on every input: the documented
 * return codes only, and, where a parser has an inverse, that the two
 * agree.  A broken contract aborts (FUZZ_CHECK), which libFuzzer reports
 * like a crash, with the input saved.  AddressSanitizer, UBSan and
 * LeakSanitizer catch the rest.
 */
#ifndef MAPPERFS_FUZZ_H
#define MAPPERFS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts with the failed condition when @cond is false, NDEBUG or not. */
#define FUZZ_CHECK(cond)                                                     \
	do {                                                                 \
		if (!(cond)) {                                               \
			fprintf(stderr, "%s:%d: contract broken: %s\n",     \
				__FILE__, __LINE__, #cond);                  \
			abort();                                             \
		}                                                            \
	} while (0)

/* @data as a NUL-terminated string (it ends at the first NUL), malloc'ed. */
char *fuzz_string(const uint8_t *data, size_t size);

/*
 * A memfd holding @data, read position at 0: how a harness hands bytes to
 * code that reads a descriptor (a socket, a file).  Aborts on failure.
 */
int fuzz_memfd(const uint8_t *data, size_t size);

/*
 * Silences the product's log (harnesses meet errors on purpose), unless
 * MAPPERFS_FUZZ_LOG is set: then it goes to stderr, to see why an input
 * is refused.  The lines go to an unlinked temporary file, since the log
 * takes only a regular file; a harness that logs on every input calls
 * fuzz_log_trim() once per input, so that long runs take no disk.
 */
void fuzz_quiet(void);
/* Empties the file of fuzz_quiet.  One ftruncate. */
void fuzz_log_trim(void);

#endif
