/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The value types of a v1 Container: quantities and resource lists, env,
 * ports, lifecycle handlers and probes, validated as upstream's
 * ValidatePodCreate does (pkg/apis/core/validation) and defaulted as the v1
 * defaulting functions do (pkg/apis/core/v1/defaults.go).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "manifest_internal.h"

/* ------------------------------------------------------------------------ */
/* Quantities                                                                 */

struct suffix {
        const char *s;
        int base; /* 2 or 10 */
        int exp;
};

/* resource.Quantity's suffixes: binary SI, then decimal SI. */
static const struct suffix suffixes[] = {
        { "Ki", 2, 10 }, { "Mi", 2, 20 }, { "Gi", 2, 30 }, { "Ti", 2, 40 },
        { "Pi", 2, 50 }, { "Ei", 2, 60 }, { "n", 10, -9 }, { "u", 10, -6 },
        { "m", 10, -3 }, { "", 10, 0 },   { "k", 10, 3 },  { "M", 10, 6 },
        { "G", 10, 9 },  { "T", 10, 12 }, { "P", 10, 15 }, { "E", 10, 18 },
};

/* Parses the suffix at @p s into a power of 2 and of 10. */
static int parse_suffix(const char *s, int *exp2, int *exp10)
{
        size_t i;

        if ((s[0] == 'e' || s[0] == 'E') && s[1]) {
                const char *q = s + 1;
                int sign = 1, v = 0;

                if (*q == '+' || *q == '-')
                        sign = *q++ == '-' ? -1 : 1;
                if (!*q)
                        return -EINVAL;
                for (; *q; q++) {
                        if (*q < '0' || *q > '9' || v > 1000)
                                return -EINVAL;
                        v = v * 10 + (*q - '0');
                }
                *exp10 = sign * v;
                return 0;
        }
        for (i = 0; i < KC_ELEMENTSOF(suffixes); i++)
                if (strcmp(s, suffixes[i].s) == 0) {
                        if (suffixes[i].base == 2)
                                *exp2 = suffixes[i].exp;
                        else
                                *exp10 = suffixes[i].exp;
                        return 0;
                }
        return -EINVAL;
}

#define MILLI_MAX ((unsigned __int128)INT64_MAX)

int kc__mf_parse_quantity(const char *s, int64_t *ret_milli)
{
        unsigned __int128 v = 0;
        int exp2 = 0, exp10 = 0, frac = 0, sig = 0, scale;
        bool neg = false, any = false, saturated = false;
        const char *q = s;

        if (*q == '+' || *q == '-')
                neg = *q++ == '-';
        for (; (*q >= '0' && *q <= '9') || *q == '.'; q++) {
                if (*q == '.') {
                        if (frac > 0 || q[1] == '.')
                                return -EINVAL;
                        frac = -1; /* counting from the next digit */
                        continue;
                }
                any = true;
                if (frac != 0)
                        frac = frac < 0 ? 1 : frac + 1;
                if (v == 0 && *q == '0')
                        continue;
                if (++sig > 30)
                        return -EINVAL; /* more precision than a Quantity keeps */
                v = v * 10 + (unsigned)(*q - '0');
        }
        if (!any || parse_suffix(q, &exp2, &exp10) < 0)
                return -EINVAL;
        frac = frac < 0 ? 0 : frac;
        /* v * 2^exp2 * 10^(exp10 + 3 - frac), rounded up */
        scale = exp10 + 3 - frac;
        for (; exp2 > 0 && !saturated; exp2--)
                saturated = (v <<= 1) > MILLI_MAX;
        for (; scale > 0 && !saturated && v; scale--)
                saturated = (v *= 10) > MILLI_MAX;
        if (scale < 0 && !saturated) {
                bool rem = false;

                for (; scale < 0 && v; scale++) {
                        rem = rem || v % 10;
                        v /= 10;
                }
                if (rem || (scale < 0 && v == 0 && sig > 0))
                        v++;
        }
        if (saturated || v > MILLI_MAX)
                v = MILLI_MAX;
        *ret_milli = neg ? -(int64_t)v : (int64_t)v;
        return 0;
}

