/* search_io.c — save a search (config + evaluation log) and resume it by deterministic replay.
 *
 * File format (text, one item per line, UTF-8), version 2, a log:
 *   bosch-search-state 2
 *   method M               one "key value" line per config field: method ratio preset window sinks
 *   ratio R                seed stage1_budget stage3_budget restarts n_buckets delta_marginal
 *   ...                    stage1_k_spec stage2_ranks stage1_independent stage1_singles stage3_scope
 *   n_head_kv H            refine_budget granularity calib_samples calib_tokens calib_mix calib_tokens2
 *                          race accept_k
 *                          n_layer n_head_kv
 *   log                    (written in this order, read in any order; the header ends here)
 *   eval HASH SCORE ACCURACY NLL SECONDS N [NLL_1 .. NLL_N]     one line per evaluation, to the end
 * HASH = mask_hash in hex, doubles as %.17g (exact). The header (and the evaluations so far, on a
 * resume) is written once, atomically (PATH.tmp.<pid>.XXXXXX, fsync, rename); then search_append
 * adds one line per evaluation and flushes it to the kernel before the next one starts, so a kill -9
 * loses only the evaluation in flight. Reading: a last line without its newline (a write cut by a
 * kill) is dropped; any other malformed line, the middle ones included, is an error naming it.
 * Keys added later are optional when read, a missing one meaning the behaviour before it existed:
 * pin_full and pin_swa (the pinned heads, "L.H,L.H", search.h search_config.pins) are written only
 * when there are pins, and start ("30x3:" then a digit per KV head, 1 full, 0 SWA: the mask the
 * search starts from, search_config.start_*) only with a start mask, before "log"; a file without
 * them has none. confirm_samples and confirm_tokens2 (the confirmation split, search.h) are written
 * only when confirm_samples > 0; a file without them has no confirmation.
 * granularity (head or layer, search.h) was added to version 2 without a version bump, so files
 * written before it load as head granularity (race, accept_k and calib_tokens2 likewise: racing
 * off, any strict improvement accepted, one calibration length); a program older than the key refuses a file
 * that has it ("unknown key 'granularity'") instead of running a layer search as a head search. Version 1
 * (read only; written before the log): the same header with "n_evals E" as its last line instead of "log",
 * then exactly E eval lines. Parsing: search_state.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infile.h"
#include "outpath.h"
#include "search_internal.h"
#include "tmpfiles.h"

static void write_header(FILE *f, const search_state *st) {
    const search_config *c = &st->cfg;
    fprintf(f,
            "bosch-search-state 2\nmethod %s\nratio %.17g\npreset %s\nwindow %d\nsinks %d\n"
            "seed %" PRIu64 "\nstage1_budget %ld\nstage3_budget %ld\nrestarts %d\nn_buckets %d\n"
            "delta_marginal %d\nstage1_k_spec %d\nstage2_ranks %d\nstage1_independent %d\n"
            "stage1_singles %d\nstage3_scope %d\nrefine_budget %ld\ngranularity %s\n"
            "calib_samples %d\ncalib_tokens %d\ncalib_mix %d\ncalib_tokens2 %d\nrace %d\naccept_k %.17g\n"
            "n_layer %d\nn_head_kv %d\n",
            search_method_name(c->method), c->ratio, c->preset[0] ? c->preset : "-", c->window, c->sinks,
            c->seed, c->stage1_budget_per_layer, c->stage3_budget_per_group, c->restarts, c->n_buckets,
            c->delta_marginal, c->stage1_k_spec, c->stage2_ranks, c->stage1_independent, c->stage1_singles,
            c->stage3_scope, c->refine_budget, search_granularity_name(c->granularity), c->calib_samples,
            c->calib_tokens, c->calib_mix, c->calib_tokens2, c->race, c->accept_k, st->L, st->H);
    /* the pinned heads, when there are any (search.h: an older program refuses the key rather than
     * resume the search without them) */
    char list[SEARCH_PINS_MAX * 12];
    for (int swa = 0; swa <= 1; swa++)
        if (search_pins_format(c, swa, list, sizeof list)[0])
            fprintf(f, "%s %s\n", swa ? "pin_swa" : "pin_full", list);
    if (c->confirm_samples > 0) /* the confirmation (search.h): only then, so older files stay as they were */
        fprintf(f, "confirm_samples %d\nconfirm_tokens2 %d\n", c->confirm_samples, c->confirm_tokens2);
    if (c->start_layers > 0) { /* the start mask: LAYERSxHEADS: then z per KV head, 1 full, 0 SWA */
        fprintf(f, "start %dx%d:", c->start_layers, c->start_heads);
        for (int l = 0; l < c->start_layers; l++)
            for (int h = 0; h < c->start_heads; h++) fputc(search_start_swa(c, l, h) ? '0' : '1', f);
        fputc('\n', f);
    }
    fputs("log\n", f);
}

