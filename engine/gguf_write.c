/* gguf_write.c — random-weight GGUF writer (see gguf_write.h). Layout of the file (GGUF v3):
 * header (magic, version, tensor count, key count), key/values, tensor infos, padding to the
 * alignment (32), then each tensor's data at an offset that is a multiple of 32. */
#include "gguf_write.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "gguf.h"
#include "quant.h"
#include "unicode.h"
#include "err.h"
#include "rng.h"

#define MK_ALIGN 32
#define MK_SPECIALS 3 /* <|endoftext|>, <|im_start|>, <|im_end|> */

static const char *const SPECIALS[MK_SPECIALS] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
static const char CHAT_TEMPLATE[] =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% "
    "endif %}";

int mkmodel_preset(const char *name, mkmodel_shape *out) {
    static const mkmodel_shape smollm2 = {
        30, 576, 9, 3, 1536, 49152, 8192, 100000.0f, 1e-5f, GGML_TYPE_Q4_1, 0.02f, 1, "llama"};
    static const mkmodel_shape tiny = {2,     128, 4,      2, 256, 512, 2048, 10000.0f, 1e-5f, GGML_TYPE_Q4_1,
                                       0.02f, 1,   "llama"};
    if (!strcmp(name, "smollm2"))
        *out = smollm2;
    else if (!strcmp(name, "tiny"))
        *out = tiny;
    else
        return -1;
    return 0;
}

/* ---- buffered little-endian writer (x86/ARM hosts are little-endian, as GGUF is) ---- */

typedef struct {
    FILE *f;
    int bad;
    uint64_t n_kv;
} writer;

static void w_bytes(writer *w, const void *p, size_t n) {
    if (!w->bad && n && fwrite(p, 1, n, w->f) != n) w->bad = 1;
}
static void w_u32(writer *w, uint32_t v) {
    w_bytes(w, &v, 4);
}
static void w_u64(writer *w, uint64_t v) {
    w_bytes(w, &v, 8);
}
static void w_str(writer *w, const char *s, size_t n) {
    w_u64(w, n);
    w_bytes(w, s, n);
}
static void w_key(writer *w, const char *key, uint32_t type) {
    w_str(w, key, strlen(key));
    w_u32(w, type);
    w->n_kv++;
}
static void kv_str(writer *w, const char *key, const char *v) {
    w_key(w, key, GGUF_TYPE_STRING);
    w_str(w, v, strlen(v));
}
static void kv_u32(writer *w, const char *key, uint32_t v) {
    w_key(w, key, GGUF_TYPE_UINT32);
    w_u32(w, v);
}
static void kv_f32(writer *w, const char *key, float v) {
    w_key(w, key, GGUF_TYPE_FLOAT32);
    w_bytes(w, &v, 4);
}
static void kv_array(writer *w, const char *key, uint32_t elem_type, uint64_t n) {
    w_key(w, key, GGUF_TYPE_ARRAY);
    w_u32(w, elem_type);
    w_u64(w, n);
}
static void w_pad(writer *w, uint64_t *pos) {
    static const uint8_t zeros[MK_ALIGN];
    uint64_t pad = (MK_ALIGN - *pos % MK_ALIGN) % MK_ALIGN;
    w_bytes(w, zeros, pad);
    *pos += pad;
}

/* ---- tokenizer ---- */

/* Text of token id (mkmodel.h): UTF-8 into buf[16]; returns its length. */
static size_t token_text(int id, char *buf) {
    if (id < MK_SPECIALS) {
        size_t n = strlen(SPECIALS[id]);
        memcpy(buf, SPECIALS[id], n);
        return n;
    }
    id -= MK_SPECIALS;
    if (id < 256) return unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)id), buf);
    id -= 256;
    size_t n = unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)(id / 256)), buf);
    return n + unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)(id % 256)), buf + n);
}

