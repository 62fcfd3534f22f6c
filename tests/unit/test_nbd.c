/*
 * A raw device over NBD, against real nbdkit servers on Unix sockets (no
 * mock): the engine's requests of several segments, sync, zero, trim and
 * the label go over the link; a server that takes only whole 4 KiB blocks
 * and at most 64 KiB per request (nbdkit's blocksize-policy filter, which
 * fails anything else) gets requests at any offset and length right, as
 * read-modify-writes and pieces; without multi-conn, threads share the one
 * connection; a server that dies and comes back within the timeout loses
 * nothing; one that stays away fails requests once the timeout passed,
 * and at once after that; a server restarted empty is refused, not
 * served; a server that takes only two connections gets requests of four
 * threads on those two; one stopped gracefully (ESHUTDOWN) is let go of,
 * exits, and its successor serves the retried request.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "device.h"
#include "direct.h"
#include "engine.h"
#include "label.h"
#include "nbd_link.h"
#include "segs.h"

#define SIZE	(8u << 20)	/* bytes: each export */

static char dir[64], uri[160];

/* Starts nbdkit with @args on dir/sock; returns once it serves. */
static void server_start(const char *args)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -f %s/sock; nbdkit --unix %s/sock --pidfile %s/pid %s "
		 "</dev/null >/dev/null 2>&1", dir, dir, dir, args);
	ck_assert_int_eq(system(cmd), 0);
}

/* system(3) of a command made with printf's @fmt. */
static int system_fmt(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static void server_kill(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "pid=$(cat %s/pid) && kill -KILL $pid && "
		 "timeout 10 tail --pid=$pid -f /dev/null", dir);
	ck_assert_int_eq(system(cmd), 0);
}

static struct device *start(const char *args)
{
	struct device *dev;

	snprintf(dir, sizeof(dir), "/tmp/mapperfs-test-nbd.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(uri, sizeof(uri), "nbd+unix:///?socket=%s/sock", dir);
	server_start(args);
	ck_assert_int_eq(device_open(uri, 1, &dev), 0);
	ck_assert_ptr_nonnull(dev->nbd);
	ck_assert_uint_eq(dev->size, SIZE);
	return dev;
}

static void stop(struct device *dev)
{
	char cmd[256];

	device_close(dev);
	snprintf(cmd, sizeof(cmd), "kill $(cat %s/pid) 2>/dev/null; rm -rf %s", dir, dir);
	ck_assert_int_eq(system(cmd), 0);
}

static void fill(char *buf, size_t len, unsigned int seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)(seed * 131 + i * 7 + (i >> 9));
}

static void add_seg(struct segs *s, struct device *dev, uint64_t off, uint32_t len,
		    uint32_t buf_off)
{
	ck_assert_int_eq(segs_push(s, dev, off, len, buf_off), 0);
}

/*
 * Writes @len bytes from @off on through the engine, as @pieces segments
 * 8 KiB apart on the device, and reads them back.
 */
static void write_read(struct device *dev, struct engine *e, uint64_t off, uint32_t len,
		       unsigned int pieces, unsigned int seed)
{
	char *buf = malloc(len), *back = malloc(len);
	struct segs s;

	fill(buf, len, seed);
	segs_init(&s);
	for (unsigned int i = 0; i < pieces; i++)
		add_seg(&s, dev, off + (uint64_t)i * (len / pieces + 8192), len / pieces,
			i * (len / pieces));
	ck_assert_int_eq(engine_write(e, &s, buf), 0);
	memset(back, 0, len);
	ck_assert_int_eq(engine_read(e, &s, back), 0);
	ck_assert_mem_eq(back, buf, len);
	segs_release(&s);
	free(buf);
	free(back);
}

START_TEST(the_engine_sync_zero_trim_and_the_label_go_over_the_link)
{
	struct device *dev = start("memory size=8M");
	struct device_label l = { .size = SIZE }, got;
	struct nbd_link_stats st;
	char zeros[4096] = { 0 }, back[4096];
	struct engine e;

	ck_assert_int_eq(engine_init(&e, 32), 0);
	write_read(dev, &e, 1 << 20, 3 << 20, 6, 1);
	ck_assert_int_eq(engine_sync(&e, &dev, 1), 0);
	ck_assert_int_eq(device_sync(dev), 0);
	ck_assert_int_eq(device_zero(dev, (1 << 20) + 4096, 4096, 0), 0);
	ck_assert_int_eq(direct_pread(dev, back, sizeof(back), (1 << 20) + 4096), 4096);
	ck_assert_mem_eq(back, zeros, sizeof(zeros));
	ck_assert_int_eq(device_discard(dev, 2 << 20, 1 << 20), 0);
	ck_assert_int_eq(uuid_generate(&l.pool), 0);
	ck_assert_int_eq(uuid_generate(&l.device), 0);
	ck_assert_int_eq(device_label_write(dev, &l), 0);
	ck_assert_int_eq(device_label_read(dev, &got), 0);
	ck_assert(uuid_equal(&got.device, &l.device));
	nbd_link_stats(dev->nbd, &st);
	ck_assert(st.multi_conn);
	ck_assert_uint_eq(st.failed, 0);
	engine_exit(&e);
	stop(dev);
}
END_TEST

