/* cmd_import.c — `bosch import FILE --format duo --out MASK.csv`: a DuoAttention pattern (its
 * folder, or the full_attention_heads.tsv inside it, with config.json beside it) becomes a mask file
 * of the model's shape (formats/interop.h). Gates other than 0 and 1 are cut with --ratio R (as
 * DuoAttention's sparsify_attention_heads(sparsity = R)) or --threshold T (gate >= T stays full).
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "csvio.h"
#include "interop.h"

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

int cmd_import(int argc, char **argv) {
    const char *in = NULL, *out = NULL, *model_path = NULL;
    int have_fmt = 0, have_cut = 0;
    duo_cut cut = DUO_CUT_SPARSITY;
    double value = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            import_usage(stdout);
            return 0;
        } else if (a[0] != '-') {
            if (in) {
                fprintf(stderr, "bosch import: unexpected argument '%s'\n", a);
                return 2;
            }
            in = a;
            continue;
        } else if (!v) {
            fprintf(stderr, "bosch import: %s needs a value\n", a);
            return 2;
        } else if (!strcmp(a, "--format")) {
            if (strcmp(v, "duo")) {
                fprintf(stderr, "bosch import: --format: bad value '%s' (need duo)\n", v);
                return 2;
            }
            have_fmt = 1;
        } else if (!strcmp(a, "--out")) {
            if (cli_need_nonempty("import", a, v, "a mask file")) return 2;
            out = v;
        } else if (!strcmp(a, "--model")) {
            model_path = v;
        } else if (!strcmp(a, "--ratio") || !strcmp(a, "--threshold")) {
            if (have_cut) {
                fprintf(stderr, "bosch import: give one of --ratio and --threshold\n");
                return 2;
            }
            cut = !strcmp(a, "--ratio") ? DUO_CUT_SPARSITY : DUO_CUT_THRESHOLD;
            if (cli_parse_real("import", a, v, 0, 1, &value)) return 2;
            have_cut = 1;
        } else {
            fprintf(stderr, "bosch import: unknown option '%s'\n", a);
            import_usage(stderr);
            return 2;
        }
        i++;
    }
    if (!in || !have_fmt || !out) {
        fprintf(stderr, "bosch import: need FILE, --format duo and --out\n");
        import_usage(stderr);
        return 2;
    }
    if (cli_out_file_ready("import", out)) return 1;
    model *m = NULL;
    model_opts mo = {PRECISION_AUTO, 0};
    if (cli_load_model("import", model_path ? model_path : cli_default_model(), &mo, &m)) return 1;
    char err[1024], note[256];
    attn_mask mask;
    int rc = interop_import_duo(in, m, have_cut, cut, value, &mask, note, sizeof note, err, sizeof err);
    if (rc == 0) rc = csv_mask_save(out, &mask, m->name, m->hp.n_head, err, sizeof err);
    if (rc)
        fprintf(stderr, "bosch import: %s\n", err);
    else
        printf("%s: %s\n", out, note);
    if (mask.z) mask_free(&mask);
    model_free(m);
    return rc ? 1 : 0;
}
