/*
 * core/rcu.h: the one liburcu flavour the project uses (memb: readers pay
 * two compiler barriers, writers a membarrier).  Include this, never
 * <urcu.h> directly, so every object agrees on the flavour.
 */
#ifndef MAPPERFS_RCU_H
#define MAPPERFS_RCU_H

#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

#endif