static void write_tokenizer(writer *w, int n_vocab) {
    char buf[16];
    int n_pairs = n_vocab - MK_SPECIALS - 256;
    kv_str(w, "tokenizer.ggml.model", "gpt2");
    kv_str(w, "tokenizer.ggml.pre", "smollm");
    kv_array(w, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, (uint64_t)n_vocab);
    for (int id = 0; id < n_vocab; id++) w_str(w, buf, token_text(id, buf));
    kv_array(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, (uint64_t)n_vocab);
    for (int id = 0; id < n_vocab; id++) w_u32(w, id < MK_SPECIALS ? 3u : 1u); /* control / normal */
    kv_array(w, "tokenizer.ggml.merges", GGUF_TYPE_STRING, (uint64_t)n_pairs);
    for (int p = 0; p < n_pairs; p++) {
        size_t n = unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)(p / 256)), buf);
        buf[n++] = ' ';
        n += unicode_utf8_encode(unicode_byte_to_cpt((uint8_t)(p % 256)), buf + n);
        w_str(w, buf, n);
    }
    kv_u32(w, "tokenizer.ggml.bos_token_id", 1);
    kv_u32(w, "tokenizer.ggml.eos_token_id", 0);
    kv_str(w, "tokenizer.chat_template", CHAT_TEMPLATE);
}

/* ---- hyper-parameters ---- */

static void write_hparams(writer *w, const mkmodel_shape *s, const model_arch *a) {
    char key[128], name[96];
    snprintf(name, sizeof name, "bosch-random-%s", a->name);
    kv_str(w, "general.architecture", a->name);
    kv_str(w, "general.name", name);
    const arch_key ku[] = {ARCH_KEY_BLOCK_COUNT,          ARCH_KEY_CONTEXT_LENGTH, ARCH_KEY_EMBEDDING_LENGTH,
                           ARCH_KEY_FEED_FORWARD_LENGTH,  ARCH_KEY_HEAD_COUNT,     ARCH_KEY_HEAD_COUNT_KV,
                           ARCH_KEY_ROPE_DIMENSION_COUNT, ARCH_KEY_VOCAB_SIZE};
    const int vu[] = {
        s->n_layer, s->n_ctx, s->n_embd, s->n_ff, s->n_head, s->n_head_kv, s->n_embd / s->n_head, s->n_vocab};
    for (size_t i = 0; i < sizeof ku / sizeof ku[0]; i++)
        kv_u32(w, arch_key_name(a, ku[i], key, sizeof key), (uint32_t)vu[i]);
    kv_f32(w, arch_key_name(a, ARCH_KEY_ROPE_FREQ_BASE, key, sizeof key), s->rope_base);
    kv_f32(w, arch_key_name(a, ARCH_KEY_RMS_EPS, key, sizeof key), s->rms_eps);
}

/* ---- tensors ---- */

typedef struct {
    char name[64];
    uint64_t ne0, ne1; /* row length, rows (ne1 = 1 for a vector) */
    uint32_t type;
    int is_norm;
    uint64_t offset, bytes;
} mk_tensor;

/* The tensors `a` requires (arch.h), in arch_tensor order: the model's, then each layer's. */
static int plan_tensors(const mkmodel_shape *s, const model_arch *a, mk_tensor *t) {
    int n = 0;
    arch_dims d = {s->n_embd, s->n_ff, s->n_vocab, s->n_head, s->n_head_kv, s->n_embd / s->n_head};
    uint32_t wt = s->wtype, et = s->wtype == GGML_TYPE_Q4_1 ? GGML_TYPE_Q8_0 : GGML_TYPE_F16;
    for (int l = -1; l < s->n_layer; l++) /* l = -1: the model's own tensors */
        for (int k = l < 0 ? 0 : ARCH_T_FIRST_LAYER; k < (l < 0 ? ARCH_T_FIRST_LAYER : ARCH_T_COUNT); k++) {
            if (arch_tensor_use(a, (arch_tensor)k) != ARCH_USE_REQUIRED) continue;
            uint64_t ne[2];
            arch_tensor_shape(&d, (arch_tensor)k, ne);
            int norm = ne[1] == 1;
            t[n] = (mk_tensor){"",   ne[0], ne[1], norm ? GGML_TYPE_F32 : k == ARCH_T_TOKEN_EMBD ? et : wt,
                               norm, 0,     0};
            arch_tensor_name(a, (arch_tensor)k, l, t[n].name, sizeof t[n].name);
            n++;
        }
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        t[i].offset = off;
        t[i].bytes = quant_row_bytes(t[i].type, t[i].ne0) * t[i].ne1;
        off += (t[i].bytes + MK_ALIGN - 1) / MK_ALIGN * MK_ALIGN;
    }
    return n;
}