static void write_entry(FILE *f, const search_log_entry *e) {
    fprintf(f, "eval %016" PRIx64 " %.17g %.17g %.17g %.17g %d", e->hash, e->score, e->accuracy, e->nll,
            e->seconds, e->n_samples);
    for (int s = 0; s < e->n_samples; s++) fprintf(f, " %.17g", e->sample_nll[s]);
    fputc('\n', f);
}

int search_save(const search_state *st, const char *path, char *err, size_t errlen) {
    outpath o; /* a symlink is followed, a device or FIFO refused (outpath.h) */
    if (outpath_resolve(path, &o, err, errlen)) return -1;
    if (o.stream) {
        snprintf(err, errlen, "%s: the search state must be a file", path);
        return -1;
    }
    tmpfile_remove_stale(o.target);
    char *tmp = tmpfile_template(o.target);
    if (!tmp) {
        snprintf(err, errlen, "%s: out of memory", path);
        outpath_free(&o);
        return -1;
    }
    int fd = mkstemp(tmp);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot write %s: %s", path, tmp, strerror(errno));
        if (fd >= 0) close(fd), unlink(tmp);
        free(tmp);
        outpath_free(&o);
        return -1;
    }
    mode_t um = umask(0); /* mkstemp makes the file 0600; give it fopen's mode */
    umask(um);
    (void)fchmod(fd, 0666 & ~um);
    write_header(f, st);
    for (long i = 0; i < st->n_log; i++) write_entry(f, &st->log[i]);
    int bad = ferror(f);
    bad |= fflush(f) != 0;
    bad |= fsync(fd) != 0;
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, o.target)) {
        snprintf(err, errlen, "%s: write failed: %s", path, strerror(errno));
        unlink(tmp);
        free(tmp);
        outpath_free(&o);
        return -1;
    }
    free(tmp);
    outpath_free(&o);
    return 0;
}

/* write(2) all of buf[0..n) to fd: the bytes written (n, or fewer with errno set). */
static size_t write_all(int fd, const char *buf, size_t n) {
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, buf + done, n - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) {
            if (k == 0) errno = EIO;
            break;
        }
        done += (size_t)k;
    }
    return done;
}

int search_append(const search_state *st, const char *path, long *n_written, char *err, size_t errlen) {
    if (*n_written >= st->n_log) return 0;
    char *buf = NULL;
    size_t n = 0;
    FILE *mem = open_memstream(&buf, &n);
    long n_new = st->n_log - *n_written;
    size_t *end = malloc(sizeof *end * (size_t)n_new); /* where each new line ends in buf */
    if (!mem || !end) {
        if (mem) fclose(mem);
        free(buf);
        free(end);
        snprintf(err, errlen, "%s: append failed: out of memory", path);
        return -1;
    }
    for (long i = 0; i < n_new; i++) {
        write_entry(mem, &st->log[*n_written + i]);
        fflush(mem);
        end[i] = n;
    }
    fclose(mem);
    int rc = -1;
    struct stat sb;
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot append: %s", path, strerror(errno));
    } else if (fstat(fd, &sb) != 0) {
        snprintf(err, errlen, "%s: cannot append: %s", path, strerror(errno));
        close(fd);
    } else {
        size_t done = write_all(fd, buf, n);
        int e = errno;
        if (close(fd) != 0 && done == n) done = 0, e = errno; /* a late error (NFS): nothing is sure */
        long whole = 0;
        while (whole < n_new && end[whole] <= done) whole++;
        if (done == n) {
            rc = 0;
        } else {
            /* keep only whole lines: cut what the failed write left of the next one */
            off_t keep = sb.st_size + (off_t)(whole ? end[whole - 1] : 0);
            int cut = truncate(path, keep) == 0; /* if not, the reader drops the cut last line */
            (void)cut;
            snprintf(err, errlen, "%s: append failed: %s", path, strerror(e));
        }
        *n_written += whole;
    }
    free(end);
    free(buf);
    return rc;
}