int kc__mf_get_quantity(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                        struct kc_api_quantity *ret)
{
        char q[300];
        int64_t milli;

        if (kc__mf_is_null(n))
                return 0;
        if (n->type != NODE_SCALAR || kc__mf_plain_bool(n) >= 0 || strlen(n->value) != n->len)
                return kc__mf_fail_path(c, p, "must be a quantity");
        if (kc__mf_parse_quantity(n->value, &milli) < 0)
                return kc__mf_fail_path(c, p,
                                        "invalid value %s: quantities must match the regular "
                                        "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                                        kc__mf_quote(q, n->value, n->len));
        *ret = (struct kc_api_quantity){ n->value, milli };
        return 0;
}

/* "cpu", "memory", "ephemeral-storage", "hugepages-<size>" or a qualified extended name. */
static bool is_resource_name(const char *s)
{
        const char *slash = strchr(s, '/');
        int64_t m;

        if (!strcmp(s, "cpu") || !strcmp(s, "memory") || !strcmp(s, "ephemeral-storage"))
                return true;
        if (!strncmp(s, "hugepages-", 10))
                return kc__mf_parse_quantity(s + 10, &m) == 0 && m > 0;
        /* extended resources: <domain>/<name>, and not in the kubernetes.io domain */
        return slash && slash > s && slash[1] && !strstr(s, "kubernetes.io/") &&
               !strchr(slash + 1, '/');
}

static int resource_cmp(const void *a, const void *b)
{
        return strcmp(((const struct kc_api_resource *)a)->name,
                      ((const struct kc_api_resource *)b)->name);
}

static int parse_resource_list(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                               struct kc_api_resource **ret, size_t *ret_n)
{
        struct kc_api_resource *v;
        char q[300];
        size_t i;
        int r;

        if (kc__mf_is_null(n))
                return 0;
        if (kc__mf_want_map(c, p, n) < 0 || kc__mf_no_merge_keys(c, p, n) < 0)
                return -EBADMSG;
        if (n->n == 0)
                return 0;
        v = kc__mf_alloc(c, n->n / 2, sizeof(*v));
        if (!v)
                return -ENOMEM;
        for (i = 0; i < n->n / 2; i++) {
                const struct mf_node *k = n->kids[2 * i];
                struct mf_path kp = { .up = p, .key = k->value };

                if (k->type != NODE_SCALAR || strlen(k->value) != k->len ||
                    !is_resource_name(k->value))
                        return kc__mf_fail_path(c, &kp,
                                                "invalid resource name %s: must be a standard "
                                                "resource type or fully qualified",
                                                kc__mf_quote(q, k->value, k->len));
                v[i].name = k->value;
                r = kc__mf_get_quantity(c, &kp, n->kids[2 * i + 1], &v[i].q);
                if (r < 0)
                        return r;
                if (!v[i].q.text)
                        return kc__mf_fail_path(c, &kp, "required value");
                if (v[i].q.milli < 0)
                        return kc__mf_fail_path(c, &kp, "must be greater than or equal to 0");
        }
        qsort(v, n->n / 2, sizeof(*v), resource_cmp);
        for (i = 1; i < n->n / 2; i++)
                if (!strcmp(v[i - 1].name, v[i].name))
                        return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .key = v[i].name },
                                                "duplicate key");
        *ret = v;
        *ret_n = n->n / 2;
        return 0;
}

static const struct kc_api_resource *find_resource(const struct kc_api_resource *v, size_t n,
                                                   const char *name)
{
        size_t i;

        for (i = 0; i < n; i++)
                if (!strcmp(v[i].name, name))
                        return &v[i];
        return NULL;
}

/*
 * Requests default to the limits (SetDefaults_Pod), then each request is at
 * most its limit; hugepages and extended resources cannot be overcommitted.
 */
static int default_requests(struct mf_ctx *c, const struct mf_path *p, struct kc_api_resources *out)
{
        const struct mf_path rp = { .up = p, .field = "requests" };
        struct kc_api_resource *v;
        size_t i, n = out->n_requests;

        if (out->n_requests + out->n_limits == 0)
                return 0;
        v = kc__mf_alloc(c, out->n_requests + out->n_limits, sizeof(*v));
        if (!v)
                return -ENOMEM;
        if (n > 0)
                memcpy(v, out->requests, n * sizeof(*v));
        for (i = 0; i < out->n_limits; i++)
                if (!find_resource(out->requests, out->n_requests, out->limits[i].name))
                        v[n++] = out->limits[i];
        qsort(v, n, sizeof(*v), resource_cmp);
        out->requests = v;
        out->n_requests = n;
        for (i = 0; i < n; i++) {
                const struct kc_api_resource *l =
                        find_resource(out->limits, out->n_limits, v[i].name);
                const struct mf_path kp = { .up = &rp, .key = v[i].name };
                bool exact = !strncmp(v[i].name, "hugepages-", 10) || strchr(v[i].name, '/');

                if (l && v[i].q.milli > l->q.milli)
                        return kc__mf_fail_path(c, &kp,
                                                "invalid value \"%s\": must be less than or equal "
                                                "to %s limit of %s",
                                                v[i].q.text, v[i].name, l->q.text);
                if (exact && (!l || l->q.milli != v[i].q.milli))
                        return kc__mf_fail_path(c, &kp,
                                                "must be equal to %s limit (overcommit is not "
                                                "allowed)",
                                                v[i].name);
        }
        return 0;
}

