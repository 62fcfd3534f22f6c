/*
 * tests/unit/test_nbd_uri.c: the parts of NBD URIs that the daemon and
 * mapperctl read themselves (a device's default name, its socket path,
 * the host and port an export may be reached at).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "nbd_uri.h"

START_TEST(the_socket_path_is_found_in_the_query_and_decoded)
{
	char sock[64];

	ck_assert(nbd_uri_socket("nbd+unix:///disk?socket=/run/a.sock", sock, sizeof(sock)));
	ck_assert_str_eq(sock, "/run/a.sock");
	ck_assert(nbd_uri_socket("nbd+unix:///?tls=off&socket=%2Frun%2Fb&x=1", sock, sizeof(sock)));
	ck_assert_str_eq(sock, "/run/b");
	ck_assert(nbd_uri_socket("nbd+unix:///?socket=rel/c#frag", sock, sizeof(sock)));
	ck_assert_str_eq(sock, "rel/c");
	/* not in the query: in the export name, or in the fragment */
	ck_assert(!nbd_uri_socket("nbd+unix:///socket=x", sock, sizeof(sock)));
	ck_assert(!nbd_uri_socket("nbd+unix:///d#?socket=/x", sock, sizeof(sock)));
	ck_assert(!nbd_uri_socket("nbd+unix:///d?socket=", sock, sizeof(sock)));
	ck_assert(!nbd_uri_socket("nbd+unix:///d?socket=/a/very/long/path", sock, 8));
	ck_assert_str_eq(nbd_uri_socket_at("nbd+unix:///?a=1&socket=%2Fs"), "%2Fs");
}
END_TEST

START_TEST(the_export_name_is_the_path_after_the_authority)
{
	char name[16];

	ck_assert_str_eq(nbd_uri_export("nbd+unix:///disk?socket=/s", name, sizeof(name)), "disk");
	ck_assert_str_eq(nbd_uri_export("nbd://host:1234/exp#x", name, sizeof(name)), "exp");
	ck_assert_ptr_null(nbd_uri_export("nbd+unix:///?socket=/a/b", name, sizeof(name)));
	ck_assert_ptr_null(nbd_uri_export("nbd+unix://?socket=/a/b", name, sizeof(name)));
	ck_assert_ptr_null(nbd_uri_export("nbd://host", name, sizeof(name)));
	ck_assert_ptr_null(nbd_uri_export("nbd://host/a-name-that-is-too-long", name, sizeof(name)));
}
END_TEST

