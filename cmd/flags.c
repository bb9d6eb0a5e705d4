/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The daemon's command line (upstream cmd/kubelet/app/options): kubelet's
 * flag names, one table that drives parsing, defaults and --help, so the
 * help text cannot drift from what is parsed. Defaults are parsed from their
 * own text by the same code as user values.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/flags.h"
#include "core/cleanup.h"
#include "core/duration.h"
#include "core/format.h"

enum flag_type {
        FLAG_STRING,
        FLAG_DURATION,
        FLAG_PORT,
        FLAG_INT,
        FLAG_LEVEL,
        FLAG_ADDRESS,
        FLAG_ENDPOINT,
        FLAG_GATES,
        FLAG_BOOL,
};

struct flag {
        const char *name;
        enum flag_type type;
        size_t offset;
        const char *def; /* parsed like a user value; NULL: computed or unset */
        const char *help;
};

#define F(field) offsetof(struct kc_kubelet_flags, field)

static const struct flag flags[] = {
        { "container-runtime-endpoint", FLAG_ENDPOINT, F(container_runtime_endpoint), "sim://",
          "The runtime: sim:// is the embedded simulated runtime; unix:///path a CRI socket" },
        { "pod-manifest-path", FLAG_STRING, F(pod_manifest_path), NULL,
          "Directory of static pod manifests to run (unset: no static pods are run)" },
        { "file-check-frequency", FLAG_DURATION, F(file_check_frequency_ns), "20s",
          "How often the manifest directory is rescanned (it is also watched with inotify)" },
        { "sync-frequency", FLAG_DURATION, F(sync_frequency_ns), "1m0s",
          "Max period between synchronizing running containers and config" },
        { "runtime-request-timeout", FLAG_DURATION, F(runtime_request_timeout_ns), "2m0s",
          "Timeout of every runtime request except long-running ones" },
        { "feature-gates", FLAG_GATES, F(evented_pleg), "",
          "Comma-separated Gate=true|false pairs; known gates: EventedPLEG (false unless set)" },
        { "evented-pleg-cache-update-period", FLAG_DURATION, F(evented_pleg_cache_update_period_ns),
          "2s",
          "With EventedPLEG: how often the pod cache's global timestamp advances "
          "(globalCacheUpdatePeriod)" },
        { "evented-pleg-reprobe-period", FLAG_DURATION, F(evented_pleg_reprobe_period_ns), "5m0s",
          "With EventedPLEG fallen back to relisting: how often the event stream is probed "
          "again (cubelet extension)" },
        { "address", FLAG_ADDRESS, F(address), "127.0.0.1",
          "IP address the read-only HTTP server listens on (0.0.0.0 or :: for all)" },
        { "port", FLAG_PORT, F(port), "10255",
          "Port of the read-only HTTP server (/healthz, /metrics, /pods, /node); 0 disables it" },
        { "healthz-bind-address", FLAG_ADDRESS, F(healthz_bind_address), "127.0.0.1",
          "IP address of the healthz server" },
        { "healthz-port", FLAG_PORT, F(healthz_port), "10248",
          "Port of the healthz server (/healthz only); 0 disables it" },
        { "hostname-override", FLAG_STRING, F(hostname_override), NULL,
          "The node name; static pod names get \"-<node name>\"" },
        { "node-ip", FLAG_ADDRESS, F(node_ip), NULL,
          "The node's IP, reported as hostIP (default: the first non-loopback IPv4 address)" },
        { "root-dir", FLAG_STRING, F(root_dir), "/var/lib/kubelet",
          "Directory for the kubelet's files (reserved: nothing is written there yet)" },
        { "resolv-conf", FLAG_STRING, F(resolv_conf), "/etc/resolv.conf",
          "Resolver configuration the DNS of pods with dnsPolicy Default starts from; \"\" "
          "gives them the node's own resolver (127.0.0.1)" },
        { "max-wait-for-container-runtime", FLAG_DURATION, F(max_wait_for_container_runtime_ns),
          "30s",
          "How long after the last successful runtime status the runtime counts as down "
          "(kubelet's maxWaitForContainerRuntime)" },
        { "maximum-dead-containers-per-container", FLAG_INT,
          F(maximum_dead_containers_per_container), "1",
          "Dead instances of each container to keep (at least 1 is always kept)" },
        { "crash-loop-back-off-initial-container-restart-period", FLAG_DURATION,
          F(crash_loop_initial_ns), "10s",
          "First delay before restarting a crashed container (cubelet extension)" },
        { "crash-loop-back-off-max-container-restart-period", FLAG_DURATION, F(crash_loop_max_ns),
          "5m0s",
          "Cap of the container restart backoff (KubeletConfiguration "
          "crashLoopBackOff.maxContainerRestartPeriod)" },
        { "v", FLAG_LEVEL, F(verbosity), "0", "Log level verbosity (0 to 10); also -v N" },
        { "help", FLAG_BOOL, F(help), NULL, "Show this help and exit; also -h" },
        { "version", FLAG_BOOL, F(version), NULL, "Print the version and exit" },
};

