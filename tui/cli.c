/* cli.c — helpers shared by the headless subcommands. */
#include <stdlib.h>

#include "commands.h"

const char *cli_default_model(void) {
    const char *env = getenv("BOSCH_MODEL");
    return env && *env ? env : "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}