/* Parse path (search_state_parse). 0 or -1 with a message. */
static int parse_path(const char *path, search_state_file *sf, char *err, size_t errlen) {
    FILE *f = infile_fopen(path, err, errlen); /* a FIFO is refused, not waited on */
    if (!f) return -1;
    int rc = search_state_parse(f, path, sf, err, errlen);
    fclose(f);
    return rc;
}

int search_load_config(const char *path, search_config *cfg, char *err, size_t errlen) {
    search_state_file sf;
    if (parse_path(path, &sf, err, errlen)) return -1;
    *cfg = sf.cfg;
    search_state_file_free(&sf);
    return 0;
}

/* Restore the objective's prefix-reuse base (the last mask scored with make_base) and check that
 * the objective still gives that mask its logged score, bit for bit: a different program version,
 * model or calibration split would otherwise continue the search on different numbers. */
static int verify_objective(search_state *st, const char *path, char *err, size_t errlen) {
    uint64_t h = mask_hash(&st->base);
    long i = st->n_log - 1;
    while (i >= 0 && st->log[i].hash != h) i--;
    search_eval e;
    if (st->obj->score(st->obj->ctx, &st->base, 1, &e, err, errlen)) return -1;
    if (i >= 0 && e.score != st->log[i].score) {
        snprintf(err, errlen,
                 "%s: the objective changed since the state was saved (evaluation %ld scored %.17g, "
                 "now %.17g): different program version, model or calibration data",
                 path, i + 1, st->log[i].score, e.score);
        return -1;
    }
    return 0;
}

int search_load(search_state **out, const char *path, int n_layer, int n_head_kv, const search_objective *obj,
                const model *m, search_listener listener, void *user, char *err, size_t errlen) {
    *out = NULL;
    search_state_file sf;
    if (parse_path(path, &sf, err, errlen)) return -1;
    if (sf.n_layer != n_layer || sf.n_head_kv != n_head_kv) {
        snprintf(err, errlen, "%s: mask shape is %d layers x %d KV heads, model has %d x %d", path,
                 sf.n_layer, sf.n_head_kv, n_layer, n_head_kv);
        search_state_file_free(&sf);
        return -1;
    }
    search_config c = sf.cfg;
    search_log_entry *log = sf.log;
    long n_evals = sf.n_log;
    search_state *st = NULL;
    if (search_create(&st, &c, n_layer, n_head_kv, obj, m, listener, user, err, errlen)) {
        search_log_free(log, n_evals);
        return -1;
    }
    st->replay = log;
    st->n_replay = n_evals;
    while (st->replay_pos < st->n_replay) {
        int r = search_step(st, err, errlen);
        if (r < 0 || (r == 1 && st->replay_pos < st->n_replay)) {
            if (r == 1)
                snprintf(err, errlen, "%s: the search ended after %ld of %ld saved evaluations", path,
                         st->replay_pos, st->n_replay);
            search_free(st);
            return -1;
        }
    }
    st->replaying = 0;
    if (st->have_base && verify_objective(st, path, err, errlen)) {
        search_free(st);
        return -1;
    }
    *out = st;
    return 0;
}
