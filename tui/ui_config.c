/* ui_config.c — parsing the explorer's config file (ui_config.h). */
#define _GNU_SOURCE
#include "ui_config.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keymap.h"

static const char *const parts[UI_N_PARTS] = {"full", "swa", "probe", "title",
                                              "good", "bad", "dim",   "accent"};
static const char *const colour_names[8] = {"black", "red",     "green", "yellow",
                                            "blue",  "magenta", "cyan",  "white"};

void ui_config_default(ui_config *c) {
    memset(c, 0, sizeof *c);
    c->palette = UI_PALETTE_BLUE_RED;
    c->mouse = 1;
}

/* A colour: a name, "default" (-1) or 0-255. 0, or -1. */
static int parse_colour(const char *s, int *v) {
    if (!strcasecmp(s, "default")) return *v = -1, 0;
    for (int i = 0; i < 8; i++)
        if (!strcasecmp(s, colour_names[i])) return *v = i, 0;
    char *end;
    long x = strtol(s, &end, 10);
    if (!*s || *end || !isdigit((unsigned char)*s) || x < 0 || x > 255) return -1;
    *v = (int)x;
    return 0;
}

/* "FG" or "FG,BG" for part i. */
static int parse_part(ui_config *c, int i, const char *value) {
    char fg[32] = "", bg[32] = "";
    const char *comma = strchr(value, ',');
    size_t n = comma ? (size_t)(comma - value) : strlen(value);
    if (n >= sizeof fg || (comma && strlen(comma + 1) >= sizeof bg)) return -1;
    memcpy(fg, value, n);
    fg[n] = '\0';
    if (comma) snprintf(bg, sizeof bg, "%s", comma + 1);
    ui_colour col = {1, -1, -1};
    if (parse_colour(fg, &col.fg) || (comma && parse_colour(bg, &col.bg))) return -1;
    c->colour[i] = col;
    return 0;
}

static int parse_bind(ui_config *c, const char *key, const char *value) {
    int k = keymap_key_parse(key);
    int req = keymap_request_parse(value);
    if (k < 0 || req < 0 || c->n_binds == UI_MAX_BINDS) return -1;
    for (int i = 0; i < c->n_binds; i++) /* a later line for the same key wins */
        if (c->binds[i].key == k) return c->binds[i].req = req, 0;
    c->binds[c->n_binds++] = (ui_bind){k, req};
    return 0;
}

/* One "name = value" line (both trimmed). 0, or -1 with what was expected in why. */
static int parse_line(ui_config *c, const char *name, const char *value, const char **why) {
    if (!strcmp(name, "palette")) {
        *why = "blue-red or blue-orange";
        if (!strcmp(value, "blue-red")) return c->palette = UI_PALETTE_BLUE_RED, 0;
        if (!strcmp(value, "blue-orange")) return c->palette = UI_PALETTE_BLUE_ORANGE, 0;
        return -1;
    }
    if (!strcmp(name, "mouse")) {
        *why = "on or off";
        if (!strcmp(value, "on")) return c->mouse = 1, 0;
        if (!strcmp(value, "off")) return c->mouse = 0, 0;
        return -1;
    }
    if (!strncmp(name, "color.", 6) || !strncmp(name, "colour.", 7)) {
        const char *part = name + (name[5] == '.' ? 6 : 7);
        *why = "a colour name, default or 0-255, then optionally ,BACKGROUND";
        for (int i = 0; i < UI_N_PARTS; i++)
            if (!strcmp(part, parts[i])) return parse_part(c, i, value);
        *why = "a part: full, swa, probe, title, good, bad, dim or accent";
        return -2;
    }
    if (!strncmp(name, "bind.", 5)) {
        if (keymap_key_parse(name + 5) < 0) {
            *why = "KEY: a character, space, Tab, Enter, Esc, Up, PgUp, Home, F1-F12, C-x ...";
            return -2;
        }
        *why =
            c->n_binds == UI_MAX_BINDS ? "at most 48 bindings" : "a request name (docs/explorer.md), or none";
        return parse_bind(c, name + 5, value);
    }
    *why = "palette, mouse, color.PART or bind.KEY";
    return -2;
}

/* Copy s[0..n) into buf[cap] with blanks trimmed at both ends. */
static void trimmed(char *buf, size_t cap, const char *s, size_t n) {
    while (n > 0 && isspace((unsigned char)*s)) s++, n--;
    while (n > 0 && isspace((unsigned char)s[n - 1])) n--;
    if (n >= cap) n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

int ui_config_parse(ui_config *c, const char *path, const char *text, char *err, size_t errlen) {
    ui_config_default(c);
    int line = 0;
    for (const char *p = text; p && *p;) {
        line++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        const char *hash = memchr(p, '#', len);
        if (hash) len = (size_t)(hash - p);
        const char *eq = memchr(p, '=', len);
        char name[64], value[128];
        trimmed(name, sizeof name, p, eq ? (size_t)(eq - p) : len);
        if (eq) trimmed(value, sizeof value, eq + 1, len - (size_t)(eq + 1 - p));
        p = eol ? eol + 1 : NULL;
        if (!eq && !name[0]) continue; /* blank or comment */
        const char *why = "";
        int rc = eq ? parse_line(c, name, value, &why) : -3;
        if (rc == 0) continue;
        if (rc == -3)
            snprintf(err, errlen, "%s: line %d: '%s': not a 'name = value' line", path, line, name);
        else if (rc == -2)
            snprintf(err, errlen, "%s: line %d: unknown setting '%s' (%s)", path, line, name, why);
        else
            snprintf(err, errlen, "%s: line %d: %s: bad value '%s' (%s)", path, line, name, value, why);
        return -1;
    }
    return 0;
}
