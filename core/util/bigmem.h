/*
 * core/util/bigmem.h: large anonymous mappings on huge pages where the
 * kernel offers them.
 *
 * A thin pool's start fills arrays of tens of MiB at 1e8 blocks (its space
 * map, the leaves' headers, the load index), and the first touch of each
 * 4 KiB page is a fault.  In a virtual machine a fault costs ~10 us: 25
 * MiB took 66 ms of faults here, 4-29 ms with transparent huge pages (one
 * fault per 2 MiB) and 32 ms with MADV_POPULATE_WRITE.  So these mappings
 * are aligned to 2 MiB and advised MADV_HUGEPAGE; the advice is a hint
 * (THP off, or not at "madvise": ordinary pages, nothing fails).
 *
 * Not for memory given back a page at a time: MADV_DONTNEED splits a huge
 * page, and khugepaged may fill the range again, so the leaves' entries,
 * which a memory budget trims, stay on 4 KiB pages (slab.h).
 */
#ifndef MAPPERFS_BIGMEM_H
#define MAPPERFS_BIGMEM_H

#include <stddef.h>

#define BIGMEM_ALIGN	(2u << 20)	/* a huge page on x86-64 and arm64 (4 KiB base) */

/*
 * @bytes of zeros, BIGMEM_ALIGN-aligned, its pages allocated when first
 * touched (MAP_NORESERVE: a reservation costs nothing until used); NULL
 * when the address space is short.  One mmap and a madvise; any thread.
 */
void *bigmem_map(size_t bytes);

/* Unmaps what bigmem_map(@bytes) returned (NULL: nothing). */
void bigmem_unmap(void *p, size_t bytes);

#endif