static float uniform(uint64_t *s) { /* [-1, 1) */
    return (float)((double)(rng_splitmix64(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* Q8_0 (quant.h): per 32 values d = max|x| / 127, q = round(x / d). */
static void quantize_q8_0(const float *x, uint64_t n, uint8_t *out) {
    for (uint64_t b = 0; b < n / 32; b++, x += 32, out += 34) {
        float amax = 0;
        for (int j = 0; j < 32; j++) amax = fmaxf(amax, fabsf(x[j]));
        float d = amax / 127.0f, id = d > 0 ? 1.0f / d : 0.0f;
        uint16_t dh = quant_fp32_to_fp16(d);
        memcpy(out, &dh, 2);
        for (int j = 0; j < 32; j++) out[2 + j] = (uint8_t)(int8_t)lrintf(x[j] * id);
    }
}

/* Q4_1 (quant.h): per 32 values m = min, d = (max - min) / 15, q = round((x - m) / d) in 0..15;
 * element j < 16 in the low nibble of byte j, element j + 16 in its high nibble. */
static void quantize_q4_1(const float *x, uint64_t n, uint8_t *out) {
    for (uint64_t b = 0; b < n / 32; b++, x += 32, out += 20) {
        float lo = x[0], hi = x[0];
        for (int j = 1; j < 32; j++) lo = fminf(lo, x[j]), hi = fmaxf(hi, x[j]);
        float d = (hi - lo) / 15.0f, id = d > 0 ? 1.0f / d : 0.0f;
        uint16_t dh = quant_fp32_to_fp16(d), mh = quant_fp32_to_fp16(lo);
        memcpy(out, &dh, 2);
        memcpy(out + 2, &mh, 2);
        for (int j = 0; j < 16; j++) {
            long q0 = lrintf((x[j] - lo) * id), q1 = lrintf((x[j + 16] - lo) * id);
            q0 = q0 < 0 ? 0 : q0 > 15 ? 15 : q0;
            q1 = q1 < 0 ? 0 : q1 > 15 ? 15 : q1;
            out[4 + j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

static int write_tensor_data(writer *w, const mkmodel_shape *s, const mk_tensor *t, int index, float *row,
                             uint8_t *qrow) {
    uint64_t rng = s->seed * 0x2545F4914F6CDD1Dull + (uint64_t)index;
    float a = s->std * sqrtf(3.0f);
    for (uint64_t r = 0; r < t->ne1; r++) {
        for (uint64_t c = 0; c < t->ne0; c++)
            row[c] = t->is_norm ? 1.0f + 0.1f * uniform(&rng) : a * uniform(&rng);
        switch (t->type) {
        case GGML_TYPE_F32:
            w_bytes(w, row, 4 * t->ne0);
            break;
        case GGML_TYPE_F16:
            for (uint64_t c = 0; c < t->ne0; c++) ((uint16_t *)qrow)[c] = quant_fp32_to_fp16(row[c]);
            w_bytes(w, qrow, 2 * t->ne0);
            break;
        case GGML_TYPE_Q8_0:
            quantize_q8_0(row, t->ne0, qrow), w_bytes(w, qrow, quant_row_bytes(t->type, t->ne0));
            break;
        default:
            quantize_q4_1(row, t->ne0, qrow), w_bytes(w, qrow, quant_row_bytes(t->type, t->ne0));
            break;
        }
    }
    return w->bad ? -1 : 0;
}

static int check_shape(const mkmodel_shape *s, char *err, size_t errlen) {
    const char *bad = NULL;
    if (s->n_layer < 1 || s->n_layer > 4096)
        bad = "n_layer (1..4096)";
    else if (s->n_head < 1 || s->n_head_kv < 1 || s->n_head % s->n_head_kv)
        bad = "n_head / n_head_kv";
    else if (s->n_embd < 32 || s->n_embd % 32 || s->n_embd % s->n_head || (s->n_embd / s->n_head) % 2)
        bad = "n_embd (a multiple of 32 and of n_head, even head_dim)";
    else if (s->n_ff < 32 || s->n_ff % 32)
        bad = "n_ff (a multiple of 32)";
    else if (s->n_vocab < MK_SPECIALS + 256 || s->n_vocab > MK_SPECIALS + 256 + 65536)
        bad = "n_vocab (259..65795)";
    else if (s->wtype != GGML_TYPE_F16 && s->wtype != GGML_TYPE_Q4_1)
        bad = "weight type (F16 or Q4_1)";
    else if (!(s->std > 0) || s->n_ctx < 1 || !(s->rope_base > 0) || !(s->rms_eps > 0))
        bad = "std / n_ctx / rope / eps";
    if (bad) base_seterr(err, errlen, "mkmodel: bad %s", bad);
    if (!bad && !arch_find(s->arch ? s->arch : "llama")) {
        char names[256];
        base_seterr(err, errlen, "mkmodel: unknown architecture '%s' (registered: %s)", s->arch,
                    arch_names(names, sizeof names));
        return -1;
    }
    return bad ? -1 : 0;
}

int mkmodel_write(const char *path, const mkmodel_shape *s, char *err, size_t errlen) {
    if (check_shape(s, err, errlen)) return -1;
    const model_arch *a = arch_find(s->arch ? s->arch : "llama");
    mk_tensor *t = malloc(sizeof(mk_tensor) * ARCH_T_COUNT * (1 + (size_t)s->n_layer));
    size_t widest = (size_t)(s->n_ff > s->n_embd ? s->n_ff : s->n_embd);
    float *row = malloc(sizeof(float) * widest);
    uint8_t *qrow = malloc(4 * widest);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    writer w = {fopen(tmp, "wb"), 0, 0};
    int rc = -1;
    if (!t || !row || !qrow) {
        base_seterr(err, errlen, "mkmodel: out of memory");
        goto done;
    }
    if (!w.f) {
        base_seterr(err, errlen, "mkmodel: %s: %s", tmp, strerror(errno));
        goto done;
    }
    int n_t = plan_tensors(s, a, t);
    w_bytes(&w, "GGUF", 4);
    w_u32(&w, 3);
    w_u64(&w, (uint64_t)n_t);
    w_u64(&w, 0); /* key count, patched below */
    write_hparams(&w, s, a);
    write_tokenizer(&w, s->n_vocab);
    for (int i = 0; i < n_t; i++) {
        w_str(&w, t[i].name, strlen(t[i].name));
        w_u32(&w, t[i].ne1 == 1 ? 1 : 2);
        w_u64(&w, t[i].ne0);
        if (t[i].ne1 != 1) w_u64(&w, t[i].ne1);
        w_u32(&w, t[i].type);
        w_u64(&w, t[i].offset);
    }
    long info_end = ftell(w.f);
    uint64_t pos = info_end < 0 ? 0 : (uint64_t)info_end;
    w_pad(&w, &pos);
    for (int i = 0; i < n_t && !w.bad; i++) {
        if (write_tensor_data(&w, s, &t[i], i, row, qrow)) break;
        pos += t[i].bytes;
        w_pad(&w, &pos);
    }
    if (!w.bad && (fseek(w.f, 16, SEEK_SET) != 0 || fwrite(&w.n_kv, 8, 1, w.f) != 1)) w.bad = 1;
    if (info_end < 0 || w.bad) {
        base_seterr(err, errlen, "mkmodel: %s: write failed: %s", tmp, strerror(errno));
        goto done;
    }
    int closed = fclose(w.f);
    w.f = NULL;
    if (closed != 0 || rename(tmp, path) != 0) {
        base_seterr(err, errlen, "mkmodel: %s: %s", path, strerror(errno));
        goto done;
    }
    rc = 0;
done:
    if (w.f) fclose(w.f);
    if (rc) remove(tmp);
    free(t);
    free(row);
    free(qrow);
    return rc;
}
