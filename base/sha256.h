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
#define SHA256_HEX_LEN 64 /* lowercase hex digits, NUL excluded */

struct sha256_ctx;

/* The digest of p[0..n) into out (caller's 32 bytes). */
void sha256(const void *p, size_t n, uint8_t out[SHA256_LEN]);
/* The same over bytes that come in pieces (a file read in chunks):
 * sha256_new, sha256_update ..., then sha256_final writes the digest and
 * frees the context (sha256_free drops one without a digest; NULL-safe). */
struct sha256_ctx *sha256_new(void);
void sha256_update(struct sha256_ctx *c, const void *p, size_t n);
void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_LEN]);
void sha256_free(struct sha256_ctx *c);
/* The digest as lowercase hex into out (caller's SHA256_HEX_LEN + 1 bytes). */
void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX_LEN + 1]);

#endif
