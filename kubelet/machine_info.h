/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal: the machine as cadvisor's MachineInfo and VersionInfo describe
 * it to the kubelet's node status setters (kubelet/machine_info.c).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Room for kc__format_quantity_binary(): 20 digits, a suffix and a NUL. */
#define KC_QUANTITY_MAX 32

struct kc_hugepages {
        uint64_t page_bytes;  /* 2 MiB, 1 GiB */
        uint64_t total_bytes; /* nr_hugepages x page_bytes */
};

struct kc_machine_info {
        char *machine_id;               /* /etc/machine-id, else /var/lib/dbus/machine-id */
        char *system_uuid;              /* /sys/class/dmi/id/product_uuid; "" when unreadable */
        char *boot_id;                  /* /proc/sys/kernel/random/boot_id */
        char *kernel_version;           /* uname -r */
        char *os_image;                 /* PRETTY_NAME of /etc/os-release, else "Linux" */
        uint64_t cpus;                  /* processors in /proc/cpuinfo */
        uint64_t memory_bytes;          /* MemTotal */
        uint64_t ephemeral_bytes;       /* size of the root dir's filesystem; 0: unknown */
        struct kc_hugepages *hugepages; /* by page size, smallest first */
        size_t n_hugepages;
};

/**
 * Reads the machine. @p host_root prefixes every /etc, /proc and /sys path
 * (NULL or "": the real ones; tests pass a directory of their own). A file
 * that cannot be read leaves its field empty (or 0), as cadvisor does.
 * @return 0 or -ENOMEM.
 */
int kc__machine_info_read(const char *host_root, const char *root_dir, struct kc_machine_info *ret);
void kc__machine_info_done(struct kc_machine_info *m);

/**
 * The node's allocatable memory and ephemeral storage in bytes: capacity
 * less the default --eviction-hard (memory.available<100Mi,
 * nodefs.available<10%) and, for memory, the huge pages; never below 0.
 * No kube-/system-reserved in cubelet.
 */
void kc__machine_allocatable(const struct kc_machine_info *m, uint64_t *ret_memory,
                             uint64_t *ret_ephemeral);

/**
 * A byte count as resource.Quantity prints a BinarySI quantity: below 1024
 * the plain number, else divided by 1024 while that stays exact, with the
 * suffix Ki, Mi, Gi, Ti, Pi or Ei ("16384000Ki", "2Mi", "94580049215").
 */
void kc__format_quantity_binary(uint64_t bytes, char buf[static KC_QUANTITY_MAX]);
