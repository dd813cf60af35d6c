/* jsonio.c — JSON files through json-c, written atomically (see jsonio.h). */
#include "jsonio.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csvio.h"
#include "infile.h"

struct json_object *json_number(double x) {
    if (!isfinite(x)) return NULL; /* json-c's JSON null is the NULL object */
    char buf[40];
    snprintf(buf, sizeof buf, "%.10g", x);
    return json_object_new_double_s(x, buf);
}

int json_write(const char *path, struct json_object *o, char *err, size_t errlen) {
    const char *s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
                                                          JSON_C_TO_STRING_NOSLASHESCAPE);
    if (!s) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    size_t n = strlen(s);
    char *text = malloc(n + 2);
    if (!text) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    memcpy(text, s, n);
    text[n] = '\n';
    text[n + 1] = '\0';
    int rc = csv_write_text(path, text, err, errlen);
    free(text);
    return rc;
}

int json_write_put(const char *path, struct json_object *o, int built, char *err, size_t errlen) {
    int rc = -1;
    if (!built || !o)
        snprintf(err, errlen, "%s: out of memory", path);
    else
        rc = json_write(path, o, err, errlen);
    json_object_put(o);
    return rc;
}

/* The whole file into a malloc'd NUL-terminated buffer (*n bytes). 0 or -1. */
static char *read_whole(const char *path, size_t max_bytes, size_t *n, char *err, size_t errlen) {
    FILE *f = infile_fopen(path, err, errlen); /* a FIFO or a directory is refused (infile.h) */
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len + 1 >= cap) {
            char *nb = cap > max_bytes ? NULL : realloc(buf, cap * 2);
            if (!nb) break;
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + len, 1, cap - 1 - len, f);
        len += k;
        if (k == 0) {
            fclose(f);
            if (len > max_bytes) break;
            buf[len] = '\0';
            *n = len;
            return buf;
        }
    }
    fclose(f);
    free(buf);
    snprintf(err, errlen, "%s: larger than %zu bytes or out of memory", path, max_bytes);
    return NULL;
}

int json_read(const char *path, size_t max_bytes, struct json_object **out, char *err, size_t errlen) {
    *out = NULL;
    size_t n = 0;
    char *buf = read_whole(path, max_bytes ? max_bytes : (size_t)16 << 20, &n, err, errlen);
    if (!buf) return -1;
    json_tokener *tok = json_tokener_new();
    if (!tok) {
        free(buf);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    struct json_object *o = json_tokener_parse_ex(tok, buf, (int)n);
    enum json_tokener_error e = json_tokener_get_error(tok);
    size_t at = json_tokener_get_parse_end(tok);
    if (o && e == json_tokener_success) { /* only blanks may follow the value */
        while (at < n && strchr(" \t\r\n", buf[at])) at++;
        if (at < n) e = json_tokener_error_parse_unexpected;
    } else if (e == json_tokener_continue) {
        e = json_tokener_error_parse_eof;
    }
    if (e != json_tokener_success) {
        int line = 1;
        for (size_t i = 0; i < at && i < n; i++) line += buf[i] == '\n';
        snprintf(err, errlen, "%s: line %d: %s", path, line, json_tokener_error_desc(e));
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    free(buf);
    *out = o;
    return o ? 0 : -1;
}

int json_get_int(const char *path, struct json_object *o, const char *key, long min, long max, int *out,
                 char *err, size_t errlen) {
    struct json_object *v = NULL;
    if (!json_object_is_type(o, json_type_object)) {
        snprintf(err, errlen, "%s: the top level is not a JSON object", path);
        return -1;
    }
    if (!json_object_object_get_ex(o, key, &v)) {
        snprintf(err, errlen, "%s: field '%s': missing", path, key);
        return -1;
    }
    errno = 0;
    long long x = json_object_get_int64(v);
    int is_int = json_object_is_type(v, json_type_int) && errno == 0;
    if (!is_int && json_object_is_type(v, json_type_double)) { /* 64.0 is an integer too */
        double d = json_object_get_double(v);
        is_int = d == floor(d) && fabs(d) < 1e15;
        x = (long long)d;
    }
    if (!is_int || x < min || x > max) {
        snprintf(err, errlen, "%s: field '%s': bad value '%s' (need an integer in [%ld, %ld])", path, key,
                 json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), min, max);
        return -1;
    }
    *out = (int)x;
    return 0;
}
