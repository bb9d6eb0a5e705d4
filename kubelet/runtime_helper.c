/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kubelet's RuntimeHelper: a container's environment
 * (makeEnvironmentVariables), its mounts (makeMounts, kubelet/pod_mounts.c),
 * the pod's hostname and domain, and its DNS (dns.Configurer).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/arena.h"
#include "core/cleanup.h"
#include "core/format.h"
#include "core/log.h"
#include "kubelet/runtime_helper.h"
#include "machine_info.h"
#include "runtime/api_pod.h"
#include "runtime/api_spec.h"
#include "runtime/expansion.h"
#include "runtime/qos.h"
#include "volume_manager.h"

/* dns.go: validation's limits on what a pod's resolv.conf may hold. */
#define MAX_DNS_NAMESERVERS 3
#define MAX_DNS_SEARCH_PATHS 32
#define MAX_DNS_SEARCH_LIST_CHARS 2048
/* truncatePodHostnameIfNeeded */
#define HOSTNAME_MAX_LEN 63

struct kc_kubelet_runtime_helper {
        char *node_name;
        char **node_ips;
        size_t n_node_ips;
        int64_t alloc_milli_cpu, alloc_memory, alloc_ephemeral;
        int64_t memory_capacity; /* MachineInfo.MemoryCapacity */
        char *resolv_conf;
        char *root_dir;
        struct kc_volume_manager *volumes; /* makeMounts; NULL without a root dir */
        atomic_bool warned_cluster_dns;    /* MissingClusterDNS logged once */
};

/* An environment being built: names in declaration order, the last value of each. */
struct env {
        struct kc_label *v;
        size_t n;
        struct kc_arena *a;
};

static int env_set(struct env *e, const char *name, const char *value)
{
        size_t i;

        for (i = 0; i < e->n && strcmp(e->v[i].key, name) != 0; i++)
                ;
        e->v[i] = (struct kc_label){ name, kc_arena_strdup(e->a, value) };
        if (!e->v[i].value)
                return -ENOMEM;
        if (i == e->n)
                e->n++;
        return 0;
}

/* Go's %q for the ASCII a label holds: quotes, backslashes and control bytes escaped. */
static void put_quoted(FILE *f, const char *s)
{
        fputc('"', f);
        for (; *s; s++) {
                unsigned char ch = (unsigned char)*s;

                if (ch == '"' || ch == '\\')
                        fprintf(f, "\\%c", ch);
                else if (ch == '\n')
                        fputs("\\n", f);
                else if (ch == '\t')
                        fputs("\\t", f);
                else if (ch < 0x20 || ch == 0x7f)
                        fprintf(f, "\\x%02x", ch);
                else
                        fputc(ch, f);
        }
        fputc('"', f);
}

static int cmp_label(const void *a, const void *b)
{
        return strcmp(((const struct kc_label *)a)->key, ((const struct kc_label *)b)->key);
}

/* fieldpath.FormatMap: 'k="v"' lines, keys sorted, no final newline. NULL on ENOMEM. */
static char *format_map(const struct kc_label *m, size_t n)
{
        _cleanup_free_ struct kc_label *sorted = calloc(n + 1, sizeof(*sorted));
        char *buf = NULL;
        size_t len = 0;
        FILE *f;

        if (!sorted)
                return NULL;
        if (n > 0) /* m may be NULL with no entries */
                memcpy(sorted, m, n * sizeof(*m));
        qsort(sorted, n, sizeof(*sorted), cmp_label);
        f = open_memstream(&buf, &len);
        if (!f)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                fprintf(f, "%s%s=", i ? "\n" : "", sorted[i].key);
                put_quoted(f, sorted[i].value ? sorted[i].value : "");
        }
        if (fclose(f) != 0) {
                free(buf);
                return NULL;
        }
        return buf;
}

static const char *label_get(const struct kc_label *l, size_t n, const char *k, size_t k_len)
{
        for (size_t i = 0; i < n; i++)
                if (strlen(l[i].key) == k_len && memcmp(l[i].key, k, k_len) == 0)
                        return l[i].value ? l[i].value : "";
        return "";
}

