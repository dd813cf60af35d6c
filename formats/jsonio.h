/* jsonio.h — the JSON files of formats/ (duo.h, hf_config.h, trtllm.h, scores.h) through json-c
 * (https://github.com/json-c/json-c): json-c escapes strings and builds the document; this file
 * writes it atomically (csv_write_text: temporary file, fsync, rename) and reads a file with
 * errors that name the file, the line and the field.
 */
#ifndef BOSCH_JSONIO_H
#define BOSCH_JSONIO_H

#include <stddef.h>

#include <json-c/json.h>

/* A JSON number for x written with 10 significant digits ("%.10g"); NULL, which json-c writes as
 * JSON null, when x is not finite (JSON has no NaN) or out of memory. */
struct json_object *json_number(double x);

/* Write o (pretty-printed, two-space indent, then a newline) to path atomically. o is not freed.
 * 0, or -1 with a message naming the file. */
int json_write(const char *path, struct json_object *o, char *err, size_t errlen);

/* The end of building a document: when built is 0 (a json-c call failed) or o is NULL, -1 with
 * "PATH: out of memory"; else json_write. o is freed in both cases (json_object_put). */
int json_write_put(const char *path, struct json_object *o, int built, char *err, size_t errlen);

/* Read a whole JSON file (at most max_bytes; 0: 16 MiB) into *out (free with json_object_put).
 * 0, or -1 with e.g. "d/config.json: line 3: unexpected character" or "d/config.json: cannot open:
 * No such file or directory". */
int json_read(const char *path, size_t max_bytes, struct json_object **out, char *err, size_t errlen);

/* The integer field `key` of object o, in [min, max]. 0, or -1 with "PATH: field 'KEY': missing",
 * "... is not an object" or "PATH: field 'KEY': bad value 'V' (need an integer in [min, max])". */
int json_get_int(const char *path, struct json_object *o, const char *key, long min, long max, int *out,
                 char *err, size_t errlen);

#endif