static const struct flag *find_flag(const char *name, size_t len)
{
        for (size_t i = 0; i < KC_ELEMENTSOF(flags); i++)
                if (strlen(flags[i].name) == len && strncmp(flags[i].name, name, len) == 0)
                        return &flags[i];
        return NULL;
}

static int fail(char **ret_err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char **ret_err, const char *fmt, ...)
{
        va_list ap;
        char *s;

        va_start(ap, fmt);
        s = kc_strdup_vprintf(fmt, ap);
        va_end(ap);
        if (!s)
                return -ENOMEM;
        *ret_err = s;
        return -EINVAL;
}

static int parse_long(const char *s, long min, long max, long *ret)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < min || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

static bool valid_address(const char *s)
{
        unsigned char buf[sizeof(struct in6_addr)];

        return inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1;
}

/* "EventedPLEG=true,..." — only known gates, upstream's message otherwise. */
static int parse_gates(const char *s, bool *evented, char **ret_err)
{
        _cleanup_free_ char *copy = strdup(s);
        char *save = NULL, *tok;
        bool ev = false;

        if (!copy)
                return -ENOMEM;
        for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '=');

                if (!eq)
                        return fail(ret_err, "--feature-gates: missing bool value for %s", tok);
                *eq = '\0';
                if (strcmp(tok, "EventedPLEG") != 0)
                        return fail(ret_err, "--feature-gates: unrecognized feature gate: %s", tok);
                if (strcmp(eq + 1, "true") == 0)
                        ev = true;
                else if (strcmp(eq + 1, "false") == 0)
                        ev = false;
                else
                        return fail(ret_err,
                                    "--feature-gates: invalid value of %s=%s, err: want "
                                    "true or false",
                                    tok, eq + 1);
        }
        *evented = ev;
        return 0;
}

static int set_string(char **field, const char *v)
{
        char *s = strdup(v);

        if (!s)
                return -ENOMEM;
        free(*field);
        *field = s;
        return 0;
}

static int set_flag(struct kc_kubelet_flags *f, const struct flag *fl, const char *v,
                    char **ret_err)
{
        void *p = (char *)f + fl->offset;
        int64_t d;
        long n;

        switch (fl->type) {
        case FLAG_STRING:
                return set_string(p, v);
        case FLAG_ENDPOINT:
                if (strcmp(v, "sim://") != 0 && strcmp(v, "sim") != 0 &&
                    (strncmp(v, "unix://", 7) != 0 || v[7] != '/'))
                        return fail(ret_err,
                                    "--%s: unsupported endpoint \"%s\" (want sim:// or "
                                    "unix:///path/to/socket)",
                                    fl->name, v);
                return set_string(p, v);
        case FLAG_ADDRESS:
                if (!valid_address(v))
                        return fail(ret_err, "--%s: \"%s\" is not an IP address", fl->name, v);
                return set_string(p, v);
        case FLAG_DURATION:
                if (kc_parse_duration(v, &d) < 0 || d <= 0)
                        return fail(ret_err,
                                    "--%s: invalid duration \"%s\" (want a positive Go "
                                    "duration such as 500ms, 20s or 1m0s)",
                                    fl->name, v);
                *(int64_t *)p = d;
                return 0;
        case FLAG_PORT:
                if (parse_long(v, 0, 65535, &n) < 0)
                        return fail(ret_err, "--%s: invalid port \"%s\" (want 0 to 65535)",
                                    fl->name, v);
                *(uint16_t *)p = (uint16_t)n;
                return 0;
        case FLAG_INT:
                if (parse_long(v, 0, 1000000, &n) < 0)
                        return fail(ret_err, "--%s: invalid value \"%s\" (want 0 to 1000000)",
                                    fl->name, v);
                *(int *)p = (int)n;
                return 0;
        case FLAG_LEVEL:
                if (parse_long(v, 0, 10, &n) < 0)
                        return fail(ret_err, "-v: invalid verbosity \"%s\" (want 0 to 10)", v);
                *(int *)p = (int)n;
                return 0;
        case FLAG_GATES:
                return parse_gates(v, p, ret_err);
        case FLAG_BOOL:
                if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
                        return fail(ret_err, "--%s: invalid value \"%s\" (want true or false)",
                                    fl->name, v);
                *(bool *)p = strcmp(v, "true") == 0;
                return 0;
        }
        return -EINVAL;
}

