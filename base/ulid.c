/* ulid.c — ULID generation from the clock and the kernel's random pool. */
#include "base/ulid.h"
#include "base/clock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

static void fill_random(unsigned char *p, size_t n)
{
	while (n) {
		ssize_t r = getrandom(p, n, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			/* No entropy source at all: fall back to time-seeded bytes;
			 * ids stay unique enough through the millisecond prefix. */
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			unsigned seed = (unsigned)(ts.tv_nsec ^ ts.tv_sec);
			for (size_t i = 0; i < n; i++)
				p[i] = (unsigned char)rand_r(&seed);
			return;
		}
		p += r;
		n -= (size_t)r;
	}
}

void ulid_make(char out[ULID_LEN + 1], int64_t ms)
{
	static const char alphabet[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	unsigned char bin[16];
	uint64_t t = (uint64_t)ms;
	for (int i = 5; i >= 0; i--) {
		bin[i] = (unsigned char)(t & 0xff);
		t >>= 8;
	}
	fill_random(bin + 6, 10);
	/* 128 bits -> 26 base32 digits, most significant first (2 pad bits). */
	for (int i = 0; i < ULID_LEN; i++) {
		int bit = i * 5 - 2; /* position of this digit's top bit */
		unsigned v = 0;
		for (int k = 0; k < 5; k++) {
			int b = bit + k;
			v <<= 1;
			if (b >= 0)
				v |= (bin[b / 8] >> (7 - b % 8)) & 1;
		}
		out[i] = alphabet[v];
	}
	out[ULID_LEN] = '\0';
}

void ulid_new(char out[ULID_LEN + 1])
{
	ulid_make(out, clock_unix_ms());
}
