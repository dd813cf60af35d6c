/* ex_state.h — the explorer's shared state types: the mask as the explorer holds it (ex_mask), the
 * worker's published snapshot (ex_snapshot) and the results of its jobs. Included by the worker
 * (tui/worker*.c) and the UI thread's code (explorer*.c, draw_*.c); includes neither back.
 *
 * Threads: the worker owns the model, the probes, the evaluator and the search; it publishes an
 * ex_snapshot under a mutex and writes a byte to a pipe. The UI thread poll()s stdin and that pipe,
 * copies the snapshot and draws from its copy. The snapshot is a plain struct of fixed-size arrays
 * so a copy is one assignment.
 */
#ifndef BOSCH_EX_STATE_H
#define BOSCH_EX_STATE_H

#include <stdint.h>

#include "mask.h"
#include "model.h"
#include "progress.h"
#include "requests.h"

#define EX_MAX_LAYERS 128 /* = PROGRESS_MAX_LAYERS */
#define EX_MAX_KV 16
#define EX_HIST 512 /* score history points kept for the sparkline */
#define EX_LOG 48   /* event-log lines kept */
#define EX_LINE 160 /* bytes per log line / message */
#define EX_TEXT 512 /* bytes of an answer or question excerpt */

/* A mask that fits in the snapshot without allocation: z[layer*n_head_kv + kv_head]. */
typedef struct {
    int n_layer, n_head_kv, window, sinks;
    uint8_t z[EX_MAX_LAYERS * EX_MAX_KV]; /* ATTN_FULL / ATTN_SWA */
} ex_mask;

typedef enum {
    EX_LOADING = 0, /* loading the model */
    EX_READY,       /* model loaded, no search yet */
    EX_PREPARING,   /* building probes and the evaluator for a search */
    EX_RUNNING,     /* search stepping */
    EX_PAUSED,      /* search paused (or single-stepping) */
    EX_DONE,        /* search finished */
    EX_FAILED,      /* model could not be loaded (message in status) */
} ex_phase;

/* Result of "evaluate the current mask on held-out probes". */
typedef struct {
    long seq;           /* increments with each result; 0 = none yet */
    uint64_t mask_hash; /* mask_hash() of the mask that was scored */
    double score, accuracy, seconds;
    int n_samples, length_tokens;
} ex_heldout;

/* Result of "ask the model". */
typedef struct {
    long seq;
    int sample;             /* held-out sample index */
    char question[EX_TEXT]; /* the question part of the prompt, decoded */
    char needle[64];        /* the true value */
    char answer[EX_TEXT];   /* the model's greedy answer with the mask */
    int correct;            /* answer starts with the needle */
    int n_tokens;           /* prompt length */
    double seconds;
} ex_ask;

/* The attention view (worker_attn.c): for one probe sample, the attention of the query heads of one
 * KV head at the answer position (the last prompt token, whose output is the first answer token)
 * over the prompt, under full attention (the forward with every head full) and as an SWA head (the
 * forward with the working mask upstream and this KV head SWA, the head's softmax restricted to
 * its visible keys); the next-token answer probability; the head's static rankings. */
