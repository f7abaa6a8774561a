/* sha256.c — SHA-256 through OpenSSL's libcrypto (already present beside
 * libcurl), so no digest code of cairn's own needs reviewing. */
#include "base/sha256.h"

#include <openssl/evp.h>
#include <stdlib.h>

void sha256(const void *p, size_t n, uint8_t out[SHA256_LEN])
{
	unsigned int len = 0;
	/* EVP_Digest fails only when the library cannot allocate or lacks the
	 * algorithm: as with any allocation failure, abort. */
	if (!EVP_Digest(p, n, out, &len, EVP_sha256(), NULL) || len != SHA256_LEN)
		abort();
}

/* The EVP context is the whole state; the wrapper only names its type. */
struct sha256_ctx *sha256_new(void)
{
	EVP_MD_CTX *c = EVP_MD_CTX_new();
	if (!c || !EVP_DigestInit_ex(c, EVP_sha256(), NULL))
		abort();
	return (struct sha256_ctx *)c;
}

void sha256_update(struct sha256_ctx *c, const void *p, size_t n)
{
	if (!EVP_DigestUpdate((EVP_MD_CTX *)c, p, n))
		abort();
}

void sha256_final(struct sha256_ctx *c, uint8_t out[SHA256_LEN])
{
	unsigned int len = 0;
	if (!EVP_DigestFinal_ex((EVP_MD_CTX *)c, out, &len) || len != SHA256_LEN)
		abort();
	EVP_MD_CTX_free((EVP_MD_CTX *)c);
}

void sha256_free(struct sha256_ctx *c)
{
	EVP_MD_CTX_free((EVP_MD_CTX *)c);
}

void sha256_hex(const uint8_t d[SHA256_LEN], char out[SHA256_HEX_LEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < SHA256_LEN; i++) {
		out[2 * i] = hex[d[i] >> 4];
		out[2 * i + 1] = hex[d[i] & 15];
	}
	out[SHA256_HEX_LEN] = '\0';
}
