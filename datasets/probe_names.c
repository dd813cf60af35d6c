/* probe_names.c — names of tasks, haystacks and splits; length parsing; depth grids. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probes.h"

/* Calibration, held-out and validation depth grids interleave and share no value (tested); all stop below
 * 0.8 so the needle stays well before the question (outside any window much smaller than the
 * context). */
const double probe_calib_depths[] = {0.00, 0.10, 0.20, 0.30, 0.40, 0.50, 0.60, 0.70};
const int probe_n_calib_depths = (int)(sizeof probe_calib_depths / sizeof probe_calib_depths[0]);
const double probe_heldout_depths[] = {0.05, 0.15, 0.25, 0.35, 0.45, 0.55, 0.65, 0.75};
const int probe_n_heldout_depths = (int)(sizeof probe_heldout_depths / sizeof probe_heldout_depths[0]);
/* The validation grid sits between the other two (0.025 past each calibration depth). */
const double probe_valid_depths[] = {0.025, 0.125, 0.225, 0.325, 0.425, 0.525, 0.625, 0.725};
const int probe_n_valid_depths = (int)(sizeof probe_valid_depths / sizeof probe_valid_depths[0]);

probe_config probe_config_default(void) {
    probe_config c;
    memset(&c, 0, sizeof c);
    c.task = PROBE_DEFAULT_TASK;
    c.haystack = PROBE_DEFAULT_HAYSTACK;
    c.length_tokens = PROBE_DEFAULT_LENGTH;
    c.n_samples = PROBE_DEFAULT_SAMPLES;
    c.n_keys = 4;
    c.use_chat = 1;
    return c;
}

const char *probe_task_name(probe_task t) {
    switch (t) {
    case PROBE_NIAH_SINGLE:
        return "niah_single";
    case PROBE_NIAH_MULTIKEY:
        return "niah_multikey";
    case PROBE_PASSKEY:
        return "passkey";
    default:
        return "unknown";
    }
}

const char *haystack_kind_name(haystack_kind h) {
    switch (h) {
    case HAYSTACK_NOISE:
        return "noise";
    case HAYSTACK_TEXT:
        return "text";
    default:
        return "unknown";
    }
}

const char *probe_split_name(probe_split s) {
    return s == PROBE_SPLIT_CALIBRATION  ? "calibration"
           : s == PROBE_SPLIT_HELDOUT    ? "heldout"
           : s == PROBE_SPLIT_VALIDATION ? "validation"
                                         : "unknown";
}

int probe_task_parse(const char *s, probe_task *out) {
    static const struct {
        const char *name;
        probe_task t;
    } names[] = {{"niah_single", PROBE_NIAH_SINGLE}, {"single", PROBE_NIAH_SINGLE},
                 {"niah", PROBE_NIAH_SINGLE},        {"niah_multikey", PROBE_NIAH_MULTIKEY},
                 {"multikey", PROBE_NIAH_MULTIKEY},  {"mk", PROBE_NIAH_MULTIKEY},
                 {"passkey", PROBE_PASSKEY}};
    if (!s) return -1;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(s, names[i].name)) {
            *out = names[i].t;
            return 0;
        }
    return -1;
}

int haystack_kind_parse(const char *s, haystack_kind *out) {
    if (!s) return -1;
    if (!strcmp(s, "noise"))
        *out = HAYSTACK_NOISE;
    else if (!strcmp(s, "text") || !strcmp(s, "prose"))
        *out = HAYSTACK_TEXT;
    else
        return -1;
    return 0;
}

int probe_parse_length(const char *s) {
    if (!s || !isdigit((unsigned char)*s)) return -1;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (v > (1L << 24)) return -1; /* also keeps v * 1024 below from overflowing */
    if (*end == 'k' || *end == 'K') {
        v *= 1024;
        end++;
    }
    if (*end || v <= 0 || v > (1L << 24)) return -1;
    return (int)v;
}

void probe_length_label(int n_tokens, char *buf, size_t cap) {
    if (n_tokens > 0 && n_tokens % 1024 == 0)
        snprintf(buf, cap, "%dk", n_tokens / 1024);
    else
        snprintf(buf, cap, "%d", n_tokens);
}
