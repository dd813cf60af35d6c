/* synth_search.c — the search tests' synthetic objective and model (synth_search.h). */
#include "synth_search.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "gguf_write.h"

double synth_weight(int u) {
    return 0.06 * (1 + u / SYNTH_H / 2) + 0.05 * ((u * 7 + 3) % 5);
}

static double synth_nll[SYNTH_NS];

int synth_score(void *ctx, const attn_mask *m, int make_base, search_eval *out, char *err, size_t errlen) {
    (void)make_base, (void)err, (void)errlen;
    const synth_options *o = ctx;
    double (*weight)(int) = o && o->weight ? o->weight : synth_weight;
    const int vary = o && o->vary_seconds;
    double cost = 0;
    for (int u = 0; u < m->n_layer * m->n_head_kv; u++)
        if (m->z[u] == ATTN_SWA) cost += weight(u);
    for (int s = 0; s < SYNTH_NS; s++) synth_nll[s] = 0.5 + cost * (1 + 0.2 * s);
    const double secs = vary ? 0.01 + 0.001 * (mask_count_swa(m) % 7) : 0.001;
    *out = (search_eval){exp(-cost), cost < 1.5, 0.5 + 1.2 * cost, secs, SYNTH_NS, synth_nll};
    return 0;
}

int synth_fixture_open(synth_fixture *f, const char *tag) {
    memset(f, 0, sizeof *f);
    mkmodel_shape tiny;
    if (mkmodel_preset("tiny", &tiny)) {
        fprintf(stderr, "synth_fixture_open: no mkmodel preset 'tiny'\n");
        return -1;
    }
    mkmodel_shape s = {.n_layer = SYNTH_L,
                       .n_embd = 96,
                       .n_head = 6,
                       .n_head_kv = SYNTH_H,
                       .n_ff = 64,
                       .n_vocab = 300,
                       .n_ctx = 256,
                       .rope_base = 10000,
                       .rms_eps = 1e-5f,
                       .std = 0.02f,
                       .seed = 3,
                       .wtype = tiny.wtype};
    snprintf(f->path, sizeof f->path, "/tmp/%s.%d.gguf", tag, (int)getpid());
    char err[512];
    if (mkmodel_write(f->path, &s, err, sizeof err) || model_load(&f->m, f->path, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        unlink(f->path);
        return -1;
    }
    for (int k = 0; k < SYNTH_NS; k++) {
        for (int t = 0; t < SYNTH_TOKENS; t++) f->toks[k][t] = 3 + (t * 37 + k * 11) % 250;
        f->samples[k] = (eval_sample){f->toks[k], SYNTH_TOKENS, SYNTH_TOKENS - 6, 6};
    }
    return 0;
}

void synth_fixture_close(synth_fixture *f) {
    model_free(f->m);
    f->m = NULL;
    unlink(f->path);
}
