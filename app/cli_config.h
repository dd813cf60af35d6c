/* cli_config.h — the explorer's config file from the environment (only the app reads it):
 * $XDG_CONFIG_HOME/bosch/explorer.conf when XDG_CONFIG_HOME is set to an absolute path (XDG Base
 * Directory Specification 0.8), else $HOME/.config/bosch/explorer.conf. Its format is in
 * tui/ui_config.h and docs/explorer.md. */
#ifndef BOSCH_CLI_CONFIG_H
#define BOSCH_CLI_CONFIG_H

#include <stddef.h>

/* The file's path into path[cap] (NULL when neither variable gives one) and its text into *text
 * (malloc'd, NUL-terminated; NULL when the file does not exist, which is fine). 0, or -1 with a
 * message naming the file when it exists but cannot be read or is larger than 64 KiB. */
int cli_config_read(char *path, size_t cap, const char **path_out, char **text, char *err, size_t errlen);

#endif
