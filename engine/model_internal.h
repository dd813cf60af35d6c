/* model_internal.h — model.c's helpers in model_views.c (not part of the engine's interface). */
#ifndef BOSCH_MODEL_INTERNAL_H
#define BOSCH_MODEL_INTERNAL_H

#include "model.h"

/* Fill every model_qmat from the mapped file. 0, or -1 when some matrix's type has no dot product
 * here (decode then uses the GEMM weights). */
int model_map_blocks(model *m);
/* Create m->gemm in `prec` and every gemm_weight from the fp32 weights. 0 or -1 with a message. */
int model_prepare_gemm(model *m, gemm_precision prec, char *err, size_t errlen);
/* Free what the two functions above made (safe on a partly prepared model). */
void model_free_views(model *m);

#endif
