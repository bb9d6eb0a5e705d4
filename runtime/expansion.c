/* SPDX-License-Identifier: Apache-2.0 */
/* $(VAR) expansion (upstream third_party/forked/golang/expansion: Expand, MappingFuncFor). */
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/expansion.h"
#include "runtime/runtime_service.h"

/* A growing output buffer; fails sticky on ENOMEM. */
struct out {
        char *s;
        size_t n, cap;
        bool oom;
};

static void put(struct out *o, const char *p, size_t len)
{
        if (o->oom)
                return;
        if (o->n + len + 1 > o->cap) {
                size_t cap = (o->n + len + 1) * 2;
                char *s = realloc(o->s, cap);

                if (!s) {
                        o->oom = true;
                        return;
                }
                o->s = s;
                o->cap = cap;
        }
        memcpy(o->s + o->n, p, len);
        o->n += len;
        o->s[o->n] = '\0';
}

/* The value of the name @p name (@p len bytes): the last variable of that name, or NULL. */
static const char *lookup(const struct kc_label *vars, size_t n_vars, const char *name, size_t len)
{
        for (size_t i = n_vars; i > 0; i--) {
                const char *k = vars[i - 1].key;

                if (k && strlen(k) == len && memcmp(k, name, len) == 0)
                        return vars[i - 1].value ? vars[i - 1].value : "";
        }
        return NULL;
}

char *kc_expand(const char *input, const struct kc_label *vars, size_t n_vars)
{
        struct out o = { 0 };
        const char *p = input ? input : "", *close, *v;

        put(&o, "", 0);
        while (*p) {
                if (p[0] != '$' || p[1] == '\0') {
                        put(&o, p++, 1);
                        continue;
                }
                if (p[1] == '$') { /* escaped operator: one "$" */
                        put(&o, "$", 1);
                        p += 2;
                } else if (p[1] == '(' && (close = strchr(p + 2, ')'))) {
                        v = lookup(vars, n_vars, p + 2, (size_t)(close - p - 2));
                        if (v)
                                put(&o, v, strlen(v));
                        else /* unknown: the reference as written */
                                put(&o, p, (size_t)(close - p + 1));
                        p = close + 1;
                } else { /* "$(" unclosed, or "$" and another byte: both kept, read on after */
                        put(&o, p, 2);
                        p += 2;
                }
        }
        if (o.oom) {
                free(o.s);
                return NULL;
        }
        return o.s;
}
