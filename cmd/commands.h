/* SPDX-License-Identifier: Apache-2.0 */
/* cubelet's subcommands; each returns the process exit status. */
#pragma once

#define KC_VERSION "0.1.0"

struct kc_kubelet_flags;

int kc_cmd_pleg_replay(int argc, char **argv);
/** The node agent: runs until SIGTERM or SIGINT. Returns the exit status. */
int kc_cmd_daemon(const struct kc_kubelet_flags *f);
