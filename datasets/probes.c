/* probes.c — NIAH single / multi-key and passkey sample generation (docs/design.md §5).
 * Templates are our own wording. A sample is assembled at token level:
 *   head = chat opener + intro; haystack = filler units with needle sentences inserted at unit
 *   boundaries; tail = question + chat closer + assistant prefix; answer = the value's digits.
 * The haystack takes whatever length is left, so n_tokens == length_tokens exactly.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "haystack.h"
#include "probes.h"

#define MIN_FILLER 16 /* filler tokens a sample needs besides its needles */
#define CALIB_MAGIC 0x43414C49u

struct calib_set {
    uint32_t magic;
    probe_set set; /* split == PROBE_SPLIT_CALIBRATION */
};

static const char *const adjectives[] = {
    "amber", "brave",  "calm",   "crimson", "dusty",  "eager", "faded",  "gentle",    "golden", "hidden",
    "icy",   "jolly",  "lively", "lonely",  "misty",  "noble", "olive",  "pale",      "quiet",  "rapid",
    "rusty", "silent", "silver", "sleepy",  "sturdy", "tidy",  "velvet", "wandering", "wild",   "young"};
static const char *const nouns[] = {
    "anchor", "badger", "barrel", "candle",  "castle",  "comet",  "falcon",  "garden", "harbor", "helmet",
    "island", "kettle", "ladder", "lantern", "meadow",  "mirror", "orchard", "otter",  "pebble", "pepper",
    "rabbit", "river",  "saddle", "tower",   "trumpet", "tulip",  "violin",  "wagon",  "willow", "window"};
#define N_ADJ ((int)(sizeof adjectives / sizeof adjectives[0]))
#define N_NOUN ((int)(sizeof nouns / sizeof nouns[0]))

/* Mix the split (and the task) into the caller's seed so the splits never share a stream and
 * tasks do not share needles. Length and haystack are not mixed in: one seed gives the same needles
 * at every length, so a length curve compares like with like. */
static uint64_t split_seed(uint64_t seed, probe_split split, probe_task task) {
    uint64_t s = seed ^ (split == PROBE_SPLIT_CALIBRATION  ? 0x63616C6962726174ull
                         : split == PROBE_SPLIT_VALIDATION ? 0x76616C6964617465ull
                                                           : 0x68656C646F75745full);
    s = probe_rng_next(&s) ^ (0x7461736B00000000ull + (uint64_t)task);
    (void)probe_rng_next(&s);
    return s;
}

static void make_value(uint64_t *rng, int n_digits, char *out) {
    out[0] = (char)('1' + probe_rng_below(rng, 9));
    for (int i = 1; i < n_digits; i++) out[i] = (char)('0' + probe_rng_below(rng, 10));
    out[n_digits] = '\0';
}

/* Texts of one sample. */
typedef struct {
    char intro[256];
    char needle[PROBE_MAX_NEEDLES][160];
    char question[256];
    char prefix[128];
} sample_text;

static void make_texts(const probe_sample *s, sample_text *tx) {
    const char *qk = s->key[s->query];
    if (s->task == PROBE_PASSKEY) {
        snprintf(tx->intro, sizeof tx->intro,
                 "A pass key is hidden somewhere in the text below. Find it and remember it.\n\n");
        snprintf(tx->needle[0], sizeof tx->needle[0], " The pass key is %s. Remember it.", s->value[0]);
        snprintf(tx->question, sizeof tx->question, "\n\nWhat is the pass key?");
        snprintf(tx->prefix, sizeof tx->prefix, "The pass key is ");
        return;
    }
    snprintf(tx->intro, sizeof tx->intro,
             "Below is a long document. Hidden in it %s. Read it carefully, then answer the "
             "question at the end.\n\n",
             s->n_needles > 1 ? "are several secret codes, each for a different named item"
                              : "is the secret code of a named item");
    for (int j = 0; j < s->n_needles; j++)
        snprintf(tx->needle[j], sizeof tx->needle[j], " The secret code for the %s is %s.", s->key[j],
                 s->value[j]);
    snprintf(tx->question, sizeof tx->question,
             "\n\nQuestion: what is the secret code for the %s? Answer with the number only.", qk);
    snprintf(tx->prefix, sizeof tx->prefix, "The secret code for the %s is ", qk);
}