START_TEST(host_and_port_with_the_default_port_and_ipv6)
{
	char host[64], port[8];

	ck_assert(nbd_uri_host("nbd://192.0.2.1:10810/e", host, sizeof(host), port, sizeof(port)));
	ck_assert_str_eq(host, "192.0.2.1");
	ck_assert_str_eq(port, "10810");
	ck_assert(nbd_uri_host("nbd://[::1]/e", host, sizeof(host), port, sizeof(port)));
	ck_assert_str_eq(host, "::1");
	ck_assert_str_eq(port, "10809");
	ck_assert(nbd_uri_host("nbd://[fe80::2]:99", host, sizeof(host), port, sizeof(port)));
	ck_assert_str_eq(host, "fe80::2");
	ck_assert_str_eq(port, "99");
	ck_assert(nbd_uri_host("nbds://hostb@192.0.2.1:10810/?tls-psk-file=/k.psk", host,
			       sizeof(host), port, sizeof(port)));
	ck_assert_str_eq(host, "192.0.2.1");
	ck_assert_str_eq(port, "10810");
	ck_assert(nbd_uri_host("nbd://u:p@[::1]/e", host, sizeof(host), port, sizeof(port)));
	ck_assert_str_eq(host, "::1");
	ck_assert_str_eq(port, "10809");
	ck_assert(!nbd_uri_host("nbd://u@/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("nbd://[::1/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("nbd://h:99999/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("nbd://h:0/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("nbd://h:/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("nbd://h:x1/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("nbd://:10809/e", host, sizeof(host), port, sizeof(port)));
	ck_assert(nbd_uri_host("nbd://h:65535", host, sizeof(host), port, sizeof(port)));
	ck_assert(!nbd_uri_host("/dev/sdb", host, sizeof(host), port, sizeof(port)));
}
END_TEST

START_TEST(a_scheme_is_letters_digits_and_plus_minus_dot_before_colon_slashes)
{
	ck_assert(nbd_uri_has_scheme("nbd+ssh://h/x"));
	ck_assert(nbd_uri_has_scheme("NBD+UNIX:///x?socket=/s"));
	ck_assert(nbd_uri_has_scheme("http://x/y"));
	ck_assert(!nbd_uri_has_scheme("/srv/a://b"));
	ck_assert(!nbd_uri_has_scheme("1nbd://h"));
	ck_assert(!nbd_uri_has_scheme("rel/dir"));
	ck_assert(!nbd_uri_has_scheme("nbd:/h"));
}
END_TEST

START_TEST(a_parameter_is_found_decoded_and_left_out)
{
	char v[64], out[128];

	ck_assert(nbd_uri_param("nbds+unix://a@/?socket=/s&tls-psk-file=/k%20k", "tls-psk-file",
				v, sizeof(v)));
	ck_assert_str_eq(v, "/k k");
	ck_assert(!nbd_uri_param("nbds://a@h/?tls-psk-filex=/k", "tls-psk-file", v, sizeof(v)));
	ck_assert(nbd_uri_without("nbds+unix://a@/?socket=/s&tls-psk-file=/k", "tls-psk-file",
				  out, sizeof(out)));
	ck_assert_str_eq(out, "nbds+unix://a@/?socket=/s");
	ck_assert(nbd_uri_without("nbds://a@h/?tls-psk-file=/k&x=1", "tls-psk-file",
				  out, sizeof(out)));
	ck_assert_str_eq(out, "nbds://a@h/?x=1");
	ck_assert(nbd_uri_without("nbds://a@h/e?tls-psk-file=/k#f", "tls-psk-file",
				  out, sizeof(out)));
	ck_assert_str_eq(out, "nbds://a@h/e#f");
	ck_assert(nbd_uri_without("nbd://h/e", "tls-psk-file", out, sizeof(out)));
	ck_assert_str_eq(out, "nbd://h/e");
	ck_assert(!nbd_uri_without("nbd://h/e", "tls-psk-file", out, 4));
	ck_assert(nbd_uri_is_tls("nbds://h/e") && nbd_uri_is_tls("nbds+unix:///?socket=/s"));
	ck_assert(!nbd_uri_is_tls("nbd://h/e") && !nbd_uri_is_tls("nbd+unix:///?socket=/s"));
}
END_TEST

START_TEST(only_unix_schemes_are_unix)
{
	ck_assert(nbd_uri_is_unix("nbd+unix:///d?socket=/s"));
	ck_assert(nbd_uri_is_unix("nbds+unix:///d?socket=/s"));
	ck_assert(!nbd_uri_is_unix("nbd://h/d?socket=/s"));
	ck_assert(!nbd_uri_is_unix("unix:///s"));
	ck_assert(!nbd_uri_is_unix("/srv/nbd+unix://x"));
}
END_TEST

static Suite *nbd_uri_suite(void)
{
	Suite *suite = suite_create("nbd_uri");
	TCase *tc = tcase_create("parts of a URI");

	tcase_add_test(tc, the_socket_path_is_found_in_the_query_and_decoded);
	tcase_add_test(tc, the_export_name_is_the_path_after_the_authority);
	tcase_add_test(tc, host_and_port_with_the_default_port_and_ipv6);
	tcase_add_test(tc, only_unix_schemes_are_unix);
	tcase_add_test(tc, a_parameter_is_found_decoded_and_left_out);
	tcase_add_test(tc, a_scheme_is_letters_digits_and_plus_minus_dot_before_colon_slashes);
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	SRunner *runner = srunner_create(nbd_uri_suite());
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
