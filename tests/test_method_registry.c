/* test_method_registry.c — the method registry (search/search_methods.h) is the one list every
 * front end reads: `bosch compare`'s default methods, its help and `bosch search --help`, the
 * "valid:" messages, the explorer's start form, the attention view's rankings and the scores export
 * (`bosch export --format scores`). The expected lists below are written out by hand (the orders
 * the program had before the registry); each is compared with what those front ends produce, rows a
 * build adds (the recipe's new ranking) left aside, so adding a row needs no edit here.
 *
 * Built twice (tests/CMakeLists.txt): test_method_registry as the program is, and
 * test_method_registry_fake (BOSCH_FAKE_RANKING) where the build adds a static head ranking the
 * way the registry's recipe says, one new file (tests/registry/fake_rank.c) plus one row in a copy of
 * search/method_table.c, and nothing else: every list must then show "fake" where the order rules
 * put it, a search runs it, and the scores export writes its column and its JSON file.
 * The export runs on a random-weight 2-layer model (engine/gguf_write.h): about a second.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <setjmp.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "command.h"
#include "commands.h"
#include "compare.h"
#include "csvio.h"
#include "ex_state.h"
#include "gguf_write.h"
#include "model.h"
#include "search_methods.h"
#include "search_options.h"
#include "search_scores.h"
#include "ui_request.h"

#ifdef BOSCH_FAKE_RANKING
#define FAKE , "fake"
#else
#define FAKE
#endif

/* The orders, by hand: the start form's (and search_variant_name's), compare's default list, the
 * scores export's columns, the attention view's rankings. */
static const char *const form_order[] = {
    "bosch",        "bosch_paper", "bosch_indep", "bosch_marginal", "bosch_ranks", "bosch_heads",
    "bosch_bucket", "bosch_plus",  "bosch_layer", "bosch_confirm",  "rand",        "bme",
    "intr",         "nll",         "locality",    "echo",           "ablation",    "fisher" FAKE};
static const char *const compare_order[] = {
    "bosch", "bosch_paper", "bosch_indep", "bosch_heads", "bosch_bucket", "bosch_plus", "bosch_layer", "rand",
    "bme",   "intr",        "nll",         "ablation",    "fisher",       "locality",   "echo" FAKE};
static const char *const scores_order[] = {"ablation", "fisher", "locality", "echo" FAKE};
static const char *const ranks_order[] = {"locality", "echo", "ablation", "fisher" FAKE};
#define N(a) (int)(sizeof(a) / sizeof(a)[0])

static void test_builtin_rows(void **st) {
    (void)st;
    static const struct {
        search_method m;
        const char *name;
    } rows[] = {{SEARCH_METHOD_BOSCH, "bosch"},   {SEARCH_METHOD_RAND, "rand"},
                {SEARCH_METHOD_BME, "bme"},       {SEARCH_METHOD_INTR, "intr"},
                {SEARCH_METHOD_NLL, "nll"},       {SEARCH_METHOD_ABLATION, "ablation"},
                {SEARCH_METHOD_FISHER, "fisher"}, {SEARCH_METHOD_LOCALITY, "locality"},
                {SEARCH_METHOD_ECHO, "echo"}};
    for (int i = 0; i < N(rows); i++) {
        assert_string_equal(search_method_name(rows[i].m), rows[i].name);
        assert_int_equal(search_method_find(rows[i].name), rows[i].m);
        search_method got = -1;
        assert_int_equal(search_method_parse(rows[i].name, &got, NULL, 0), 0);
        assert_int_equal(got, rows[i].m);
    }
    /* a variant is a row but not a method of its own: it runs BOSCH */
    assert_string_equal(search_method_name(search_method_find("bosch_paper")), "?");
    search_config c;
    search_config_default(&c);
    assert_int_equal(search_variant_apply(&c, "bosch_paper", NULL, 0), 0);
    assert_int_equal(c.method, SEARCH_METHOD_BOSCH);
    assert_int_equal(c.stage1_singles, 0);
    /* kinds and the functions each kind needs */
    for (int r = 0; r < search_methods_count(); r++) {
        const search_method_info *m = search_method_row(r);
        assert_non_null(m->help);
        if (m->kind == SEARCH_KIND_SEARCH) assert_non_null(m->configure);
        if (m->kind == SEARCH_KIND_LAYER_HEURISTIC) assert_non_null(m->pattern);
        if (m->probes == SEARCH_PROBES_EACH_HEAD || m->probes == SEARCH_PROBES_EACH_LAYER)
            assert_non_null(m->probe);
        if (m->kind == SEARCH_KIND_HEAD_RANKING && m->probes == SEARCH_PROBES_NONE) assert_non_null(m->rank);
    }
}