START_TEST(requests_off_the_servers_block_size_are_read_modify_written_and_split)
{
	struct device *dev = start("--filter=blocksize-policy memory size=8M "
				   "blocksize-minimum=4096 blocksize-preferred=4096 "
				   "blocksize-maximum=65536 blocksize-error-policy=error");
	char buf[10000], back[10000];
	struct engine e;

	ck_assert_uint_eq(dev->dio_off_align, 4096);
	ck_assert_uint_eq(nbd_link_max_request(dev->nbd), 65536);
	ck_assert_int_eq(engine_init(&e, 32), 0);
	write_read(dev, &e, 1 << 20, 1 << 20, 1, 2);	/* 16 pieces of 64 KiB */
	write_read(dev, &e, (1 << 20) + 100, 3000, 3, 3);	/* inside units */
	fill(buf, sizeof(buf), 4);
	ck_assert_int_eq(direct_pwrite(dev, buf, sizeof(buf), (2 << 20) + 1), sizeof(buf));
	ck_assert_int_eq(direct_pread(dev, back, sizeof(back), (2 << 20) + 1), sizeof(back));
	ck_assert_mem_eq(back, buf, sizeof(buf));
	fill(buf, sizeof(buf), 5);	/* as a layout area's slot: not whole blocks */
	ck_assert_int_eq(device_write_at(dev, buf, sizeof(buf), 4096 + 17), 0);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(device_read_at(dev, back, sizeof(back), 4096 + 17), 0);
	ck_assert_mem_eq(back, buf, sizeof(buf));
	engine_exit(&e);
	stop(dev);
}
END_TEST

struct worker {
	struct device *dev;
	unsigned int n;
};

static void *hammer(void *arg)
{
	struct worker *w = arg;
	struct engine e;

	ck_assert_int_eq(engine_init(&e, 8), 0);
	for (unsigned int round = 0; round < 20; round++)
		write_read(w->dev, &e, (1 << 20) + (uint64_t)w->n * (1 << 20), 256 << 10, 4,
			   w->n * 100 + round);
	engine_exit(&e);
	return NULL;
}

