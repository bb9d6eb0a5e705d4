/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Static-pod manifest parse time (kc_manifest_parse). Two kinds of input:
 * - a Pod with N containers `{name: cI, image: b}` (1,000, 4,975 and
 *   19,900 by default; 19,900 is near KC_MANIFEST_MAX_NODES), the
 *   shape that once made the duplicate-name check quadratic: the figure to
 *   watch is the ratio between sizes, about 4x per 4x the containers when
 *   the parse is linear (it was ~13x when quadratic);
 * - realistic manifests read from files (tests/e2e/manifests/
 *   kube-apiserver.yaml in the source tree by default).
 * Each input is parsed once as a warm-up, then R times (21; 3 with
 * --quick); it prints the median, fastest and slowest wall time in µs and
 * the median CPU time of the thread (CLOCK_THREAD_CPUTIME_ID, which a busy
 * machine disturbs less); the ratios between sizes are of the CPU medians.
 *
 * Usage: bench_manifest [--quick] [--containers N ...] [--runs R] [--manifest PATH ...]
 * It prints figures; it never fails on them (only a parse error or a bad
 * argument fails).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "kubelet/config/manifest.h"
#include "runtime/api_pod.h"

#define MAX_RUNS 1001
#define MAX_INPUTS 16
#define SEEN_NS (INT64_C(1700000000) * KC_NSEC_PER_SEC)

static int64_t clock_ns(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (int64_t)ts.tv_sec * KC_NSEC_PER_SEC + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* A Pod whose spec.containers holds @p n distinct containers c0..c{n-1}; NULL on ENOMEM. */
static char *many_containers(size_t n, size_t *len)
{
        size_t cap = 128 + n * 40, o, i;
        char *buf = malloc(cap);

        if (!buf)
                return NULL;
        o = (size_t)snprintf(buf, cap,
                             "apiVersion: v1\nkind: Pod\nmetadata: {name: many}\nspec:\n"
                             "  containers:\n");
        for (i = 0; i < n; i++)
                o += (size_t)snprintf(buf + o, cap - o, "  - {name: c%zu, image: b}\n", i);
        *len = o;
        return buf;
}

/* The whole file at @p path, malloc'd; NULL with errno set on failure. */
static char *read_file(const char *path, size_t *len)
{
        FILE *f = fopen(path, "re");
        char *buf = NULL;
        long size;

        if (!f)
                return NULL;
        if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
            (buf = malloc((size_t)size + 1)) && fread(buf, 1, (size_t)size, f) == (size_t)size) {
                *len = (size_t)size;
        } else {
                free(buf);
                buf = NULL;
                errno = errno ? errno : EIO;
        }
        fclose(f);
        return buf;
}

/*
 * Parses @p data @p runs times after one warm-up; the median CPU time in
 * ns, or -1 after printing why a parse failed. @p want_containers 0: any
 * count.
 */
static int64_t bench_parse(const char *what, const char *data, size_t len, size_t want_containers,
                           int runs)
{
        int64_t t[MAX_RUNS], cpu[MAX_RUNS];
        size_t containers = 0;

        for (int i = -1; i < runs; i++) {
                struct kc_api_pod *p = NULL;
                char *err = NULL;
                int64_t t0 = clock_ns(CLOCK_MONOTONIC), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                int r = kc_manifest_parse(data, len, what, "node", SEEN_NS, &p, &err);

                if (i >= 0) {
                        cpu[i] = clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
                        t[i] = clock_ns(CLOCK_MONOTONIC) - t0;
                }
                if (r < 0) {
                        fprintf(stderr, "bench_manifest: %s: %s\n", what, err ? err : strerror(-r));
                        free(err);
                        return -1;
                }
                containers = p->n_containers;
                kc_api_pod_unref(p);
                if (want_containers && containers != want_containers) {
                        fprintf(stderr, "bench_manifest: %s: %zu containers, want %zu\n", what,
                                containers, want_containers);
                        return -1;
                }
        }
        qsort(t, (size_t)runs, sizeof(*t), cmp_i64);
        qsort(cpu, (size_t)runs, sizeof(*cpu), cmp_i64);
        printf("%-20s %7zu bytes %6zu containers  wall median=%8.1f us  min=%8.1f us  "
               "max=%8.1f us  cpu median=%8.1f us\n",
               what, len, containers, t[runs / 2] / 1e3, t[0] / 1e3, t[runs - 1] / 1e3,
               cpu[runs / 2] / 1e3);
        fflush(stdout);
        return cpu[runs / 2];
}

static int usage(const char *argv0)
{
        fprintf(stderr,
                "usage: %s [--quick] [--containers N ...] [--runs R] [--manifest PATH ...]\n",
                argv0);
        return 2;
}

int main(int argc, char **argv)
{
        size_t sizes[MAX_INPUTS] = { 1000, 4975, 19900 }, n_sizes = 3, custom = 0, n_files = 0;
        const char *files[MAX_INPUTS] = { KC_SOURCE_DIR
                                          "/tests/e2e/manifests/kube-apiserver.yaml" };
        int64_t medians[MAX_INPUTS];
        bool custom_files = false;
        int runs = 21;

        for (int i = 1; i < argc; i++) {
                if (strcmp(argv[i], "--quick") == 0) {
                        runs = 3;
                } else if (strcmp(argv[i], "--containers") == 0 && i + 1 < argc &&
                           custom < MAX_INPUTS) {
                        sizes[custom++] = strtoul(argv[++i], NULL, 10);
                        n_sizes = custom;
                } else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc) {
                        runs = atoi(argv[++i]);
                } else if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc &&
                           n_files < MAX_INPUTS) {
                        custom_files = true;
                        files[n_files++] = argv[++i];
                } else {
                        return usage(argv[0]);
                }
        }
        if (runs < 1 || runs > MAX_RUNS)
                return usage(argv[0]);
        if (!custom_files)
                n_files = 1;
        printf("kc_manifest_parse, %d runs after a warm-up\n", runs);
        for (size_t k = 0; k < n_sizes; k++) {
                char what[48];
                size_t len;
                char *buf = many_containers(sizes[k], &len);

                if (!buf || sizes[k] == 0) {
                        free(buf);
                        return usage(argv[0]);
                }
                snprintf(what, sizeof(what), "%zu containers", sizes[k]);
                medians[k] = bench_parse(what, buf, len, sizes[k], runs);
                free(buf);
                if (medians[k] < 0)
                        return 1;
        }
        /* Linear: the time grows as the containers do. */
        for (size_t k = 1; k < n_sizes; k++)
                printf("%zu -> %zu containers (x%.2f): cpu time x%.2f\n", sizes[k - 1], sizes[k],
                       (double)sizes[k] / (double)sizes[k - 1],
                       (double)medians[k] / (double)(medians[k - 1] ? medians[k - 1] : 1));
        for (size_t k = 0; k < n_files; k++) {
                const char *base = strrchr(files[k], '/');
                size_t len;
                char *buf = read_file(files[k], &len);

                if (!buf) {
                        fprintf(stderr, "bench_manifest: %s: %s\n", files[k], strerror(errno));
                        return 1;
                }
                if (bench_parse(base ? base + 1 : files[k], buf, len, 0, runs) < 0) {
                        free(buf);
                        return 1;
                }
                free(buf);
        }
        return 0;
}
