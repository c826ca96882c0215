#!/bin/sh
# nodeconf reference VM: PID 1 (no systemd). Mounts, cgroup v2, swap, network, sshd, readiness line.
# The host waits for the readiness line on the serial console before its first SSH attempt.
# Few programs are started: under TCG each exec costs tens of milliseconds of boot time.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
# /dev (devtmpfs) was moved here by the initramfs; the rest, cgroup2 included, is in /etc/fstab.
mount -a
# favordynmods (kernel >= 6.0): moving a process into a cgroup no longer waits for an RCU grace period (the percpu
# cgroup_threadgroup_rwsem's write side; kernel commit 6a010a49b63a), which under TCG took ~16 ms of every container
# start against ~3 ms (issue 31); forks and exits take the rwsem's slower shared path instead. A remount sets every
# cgroup2 option anew, so fstab's are repeated; an older kernel refuses the option and keeps fstab's mount (the
# node facts record the options in force).
mount -o remount,nsdelegate,memory_recursiveprot,favordynmods /sys/fs/cgroup 2>/dev/null
swapon -a
# One cgroup for the whole boot with a memory cgroup and a CPU quota, so the kernel's static keys that the first or
# last such cgroup flips (memcg_sockets_enabled_key: mm/memcontrol.c mem_cgroup_css_alloc/free; __cfs_bandwidth_used:
# kernel/sched/core.c tg_set_cfs_bandwidth) stay on: each 0<->1 step patches kernel text through int3, which qemu's
# multi-threaded TCG can leave another vCPU executing (docs/node-variants.md). No process runs here; no check reads it.
echo "+cpu +memory" >/sys/fs/cgroup/cgroup.subtree_control
mkdir /sys/fs/cgroup/nodeconf.pin && echo "200000 100000" >/sys/fs/cgroup/nodeconf.pin/cpu.max
read -r name </etc/hostname && echo "$name" >/proc/sys/kernel/hostname
ip -batch - <<'NET'
link set lo up
addr add 10.0.2.15/24 dev eth0
link set eth0 up
route add default via 10.0.2.2
NET
mkdir -m 0755 /run/sshd
# -r: no re-exec of sshd per connection (one exec less per login under TCG).
/usr/sbin/sshd -D -e -r 2>>/run/sshd.log &
sshd_pid=$!
# sshd listens once port 22 (0016) shows state 0A (LISTEN) in /proc/net/tcp.
until grep -q ':0016 00000000:0000 0A' /proc/net/tcp; do
    kill -0 "$sshd_pid" 2>/dev/null || break
    sleep 0.05
done
if kill -0 "$sshd_pid" 2>/dev/null; then
    read -r release </proc/sys/kernel/osrelease
    echo "NODECONF-READY kernel=$release" >/dev/console
fi
# `wait` reaps every child, including orphans re-parented here, while sshd runs.
wait
echo "nodeconf-init: sshd exited; halting" >/dev/console
