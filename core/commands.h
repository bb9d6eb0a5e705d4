/* SPDX-License-Identifier: Apache-2.0 */
/* cubelet's subcommands; each returns the process exit status. */
#pragma once

int kc_cmd_pleg_replay(int argc, char **argv);
