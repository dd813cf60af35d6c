/* unicode.c — UTF-8, character classes and the GPT-2 byte mapping (see unicode.h). */
#include "unicode.h"

#include "unicode_tables.h"

size_t unicode_utf8_decode(const char *s, size_t len, uint32_t *cp) {
    const unsigned char *u = (const unsigned char *)s;
    unsigned c = u[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t n;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) {
        n = 2, v = c & 0x1F, min = 0x80;
    } else if (c >= 0xE0 && c <= 0xEF) {
        n = 3, v = c & 0x0F, min = 0x800;
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = UNICODE_INVALID_BASE + c;
        return 1;
    }
    if (len < n) {
        *cp = UNICODE_INVALID_BASE + c;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) {
            *cp = UNICODE_INVALID_BASE + c;
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3F);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) {
        *cp = UNICODE_INVALID_BASE + c;
        return 1;
    }
    *cp = v;
    return n;
}

size_t unicode_utf8_encode(uint32_t cp, char out[4]) {
    if (cp >= UNICODE_INVALID_BASE) {
        out[0] = (char)(cp - UNICODE_INVALID_BASE);
        return 1;
    }
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (cp < r[mid][0])
            hi = mid;
        else if (cp > r[mid][1])
            lo = mid + 1;
        else
            return 1;
    }
    return 0;
}

#define N_RANGES(a) (sizeof(a) / sizeof((a)[0]))

unsigned unicode_cpt_flags(uint32_t cp) {
    if (cp < 0x80) {
        if ((cp >= 'a' && cp <= 'z') || (cp >= 'A' && cp <= 'Z')) return UNICODE_LETTER;
        if (cp >= '0' && cp <= '9') return UNICODE_NUMBER;
        if (cp == ' ' || (cp >= 0x09 && cp <= 0x0D)) return UNICODE_SPACE;
        return 0;
    }
    if (cp >= UNICODE_INVALID_BASE) return 0;
    unsigned f = 0;
    if (in_ranges(unicode_letter_ranges, N_RANGES(unicode_letter_ranges), cp))
        f |= UNICODE_LETTER;
    else if (in_ranges(unicode_number_ranges, N_RANGES(unicode_number_ranges), cp))
        f |= UNICODE_NUMBER;
    else if (in_ranges(unicode_space_ranges, N_RANGES(unicode_space_ranges), cp))
        f |= UNICODE_SPACE;
    return f;
}

/* Printable Latin-1 bytes ('!'..'~', U+00A1..U+00AC, U+00AE..U+00FF) map to themselves. */
static int byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
}

uint32_t unicode_byte_to_cpt(uint8_t b) {
    if (byte_is_printable(b)) return b;
    /* The n-th non-printable byte (in byte order) maps to U+0100 + n. */
    unsigned n = 0;
    for (unsigned x = 0; x < b; x++) n += !byte_is_printable(x);
    return 0x100 + n;
}

int unicode_cpt_to_byte(uint32_t cp) {
    if (cp < 0x100) return byte_is_printable(cp) ? (int)cp : -1;
    if (cp >= 0x100 + 68) return -1;
    unsigned n = cp - 0x100;
    for (unsigned x = 0; x < 256; x++) {
        if (!byte_is_printable(x)) {
            if (n == 0) return (int)x;
            n--;
        }
    }
    return -1;
}

const char *unicode_tables_version(void) {
    return UNICODE_TABLES_VERSION;
}