/*
 * Limits nothing in cubelet enforces are warned about and kept (QoS and
 * resourceFieldRef still read them): ephemeral-storage (upstream's eviction
 * manager) and extended resources (device plugins; D53).
 */
static int warn_unenforced_limits(struct mf_ctx *c, const struct mf_path *p,
                                  const struct kc_api_resources *out)
{
        const struct mf_path lp = { .up = p, .field = "limits" };
        int r = 0;

        for (size_t i = 0; r >= 0 && i < out->n_limits; i++) {
                const struct mf_path kp = { .up = &lp, .key = out->limits[i].name };

                if (!strcmp(out->limits[i].name, "ephemeral-storage"))
                        r = kc__mf_warn(c, &kp,
                                        "local storage limits are not enforced (no eviction "
                                        "manager)");
                else if (strchr(out->limits[i].name, '/'))
                        r = kc__mf_warn(c, &kp,
                                        "extended resources come from device plugins, which "
                                        "cubelet does not have: nothing is allocated");
        }
        return r;
}

int kc__mf_parse_resources(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                           struct kc_api_resources *out)
{
        const struct mf_node *k;
        struct mf_path kp;
        int r;

        if (kc__mf_is_null(n))
                return 0;
        r = kc__mf_check_fields(c, p, n, MF_RESOURCES);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "limits", &kp, &k);
        if (r >= 0)
                r = parse_resource_list(c, &kp, k, (struct kc_api_resource **)&out->limits,
                                        &out->n_limits);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "requests", &kp, &k);
        if (r >= 0)
                r = parse_resource_list(c, &kp, k, (struct kc_api_resource **)&out->requests,
                                        &out->n_requests);
        if (r >= 0)
                r = default_requests(c, p, out);
        if (r >= 0)
                r = warn_unenforced_limits(c, p, out);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Env                                                                        */

/* An env var name, as validation.IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]*. */
static bool is_env_var_name(const char *s)
{
        size_t i;

        if (!*s || (*s >= '0' && *s <= '9'))
                return false;
        for (i = 0; s[i]; i++)
                if (!strchr("-._", s[i]) && !(s[i] >= 'a' && s[i] <= 'z') &&
                    !(s[i] >= 'A' && s[i] <= 'Z') && !(s[i] >= '0' && s[i] <= '9'))
                        return false;
        return true;
}

/* The downward API field paths env may use (validEnvDownwardAPIFieldPathExpressions). */
static bool is_env_field_path(const char *s)
{
        static const char *const plain[] = {
                "metadata.name",           "metadata.namespace", "metadata.uid",   "spec.nodeName",
                "spec.serviceAccountName", "status.hostIP",      "status.hostIPs", "status.podIP",
                "status.podIPs",
        };
        static const char *const subscripted[] = { "metadata.labels['", "metadata.annotations['" };
        size_t i, n;

        for (i = 0; i < KC_ELEMENTSOF(plain); i++)
                if (!strcmp(s, plain[i]))
                        return true;
        for (i = 0; i < KC_ELEMENTSOF(subscripted); i++) {
                n = strlen(subscripted[i]);
                if (!strncmp(s, subscripted[i], n) && strlen(s) > n + 2 &&
                    !strcmp(s + strlen(s) - 2, "']"))
                        return true;
        }
        return false;
}

static int parse_field_ref(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                           struct kc_api_env_var *out)
{
        const struct mf_path fpp = { .up = p, .field = "fieldPath" };
        const char *api = NULL;
        char q[300];
        int r;

        r = kc__mf_check_fields(c, p, n, MF_OBJECT_FIELD_SELECTOR);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "apiVersion", &api);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "fieldPath", &out->field_path);
        if (r < 0)
                return r;
        if (api && *api && strcmp(api, "v1"))
                return kc__mf_fail_unsupported(c, p, "apiVersion", api, "\"v1\"");
        if (!out->field_path || !*out->field_path)
                return kc__mf_fail_path(c, &fpp, "required value");
        if (!is_env_field_path(out->field_path))
                return kc__mf_fail_path(
                        c, &fpp,
                        "unsupported value %s (supported: \"metadata.name\", "
                        "\"metadata.namespace\", \"metadata.uid\", \"metadata.labels['<key>']\", "
                        "\"metadata.annotations['<key>']\", \"spec.nodeName\", "
                        "\"spec.serviceAccountName\", \"status.hostIP\", \"status.hostIPs\", "
                        "\"status.podIP\", \"status.podIPs\")",
                        kc__mf_quote(q, out->field_path, strlen(out->field_path)));
        out->source = KC_ENV_SOURCE_FIELD_REF;
        return 0;
}

