#!/usr/bin/env bash
# Runs a command on whatever CPU the machine leaves idle: in a session of its own, whose scheduling
# group (Linux autogroup) gets niceness 19, and its processes at niceness 19 too. Niceness alone
# would not do: Linux weighs each session's group as a whole against the others, so a lone niced
# process in its own session's group weighs as much as a normal one. Without autogroups (another
# kernel, a container) only the processes' niceness applies. Waits for the command; its status.
set -euo pipefail
exec setsid --wait bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' idle-priority "$@"
