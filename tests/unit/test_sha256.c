/* test_sha256.c — SHA-256 against the FIPS 180-4 examples and against
 * coreutils' sha256sum for every length around the padding boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/xalloc.h"

static void hex(const uint8_t d[SHA256_LEN], char out[2 * SHA256_LEN + 1])
{
	for (int i = 0; i < SHA256_LEN; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void expect(const void *p, size_t n, const char *want)
{
	uint8_t d[SHA256_LEN];
	char got[2 * SHA256_LEN + 1];
	sha256(p, n, d);
	hex(d, got);
	assert_string_equal(got, want);
}

static void test_sha256_matches_the_published_vectors(void **state)
{
	(void)state;
	expect("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	expect("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	expect(two, strlen(two), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	size_t n = 1000000;
	char *a = xmalloc(n);
	memset(a, 'a', n);
	expect(a, n, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(a);
}

/* Every length from 0 to 200 bytes (one, two and three blocks, each
 * padding case) against sha256sum, when it is installed. */
static void test_sha256_matches_sha256sum_for_every_length_to_200(void **state)
{
	(void)state;
	if (system("command -v sha256sum >/dev/null 2>&1") != 0)
		skip();
	char path[] = "/tmp/cairn-sha256-XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	uint8_t buf[200];
	for (size_t i = 0; i < sizeof buf; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof buf; n++) {
		assert_int_equal(ftruncate(fd, 0), 0);
		assert_int_equal(pwrite(fd, buf, n, 0), (ssize_t)n);
		char cmd[96], want[80] = "";
		snprintf(cmd, sizeof cmd, "sha256sum %s", path);
		FILE *p = popen(cmd, "r");
		assert_non_null(p);
		assert_non_null(fgets(want, sizeof want, p));
		pclose(p);
		want[2 * SHA256_LEN] = '\0';
		expect(buf, n, want);
	}
	close(fd);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_matches_the_published_vectors),
		cmocka_unit_test(test_sha256_matches_sha256sum_for_every_length_to_200),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