/* The divisors upstream accepts: cpu 1 or 1m; memory and storage 1 and the powers of k/Ki. */
static bool is_divisor(const char *resource, const char *text)
{
        static const char *const cpu[] = { "1", "1m" };
        static const char *const mem[] = { "1",   "1k",  "1M",  "1G",  "1T",  "1P", "1E",
                                           "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei" };
        bool is_cpu = strstr(resource, "cpu") != NULL;
        size_t i, n = is_cpu ? KC_ELEMENTSOF(cpu) : KC_ELEMENTSOF(mem);

        for (i = 0; i < n; i++)
                if (!strcmp(text, is_cpu ? cpu[i] : mem[i]))
                        return true;
        return false;
}

static int parse_resource_field_ref(struct mf_ctx *c, const struct mf_path *p,
                                    const struct mf_node *n, struct kc_api_env_var *out)
{
        static const char *const resources[] = {
                "limits.cpu",   "limits.memory",   "limits.ephemeral-storage",
                "requests.cpu", "requests.memory", "requests.ephemeral-storage",
        };
        const struct mf_path rp = { .up = p, .field = "resource" };
        const struct mf_node *d;
        struct mf_path dp;
        char q[300];
        size_t i;
        int r;

        r = kc__mf_check_fields(c, p, n, MF_RESOURCE_FIELD_SELECTOR);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "containerName", &out->resource_container);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "resource", &out->resource);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "divisor", &dp, &d);
        out->divisor = (struct kc_api_quantity){ "1", 1000 };
        if (r >= 0)
                r = kc__mf_get_quantity(c, &dp, d, &out->divisor);
        if (r < 0)
                return r;
        if (!out->resource || !*out->resource)
                return kc__mf_fail_path(c, &rp, "required value");
        for (i = 0; i < KC_ELEMENTSOF(resources); i++)
                if (!strcmp(out->resource, resources[i]))
                        break;
        if (i == KC_ELEMENTSOF(resources) && strncmp(out->resource, "limits.hugepages-", 17) &&
            strncmp(out->resource, "requests.hugepages-", 19))
                return kc__mf_fail_path(c, &rp, "unsupported value %s",
                                        kc__mf_quote(q, out->resource, strlen(out->resource)));
        if (!is_divisor(out->resource, out->divisor.text))
                return kc__mf_fail_path(
                        c, &dp, "invalid value %s for %s",
                        kc__mf_quote(q, out->divisor.text, strlen(out->divisor.text)),
                        out->resource);
        out->source = KC_ENV_SOURCE_RESOURCE_FIELD;
        return 0;
}

/* configMapKeyRef / secretKeyRef: kept for the env code, which needs the API server for them. */
static int parse_key_ref(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                         enum kc_env_source_kind kind, struct kc_api_env_var *out)
{
        int r;

        r = kc__mf_check_fields(c, p, n, MF_KEY_SELECTOR);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "name", &out->ref_name);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "key", &out->ref_key);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, p, n, "optional", &out->ref_optional);
        if (r < 0)
                return r;
        if (!out->ref_key || !*out->ref_key)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "key" },
                                        "required value");
        out->source = kind;
        return 0;
}

/* Which of the fields @p keys of @p n are set (@p skip: none to leave out). */
struct one_of {
        const struct mf_node *node; /* the last one set */
        struct mf_path path;
        size_t which, count;
};

static int find_set(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                    const char *const *keys, size_t n_keys, const char *skip, struct one_of *ret)
{
        const struct mf_node *k;
        struct mf_path kp;
        size_t i;
        int r;

        *ret = (struct one_of){ 0 };
        for (i = 0; i < n_keys; i++) {
                if (skip && !strcmp(keys[i], skip))
                        continue;
                r = kc__mf_field(c, p, n, keys[i], &kp, &k);
                if (r < 0)
                        return r;
                if (!kc__mf_is_null(k))
                        *ret = (struct one_of){ k, kp, i, ret->count + 1 };
        }
        return 0;
}

static int parse_value_from(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                            struct kc_api_env_var *out)
{
        static const char *const kinds[] = { "fieldRef", "resourceFieldRef", "configMapKeyRef",
                                             "secretKeyRef" };
        struct one_of o;
        int r;

        r = kc__mf_check_fields(c, p, n, MF_ENV_VAR_SOURCE);
        if (r >= 0)
                r = find_set(c, p, n, kinds, KC_ELEMENTSOF(kinds), NULL, &o);
        if (r < 0)
                return r;
        if (o.count != 1)
                return kc__mf_fail_path(c, p,
                                        "must specify exactly one of: `fieldRef`, "
                                        "`resourceFieldRef`, `configMapKeyRef` or "
                                        "`secretKeyRef`");
        switch (o.which) {
        case 0:
                return parse_field_ref(c, &o.path, o.node, out);
        case 1:
                return parse_resource_field_ref(c, &o.path, o.node, out);
        case 2:
                return parse_key_ref(c, &o.path, o.node, KC_ENV_SOURCE_CONFIG_MAP_KEY, out);
        default:
                return parse_key_ref(c, &o.path, o.node, KC_ENV_SOURCE_SECRET_KEY, out);
        }
}

