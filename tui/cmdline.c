/* cmdline.c — parsing the explorer's `:` commands and `/` layer jumps (cmdline.h). */
#define _GNU_SOURCE
#include "cmdline.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "search_methods.h"

static const cmdline_export exports[] = {
    {"mask", EX_IO_EXPORT_MASK, PROMPT_EXPORT_MASK, 0, "the working mask (CSV)"},
    {"trace", EX_IO_EXPORT_TRACE, PROMPT_EXPORT_TRACE, 1, "the search trace, one row per evaluation (CSV)"},
    {"layers", EX_IO_EXPORT_LAYERS, PROMPT_EXPORT_LAYERS, 0, "the per-layer table (CSV)"},
    {"duo", EX_IO_EXPORT_DUO, PROMPT_EXPORT_DUO, 0, "the working mask as a DuoAttention folder"},
    {"hf", EX_IO_EXPORT_HF, PROMPT_EXPORT_HF, 0,
     "its servable projection as a Hugging Face config.json patch"},
    {"trtllm", EX_IO_EXPORT_TRTLLM, PROMPT_EXPORT_TRTLLM, 0, "its servable projection as TensorRT-LLM JSON"},
    {"scores", EX_IO_EXPORT_SCORES, PROMPT_EXPORT_SCORES, 0,
     "the static rankings' per-head scores (A computes them)"},
};
#define N_EXPORTS ((int)(sizeof exports / sizeof exports[0]))

typedef struct {
    const char *name, *alias; /* alias NULL: none */
    cmdline_kind kind;
    cmdline_help_line help;
} command;

static const command commands[] = {
    {"ratio", NULL, CMDLINE_RATIO, {"ratio R", "the next search's ratio rho, 0 to 1 (s starts it)"}},
    {"window", NULL, CMDLINE_WINDOW, {"window W", "SWA window of the working mask and the next search"}},
    {"load", NULL, CMDLINE_LOAD, {"load FILE", "load a mask CSV"}},
    {"export", NULL, CMDLINE_EXPORT, {"export NAME [FILE]", "NAME: mask trace layers duo hf trtllm scores"}},
    {"layer", NULL, CMDLINE_LAYER, {"layer N, N", "move to layer N (also / N)"}},
    {"pin", NULL, CMDLINE_PIN, {"pin [WHAT]", "compare: snapshot, full, swa, method M [R], FILE"}},
    {"all", NULL, CMDLINE_ALL, {"all full, all swa", "the working mask all full / all SWA (u undoes)"}},
    {"quit", "q", CMDLINE_QUIT, {"q, quit, q!", "quit (q!: without asking about an unsaved search)"}},
    {"help", "h", CMDLINE_HELP, {"help", "this list"}},
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

static cmdline_help_line help_lines[N_COMMANDS];

const cmdline_export *cmdline_exports(int *n) {
    *n = N_EXPORTS;
    return exports;
}

const cmdline_help_line *cmdline_help(int *n) {
    for (int i = 0; i < N_COMMANDS; i++) help_lines[i] = commands[i].help;
    *n = N_COMMANDS;
    return help_lines;
}

/* The export names as "mask, trace or layers" into buf. */
static void export_names(char *buf, size_t cap) {
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_EXPORTS && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%s",
                              i == 0               ? ""
                              : i == N_EXPORTS - 1 ? " or "
                                                   : ", ",
                              exports[i].name);
}

/* The word at *p (up to a blank) into w[cap]; *p moves past it and the blanks after it. */
static void next_word(const char **p, char *w, size_t cap) {
    size_t n = 0;
    while (**p && !isspace((unsigned char)**p)) {
        if (n + 1 < cap) w[n++] = **p;
        (*p)++;
    }
    w[n] = '\0';
    while (isspace((unsigned char)**p)) (*p)++;
}

/* A decimal integer in [lo, hi] that is all of s. */
static int parse_long(const char *s, long lo, long hi, long *v) {
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (!*s || *end || errno || x < lo || x > hi || !isdigit((unsigned char)s[0])) return -1;
    *v = x;
    return 0;
}

int cmdline_parse_layer(const char *text, int n_layer, int *layer, char *err, size_t errlen) {
    char w[64];
    const char *p = text;
    while (isspace((unsigned char)*p)) p++;
    next_word(&p, w, sizeof w);
    const char *num = (w[0] == 'L' || w[0] == 'l') ? w + 1 : w;
    long v;
    if (!w[0] || *p || parse_long(num, 0, 1L << 30, &v)) {
        snprintf(err, errlen, "layer: bad value '%.40s' (need a layer number, 0-%d)", text, n_layer - 1);
        return -1;
    }
    if (v >= n_layer) {
        snprintf(err, errlen, "no layer %ld (the model has layers 0-%d)", v, n_layer - 1);
        return -1;
    }
    *layer = (int)v;
    return 0;
}

/* 1 for the rows :pin takes by name: the baselines (layer heuristics and static head rankings). */
static int is_baseline(const search_method_info *m) {
    return m->kind != SEARCH_KIND_SEARCH;
}

