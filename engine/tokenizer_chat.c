/* tokenizer_chat.c — the ChatML chat template (see tokenizer_chat_prompt in tokenizer.h).
 *
 * The GGUF's tokenizer.chat_template is a Jinja template. We do not run Jinja: we recognise the
 * ChatML family by its markers and read the default system prompt out of the template, i.e. the
 * first string literal that holds '<|im_start|>system\n' TEXT '<|im_end|>' whole (the quote
 * right before the marker, no unescaped quote inside TEXT; Jinja escapes in TEXT are undone).
 * SmolLM2's gives "You are a helpful AI assistant named SmolLM, trained by Hugging Face"; Qwen2.5
 * keeps its default in such a literal too. Templates without one give no default system message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "tokenizer_internal.h"

#define SYS_OPEN "<|im_start|>system"
#define IM_END "<|im_end|>"

/* Un-escape a Jinja string literal body s[0..n) (\n, \t, \\, \', \"); malloc'd. */
static char *unescape(const char *s, size_t n) {
    char *out = malloc(n + 1);
    if (!out) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            char c = s[++i];
            out[o++] = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c;
        } else {
            out[o++] = s[i];
        }
    }
    out[o] = 0;
    return out;
}

/* Default system prompt in the template, or NULL. Returns -1 when out of memory. */
static int parse_default_system(const char *tmpl, char **out) {
    *out = NULL;
    for (const char *p = strstr(tmpl, SYS_OPEN); p; p = strstr(p + 1, SYS_OPEN)) {
        char quote = p > tmpl ? p[-1] : 0; /* the literal must start right at the marker */
        if (quote != '\'' && quote != '"') continue;
        const char *q = p + strlen(SYS_OPEN);
        if (q[0] == '\n')
            q += 1;
        else if (q[0] == '\\' && q[1] == 'n')
            q += 2;
        else
            continue;
        const char *end = strstr(q, IM_END);
        if (!end || end == q) continue;
        /* TEXT must lie inside the same literal: no unescaped closing quote before <|im_end|>. */
        int inside = 1;
        for (const char *c = q; c < end && inside; c++) {
            if (*c == '\\' && c + 1 < end)
                c++;
            else if (*c == quote)
                inside = 0;
        }
        if (!inside) continue;
        *out = unescape(q, (size_t)(end - q));
        return *out ? 0 : -1;
    }
    return 0;
}

int tokenizer_chat_setup(struct tokenizer *t, const char *tmpl) {
    t->chat_chatml = 0;
    free(t->chat_default_system);
    t->chat_default_system = NULL;
    if (!tmpl) {
        snprintf(t->chat_problem, sizeof(t->chat_problem), "the file has no tokenizer.chat_template");
        return 0;
    }
    if (!strstr(tmpl, "<|im_start|>") || !strstr(tmpl, IM_END)) {
        snprintf(t->chat_problem, sizeof(t->chat_problem),
                 "tokenizer.chat_template is not ChatML (no <|im_start|>/<|im_end|>); "
                 "only ChatML is supported");
        return 0;
    }
    if (tokenizer_lookup_text(t, "<|im_start|>", strlen("<|im_start|>")) < 0 ||
        tokenizer_lookup_text(t, IM_END, strlen(IM_END)) < 0) {
        snprintf(t->chat_problem, sizeof(t->chat_problem),
                 "tokenizer.chat_template is ChatML but <|im_start|>/<|im_end|> are not tokens");
        return 0;
    }
    t->chat_chatml = 1;
    return parse_default_system(tmpl, &t->chat_default_system);
}

const char *tokenizer_chat_default_system(const tokenizer *t) {
    return t->chat_default_system;
}

int tokenizer_chat_prompt(const tokenizer *t, const char *system, const char *user, char **out, char *err,
                          size_t errlen) {
    *out = NULL;
    if (!t->chat_chatml) {
        if (err && errlen) snprintf(err, errlen, "tokenizer: chat prompt: %s", t->chat_problem);
        return -1;
    }
    if (!system) system = t->chat_default_system;
    static const char sys_fmt[] = "<|im_start|>system\n%s<|im_end|>\n";
    static const char user_fmt[] = "<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n";
    size_t n = strlen(user) + sizeof(user_fmt) + (system ? strlen(system) + sizeof(sys_fmt) : 0);
    char *s = malloc(n);
    if (!s) {
        if (err && errlen) snprintf(err, errlen, "tokenizer: chat prompt: out of memory");
        return -1;
    }
    size_t o = 0;
    if (system) o += (size_t)snprintf(s, n, sys_fmt, system);
    snprintf(s + o, n - o, user_fmt, user);
    *out = s;
    return 0;
}