static int parse_env_var(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                         void *item, void *userdata)
{
        struct kc_api_env_var *out = item;
        const struct mf_path np = { .up = p, .field = "name" };
        const struct mf_node *vf;
        struct mf_path vfp;
        char q[300];
        int r;

        (void)userdata;

        r = kc__mf_check_fields(c, p, n, MF_ENV_VAR);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "name", &out->name);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "value", &out->value);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "valueFrom", &vfp, &vf);
        if (r < 0)
                return r;
        if (!out->name || !*out->name)
                return kc__mf_fail_path(c, &np, "required value");
        if (!is_env_var_name(out->name))
                return kc__mf_fail_path(c, &np,
                                        "invalid value %s: a valid environment variable name "
                                        "must consist of alphabetic characters, digits, '_', "
                                        "'-', or '.', and must not start with a digit",
                                        kc__mf_quote(q, out->name, strlen(out->name)));
        if (kc__mf_is_null(vf))
                return 0;
        if (out->value && *out->value)
                return kc__mf_fail_path(c, &vfp, "may not be specified when `value` is not empty");
        return parse_value_from(c, &vfp, vf, out);
}

static int parse_env_from(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                          void *item, void *userdata)
{
        struct kc_api_env_from *out = item;
        const struct mf_node *cm, *sec, *ref;
        struct mf_path cmp, secp, refp;
        int r;

        (void)userdata;

        r = kc__mf_check_fields(c, p, n, MF_ENV_FROM);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "prefix", &out->prefix);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "configMapRef", &cmp, &cm);
        if (r >= 0)
                r = kc__mf_field(c, p, n, "secretRef", &secp, &sec);
        if (r < 0)
                return r;
        if (kc__mf_is_null(cm) == kc__mf_is_null(sec))
                return kc__mf_fail_path(c, p,
                                        "must specify exactly one of: `configMapRef` or "
                                        "`secretRef`");
        out->secret = !kc__mf_is_null(sec);
        ref = out->secret ? sec : cm;
        refp = out->secret ? secp : cmp;
        r = kc__mf_check_fields(c, &refp, ref, MF_OBJECT_REF);
        if (r >= 0)
                r = kc__mf_field_string(c, &refp, ref, "name", &out->ref_name);
        if (r >= 0)
                r = kc__mf_field_opt_bool(c, &refp, ref, "optional", &out->optional);
        if (r >= 0 && (!out->ref_name || !*out->ref_name))
                return kc__mf_fail_path(c, &(struct mf_path){ .up = &refp, .field = "name" },
                                        "required value");
        return r;
}

int kc__mf_field_opt_bool(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                          const char *key, enum kc_opt_bool *ret)
{
        const struct mf_node *n;
        struct mf_path fp;
        bool v = false;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        if (r < 0 || kc__mf_is_null(n))
                return r;
        r = kc__mf_get_bool(c, &fp, n, &v);
        if (r >= 0)
                *ret = v ? KC_OPT_TRUE : KC_OPT_FALSE;
        return r;
}

int kc__mf_list_field(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, struct mf_path *lp, const struct mf_node **ret)
{
        int r = kc__mf_field(c, p, m, key, lp, ret);

        if (r < 0)
                return r;
        if (kc__mf_is_null(*ret)) {
                *ret = NULL;
                return 0;
        }
        if ((*ret)->type != NODE_SEQ)
                return kc__mf_fail_path(c, lp, "must be a list");
        return 0;
}

int kc__mf_parse_list(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                      const char *key, size_t size, mf_item_fn *item, void *userdata, void *ret,
                      size_t *ret_n)
{
        const struct mf_node *l;
        struct mf_path lp;
        char *v;
        size_t i;
        int r;

        r = kc__mf_list_field(c, p, m, key, &lp, &l);
        if (r < 0 || !l || l->n == 0)
                return r;
        v = kc__mf_alloc(c, l->n, size);
        if (!v)
                return -ENOMEM;
        for (i = 0; i < l->n; i++) {
                r = item(c, &(struct mf_path){ .up = &lp, .index = i }, l->kids[i], v + i * size,
                         userdata);
                if (r < 0)
                        return r;
        }
        *(void **)ret = v;
        *ret_n = l->n;
        return 0;
}