static int encode(const tokenizer *t, const char *text, int special, int32_t **tok, int *n, char *err,
                  size_t errlen) {
    size_t nn = 0;
    if (tokenizer_encode(t, text, strlen(text), special, tok, &nn) != 0) {
        snprintf(err, errlen, "probes: cannot encode '%.60s'", text);
        return -1;
    }
    *n = (int)nn;
    return 0;
}

/* Head and tail token runs (chat template or plain), tail including the answer. */
static int frame(const tokenizer *t, const probe_config *cfg, const sample_text *tx, const char *answer,
                 int32_t **head, int *n_head, int32_t **tail, int *n_tail, int32_t **ans, int *n_ans,
                 char *err, size_t errlen) {
    char user[640], *chat = NULL, *tail_text = NULL;
    int rc = -1;
    snprintf(user, sizeof user, "%s\x01%s", tx->intro, tx->question);
    if (cfg->use_chat) {
        if (tokenizer_chat_prompt(t, NULL, user, &chat, err, errlen) != 0) return -1;
    } else {
        chat = malloc(strlen(user) + 16);
        if (!chat) goto oom;
        sprintf(chat, "%s\n", user);
    }
    char *mark = strchr(chat, '\x01');
    if (!mark) {
        snprintf(err, errlen, "probes: chat template lost the haystack marker");
        goto done;
    }
    *mark = '\0';
    size_t tl = strlen(mark + 1) + strlen(tx->prefix) + strlen(answer) + 1;
    tail_text = malloc(tl);
    if (!tail_text) goto oom;
    snprintf(tail_text, tl, "%s%s%s", mark + 1, tx->prefix, answer);
    if (encode(t, chat, 1, head, n_head, err, errlen) || encode(t, tail_text, 1, tail, n_tail, err, errlen) ||
        encode(t, answer, 0, ans, n_ans, err, errlen))
        goto done;
    /* The answer must tokenize the same alone and after the prefix (digits split apart). */
    if (*n_ans < 1 || *n_ans > *n_tail ||
        memcmp(*tail + *n_tail - *n_ans, *ans, (size_t)*n_ans * sizeof **ans) != 0) {
        snprintf(err, errlen, "probes: answer '%s' tokenizes differently after '%s'", answer, tx->prefix);
        goto done;
    }
    rc = 0;
    goto done;
oom:
    snprintf(err, errlen, "probes: out of memory");
done:
    free(chat);
    free(tail_text);
    return rc;
}

static int nearest_bound(const tok_stream *f, double pos) {
    int best = 0;
    double bd = 1e300;
    for (int i = 0; i < f->n_bound; i++) {
        double d = fabs(f->bound[i] - pos);
        if (d < bd) bd = d, best = i;
    }
    return f->n_bound ? f->bound[best] : 0;
}

/* Choose keys and values of sample s (index i of the set). */
static void choose_needles(probe_sample *s, const probe_config *cfg, uint64_t *rng) {
    s->n_needles = s->task == PROBE_NIAH_MULTIKEY ? cfg->n_keys : 1;
    for (int j = 0; j < s->n_needles; j++) {
        int again;
        do {
            again = 0;
            if (s->task == PROBE_PASSKEY)
                s->key[j][0] = '\0';
            else
                snprintf(s->key[j], PROBE_KEY_CAP, "%s %s", adjectives[probe_rng_below(rng, N_ADJ)],
                         nouns[probe_rng_below(rng, N_NOUN)]);
            make_value(rng, s->task == PROBE_PASSKEY ? 5 : 7, s->value[j]);
            /* keys of one sample differ in both words; values all differ */
            for (int k = 0; k < j; k++) {
                const char *a = s->key[k], *b = s->key[j], *sa = strchr(a, ' '), *sb = strchr(b, ' ');
                int same_adj = sa && sb && sa - a == sb - b && !strncmp(a, b, (size_t)(sa - a));
                int same_noun = sa && sb && !strcmp(sa, sb);
                if (same_adj || same_noun || !strcmp(s->value[k], s->value[j])) again = 1;
            }
        } while (again);
    }
    s->query = s->n_needles > 1 ? (int)probe_rng_below(rng, (uint64_t)s->n_needles) : 0;
}

