#!/bin/sh
# nodeconf reference VM: PID 1 (no systemd). Mounts, cgroup v2, swap, network, sshd, readiness line.
# The host waits for the readiness line on the serial console before its first SSH attempt.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
export PATH
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /dev/pts /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t cgroup2 -o nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup
cat /etc/hostname >/proc/sys/kernel/hostname
[ -b /dev/vdb ] && swapon /dev/vdb
ip link set lo up
ip addr add 10.0.2.15/24 dev eth0
ip link set eth0 up
ip route add default via 10.0.2.2
mkdir -p /run/sshd
chmod 0755 /run/sshd
/usr/sbin/sshd -D -e 2>>/run/sshd.log &
sshd_pid=$!
# sshd listens once port 22 (0016) shows state 0A (LISTEN) in /proc/net/tcp.
until grep -q ':0016 00000000:0000 0A' /proc/net/tcp; do
    kill -0 "$sshd_pid" 2>/dev/null || break
    sleep 0.05
done
if kill -0 "$sshd_pid" 2>/dev/null; then
    echo "NODECONF-READY kernel=$(uname -r) $(grep '^SwapTotal:' /proc/meminfo | tr -s ' ')" >/dev/console
fi
# `wait` reaps every child, including orphans re-parented here, while sshd runs.
wait
echo "nodeconf-init: sshd exited; halting" >/dev/console