/* "a,b,c" of @p v. NULL on ENOMEM. */
static char *join(const char *const *v, size_t n)
{
        size_t len = 1, i;
        char *s, *o;

        for (i = 0; i < n; i++)
                len += strlen(v[i]) + 1;
        s = o = malloc(len);
        if (!s)
                return NULL;
        *o = '\0';
        for (i = 0; i < n; i++)
                o = stpcpy(stpcpy(o, i ? "," : ""), v[i]);
        return s;
}

/*
 * podFieldSelectorRuntimeValue, then fieldpath.ExtractFieldPathAsString:
 * *ret (malloc'd) or -EINVAL with *ret_msg in upstream's words.
 */
static int field_ref_value(const struct kc_kubelet_runtime_helper *h, const struct kc_api_pod *pod,
                           const char *path, const char *const *pod_ips, size_t n_pod_ips,
                           char **ret, char **ret_msg)
{
        static const char *const subscripted[] = { "metadata.annotations['", "metadata.labels['" };
        size_t len = strlen(path);
        const char *v = NULL;

        for (size_t i = 0; i < 2; i++) {
                size_t pl = strlen(subscripted[i]);

                if (strncmp(path, subscripted[i], pl) != 0 || len < pl + 2 ||
                    strcmp(path + len - 2, "']") != 0)
                        continue;
                v = i == 0 ? label_get(pod->annotations, pod->n_annotations, path + pl,
                                       len - pl - 2)
                           : label_get(pod->labels, pod->n_labels, path + pl, len - pl - 2);
                *ret = strdup(v);
                return *ret ? 0 : -ENOMEM;
        }
        if (strcmp(path, "metadata.annotations") == 0)
                *ret = format_map(pod->annotations, pod->n_annotations);
        else if (strcmp(path, "metadata.labels") == 0)
                *ret = format_map(pod->labels, pod->n_labels);
        else if (strcmp(path, "status.podIPs") == 0)
                *ret = join(pod_ips, n_pod_ips);
        else if (strcmp(path, "status.hostIPs") == 0)
                *ret = join((const char *const *)h->node_ips, h->n_node_ips);
        else {
                if (strcmp(path, "metadata.name") == 0)
                        v = pod->name;
                else if (strcmp(path, "metadata.namespace") == 0)
                        v = pod->namespace;
                else if (strcmp(path, "metadata.uid") == 0)
                        v = pod->uid;
                else if (strcmp(path, "spec.nodeName") == 0)
                        v = pod->node_name && pod->node_name[0] ? pod->node_name : h->node_name;
                else if (strcmp(path, "spec.serviceAccountName") == 0)
                        v = pod->service_account_name;
                else if (strcmp(path, "status.hostIP") == 0)
                        v = h->node_ips[0];
                else if (strcmp(path, "status.podIP") == 0)
                        v = n_pod_ips ? pod_ips[0] : "";
                else {
                        *ret_msg = kc_strdup_printf("unsupported fieldPath: %s", path);
                        return *ret_msg ? -EINVAL : -ENOMEM;
                }
                *ret = strdup(v ? v : "");
        }
        return *ret ? 0 : -ENOMEM;
}

/* The limit of @p name after defaultPodLimitsForDownwardAPI: unset or zero is the node's allocatable. */
static int64_t defaulted_limit(const struct kc_kubelet_runtime_helper *h,
                               const struct kc_api_container *c, const char *name)
{
        int64_t v = 0;

        if (kc_container_limit(c, name, &v) && v != 0)
                return v;
        if (strcmp(name, "cpu") == 0)
                return h->alloc_milli_cpu;
        if (strcmp(name, "memory") == 0)
                return h->alloc_memory * 1000;
        if (strcmp(name, "ephemeral-storage") == 0)
                return h->alloc_ephemeral * 1000;
        return 0;
}

/* ceil(a / b) for b > 0 */
static int64_t ceil_div(int64_t a, int64_t b)
{
        return a / b + (a % b > 0);
}

