/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The process_* metrics as client_golang's process collector exposes them
 * on Linux (it reads them through prometheus/procfs at every scrape):
 *
 *   process_cpu_seconds_total      (utime + stime) / USER_HZ of <proc>/self/stat
 *   process_virtual_memory_bytes   vsize of <proc>/self/stat
 *   process_resident_memory_bytes  rss pages of <proc>/self/stat times the page size
 *   process_start_time_seconds     btime of <proc>/stat + starttime / USER_HZ
 *   process_open_fds               entries of <proc>/self/fd
 *   process_max_fds                the soft "Max open files" of <proc>/self/limits
 *
 * procfs takes USER_HZ as 100 (the kernel's fixed ABI value); so do we.
 * The CPU counter only goes up: each refresh adds the growth since the last.
 */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "metrics/process.h"
#include "metrics/registry.h"

#define USER_HZ 100.0

struct process_metrics {
        char *proc_root;
        struct kc_counter *cpu;
        struct kc_gauge *open_fds;
        struct kc_gauge *max_fds;
        struct kc_gauge *virtual_memory;
        struct kc_gauge *resident_memory;
        struct kc_gauge *start_time;
};

/* Reads <proc_root>/<rel> into @p buf (NUL-terminated). */
static int read_proc_file(const char *proc_root, const char *rel, char *buf, size_t size)
{
        char path[512];
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "%s/%s", proc_root, rel);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, buf, size - 1);
        close(fd);
        if (n < 0)
                return -EIO;
        buf[n] = '\0';
        return 0;
}

/* <proc>/self/stat: the CPU time, memory sizes and start time (in ticks since boot). */
static void collect_stat(const struct process_metrics *p)
{
        char buf[1024], sys[4096];
        unsigned long long utime, stime, start, vsize;
        long long rss;
        const char *btime;
        char *rp;

        if (read_proc_file(p->proc_root, "self/stat", buf, sizeof(buf)) < 0)
                return;
        /* The command name may hold spaces and parentheses: fields start after the last ')'. */
        rp = strrchr(buf, ')');
        if (!rp || sscanf(rp + 1,
                          " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d "
                          "%*d %*d %llu %llu %lld",
                          &utime, &stime, &start, &vsize, &rss) != 5)
                return;
        {
                double cpu = (double)(utime + stime) / USER_HZ;
                double grown = cpu - kc_counter_value(p->cpu);

                if (grown > 0)
                        kc_counter_add_mp(p->cpu, grown);
        }
        kc_gauge_set_mp(p->virtual_memory, (double)vsize);
        kc_gauge_set_mp(p->resident_memory, (double)rss * (double)sysconf(_SC_PAGESIZE));
        if (read_proc_file(p->proc_root, "stat", sys, sizeof(sys)) < 0)
                return;
        btime = strstr(sys, "\nbtime ");
        if (btime)
                kc_gauge_set_mp(p->start_time,
                                strtod(btime + strlen("\nbtime "), NULL) + (double)start / USER_HZ);
}

static void collect_fds(const struct process_metrics *p)
{
        char path[512], buf[4096];
        const char *line;
        struct dirent *de;
        double n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "%s/self/fd", p->proc_root);
        d = opendir(path);
        if (d) {
                while ((de = readdir(d)))
                        if (de->d_name[0] != '.')
                                n++;
                closedir(d);
                /* Go counts the fd its own directory read holds too; so does this. */
                kc_gauge_set_mp(p->open_fds, n);
        }
        if (read_proc_file(p->proc_root, "self/limits", buf, sizeof(buf)) < 0)
                return;
        line = strstr(buf, "Max open files");
        if (line) {
                line += strlen("Max open files");
                line += strspn(line, " ");
                if (strncmp(line, "unlimited", 9) == 0)
                        kc_gauge_set_mp(p->max_fds, -1); /* Go reports unlimited as -1 too */
                else
                        kc_gauge_set_mp(p->max_fds, strtod(line, NULL));
        }
}

static void collect(void *userdata)
{
        const struct process_metrics *p = userdata;

        collect_stat(p);
        collect_fds(p);
}

/* The six metrics, in the order the Go client describes them. */
static int register_all(struct kc_metrics_registry *r, struct process_metrics *p)
{
        int k;

        k = kc_metrics_counter_new(r, "process_cpu_seconds_total",
                                   "Total user and system CPU time spent in seconds.", &p->cpu);
        if (k >= 0)
                k = kc_metrics_gauge_new(r, "process_open_fds", "Number of open file descriptors.",
                                         &p->open_fds);
        if (k >= 0)
                k = kc_metrics_gauge_new(r, "process_max_fds",
                                         "Maximum number of open file descriptors.", &p->max_fds);
        if (k >= 0)
                k = kc_metrics_gauge_new(r, "process_virtual_memory_bytes",
                                         "Virtual memory size in bytes.", &p->virtual_memory);
        if (k >= 0)
                k = kc_metrics_gauge_new(r, "process_resident_memory_bytes",
                                         "Resident memory size in bytes.", &p->resident_memory);
        if (k >= 0)
                k = kc_metrics_gauge_new(r, "process_start_time_seconds",
                                         "Start time of the process since unix epoch in seconds.",
                                         &p->start_time);
        return k;
}

static void process_metrics_free(void *userdata)
{
        struct process_metrics *p = userdata;

        free(p->proc_root);
        free(p);
}

int kc_process_metrics_register(struct kc_metrics_registry *r, const char *proc_root)
{
        struct process_metrics *p;
        int k;

        assert(r);
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        p->proc_root = strdup(proc_root ? proc_root : "/proc");
        if (!p->proc_root) {
                process_metrics_free(p);
                return -ENOMEM;
        }
        k = register_all(r, p);
        if (k >= 0)
                k = kc_metrics_registry_add_collector(r, collect, process_metrics_free, p);
        if (k < 0) {
                process_metrics_free(p);
                return k;
        }
        return 0;
}
