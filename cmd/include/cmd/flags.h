/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file cmd/flags.h
 * @brief The daemon's flags (cmd/kubelet/app/options: kubelet's names).
 */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** What the command line sets; kc_kubelet_flags_done() frees the strings. */
struct kc_kubelet_flags {
        char *container_runtime_endpoint; /* "sim://" or "unix:///path" */
        char *pod_manifest_path;          /* NULL: no static pods */
        int64_t file_check_frequency_ns;
        int64_t sync_frequency_ns;
        int64_t runtime_request_timeout_ns;
        bool evented_pleg; /* --feature-gates=EventedPLEG=true */
        int64_t evented_pleg_cache_update_period_ns;
        int64_t evented_pleg_reprobe_period_ns;
        char *address; /* read-only server */
        uint16_t port; /* 0: disabled */
        char *healthz_bind_address;
        uint16_t healthz_port;   /* 0: disabled */
        char *hostname_override; /* always set: the host name by default */
        char *node_ip;           /* NULL: detect */
        char *root_dir;
        char *resolv_conf; /* --resolv-conf; "" reads none */
        int maximum_dead_containers_per_container;
        int64_t max_wait_for_container_runtime_ns; /* runtimeState's threshold */
        int64_t crash_loop_initial_ns;
        int64_t crash_loop_max_ns;
        int verbosity;
        bool help;
        bool version;
};

/**
 * @brief Parses the flags in argv[1..] up to the first argument that is not
 * a flag (a subcommand) or "--"; *ret_optind is its index (argc if none).
 * `--name=value` and `--name value` both work; booleans take no value; -v and
 * -h are the only one-dash spellings. Every flag has its default (see
 * kc_kubelet_flags_usage()); the host name is looked up when
 * --hostname-override is not given.
 * @return 0; -EINVAL with *ret_err a one-line malloc'd reason naming the
 * flag (unknown flag, missing or bad value, inconsistent values); -ENOMEM.
 * Out-parameters untouched on failure (except *ret_err on -EINVAL).
 */
int kc_kubelet_flags_parse(int argc, char *const *argv, struct kc_kubelet_flags *ret,
                           int *ret_optind, char **ret_err);
void kc_kubelet_flags_done(struct kc_kubelet_flags *f);
/** --help: every flag with its default. */
void kc_kubelet_flags_usage(FILE *out);