/* Find a container of the pod by name (app containers first), or NULL. */
static const struct kc_api_container *find_container(const struct kc_api_pod *pod, const char *name)
{
        size_t i;

        for (i = 0; i < pod->n_containers; i++)
                if (pod->containers[i].name && strcmp(pod->containers[i].name, name) == 0)
                        return &pod->containers[i];
        for (i = 0; i < pod->n_init_containers; i++)
                if (pod->init_containers[i].name && strcmp(pod->init_containers[i].name, name) == 0)
                        return &pod->init_containers[i];
        return NULL;
}

/*
 * containerResourceRuntimeValue: limits.* and requests.* of cpu (in
 * thousandths over the divisor's), memory, ephemeral-storage and
 * hugepages-* (in whole units over the divisor's), rounded up.
 */
static int resource_field_value(const struct kc_kubelet_runtime_helper *h,
                                const struct kc_api_pod *pod, const struct kc_api_container *self,
                                const struct kc_api_env_var *ev, char **ret, char **ret_msg)
{
        const struct kc_api_container *c = self;
        const char *res = ev->resource ? ev->resource : "", *name;
        int64_t divisor = ev->divisor.milli > 0 ? ev->divisor.milli : 1000, v = 0;
        bool limits = strncmp(res, "limits.", 7) == 0;

        if (ev->resource_container && ev->resource_container[0]) {
                c = find_container(pod, ev->resource_container);
                if (!c) {
                        *ret_msg =
                                kc_strdup_printf("container %s not found", ev->resource_container);
                        return *ret_msg ? -EINVAL : -ENOMEM;
                }
        }
        name = limits ? res + 7 : strncmp(res, "requests.", 9) == 0 ? res + 9 : NULL;
        if (!name ||
            !(strcmp(name, "cpu") == 0 || strcmp(name, "memory") == 0 ||
              strcmp(name, "ephemeral-storage") == 0 || strncmp(name, "hugepages-", 10) == 0)) {
                *ret_msg = kc_strdup_printf("unsupported container resource : %s", res);
                return *ret_msg ? -EINVAL : -ENOMEM;
        }
        if (limits)
                v = defaulted_limit(h, c, name);
        else if (strncmp(name, "hugepages-", 10) == 0)
                (void)kc_api_resource_get(c->resources.requests, c->resources.n_requests, name, &v);
        else
                (void)kc_container_request(c, name, &v);
        if (strcmp(name, "cpu") == 0)
                v = ceil_div(v, divisor);
        else /* Value() of both: whole units, rounded up */
                v = ceil_div(ceil_div(v, 1000), ceil_div(divisor, 1000));
        *ret = kc_strdup_printf("%" PRId64, v);
        return *ret ? 0 : -ENOMEM;
}

/* One env var's value from its source: *ret (malloc'd), or -errno with *ret_msg. */
static int env_source_value(const struct kc_kubelet_runtime_helper *h, const struct kc_api_pod *pod,
                            const struct kc_api_container *c, const struct kc_api_env_var *ev,
                            const char *const *pod_ips, size_t n_pod_ips, char **ret,
                            char **ret_msg)
{
        switch (ev->source) {
        case KC_ENV_SOURCE_FIELD_REF:
                return field_ref_value(h, pod, ev->field_path ? ev->field_path : "", pod_ips,
                                       n_pod_ips, ret, ret_msg);
        case KC_ENV_SOURCE_RESOURCE_FIELD:
                return resource_field_value(h, pod, c, ev, ret, ret_msg);
        case KC_ENV_SOURCE_CONFIG_MAP_KEY:
        case KC_ENV_SOURCE_SECRET_KEY:
                /* Standalone: no API client, so even an optional reference fails, as upstream. */
                *ret_msg = kc_strdup_printf(
                        "couldn't get %s %s/%s, no kubeClient defined",
                        ev->source == KC_ENV_SOURCE_SECRET_KEY ? "secret" : "configMap",
                        pod->namespace ? pod->namespace : "", ev->ref_name ? ev->ref_name : "");
                return *ret_msg ? -ENOENT : -ENOMEM;
        default:
                *ret = strdup("");
                return *ret ? 0 : -ENOMEM;
        }
}

/*
 * makeEnvironmentVariables without an API server: envFrom and key refs
 * fail; each value has $(VAR) expanded against the variables declared
 * before it; no service variables.
 */