static int gen_sample(probe_sample *s, const tokenizer *t, const probe_config *cfg, uint64_t set_seed, int i,
                      double depth, char *err, size_t errlen) {
    uint64_t rng = set_seed ^ (0xD1B54A32D192ED03ull * (uint64_t)(i + 1));
    (void)probe_rng_next(&rng);
    memset(s, 0, sizeof *s);
    s->task = cfg->task;
    s->haystack = cfg->haystack;
    s->depth_target = depth;
    choose_needles(s, cfg, &rng);

    sample_text tx;
    make_texts(s, &tx);
    int32_t *head = NULL, *tail = NULL, *ans = NULL, *ndl[PROBE_MAX_NEEDLES] = {0};
    int n_head = 0, n_tail = 0, n_ans = 0, n_ndl = 0, rc = -1;
    tok_stream fill = {0};
    if (frame(t, cfg, &tx, s->value[s->query], &head, &n_head, &tail, &n_tail, &ans, &n_ans, err, errlen))
        goto done;
    for (int j = 0; j < s->n_needles; j++) {
        if (encode(t, tx.needle[j], 0, &ndl[j], &s->needle_len[j], err, errlen)) goto done;
        n_ndl += s->needle_len[j];
    }
    int H = cfg->length_tokens - n_head - n_tail;
    if (H - n_ndl < MIN_FILLER) {
        snprintf(err, errlen, "probes: length_tokens %d is too short for %s (needs at least %d)",
                 cfg->length_tokens, probe_task_name(cfg->task), n_head + n_tail + n_ndl + MIN_FILLER);
        goto done;
    }
    if (haystack_build(t, cfg->haystack, cfg->task, &rng, H - n_ndl, &fill, err, errlen)) goto done;

    /* Insertion points in filler coordinates: the queried needle at the target depth, the others at
     * random unit boundaries. Then insert in increasing order (stable for equal points). */
    int at[PROBE_MAX_NEEDLES], order[PROBE_MAX_NEEDLES];
    for (int j = 0; j < s->n_needles; j++) {
        at[j] = j == s->query ? nearest_bound(&fill, depth * fill.n)
                              : fill.bound[probe_rng_below(&rng, (uint64_t)fill.n_bound)];
        order[j] = j;
    }
    for (int a = 1; a < s->n_needles; a++)
        for (int b = a; b > 0 && at[order[b]] < at[order[b - 1]]; b--) {
            int tmp = order[b];
            order[b] = order[b - 1];
            order[b - 1] = tmp;
        }
    s->n_tokens = cfg->length_tokens;
    s->tokens = malloc((size_t)s->n_tokens * sizeof *s->tokens);
    if (!s->tokens) {
        snprintf(err, errlen, "probes: out of memory");
        goto done;
    }
    int n = 0, from = 0;
    memcpy(s->tokens, head, (size_t)n_head * sizeof *head);
    n = n_head;
    s->haystack_start = n;
    s->haystack_len = H;
    for (int k = 0; k < s->n_needles; k++) {
        int j = order[k];
        memcpy(s->tokens + n, fill.tokens + from, (size_t)(at[j] - from) * sizeof *fill.tokens);
        n += at[j] - from;
        from = at[j];
        s->needle_pos[j] = n;
        s->depth[j] = (double)(n - s->haystack_start) / H;
        memcpy(s->tokens + n, ndl[j], (size_t)s->needle_len[j] * sizeof *ndl[j]);
        n += s->needle_len[j];
    }
    memcpy(s->tokens + n, fill.tokens + from, (size_t)(fill.n - from) * sizeof *fill.tokens);
    n += fill.n - from;
    memcpy(s->tokens + n, tail, (size_t)n_tail * sizeof *tail);
    n += n_tail;
    s->n_answer = n_ans;
    s->answer_start = n - n_ans;
    rc = n == s->n_tokens ? 0 : -1;
    if (rc) snprintf(err, errlen, "probes: internal length mismatch (%d != %d)", n, s->n_tokens);
done:
    free(head);
    free(tail);
    free(ans);
    for (int j = 0; j < PROBE_MAX_NEEDLES; j++) free(ndl[j]);
    tok_stream_free(&fill);
    if (rc) {
        free(s->tokens);
        s->tokens = NULL;
    }
    return rc;
}