#define EX_ATTN_Q 8         /* query heads of a GQA group shown at most */
#define EX_ATTN_BUCKETS 256 /* strip resolution sent to the UI (attn_strip_resample of the tokens) */
#define EX_RANKS 8          /* room for the static rankings; ex_n_ranks() of them are used (ex_rank_name) */
typedef enum { EX_RANK_PENDING = 0, EX_RANK_RUNNING, EX_RANK_READY, EX_RANK_FAILED } ex_rank_state;
typedef struct {
    long seq; /* increments with each result; 0 = none yet */
    int ok;   /* 0: msg says why */
    char msg[EX_LINE];
    int layer, kv_head;
    int split;          /* 0 calibration, 1 held-out */
    int sample_asked;   /* the sample index asked for (sample is it modulo n_samples) */
    uint64_t mask_hash; /* mask_hash of the working mask it was computed with */
    int sample, n_samples;
    int q0, n_q;                /* query heads q0 .. q0 + n_q - 1 (GQA group of kv_head; at most EX_ATTN_Q) */
    int n_keys;                 /* prompt tokens; the query is at n_keys - 1 */
    int window, sinks;          /* the working mask's */
    int needle_pos, needle_len; /* the queried needle's span, tokens */
    char needle[64];            /* its value */
    float full[EX_ATTN_Q][EX_ATTN_BUCKETS]; /* attention mass per bucket of the prompt, full */
    float swa[EX_ATTN_Q][EX_ATTN_BUCKETS];  /* the same as an SWA head (renormalized on its keys) */
    double in_full[EX_ATTN_Q];              /* share of the full softmax inside the window (sinks + last W) */
    double in_swa[EX_ATTN_Q];               /* the same with the working mask upstream and this head SWA */
    double needle_full[EX_ATTN_Q], needle_swa[EX_ATTN_Q]; /* mass on the needle's span */
    double p_answer, p_answer_full; /* evaluator p_answer of the sample: working mask, all full */
    char text_needle[EX_LINE];      /* the needle's tokens decoded (the sentence the answer is in) */
    char text_before_edge[EX_LINE]; /* the tokens just before the window's first key, decoded */
    char text_after_edge[EX_LINE];  /* the window's first tokens, decoded */
    int exact;                      /* the working mask's argmax answers are all right */
    double seconds;
    /* static rankings (cached per session, computed in the background after the first view) */
    int rank_state[EX_RANKS]; /* ex_rank_state */
    double rank_score[EX_RANKS];
    int rank[EX_RANKS], rank_n;   /* 1 = most important of rank_n KV heads */
    long rank_evals, rank_budget; /* the ranking being computed: evaluations so far, planned */
} ex_attn;

/* A job's reply (worker_reply_publish): what a job of the table (requests.h) without a result type
 * of its own gives back, kept per job in the snapshot's reply[UI_CMD_ID] for its drawing. */
#define EX_REPLY_VALUES 8
typedef struct {
    long seq;                      /* increments with each reply of the job; 0 = none yet */
    int ok;                        /* 0: text says why */
    uint64_t mask_hash;            /* mask_hash of the mask it is about (0: none) */
    int layer, kv_head;            /* the head it is about (-1: none) */
    double value[EX_REPLY_VALUES]; /* the job's numbers (its row's drawing says which) */
    char text[EX_LINE];            /* one line for the screen */
} ex_reply;

/* Pinned vs working (`:pin`, `=`; worker_pin.c computes it, pin_compare.h the numbers): each mask's
 * calibration score S-hat (its raw S normalized between all full and all SWA on the calibration
 * split, as the search scores masks), its held-out accuracy on the explorer's held-out split (the
 * one `v` scores) with its 95 % Wilson interval, and the exact McNemar test between the two on
 * those same samples. Fields not known yet are NAN / -1. */
#define EX_PIN_SAMPLES 64 /* held-out samples whose per-sample results are kept */
typedef enum {
    EX_PIN_IDLE = 0,  /* nothing asked */
    EX_PIN_MAKING,    /* the baseline's mask is being made (a `bosch search --method M` run) */
    EX_PIN_COMPUTING, /* evaluations of the comparison are running */
    EX_PIN_READY,     /* every number below is known */
    EX_PIN_FAILED,    /* msg says why */
} ex_pin_state;
typedef struct {
    uint64_t hash;                 /* mask_hash of the mask; with window and sinks below */
    int window, sinks, n_swa;      /* the mask's */
    double calib_raw, calib_norm;  /* raw S on the calibration split and S-hat; NAN not yet */
    int hits, n;                   /* held-out exact matches of n samples; -1 not yet */
    double heldout_score;          /* mean p_answer on them */
    double wilson_lo, wilson_hi;   /* 95 % Wilson interval of hits / n */
    uint8_t exact[EX_PIN_SAMPLES]; /* per held-out sample: 1 exact match */
} ex_pin_side;
typedef struct {
    long seq; /* increments with each publish of the comparison; 0 = none yet */
    ex_pin_state state;
    char msg[EX_LINE];    /* what is being computed, or why it failed */
    long mask_seq;        /* increments when the worker made a pinned mask (a baseline's) */
    ex_mask pinned;       /* that mask */
    char name[32];        /* its name (the method) */
    double ratio;         /* the ratio it was cut at */
    ex_pin_side side[2];  /* 0 the pinned mask, 1 the working mask */
    long mc_b, mc_c;      /* McNemar's discordant pairs: pinned right and working wrong, the reverse; -1 */
    double mc_p;          /* its exact two-sided p; NAN not yet */
    double s_full, s_swa; /* the normalizers: raw S of all full, all SWA (the working mask's W) */
    int done, total;      /* evaluations of the comparison done, needed */
    long method_evals, method_budget;    /* the baseline's search while EX_PIN_MAKING */
    int calib_samples, calib_tokens;     /* the calibration split (the search's, else the tiny preset's) */
    int heldout_samples, heldout_tokens; /* the held-out split (`v`'s) */
} ex_pin;

