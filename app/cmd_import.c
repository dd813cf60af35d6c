/* cmd_import.c — `bosch import FILE --format duo --out MASK.csv`: a DuoAttention pattern (its
 * folder, or the full_attention_heads.tsv inside it, with config.json beside it) becomes a mask file
 * of the model's shape (formats/interop.h). Gates other than 0 and 1 are cut with --ratio R (as
 * DuoAttention's sparsify_attention_heads(sparsity = R)) or --threshold T (gate >= T stays full).
 * The positional argument is the pattern, so the model is --model M.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "outpath.h"
#include "command.h"
#include "commands.h"
#include "csvio.h"
#include "interop.h"

typedef struct {
    const char *in, *out, *model_path;
    int have_fmt, have_cut;
    duo_cut cut;
    double value;
} import_opts;

static void import_usage(FILE *f) {
    fprintf(f,
            "usage: bosch import FILE --format duo --out MASK.csv [OPTIONS]\n"
            "  read another tool's head pattern as a mask (docs/interop.md)\n"
            "  FILE           a DuoAttention folder (full_attention_heads.tsv + config.json) or its .tsv\n"
            "  --format duo   the only import format\n"
            "  --out MASK.csv the mask file to write\n"
            "  --ratio R      cut gates so a share R of the KV heads goes SWA (DuoAttention's sparsity)\n"
            "  --threshold T  cut gates at T: gate >= T stays full (default for 0/1 files: as they are)\n"
            "  --model M      the model the pattern is for (default: %s)\n",
            cli_default_model());
}

static int import_option(cmd_env *e, void *opts, const char *a, const char *v) {
    import_opts *o = opts;
    if (a[0] != '-') {
        if (o->in) return CMD_OPT_UNKNOWN;
        o->in = a;
        return CMD_OPT_FLAG;
    }
    if (strcmp(a, "--format") && strcmp(a, "--out") && strcmp(a, "--model") && strcmp(a, "--ratio") &&
        strcmp(a, "--threshold"))
        return CMD_OPT_UNKNOWN;
    if (!v) return cmd_need_value(e, a);
    if (!strcmp(a, "--format")) {
        if (strcmp(v, "duo")) {
            fprintf(stderr, "bosch import: --format: bad value '%s' (need duo)\n", v);
            return CMD_OPT_BAD;
        }
        o->have_fmt = 1;
        return CMD_OPT_VALUE;
    }
    if (!strcmp(a, "--out") || !strcmp(a, "--model")) {
        *(!strcmp(a, "--out") ? &o->out : &o->model_path) = v;
        return cmd_value(cli_need_nonempty("import", a, v, "a file name"));
    }
    if (o->have_cut) {
        const int same = !strcmp(a, "--ratio") == (o->cut == DUO_CUT_SPARSITY);
        if (same)
            fprintf(stderr, "bosch import: %s given twice (give it once)\n", a);
        else
            fprintf(stderr, "bosch import: give one of --ratio and --threshold\n");
        return CMD_OPT_BAD;
    }
    o->cut = !strcmp(a, "--ratio") ? DUO_CUT_SPARSITY : DUO_CUT_THRESHOLD;
    o->have_cut = 1;
    return cmd_value(cli_parse_real("import", a, v, 0, 1, &o->value));
}

static int import_check(cmd_env *e, void *opts) {
    (void)e;
    import_opts *o = opts;
    if (!o->in || !o->have_fmt || !o->out) {
        fprintf(stderr, "bosch import: need FILE, --format duo and --out\n");
        import_usage(stderr);
        return 2;
    }
    return cli_out_file_ready("import", o->out) ? 1 : 0;
}

static int import_run(cmd_env *e, void *opts) {
    import_opts *o = opts;
    model *m = NULL;
    if (cli_load_model("import", o->model_path ? o->model_path : cli_default_model(), &e->mo, &m)) return 1;
    char err[1024], note[256];
    attn_mask mask;
    int rc = interop_import_duo(o->in, m, o->have_cut, o->cut, o->value, &mask, note, sizeof note, err,
                                sizeof err);
    if (rc == 0) rc = csv_mask_save(o->out, &mask, m->name, m->hp.n_head, err, sizeof err);
    if (rc)
        fprintf(stderr, "bosch import: %s\n", err);
    else
        /* the summary line: on stdout, unless the output itself went there (outpath.h) */
        fprintf(outpath_is_stream(o->out) ? stderr : stdout, "%s: %s\n", o->out, note);
    if (mask.z) mask_free(&mask);
    model_free(m);
    return rc ? 1 : 0;
}

const command cmd_import = {
    .name = "import",
    .help = "read a DuoAttention head pattern as a mask",
    .opts_size = sizeof(import_opts),
    .option = import_option,
    .check = import_check,
    .run = import_run,
    .usage = import_usage,
};
