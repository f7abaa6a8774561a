/* sha256.h — SHA-256 (FIPS 180-4) of a buffer in memory, by libcrypto.
 *
 * Used where cairn needs a name for bytes that no other file can claim by
 * accident: the identity of a session log is the digest of its header
 * frame (persist/scan.h). Not for secrets: no constant-time promise. */
#ifndef CAIRN_SHA256_H
#define CAIRN_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32

/* The digest of p[0..n) into out (caller's 32 bytes). */
void sha256(const void *p, size_t n, uint8_t out[SHA256_LEN]);

#endif