/* File work the worker does for the UI (the UI thread never reads or writes files). */
typedef enum {
    EX_IO_EXPORT_MASK,
    EX_IO_EXPORT_TRACE,
    EX_IO_EXPORT_LAYERS,
    EX_IO_LOAD_MASK,
    EX_IO_COMPARE_OPEN,   /* read a compare folder's held-out rows (worker_compare_open) */
    EX_IO_COMPARE_MASK,   /* read the mask of one of those rows (worker_compare_mask) */
    EX_IO_EXPORT_DUO,     /* the working mask as a DuoAttention folder (formats/interop.h) */
    EX_IO_EXPORT_HF,      /* its servable projection as a Hugging Face config.json patch */
    EX_IO_EXPORT_TRTLLM,  /* its servable projection as TensorRT-LLM kv_cache_config JSON */
    EX_IO_EXPORT_SCORES,  /* the static rankings' scores of the attention view (worker_attn_scores_write) */
    EX_IO_WORKSPACE_SAVE, /* save the explorer's state to a folder (worker_workspace_save) */
    EX_IO_WORKSPACE_OPEN, /* open a workspace or `bosch search --out` folder (worker_workspace_open) */
    EX_IO_PIN_MASK,       /* read a mask file to pin (as EX_IO_LOAD_MASK; the UI pins it) */
} ex_io_kind;

/* What an opened workspace gives back to the UI besides the mask (EX_IO_WORKSPACE_OPEN). */
typedef struct {
    int have_ui;             /* the folder had a workspace.txt (else: a `bosch search --out` run) */
    int cur_layer, cur_head; /* the cursor */
    int follow, edited;      /* the grid follows the search / the mask was edited */
    int n_undo;              /* undo masks kept by the worker (worker_workspace_undo copies them) */
    int have_search;         /* a search was loaded from DIR/state */
    int search_done;         /* ... and it has finished */
} ex_workspace;

/* Result of the latest file job. */
typedef struct {
    long seq; /* increments with each result; 0 = none yet */
    ex_io_kind kind;
    int ok;           /* 1: written / loaded */
    int path_refused; /* 0 when ok; 1: the path was refused before anything was read or written (a
                         directory, a folder that is not writable, no such file): ask again */
    char path[256];
    char msg[EX_LINE]; /* what to tell the user (summary, warning or error, naming the path) */
    long n_evals;      /* EX_IO_EXPORT_TRACE: evaluations written */
    ex_mask mask;      /* EX_IO_LOAD_MASK, EX_IO_COMPARE_MASK when ok: the mask read */
    int n_rows;        /* EX_IO_COMPARE_OPEN when ok: rows read (worker_compare_rows copies them) */
    double ratio;      /* EX_IO_COMPARE_OPEN when ok: the folder's ratio nearest the one asked for */
    int row;           /* EX_IO_COMPARE_MASK: the row whose mask was read */
    ex_workspace ws;   /* EX_IO_WORKSPACE_OPEN when ok */
} ex_io;

