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

/* Builds and publishes every volume of the store. */
int daemon_load_volumes(struct daemon *d);
/* Makes served volume @id match the store.  Control thread. */
int daemon_volume_changed(struct daemon *d, int64_t id);
/* Recounts space_total and space_free from the store.  Control thread. */
void daemon_update_space(struct daemon *d);

#endif