/* got[0..n) in order, leaving out names not in want (rows a build may add), is want[0..n_want)
 * (the fake build adds its row to want: there the lists are compared whole). */
static void assert_order(const char *const *got, int n, const char *const *want, int n_want) {
    int k = 0;
    for (int i = 0; i < n; i++) {
        int known = 0;
        for (int j = 0; j < n_want; j++) known |= !strcmp(got[i], want[j]);
        if (!known) continue;
        assert_true(k < n_want);
        assert_string_equal(got[i], want[k++]);
    }
    assert_int_equal(k, n_want);
}

static void test_orders(void **st) {
    (void)st;
    const char *got[SEARCH_METHODS_MAX];
    int n = 0;
    while (search_variant_name(n)) got[n] = search_variant_name(n), n++;
    assert_int_equal(n, search_methods_count()); /* every row, once */
    assert_order(got, n, form_order, N(form_order));
    compare_plan p;
    char err[512];
    assert_int_equal(compare_plan_preset(&p, "bench", NULL, err, sizeof err), 0);
    for (int i = 0; i < p.n_methods; i++) got[i] = p.methods[i];
    assert_order(got, p.n_methods, compare_order, N(compare_order));
    assert_int_equal(compare_plan_check(&p, err, sizeof err), 0);
    for (int i = 0; i < search_scores_n(); i++) got[i] = search_scores_name(i);
    assert_int_equal(search_scores_n(), search_methods_count_kind(SEARCH_KIND_HEAD_RANKING));
    assert_order(got, search_scores_n(), scores_order, N(scores_order));
    for (int i = 0; i < ex_n_ranks(); i++) got[i] = ex_rank_name(i);
    assert_int_equal(ex_n_ranks(), search_scores_n());
    assert_order(got, ex_n_ranks(), ranks_order, N(ranks_order));
#ifdef BOSCH_FAKE_RANKING /* the added row is where the order rules put it */
    assert_string_equal(search_variant_name(n - 1), "fake");
    assert_string_equal(p.methods[p.n_methods - 1], "fake");
    assert_string_equal(search_scores_name(search_scores_n() - 1), "fake");
    assert_string_equal(ex_rank_name(ex_n_ranks() - 1), "fake");
#endif
}

/* Everything usage() of a command prints. */
static char *usage_text(const command *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    assert_non_null(f);
    c->usage(f);
    fclose(f);
    return buf;
}