int kc__mf_check_unique(struct mf_ctx *c, const struct mf_path *list, const void *v, size_t n,
                        size_t size, size_t offset, const char *field)
{
        char q[300];
        size_t i, j;

        for (i = 1; i < n; i++) {
                const char *a = *(const char *const *)((const char *)v + i * size + offset);

                for (j = 0; a && *a && j < i; j++) {
                        const char *b = *(const char *const *)((const char *)v + j * size + offset);

                        if (b && !strcmp(a, b))
                                return kc__mf_fail_path(
                                        c,
                                        &(struct mf_path){
                                                .up = &(struct mf_path){ .up = list, .index = i },
                                                .field = field },
                                        "duplicate value %s", kc__mf_quote(q, a, strlen(a)));
                }
        }
        return 0;
}

/* The shape every {name, value} item of the API shares here. */
struct name_value {
        const char *name, *value;
};

int kc__mf_parse_name_value(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                            void *out, void *userdata)
{
        const enum mf_object *kind = userdata;
        struct name_value *nv = out;
        int r;

        r = kc__mf_check_fields(c, p, n, *kind);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "name", &nv->name);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "value", &nv->value);
        if (r < 0)
                return r;
        if (!nv->name || !*nv->name)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "name" },
                                        "required value");
        if (*kind != MF_DNS_OPTION && !nv->value) {
                if (*kind == MF_SYSCTL)
                        return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "value" },
                                                "required value");
                nv->value = "";
        }
        return 0;
}

int kc__mf_parse_env(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *cn,
                     struct kc_api_container *out)
{
        int r = kc__mf_parse_list(c, p, cn, "env", sizeof(*out->env), parse_env_var, NULL,
                                  &out->env, &out->n_env);

        if (r >= 0)
                r = kc__mf_parse_list(c, p, cn, "envFrom", sizeof(*out->env_from), parse_env_from,
                                      NULL, &out->env_from, &out->n_env_from);
        return r;
}

/* ------------------------------------------------------------------------ */
/* Ports                                                                      */

bool kc__mf_is_port_name(const char *s)
{
        size_t i, n = strlen(s);
        bool letter = false;

        if (n == 0 || n > 15 || s[0] == '-' || s[n - 1] == '-' || strstr(s, "--"))
                return false;
        for (i = 0; i < n; i++) {
                if (s[i] >= 'a' && s[i] <= 'z')
                        letter = true;
                else if (!(s[i] >= '0' && s[i] <= '9') && s[i] != '-')
                        return false;
        }
        return letter;
}

int kc__mf_field_range(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                       const char *key, int64_t lo, int64_t hi, int64_t *ret)
{
        const struct mf_node *n;
        struct mf_path fp;
        const char *s;
        int64_t v = 0;
        bool neg;
        int r;

        r = kc__mf_field(c, p, m, key, &fp, &n);
        if (r < 0 || kc__mf_is_null(n))
                return r;
        s = n->type == NODE_SCALAR && n->plain ? n->value : "";
        neg = *s == '-';
        r = kc__mf_get_count(c, &fp,
                             &(struct mf_node){ .type = NODE_SCALAR,
                                                .plain = true,
                                                .value = (char *)(neg ? s + 1 : s),
                                                .len = strlen(neg ? s + 1 : s) },
                             &v);
        if (r < 0)
                return r;
        v = neg ? -v : v;
        if (v < lo || v > hi)
                return kc__mf_fail_path(c, &fp,
                                        "invalid value %lld: must be between %lld and %lld, "
                                        "inclusive",
                                        (long long)v, (long long)lo, (long long)hi);
        *ret = v;
        return 0;
}

bool kc__mf_is_ip(const char *s)
{
        unsigned char buf[16];

        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

static int parse_port(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                      void *item, void *userdata)
{
        struct kc_api_container_port *out = item;
        bool host_network = *(const bool *)userdata;
        int64_t cport = 0, hport = 0;
        char q[300];
        int r;

        r = kc__mf_check_fields(c, p, n, MF_CONTAINER_PORT);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "name", &out->name);
        if (r >= 0)
                r = kc__mf_field_range(c, p, n, "containerPort", 0, 65535, &cport);
        if (r >= 0)
                r = kc__mf_field_range(c, p, n, "hostPort", 0, 65535, &hport);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "hostIP", &out->host_ip);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "protocol", &out->protocol);
        if (r < 0)
                return r;
        if (out->name && *out->name && !kc__mf_is_port_name(out->name))
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "name" },
                                        "invalid value %s: must be an IANA service name (at "
                                        "most 15 lowercase letters, digits and '-', with a "
                                        "letter)",
                                        kc__mf_quote(q, out->name, strlen(out->name)));
        if (cport == 0)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "containerPort" },
                                        "required value");
        /* SetDefaults_Pod: on the host network the host port is the container port */
        if (host_network && hport == 0)
                hport = cport;
        if (host_network && hport != cport)
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "hostPort" },
                                        "invalid value %lld: must match `containerPort` when "
                                        "`hostNetwork` is true",
                                        (long long)hport);
        if (!out->protocol || !*out->protocol)
                out->protocol = "TCP";
        if (strcmp(out->protocol, "TCP") && strcmp(out->protocol, "UDP") &&
            strcmp(out->protocol, "SCTP"))
                return kc__mf_fail_unsupported(c, p, "protocol", out->protocol,
                                               "\"SCTP\", \"TCP\", \"UDP\"");
        if (out->host_ip && *out->host_ip && !kc__mf_is_ip(out->host_ip))
                return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "hostIP" },
                                        "invalid value %s: must be a valid IP address",
                                        kc__mf_quote(q, out->host_ip, strlen(out->host_ip)));
        out->container_port = (int32_t)cport;
        out->host_port = (int32_t)hport;
        return 0;
}

