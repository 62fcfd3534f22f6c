/* tools/report_field.c: looking up and reading the fields of a report. */
#include "report_field.h"

#include <stdbool.h>
#include <string.h>

static bool is(const char *field_name, const char *name, size_t len)
{
	return field_name && strlen(field_name) == len && !strncmp(field_name, name, len);
}

const struct report_field *report_field_find(const struct report_field *fields, size_t nr,
					     const char *name, size_t len)
{
	for (size_t i = 0; i < nr; i++)
		if (is(fields[i].name, name, len) || is(fields[i].lvm_name, name, len))
			return &fields[i];
	return NULL;
}

void report_field_get(const struct report_field *f, const void *row, struct field_value *out)
{
	*out = (struct field_value){ .s = "" };
	f->get(row, out);
}