static void test_help_and_messages(void **st) {
    (void)st;
    char *cmp = usage_text(&cmd_compare), *srch = usage_text(&cmd_search), err[1024];
    search_config c;
    search_config_default(&c);
    assert_int_equal(search_variant_apply(&c, "nope", err, sizeof err), -1);
    for (int i = 0; i < N(form_order); i++) {
        const search_method_info *m = search_method_row(search_method_find(form_order[i]));
        char line[256];
        snprintf(line, sizeof line, "%-15s%s\n", m->name, m->help); /* compare: name and help line */
        assert_non_null(strstr(cmp, line));
        assert_non_null(strstr(srch, form_order[i])); /* search --method's names */
        assert_non_null(strstr(err, form_order[i]));  /* "unknown method 'nope' (valid: ...)" */
    }
    assert_int_equal(search_variant_apply(&c, "bosch_nope", err, sizeof err), -1);
    assert_non_null(strstr(err, "unknown BOSCH variant 'bosch_nope' (valid: bosch, bosch_paper, bosch_indep, "
                                "bosch_marginal, bosch_ranks, bosch_heads, bosch_bucket, bosch_plus, "
                                "bosch_layer, bosch_confirm)"));
    search_method m;
    assert_int_equal(search_method_parse("nope", &m, err, sizeof err), -1);
    for (int i = 0; i < N(form_order); i++) /* the methods, not the variants */
        assert_int_equal(strstr(err, form_order[i]) != NULL, strncmp(form_order[i], "bosch_", 6) != 0);
    free(cmp), free(srch);
}

/* The start form's method field, cycled with Right from bosch back to bosch (as test_ui_request). */
static void test_form(void **st) {
    (void)st;
    ui_state *u = calloc(1, sizeof *u);
    u->undo = calloc(UI_UNDO, sizeof *u->undo);
    u->form_ratio = 0.5;
    u->snap.phase = EX_READY;
    u->snap.hp.n_layer = 30, u->snap.hp.n_head_kv = 3, u->snap.hp.n_head = 9, u->snap.hp.n_ctx_train = 8192;
    u->lay.visible_layers = 20;
    ui_apply_snapshot(u);
    ui_apply(u, keymap_lookup(u->mode, 's'), 's');
    for (int i = 0; i < 3; i++) ui_apply(u, keymap_lookup(u->mode, KEY_DOWN), KEY_DOWN);
    int n = 0;
    do {
        assert_true(n < search_methods_count());
        assert_string_equal(ui_form_method(u), search_variant_name(n++));
        ui_apply(u, keymap_lookup(u->mode, KEY_RIGHT), KEY_RIGHT);
    } while (strcmp(ui_form_method(u), "bosch"));
    assert_int_equal(n, search_methods_count());
    /* the last method (fisher, or the added ranking), started: the worker's configuration runs it */
    ui_apply(u, keymap_lookup(u->mode, KEY_LEFT), KEY_LEFT);
    ui_cmd c = ui_apply(u, keymap_lookup(u->mode, '\n'), '\n');
    assert_int_equal(c.kind, UI_CMD_START_SEARCH);
    search_config cfg;
    char err[256];
    assert_int_equal(search_opts_config(&c.req.opts, 8192, &cfg, err, sizeof err), 0);
    assert_int_equal(cfg.method, search_method_find(search_variant_name(n - 1)));
    free(u->undo);
    free(u);
}

#ifdef BOSCH_FAKE_RANKING
/* A synthetic objective: head u alone SWA gives NLL 0.1 * ((7 * u) % 5) more than all full. */
static int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err,
                       size_t errlen) {
    (void)ctx, (void)make_base, (void)err, (void)errlen;
    double nll = 1.0;
    for (int u = 0; u < m->n_layer * m->n_head_kv; u++)
        if (m->z[u] == ATTN_SWA) nll += 0.1 * ((7 * u) % 5) + 0.01 * u;
    *out = (search_eval){.score = 1.0 / nll, .accuracy = 1, .nll = nll};
    return 0;
}

/* `bosch search --method fake` in-process: its importance is the NLL increase of each head alone
 * SWA (worked out by hand above), its mask the T lowest. */
