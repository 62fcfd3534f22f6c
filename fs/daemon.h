/*
 * fs/daemon.h: the daemon's state, shared by the FUSE handlers, the
 * control thread and main().
 *
 * Ownership: the control thread owns the store and is the only writer of
 * everything here after start-up; FUSE handlers read the volume set under
 * RCU and the space counters with atomic loads.  Devices are opened at
 * start-up or by `device add`, and closed at exit or by `device remove`
 * (which the store refuses while any volume uses the device).
 */
#ifndef MAPPERFS_DAEMON_H
#define MAPPERFS_DAEMON_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "uuid.h"
#include "volset.h"

struct device;
struct fuse_session;
struct store;
struct thin_pool;
struct thin_port;

#define DAEMON_POOLS_MAX	64	/* thin pools served at once */

/*
 * A thin pool the daemon runs.  The slot's pointer is published with RCU
 * (statfs reads it); everything else is the control thread's.
 */
struct daemon_pool {
	int64_t id;			/* the pool's volume id; 0: slot free */
	struct thin_pool *_Atomic pool;
	struct thin_port *port;		/* its own store connection */
};

struct daemon {
	char *pool_dir;
	char *mountpoint;
	struct uuid pool_uuid;
	struct store *store;		/* control thread only */
	struct fuse_session *se;
	struct volset vols;
	struct device **devs;		/* open raw devices */
	size_t nr_devs;
	_Atomic uint64_t space_total;	/* bytes of all data areas */
	_Atomic uint64_t space_free;	/* bytes no extent uses */
	uid_t uid;
	gid_t gid;
	struct daemon_pool pools[DAEMON_POOLS_MAX];
};

/* The open device with pool id @id, or NULL. */
struct device *daemon_device(struct daemon *d, int64_t id);

/*
 * Opens every registered raw device and checks its label and size.
 * Refuses (-EINVAL, one line logged naming the device) a device that is
 * missing, smaller than recorded or labelled for something else.
 */
int daemon_open_devices(struct daemon *d);
/* Opens (or closes, if it left the store) device @id.  Control thread. */
int daemon_device_changed(struct daemon *d, int64_t id);
void daemon_close_devices(struct daemon *d);

/*
 * Builds and publishes every volume of the store, thin pools first; then
 * starts the pools (deriving their block counts).
 */
int daemon_load_volumes(struct daemon *d);
/* Commits and stops every thin pool: before the volumes are destroyed. */
void daemon_stop_pools(struct daemon *d);
/* Frees the pools: after the volumes were destroyed. */
void daemon_close_pools(struct daemon *d);
/* The running thin pool with volume id @id, or NULL.  Control thread. */
struct thin_pool *daemon_pool(struct daemon *d, int64_t id);
/*
 * Creates thin volume @id in pool @pool, empty or as a snapshot of the
 * served thin volume @origin (0: none), commits the pool and serves it.
 */
int daemon_thin_created(struct daemon *d, int64_t id, int64_t pool, int64_t origin);
/* Gives thin volume @id the content of @snap, and commits. */
int daemon_thin_rollback(struct daemon *d, int64_t id, int64_t snap);
/* Stops serving volume @id; a thin volume's map is dropped and committed. */
int daemon_volume_removing(struct daemon *d, int64_t id);
/* Makes served volume @id match the store.  Control thread. */
int daemon_volume_changed(struct daemon *d, int64_t id);
/* Recounts space_total and space_free from the store.  Control thread. */
void daemon_update_space(struct daemon *d);

#endif
