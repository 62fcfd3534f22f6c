#include "names.h"

#include <string.h>

#include "records.h"

/* Not isalnum(): names must not depend on the locale. */
static int name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || strchr("._+-", c);
}

int name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > POOL_NAME_MAX)
		return 0;
	if (name[0] == '.' || name[0] == '-')
		return 0;
	for (const char *p = name; *p; p++)
		if (!name_char(*p))
			return 0;
	return 1;
}
