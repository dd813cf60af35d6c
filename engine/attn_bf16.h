/* attn_bf16.h — attention over a bf16 KV cache on the CPU: the kernels' instruction set, chosen
 * at run time, and the bf16 entry points (attention.h's attn_prefill and decode items call them
 * for ATTN_KV_BF16). Arithmetic: see attn_bf16.c (bf16 products, fp32 accumulation and softmax). */
#ifndef BOSCH_ATTN_BF16_H
#define BOSCH_ATTN_BF16_H

#include <stddef.h>
#include <stdint.h>

/* Instruction sets of the bf16 kernels, lowest first. */
typedef enum { ATTN_ISA_PORTABLE = 0, ATTN_ISA_AVX2 = 1, ATTN_ISA_AVX512_BF16 = 2 } attn_isa;

/* The best this CPU runs (CPUID, once): AVX-512 F/BW/VL with BF16, else AVX2 with FMA, else portable C. */
attn_isa attn_isa_best(void);
/* What the kernels use now: min(attn_isa_best(), the cap). */
attn_isa attn_isa_current(void);
/* Cap the instruction set (tests force the AVX2 path on an AVX-512 CPU); returns the previous
 * cap. Process-wide; set it while no attention runs. */
attn_isa attn_isa_limit(attn_isa max);
const char *attn_isa_name(attn_isa isa); /* "avx512-bf16", "avx2", "portable" */

/* dst[i] = src[i] rounded to bf16 (nearest even; NaN stays NaN), bit patterns. Parallel for
 * large n. */
void attn_round_bf16(const float *src, uint16_t *dst, size_t n);

/* Prefill over bf16 keys and values: as attn_prefill_hybrid (attention.h: shapes, visibility, GQA,
 * determinism) with k and v [n_tokens][n_head_kv*head_dim] bf16 bit patterns. q is fp32; it is
 * scaled by log2(e)/sqrt(head_dim) and rounded to bf16 per tile. head_dim must be even (else,
 * like an allocation failure, the outputs are NaN). */
void attn_prefill_bf16(const float *q, const uint16_t *k, const uint16_t *v, float *out, int n_tokens,
                       int n_head, int n_head_kv, int head_dim, const uint8_t *z_row, int window, int sinks);

/* One decode work item over slots [s0, s1) of one KV head (k, v: that head's [cap][head_dim]
 * bf16 cache): q holds the group's query heads [group][head_dim] (fp32); part receives, per query
 * head, the partial softmax state m, l, acc[head_dim] (attn_decode_merge's layout). At most 256
 * slots. Odd head_dim or out of memory: part is NaN. */
void attn_bf16_decode_chunk(const float *q, const uint16_t *k, const uint16_t *v, int s0, int s1, int group,
                            int head_dim, float *part);

#endif
