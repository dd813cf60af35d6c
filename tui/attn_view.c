/* attn_view.c — the attention view's pure parts (attn_view.h). */
#include "attn_view.h"

#include <math.h>

void attn_strip_resample(const double *in, int n_in, double *out, int n_out) {
    for (int b = 0; b < n_out; b++) out[b] = 0;
    const double scale = (double)n_out / n_in; /* bin units per element */
    for (int i = 0; i < n_in; i++) {
        double lo = i * scale, hi = (i + 1) * scale; /* the element in bin units */
        int b = (int)floor(lo);
        while (b < n_out && b < hi) {
            double a = lo > b ? lo : b, z = hi < b + 1 ? hi : b + 1;
            if (z > a) out[b] += in[i] * (z - a) / scale;
            b++;
        }
    }
}

int attn_strip_level(double mass, double max) {
    if (!(max > 0) || !(mass > max / 1000)) return 0;
    int l = 1 + (int)floor((ATTN_LEVELS - 1) * (1 + log10(mass / max) / 3));
    return l < 1 ? 1 : l > ATTN_LEVELS - 1 ? ATTN_LEVELS - 1 : l;
}

int attn_strip_col(int pos, int n_tokens, int n_cols) {
    if (n_tokens <= 0 || pos <= 0) return 0;
    long c = (long)pos * n_cols / n_tokens;
    return c >= n_cols ? n_cols - 1 : (int)c;
}

int attn_visible(int j, int i, int window, int sinks) {
    return j <= i && (j > i - window || j < sinks);
}

double attn_window_mass(const float *p, int i, int window, int sinks) {
    double in = 0;
    for (int j = 0; j <= i; j++)
        if (attn_visible(j, i, window, sinks)) in += p[j];
    return in;
}

double attn_span_mass(const float *p, int i, int pos, int len) {
    double s = 0;
    for (int j = pos < 0 ? 0 : pos; j < pos + len && j <= i; j++) s += p[j];
    return s;
}

double attn_restrict_window(float *p, int i, int window, int sinks) {
    double in = attn_window_mass(p, i, window, sinks);
    for (int j = 0; j <= i; j++)
        p[j] = in > 0 && attn_visible(j, i, window, sinks) ? (float)(p[j] / in) : 0.0f;
    return in;
}

int attn_rank(const double *imp, int n, int u) {
    int r = 1;
    for (int v = 0; v < n; v++) r += imp[v] > imp[u] || (imp[v] == imp[u] && v > u);
    return r;
}