/* hammer() from four threads at once, each on its own part of @dev. */
static void hammer_from_four_threads(struct device *dev)
{
	struct worker w[4];
	pthread_t t[4];

	for (unsigned int i = 0; i < 4; i++) {
		w[i] = (struct worker){ dev, i };
		ck_assert_int_eq(pthread_create(&t[i], NULL, hammer, &w[i]), 0);
	}
	for (unsigned int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
}

START_TEST(without_multi_conn_threads_share_one_connection)
{
	struct device *dev = start("--filter=multi-conn memory size=8M multi-conn-mode=disable");
	struct nbd_link_stats st;

	hammer_from_four_threads(dev);
	nbd_link_stats(dev->nbd, &st);
	ck_assert(!st.multi_conn);
	ck_assert_uint_eq(st.conns, 1);
	stop(dev);
}
END_TEST

START_TEST(a_server_back_within_the_timeout_loses_nothing)
{
	char disk[64], args[128];
	struct device *dev;
	struct nbd_link_stats st;
	struct engine e;
	char buf[65536], back[65536];
	struct segs s;

	snprintf(disk, sizeof(disk), "/tmp/mapperfs-test-nbd-disk.%d", (int)getpid());
	snprintf(args, sizeof(args), "truncate -s 8M %s", disk);
	ck_assert_int_eq(system(args), 0);
	snprintf(args, sizeof(args), "file %s", disk);
	dev = start(args);
	ck_assert_int_eq(engine_init(&e, 8), 0);
	fill(buf, sizeof(buf), 5);
	segs_init(&s);
	add_seg(&s, dev, 1 << 20, sizeof(buf), 0);
	ck_assert_int_eq(engine_write(&e, &s, buf), 0);
	server_kill();
	server_start(args);
	ck_assert_int_eq(engine_read(&e, &s, back), 0);
	ck_assert_mem_eq(back, buf, sizeof(buf));
	nbd_link_stats(dev->nbd, &st);
	ck_assert_uint_eq(st.reconnects, 1);
	ck_assert_uint_ge(st.retried, 1);
	ck_assert(!st.reconnecting);
	segs_release(&s);
	engine_exit(&e);
	stop(dev);
	unlink(disk);
}
END_TEST

START_TEST(a_server_gone_fails_requests_once_the_timeout_passed)
{
	struct device *dev;
	struct nbd_link_stats st;
	struct engine e;
	struct timespec t0, t1;
	char buf[4096];
	struct segs s;

	nbd_link_set_timeout(500);
	dev = start("memory size=8M");
	nbd_link_set_timeout(NBD_LINK_TIMEOUT_MS);
	ck_assert_int_eq(engine_init(&e, 8), 0);
	segs_init(&s);
	add_seg(&s, dev, 1 << 20, sizeof(buf), 0);
	server_kill();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ck_assert_int_eq(engine_read(&e, &s, buf), -EIO);
	ck_assert_int_eq(device_sync(dev), -EIO);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ck_assert_int_lt(t1.tv_sec - t0.tv_sec, 10);
	nbd_link_stats(dev->nbd, &st);
	ck_assert(st.reconnecting);
	ck_assert_uint_ge(st.failed, 2);
	segs_release(&s);
	engine_exit(&e);
	stop(dev);
}
END_TEST

START_TEST(a_server_restarted_empty_is_refused_not_served)
{
	struct device_label l = { .size = SIZE };
	struct nbd_link_stats st;
	struct engine e;
	char buf[4096];
	struct segs s;
	struct device *dev;

	nbd_link_set_timeout(1000);
	dev = start("memory size=8M");
	nbd_link_set_timeout(NBD_LINK_TIMEOUT_MS);
	ck_assert_int_eq(uuid_generate(&l.pool), 0);
	ck_assert_int_eq(uuid_generate(&l.device), 0);
	ck_assert_int_eq(device_label_write(dev, &l), 0);
	ck_assert_int_eq(engine_init(&e, 8), 0);
	segs_init(&s);
	add_seg(&s, dev, 1 << 20, sizeof(buf), 0);
	fill(buf, sizeof(buf), 6);
	ck_assert_int_eq(engine_write(&e, &s, buf), 0);
	server_kill();
	server_start("memory size=8M");		/* the same address, nothing on it */
	ck_assert_int_eq(engine_read(&e, &s, buf), -EIO);
	nbd_link_stats(dev->nbd, &st);
	ck_assert(st.reconnecting);
	ck_assert_msg(strstr(st.reason, "another disk"), "reason: %s", st.reason);
	ck_assert_uint_eq(st.reconnects, 0);
	segs_release(&s);
	engine_exit(&e);
	stop(dev);
}
END_TEST

START_TEST(a_server_taking_two_connections_serves_four_threads)
{
	struct device *dev = start("--filter=limit memory size=8M limit=2");
	struct nbd_link_stats st;

	hammer_from_four_threads(dev);
	nbd_link_stats(dev->nbd, &st);
	ck_assert(st.multi_conn);
	ck_assert_uint_le(st.conns, 2);
	ck_assert_uint_eq(st.failed, 0);
	stop(dev);
}
END_TEST

START_TEST(a_server_stopped_gracefully_is_let_go_and_its_successor_serves)
{
	char disk[64], args[128];
	struct nbd_link_stats st;
	struct device *dev;
	struct engine e;
	char buf[65536], back[65536];
	struct segs s;

	snprintf(disk, sizeof(disk), "/tmp/mapperfs-test-nbd-disk.%d", (int)getpid());
	snprintf(args, sizeof(args), "truncate -s 8M %s", disk);
	ck_assert_int_eq(system(args), 0);
	snprintf(args, sizeof(args), "file %s", disk);
	nbd_link_set_timeout(1000);
	dev = start(args);
	nbd_link_set_timeout(NBD_LINK_TIMEOUT_MS);
	ck_assert_int_eq(engine_init(&e, 8), 0);
	fill(buf, sizeof(buf), 7);
	segs_init(&s);
	add_seg(&s, dev, 1 << 20, sizeof(buf), 0);
	ck_assert_int_eq(engine_write(&e, &s, buf), 0);
	/*
	 * SIGTERM: nbdkit answers ESHUTDOWN to what comes next, and waits for
	 * its clients to go.  Reads go on (served until it takes the signal)
	 * until it has exited: the link let go of every connection.
	 */
	ck_assert_int_eq(system_fmt("kill -TERM $(cat %s/pid)", dir), 0);
	for (int i = 0; i < 100 && system_fmt("kill -0 $(cat %s/pid) 2>/dev/null", dir) == 0; i++) {
		engine_read(&e, &s, back);
		nanosleep(&(struct timespec){ 0, 50 * 1000000 }, NULL);	/* a poll: no event says it */
	}
	ck_assert_int_ne(system_fmt("kill -0 $(cat %s/pid) 2>/dev/null", dir), 0);
	server_start(args);
	memset(back, 0, sizeof(back));
	ck_assert_int_eq(engine_read(&e, &s, back), 0);
	ck_assert_mem_eq(back, buf, sizeof(buf));
	nbd_link_stats(dev->nbd, &st);
	ck_assert_uint_eq(st.reconnects, 1);
	segs_release(&s);
	engine_exit(&e);
	stop(dev);
	unlink(disk);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("nbd");
	TCase *tc = tcase_create("link");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, the_engine_sync_zero_trim_and_the_label_go_over_the_link);
	tcase_add_test(tc, requests_off_the_servers_block_size_are_read_modify_written_and_split);
	tcase_add_test(tc, without_multi_conn_threads_share_one_connection);
	tcase_add_test(tc, a_server_back_within_the_timeout_loses_nothing);
	tcase_add_test(tc, a_server_gone_fails_requests_once_the_timeout_passed);
	tcase_add_test(tc, a_server_restarted_empty_is_refused_not_served);
	tcase_add_test(tc, a_server_taking_two_connections_serves_four_threads);
	tcase_add_test(tc, a_server_stopped_gracefully_is_let_go_and_its_successor_serves);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
