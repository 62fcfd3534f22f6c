/*
 * core/target/switch_msg.h: dm-switch's set_region_mappings syntax, read and
 * written.
 *
 * Arguments, every number hexadecimal without "0x", as dm-switch takes
 * them:
 *   INDEX:PATH   region INDEX goes to path PATH
 *   :PATH        the region after the last one named goes to PATH
 *   Rn,m         repeat the last n regions m more times: regions i+1 ..
 *                i+m, where i is the last one named, copy the region n
 *                before each (so R3,6 after 0:0 :1 :2 makes 012012012)
 * "The last region named" starts at 0 and moves with every argument,
 * exactly as in dm-switch (so a leading ":1" sets region 1).
 *
 * Unlike dm-switch, a message is all or nothing.  The caller applies it
 * to a private copy of the table (switch_table_clone), which serves as
 * the list of changes: R reads what earlier arguments of the same message
 * wrote, as it must.  Only when every argument parsed does the caller
 * publish the copy's words.  The first bad argument stops the parse and is
 * named in the error.
 */
#ifndef MAPPERFS_SWITCH_MSG_H
#define MAPPERFS_SWITCH_MSG_H

#include <stddef.h>
#include <stdio.h>

struct switch_table;

/*
 * Applies @argc arguments to @t, which no reader may see.  Returns 0, or
 * -EINVAL with a one-line reason in @why, naming the argument ("argument
 * 3 'R5,2': repeats 5 regions but only 3 come before it"); @t is then
 * half changed and must be thrown away.  Cost: O(regions written); a
 * million arguments take milliseconds.  Never blocks.
 */
int switch_msg_apply(struct switch_table *t, size_t argc, char *const *argv,
		     char *why, size_t why_len);

/*
 * Writes @t as arguments that rebuild it from any table of its shape,
 * one per line: "0:p" first, then ":p" or, where the table repeats itself
 * with a period of at most SWITCH_MSG_PERIOD_MAX regions, "Rn,m".
 * Cost: O(regions * SWITCH_MSG_PERIOD_MAX) at worst.  0 or -EIO.
 */
#define SWITCH_MSG_PERIOD_MAX	64
int switch_msg_dump(const struct switch_table *t, FILE *f);

/*
 * Splits @text in place at white space into arguments for
 * switch_msg_apply().  *argv is malloc'ed and points into @text.
 * 0 or -ENOMEM.
 */
int switch_msg_split(char *text, char ***argv, size_t *argc);

#endif
