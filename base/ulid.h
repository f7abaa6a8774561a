/* ulid.h — time-sortable session ids (ULID: 48-bit ms time + 80 random bits,
 * Crockford base32, 26 characters). */
#ifndef CAIRN_ULID_H
#define CAIRN_ULID_H

#include <stdint.h>

#define ULID_LEN 26

/* Write a new ULID for time `ms` into out (27 bytes with the NUL). */
void ulid_make(char out[ULID_LEN + 1], int64_t ms);
/* A new ULID for now. */
void ulid_new(char out[ULID_LEN + 1]);

#endif