static int make_environment_variables(const struct kc_kubelet_runtime_helper *h,
                                      const struct kc_api_pod *pod,
                                      const struct kc_api_container *c, const char *const *pod_ips,
                                      size_t n_pod_ips, struct kc_arena *a,
                                      const struct kc_label **ret, size_t *ret_n, char **ret_msg)
{
        struct env e = { .a = a };
        int r;

        if (c->n_env_from > 0) {
                const struct kc_api_env_from *f = &c->env_from[0];

                *ret_msg = kc_strdup_printf("couldn't get %s %s/%s, no kubeClient defined",
                                            f->secret ? "secret" : "configMap",
                                            pod->namespace ? pod->namespace : "",
                                            f->ref_name ? f->ref_name : "");
                return *ret_msg ? -ENOENT : -ENOMEM;
        }
        if (c->n_env == 0)
                return 0;
        e.v = kc_arena_alloc(a, c->n_env * sizeof(*e.v));
        if (!e.v)
                return -ENOMEM;
        for (size_t i = 0; i < c->n_env; i++) {
                const struct kc_api_env_var *ev = &c->env[i];
                _cleanup_free_ char *val = NULL;

                if (ev->value && ev->value[0])
                        val = kc_expand(ev->value, e.v, e.n);
                else if (ev->source != KC_ENV_SOURCE_NONE) {
                        r = env_source_value(h, pod, c, ev, pod_ips, n_pod_ips, &val, ret_msg);
                        if (r < 0)
                                return r;
                } else
                        val = strdup("");
                if (!val || env_set(&e, ev->name ? ev->name : "", val) < 0)
                        return -ENOMEM;
        }
        *ret = e.v;
        *ret_n = e.n;
        return 0;
}

/* utilvalidation.IsDNS1123Label's complaints, joined by ";"; NULL when valid. */
static const char *dns1123_label_error(const char *s)
{
        size_t n = strlen(s), i;
        bool bad = n == 0 || !isalnum((unsigned char)s[0]) || !isalnum((unsigned char)s[n - 1]);

        for (i = 0; i < n; i++)
                if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-'))
                        bad = true;
        if (bad && n > HOSTNAME_MAX_LEN)
                return "must be no more than 63 characters;a lowercase RFC 1123 label must consist "
                       "of lower case alphanumeric characters or '-', and must start and end with "
                       "an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "
                       "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        if (n > HOSTNAME_MAX_LEN)
                return "must be no more than 63 characters";
        if (bad)
                return "a lowercase RFC 1123 label must consist of lower case alphanumeric "
                       "characters or '-', and must start and end with an alphanumeric character "
                       "(e.g. 'my-name',  or '123-abc', regex used for validation is "
                       "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
        return NULL;
}

/* GeneratePodHostNameAndDomain. */
static int hostname_and_domain(void *self, const struct kc_api_pod *pod, struct kc_arena *a,
                               const char **ret_hostname, const char **ret_domain, char **ret_msg)
{
        const char *hostname = pod->name ? pod->name : "", *err;
        char buf[HOSTNAME_MAX_LEN + 1];
        const char *domain = NULL;
        size_t n;

        (void)self;
        if (pod->hostname && pod->hostname[0]) {
                if ((err = dns1123_label_error(pod->hostname))) {
                        *ret_msg =
                                kc_strdup_printf("pod Hostname \"%s\" is not a valid DNS label: %s",
                                                 pod->hostname, err);
                        return -EINVAL;
                }
                hostname = pod->hostname;
        }
        if (strlen(hostname) > HOSTNAME_MAX_LEN) {
                memcpy(buf, hostname, HOSTNAME_MAX_LEN);
                n = HOSTNAME_MAX_LEN;
                buf[n] = '\0';
                kc_log_error_s(NULL, "Hostname for pod was too long, truncated it",
                               KC_KV_STR("podName", pod->name),
                               KC_KV_INT("hostnameMaxLen", HOSTNAME_MAX_LEN),
                               KC_KV_STR("truncatedHostname", buf));
                /* A hostname ends in neither '-' nor '.'. */
                while (n > 0 && (buf[n - 1] == '-' || buf[n - 1] == '.'))
                        buf[--n] = '\0';
                if (n == 0) {
                        *ret_msg = kc_strdup_printf("hostname for pod \"%s\" was invalid: \"%s\"",
                                                    pod->name ? pod->name : "", hostname);
                        return -EINVAL;
                }
                hostname = buf;
        }
        if (pod->subdomain && pod->subdomain[0]) {
                _cleanup_free_ char *d = NULL;

                if ((err = dns1123_label_error(pod->subdomain))) {
                        *ret_msg = kc_strdup_printf(
                                "pod Subdomain \"%s\" is not a valid DNS label: %s", pod->subdomain,
                                err);
                        return -EINVAL;
                }
                /* No --cluster-domain in cubelet: the domain ends in "svc." as upstream's would. */
                d = kc_strdup_printf("%s.%s.svc.", pod->subdomain,
                                     pod->namespace ? pod->namespace : "");
                if (!d || !(domain = kc_arena_strdup(a, d)))
                        return -ENOMEM;
        }
        *ret_hostname = kc_arena_strdup(a, hostname);
        if (!*ret_hostname)
                return -ENOMEM;
        *ret_domain = domain;
        return 0;
}

