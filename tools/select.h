/*
 * tools/select.h: --select, the small expression language of lvs's
 * selection, over the fields of a report (report_field.h).
 *
 *   expr    := and ( "||" and )*
 *   and     := unary ( "&&" unary )*
 *   unary   := "!" unary | "(" expr ")" | "@" TAG | FIELD OP VALUE
 *   OP      := "==" | "=" | "!=" | "<" | "<=" | ">" | ">=" | "=~" | "!~"
 *   VALUE   := a word of letters, digits and _ + . - : / % or a string in
 *              '...' or "..."
 *
 * "@vm" is true for a row that carries tag vm.  A value is read by its
 * field's type: a size as mapperctl takes sizes ("1G", "1.5g", "4096"
 * bytes, as size.h), compared in bytes; a percentage with up to two
 * decimals ("12.5"); a count as a whole number; a yes/no field as 1, 0,
 * yes, no, true or false; a time as seconds since the epoch or a date
 * "2025-01-31" (UTC midnight); a string as it is, compared with strcmp, or
 * with "=~" / "!~" as an extended regular expression (regex(7)).  Only
 * string fields take "=~"; tags are tested with "@".  A row without a
 * value for the field (a linear volume's data_percent) matches no
 * comparison on it.
 *
 * The parser is recursive descent, one function per rule; the tree it
 * builds is evaluated per row, without allocation.
 */
#ifndef MAPPERFS_SELECT_H
#define MAPPERFS_SELECT_H

#include <stdbool.h>
#include <stddef.h>

#include "report_field.h"

struct select;

#define SELECT_ERROR_LEN	256

/*
 * Parses @expr against @fields[0..nr) into *out.  0, -ENOMEM, or -EINVAL
 * with one line in @why naming what is wrong ("unknown field 'sise'",
 * "invalid size '1Q' for field 'size'", "')' expected at 'x'").
 */
int select_parse(const char *expr, const struct report_field *fields, size_t nr,
		 struct select **out, char why[SELECT_ERROR_LEN]);
/* Whether @row matches.  O(size of the expression). */
bool select_match(const struct select *s, const void *row);
void select_free(struct select *s);

#endif
