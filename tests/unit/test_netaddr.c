/*
 * tests/unit/test_netaddr.c: the addresses an export listens on, as
 * mapperctl takes them, and the sockets made on them.
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netaddr.h"

static int parse(const char *text, struct sockaddr_storage *a)
{
	socklen_t len = 0;

	return netaddr_parse_tcp(text, a, &len);
}

START_TEST(ipv4_and_bracketed_ipv6_with_a_port_parse)
{
	struct sockaddr_storage a;
	struct sockaddr_in *a4 = (struct sockaddr_in *)&a;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)&a;
	char text[INET6_ADDRSTRLEN];

	ck_assert_int_eq(parse("192.0.2.10:10809", &a), 0);
	ck_assert_int_eq(a4->sin_family, AF_INET);
	ck_assert_uint_eq(ntohs(a4->sin_port), 10809);
	ck_assert_str_eq(inet_ntop(AF_INET, &a4->sin_addr, text, sizeof(text)), "192.0.2.10");
	ck_assert_int_eq(parse("[::1]:1", &a), 0);
	ck_assert_int_eq(a6->sin6_family, AF_INET6);
	ck_assert_uint_eq(ntohs(a6->sin6_port), 1);
	ck_assert_int_eq(parse("[fe80::1]:65535", &a), 0);
	ck_assert_uint_eq(ntohs(a6->sin6_port), 65535);
}
END_TEST

START_TEST(names_missing_ports_and_bad_ports_are_invalid)
{
	static const char *const bad[] = {
		"localhost:10809", "127.0.0.1", "127.0.0.1:", ":10809", "127.0.0.1:0",
		"127.0.0.1:65536", "127.0.0.1:-1", "127.0.0.1:12a", "127.0.0.1:+80",
		"::1:10809", "[::1]", "[::1:10809", "[]:10809", "[127.0.0.1]:80",
		"256.0.0.1:80", "", "[::1]:0010809",
	};
	struct sockaddr_storage a;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(parse(bad[i], &a) == -EINVAL, "'%s' parsed", bad[i]);
}
END_TEST

START_TEST(a_tcp_address_in_use_is_eaddrinuse)
{
	char text[32];
	struct sockaddr_in got;
	socklen_t len = sizeof(got);
	int fd, again;

	/* a port the kernel picks, taken by a listener of the test's own */
	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	got = (struct sockaddr_in){ .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&got, sizeof(got)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&got, &len), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	snprintf(text, sizeof(text), "127.0.0.1:%u", ntohs(got.sin_port));
	ck_assert_int_eq(netaddr_listen_tcp(text, &again), -EADDRINUSE);
	close(fd);
}
END_TEST

START_TEST(a_unix_socket_is_made_with_the_mode_asked_and_never_over_a_file)
{
	char dir[] = "/tmp/test_netaddr.XXXXXX", path[64];
	struct stat st;
	mode_t old = umask(0);
	int fd, again;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	ck_assert_int_eq(netaddr_listen_unix(path, 0600, &fd), 0);
	umask(old);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	ck_assert_int_eq(netaddr_listen_unix(path, 0600, &again), -EADDRINUSE);
	close(fd);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(a_unix_path_too_long_for_a_socket_is_enametoolong)
{
	char path[NETADDR_UNIX_PATH_MAX + 2];
	int fd;

	memset(path, 'x', sizeof(path) - 1);
	path[0] = '/';
	path[sizeof(path) - 1] = '\0';
	ck_assert_int_eq(netaddr_listen_unix(path, 0600, &fd), -ENAMETOOLONG);
}
END_TEST

START_TEST(only_a_socket_nobody_listens_on_is_stale)
{
	char dir[] = "/tmp/test_netaddr.XXXXXX", path[64], file[64];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.sock", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	ck_assert_int_eq(netaddr_listen_unix(path, 0600, &fd), 0);
	ck_assert(!netaddr_unix_is_stale(path));		/* listening */
	close(fd);						/* gone, its file left */
	ck_assert(netaddr_unix_is_stale(path));
	close(open(file, O_CREAT | O_WRONLY, 0600));
	ck_assert(!netaddr_unix_is_stale(file));		/* not a socket */
	ck_assert(!netaddr_unix_is_stale("/nonexistent/s.sock"));
	unlink(path);
	unlink(file);
	rmdir(dir);
}
END_TEST

static Suite *netaddr_suite(void)
{
	Suite *suite = suite_create("netaddr");
	TCase *tc = tcase_create("addresses and sockets");

	tcase_add_test(tc, ipv4_and_bracketed_ipv6_with_a_port_parse);
	tcase_add_test(tc, names_missing_ports_and_bad_ports_are_invalid);
	tcase_add_test(tc, a_tcp_address_in_use_is_eaddrinuse);
	tcase_add_test(tc, a_unix_socket_is_made_with_the_mode_asked_and_never_over_a_file);
	tcase_add_test(tc, a_unix_path_too_long_for_a_socket_is_enametoolong);
	tcase_add_test(tc, only_a_socket_nobody_listens_on_is_stale);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(netaddr_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