int kc__mf_parse_ports(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *cn,
                       bool host_network, struct kc_api_container *out)
{
        int r = kc__mf_parse_list(c, p, cn, "ports", sizeof(*out->ports), parse_port, &host_network,
                                  &out->ports, &out->n_ports);

        if (r < 0 || out->n_ports == 0)
                return r;
        return kc__mf_check_unique(c, &(struct mf_path){ .up = p, .field = "ports" }, out->ports,
                                   out->n_ports, sizeof(*out->ports),
                                   offsetof(struct kc_api_container_port, name), "name");
}

/* ------------------------------------------------------------------------ */
/* Handlers and probes                                                        */

/* An IntOrString port: 1..65535, or a port name. */
static int parse_port_ref(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *m,
                          struct kc_api_port_ref *out)
{
        const struct mf_node *n;
        struct mf_path fp;
        char q[300];
        int r;

        r = kc__mf_field(c, p, m, "port", &fp, &n);
        if (r < 0)
                return r;
        if (kc__mf_is_null(n))
                return kc__mf_fail_path(c, &fp, "required value");
        if (kc__mf_plain_number(n)) {
                int64_t v = 0;

                r = kc__mf_field_range(c, p, m, "port", 1, 65535, &v);
                out->number = (int32_t)v;
                return r;
        }
        r = kc__mf_get_string(c, &fp, n, &out->name);
        if (r < 0)
                return r;
        if (!kc__mf_is_port_name(out->name))
                return kc__mf_fail_path(c, &fp,
                                        "invalid value %s: must be a port number or an IANA "
                                        "service name",
                                        kc__mf_quote(q, out->name, strlen(out->name)));
        return 0;
}

static int parse_http_get(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                          struct kc_api_handler *out)
{
        const char *scheme = NULL;
        int r;

        r = kc__mf_check_fields(c, p, n, MF_HTTP_GET);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "path", &out->path);
        if (r >= 0)
                r = parse_port_ref(c, p, n, &out->port);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "host", &out->host);
        if (r >= 0)
                r = kc__mf_field_string(c, p, n, "scheme", &scheme);
        if (r >= 0)
                r = kc__mf_parse_list(c, p, n, "httpHeaders", sizeof(*out->headers),
                                      kc__mf_parse_name_value, &(enum mf_object){ MF_HTTP_HEADER },
                                      &out->headers, &out->n_headers);
        if (r < 0)
                return r;
        if (!out->path || !*out->path)
                out->path = "/"; /* SetDefaults_HTTPGetAction */
        if (scheme && *scheme && strcmp(scheme, "HTTP") && strcmp(scheme, "HTTPS"))
                return kc__mf_fail_unsupported(c, p, "scheme", scheme, "\"HTTP\", \"HTTPS\"");
        out->https = scheme && !strcmp(scheme, "HTTPS");
        return 0;
}