static int check_config(const probe_config *cfg, probe_split split, char *err, size_t errlen) {
    if (cfg->task < 0 || cfg->task >= PROBE_TASK_COUNT) {
        snprintf(err, errlen, "probes: task %d is unknown", (int)cfg->task);
        return -1;
    }
    if (cfg->haystack < 0 || cfg->haystack >= HAYSTACK_KIND_COUNT) {
        snprintf(err, errlen, "probes: haystack %d is unknown", (int)cfg->haystack);
        return -1;
    }
    if (cfg->length_tokens < PROBE_MIN_LENGTH) {
        snprintf(err, errlen, "probes: length_tokens %d is below the minimum %d", cfg->length_tokens,
                 PROBE_MIN_LENGTH);
        return -1;
    }
    if (cfg->n_samples < 1) {
        snprintf(err, errlen, "probes: n_samples %d must be at least 1", cfg->n_samples);
        return -1;
    }
    if (cfg->task == PROBE_NIAH_MULTIKEY && (cfg->n_keys < 2 || cfg->n_keys > PROBE_MAX_NEEDLES)) {
        snprintf(err, errlen, "probes: n_keys %d must be in 2..%d for niah_multikey", cfg->n_keys,
                 PROBE_MAX_NEEDLES);
        return -1;
    }
    if (cfg->depths) {
        if (split != PROBE_SPLIT_HELDOUT) {
            snprintf(err, errlen, "probes: a depth override is allowed on the held-out split only");
            return -1;
        }
        if (cfg->n_depths < 1) {
            snprintf(err, errlen, "probes: n_depths %d must be at least 1", cfg->n_depths);
            return -1;
        }
        for (int i = 0; i < cfg->n_depths; i++) {
            double d = cfg->depths[i];
            if (!(d >= 0.0 && d <= 1.0)) {
                snprintf(err, errlen, "probes: depths[%d] = %g is outside [0,1]", i, d);
                return -1;
            }
            for (int c = 0; c < probe_n_calib_depths; c++)
                if (fabs(d - probe_calib_depths[c]) < 1e-9) {
                    snprintf(err, errlen, "probes: depths[%d] = %g is a calibration depth", i, d);
                    return -1;
                }
        }
    }
    return 0;
}

int probe_set_generate(probe_set *set, const tokenizer *tok, const probe_config *cfg, probe_split split,
                       uint64_t seed, char *err, size_t errlen) {
    memset(set, 0, sizeof *set);
    if (split != PROBE_SPLIT_CALIBRATION && split != PROBE_SPLIT_HELDOUT && split != PROBE_SPLIT_VALIDATION) {
        snprintf(err, errlen, "probes: split %d is unknown", (int)split);
        return -1;
    }
    if (check_config(cfg, split, err, errlen)) return -1;
    set->split = split;
    set->seed = seed;
    set->cfg = *cfg;
    set->samples = calloc((size_t)cfg->n_samples, sizeof *set->samples);
    if (!set->samples) {
        snprintf(err, errlen, "probes: out of memory for %d samples", cfg->n_samples);
        return -1;
    }
    const double *grid = cfg->depths                        ? cfg->depths
                         : split == PROBE_SPLIT_CALIBRATION ? probe_calib_depths
                         : split == PROBE_SPLIT_VALIDATION  ? probe_valid_depths
                                                            : probe_heldout_depths;
    int n_grid = cfg->depths                        ? cfg->n_depths
                 : split == PROBE_SPLIT_CALIBRATION ? probe_n_calib_depths
                 : split == PROBE_SPLIT_VALIDATION  ? probe_n_valid_depths
                                                    : probe_n_heldout_depths;
    set->cfg.depths = NULL; /* the caller's array need not outlive the set */
    set->cfg.n_depths = 0;
    uint64_t s = split_seed(seed, split, cfg->task);
    for (int i = 0; i < cfg->n_samples; i++) {
        if (gen_sample(&set->samples[i], tok, cfg, s, i, grid[i % n_grid], err, errlen)) {
            probe_set_free(set);
            return -1;
        }
        set->n = i + 1;
    }
    return 0;
}

void probe_set_free(probe_set *set) {
    if (!set) return;
    for (int i = 0; i < set->n; i++) free(set->samples[i].tokens);
    free(set->samples);
    memset(set, 0, sizeof *set);
}