/* The host name, lowercased (upstream nodeutil.GetHostname). */
static int default_hostname(char **ret)
{
        char buf[256];

        if (gethostname(buf, sizeof(buf) - 1) < 0)
                return -errno;
        buf[sizeof(buf) - 1] = '\0';
        for (char *c = buf; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        if (!buf[0])
                return -EINVAL;
        return set_string(ret, buf);
}

static int apply_defaults(struct kc_kubelet_flags *f)
{
        for (size_t i = 0; i < KC_ELEMENTSOF(flags); i++) {
                char *err = NULL;
                int r;

                if (!flags[i].def)
                        continue;
                r = set_flag(f, &flags[i], flags[i].def, &err);
                free(err);
                if (r < 0)
                        return r == -EINVAL ? -EFAULT : r; /* a bad default is our bug */
        }
        return 0;
}

void kc_kubelet_flags_done(struct kc_kubelet_flags *f)
{
        if (!f)
                return;
        free(f->container_runtime_endpoint);
        free(f->pod_manifest_path);
        free(f->address);
        free(f->healthz_bind_address);
        free(f->hostname_override);
        free(f->node_ip);
        free(f->root_dir);
        free(f->resolv_conf);
        *f = (struct kc_kubelet_flags){ 0 };
}

static int check(const struct kc_kubelet_flags *f, char **ret_err)
{
        if (f->crash_loop_max_ns < f->crash_loop_initial_ns)
                return fail(ret_err,
                            "--crash-loop-back-off-max-container-restart-period must not be "
                            "below --crash-loop-back-off-initial-container-restart-period");
        if (f->pod_manifest_path && !f->pod_manifest_path[0])
                return fail(ret_err, "--pod-manifest-path: must not be empty");
        if (f->hostname_override && !f->hostname_override[0])
                return fail(ret_err, "--hostname-override: must not be empty");
        return 0;
}

int kc_kubelet_flags_parse(int argc, char *const *argv, struct kc_kubelet_flags *ret,
                           int *ret_optind, char **ret_err)
{
        struct kc_kubelet_flags f = { 0 };
        char *err = NULL;
        int i = 1, r;

        if (!ret || !ret_optind || !ret_err || argc < 1)
                return -EINVAL;
        r = apply_defaults(&f);
        for (; r >= 0 && i < argc && argv[i][0] == '-' && argv[i][1]; i++) {
                const char *a = argv[i], *name, *eq, *value;
                const struct flag *fl;
                size_t len;

                if (strcmp(a, "--") == 0) {
                        i++;
                        break;
                }
                name = a + (a[1] == '-' ? 2 : 1);
                eq = strchr(name, '=');
                len = eq ? (size_t)(eq - name) : strlen(name);
                /* Long flags take two dashes; only -v and -h have a one-dash spelling. */
                if (len == 1 && name[0] == 'h')
                        fl = find_flag("help", 4);
                else if (a[1] == '-' || len == 1)
                        fl = find_flag(name, len);
                else
                        fl = NULL;
                if (!fl) {
                        r = fail(&err, "unknown flag: %.*s (see cubelet --help)",
                                 (int)(len + (size_t)(name - a)), a);
                        break;
                }
                if (eq)
                        value = eq + 1;
                else if (fl->type == FLAG_BOOL)
                        value = "true";
                else if (i + 1 < argc)
                        value = argv[++i];
                else {
                        r = fail(&err, "flag needs an argument: %s", a);
                        break;
                }
                r = set_flag(&f, fl, value, &err);
        }
        if (r >= 0 && !f.hostname_override)
                r = default_hostname(&f.hostname_override);
        if (r >= 0)
                r = check(&f, &err);
        if (r < 0) {
                kc_kubelet_flags_done(&f);
                if (err)
                        *ret_err = err;
                return r;
        }
        *ret = f;
        *ret_optind = i;
        return 0;
}

void kc_kubelet_flags_usage(FILE *out)
{
        fputs("usage: cubelet [flags]                  run the node agent\n"
              "       cubelet [-v N] pleg-replay [FILE|-]  drive a GenericPLEG from a script\n"
              "\n"
              "flags (kubelet's names; --flag=value or --flag value):\n",
              out);
        for (size_t i = 0; i < KC_ELEMENTSOF(flags); i++) {
                const struct flag *fl = &flags[i];
                const char *def = fl->def;

                if (fl->offset == F(hostname_override))
                        def = "the host name, lowercased";
                else if (fl->offset == F(node_ip))
                        def = "detected";
                fprintf(out, "  --%s\n        %s", fl->name, fl->help);
                if (fl->type == FLAG_BOOL)
                        fputs(" (default false)\n", out);
                else if (def)
                        fprintf(out, " (default \"%s\")\n", def);
                else
                        fputs(" (default unset)\n", out);
        }
}
