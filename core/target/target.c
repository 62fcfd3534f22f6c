/* core/target/target.c: the defaults of target_ops (target.h). */
#include "target.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "device.h"
#include "engine.h"
#include "rcu.h"

int target_never_defers(struct target *t, struct engine *e, uint64_t off,
			uint32_t len, const void *buf)
{
	(void)t, (void)e, (void)off, (void)len, (void)buf;
	return -EIO;
}

int target_loads_nothing(struct target *t, uint64_t off, uint32_t len, bool hold)
{
	(void)t, (void)off, (void)len, (void)hold;
	return 0;
}

void target_holds_nothing(struct target *t)
{
	(void)t;
}

int target_faults_inline(struct target *t, uint64_t off, uint32_t len,
			 struct target_wait *w)
{
	(void)t, (void)off, (void)len, (void)w;
	return -EAGAIN;
}

void target_no_end_write(struct target *t)
{
	(void)t;
}

int target_no_read_retry(struct target *t, struct engine *e, uint64_t off,
			 uint32_t len, void *buf, int err)
{
	(void)t, (void)e, (void)off, (void)len, (void)buf;
	return err;
}

int target_no_write_retry(struct target *t, struct engine *e, uint64_t off,
			  uint32_t len, const void *buf, int err)
{
	(void)t, (void)e, (void)off, (void)len, (void)buf;
	return err;
}

int target_seek_all_data(struct target *t, uint64_t off, uint64_t size,
			 int whence, uint64_t *out)
{
	(void)t;
	*out = whence == SEEK_DATA ? off : size;
	return 0;
}

uint64_t target_all_mapped(struct target *t, uint64_t size)
{
	(void)t;
	return size;
}

int target_device_discard(struct device *dev, uint64_t off, uint64_t len,
			  enum discard_mode mode)
{
	if (mode == DISCARD_UNMAP)
		return device_discard(dev, off, len);
	return device_zero(dev, off, len, mode == DISCARD_PUNCH);
}

#define FLUSH_BATCH 64

int target_sync_devices(struct target *t, struct engine *e,
			struct device *const *(*devs_of)(struct target *t, unsigned int *nr))
{
	struct device *devs[FLUSH_BATCH];
	unsigned int done = 0, nr;
	int r = 0;

	do {
		struct device *const *all;
		unsigned int total;
		int rb;

		rcu_read_begin();
		all = devs_of(t, &total);
		nr = total > done ? total - done : 0;
		if (nr > FLUSH_BATCH)
			nr = FLUSH_BATCH;
		memcpy(devs, all + done, nr * sizeof(*devs));
		rcu_read_end();
		rb = nr ? engine_sync(e, devs, nr) : 0;
		if (!r)
			r = rb;
		done += nr;
	} while (nr == FLUSH_BATCH);
	return r;
}