/* A list of strings being built in an arena; duplicates dropped when asked (omitDuplicates). */
struct strs {
        const char **v;
        size_t n, cap;
};

static int strs_add(struct kc_arena *a, struct strs *s, const char *v, bool dedup)
{
        if (dedup)
                for (size_t i = 0; i < s->n; i++)
                        if (strcmp(s->v[i], v) == 0)
                                return 0;
        if (s->n == s->cap) {
                size_t cap = s->cap ? s->cap * 2 : 8;
                const char **nv = kc_arena_alloc(a, cap * sizeof(*nv));

                if (!nv)
                        return -ENOMEM;
                if (s->n)
                        memcpy(nv, s->v, s->n * sizeof(*nv));
                s->v = nv;
                s->cap = cap;
        }
        s->v[s->n] = kc_arena_strdup(a, v);
        return s->v[s->n++] ? 0 : -ENOMEM;
}

/* An option's name: up to the first ':'. */
static size_t opt_name_len(const char *o)
{
        const char *c = strchr(o, ':');

        return c ? (size_t)(c - o) : strlen(o);
}

/* Sets option @p o ("name" or "name:value"), replacing one of the same name in place. */
static int opt_set(struct kc_arena *a, struct strs *s, const char *o)
{
        size_t nl = opt_name_len(o);

        for (size_t i = 0; i < s->n; i++)
                if (opt_name_len(s->v[i]) == nl && strncmp(s->v[i], o, nl) == 0) {
                        s->v[i] = kc_arena_strdup(a, o);
                        return s->v[i] ? 0 : -ENOMEM;
                }
        return strs_add(a, s, o, false);
}

/* The pod's DNS being built. */
struct dns {
        struct strs servers, searches, options;
};

/*
 * parseResolvConf: "nameserver" lines add a server, the last "search"
 * line sets the searches (a trailing dot dropped, "." itself skipped),
 * "options" lines set options; comments start at '#' or ';'.
 */
static void fclosep(FILE **f)
{
        if (*f)
                fclose(*f);
}

static int parse_resolv_conf(const char *path, struct kc_arena *a, struct dns *d, char **ret_msg)
{
        _cleanup_(fclosep) FILE *f = fopen(path, "re");
        _cleanup_free_ char *line = NULL;
        size_t cap = 0;
        int r = 0, err = errno;

        if (!f) {
                *ret_msg = kc_strdup_printf("failed to open DNS resolver config file %s: %s", path,
                                            strerror(err));
                return -err;
        }
        while (r >= 0 && getline(&line, &cap, f) >= 0) {
                char *save = NULL, *key, *w;

                line[strcspn(line, "#;\n")] = '\0';
                key = strtok_r(line, " \t\r", &save);
                if (!key)
                        continue;
                if (strcmp(key, "search") == 0)
                        d->searches.n = 0;
                while (r >= 0 && (w = strtok_r(NULL, " \t\r", &save))) {
                        size_t wl = strlen(w);

                        if (strcmp(key, "nameserver") == 0) {
                                r = strs_add(a, &d->servers, w, false);
                                break; /* one address a line */
                        } else if (strcmp(key, "search") == 0 && strcmp(w, ".") != 0) {
                                if (wl > 1 && w[wl - 1] == '.')
                                        w[wl - 1] = '\0';
                                r = strs_add(a, &d->searches, w, false);
                        } else if (strcmp(key, "options") == 0) {
                                r = opt_set(a, &d->options, w);
                        }
                }
        }
        return r;
}