void probe_set_eval_samples(const probe_set *set, eval_sample *out) {
    for (int i = 0; i < set->n; i++) {
        const probe_sample *s = &set->samples[i];
        out[i] = (eval_sample){s->tokens, s->n_tokens, s->answer_start, s->n_answer};
    }
}

int probe_calib_generate(calib_set **out, const tokenizer *tok, const probe_config *cfg, uint64_t seed,
                         char *err, size_t errlen) {
    *out = NULL;
    if (cfg->depths) {
        snprintf(err, errlen, "probes: the calibration split uses its own depth grid (depths must be NULL)");
        return -1;
    }
    calib_set *cs = calloc(1, sizeof *cs);
    if (!cs) {
        snprintf(err, errlen, "probes: out of memory");
        return -1;
    }
    if (probe_set_generate(&cs->set, tok, cfg, PROBE_SPLIT_CALIBRATION, seed, err, errlen)) {
        free(cs);
        return -1;
    }
    cs->magic = CALIB_MAGIC;
    *out = cs;
    return 0;
}

int probe_calib_generate_mix(calib_set **out, const tokenizer *tok, const probe_config *cfgs, int n_cfgs,
                             uint64_t seed, char *err, size_t errlen) {
    *out = NULL;
    if (n_cfgs < 1) {
        snprintf(err, errlen, "probes: a calibration mix needs at least one task");
        return -1;
    }
    calib_set *cs = calloc(1, sizeof *cs);
    probe_set *parts = calloc((size_t)n_cfgs, sizeof *parts);
    int total = 0, rc = -1;
    if (!cs || !parts) {
        snprintf(err, errlen, "probes: out of memory");
        goto done;
    }
    for (int i = 0; i < n_cfgs; i++) {
        if (cfgs[i].depths) {
            snprintf(err, errlen,
                     "probes: the calibration split uses its own depth grid (depths must be NULL)");
            goto done;
        }
        if (probe_set_generate(&parts[i], tok, &cfgs[i], PROBE_SPLIT_CALIBRATION, seed, err, errlen))
            goto done;
        total += parts[i].n;
    }
    cs->set = parts[0]; /* its config and split describe the set; the samples are all the parts' */
    cs->set.samples = calloc((size_t)total, sizeof *cs->set.samples);
    if (!cs->set.samples) {
        snprintf(err, errlen, "probes: out of memory");
        memset(&cs->set, 0, sizeof cs->set);
        goto done;
    }
    cs->set.n = 0;
    for (int i = 0; i < n_cfgs; i++) { /* move the samples (and their tokens) over */
        memcpy(cs->set.samples + cs->set.n, parts[i].samples, sizeof *parts[i].samples * (size_t)parts[i].n);
        cs->set.n += parts[i].n;
        free(parts[i].samples);
        memset(&parts[i], 0, sizeof parts[i]);
    }
    cs->magic = CALIB_MAGIC;
    *out = cs;
    cs = NULL;
    rc = 0;
done:
    for (int i = 0; parts && i < n_cfgs; i++) probe_set_free(&parts[i]);
    free(parts);
    if (cs) calib_set_free(cs);
    return rc;
}

void calib_set_free(calib_set *cs) {
    if (!cs) return;
    probe_set_free(&cs->set);
    free(cs);
}

int calib_set_n(const calib_set *cs) {
    return cs->set.n;
}
const probe_config *calib_set_config(const calib_set *cs) {
    return &cs->set.cfg;
}
const probe_sample *calib_set_sample(const calib_set *cs, int i) {
    return &cs->set.samples[i];
}
void calib_set_eval_samples(const calib_set *cs, eval_sample *out) {
    probe_set_eval_samples(&cs->set, out);
}

probe_split calib_set_split(const calib_set *cs) {
    /* A set not made by probe_calib_generate has no magic: report it as held-out so that a check
     * `calib_set_split(cs) == PROBE_SPLIT_CALIBRATION` rejects it. */
    return cs && cs->magic == CALIB_MAGIC && cs->set.split == PROBE_SPLIT_CALIBRATION
               ? PROBE_SPLIT_CALIBRATION
               : PROBE_SPLIT_HELDOUT;
}
