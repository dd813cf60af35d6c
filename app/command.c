/* command.c — the subcommand driver (command.h). */
#include "command.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "cli_backend.h"
#include "cli_dist.h"
#include "outlock.h"
#include "outpath.h"

int cmd_need_value(const cmd_env *e, const char *opt) {
    fprintf(stderr, "bosch %s: option %s needs a value\n", e->name, opt);
    return CMD_OPT_BAD;
}

int cmd_lock_output(cmd_env *e, const char *path, int is_file) {
    char err[8192];
    outpath o = {0};
    if (is_file && outpath_resolve(path, &o, err, sizeof err)) {
        fprintf(stderr, "bosch %s: %s\n", e->name, err);
        return -1;
    }
    int rc = 0;
    if (!o.stream && !e->lock &&
        outlock_take(is_file ? o.target : path, is_file, &e->lock, err, sizeof err)) {
        fprintf(stderr, "bosch %s: %s\n", e->name, err);
        rc = -1;
    }
    outpath_free(&o);
    return rc;
}

int cmd_out_dir(cmd_env *e, const char *dir, int lock) {
    struct stat sb;
    const int existed = dir && lstat(dir, &sb) == 0;
    if (cli_out_dir_ready(e->name, dir)) return -1;
    if (!existed && !e->made_dir && !(e->made_dir = strdup(dir))) {
        fprintf(stderr, "bosch %s: out of memory\n", e->name);
        return -1;
    }
    return lock ? cmd_lock_output(e, dir, 0) : 0;
}

/* The options the driver owns; CMD_OPT_UNKNOWN when opt is not one of them for c. */
static int common_option(const command *c, cmd_env *e, const char *opt, const char *val) {
    int takes = (!strcmp(opt, "--precision") && (c->flags & CMD_PRECISION)) ||
                (!strcmp(opt, "--kv") && (c->flags & CMD_PRECISION)) ||
                (!strcmp(opt, "--decode-weights") && (c->flags & CMD_DECODE)) ||
                (!strcmp(opt, "--device") && (c->flags & CMD_DEVICE));
    if (!takes) return CMD_OPT_UNKNOWN;
    if (!val) return cmd_need_value(e, opt);
    if (!strcmp(opt, "--precision")) return cmd_value(cli_parse_precision(e->name, val, &e->mo.precision));
    if (!strcmp(opt, "--kv")) return cmd_value(cli_parse_kv(e->name, val, &e->mo.kv_type));
    if (!strcmp(opt, "--decode-weights")) return cmd_value(cli_parse_decode(e->name, val, &e->mo));
    e->device_name = val;
    return CMD_OPT_VALUE;
}

/* Step 1 of command.h. 0 parsed, 1 help printed, 2 usage error (printed). */
static int parse(const command *c, cmd_env *e, void *opts, int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            c->usage(stdout);
            return 1;
        }
        if (a[0] != '-' || !a[1]) {
            if ((c->flags & CMD_MODEL) && !e->model_path) {
                e->model_path = a;
                continue;
            }
            if (!(c->flags & CMD_MODEL) && c->option && c->option(e, opts, a, v) == CMD_OPT_FLAG) continue;
            if (e->model_path)
                fprintf(stderr, "bosch %s: unexpected argument '%s' (the model is '%s')\n", e->name, a,
                        e->model_path);
            else
                fprintf(stderr, "bosch %s: unexpected argument '%s'\n", e->name, a);
            c->usage(stderr);
            return 2;
        }
        int r = common_option(c, e, a, v);
        if (r == CMD_OPT_UNKNOWN && c->option) r = c->option(e, opts, a, v);
        if (r == CMD_OPT_UNKNOWN) {
            fprintf(stderr, "bosch %s: unknown option '%s'\n", e->name, a);
            c->usage(stderr);
            return 2;
        }
        if (r == CMD_OPT_BAD) return 2;
        i += r;
    }
    return 0;
}

/* Steps 5 and 6. */
static int load_and_run(const command *c, cmd_env *e, void *opts) {
    char err[1024];
    int rc = 1;
    if ((c->flags & CMD_LOAD) && cli_load_model(e->name, e->model_path, &e->mo, &e->m)) return 1;
    if (c->flags & CMD_BACKEND) {
        backend_options bo = cli_backend_options(e->device, 0);
        bo.gpu = cli_dist_local_rank(); /* under mpirun: one GPU per rank of a host */
        if (backend_create(&e->be, &bo, e->m, err, sizeof err)) {
            fprintf(stderr, "bosch %s: %s\n", e->name, err);
            goto out;
        }
    }
    rc = cli_dist_rank() > 0 ? c->worker(e, opts) : c->run(e, opts);
out:
    backend_free(e->be);
    model_free(e->m);
    e->be = NULL, e->m = NULL;
    return rc;
}

int command_run(const command *c, int argc, char **argv) {
    cmd_env e = {.name = c->name, .mo = {PRECISION_AUTO, 0, ATTN_KV_BF16}, .device_name = "auto"};
    void *opts = calloc(1, c->opts_size ? c->opts_size : 1);
    if (!opts) {
        fprintf(stderr, "bosch %s: out of memory\n", c->name);
        return 1;
    }
    if (c->init) c->init(opts);
    int rc = parse(c, &e, opts, argc, argv);
    if (rc) {
        free(opts);
        return rc == 1 ? 0 : 2;
    }
    if (c->flags & CMD_DEVICE) {
        char err[256];
        if (backend_parse_device(e.device_name, &e.device, err, sizeof err)) {
            fprintf(stderr, "bosch %s: %s\n", c->name, err);
            free(opts);
            return 2;
        }
    }
    if ((c->flags & CMD_MODEL) && !e.model_path) e.model_path = cli_default_model();
    const int worker = cli_dist_rank() > 0;
    if (worker && !c->worker) { /* under mpirun, a command without workers runs on rank 0 only */
        free(opts);
        return 0;
    }
    rc = c->check && !worker ? c->check(&e, opts) : 0;
    if (rc == 0) {
        if (c->flags & CMD_STOP) cli_catch_stop_signals(e.old_sa);
        rc = load_and_run(c, &e, opts);
        if (c->flags & CMD_STOP) cli_restore_stop_signals(e.old_sa);
    }
    outlock_release(e.lock);
    if (rc != 0 && e.made_dir) rmdir(e.made_dir); /* only when empty: whatever the run wrote stays */
    free(e.made_dir);
    free(opts);
    return rc;
}