/* getPodDNSType's answer: none, the cluster's, or the host's. */
enum dns_type { DNS_NONE, DNS_CLUSTER, DNS_HOST };

static enum dns_type pod_dns_type(const struct kc_api_pod *pod)
{
        switch (pod->dns_policy) {
        case KC_DNS_NONE:
                return DNS_NONE;
        case KC_DNS_CLUSTER_FIRST_WITH_HOST_NET:
                return DNS_CLUSTER;
        case KC_DNS_CLUSTER_FIRST:
                return pod->host_network ? DNS_HOST : DNS_CLUSTER;
        default:
                return DNS_HOST;
        }
}

/* appendDNSConfig: the pod's dnsConfig after the base, duplicates dropped, options merged. */
static int append_dns_config(const struct kc_api_pod *pod, struct kc_arena *a, struct dns *d)
{
        const struct kc_api_dns_config *c = &pod->dns_config;
        size_t i;
        int r = 0;

        for (i = 0; r >= 0 && i < c->n_nameservers; i++)
                r = strs_add(a, &d->servers, c->nameservers[i], true);
        for (i = 0; r >= 0 && i < c->n_searches; i++)
                r = strs_add(a, &d->searches, c->searches[i], true);
        for (i = 0; r >= 0 && i < c->n_options; i++) {
                const struct kc_api_dns_option *o = &c->options[i];
                _cleanup_free_ char *s =
                        o->value && o->value[0]
                                ? kc_strdup_printf("%s:%s", o->name ? o->name : "", o->value)
                                : strdup(o->name ? o->name : "");

                r = s ? opt_set(a, &d->options, s) : -ENOMEM;
        }
        return r;
}

/* formDNSConfigFitsLimits: at most 3 servers, 32 searches and 2048 characters of them. */
static void dns_fit_limits(const struct kc_api_pod *pod, struct dns *d)
{
        size_t chars = 0, i;

        if (d->servers.n > MAX_DNS_NAMESERVERS) {
                kc_log_info_s("Nameserver limits were exceeded, some nameservers have been omitted",
                              KC_KV_POD(pod->namespace, pod->name));
                d->servers.n = MAX_DNS_NAMESERVERS;
        }
        for (i = 0; i < d->searches.n && i < MAX_DNS_SEARCH_PATHS; i++) {
                chars += strlen(d->searches.v[i]) + (i ? 1 : 0);
                if (chars > MAX_DNS_SEARCH_LIST_CHARS)
                        break;
        }
        if (i < d->searches.n) {
                kc_log_info_s("Search Line limits were exceeded, some search paths have been "
                              "omitted",
                              KC_KV_POD(pod->namespace, pod->name));
                d->searches.n = i;
        }
}

/* GetPodDNS. */
static int get_pod_dns(void *self, const struct kc_api_pod *pod, struct kc_arena *a,
                       struct kc_cri_dns_config *ret, bool *ret_set, char **ret_msg)
{
        struct kc_kubelet_runtime_helper *h = self;
        enum dns_type t = pod_dns_type(pod);
        struct dns d = { 0 };
        int r = 0;