static int parse_handler_kind(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                              enum kc_handler_kind kind, struct kc_api_handler *out)
{
        int64_t v = 0;
        int r = 0;

        out->kind = kind;
        switch (kind) {
        case KC_HANDLER_EXEC:
                r = kc__mf_check_fields(c, p, n, MF_EXEC);
                if (r >= 0)
                        r = kc__mf_field_strv(c, p, n, "command", &out->command, &out->n_command);
                if (r >= 0 && out->n_command == 0)
                        return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "command" },
                                                "required value");
                return r;
        case KC_HANDLER_HTTP_GET:
                return parse_http_get(c, p, n, out);
        case KC_HANDLER_TCP_SOCKET:
                r = kc__mf_check_fields(c, p, n, MF_TCP_SOCKET);
                if (r >= 0)
                        r = parse_port_ref(c, p, n, &out->port);
                return r >= 0 ? kc__mf_field_string(c, p, n, "host", &out->host) : r;
        case KC_HANDLER_GRPC:
                r = kc__mf_check_fields(c, p, n, MF_GRPC);
                if (r >= 0)
                        r = kc__mf_field_range(c, p, n, "port", 1, 65535, &v);
                out->port.number = (int32_t)v;
                if (r >= 0 && v == 0)
                        return kc__mf_fail_path(c, &(struct mf_path){ .up = p, .field = "port" },
                                                "required value");
                return r >= 0 ? kc__mf_field_string(c, p, n, "service", &out->grpc_service) : r;
        default:
                r = kc__mf_check_fields(c, p, n, MF_SLEEP);
                if (r >= 0)
                        r = kc__mf_field_range(c, p, n, "seconds", 0, INT64_MAX,
                                               &out->sleep_seconds);
                return r;
        }
}

int kc__mf_parse_handler(struct mf_ctx *c, const struct mf_path *p, const struct mf_node *n,
                         bool probe, struct kc_api_handler *out)
{
        static const char *const keys[] = { "exec", "httpGet", "tcpSocket", "grpc", "sleep" };
        static const enum kc_handler_kind kinds[] = { KC_HANDLER_EXEC, KC_HANDLER_HTTP_GET,
                                                      KC_HANDLER_TCP_SOCKET, KC_HANDLER_GRPC,
                                                      KC_HANDLER_SLEEP };
        struct one_of o;
        int r;

        /* a probe has no sleep, a hook no grpc: not fields there, check_fields warned */
        r = find_set(c, p, n, keys, KC_ELEMENTSOF(keys), probe ? "sleep" : "grpc", &o);
        if (r < 0)
                return r;
        if (o.count == 0)
                return kc__mf_fail_path(c, p, "must specify a handler type");
        if (o.count > 1)
                return kc__mf_fail_path(c, p, "may not specify more than 1 handler type");
        r = parse_handler_kind(c, &o.path, o.node, kinds[o.which], out);
        if (r >= 0 && !probe && kinds[o.which] == KC_HANDLER_TCP_SOCKET)
                r = kc__mf_warn(c, &o.path,
                                "tcpSocket is not a lifecycle handler (upstream keeps it for "
                                "compatibility and fails the hook)");
        return r;
}

int kc__mf_parse_probe(struct mf_ctx *c, const struct mf_path *cp, const struct mf_node *cn,
                       const char *key, struct kc_api_probe *out)
{
        const struct mf_node *n;
        struct mf_path p;
        int64_t v[5] = { 0, 1, 10, 1, 3 }, tg = 0; /* upstream's defaults */
        static const char *const ints[] = { "initialDelaySeconds", "timeoutSeconds",
                                            "periodSeconds", "successThreshold",
                                            "failureThreshold" };
        size_t i;
        int r;

        r = kc__mf_object_field(c, cp, cn, key, MF_PROBE, &p, &n);
        if (r < 0 || !n)
                return r;
        r = kc__mf_parse_handler(c, &p, n, true, &out->handler);
        for (i = 0; r >= 0 && i < KC_ELEMENTSOF(ints); i++) {
                r = kc__mf_field_range(c, &p, n, ints[i], 0, INT32_MAX, &v[i]);
                if (r >= 0 && i > 0 && v[i] == 0) /* 0 means the default */
                        v[i] = (int64_t[]){ 0, 1, 10, 1, 3 }[i];
        }
        if (r >= 0)
                r = kc__mf_field_range(c, &p, n, "terminationGracePeriodSeconds", 1, INT64_MAX,
                                       &tg);
        if (r < 0)
                return r;
        if (strcmp(key, "readinessProbe") && v[3] != 1)
                return kc__mf_fail_path(c,
                                        &(struct mf_path){ .up = &p, .field = "successThreshold" },
                                        "invalid value %lld: must be 1", (long long)v[3]);
        if (!strcmp(key, "readinessProbe") && tg > 0)
                return kc__mf_fail_path(
                        c, &(struct mf_path){ .up = &p, .field = "terminationGracePeriodSeconds" },
                        "must not be set for readinessProbes");
        *out = (struct kc_api_probe){ .present = true,
                                      .handler = out->handler,
                                      .initial_delay_seconds = (int32_t)v[0],
                                      .timeout_seconds = (int32_t)v[1],
                                      .period_seconds = (int32_t)v[2],
                                      .success_threshold = (int32_t)v[3],
                                      .failure_threshold = (int32_t)v[4],
                                      .termination_grace_period_seconds = { tg > 0, tg } };
        return 0; /* run by the prober manager (docs/prober.md) */
}