typedef struct {
    long seq; /* increments with each publish */
    ex_phase phase;
    int busy; /* the worker is running a job (held-out eval, ask, preparing) */
    char busy_what[EX_LINE];
    char status[EX_TEXT]; /* loading progress / error message */

    /* model */
    char model_name[128];
    char model_path[256];
    model_hparams hp;

    /* search (valid once phase >= EX_PREPARING) */
    int have_search;
    int granularity; /* search_granularity of the search: 0 heads, 1 whole layers */
    double target_ratio;
    char preset[16];
    char method[32]; /* the --method name it runs (bosch, a variant or a baseline) */
    int window, sinks;
    int calib_samples, calib_tokens; /* the search's calibration probes (the form scales the
                                        measured seconds per evaluation by their product) */
    ex_progress progress;            /* the plan and where the search is in it (progress.h): every title,
                                        counter, mark and explanation of the search comes from it */
    long n_evals;                    /* evaluations so far */
    long eval_budget;                /* planned total (the plan's; only shrinks) */
    double best_score;               /* best normalized score of the current sub-search */
    double full_raw, swa_raw;        /* S(all full), S(all SWA); NAN before measured */
    double last_score, last_accuracy, last_seconds;
    double s_best[EX_MAX_LAYERS];
    /* the heat map's per-KV-head scores (H): score k is the registry's k-th static head ranking in
       its table order (ex_heat_name: ablation = the single-head drop S_full - S(only this head SWA),
       fisher, locality, echo, then any row added), raw (higher = keep full), [k][layer*n_head_kv +
       kv_head], NAN where not measured yet; heat_src[k] says where it comes from (EX_HEAT_*):
       the search's own (search_head_ranking, live), else the attention view's rankings
       (worker_attn.c, computed on the worker when asked for) */
    float heat[EX_RANKS][EX_MAX_LAYERS * EX_MAX_KV];
    int heat_src[EX_RANKS];
    double delta[EX_MAX_LAYERS], weight[EX_MAX_LAYERS], ratio[EX_MAX_LAYERS]; /* NAN unknown */
    int bucket[EX_MAX_LAYERS], n_swa[EX_MAX_LAYERS];                          /* -1 unknown */
    int probed[EX_MAX_LAYERS];
    ex_mask last_mask;   /* last evaluated mask (n_layer 0 before the first) */
    ex_mask result_mask; /* committed / final mask */
    uint64_t result_hash;
    double hist[EX_HIST]; /* normalized scores, ring: index (i % EX_HIST) for i < hist_n */
    double hist_best[EX_HIST];
    uint8_t hist_noise[EX_HIST]; /* 1: that evaluation's drop from all full is within its noise
                                    (progress_within_noise) */
    long hist_n;

    /* event log, ring: line i at (i % EX_LOG) for i < log_n */
    char log[EX_LOG][EX_LINE];
    long log_n;

    ex_heldout heldout;
    ex_heldout heldout_servable; /* the servable projection (mask.h's mask_servable) of a mask, scored
                                    on the same probes; mask_hash is the projection's */
    ex_ask ask;
    ex_io io;
    ex_attn attn;
    ex_pin pin;
    ex_reply reply[UI_CMD_N_JOBS]; /* per job: its latest reply (jobs without a result type of their own) */
} ex_snapshot;

/* ex_mask <-> attn_mask (the ex_mask must fit EX_MAX_*; returns -1 otherwise). */
int ex_mask_from(ex_mask *dst, const attn_mask *src);
/* View an ex_mask as an attn_mask (no copy: out->z points into m). */
void ex_mask_view(ex_mask *m, attn_mask *out);
int ex_mask_count_swa(const ex_mask *m);
/* The static rankings of ex_attn: the method registry's head rankings (search_methods.h) in its
 * picker order, those without evaluations first (locality, echo, ablation, fisher), the order they
 * are computed in: how many (<= EX_RANKS), and the `bosch search --method` name of ranking k ("?"
 * out of range). */
int ex_n_ranks(void);
const char *ex_rank_name(int k);
/* Where a heat-map score comes from (ex_snapshot.heat_src). */
enum { EX_HEAT_NONE = 0, EX_HEAT_SEARCH = 1, EX_HEAT_RANKINGS = 2 };
/* The heat map's scores: the registry's static head rankings in its table order (the scores
 * export's columns: ablation, fisher, locality, echo, then any row added): how many (<= EX_RANKS),
 * the name of score k ("?" out of range), its index among ex_rank_name's (-1 out of range). */
int ex_n_heat(void);
const char *ex_heat_name(int k);
int ex_heat_rank(int k);

#endif