        if (t != DNS_NONE && h->resolv_conf[0])
                r = parse_resolv_conf(h->resolv_conf, a, &d, ret_msg);
        if (r < 0)
                return r;
        if (t == DNS_NONE)
                d = (struct dns){ 0 };
        if (t == DNS_CLUSTER && !atomic_exchange(&h->warned_cluster_dns, true))
                /* No --cluster-dns in cubelet: ClusterFirst falls back to Default, as upstream's
                 * MissingClusterDNS event says (logged once rather than per pod). */
                kc_log_info_s("kubelet does not have ClusterDNS IP configured and cannot create "
                              "Pod using \"ClusterFirst\" policy. Falling back to \"Default\" "
                              "policy.",
                              KC_KV_POD(pod->namespace, pod->name));
        if (t != DNS_NONE && !h->resolv_conf[0]) {
                /* --resolv-conf="": the local machine's resolver, no search. */
                for (size_t i = 0; r >= 0 && i < h->n_node_ips; i++)
                        r = strs_add(a, &d.servers,
                                     strchr(h->node_ips[i], ':') ? "::1" : "127.0.0.1", false);
                if (r >= 0)
                        r = strs_add(a, &d.searches, ".", false);
        }
        if (r >= 0 && pod->has_dns_config)
                r = append_dns_config(pod, a, &d);
        if (r < 0)
                return r;
        dns_fit_limits(pod, &d);
        *ret = (struct kc_cri_dns_config){ d.servers.v,  d.servers.n, d.searches.v,
                                           d.searches.n, d.options.v, d.options.n };
        *ret_set = true;
        return 0;
}

/*
 * makeMounts (volume_manager.h): the pod's volumes, subPath, the managed
 * /etc/hosts. Without a root dir there are no volumes to mount: a
 * container that mounts one cannot start.
 */
static int make_mounts(const struct kc_kubelet_runtime_helper *h, const struct kc_api_pod *pod,
                       const struct kc_api_container *c, const char *hostname, const char *domain,
                       const char *const *pod_ips, size_t n_pod_ips, const struct kc_label *envs,
                       size_t n_envs, struct kc_arena *a, const struct kc_cri_mount **ret,
                       size_t *ret_n, char **ret_msg)
{
        if (h->volumes)
                return kc__make_mounts(h->volumes, pod, c, hostname, domain, pod_ips, n_pod_ips,
                                       envs, n_envs, a, ret, ret_n, ret_msg);
        if (c->n_volume_mounts > 0) {
                if (asprintf(ret_msg, "cannot find volume \"%s\" to mount into container \"%s\"",
                             c->volume_mounts[0].name, c->name) < 0)
                        *ret_msg = NULL;
                return -ENOENT;
        }
        *ret = NULL;
        *ret_n = 0;
        return 0;
}

/*
 * The pod container directory, made when the container has a termination
 * message path (its file goes there); NULL without one, without a root dir,
 * or when it cannot be made (logged: the container then runs without the
 * file, as upstream).
 */
static const char *pod_container_dir(const struct kc_kubelet_runtime_helper *h,
                                     const struct kc_api_pod *pod, const struct kc_api_container *c,
                                     struct kc_arena *a)
{
        _cleanup_free_ char *dir = NULL;
        int r;

        if (!h->volumes || !c->termination_message_path || !c->termination_message_path[0])
                return NULL;
        r = kc__make_pod_container_dir(h->volumes, pod->uid, c->name, &dir);
        if (r < 0) {
                kc_log_errno_s(r, "Error on creating dir", KC_KV_STR("podUID", pod->uid),
                               KC_KV_STR("containerName", c->name));
                return NULL;
        }
        return kc_arena_strdup(a, dir);
}

/* GenerateRunContainerOptions: env, then the mounts (which may expand subPathExpr with it). */
static int generate_run_container_options(void *self, const struct kc_api_pod *pod,
                                          const struct kc_api_container *c,
                                          const char *const *pod_ips, size_t n_pod_ips,
                                          struct kc_arena *a, struct kc_run_container_options *ret,
                                          char **ret_msg)
{
        struct kc_kubelet_runtime_helper *h = self;
        struct kc_run_container_options o = { 0 };
        const char *hostname = NULL, *domain = NULL;
        int r;

        /* A host-network pod's IPs are the node's (its sandbox has none of its own). */
        if (n_pod_ips == 0 && pod->host_network) {
                pod_ips = (const char *const *)h->node_ips;
                n_pod_ips = h->n_node_ips;
        }
        r = hostname_and_domain(h, pod, a, &hostname, &domain, ret_msg);
        if (r >= 0)
                r = make_environment_variables(h, pod, c, pod_ips, n_pod_ips, a, &o.envs, &o.n_envs,
                                               ret_msg);
        if (r >= 0)
                r = make_mounts(h, pod, c, hostname, domain, pod_ips, n_pod_ips, o.envs, o.n_envs,
                                a, &o.mounts, &o.n_mounts, ret_msg);
        if (r < 0)
                return r;
        o.hostname = hostname;
        o.pod_container_dir = pod_container_dir(h, pod, c, a);
        *ret = o;
        return 0;
}

