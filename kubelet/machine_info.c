/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the kubelet learns about its machine from cadvisor (MachineInfo,
 * VersionInfo, RootFsInfo) and puts in the Node's nodeInfo and capacity:
 * the machine, system and boot IDs, the kernel and OS image, the CPUs,
 * MemTotal, the huge page pools and the size of the filesystem holding the
 * kubelet's root dir. Read once, when the node status is built.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "core/cleanup.h"
#include "machine_info.h"

static FILE *open_under(const char *host_root, const char *path)
{
        char full[PATH_MAX];

        if (snprintf(full, sizeof(full), "%s%s", host_root, path) >= (int)sizeof(full))
                return NULL;
        return fopen(full, "re");
}

/* The file's first line without surrounding blanks; "" when unreadable. */
static char *read_line(const char *host_root, const char *path)
{
        char line[512] = "", *s = line, *e;
        FILE *f = open_under(host_root, path);

        if (f) {
                if (!fgets(line, sizeof(line), f))
                        line[0] = '\0';
                fclose(f);
        }
        while (*s == ' ' || *s == '\t')
                s++;
        e = s + strlen(s);
        while (e > s && (e[-1] == '\n' || e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
                *--e = '\0';
        return strdup(s);
}

/* PRETTY_NAME of os-release, its quotes removed; "Linux" without one. */
static char *read_os_image(const char *host_root)
{
        char line[512], *v, *e;
        FILE *f = open_under(host_root, "/etc/os-release");

        if (!f)
                f = open_under(host_root, "/usr/lib/os-release");
        while (f && fgets(line, sizeof(line), f)) {
                if (strncmp(line, "PRETTY_NAME=", 12) != 0)
                        continue;
                fclose(f);
                v = line + 12;
                v[strcspn(v, "\r\n")] = '\0';
                e = v + strlen(v);
                if (e - v >= 2 && (*v == '"' || *v == '\'') && e[-1] == *v) {
                        e[-1] = '\0';
                        v++;
                }
                return strdup(v);
        }
        if (f)
                fclose(f);
        return strdup("Linux");
}

static char *read_kernel_version(const char *host_root)
{
        struct utsname u;
        char *v = read_line(host_root, "/proc/sys/kernel/osrelease");

        if (!v || v[0] || uname(&u) < 0)
                return v;
        free(v);
        return strdup(u.release);
}

static uint64_t read_cpus(const char *host_root)
{
        char line[256];
        uint64_t n = 0;
        long online;
        FILE *f = open_under(host_root, "/proc/cpuinfo");

        while (f && fgets(line, sizeof(line), f))
                if (strncmp(line, "processor", 9) == 0 && strchr(line, ':'))
                        n++;
        if (f)
                fclose(f);
        if (n == 0 && (online = sysconf(_SC_NPROCESSORS_ONLN)) > 0)
                n = (uint64_t)online;
        return n;
}

static uint64_t read_mem_total(const char *host_root)
{
        char line[256];
        uint64_t kib = 0;
        FILE *f = open_under(host_root, "/proc/meminfo");

        while (f && fgets(line, sizeof(line), f))
                if (sscanf(line, "MemTotal: %" SCNu64 " kB", &kib) == 1)
                        break;
        if (f)
                fclose(f);
        return kib * 1024;
}

/* The root dir's filesystem; before the dir exists, its nearest parent's. */
static uint64_t read_fs_size(const char *root_dir)
{
        char dir[PATH_MAX], *slash;
        struct statvfs st;

        if (!root_dir || snprintf(dir, sizeof(dir), "%s", root_dir) >= (int)sizeof(dir))
                return 0;
        while (statvfs(dir[0] ? dir : "/", &st) < 0) {
                slash = strrchr(dir, '/');
                if (!slash || !dir[0])
                        return 0;
                *slash = '\0';
        }
        return (uint64_t)st.f_blocks * st.f_frsize;
}

static int cmp_hugepages(const void *a, const void *b)
{
        const struct kc_hugepages *x = a, *y = b;

        return (x->page_bytes > y->page_bytes) - (x->page_bytes < y->page_bytes);
}

/* One pool per /sys/kernel/mm/hugepages/hugepages-<size>kB directory. */
static int read_hugepages(const char *host_root, struct kc_machine_info *m)
{
        char path[PATH_MAX], *nr;
        struct dirent *de;
        uint64_t kib, pages;
        DIR *d;

        if (snprintf(path, sizeof(path), "%s/sys/kernel/mm/hugepages", host_root) >=
            (int)sizeof(path))
                return 0;
        d = opendir(path);
        while (d && (de = readdir(d))) {
                struct kc_hugepages *grown;

                if (sscanf(de->d_name, "hugepages-%" SCNu64 "kB", &kib) != 1 || kib == 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/kernel/mm/hugepages/%s/nr_hugepages",
                         de->d_name);
                nr = read_line(host_root, path);
                pages = nr ? strtoull(nr, NULL, 10) : 0;
                free(nr);
                grown = realloc(m->hugepages, (m->n_hugepages + 1) * sizeof(*grown));
                if (!grown) {
                        closedir(d);
                        return -ENOMEM;
                }
                m->hugepages = grown;
                m->hugepages[m->n_hugepages++] =
                        (struct kc_hugepages){ .page_bytes = kib * 1024,
                                               .total_bytes = pages * kib * 1024 };
        }
        if (d)
                closedir(d);
        if (m->n_hugepages)
                qsort(m->hugepages, m->n_hugepages, sizeof(*m->hugepages), cmp_hugepages);
        return 0;
}

int kc__machine_info_read(const char *host_root, const char *root_dir, struct kc_machine_info *ret)
{
        struct kc_machine_info m = { 0 };

        if (!host_root)
                host_root = "";
        m.machine_id = read_line(host_root, "/etc/machine-id");
        if (m.machine_id && !m.machine_id[0]) {
                free(m.machine_id);
                m.machine_id = read_line(host_root, "/var/lib/dbus/machine-id");
        }
        m.system_uuid = read_line(host_root, "/sys/class/dmi/id/product_uuid");
        m.boot_id = read_line(host_root, "/proc/sys/kernel/random/boot_id");
        m.kernel_version = read_kernel_version(host_root);
        m.os_image = read_os_image(host_root);
        m.cpus = read_cpus(host_root);
        m.memory_bytes = read_mem_total(host_root);
        m.ephemeral_bytes = read_fs_size(root_dir);
        if (!m.machine_id || !m.system_uuid || !m.boot_id || !m.kernel_version || !m.os_image ||
            read_hugepages(host_root, &m) < 0) {
                kc__machine_info_done(&m);
                return -ENOMEM;
        }
        *ret = m;
        return 0;
}

/* The default --eviction-hard reservations (nodefs.available<10% is a float32 percentage). */
#define EVICTION_HARD_MEMORY (UINT64_C(100) << 20)
#define EVICTION_HARD_NODEFS ((double)0.1f)

void kc__machine_allocatable(const struct kc_machine_info *m, uint64_t *ret_memory,
                             uint64_t *ret_ephemeral)
{
        uint64_t mem = m->memory_bytes, fs = m->ephemeral_bytes, huge = 0;

        for (size_t i = 0; i < m->n_hugepages; i++)
                huge += m->hugepages[i].total_bytes;
        *ret_ephemeral = fs - (uint64_t)(EVICTION_HARD_NODEFS * (double)fs);
        *ret_memory = mem > EVICTION_HARD_MEMORY + huge ? mem - EVICTION_HARD_MEMORY - huge : 0;
}

void kc__machine_info_done(struct kc_machine_info *m)
{
        free(m->machine_id);
        free(m->system_uuid);
        free(m->boot_id);
        free(m->kernel_version);
        free(m->os_image);
        free(m->hugepages);
        *m = (struct kc_machine_info){ 0 };
}

void kc__format_quantity_binary(uint64_t bytes, char buf[static KC_QUANTITY_MAX])
{
        static const char *const suffixes[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        size_t i = 0;

        if (bytes >= 1024)
                while (i + 1 < KC_ELEMENTSOF(suffixes) && bytes % 1024 == 0) {
                        bytes /= 1024;
                        i++;
                }
        snprintf(buf, KC_QUANTITY_MAX, "%" PRIu64 "%s", bytes, suffixes[i]);
}