static void test_fake_runs(void **st) {
    (void)st;
    search_config cfg;
    search_config_default(&cfg);
    char err[256];
    assert_int_equal(search_variant_apply(&cfg, "fake", err, sizeof err), 0);
    cfg.ratio = 0.5;
    search_objective obj = {.score = synth_score};
    search_state *s;
    assert_int_equal(search_create(&s, &cfg, 4, 2, &obj, NULL, NULL, NULL, err, sizeof err), 0);
    assert_int_equal(search_run(s, NULL, err, sizeof err), 1);
    assert_int_equal(search_n_evals(s), 2 + 8 + 1); /* normalizers, one probe per head, the final mask */
    const double *imp = search_head_importance(s);
    assert_non_null(imp);
    for (int u = 0; u < 8; u++) assert_true(fabs(imp[u] - (0.1 * ((7 * u) % 5) + 0.01 * u)) < 1e-12);
    /* increases 0.00 0.21 0.42 0.13 0.34 0.05 0.26 0.47: the 4 lowest are heads 0, 5, 3, 1 */
    const attn_mask *m = search_result_mask(s);
    static const uint8_t want[8] = {ATTN_SWA,  ATTN_SWA, ATTN_FULL, ATTN_SWA,
                                    ATTN_FULL, ATTN_SWA, ATTN_FULL, ATTN_FULL};
    for (int u = 0; u < 8; u++) assert_int_equal(m->z[u], want[u]);
    search_free(s);
}
#endif

/* `bosch export --format scores` on a random-weight 2-layer model: one column and one JSON file per
 * ranking of the registry, in its table order. */
static void test_scores_export(void **st) {
    (void)st;
    char dir[] = "/tmp/test_method_registry.XXXXXX", path[1024], mpath[256], out[256], err[512];
    assert_non_null(mkdtemp(dir));
    mkmodel_shape shape;
    assert_int_equal(mkmodel_preset("tiny", &shape), 0);
    snprintf(path, sizeof path, "%s/tiny.gguf", dir);
    assert_int_equal(mkmodel_write(path, &shape, err, sizeof err), 0);
    model *m = NULL;
    assert_int_equal(model_load(&m, path, err, sizeof err), 0);
    attn_mask mask;
    assert_int_equal(mask_init(&mask, m->hp.n_layer, m->hp.n_head_kv, 32, 0, ATTN_FULL), 0);
    snprintf(mpath, sizeof mpath, "%s/mask.csv", dir);
    assert_int_equal(csv_mask_save(mpath, &mask, m->name, m->hp.n_head, err, sizeof err), 0);
    mask_free(&mask);
    const int L = m->hp.n_layer, H = m->hp.n_head_kv;
    model_free(m);
    snprintf(out, sizeof out, "%s/scores", dir);
    char *argv[] = {"export", mpath,       "--format", "scores",   "--out", out,        "--model",
                    path,     "--samples", "1",        "--length", "512",   "--device", "cpu"};
    assert_int_equal(command_run(&cmd_export, N(argv), argv), 0);
    char header[1024] = "layer,kv_head", line[2048];
    const int nr = search_scores_n(); /* in scores_order (test_orders), then any row a build adds */
    for (int i = 0; i < nr; i++) snprintf(header + strlen(header), 64, ",%s", search_scores_name(i));
    for (int i = 0; i < nr; i++) snprintf(header + strlen(header), 64, ",rank_%s", search_scores_name(i));
    strcat(header, "\n");
    snprintf(path, sizeof path, "%s/scores.csv", out);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_string_equal(line, header);
    int rows = 0;
    while (fgets(line, sizeof line, f)) rows++;
    fclose(f);
    assert_int_equal(rows, L * H);
    for (int i = 0; i < nr; i++) {
        snprintf(path, sizeof path, "%s/%s.json", out, search_scores_name(i));
        assert_int_equal(access(path, R_OK), 0);
    }
    snprintf(path, sizeof path, "rm -rf '%s'", dir);
    assert_int_equal(system(path), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_rows),      cmocka_unit_test(test_orders),
        cmocka_unit_test(test_help_and_messages), cmocka_unit_test(test_form),
#ifdef BOSCH_FAKE_RANKING
        cmocka_unit_test(test_fake_runs),
#endif
        cmocka_unit_test(test_scores_export),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
