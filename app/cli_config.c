/* cli_config.c — finding and reading the explorer's config file (cli_config.h). */
#define _GNU_SOURCE
#include "cli_config.h"
#include "infile.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONFIG_MAX_BYTES (64 * 1024)

int cli_config_read(char *path, size_t cap, const char **path_out, char **text, char *err, size_t errlen) {
    const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");
    *path_out = NULL;
    *text = NULL;
    if (xdg && xdg[0] == '/') /* a relative value is to be ignored (the XDG spec) */
        snprintf(path, cap, "%s/bosch/explorer.conf", xdg);
    else if (home && home[0])
        snprintf(path, cap, "%s/.config/bosch/explorer.conf", home);
    else
        return 0;
    *path_out = path;
    FILE *f = infile_fopen(path, err, errlen); /* a FIFO or a directory is refused, never waited on */
    if (!f) return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    char *buf = malloc(CONFIG_MAX_BYTES + 2);
    size_t n = buf ? fread(buf, 1, CONFIG_MAX_BYTES + 1, f) : 0;
    int bad = !buf || ferror(f) || n > CONFIG_MAX_BYTES;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: %s", path,
                 !buf                   ? "out of memory"
                 : n > CONFIG_MAX_BYTES ? "larger than 64 KiB"
                                        : "cannot be read");
        free(buf);
        return -1;
    }
    buf[n] = '\0';
    if (strlen(buf) != n) {
        snprintf(err, errlen, "%s: a NUL byte at offset %zu (not a text file)", path, strlen(buf));
        free(buf);
        return -1;
    }
    *text = buf;
    return 0;
}