/* :pin's arguments: nothing, full, swa, a baseline's name with an optional ratio, or a file. */
static int parse_pin(const char *args, cmdline_cmd *out, char *err, size_t errlen) {
    char w[64], names[256];
    const char *rest = args;
    next_word(&rest, w, sizeof w);
    out->ratio = -1;
    if (!*args) {
        out->pin = CMDLINE_PIN_WORKING;
        return 0;
    }
    if (!*rest && (!strcasecmp(w, "full") || !strcasecmp(w, "swa"))) {
        out->pin = !strcasecmp(w, "full") ? CMDLINE_PIN_FULL : CMDLINE_PIN_SWA;
        return 0;
    }
    const int row = search_method_find(w);
    if (row < 0) { /* not a method: a mask file, the whole rest of the line (a path may hold blanks) */
        out->pin = CMDLINE_PIN_FILE;
        snprintf(out->path, sizeof out->path, "%s", args);
        return 0;
    }
    const search_method_info *m = search_method_row(row);
    if (!is_baseline(m)) {
        search_methods_list(names, sizeof names, is_baseline);
        snprintf(err, errlen, "pin: %s is a search (s runs it); pin a baseline: %s, or a file (./%s)",
                 m->name, names, m->name);
        return -1;
    }
    out->pin = CMDLINE_PIN_METHOD;
    snprintf(out->path, sizeof out->path, "%s", m->name);
    if (!*rest) return 0;
    char *end;
    errno = 0;
    out->ratio = strtod(rest, &end);
    if (*end || errno || !isfinite(out->ratio) || out->ratio < 0 || out->ratio > 1) {
        snprintf(err, errlen, "pin: %s: bad ratio '%.40s' (need a number in [0, 1])", m->name, rest);
        return -1;
    }
    return 0;
}

/* The arguments of a known command (args: the rest of the line, blanks trimmed). */
static int parse_args(const command *c, const char *args, int n_layer, cmdline_cmd *out, char *err,
                      size_t errlen) {
    char w[64], names[64];
    long v;
    char *end;
    switch (c->kind) {
    case CMDLINE_RATIO:
        errno = 0;
        out->ratio = strtod(args, &end);
        if (!*args || *end || errno || !isfinite(out->ratio) || out->ratio < 0 || out->ratio > 1) {
            snprintf(err, errlen, "ratio: bad value '%.40s' (need a number in [0, 1])", args);
            return -1;
        }
        return 0;
    case CMDLINE_WINDOW:
        if (parse_long(args, 1, CMDLINE_MAX_WINDOW, &v)) {
            snprintf(err, errlen, "window: bad value '%.40s' (need tokens in [1, %ld])", args,
                     (long)CMDLINE_MAX_WINDOW);
            return -1;
        }
        out->window = (int)v;
        return 0;
    case CMDLINE_LOAD:
        if (!*args) {
            snprintf(err, errlen, "load: give a file name (:load FILE)");
            return -1;
        }
        snprintf(out->path, sizeof out->path, "%s", args);
        return 0;
    case CMDLINE_EXPORT:
        next_word(&args, w, sizeof w);
        export_names(names, sizeof names);
        for (out->export_i = 0; out->export_i < N_EXPORTS; out->export_i++)
            if (!strcmp(w, exports[out->export_i].name)) break;
        if (out->export_i == N_EXPORTS) {
            if (w[0])
                snprintf(err, errlen, "export: unknown '%.40s' (%s)", w, names);
            else
                snprintf(err, errlen, "export: say what to export: %s", names);
            return -1;
        }
        snprintf(out->path, sizeof out->path, "%s", args);
        return 0;
    case CMDLINE_LAYER:
        return cmdline_parse_layer(args, n_layer, &out->layer, err, errlen);
    case CMDLINE_PIN:
        return parse_pin(args, out, err, errlen);
    case CMDLINE_ALL:
        if (strcasecmp(args, "full") && strcasecmp(args, "swa")) {
            snprintf(err, errlen, "all: bad value '%.40s' (need full or swa)", args);
            return -1;
        }
        out->all_swa = !strcasecmp(args, "swa");
        return 0;
    default: /* quit, help: no arguments */
        if (*args) {
            snprintf(err, errlen, "%s takes no argument (got '%.40s')", c->name, args);
            return -1;
        }
        return 0;
    }
}

int cmdline_parse(const char *line, int n_layer, cmdline_cmd *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    char buf[512];
    const char *p = line;
    while (isspace((unsigned char)*p) || *p == ':') p++;
    snprintf(buf, sizeof buf, "%s", p);
    for (size_t n = strlen(buf); n > 0 && isspace((unsigned char)buf[n - 1]);) buf[--n] = '\0';
    if (!buf[0]) {
        snprintf(err, errlen, "empty command (:help lists them)");
        return -1;
    }
    if (isdigit((unsigned char)buf[0])) { /* :N */
        out->kind = CMDLINE_LAYER;
        return cmdline_parse_layer(buf, n_layer, &out->layer, err, errlen);
    }
    const char *args = buf;
    char name[64];
    next_word(&args, name, sizeof name);
    if (!strcmp(name, "q!") && !*args) {
        out->kind = CMDLINE_QUIT_NOW;
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++) {
        const command *c = &commands[i];
        if (strcmp(name, c->name) && (!c->alias || strcmp(name, c->alias))) continue;
        out->kind = c->kind;
        return parse_args(c, args, n_layer, out, err, errlen);
    }
    snprintf(err, errlen, "unknown command '%.40s' (:help lists them)", name);
    return -1;
}
