/*
 * Opaque list cursors (issue 36). A list pages by the store's row seq,
 * which counts the rows of every tenant: handed out as is, tenant B's
 * next cursor would tell how many rows the others made. So the seq is
 * sealed: encrypted with a keystream drawn from a fresh random nonce,
 * the tenant and the list's path, and authenticated with a MAC over the
 * nonce, the seq, the tenant and the path. Two pages' cursors share
 * nothing a client can read; a cursor of another tenant or list, or one
 * changed in any bit, fails to open (400). The key is the store's (store_cursor_key): the same on
 * every node, so any node continues a list another began.
 *
 * The pseudo-random function is SipHash-2-4 (Aumasson and Bernstein),
 * made for short inputs under a 128-bit key: half of the key draws the
 * keystream, the other half the MAC.
 */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "http_internal.h"

/* nonce, sealed seq, tag: 8 bytes each */
#define CURSOR_BYTES 24

struct sip {
	uint64_t v[4];
	uint64_t tail; /* the bytes of the word not yet complete */
	size_t len;
};

static uint64_t rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static void sip_round(uint64_t *v)
{
	v[0] += v[1];
	v[1] = rotl(v[1], 13) ^ v[0];
	v[0] = rotl(v[0], 32);
	v[2] += v[3];
	v[3] = rotl(v[3], 16) ^ v[2];
	v[0] += v[3];
	v[3] = rotl(v[3], 21) ^ v[0];
	v[2] += v[1];
	v[1] = rotl(v[1], 17) ^ v[2];
	v[2] = rotl(v[2], 32);
}

static uint64_t load64(const unsigned char *p)
{
	uint64_t x = 0;

	for (int i = 7; i >= 0; i--)
		x = x << 8 | p[i];
	return x;
}

static void store64(unsigned char *p, uint64_t x)
{
	for (int i = 0; i < 8; i++, x >>= 8)
		p[i] = (unsigned char)x;
}

static void sip_init(struct sip *s, const unsigned char *key)
{
	uint64_t k0 = load64(key), k1 = load64(key + 8);

	s->v[0] = k0 ^ 0x736f6d6570736575ULL;
	s->v[1] = k1 ^ 0x646f72616e646f6dULL;
	s->v[2] = k0 ^ 0x6c7967656e657261ULL;
	s->v[3] = k1 ^ 0x7465646279746573ULL;
	s->tail = 0;
	s->len = 0;
}

static void sip_word(struct sip *s, uint64_t m)
{
	s->v[3] ^= m;
	sip_round(s->v);
	sip_round(s->v);
	s->v[0] ^= m;
}

static void sip_bytes(struct sip *s, const void *data, size_t n)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < n; i++) {
		s->tail |= (uint64_t)p[i] << (8 * (s->len % 8));
		if (++s->len % 8 == 0) {
			sip_word(s, s->tail);
			s->tail = 0;
		}
	}
}

static uint64_t sip_final(struct sip *s)
{
	sip_word(s, (uint64_t)s->len << 56 | s->tail);
	s->v[2] ^= 0xff;
	for (int i = 0; i < 4; i++)
		sip_round(s->v);
	return s->v[0] ^ s->v[1] ^ s->v[2] ^ s->v[3];
}

/* The PRF of half of the key over head[0 .. n), the tenant and the path
 * (the NUL between them keeps ("ab", "/c") apart from ("a", "b/c")). */
static uint64_t prf(const unsigned char *key, const unsigned char *head, size_t n,
		    const char *tenant, const char *path)
{
	struct sip s;

	sip_init(&s, key);
	sip_bytes(&s, head, n);
	sip_bytes(&s, tenant, strlen(tenant) + 1);
	sip_bytes(&s, path, strlen(path));
	return sip_final(&s);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

void http_cursor_seal(const unsigned char *key, const char *tenant, const char *path, int64_t seq,
		      char *out)
{
	unsigned char b[CURSOR_BYTES] = {0};
	size_t o = 0;

	/* a nonce that repeats only weakens hiding, never the MAC */
	if (getrandom(b, 8, 0) != 8)
		store64(b, (uint64_t)seq * 0x9e3779b97f4a7c15ULL);
	store64(b + 8, (uint64_t)seq);
	store64(b + 16, prf(key + 16, b, 16, tenant, path));
	store64(b + 8, (uint64_t)seq ^ prf(key, b, 8, tenant, path));
	for (size_t i = 0; i < CURSOR_BYTES; i += 3) {
		uint32_t w = (uint32_t)b[i] << 16 | (uint32_t)b[i + 1] << 8 | b[i + 2];

		for (int k = 3; k >= 0; k--)
			out[o++] = B64[(w >> (6 * k)) & 63];
	}
	out[o] = '\0';
}

/* text (HTTP_CURSOR_SIZE - 1 base64url characters) as bytes; -1 if not. */
static int decode(const char *text, unsigned char *b)
{
	const char *at;
	uint32_t w = 0;

	if (strlen(text) != HTTP_CURSOR_SIZE - 1)
		return -1;
	for (size_t i = 0; i < HTTP_CURSOR_SIZE - 1; i++) {
		if (!text[i] || !(at = strchr(B64, text[i])))
			return -1;
		w = w << 6 | (uint32_t)(at - B64);
		if (i % 4 == 3) {
			b[i / 4 * 3] = (unsigned char)(w >> 16);
			b[i / 4 * 3 + 1] = (unsigned char)(w >> 8);
			b[i / 4 * 3 + 2] = (unsigned char)w;
			w = 0;
		}
	}
	return 0;
}

int http_cursor_open(const unsigned char *key, const char *tenant, const char *path,
		     const char *text, int64_t *seq)
{
	unsigned char b[CURSOR_BYTES];
	uint64_t diff, v;

	*seq = 0;
	if (decode(text, b))
		return -1;
	v = load64(b + 8) ^ prf(key, b, 8, tenant, path);
	store64(b + 8, v);
	/* every bit compared, so the time taken does not tell how many matched */
	diff = load64(b + 16) ^ prf(key + 16, b, 16, tenant, path);
	if (diff || v > INT64_MAX)
		return -1;
	*seq = (int64_t)v;
	return 0;
}
