/* mkmodel_cmd.h — `bosch mkmodel OUT ...` (tui/cmd_mkmodel.c); kept out of commands.h, which
 * another helper owns. Returns the exit status like the other cmd_* functions. */
#ifndef BOSCH_MKMODEL_CMD_H
#define BOSCH_MKMODEL_CMD_H
int cmd_mkmodel(int argc, char **argv);
#endif