static const struct kc_runtime_helper_ops helper_ops = {
        .generate_run_container_options = generate_run_container_options,
        .get_pod_dns = get_pod_dns,
        .generate_pod_hostname_and_domain = hostname_and_domain,
};

struct kc_runtime_helper kc_kubelet_runtime_helper_get(struct kc_kubelet_runtime_helper *h)
{
        return (struct kc_runtime_helper){ .ops = &helper_ops, .self = h };
}

int kc_kubelet_runtime_helper_new(const struct kc_kubelet_runtime_helper_config *cfg,
                                  struct kc_kubelet_runtime_helper **ret)
{
        _cleanup_(kc_kubelet_runtime_helper_freep) struct kc_kubelet_runtime_helper *h = NULL;

        if (!cfg || !ret || cfg->n_node_ips == 0)
                return -EINVAL;
        h = calloc(1, sizeof(*h));
        if (!h)
                return -ENOMEM;
        h->node_ips = calloc(cfg->n_node_ips, sizeof(*h->node_ips));
        h->node_name = strdup(cfg->node_name ? cfg->node_name : "");
        h->resolv_conf = strdup(cfg->resolv_conf ? cfg->resolv_conf : "/etc/resolv.conf");
        h->root_dir = cfg->root_dir ? strdup(cfg->root_dir) : NULL;
        if (!h->node_ips || !h->node_name || !h->resolv_conf || (cfg->root_dir && !h->root_dir))
                return -ENOMEM;
        for (; h->n_node_ips < cfg->n_node_ips; h->n_node_ips++)
                if (!(h->node_ips[h->n_node_ips] = strdup(cfg->node_ips[h->n_node_ips])))
                        return -ENOMEM;
        h->alloc_milli_cpu = cfg->allocatable_milli_cpu;
        h->alloc_memory = cfg->allocatable_memory;
        h->alloc_ephemeral = cfg->allocatable_ephemeral_storage;
        h->memory_capacity = cfg->memory_capacity;
        if (!h->alloc_milli_cpu && !h->alloc_memory && !h->alloc_ephemeral) {
                struct kc_machine_info m = { 0 };
                uint64_t mem, fs;

                if (kc__machine_info_read(NULL, cfg->root_dir, &m) < 0)
                        return -ENOMEM;
                kc__machine_allocatable(&m, &mem, &fs);
                h->alloc_milli_cpu = (int64_t)m.cpus * 1000;
                h->alloc_memory = (int64_t)mem;
                h->alloc_ephemeral = (int64_t)fs;
                h->memory_capacity = (int64_t)m.memory_bytes;
                kc__machine_info_done(&m);
        }
        if (h->root_dir) {
                const struct kc_volume_manager_config vc = {
                        .root_dir = h->root_dir,
                        .node_memory_bytes = h->alloc_memory > 0 ? (uint64_t)h->alloc_memory : 0,
                };
                int r = kc__volume_manager_new(&vc, &h->volumes);

                if (r < 0)
                        return r;
        }
        atomic_init(&h->warned_cluster_dns, false);
        *ret = TAKE_PTR(h);
        return 0;
}

int64_t kc_kubelet_runtime_helper_memory_capacity(const struct kc_kubelet_runtime_helper *h)
{
        return h->memory_capacity;
}

struct kc_kubelet_runtime_helper *
kc_kubelet_runtime_helper_free(struct kc_kubelet_runtime_helper *h)
{
        if (!h)
                return NULL;
        for (size_t i = 0; i < h->n_node_ips; i++)
                free(h->node_ips[i]);
        free(h->node_ips);
        free(h->node_name);
        free(h->resolv_conf);
        free(h->root_dir);
        kc__volume_manager_free(h->volumes);
        free(h);
        return NULL;
}
